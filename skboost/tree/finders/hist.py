"""Histogram finders: ``tree_method="hist"`` on dense data, and the
approximate method with global proposals (cuts re-proposed per tree, then
the same histograms).

Rows are kept partitioned so that each node's rows are a contiguous slice
(``RowPartition``). Applying a batch of splits partitions the parents'
slices, builds the smaller children's histograms and derives the larger
children's by subtraction from their parents' (exact in fixed point);
finding splits scans the histograms of a batch of nodes in one kernel call.
On a level of many splits (``pipeline_pays``) of numeric features, the
histograms wait for the scan instead (``PendingLevel``), which builds,
subtracts and scans them pair by pair, each pair's two histograms read
while in cache (``_histogram.build_subtract_scan``): the same splits.
"""

import numpy as np

from .._approx import codes_from_sorted, propose_cuts
from .._binning import BinnedData
from .._categorical_scan import (ListedSpans, NodeCategoryLists,
                                 batch_left_sets, subtract_listed_spans)
from .._context import SplitContext
from .._hist_split import find_best_splits_hist
from .._histogram import (FixedPointGradients, build_histograms,
                           build_sparse_histograms, build_subtract_scan,
                           subtract_histograms)
from .._partition import RowPartition
from ..memory import check_histogram_pool
from ..binning import HistogramLayout, category_cuts, value_bin_caps
from ..splits import SplitBatch
from .base import (LastSplits, LeafRows, NodeTable, SplitFinder,
                   SplitLeafRows)


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

    ``array``: memory given to the pool (int64 of shape ``(capacity,
    n_bins) + entry_shape``), e.g. a distributed fit's shared outbox,
    where the histograms are built for the other workers to read; None:
    allocated. When full, the pool grows into memory of its own.
    """

    def __init__(self, n_bins, capacity, entry_shape=(2,), array=None):
        self.n_bins = n_bins
        # a bin's entry: (gradient, hessian), or (n_outputs, 2) for the
        # vector histograms of vector-leaf trees
        self.entry_shape = tuple(entry_shape)
        shape = (max(1, capacity), n_bins) + self.entry_shape
        if array is None:
            check_histogram_pool(shape[0], n_bins * self._pairs_per_bin())
            array = np.empty(shape, dtype=np.int64)
        elif array.shape != shape or array.dtype != np.int64:
            raise ValueError(f"array must be int64 of shape {shape}, got "
                             f"{array.dtype} {array.shape}")
        self.array = array
        self._free = list(range(self.array.shape[0] - 1, -1, -1))

    def _pairs_per_bin(self):
        """(gradient, hessian) pairs in a bin's entry: 1, or n_outputs."""
        return int(np.prod(self.entry_shape)) // 2

    def take(self, n):
        """Rows for n new histograms (int64 array)."""
        while len(self._free) < n:
            self._grow()
        # the last n free rows, last first: the rows n pops would give,
        # in one slice (a level takes up to 2**(max_depth - 2) at once)
        taken = self._free[len(self._free) - n:]
        del self._free[len(self._free) - n:]
        return np.array(taken[::-1], dtype=np.int64)

    def give_back(self, rows):
        rows = np.asarray(rows)
        self._free.extend(rows[rows >= 0].tolist())

    def clear(self):
        """Every row free (a new tree)."""
        self._free = list(range(self.array.shape[0] - 1, -1, -1))

    def _grow(self):
        old = self.array.shape[0]
        check_histogram_pool(2 * old, self.n_bins * self._pairs_per_bin())
        array = np.empty((2 * old, self.n_bins) + self.entry_shape,
                         dtype=np.int64)
        array[:old] = self.array
        self.array = array
        self._free[:0] = range(2 * old - 1, old - 1, -1)


# per node: its rows' slice, its histogram's row in the pool (-1: none) and
# its exact fixed-point totals
_HIST_NODE = {"begin": (np.int64, ()), "end": (np.int64, ()),
              "hist_row": (np.int64, ()), "sums": (np.int64, (2,))}


class PooledHistogramFinder(SplitFinder):
    """What the histogram finders share once a level's splits are chosen:
    each node's slice of the row partition, its histogram's row in the pool
    and its exact sums (``self.table``); the smaller child's histogram
    built, the larger one's by subtraction. Subclasses say how rows are
    split, how histograms are built and subtracted, and where the left
    sums of a split come from."""

    # Whether a last level of numeric splits is left unpartitioned, its
    # rows' leaves read off the splits when the margins are updated
    # (``SplitLeafRows``); set by HistFinder's ``defer_last_partition``.
    defers_last_partition = False

    def apply_splits(self, nodes, splits, left, right, find_next):
        t = self.table
        t.reserve(int(right.max()) + 1)
        if not find_next and self._can_defer(splits):
            return self._defer_last_splits(nodes, splits, left, right)
        begin, end = t["begin"][nodes], t["end"][nodes]
        n_left = self._split_rows(begin, end, splits)
        mid = begin + n_left
        left_smaller = n_left <= end - mid
        small = np.where(left_smaller, left, right)
        large = left + right - small
        hist_row = t["hist_row"]
        parent_rows = hist_row[nodes]
        hist_row[nodes] = -1
        if find_next:
            # The smaller children's histograms are built into new rows; each
            # larger child's is its parent's minus the smaller one, computed
            # in the parent's row (exact in fixed point).
            small_rows = self.pool.take(nodes.shape[0])
            hist_row[small], hist_row[large] = small_rows, parent_rows
            self._children_histograms(np.where(left_smaller, begin, mid),
                                      np.where(left_smaller, mid, end),
                                      small_rows, parent_rows)
        else:
            # the children will be leaves: no histogram is needed
            self.pool.give_back(parent_rows)
            hist_row[left] = hist_row[right] = -1
        left_sums = self._left_sums(splits)
        t["begin"][left], t["end"][left] = begin, mid
        t["begin"][right], t["end"][right] = mid, end
        t["sums"][right] = t["sums"][nodes] - left_sums
        t["sums"][left] = left_sums
        return self.children_order(left, right, left_smaller)

    def _children_histograms(self, small_begin, small_end, small_rows,
                             parent_rows):
        """The smaller children's histograms (rows ``small_begin[k] ..
        small_end[k]`` of the partition) into ``small_rows``, and the
        larger ones' into their parents' rows (``parent_rows``)."""
        self.build_histograms(small_begin, small_end, small_rows)
        self._subtract(parent_rows, small_rows)

    def children_order(self, left, right, left_smaller):
        """The children of a level's splits in the order their splits are
        to be found (the column sampler draws per-node masks in it): the
        smaller child of each split first (``left_smaller``: by row
        count), then the larger ones."""
        small = np.where(left_smaller, left, right)
        return np.concatenate([small, left + right - small])

    def _can_defer(self, splits):
        """The children of these splits are leaves: their rows need no
        partition when every split is numeric (``SplitLeafRows``)."""
        return self.defers_last_partition and (
            splits.left_sets is None
            or all(s is None for s in splits.left_sets))

    def _defer_last_splits(self, nodes, splits, left, right):
        """``apply_splits`` of a last level without its partition: the
        splits are kept for ``finish_tree`` (the children's slices stay
        unknown; they are leaves, and only their rows' values are needed)."""
        t, r = self.table, splits.records
        self.pool.give_back(t["hist_row"][nodes])
        t["hist_row"][nodes] = t["hist_row"][left] = t["hist_row"][right] = -1
        self._last_splits.append(LastSplits(
            begin=t["begin"][nodes].copy(), end=t["end"][nodes].copy(),
            feature=r["feature"].astype(np.int32),
            split_bin=r["split_bin"].astype(np.int32),
            default_left=r["default_left"].astype(np.uint8),
            left=np.asarray(left, dtype=np.int64),
            right=np.asarray(right, dtype=np.int64)))
        left_sums = self._left_sums(splits)
        t["sums"][right] = t["sums"][nodes] - left_sums
        t["sums"][left] = left_sums
        return np.concatenate([left, right])

    def retire(self, nodes):
        self.pool.give_back(self.table["hist_row"][nodes])
        self.table["hist_row"][nodes] = -1

    def finish_tree(self, tree):
        self.gradients = None
        leaves = np.flatnonzero(tree.left_child == -1)
        t = self.table
        last, self._last_splits = getattr(self, "_last_splits", []), []
        if last:
            last = LastSplits(*(np.concatenate(parts) for parts in zip(
                *[(s.begin, s.end, s.feature, s.split_bin, s.default_left,
                   s.left, s.right) for s in last])))
            # a mask over the tree's node ids (np.isin sorts both arrays)
            deferred = np.zeros(tree.left_child.shape[0], dtype=bool)
            deferred[last.left] = deferred[last.right] = True
            leaves = leaves[~deferred[leaves]]
        sliced = LeafRows(self.partition, t["begin"][leaves].copy(),
                          t["end"][leaves].copy(), leaves)
        if not last:
            return sliced
        return SplitLeafRows(sliced, self.binned, last, self.n_threads)


class HistFinder(PooledHistogramFinder):
    """Splits found on gradient histograms over binned features
    (``tree_method="hist"``, dense input).

    Parameters
    ----------
    binned : BinnedData
    thresholds : ndarray of shape (n_bins,)
        Tree threshold of each "split after bin" (``BinMapper.split_thresholds_``).
    params : TreeParams
    n_threads : int
    weight : ndarray of shape (n_rows,) or None
    categorical : ndarray of shape (n_features,), bool, default=None
        Features whose value bins are categories (``_hist_split``); their
        splits send a set of categories left.
    """

    def __init__(self, binned, thresholds, params, n_threads, weight=None,
                 categorical=None, defer_last_partition=False):
        self.binned = binned
        self.defers_last_partition = defer_last_partition
        self._last_splits = []
        self.thresholds = thresholds
        self.categorical = (None if categorical is None or not np.any(
            categorical) else np.asarray(categorical, dtype=np.uint8))
        self.params = params
        self.n_threads = n_threads
        self.fit_context = SplitContext.from_params(params, n_threads)
        self.weight = weight
        self.partition = None
        self.pool = None
        self.table = NodeTable(_HIST_NODE)
        # fixed-point scales to use instead of the tree's own (None): set
        # by distributed training (skboost.dask), chosen over every worker
        self.fixed_scales = None
        self._category_lists = CategoryListKeeper()
        # the splitting parents' lists, as the spans of bins their
        # children's histograms are zeroed and subtracted on (apply_splits)
        self._parent_spans = None
        # a level whose histograms wait for its scan (PendingLevel)
        self._pending = None

    # start_tree takes the maxima of the gradients (GrowthDriver.grow)
    takes_gradient_maxima = True

    def start_tree(self, gpair, active, gradient_maxima=None):
        """The root's totals; ``gradient_maxima`` (max |g|, max |h| and
        the least h of every row, when known) save the fixed-point scales,
        and the test that the category lists nest, a pass over the rows,
        for unit weights (``FixedPointGradients``)."""
        self.gradients = FixedPointGradients(
            gpair, self.weight, active, self.n_threads,
            scales=self.fixed_scales,
            maxima=gradient_maxima if self.weight is None else None)
        self.scales = self.gradients.scales
        self.context = self.fit_context.with_scales(*self.scales)
        self._category_lists.start_tree(
            self.categorical is not None and self.fixed_scales is None
            and self.gradients.hessians_positive())
        if self.partition is None or (
                self.partition.n_rows != self.binned.n_rows):
            self.partition = RowPartition([], self.binned.n_rows)
        self.partition.reset_to_active(active, self.n_threads)
        self._start_pool()
        self._last_splits = []
        self._pending = None
        n_active = self.partition.row_index.shape[0]
        root_row = self.pool.take(1)
        self.build_histograms([0], [n_active], root_row)
        first = self.binned.bin_ptr
        sums = self.pool.array[root_row[0], first[0]:first[1]].sum(axis=0)
        t = self.table
        t["begin"][0], t["end"][0] = 0, n_active
        t["hist_row"][0], t["sums"][0] = root_row[0], sums
        G, H = sums / self.scales
        return G, H

    def build_histograms(self, begin, end, hist_rows):
        """Histograms of the rows ``partition.row_index[begin[k]:end[k]]``
        into the pool's rows ``hist_rows`` (the one place the binned rows
        are read: the hook of out-of-core pages, and where histograms
        would be summed across processes)."""
        build_histograms(self.binned, self.partition, self.gradients, begin,
                         end, self.pool.array, self.n_threads,
                         hist_rows=hist_rows, listed=self._parent_spans)

    def _start_pool(self):
        """Every histogram row free; a new pool when the bins changed."""
        n_bins = self.binned.n_bins
        if self.pool is None or self.pool.n_bins != n_bins:
            p = self.params
            depth_bound = 2 ** (p.max_depth - 1) if p.max_depth else 64
            self.pool = HistogramPool(
                n_bins, min(depth_bound, p.max_leaves or depth_bound, 1024))
        else:
            self.pool.clear()

    def find_splits(self, batch):
        pending, self._pending = self._pending, None
        if pending is not None:
            if batch.bounds is None and pending.feeds(
                    self.table["hist_row"][batch.nodes]):
                return self._pipelined_splits(batch, pending)
            pending.finish(self)
        sums = self.table["sums"][batch.nodes]
        lists = self._category_lists.for_batch(
            batch.nodes, self.binned.bin_ptr, self.categorical,
            max_cat_threshold=self.context.max_cat_threshold)
        records = find_best_splits_hist(
            self.pool.array, sums, self.binned.bin_ptr,
            _as_2d(self.thresholds), batch.allowed, context=self.context,
            hist_rows=self.table["hist_row"][batch.nodes],
            categorical=self.categorical, category_lists=lists,
            **batch.constraint_arguments())
        self._category_lists.scanned(batch.nodes, lists)
        G, H = (sums / self.scales).T
        return SplitBatch(records, G, H,
                          self._left_sets(batch.nodes, records, lists))

    def _pipelined_splits(self, batch, pending):
        """``find_splits`` of a level whose histograms wait (``pending``):
        built, subtracted and scanned pair by pair
        (``build_subtract_scan``), the splits those of the batch path."""
        sums = self.table["sums"][batch.nodes]
        records = build_subtract_scan(
            self.binned, self.partition, self.gradients, pending.small_begin,
            pending.small_end, pending.small_rows, pending.parent_rows,
            self.pool.array, sums, _as_2d(self.thresholds), batch.allowed,
            context=self.context)
        G, H = (sums / self.scales).T
        return SplitBatch(records, G, H, None)

    # Whether a level's histograms may wait for its scan (``PendingLevel``):
    # dense codes that ``build_histograms`` reads as they are.
    pipelines_levels = True

    def _children_histograms(self, small_begin, small_end, small_rows,
                             parent_rows):
        if self._pipeline_pays(small_begin.shape[0]):
            # built when the level is scanned, pair by pair (find_splits)
            self._pending = PendingLevel(small_begin, small_end, small_rows,
                                         parent_rows)
            return
        super()._children_histograms(small_begin, small_end, small_rows,
                                     parent_rows)

    def _pipeline_pays(self, n_pairs):
        """Whether a level of ``n_pairs`` splits goes through the per-node
        pipeline: numeric features without monotone constraints (what
        ``build_subtract_scan`` scans), on a level where it pays
        (``pipeline_pays``)."""
        if not self.pipelines_levels or self.categorical is not None or (
                self._parent_spans is not None
                or self.params.monotone is not None):
            return False
        return pipeline_pays(n_pairs, self.binned.n_bins, self.n_threads)

    def apply_splits(self, nodes, splits, left, right, find_next):
        self._finish_pending()
        # the parents' lists go to their children's scans, and (as spans)
        # to the zeroing of their smaller children's histograms and the
        # subtraction of their larger children's
        parent_lists = self._category_lists.split(nodes, left, right)
        if parent_lists is not None and find_next:
            self._parent_spans = ListedSpans(
                parent_lists, self.binned.bin_ptr, self.categorical)
        try:
            return super().apply_splits(nodes, splits, left, right,
                                        find_next)
        finally:
            self._parent_spans = None

    def retire(self, nodes):
        self._finish_pending()
        self._category_lists.forget(nodes)
        super().retire(nodes)

    def _finish_pending(self):
        """A waiting level's histograms built (by the batch path) before
        anything else reads or frees the pool."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.finish(self)

    def _left_sets(self, nodes, records, lists=None):
        """The categories each categorical best split sends left, read off
        its node's histogram (None for a batch without one). When the node
        has no missing value of the feature, missing values (and unseen
        categories) go with "the rest", the side the categories absent
        from the node take. One call for the batch (``batch_left_sets``):
        the order its scan kept (a sorted split), else ordered anew from
        its histogram (``categorical_left_set``)."""
        if self.categorical is None:   # no categorical feature
            return None
        if not np.any((records["feature"] >= 0) & (records["cat_kind"] > 0)):
            return None
        left_sets, missing_left = batch_left_sets(
            self.pool.array, self.table["hist_row"][nodes],
            records["feature"], records["cat_kind"], records["split_bin"],
            self.binned.bin_ptr, self.context, lists)
        empty = missing_left >= 0   # the node's missing bin is empty
        records["default_left"][empty] = missing_left[empty]
        return left_sets

    def _split_rows(self, begin, end, splits):
        r = splits.records
        return self.partition.split_nodes(
            self.binned, begin, end, r["feature"], r["split_bin"],
            r["default_left"], n_threads=self.n_threads,
            left_sets=splits.left_sets)

    def _subtract(self, parent_rows, small_rows):
        if self._parent_spans is None:
            subtract_histograms(self.pool.array, parent_rows, small_rows,
                                self.n_threads)
            return
        # the parents' lists nest (CategoryListKeeper): a listed feature's
        # children are read on their parent's list only (ListedSpans)
        subtract_listed_spans(self.pool.array, parent_rows, small_rows,
                              self._parent_spans, self.n_threads)

    def _left_sums(self, splits):
        # two column writes into one (n, 2) array: np.column_stack's
        # checks and temporaries cost more than the copy at a level's size
        r = splits.records
        sums = np.empty((r.shape[0], 2), dtype=np.int64)
        sums[:, 0] = r["Gq_left"]
        sums[:, 1] = r["Hq_left"]
        return sums


class PendingLevel:
    """The histograms of a level's children, waiting for the level's scan
    (``HistFinder.find_splits``), which builds the smaller children's
    (rows ``small_begin[k] .. small_end[k]`` into ``small_rows``), derives
    the larger ones' in their parents' rows (``parent_rows``) and scans
    both pair by pair while they are in cache (``build_subtract_scan``).
    """

    def __init__(self, small_begin, small_end, small_rows, parent_rows):
        self.small_begin, self.small_end = small_begin, small_end
        self.small_rows, self.parent_rows = small_rows, parent_rows

    def feeds(self, hist_rows):
        """Whether a batch of nodes (their pool rows) is this level in the
        pipeline's order: the smaller children, then the larger."""
        n = self.small_rows.shape[0]
        return (hist_rows.shape[0] == 2 * n
                and np.array_equal(hist_rows[:n], self.small_rows)
                and np.array_equal(hist_rows[n:], self.parent_rows))

    def finish(self, finder):
        """The histograms built and subtracted by the batch path."""
        PooledHistogramFinder._children_histograms(
            finder, self.small_begin, self.small_end, self.small_rows,
            self.parent_rows)


# When a level goes through the pipeline (measured on 10,000 x 28, depth
# 8, against the batch path on the same levels): on several threads, from
# 2 pairs a thread (the pairs share out, in one parallel region instead of
# three; fewer, and the batch path shares out each node's features); on
# one thread, once the level's histograms outgrow LEVEL_CACHE_BYTES (the
# batch path's passes then read them back from beyond L2; below, the
# pipeline was up to a tenth slower, above, a tenth faster). A pair's
# build is at most a build task of rows: the smaller children of more are
# built first on every thread (build_subtract_scan).
PIPELINE_PAIRS_PER_THREAD = 2
LEVEL_CACHE_BYTES = 1 << 20


def pipeline_pays(n_pairs, n_bins, n_threads):
    """Whether a level of ``n_pairs`` splits of histograms of ``n_bins``
    goes through the pipeline (see PIPELINE_PAIRS_PER_THREAD)."""
    if n_threads > 1:
        return n_pairs >= PIPELINE_PAIRS_PER_THREAD * n_threads
    # two children a pair, 16 bytes a bin
    return 2 * n_pairs * n_bins * 16 > LEVEL_CACHE_BYTES


def _as_2d(thresholds):
    """``np.atleast_2d`` of the finder's thresholds (an ndarray, or None
    for a finder whose binning is not set yet), as a plain view: the scan
    of every level takes it."""
    if isinstance(thresholds, np.ndarray) and thresholds.ndim == 1:
        return thresholds[np.newaxis]
    return np.atleast_2d(thresholds)


class SparseHistFinder(HistFinder):
    """``HistFinder`` on sparse rows whose stored entries alone are
    binned (``binned``: a ``_sparse.BinnedRows``, one code per stored
    entry): each histogram is built from the node's stored entries, its
    absent entries' sums from the node's totals
    (``build_sparse_histograms``), and rows move by their stored entry of
    the split feature (``RowPartition.split_nodes_sparse``). The
    histograms, hence the splits, are integer for integer those of
    ``HistFinder`` on the dense codes of the same rows. Distributed
    training of sparse shards grows on it (``skboost.dask``,
    ``skboost.spark``): the histograms are summed across processes as
    the dense ones are."""

    # its rows are not the dense codes build_subtract_scan reads
    pipelines_levels = False

    def build_histograms(self, begin, end, hist_rows):
        build_sparse_histograms(self.binned, self.partition, self.gradients,
                                begin, end, self.pool.array, self.n_threads,
                                hist_rows=hist_rows)

    def children_order(self, left, right, left_smaller):
        """Each split's left child, then its right: the order single-node
        training on sparse rows finds them in (``finders.level``), so that
        a column sampler drawing a mask per node draws the same masks."""
        return np.column_stack([left, right]).ravel()

    def _split_rows(self, begin, end, splits):
        r = splits.records
        return self.partition.split_nodes_sparse(
            self.binned, begin, end, r["feature"], r["split_bin"],
            r["default_left"], n_threads=self.n_threads,
            left_sets=splits.left_sets)


class CategoryListKeeper:
    """The non-empty categories each scanned node of a tree found
    (``_categorical_scan.NodeCategoryLists``), handed to its children's
    scans, which then visit those instead of every category.

    Only when ``start_tree`` is told the tree's lists nest (every row's
    fixed-point hessian positive, one process): a child's non-empty
    categories are then among its parent's, and its splits the same as
    with every category visited. Otherwise every node's scan visits every
    category, and its own list serves only its left set.
    """

    def __init__(self):
        self.nested = False
        self._scanned = {}   # node -> (its batch's lists, index in it)
        self._parent = {}    # node -> its parent's (lists, index)

    def start_tree(self, nested):
        self.nested = bool(nested)
        self._scanned.clear()
        self._parent.clear()

    def for_batch(self, nodes, bin_ptr, categorical, max_cat_threshold=None):
        """The lists of a batch's scan (None without categorical
        features); with ``max_cat_threshold``, they keep each sorted
        scan's order for the left set of the node's split."""
        if categorical is None:
            return None
        parents = [self._parent.pop(int(n), None) for n in nodes]
        return NodeCategoryLists(parents, bin_ptr, categorical,
                                 max_cat_threshold=max_cat_threshold)

    def scanned(self, nodes, lists):
        if lists is not None and self.nested:
            # a feature a node did not scan passes its visited list on
            lists.pass_on_unscanned()
            for k, node in enumerate(nodes.tolist()):
                self._scanned[node] = (lists, k)

    def split(self, nodes, left, right):
        """Hand the parents' lists to their children; returns them, one
        per parent, or None when no parent has one."""
        if not self._scanned:   # no list kept (no categorical feature)
            return None
        found = [self._scanned.pop(node, None) for node in nodes.tolist()]
        for lists, l, r in zip(found, left.tolist(), right.tolist()):
            if lists is not None:
                self._parent[l] = self._parent[r] = lists
        return found if any(f is not None for f in found) else None

    def forget(self, nodes):
        if not self._scanned:
            return
        for node in np.asarray(nodes).tolist():
            self._scanned.pop(node, None)


class GlobalApproxFinder(HistFinder):
    """The paper's approximate algorithm (``tree_method="approx"``) with
    global proposals: for every tree, candidate cuts are re-proposed from
    the current hessians (``_approx.propose_cuts``: hessian-weighted
    quantiles read off the presorted columns, at most ``max_bin`` value
    bins per feature), the rows re-binned, and the tree grown on
    histograms as by ``HistFinder``.

    Parameters
    ----------
    sorted_columns : SortedColumns
    params : TreeParams
    max_bin : int
    n_threads : int
    weight : ndarray of shape (n_rows,) or None
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (values: category codes), 0
        for the numeric ones: a categorical feature keeps one bin per
        category instead of proposed cuts.
    """

    def __init__(self, sorted_columns, params, max_bin, n_threads,
                 weight=None, n_categories=None):
        super().__init__(None, None, params, n_threads, weight=weight,
                         categorical=None if n_categories is None
                         else n_categories > 0)
        self.sorted = sorted_columns
        self.n_categories = n_categories
        n_rows = sorted_columns.n_rows
        self.has_missing = np.diff(sorted_columns.col_ptr) < n_rows
        self.max_bins = value_bin_caps(max_bin, self.has_missing)
        self._proposed_for = None   # (hessians, active rows) of the binning

    def start_tree(self, gpair, active, gradient_maxima=None):
        # the same hessians on the same rows propose the same cuts
        # (constant-hessian objectives without row sampling): keep the
        # binning, checked on the inputs without building the weighted copy
        if self._proposed_for is None or not (
                np.array_equal(gpair[:, 1], self._proposed_for[0])
                and np.array_equal(active, self._proposed_for[1])):
            self._proposed_for = (gpair[:, 1].copy(), active.copy())
            self._rebin(weighted_hessians(gpair, self.weight, active))
        return super().start_tree(gpair, active, gradient_maxima)

    def _rebin(self, hess):
        cuts = propose_cuts(self.sorted, hess, self.max_bins, self.n_threads)
        if self.n_categories is not None:
            for f in np.flatnonzero(self.n_categories):
                cuts[f] = category_cuts(self.n_categories[f])
        layout = HistogramLayout(cuts, self.has_missing)
        self.binned = None   # the old codes go before the new arrive
        codes = np.empty((self.sorted.n_features, self.sorted.n_rows),
                         dtype=layout.code_dtype)
        codes_from_sorted(self.sorted, cuts, codes, self.n_threads)
        self.binned = BinnedData(codes.T, layout.bin_ptr)
        self.thresholds = layout.split_thresholds


def weighted_hessians(gpair, weight, active):
    """float64 hessian of each row times its weight, 0 for inactive rows
    (the mass of the approximate method's proposals)."""
    hess = gpair[:, 1].astype(np.float64)
    if weight is not None:
        hess *= weight
    hess[~active] = 0.0
    return hess
