"""The one tree format every split finder produces.

A tree is a set of flat node arrays (structure of arrays). Node 0 is the
root; an internal node's children always have larger indices than the node
itself (the predictor relies on it to terminate); a leaf has
``left_child == right_child == -1``. A row goes left when its value is
``< threshold``, and a missing value follows ``default_left``.

A categorical split (on a feature whose values are category codes
0 .. n_categories-1) sends a row left when its category is in the split's
left set instead; its ``threshold`` is unused (0). The categorical splits of
a tree are listed in ``cat_node`` (increasing node ids), with the number of
categories of their feature in ``cat_size``; split ``i``'s left set is the
bitset ``cat_bits[cat_ptr[i]:cat_ptr[i+1]]`` (uint32 words, bit ``c % 32``
of word ``c // 32`` for category ``c``; categories beyond the last word go
right). A missing value follows ``default_left``, and so does a value that
is not a category code (unseen in training): see ``category_goes_left``.
"""

from dataclasses import dataclass, field

import numpy as np

NO_CHILD = -1

NODE_FIELDS = {
    # name: dtype
    "left_child": np.int32,
    "right_child": np.int32,
    "feature": np.int32,  # -1 on leaves
    "threshold": np.float64,
    "default_left": np.uint8,
    "value": np.float64,  # leaf output (learning_rate * weight); also set on inner nodes;
                          # (n_nodes, n_outputs) in a vector-leaf tree
    "gain": np.float64,  # loss reduction of the split (0 on leaves)
    "cover": np.float64,  # sum of hessians of the training rows in the node
                          # (of every output, in a vector-leaf tree)
}


@dataclass
class Tree:
    """A regression tree as flat arrays, one entry per node (see module doc)."""

    left_child: np.ndarray
    right_child: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray
    cat_node: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    cat_size: np.ndarray = field(default_factory=lambda: _empty(np.int32))
    cat_ptr: np.ndarray = field(
        default_factory=lambda: np.zeros(1, dtype=np.int64))
    cat_bits: np.ndarray = field(default_factory=lambda: _empty(np.uint32))

    @property
    def has_categorical_splits(self):
        return self.cat_node.shape[0] > 0

    def left_categories(self, node):
        """Categories that split ``node`` sends left (sorted ndarray), or
        None when it is not a categorical split."""
        i = np.searchsorted(self.cat_node, node)
        if i == self.cat_node.shape[0] or self.cat_node[i] != node:
            return None
        words = self.cat_bits[self.cat_ptr[i]:self.cat_ptr[i + 1]]
        bits = np.unpackbits(words.astype("<u4").view(np.uint8),
                             bitorder="little")
        return np.flatnonzero(bits)

    @property
    def n_nodes(self):
        return self.left_child.shape[0]

    @property
    def is_vector_leaf(self):
        """Whether a node holds one value per output (``value`` of shape
        (n_nodes, n_outputs): a tree of ``multi_strategy=
        "multi_output_tree"``)."""
        return self.value.ndim == 2

    def output_view(self, output):
        """A vector-leaf tree as the single-output tree of one output: the
        same structure (arrays shared), that output's values."""
        return Tree(self.left_child, self.right_child, self.feature,
                    self.threshold, self.default_left,
                    np.ascontiguousarray(self.value[:, output]), self.gain,
                    self.cover, self.cat_node, self.cat_size, self.cat_ptr,
                    self.cat_bits)

    def scaled(self, weight):
        """The tree with every node's value times ``weight`` (a DART tree at
        its weight): the same structure (arrays shared), new values."""
        return Tree(self.left_child, self.right_child, self.feature,
                    self.threshold, self.default_left, self.value * weight,
                    self.gain, self.cover, self.cat_node, self.cat_size,
                    self.cat_ptr, self.cat_bits)

    @property
    def is_leaf(self):
        return self.left_child == NO_CHILD

    @property
    def n_leaves(self):
        return int(np.count_nonzero(self.is_leaf))

    @property
    def max_depth(self):
        """Length of the longest root-to-leaf path."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for node in range(self.n_nodes):  # children come after parents
            if self.left_child[node] != NO_CHILD:
                depth[self.left_child[node]] = depth[node] + 1
                depth[self.right_child[node]] = depth[node] + 1
        return int(depth.max())


def _empty(dtype):
    return np.zeros(0, dtype=dtype)


def category_bitset(left):
    """uint32 words of the left set given as a bool array over the
    categories: bit c % 32 of word c // 32 for category c, up to the word of
    the highest category in the set."""
    left = np.asarray(left).reshape(-1).astype(bool, copy=False)
    # every word packed, then the trailing empty ones dropped: no index
    # array of the set (tens of thousands of codes for "the rest")
    bits = np.zeros(max(-(-left.shape[0] // 32), 1) * 32, dtype=bool)
    bits[:left.shape[0]] = left
    words = np.packbits(bits, bitorder="little").view("<u4")
    used = np.flatnonzero(words)
    n_words = int(used[-1]) + 1 if used.size else 1
    return words[:n_words].astype(np.uint32)


def category_bitsets(left_sets):
    """``category_bitset`` of each of ``left_sets``, as the words of all
    back to back and each one's word count (int64): one bool buffer, one
    pack and one vectorised trim for a tree's sets instead of a handful of
    numpy calls per set (a tree of a high-cardinality feature has a
    hundred of them, tens of thousands of categories each)."""
    sets = [_as_flags(left) for left in left_sets]
    room = np.array([max(-(-f.shape[0] // 32), 1) for f in sets],
                    dtype=np.int64)   # each set's words before the trim
    start = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(room, out=start[1:])
    bits = np.zeros(int(start[-1]) * 32, dtype=bool)
    for k, flags in enumerate(sets):
        # each set from its first word's first bit (a 32-bit boundary)
        b = int(start[k]) * 32
        bits[b:b + flags.shape[0]] = flags
    words = np.packbits(bits, bitorder="little").view("<u4")
    if not sets:
        return words.astype(np.uint32), room
    # each set's words up to its last non-zero one (one word at least):
    # the greatest position of a non-zero word in each set's room
    position = np.where(words != 0, np.arange(words.shape[0]), -1)
    last = np.maximum.reduceat(position, start[:-1])
    n_words = np.where(last >= 0, last + 1 - start[:-1], 1)
    # the kept words: set k's are start[k] .. start[k] + n_words[k] - 1
    first_out = np.cumsum(n_words) - n_words
    keep = np.arange(int(n_words.sum())) + np.repeat(start[:-1] - first_out,
                                                      n_words)
    return words[keep].astype(np.uint32), n_words.astype(np.int64)


def _as_flags(left):
    """A left set as a flat bool array (a bool one as it is: a copy costs
    a tenth of ``!= 0``)."""
    left = np.asarray(left).reshape(-1)
    return left if left.dtype == np.bool_ else left != 0


def category_goes_left(value, n_categories, words, default_left):
    """Where a categorical split sends ``value`` (naive form of the
    predictor's rule): a category code in [0, n_categories) goes left when
    its bit is set; NaN and any other value follow ``default_left``."""
    if not (0 <= value < n_categories) or value != int(value):
        return bool(default_left)
    c = int(value)
    if c >= 32 * len(words):
        return False
    return bool((int(words[c // 32]) >> (c % 32)) & 1)


def float32_threshold(threshold):
    """The smallest float32 >= ``threshold``: for every float32 ``x``,
    ``x < t`` and ``x < float32_threshold(t)`` agree (the rule of skboost's
    predictor, which compares in float32)."""
    threshold = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):   # beyond float32: +-inf, as meant
        t32 = threshold.astype(np.float32)
    below = t32.astype(np.float64) < threshold
    t32[below] = np.nextafter(t32[below], np.float32(np.inf))
    return t32


def _interleaved(first, second):
    """``first[0], second[0], first[1], second[1], ...`` (the children of
    each split node take consecutive ids, left then right)."""
    out = np.empty(2 * first.shape[0], dtype=np.result_type(first, second))
    out[0::2] = first
    out[1::2] = second
    return out


class TreeBuilder:
    """Collects the nodes of a tree as they are split.

    Children are numbered after every node that exists when their parent is
    split, so a child's index is always larger than its parent's. Splitting a
    whole level at once numbers the tree breadth first.
    """

    _FIELDS = {"left_child": np.int32, "right_child": np.int32,
               "feature": np.int32, "threshold": np.float64,
               "default_left": np.uint8, "gain": np.float64,
               "G": np.float64, "H": np.float64}

    # a node's fields before it is split: no children, no feature
    _UNSPLIT = {"left_child": NO_CHILD, "right_child": NO_CHILD,
                "feature": NO_CHILD}

    def __init__(self, G_root, H_root, capacity=64):
        self._a = self._unsplit_arrays(capacity)
        self._n = 0
        self._n_split = 0   # nodes split so far (the others are leaves)
        self._left_sets = {}   # node -> bool array over its feature's categories
        self._add(np.array([G_root]), np.array([H_root]))

    @property
    def n_nodes(self):
        return self._n

    @property
    def n_leaves(self):
        """Nodes not split (yet)."""
        return self._n - self._n_split

    def node_sums(self, nodes):
        """(G, H) of the given nodes."""
        return self._a["G"][nodes], self._a["H"][nodes]

    # the unsplit arrays of the first capacity, copied for every tree
    _templates = {}

    def _unsplit_arrays(self, capacity, like=None):
        """Field arrays of ``capacity`` unsplit nodes (shaped as ``like``'s
        beyond the first axis), so that adding a node writes only its
        sums."""
        if like is None:
            key = type(self), capacity   # a subclass may have other fields
            template = TreeBuilder._templates.get(key)
            if template is None:
                template = self._new_unsplit_arrays(capacity, None)
                TreeBuilder._templates[key] = template
            return {name: array.copy() for name, array in template.items()}
        return self._new_unsplit_arrays(capacity, like)

    def _new_unsplit_arrays(self, capacity, like):
        arrays = {}
        for name, dtype in self._FIELDS.items():
            shape = (capacity,) + (() if like is None
                                   else like[name].shape[1:])
            arrays[name] = np.full(shape, self._UNSPLIT.get(name, 0),
                                   dtype=dtype)
        return arrays

    def _add(self, G, H):
        n_new = G.shape[0]
        if self._n + n_new > self._a["G"].shape[0]:
            capacity = max(2 * self._a["G"].shape[0], self._n + n_new)
            grown = self._unsplit_arrays(capacity, like=self._a)
            for name, array in self._a.items():
                grown[name][:array.shape[0]] = array
            self._a = grown
        new = slice(self._n, self._n + n_new)   # the ids are consecutive
        self._a["G"][new] = G
        self._a["H"][new] = H
        self._n += n_new
        return np.arange(new.start, new.stop)

    def split(self, nodes, feature, threshold, default_left, gain, G_left,
              H_left, left_sets=None):
        """Split ``nodes`` (their children get consecutive ids in order);
        returns the ids of the left and the right children. ``left_sets``
        (None, or one entry per node) makes a node's split categorical when
        its entry is not None: a bool array over its feature's categories,
        True for those going left (the threshold is then unused)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        a = self._a
        a["threshold"][nodes] = threshold
        for k, left in enumerate(left_sets or ()):
            if left is not None:
                node = int(nodes[k])
                self._left_sets[node] = np.asarray(left, dtype=bool)
                a["threshold"][node] = 0.0
        G, H = self.node_sums(nodes)
        G_left = np.asarray(G_left, dtype=np.float64)
        H_left = np.asarray(H_left, dtype=np.float64)
        children = self._add(_interleaved(G_left, G - G_left),
                             _interleaved(H_left, H - H_left))
        left, right = children[0::2], children[1::2]
        a = self._a   # _add may have grown the arrays
        a["left_child"][nodes] = left
        a["right_child"][nodes] = right
        a["feature"][nodes] = feature
        a["default_left"][nodes] = default_left
        a["gain"][nodes] = gain
        self._n_split += nodes.shape[0]
        return left, right

    def finish(self, weights_of, learning_rate):
        """The :class:`Tree`; ``weights_of(G, H)`` gives node weights."""
        a = {name: array[: self._n].copy() for name, array in self._a.items()}
        return Tree(
            left_child=a["left_child"], right_child=a["right_child"],
            feature=a["feature"], threshold=a["threshold"],
            default_left=a["default_left"],
            value=learning_rate * weights_of(a["G"], a["H"]),
            gain=a["gain"], cover=a["H"], **self._category_arrays())

    def _category_arrays(self):
        """The Tree's ``cat_*`` arrays of the categorical splits (the
        Tree's empty defaults when there is none)."""
        if not self._left_sets:
            return {}
        cat_node = np.array(sorted(self._left_sets), dtype=np.int32)
        sets = [self._left_sets[n] for n in cat_node.tolist()]
        words, n_words = category_bitsets(sets)
        cat_ptr = np.zeros(len(sets) + 1, dtype=np.int64)
        np.cumsum(n_words, out=cat_ptr[1:])
        return dict(
            cat_node=cat_node,
            cat_size=np.array([s.shape[0] for s in sets], dtype=np.int32),
            cat_ptr=cat_ptr, cat_bits=words)


class VectorTreeBuilder(TreeBuilder):
    """A :class:`TreeBuilder` of vector-leaf trees: every node records the
    gradient and hessian sums of each of its ``n_outputs`` outputs, and
    the finished tree a value per output (``value`` of shape (n_nodes,
    n_outputs)); a node's cover is its hessian sum over the outputs."""

    def __init__(self, G_root, H_root, capacity=64):
        self.n_outputs = np.shape(G_root)[0]
        super().__init__(G_root, H_root, capacity)

    def _add(self, G, H):
        G = np.asarray(G, dtype=np.float64).reshape(-1, self.n_outputs)
        H = np.asarray(H, dtype=np.float64).reshape(-1, self.n_outputs)
        if self._a["G"].ndim == 1:   # first call: per-output sums
            for name in ("G", "H"):
                self._a[name] = np.zeros((self._a["left_child"].shape[0],
                                          self.n_outputs))
        return super()._add(G, H)

    def split(self, nodes, feature, threshold, default_left, gain, G_left,
              H_left, left_sets=None):
        if left_sets is not None and any(s is not None for s in left_sets):
            raise ValueError("vector-leaf trees have no categorical splits")
        nodes = np.asarray(nodes, dtype=np.int64)
        G, H = self.node_sums(nodes)
        G_left = np.asarray(G_left, dtype=np.float64)
        H_left = np.asarray(H_left, dtype=np.float64)
        # children in order: left of node 0, right of node 0, left of ...
        children = self._add(np.stack([G_left, G - G_left], axis=1),
                             np.stack([H_left, H - H_left], axis=1))
        left, right = children[0::2], children[1::2]
        a = self._a
        a["left_child"][nodes] = left
        a["right_child"][nodes] = right
        a["feature"][nodes] = feature
        a["threshold"][nodes] = threshold
        a["default_left"][nodes] = default_left
        a["gain"][nodes] = gain
        self._n_split += nodes.shape[0]
        return left, right

    def finish(self, weights_of, learning_rate):
        a = {name: array[: self._n].copy() for name, array in self._a.items()}
        weights = weights_of(a["G"].ravel(), a["H"].ravel())
        return Tree(
            left_child=a["left_child"], right_child=a["right_child"],
            feature=a["feature"], threshold=a["threshold"],
            default_left=a["default_left"],
            value=learning_rate * weights.reshape(self._n, self.n_outputs),
            gain=a["gain"], cover=a["H"].sum(axis=1))
