"""Growing one tree: the growth loop, constraints and sampling around a
split finder. The growers hold no per-row loop; every pass over rows is a
kernel.

- ``ExactGrower`` (``tree_method="exact"``): depth-wise, one level at a time
  (paper Algorithm 1); the presorted blocks are kept grouped by open node
  (``_node_blocks.NodeBlocks``), each node's group of each feature is walked
  (``_exact_scan.find_best_splits``), and rows move to their children's slots
  from the split features' groups.
- ``HistGrower`` (``"hist"``): rows partitioned so each node's rows are a
  contiguous slice; a batch of nodes is expanded by partitioning, building
  the smaller children's histograms, subtracting for the larger ones and
  scanning the histograms. ``grow_policy="depthwise"`` expands a level per
  batch, ``"lossguide"`` the open leaf of highest gain (a heap).
- ``ApproxGrower`` (``"approx"``, global proposal): re-bins on
  hessian-weighted cuts per tree, then grows like ``HistGrower``.
- ``LocalApproxGrower`` (``"approx"``, local proposal): depth-wise like the
  exact grower, with each node's own cuts and histogram.

Categorical features: ``HistGrower`` and ``ApproxGrower`` give each category
its own bin; the level-wise growers (exact, local, and ``ColumnHistGrower``
for sparse input) mask them out of their own finder and take their splits
from per-node histograms over the category codes (``_categorical_splits``).

Every grower returns the same ``Tree`` (``_tree.py``) and applies the same
decision rule (``worth_splitting``, ``within_max_leaves``).
"""

import heapq
from dataclasses import dataclass

import numpy as np

from ._approx import (codes_from_sorted, entry_codes, local_histograms,
                      propose_cuts, propose_cuts_flat)
from ._binning import BinnedData
from ._categorical_splits import CategoricalSplits, left_set_list, merge_splits
from ._categorical_scan import categorical_left_set
from ._column_sampler import ColumnSampler
from ._column_scan import BinnedColumns, find_best_splits_columns
from ._context import SplitContext
from ._exact_scan import find_best_splits, root_sums
from ._gain import leaf_scores, leaf_weights
from ._hist_split import find_best_splits_hist
from ._histogram import (FixedPointGradients, build_histograms,
                         quantize_gradients)
from ._node_blocks import NodeBlocks
from ._partition import RowPartition, add_leaf_values, apply_level_splits
from ._sparse import SparseRows
from ._tree import TreeBuilder
from .binning import (HistogramLayout, ZeroBlocks, category_cuts,
                      has_missing_values, value_bin_caps)

# A split whose loss reduction is this small relative to its parent's score
# is rounding noise (the exact reduction is zero), not a split.
SPLIT_NOISE_RTOL = 1e-12


@dataclass(frozen=True)
class TreeParams:
    """Parameters of one tree's growth (see the estimators' docstrings)."""

    max_depth: int = 6  # 0: no limit
    max_leaves: int = 0  # 0: no limit (lossguide)
    grow_policy: str = "depthwise"
    learning_rate: float = 0.3
    gamma: float = 0.0
    min_child_weight: float = 1.0
    reg_lambda: float = 1.0
    reg_alpha: float = 0.0
    max_delta_step: float = 0.0
    colsample_bytree: float = 1.0
    colsample_bylevel: float = 1.0
    colsample_bynode: float = 1.0
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 64

    @property
    def reg(self):
        """Positional arguments of the _gain kernels."""
        return (self.reg_lambda, self.reg_alpha, self.max_delta_step,
                self.min_child_weight)


def worth_splitting(splits, parent_score, gamma):
    """Nodes whose best split exists and reduces the loss by more than gamma
    (and by more than rounding noise)."""
    gain = splits["gain"]
    return ((splits["feature"] >= 0) & (gain > gamma)
            & (gain > SPLIT_NOISE_RTOL * parent_score))


def within_max_leaves(gain, node, n_leaves, max_leaves):
    """Which of a level's candidate splits (gains, node ids) to make so the
    tree keeps at most ``max_leaves`` leaves (0: no limit): the best gains
    first, ties to the lower node id. Each split adds one leaf."""
    keep = np.ones(gain.shape[0], dtype=bool)
    room = max_leaves - n_leaves
    if max_leaves and gain.shape[0] > room:
        order = np.lexsort((node, -gain))
        keep[:] = False
        keep[order[:max(room, 0)]] = True
    return keep


class ExactGrower:
    """Depth-wise growth driven by the sparsity-aware exact greedy finder.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, C order
        Training data, NaN for missing values (used to partition rows).
    sorted_columns : SortedColumns
        Presorted blocks of ``X`` (see ``_presort.py``).
    params : TreeParams
    n_threads : int
    rng : numpy.random.Generator
        Source of the column samples.
    weight : ndarray of shape (n_rows,), float64, default=None
        Sample weights, applied inside the float64 sums (gradient pairs are
        unweighted); None for unit weights.
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (values: category codes), 0
        for the numeric ones: their splits come from histograms over their
        codes (``_categorical_splits``), the numeric ones' from the exact
        scan.
    """

    def __init__(self, X, sorted_columns, params, n_threads, rng, weight=None,
                 n_categories=None):
        if sorted_columns.n_rows != X.shape[0] or (
                sorted_columns.n_features != X.shape[1]):
            raise ValueError("sorted_columns does not describe X")
        self.X = X
        self.sorted = sorted_columns
        # the blocks regrouped by node, level after level
        self.blocks = NodeBlocks(sorted_columns)
        self.params = params
        self.n_threads = n_threads
        self.weight = weight
        self.categories = CategoricalSplits.create(sorted_columns,
                                                   n_categories, params,
                                                   n_threads)
        self.sampler = ColumnSampler(X.shape[1], params.colsample_bytree,
                                     params.colsample_bylevel,
                                     params.colsample_bynode, rng)

    def grow(self, gpair, active):
        """Grow one tree on unweighted gradient pairs ``gpair`` (n_rows, 2)
        float32, using the rows where ``active`` is True."""
        p = self.params
        row_slot = np.where(active, 0, -1).astype(np.int32)
        # the leaf of each active row, when the groups route the rows
        row_leaf = (np.full(row_slot.shape[0], -1, dtype=np.int32)
                    if self._routes_from_groups else None)
        G, H = root_sums(gpair, active.view(np.uint8), self.weight)
        count = np.array([np.count_nonzero(active)], dtype=np.int64)
        builder = TreeBuilder(G, H)
        self.blocks.start(row_slot, 1, self.n_threads)
        self.sampler.start_tree()
        if self.categories is not None:
            self.categories.start_tree(gpair, self.weight, active)
        level_nodes = np.zeros(1, dtype=np.int64)
        depth = 0
        while level_nodes.shape[0] and (p.max_depth == 0 or depth < p.max_depth):
            level_nodes, count = self._grow_level(builder, gpair, row_slot,
                                                  row_leaf, level_nodes,
                                                  count, depth)
            depth += 1
        tree = builder.finish(lambda G, H: leaf_weights(G, H, *p.reg),
                              p.learning_rate)
        if row_leaf is None:
            return tree, None  # leaves of rows not tracked: re-predicted
        # the rows still open sit in the last level's leaves
        still_open = row_slot >= 0
        row_leaf[still_open] = level_nodes[row_slot[still_open]]
        return tree, RowLeaves(row_leaf)

    @property
    def _routes_from_groups(self):
        """Rows move by the split features' groups (numeric splits, absent
        entries missing), not by reading X."""
        return self.categories is None and not self.sorted.zero_absent

    def _grow_level(self, builder, gpair, row_slot, row_leaf, nodes, count,
                    depth):
        p = self.params
        G, H = builder.node_sums(nodes)
        allowed = self.sampler.masks(depth, nodes.shape[0])
        cats = self.categories
        splits = find_best_splits(self.blocks, gpair, row_slot, G, H, count,
                                  allowed if cats is None
                                  else cats.numeric_allowed(allowed),
                                  SplitContext.from_params(p, self.n_threads),
                                  weight=self.weight)
        left_sets = None
        if cats is not None:
            splits, left_sets = merge_splits(
                splits, cats.best_splits(row_slot, allowed))
        parent_score = leaf_scores(G, H, *p.reg)
        do_split = worth_splitting(splits, parent_score, p.gamma)
        candidates = np.flatnonzero(do_split)
        keep = within_max_leaves(splits["gain"][candidates], nodes[candidates],
                                 builder.n_leaves, p.max_leaves)
        do_split[candidates[~keep]] = False
        s = splits[do_split]
        left, right = builder.split(nodes[do_split], s["feature"], s["threshold"],
                                    s["default_left"], s["gain"], s["G_left"],
                                    s["H_left"], left_sets=left_set_list(
                                        left_sets, do_split))
        n_split = int(np.count_nonzero(do_split))
        left_slot = np.full(G.shape[0], -1, dtype=np.int32)
        left_slot[do_split] = 2 * np.arange(n_split, dtype=np.int32)
        feature = np.where(do_split, splits["feature"], -1).astype(np.int32)
        if self._routes_from_groups:
            # the split features' groups hold the values: no row lookups
            count_next = self.blocks.route_rows(
                row_slot, feature, splits["threshold"],
                splits["default_left"], left_slot, 2 * n_split,
                self.n_threads, slot_node=nodes, row_leaf=row_leaf)
        else:
            count_next = apply_level_splits(
                self.X, row_slot, feature,
                np.ascontiguousarray(splits["threshold"]),
                np.ascontiguousarray(splits["default_left"]), left_slot,
                left_slot + 1, 2 * n_split, self.n_threads,
                left_sets=left_sets)
        if n_split and (p.max_depth == 0 or depth + 1 < p.max_depth):
            self.blocks.split(row_slot, left_slot, 2 * n_split,
                              self.n_threads)
        return np.column_stack([left, right]).ravel(), count_next


@dataclass
class RowLeaves:
    """The leaf (node id) of each row of a grown tree, -1 for the rows not
    in it."""

    leaf: np.ndarray

    def add_values(self, tree, raw, column, n_threads):
        """raw[row, column] += the tree's value at the row, for these rows."""
        rows = np.flatnonzero(self.leaf >= 0)
        raw[rows, column] += tree.value[self.leaf[rows]]


@dataclass
class LeafRows:
    """Where the active rows of a grown tree ended: leaf ``node[k]`` holds
    the rows of ``partition.row_index[begin[k]:end[k]]``."""

    partition: RowPartition
    begin: np.ndarray
    end: np.ndarray
    node: np.ndarray

    def add_values(self, tree, raw, column, n_threads):
        """raw[row, column] += the tree's value at the row, for these rows."""
        add_leaf_values(self.partition, self.begin, self.end,
                        tree.value[self.node], raw, column, n_threads)


@dataclass
class _OpenNode:
    """A leaf that may still be split: its rows, histogram and best split."""

    node: int
    depth: int
    begin: int
    end: int
    hist_row: int  # row of its histogram in the HistogramPool; -1 if none
    sums: np.ndarray  # (2,) int64 exact totals
    split: dict = None  # best split (scalars), None if not evaluated


class HistogramPool:
    """The histograms of the open nodes, rows of one int64 array
    ``(capacity, n_bins, 2)`` reused by every tree of a fit.

    A node's histogram lives until the node is split or becomes a leaf.
    When it is split, its larger child takes over its row (parent minus
    smaller child, in place) and only the smaller child takes a new one; a
    leaf gives its row back. Depth-wise growth to ``max_depth`` then needs
    ``2**(max_depth - 1)`` rows at most, a third of keeping a level and its
    parents, and no allocation after the first tree. The array doubles when
    full (lossguide, or no depth limit).
    """

    def __init__(self, n_bins, capacity):
        self.n_bins = n_bins
        self.array = np.empty((max(1, capacity), n_bins, 2), dtype=np.int64)
        self._free = list(range(self.array.shape[0] - 1, -1, -1))

    def take(self, n):
        """Rows for n new histograms (int64 array)."""
        while len(self._free) < n:
            self._grow()
        return np.array([self._free.pop() for _ in range(n)], dtype=np.int64)

    def give_back(self, rows):
        self._free.extend(int(r) for r in rows if r >= 0)

    def clear(self):
        """Every row free (a new tree)."""
        self._free = list(range(self.array.shape[0] - 1, -1, -1))

    def _grow(self):
        old = self.array.shape[0]
        array = np.empty((2 * old, self.n_bins, 2), dtype=np.int64)
        array[:old] = self.array
        self.array = array
        self._free[:0] = range(2 * old - 1, old - 1, -1)


class HistGrower:
    """Growth over gradient histograms (``tree_method="hist"``).

    Rows are kept partitioned so that each node's rows are a contiguous slice
    (``RowPartition``). Expanding a batch of nodes partitions their rows,
    builds the histograms of the smaller children, derives the larger
    children's by subtraction from the parents', and finds the children's
    best splits. ``grow_policy="depthwise"`` expands a whole level per batch;
    ``"lossguide"`` expands the open leaf of highest gain, one at a time,
    until ``max_leaves``.

    Parameters
    ----------
    binned : BinnedData
    thresholds : ndarray of shape (n_bins,)
        Tree threshold of each "split after bin" (``BinMapper.split_thresholds_``).
    params : TreeParams
    n_threads : int
    rng : numpy.random.Generator
    weight : ndarray of shape (n_rows,) or None
    categorical : ndarray of shape (n_features,), bool, default=None
        Features whose value bins are categories (``_categorical_scan``); their
        splits send a set of categories left.
    """

    def __init__(self, binned, thresholds, params, n_threads, rng, weight=None,
                 n_features=None, categorical=None):
        self.binned = binned
        self.categorical = (None if categorical is None or not np.any(
            categorical) else np.asarray(categorical, dtype=np.uint8))
        self.thresholds = thresholds
        self.params = params
        self.n_threads = n_threads
        self.weight = weight
        n_features = binned.n_features if n_features is None else n_features
        self.sampler = ColumnSampler(n_features, params.colsample_bytree,
                                     params.colsample_bylevel,
                                     params.colsample_bynode, rng)

    def grow(self, gpair, active):
        """Grow one tree on unweighted gradient pairs ``gpair`` (n_rows, 2)
        float32 with the rows where ``active`` is True. Returns the tree and
        the ``LeafRows`` of the active rows."""
        p = self.params
        self.sampler.start_tree()
        self.gradients = FixedPointGradients(gpair, self.weight, active,
                                             self.n_threads)
        self.scales = self.gradients.scales
        if getattr(self, "partition", None) is None or (
                self.partition.n_rows != self.binned.n_rows):
            self.partition = RowPartition([], self.binned.n_rows)
        self.partition.reset_to_active(active)
        self._start_pool()
        n_active = self.partition.row_index.shape[0]
        root_row = self.pool.take(1)
        build_histograms(self.binned, self.partition, self.gradients, [0],
                         [n_active], self.pool.array, self.n_threads,
                         hist_rows=root_row)
        first = self.binned.bin_ptr
        sums = self.pool.array[root_row[0], first[0]:first[1]].sum(axis=0)
        G, H = sums / self.scales
        builder = TreeBuilder(G, H)
        root = _OpenNode(0, 0, 0, n_active, int(root_row[0]), sums)
        self._evaluate([root])
        if p.grow_policy == "lossguide":
            leaves = self._grow_lossguide(builder, root)
        else:
            leaves = self._grow_depthwise(builder, root)
        tree = builder.finish(lambda G, H: leaf_weights(G, H, *p.reg),
                              p.learning_rate)
        self.gradients = None
        return tree, LeafRows(self.partition,
                              np.array([n.begin for n in leaves], np.int64),
                              np.array([n.end for n in leaves], np.int64),
                              np.array([n.node for n in leaves], np.int64))

    def _start_pool(self):
        """Every histogram row free; a new pool when the bins changed."""
        n_bins = self.binned.n_bins
        if getattr(self, "pool", None) is None or self.pool.n_bins != n_bins:
            p = self.params
            depth_bound = 2 ** (p.max_depth - 1) if p.max_depth else 64
            self.pool = HistogramPool(
                n_bins, min(depth_bound, p.max_leaves or depth_bound, 1024))
        else:
            self.pool.clear()

    def _can_expand(self, open_node):
        return open_node.split is not None and open_node.split["worth"]

    def _grow_depthwise(self, builder, root):
        level, leaves = [root], []
        n_leaves = 1
        while level:
            to_split = [n for n in level if self._can_expand(n)]
            keep = within_max_leaves(
                np.array([n.split["gain"] for n in to_split]),
                np.array([n.node for n in to_split]), n_leaves,
                self.params.max_leaves)
            to_split = [n for n, k in zip(to_split, keep) if k]
            split_ids = {n.node for n in to_split}
            leaves += self._retire([n for n in level
                                    if n.node not in split_ids])
            n_leaves += len(to_split)
            level = self._expand(builder, sorted(to_split, key=lambda n: n.node))
        return leaves

    def _grow_lossguide(self, builder, root):
        max_leaves = self.params.max_leaves or np.inf
        # max-heap on gain; ties to the older (lower id) node
        heap, leaves, n_leaves = [], [], 1
        candidates = [root]
        while True:
            for n in candidates:
                if self._can_expand(n):
                    heapq.heappush(heap, (-n.split["gain"], n.node, n))
                else:
                    leaves += self._retire([n])
            if not heap or n_leaves >= max_leaves:
                break
            _, _, best = heapq.heappop(heap)
            candidates = self._expand(builder, [best])
            n_leaves += 1
        return leaves + [entry[2] for entry in heap]

    def _retire(self, leaves):
        """Final leaves: their histograms are no longer needed."""
        self.pool.give_back([n.hist_row for n in leaves])
        for n in leaves:
            n.hist_row = -1
        return leaves

    def _expand(self, builder, nodes):
        """Split ``nodes``; return their children with histograms and best
        splits evaluated."""
        if not nodes:
            return []
        p = self.params
        s = {key: np.array([n.split[key] for n in nodes])
             for key in nodes[0].split if key != "left_set"}
        left_sets = [n.split.get("left_set") for n in nodes]
        left_ids, right_ids = builder.split(
            [n.node for n in nodes], s["feature"], s["threshold"],
            s["default_left"], s["gain"], s["G_left"], s["H_left"],
            left_sets=left_sets)
        begin = np.array([n.begin for n in nodes], dtype=np.int64)
        end = np.array([n.end for n in nodes], dtype=np.int64)
        n_left = self.partition.split_nodes(
            self.binned, begin, end, s["feature"], s["split_bin"],
            s["default_left"], self.n_threads, left_sets=left_sets)
        left_smaller = n_left <= (end - begin - n_left)
        n_nodes = len(nodes)
        depth = nodes[0].depth + 1
        parent_rows = np.array([n.hist_row for n in nodes], dtype=np.int64)
        with_hists = not (p.max_depth and depth >= p.max_depth)
        if with_hists:
            # The smaller children's histograms are built into new rows; each
            # larger child's is its parent's minus the smaller one, computed
            # in the parent's row (exact in fixed point).
            small_rows = self.pool.take(n_nodes)
            build_histograms(self.binned, self.partition, self.gradients,
                             np.where(left_smaller, begin, begin + n_left),
                             np.where(left_smaller, begin + n_left, end),
                             self.pool.array, self.n_threads,
                             hist_rows=small_rows)
            hists = self.pool.array
            for k in range(n_nodes):
                np.subtract(hists[parent_rows[k]], hists[small_rows[k]],
                            out=hists[parent_rows[k]])
        else:
            # the children will be leaves: no histogram is needed
            self.pool.give_back(parent_rows)
            small_rows = parent_rows = np.full(n_nodes, -1, dtype=np.int64)
        small, large = [], []
        for k, n in enumerate(nodes):
            mid = n.begin + int(n_left[k])
            left_sums = np.array([s["Gq_left"][k], s["Hq_left"][k]])
            left = (int(left_ids[k]), n.begin, mid, left_sums)
            right = (int(right_ids[k]), mid, n.end, n.sums - left_sums)
            small_child, large_child = ((left, right) if left_smaller[k]
                                        else (right, left))
            small.append(_OpenNode(small_child[0], depth, *small_child[1:3],
                                   int(small_rows[k]), small_child[3]))
            large.append(_OpenNode(large_child[0], depth, *large_child[1:3],
                                   int(parent_rows[k]), large_child[3]))
            n.hist_row = -1
        children = small + large
        self._evaluate(children)
        return children

    def _evaluate(self, nodes):
        """Best split of each node (all of one depth, with histograms),
        unless the depth limit makes them leaves."""
        p = self.params
        depth = nodes[0].depth
        if p.max_depth and depth >= p.max_depth:
            return
        sums = np.stack([n.sums for n in nodes])
        splits = find_best_splits_hist(
            self.pool.array, sums, self.binned.bin_ptr,
            np.atleast_2d(self.thresholds),
            self.sampler.masks(depth, len(nodes)),
            SplitContext.from_params(p, self.n_threads).with_scales(
                *self.scales),
            hist_rows=[n.hist_row for n in nodes],
            categorical=self.categorical)
        G, H = (sums / self.scales).T
        worth = worth_splitting(splits, leaf_scores(G.copy(), H.copy(), *p.reg),
                                p.gamma)
        for k, n in enumerate(nodes):
            n.split = {key: splits[key][k] for key in splits.dtype.names}
            n.split["worth"] = bool(worth[k])
            if worth[k] and splits["cat_kind"][k]:
                self._set_left_set(n)

    def _set_left_set(self, node):
        """The categories the node's (categorical) best split sends left,
        read off its histogram. When the node has no missing value of the
        feature, missing values (and unseen categories) go with "the rest",
        the side the categories absent from the node take."""
        f = int(node.split["feature"])
        first, stop = self.binned.bin_ptr[f], self.binned.bin_ptr[f + 1]
        hist = self.pool.array[node.hist_row]
        left, rest_left = categorical_left_set(
            hist, first, stop - first - 1, int(node.split["cat_kind"]),
            int(node.split["split_bin"]),
            SplitContext.from_params(self.params, self.n_threads).with_scales(
                *self.scales))
        node.split["left_set"] = left
        if not hist[stop - 1].any():   # the missing bin is empty
            node.split["default_left"] = np.uint8(rest_left)


class ApproxGrower:
    """The paper's approximate algorithm (``tree_method="approx"``).

    For every tree, candidate cuts are re-proposed from the current hessians
    (``_approx.propose_cuts``: hessian-weighted quantiles read off the
    presorted columns, at most ``max_bin`` value bins per feature), the rows
    are re-binned, and the tree is grown on histograms by ``HistGrower``.
    This is the paper's "global" proposal: once per tree, shared by all of
    its nodes.

    Parameters
    ----------
    sorted_columns : SortedColumns
    params : TreeParams
    max_bin : int
    n_threads : int
    rng : numpy.random.Generator
    weight : ndarray of shape (n_rows,) or None
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (values: category codes), 0
        for the numeric ones: a categorical feature keeps one bin per
        category instead of proposed cuts.
    """

    def __init__(self, sorted_columns, params, max_bin, n_threads, rng,
                 weight=None, n_categories=None):
        self.sorted = sorted_columns
        self.n_categories = n_categories
        self.n_threads = n_threads
        self.weight = weight
        n_rows = sorted_columns.n_rows
        self.has_missing = np.diff(sorted_columns.col_ptr) < n_rows
        self.max_bins = value_bin_caps(max_bin, self.has_missing)
        self.hist = HistGrower(
            None, None, params, n_threads, rng, weight,
            n_features=sorted_columns.n_features,
            categorical=None if n_categories is None else n_categories > 0)
        self._proposed_for = None   # (hessians, active rows) of the binning

    def grow(self, gpair, active):
        """Grow one tree: propose cuts, re-bin, grow on histograms."""
        # the same hessians on the same rows propose the same cuts
        # (constant-hessian objectives without row sampling): keep the
        # binning, checked on the inputs without building the weighted copy
        if self._proposed_for is None or not (
                np.array_equal(gpair[:, 1], self._proposed_for[0])
                and np.array_equal(active, self._proposed_for[1])):
            self._proposed_for = (gpair[:, 1].copy(), active.copy())
            hess = gpair[:, 1].astype(np.float64)
            if self.weight is not None:
                hess *= self.weight
            hess[~active] = 0.0
            self._rebin(hess)
        return self.hist.grow(gpair, active)

    def _rebin(self, hess):
        cuts = propose_cuts(self.sorted, hess, self.max_bins, self.n_threads)
        if self.n_categories is not None:
            for f in np.flatnonzero(self.n_categories):
                cuts[f] = category_cuts(self.n_categories[f])
        layout = HistogramLayout(cuts, self.has_missing)
        self.hist.binned = None   # the old codes go before the new arrive
        codes = np.empty((self.sorted.n_features, self.sorted.n_rows),
                         dtype=layout.code_dtype)
        codes_from_sorted(self.sorted, cuts, codes, self.n_threads)
        self.hist.binned = BinnedData(codes.T, layout.bin_ptr)
        self.hist.thresholds = layout.split_thresholds


class LocalApproxGrower:
    """The approximate algorithm with *local* proposals
    (``tree_method="approx", approx_proposal="local"``): every node's
    candidate cuts are re-proposed from its own rows' hessians.

    Nodes of a level are handled together, as in the exact finder: one walk
    of each feature's presorted block proposes every node's cuts and fills
    its histogram (``_approx.local_histograms``); the histogram scan finds
    the splits and the rows move by comparing their values to the chosen
    thresholds. Children's cuts differ from their parent's, so there is no
    histogram subtraction; the growth is depth-wise.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    sorted_columns : SortedColumns
    params : TreeParams
    max_bin : int
    n_threads : int
    rng : numpy.random.Generator
    weight : ndarray of shape (n_rows,) or None
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (values: category codes), 0
        for the numeric ones: their splits come from histograms with one
        bin per category (``_categorical_splits``), not from proposed cuts.
    """

    def __init__(self, X, sorted_columns, params, max_bin, n_threads, rng,
                 weight=None, n_categories=None):
        self.X = X
        self.sorted = sorted_columns
        self.params = params
        self.n_threads = n_threads
        self.weight = weight
        self.categories = CategoricalSplits.create(sorted_columns,
                                                   n_categories, params,
                                                   n_threads)
        caps = value_bin_caps(max_bin, np.diff(sorted_columns.col_ptr)
                              < sorted_columns.n_rows)
        if isinstance(X, SparseRows):
            # no more bins than distinct values: a node's histogram holds
            # every bin of every feature, too many for wide sparse data
            caps = np.clip(distinct_values(sorted_columns), 2, caps)
        self.bin_ptr = np.zeros(caps.shape[0] + 1, dtype=np.int64)
        np.cumsum(caps + 1, out=self.bin_ptr[1:])
        self.sampler = ColumnSampler(X.shape[1], params.colsample_bytree,
                                     params.colsample_bylevel,
                                     params.colsample_bynode, rng)

    def grow(self, gpair, active):
        """Grow one tree level by level; returns (tree, None)."""
        p = self.params
        self.sampler.start_tree()
        quantized, self.scales = quantize_gradients(
            gpair, self.weight, active.view(np.uint8), self.n_threads)
        hess = gpair[:, 1].astype(np.float64)
        if self.weight is not None:
            hess *= self.weight
        hess[~active] = 0.0
        row_slot = np.where(active, 0, -1).astype(np.int32)
        sums = quantized[active].sum(axis=0, keepdims=True)
        G, H = sums[0] / self.scales
        builder = TreeBuilder(G, H)
        nodes, depth = np.zeros(1, dtype=np.int64), 0
        while nodes.shape[0] and (p.max_depth == 0 or depth < p.max_depth):
            nodes, sums = self._grow_level(builder, quantized, hess, row_slot,
                                           nodes, sums, depth)
            depth += 1
        tree = builder.finish(lambda G, H: leaf_weights(G, H, *p.reg),
                              p.learning_rate)
        return tree, None

    def _find_splits(self, quantized, hess, row_slot, sums, allowed):
        """Best split of each open node: its own cuts and histogram."""
        hist, thresholds = local_histograms(self.sorted, quantized, hess,
                                            row_slot, sums, self.bin_ptr,
                                            self.n_threads)
        return find_best_splits_hist(
            hist, sums, self.bin_ptr, thresholds, allowed,
            SplitContext.from_params(self.params, self.n_threads).with_scales(
                *self.scales))

    def _grow_level(self, builder, quantized, hess, row_slot, nodes, sums,
                    depth):
        p = self.params
        allowed = self.sampler.masks(depth, sums.shape[0])
        cats = self.categories
        splits = self._find_splits(quantized, hess, row_slot, sums,
                                   allowed if cats is None
                                   else cats.numeric_allowed(allowed))
        left_sets = None
        if cats is not None:
            splits, left_sets = merge_splits(splits, cats.best_splits(
                row_slot, allowed, quantized, self.scales))
        G, H = builder.node_sums(nodes)
        do_split = worth_splitting(splits, leaf_scores(G, H, *p.reg), p.gamma)
        candidates = np.flatnonzero(do_split)
        keep = within_max_leaves(splits["gain"][candidates], nodes[candidates],
                                 builder.n_leaves, p.max_leaves)
        do_split[candidates[~keep]] = False
        s = splits[do_split]
        left, right = builder.split(nodes[do_split], s["feature"],
                                    s["threshold"], s["default_left"],
                                    s["gain"], s["G_left"], s["H_left"],
                                    left_sets=left_set_list(left_sets,
                                                            do_split))
        n_split = left.shape[0]
        left_slot = np.full(nodes.shape[0], -1, dtype=np.int32)
        left_slot[do_split] = 2 * np.arange(n_split, dtype=np.int32)
        feature = np.where(do_split, splits["feature"], -1).astype(np.int32)
        apply_level_splits(self.X, row_slot, feature,
                           np.ascontiguousarray(splits["threshold"]),
                           np.ascontiguousarray(splits["default_left"]),
                           left_slot, left_slot + 1, 2 * n_split,
                           self.n_threads, left_sets=left_sets)
        left_sums = np.column_stack([s["Gq_left"], s["Hq_left"]])
        child_sums = np.empty((2 * n_split, 2), dtype=np.int64)
        child_sums[0::2] = left_sums
        child_sums[1::2] = sums[do_split] - left_sums
        return np.column_stack([left, right]).ravel(), child_sums


class ColumnHistGrower(LocalApproxGrower):
    """Histogram growth on presorted columns, for sparse input
    (``tree_method="hist"``, or ``"approx"`` with global proposals).

    A dense bin matrix, histograms of every bin for every node and the
    subtraction trick all cost O(n_rows x n_features) or O(n_bins) per node,
    hopeless for wide sparse data. Here each stored entry has its bin
    (``BinnedColumns``), and one walk of the presorted columns per level
    finds every open node's best split (``find_best_splits_columns``), with
    the missing (absent) values' statistics recovered from the node totals:
    the cost of a level is linear in the stored entries. The splits are
    those the histogram finder would choose on the same bins. Growth is
    depth-wise, as for the local proposals.

    Parameters
    ----------
    X : SparseRows
    sorted_columns : SortedColumns
        The stored entries of X, presorted (``_presort.presort_sparse``).
    params : TreeParams
    n_threads : int
    rng : numpy.random.Generator
    weight : ndarray of shape (n_rows,) or None
    mapper : BinMapper or None
        Fitted cuts for ``"hist"``; None re-proposes hessian-weighted cuts
        for every tree (``"approx"``), needing ``max_bin``.
    max_bin : int
    n_categories : ndarray of shape (n_features,), default=None
        As for ``LocalApproxGrower``: categorical features are split on
        their category codes.
    """

    def __init__(self, X, sorted_columns, params, n_threads, rng, weight=None,
                 mapper=None, max_bin=256, n_categories=None):
        super().__init__(X, sorted_columns, params, max_bin, n_threads, rng,
                         weight=weight, n_categories=n_categories)
        self.has_missing = has_missing_values(sorted_columns)
        self.max_bins = value_bin_caps(max_bin, self.has_missing)
        # absent entries read as 0.0: the proposals see each feature's zeros
        # as one weighted entry
        self.zero_blocks = (ZeroBlocks(sorted_columns)
                            if sorted_columns.zero_absent else None)
        self.propose = mapper is None
        self._proposed_for = None   # (hessians, active rows) of the cuts
        if not self.propose:
            self._set_cuts(HistogramLayout(mapper.cuts_, mapper.has_missing_))

    def _set_cuts(self, layout):
        self.binned = None   # the old codes go before the new arrive
        # the bin of 0.0 in each feature (the zero block's, if any)
        zero_codes = np.bincount(
            np.repeat(np.arange(self.sorted.n_features),
                      np.diff(layout.cut_ptr))[layout.flat_cuts <= 0.0],
            minlength=self.sorted.n_features)
        self.binned = BinnedColumns(
            self.sorted, entry_codes(self.sorted, layout.flat_cuts,
                                     layout.cut_ptr, self.n_threads),
            layout.bin_ptr, zero_codes)
        self.thresholds = layout.split_thresholds

    def grow(self, gpair, active):
        """Grow one tree (re-proposing the cuts first for approx)."""
        if self.propose and (self._proposed_for is None or not (
                np.array_equal(gpair[:, 1], self._proposed_for[0])
                and np.array_equal(active, self._proposed_for[1]))):
            self._proposed_for = (gpair[:, 1].copy(), active.copy())
            hess = gpair[:, 1].astype(np.float64)
            if self.weight is not None:
                hess *= self.weight
            hess[~active] = 0.0
            columns = self.sorted
            if self.zero_blocks is not None:
                columns = self.zero_blocks.columns
                hess = self.zero_blocks.weights(hess)
            flat, cut_ptr = propose_cuts_flat(columns, hess, self.max_bins,
                                              self.n_threads)
            self._set_cuts(HistogramLayout.from_flat(flat, cut_ptr,
                                                     self.has_missing))
        return super().grow(gpair, active)

    def _find_splits(self, quantized, hess, row_slot, sums, allowed):
        return find_best_splits_columns(
            self.binned, self.thresholds, row_slot, quantized, sums, allowed,
            SplitContext.from_params(self.params, self.n_threads).with_scales(
                *self.scales))


def distinct_values(columns):
    """Number of distinct present values of each presorted column."""
    values = np.asarray(columns.values)
    col_ptr = np.asarray(columns.col_ptr)
    new = np.ones(values.shape[0], dtype=bool)
    new[1:] = values[1:] != values[:-1]
    sizes = np.diff(col_ptr)
    new[col_ptr[:-1][sizes > 0]] = True   # each column's first entry
    feature = np.repeat(np.arange(columns.n_features), sizes)
    return np.bincount(feature[new], minlength=columns.n_features)
