"""The one growth loop: every tree of every method grows here.

The driver owns the decisions: which open node is expanded next (the growth
policy, a queue), whether a node splits at all (``worth_splitting``: gamma,
rounding noise; ``min_child_weight`` is enforced inside the gain
arithmetic), how many leaves a tree may have (``max_leaves``) and how deep
it may go (``max_depth``), and which features each node may use (column
sampling). How a node's best split is found and how its rows move is the
job of a split finder (``finders.SplitFinder``), called a few times per
level, never per row::

    start_tree(gpair, active)      -> the root's totals
    find_splits(NodeBatch)         -> SplitBatch (one record per node)
    apply_splits(nodes, splits,
                 left, right, ...) -> the children, in the order to find
    retire(nodes)                  -> nodes that became leaves
    finish_tree(tree)              -> where the rows ended (margins)

Depth-wise growth (``DepthwiseQueue``) expands a whole level per step;
best-first growth (``LossguideHeap``, ``grow_policy="lossguide"``)
expands the open leaf of highest gain. With ``max_leaves = 2**max_depth``
the two grow the same trees.

Constraints live here too (``constraints.NodeConstraints``): each node's
feature mask is its column sample restricted by the interaction
constraints, and with monotone constraints each node carries bounds on
its weight, which the finders hand to the split kernels (``_gain.pxd``)
with the features' directions; the driver cuts the children's bounds
after every split and clips the leaf weights into them.
"""

import heapq
from dataclasses import dataclass, replace

import numpy as np

from ._context import SplitContext
from ._gain import leaf_scores
from ._tree import TreeBuilder, VectorTreeBuilder
from .constraints import NodeConstraints

# A split whose loss reduction is this small relative to its parent's score
# is rounding noise (the exact reduction is zero), not a split.
SPLIT_NOISE_RTOL = 1e-12

# The most nodes a tree's builder makes room for before its first split
# (a depth-8 tree has at most 511).
MAX_INITIAL_NODES = 1023


@dataclass(frozen=True)
class TreeParams:
    """Parameters of one tree's growth (see the estimators' docstrings)."""

    tree_method: str = "hist"
    approx_proposal: str = "global"
    max_bin: int = 256
    max_depth: int = 6  # 0: no limit
    max_leaves: int = 0  # 0: no limit
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
    # constraints, parsed (constraints.parse_*); None: none
    monotone: tuple = None  # -1/0/+1 per feature
    interaction_sets: tuple = None  # tuples of feature indices
    feature_weights: tuple = None  # column-sampling weight per feature

    @property
    def reg(self):
        """Positional arguments of the _gain kernels."""
        return (self.reg_lambda, self.reg_alpha, self.max_delta_step,
                self.min_child_weight)

    def allows_depth(self, depth):
        """Whether nodes at ``depth`` may still be split."""
        return self.max_depth == 0 or depth < self.max_depth


def node_scores(G, H, context):
    """Each node's score (``_gain.pxd``) from its sums, with the
    regularisation of ``context`` (a ``SplitContext``); a vector-leaf
    tree's nodes (G, H of shape (n, n_outputs)) score the sum over their
    outputs."""
    if np.ndim(G) == 1:
        return leaf_scores(G, H, context)
    scores = leaf_scores(np.ascontiguousarray(G).ravel(),
                         np.ascontiguousarray(H).ravel(), context)
    return scores.reshape(G.shape).sum(axis=1)


def worth_splitting(records, parent_score, gamma):
    """Nodes whose best split exists and reduces the loss by more than gamma
    (and by more than rounding noise)."""
    gain = records["gain"]
    return ((records["feature"] >= 0) & (gain > gamma)
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


@dataclass
class NodeBatch:
    """Open nodes handed to a finder together (all of one depth).

    Attributes
    ----------
    nodes : ndarray of shape (n,), int64
        Node ids in the tree being built.
    depth : int
    G, H : ndarray of shape (n,) or (n, n_outputs), float64
        Gradient and hessian totals the tree records for each node (per
        output in a vector-leaf tree).
    allowed : ndarray of shape (n, n_features), uint8
        The features each node may split on (column sample and
        interaction constraints).
    bounds : ndarray of shape (n, 2), float64, or None
        Bounds ``[lower, upper]`` of each node's weight; None when the
        model has no monotone constraint.
    monotone : ndarray of shape (n_features,), int8, or None
        The features' monotone constraints (-1, 0, +1), None with
        ``bounds``.
    """

    nodes: np.ndarray
    depth: int
    G: np.ndarray
    H: np.ndarray
    allowed: np.ndarray
    bounds: np.ndarray = None
    monotone: np.ndarray = None

    def constraint_arguments(self):
        """The split kernels' keyword arguments ``bounds`` and
        ``monotone`` (empty without monotone constraints)."""
        if self.bounds is None:
            return {}
        return dict(bounds=self.bounds, monotone=self.monotone)


@dataclass
class Expansion:
    """What a policy hands back: the nodes to split now (in increasing id
    order, with their splits) and the nodes that became final leaves."""

    nodes: np.ndarray
    depth: int
    splits: object  # SplitBatch
    retired: np.ndarray


_NO_NODES = np.zeros(0, dtype=np.int64)


class DepthwiseQueue:
    """Level by level: every node of a level worth splitting is split
    together (the best gains first when ``max_leaves`` runs out)."""

    def __init__(self, max_leaves):
        self.max_leaves = max_leaves
        self._level = None

    def push(self, nodes, depth, splits, worth):
        self._level = (nodes, depth, splits, worth)

    def pop(self, n_leaves):
        if self._level is None:
            return None
        nodes, depth, splits, worth = self._level
        self._level = None
        if not self.max_leaves:
            # no leaf limit (the common case): every node worth splitting
            # is split, in increasing id order
            worth = np.asarray(worth, dtype=bool)
            if worth.all():
                order = np.argsort(nodes, kind="stable")
                return Expansion(nodes[order], depth, splits.take(order),
                                 _NO_NODES)
            chosen = np.flatnonzero(worth)
            chosen = chosen[np.argsort(nodes[chosen], kind="stable")]
            return Expansion(nodes[chosen], depth, splits.take(chosen),
                             np.sort(nodes[~np.asarray(worth, dtype=bool)]))
        candidates = np.flatnonzero(worth)
        keep = within_max_leaves(splits.records["gain"][candidates],
                                 nodes[candidates], n_leaves, self.max_leaves)
        split_now = np.zeros(nodes.shape[0], dtype=bool)
        split_now[candidates[keep]] = True
        chosen = np.flatnonzero(split_now)
        chosen = chosen[np.argsort(nodes[chosen], kind="stable")]
        retired = np.sort(nodes[~split_now])
        return Expansion(nodes[chosen], depth, splits.take(chosen), retired)


class LossguideHeap:
    """Best first: the open leaf of highest gain (ties to the lower node id)
    is split next, until ``max_leaves`` leaves (0: no limit)."""

    def __init__(self, max_leaves):
        self.max_leaves = max_leaves or np.inf
        self._heap = []
        self._retired = []

    def push(self, nodes, depth, splits, worth):
        gain = splits.records["gain"]
        for k in range(nodes.shape[0]):
            if worth[k]:
                heapq.heappush(self._heap, (-gain[k], int(nodes[k]), depth,
                                            splits, k))
            else:
                self._retired.append(int(nodes[k]))

    def pop(self, n_leaves):
        retired = np.array(self._retired, dtype=np.int64)
        self._retired = []
        if not self._heap or n_leaves >= self.max_leaves:
            return Expansion(_NO_NODES, 0, None, retired)
        _, node, depth, splits, k = heapq.heappop(self._heap)
        return Expansion(np.array([node], dtype=np.int64), depth,
                         splits.take([k]), retired)


POLICIES = {"depthwise": DepthwiseQueue, "lossguide": LossguideHeap}


class GrowthDriver:
    """Grows trees with a split finder (see the module docstring).

    Parameters
    ----------
    finder : SplitFinder
    params : TreeParams
    sampler : ColumnSampler
        Draws the features of each tree, level and node.
    """

    def __init__(self, finder, params, sampler):
        self.finder = finder
        self.params = params
        self.sampler = sampler
        monotone = (None if params.monotone is None
                    else np.asarray(params.monotone, dtype=np.int8))
        # the regularisation of the driver's own arithmetic (node scores,
        # leaf weights), sequential: no thread count of its own
        self.context = SplitContext.from_params(params, 1)
        self.constraints = NodeConstraints(monotone, params.interaction_sets,
                                           sampler.n_features, self.context)

    def grow(self, gpair, active, gradient_maxima=None):
        """Grow one tree on unweighted gradient pairs ``gpair`` (n_rows, 2)
        float32 (for a vector-leaf finder: (n_outputs, n_rows, 2), and the
        tree has a value per output) with the rows where ``active`` is
        True. Returns the tree
        and where the rows ended (``add_values(tree, raw, column,
        n_threads)``), or None when the finder does not track them.
        ``gradient_maxima`` (max |g|, max |h| over every row of gpair, and
        the least h: ``check_gradients``),
        when known, go to a finder that takes them
        (``takes_gradient_maxima``: the histogram finders' fixed-point
        scales, which then need no pass over the rows)."""
        p = self.params
        self.sampler.start_tree()
        self.constraints.start_tree()
        if gradient_maxima is not None and self.finder.takes_gradient_maxima:
            G, H = self.finder.start_tree(gpair, active,
                                          gradient_maxima=gradient_maxima)
        else:
            G, H = self.finder.start_tree(gpair, active)
        # per-output totals: a vector-leaf tree (VectorHistFinder)
        builder = (TreeBuilder if np.ndim(G) == 0 else VectorTreeBuilder)(
            G, H, capacity=self._node_capacity())
        by_levels = self._unlimited_lossguide()
        policy = (DepthwiseQueue(0) if by_levels
                  else POLICIES[p.grow_policy](p.max_leaves))
        if p.allows_depth(0):
            self._find(builder, policy, np.zeros(1, dtype=np.int64), 0)
        while True:
            step = policy.pop(builder.n_leaves)
            if step is None:
                break
            self.finder.retire(step.retired)
            if step.nodes.shape[0] == 0:
                break
            self._expand(builder, policy, step)
        tree = builder.finish(self.constraints.leaf_weights,
                              p.learning_rate)
        rows = self.finder.finish_tree(tree)
        if by_levels:
            tree, rows = renumber_best_first(tree, rows)
        return tree, rows

    def _node_capacity(self):
        """Room for a tree's nodes from its start: every node its depth
        and leaf limits allow, up to MAX_INITIAL_NODES (the builder's
        arrays then grow, and are copied, once a tree at most, not at
        every level that fills them)."""
        p = self.params
        capacity = MAX_INITIAL_NODES
        if p.max_depth:
            capacity = min(capacity, 2 ** (p.max_depth + 1) - 1)
        if p.max_leaves:
            capacity = min(capacity, 2 * p.max_leaves - 1)
        return max(capacity, 1)

    # Best-first growth without a leaf limit splits every node worth
    # splitting, whatever the order: the tree is the depth-wise one, only
    # numbered in another order. Grown level by level (a few finder calls
    # per level instead of a few per node), then renumbered as the heap
    # would have numbered it. Not with per-node column samples: their
    # draws follow the order of the nodes.
    by_levels_when_unlimited = True

    def _unlimited_lossguide(self):
        p = self.params
        return (self.by_levels_when_unlimited and p.grow_policy == "lossguide"
                and not p.max_leaves and self.sampler.bynode >= 1.0)

    def _expand(self, builder, policy, step):
        """Split the step's nodes; find their children's splits unless the
        children are at the depth limit."""
        left, right = builder.split(step.nodes,
                                    **step.splits.builder_arguments())
        self._constrain_children(builder, step, left, right)
        depth = step.depth + 1
        grows_on = self.params.allows_depth(depth)
        children = self.finder.apply_splits(step.nodes, step.splits, left,
                                            right, find_next=grows_on)
        if grows_on:
            self._find(builder, policy, children, depth)
        else:
            self.finder.retire(children)

    def _constrain_children(self, builder, step, left, right):
        """The children's bounds and paths (``NodeConstraints.split``),
        from the sums the tree records for them."""
        if not self.constraints.active:
            return
        left_sets = step.splits.left_sets
        categorical = (np.zeros(len(step.splits), dtype=bool)
                       if left_sets is None else
                       np.array([s is not None for s in left_sets]))
        self.constraints.split(step.nodes, left, right,
                               step.splits.records["feature"], categorical,
                               builder.node_sums(left),
                               builder.node_sums(right))

    def _find(self, builder, policy, nodes, depth):
        """Best splits of ``nodes`` and whether each is worth making."""
        p = self.params
        G, H = builder.node_sums(nodes)
        constraints = self.constraints
        allowed = self.sampler.masks(depth, nodes.shape[0])
        interactions = constraints.allowed(nodes)
        if interactions is not None:
            allowed &= interactions
        batch = NodeBatch(nodes=nodes, depth=depth, G=G, H=H, allowed=allowed,
                          bounds=constraints.bounds(nodes),
                          monotone=constraints.monotone)
        splits = self.finder.find_splits(batch)
        parent_score = node_scores(splits.G, splits.H, self.context)
        policy.push(nodes, depth, splits,
                    worth_splitting(splits.records, parent_score, p.gamma))


def best_first_numbering(tree):
    """The id ``LossguideHeap`` gives each node of ``tree`` (a tree grown
    with every split worth making): the root is 0; the split node of
    highest gain (ties to the lower id) is split next and its children
    take the next two ids."""
    left, right, gain = tree.left_child, tree.right_child, tree.gain
    new_id = np.zeros(left.shape[0], dtype=np.int64)
    heap = [(-gain[0], 0, 0)] if left[0] != -1 else []
    n_ids = 1
    while heap:
        _, _, node = heapq.heappop(heap)
        for child in (left[node], right[node]):
            new_id[child] = n_ids
            n_ids += 1
            if left[child] != -1:
                heapq.heappush(heap, (-gain[child], new_id[child], child))
    return new_id


def renumber_best_first(tree, rows):
    """``tree`` and its leaf rows (``LeafRows`` or None) with the nodes
    numbered as best-first growth numbers them (``best_first_numbering``)."""
    new_id = best_first_numbering(tree)
    order = np.argsort(new_id)
    fields = {name: getattr(tree, name)[order]
              for name in ("feature", "threshold", "default_left", "value",
                           "gain", "cover")}
    for name in ("left_child", "right_child"):
        child = getattr(tree, name)[order]
        fields[name] = np.where(child == -1, -1,
                                new_id[child]).astype(child.dtype)
    cat_order = np.argsort(new_id[tree.cat_node])
    words = [tree.cat_bits[tree.cat_ptr[i]:tree.cat_ptr[i + 1]]
             for i in cat_order]
    cat_ptr = np.zeros(len(words) + 1, dtype=np.int64)
    cat_ptr[1:] = np.cumsum([w.shape[0] for w in words])
    renumbered = type(tree)(
        **fields, cat_node=new_id[tree.cat_node][cat_order].astype(np.int32),
        cat_size=tree.cat_size[cat_order], cat_ptr=cat_ptr,
        cat_bits=(np.concatenate(words) if words
                  else np.zeros(0, dtype=np.uint32)))
    return renumbered, _renumbered_rows(rows, new_id)


def _renumbered_rows(rows, new_id):
    """The finders' record of where rows ended (``finish_tree``: None,
    ``LeafRows`` by leaf, or ``RowLeaves`` by row, -1 for no leaf) with
    the leaves' new ids."""
    if rows is None:
        return None
    if hasattr(rows, "renumbered"):   # SplitLeafRows
        return rows.renumbered(new_id)
    if hasattr(rows, "node"):
        return replace(rows, node=new_id[rows.node])
    leaf = rows.leaf
    return replace(rows, leaf=np.where(leaf >= 0, new_id[np.maximum(leaf, 0)],
                                       -1).astype(leaf.dtype))
