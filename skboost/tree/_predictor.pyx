"""Prediction over the flat node arrays of an ensemble, parallel over rows.

All trees of a model are concatenated: tree t owns the nodes
``tree_start[t] .. tree_start[t+1]-1`` and its child indices are local to
it. A node is a leaf when ``left_child == -1``. Every array is validated
(``_check_forest``) before the nogil loops, so a hand-edited model can not
make them read out of bounds or loop forever (children always have a larger
index than their parent).

Categorical splits (``_tree.py``) are walked by ``PackedForest`` only: the
SoA functions ``predict_raw`` and ``predict_leaves`` take numeric trees.
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython

from cython.parallel cimport prange, threadid
from libc.math cimport NAN, isinf, isnan
from libc.stdlib cimport free, malloc

from libc.stdint cimport uint32_t

from ._common cimport NO_CHILD, int32_t, int64_t, prefetch, uint8_t
from .._parallel cimport threads_for_work
from ._sparse cimport SparseRows


cdef inline int32_t find_leaf(const float[:, ::1] X, Py_ssize_t row,
                              int64_t start,
                              const int32_t[::1] left_child,
                              const int32_t[::1] right_child,
                              const int32_t[::1] feature,
                              const double[::1] threshold,
                              const uint8_t[::1] default_left) noexcept nogil:
    """Tree-local index of the leaf that ``X[row]`` reaches."""
    cdef int32_t node = 0
    cdef int64_t i
    cdef float x
    # ends: a child's index is larger than its parent's (_check_forest),
    # so every step goes deeper and the walk reaches a leaf
    while True:
        i = start + node
        if left_child[i] == NO_CHILD:
            return node
        x = X[row, feature[i]]
        if isnan(x):
            node = left_child[i] if default_left[i] else right_child[i]
        elif x < threshold[i]:
            node = left_child[i]
        else:
            node = right_child[i]


def predict_raw(const float[:, ::1] X not None,             # IN (n_rows, n_features)
                const int32_t[::1] left_child not None,     # IN (n_nodes,)
                const int32_t[::1] right_child not None,    # IN (n_nodes,)
                const int32_t[::1] feature not None,        # IN (n_nodes,)
                const double[::1] threshold not None,       # IN (n_nodes,)
                const uint8_t[::1] default_left not None,   # IN (n_nodes,)
                const double[::1] value not None,           # IN (n_nodes,)
                const int64_t[::1] tree_start not None,     # IN (n_trees + 1,)
                const int32_t[::1] tree_group not None,     # IN (n_trees,) output column
                double[:, ::1] out not None,                # IN/OUT (n_rows, n_groups)
                int n_threads):
    """Add each tree's leaf value to its output column: ``out += f(X)``.

    Trees are summed in their order for every row, so the result does not
    depend on the number of threads.
    """
    n_threads = check_n_threads(n_threads)
    _check_forest(X.shape[1], left_child, right_child, feature, threshold,
                  default_left, value, tree_start, tree_group, out.shape[1])
    if out.shape[0] != X.shape[0]:
        raise ValueError("out must have one row per row of X")
    cdef Py_ssize_t r, t, n_trees = tree_group.shape[0]
    cdef int32_t leaf
    # a row per iteration: each writes only its own row of out
    for r in prange(X.shape[0], nogil=True, schedule="static",
                    num_threads=n_threads):
        for t in range(n_trees):
            leaf = find_leaf(X, r, tree_start[t], left_child, right_child,
                             feature, threshold, default_left)
            out[r, tree_group[t]] += value[tree_start[t] + leaf]


def predict_leaves(const float[:, ::1] X not None,
                   const int32_t[::1] left_child not None,
                   const int32_t[::1] right_child not None,
                   const int32_t[::1] feature not None,
                   const double[::1] threshold not None,
                   const uint8_t[::1] default_left not None,
                   const int64_t[::1] tree_start not None,
                   int n_threads):
    """Tree-local leaf index reached by every row in every tree,
    shape (n_rows, n_trees)."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_trees = tree_start.shape[0] - 1
    _check_forest(X.shape[1], left_child, right_child, feature, threshold,
                  default_left, None, tree_start,
                  np.zeros(max(n_trees, 0), dtype=np.int32), 1)
    out = np.empty((X.shape[0], n_trees), dtype=np.int32)
    cdef int32_t[:, ::1] leaves = out
    cdef Py_ssize_t r, t
    for r in prange(X.shape[0], nogil=True, schedule="static",
                    num_threads=n_threads):
        for t in range(n_trees):
            leaves[r, t] = find_leaf(X, r, tree_start[t], left_child,
                                     right_child, feature, threshold,
                                     default_left)
    return out


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_forest(n_features, left_child, right_child, feature, threshold,
                  default_left, value, tree_start, tree_group, n_groups):
    """Everything ``find_leaf`` relies on to stay in bounds and terminate."""
    n_nodes = left_child.shape[0]
    sizes = [right_child.shape[0], feature.shape[0], threshold.shape[0],
             default_left.shape[0]]
    if value is not None:
        sizes.append(value.shape[0])
    if any(size != n_nodes for size in sizes):
        raise ValueError("node arrays must all have the same length")
    starts = np.asarray(tree_start)
    n_trees = starts.shape[0] - 1
    if n_trees < 0 or tree_group.shape[0] != n_trees:
        raise ValueError("tree_start must have n_trees + 1 entries")
    if starts[0] != 0 or starts[-1] != n_nodes or np.any(np.diff(starts) < 1):
        raise ValueError("tree_start must rise from 0 to n_nodes, each tree "
                         "holding at least one node")
    groups = np.asarray(tree_group)
    if n_trees and (groups.min() < 0 or groups.max() >= n_groups):
        raise ValueError("tree_group outside the output columns")
    left = np.asarray(left_child).astype(np.int64)
    right = np.asarray(right_child).astype(np.int64)
    local = np.arange(n_nodes) - np.repeat(starts[:-1], np.diff(starts))
    size = np.repeat(np.diff(starts), np.diff(starts))
    leaf = left == NO_CHILD
    inner = ~leaf
    if np.any(leaf & (right != NO_CHILD)):
        raise ValueError("a node has a right child but no left child")
    for child in (left[inner], right[inner]):
        if np.any(child <= local[inner]) or np.any(child >= size[inner]):
            raise ValueError("a child index is out of its tree, or not "
                             "after its parent")
    feats = np.asarray(feature)[inner]
    if feats.size and (feats.min() < 0 or feats.max() >= n_features):
        raise ValueError(
            f"a split uses a feature outside [0, {n_features})")


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_categorical(left_child, cat_node, cat_size, cat_ptr, cat_bits):
    """Validated (cat_node int32, cat_size int32, cat_ptr int64, cat_bits
    uint32) arrays: every categorical split is an inner node, listed once,
    with at least one category and one bitset word inside ``cat_bits``."""
    if cat_node is None:
        return (np.zeros(0, np.int32), np.zeros(0, np.int32),
                np.zeros(1, np.int64), np.zeros(1, np.uint32))
    node = np.ascontiguousarray(cat_node, dtype=np.int32)
    size = np.ascontiguousarray(cat_size, dtype=np.int32)
    ptr = np.ascontiguousarray(cat_ptr, dtype=np.int64)
    bits = np.ascontiguousarray(cat_bits, dtype=np.uint32)
    m = node.shape[0]
    if node.ndim != 1 or size.shape != (m,) or ptr.shape != (m + 1,):
        raise ValueError("cat_node and cat_size need one entry per "
                         "categorical split, cat_ptr one more")
    left = np.asarray(left_child)
    if m and (node.min() < 0 or node.max() >= left.shape[0]
              or np.any(np.diff(node) <= 0)
              or np.any(left[node] == NO_CHILD)):
        raise ValueError("cat_node must list inner nodes, increasing")
    if m and size.min() < 1:
        raise ValueError("a categorical split needs at least one category")
    if ptr[0] != 0 or np.any(np.diff(ptr) < 1) or ptr[-1] != bits.shape[0]:
        raise ValueError("cat_ptr must rise from 0 to len(cat_bits), at "
                         "least one word per split")
    if bits.shape[0] == 0:
        bits = np.zeros(1, np.uint32)   # a valid pointer, never read
    return node, size, ptr, bits


# A tree packed breadth first, siblings adjacent (L = left, R = left + 1):
#
#     original:   0 -> (1, 4), 1 -> (2, 3), 4 -> (5, 6)
#     packed:     [ 0 | 1  4 | 2  3  5  6 ]
#                   root  depth 1  depth 2
#     step:       node <- left + 1 - go_left    (one record read per step)
#
# A leaf's left is itself - 1 and its threshold NaN (go_left is 0), so a
# row that reached a leaf stays there: every row takes depth(tree) steps,
# the same for all, and a block of rows walks in lockstep with no branch.
ctypedef struct PackedNode:
    # One node in one 16-byte record: a visit reads one record instead of
    # five arrays. The nodes of a tree are renumbered breadth first, so that
    # the right child is always the left one + 1: a step is
    # ``left + 1 - go_left``, with no second child to load. Built only by
    # PackedForest from the validated node arrays, so its layout exists in
    # C alone. A leaf has threshold NaN (every value goes right) and
    # ``left`` one below itself, so that stepping from a leaf stays on it.
    float threshold          # smallest float32 >= the split's threshold
    int32_t feature
    int32_t left             # tree-local, in the packed (breadth-first) order
    int32_t kind             # bit 0: default_left; the bits above: 0 for a
                             # numeric split, else 1 + its CategorySplit


ctypedef struct CategorySplit:
    # The left set of a categorical split: bitset words
    # bits[begin .. begin + n_words - 1] of the forest
    int64_t begin
    int32_t n_words
    int32_t n_categories     # of its feature: other values follow the default


# The complete layout, for the batch walk of numeric trees of depth at most
# COMPLETE_MAX_DEPTH: a tree of depth d becomes a complete binary tree in
# heap order from 1 (the children of position q at 2q, left, and 2q + 1),
# a leaf above depth d standing for a subtree whose splits all lead to a
# copy of it. A step is then ``q = 2q + go_right``: no child index to
# load, a node is one 8-byte record, and the step compiles to a compare
# and an add-with-carry (5 instructions with the node's address and two
# loads, against 6 for ``p = 2p + 2 - go_left`` in heap order from 0).
#
# The comparison is on integers: a float32 x maps to an unsigned key that
# orders as the floats do (``order_key``), so ``x < t`` is ``key(x) <
# key(t)``, that is ``key(x) <= key(t) - 1``, for every x and t that are
# not NaN (-0.0 made +0.0 first, as the floats are equal; no key of a
# number is 0, so key(t) - 1 does not wrap): a node stores ``bound =
# key(t) - 1`` and a row goes right when ``bound < key(x)``. Missing
# values take no test of their own: every row of a block is converted
# twice, NaN becoming 0 in the first half (no bound is below it: it goes
# left) and 0xFFFFFFFF in the second (above every bound: it goes right); a
# split whose missing values go right reads its feature in the second
# half (``column = feature + n_features``). A padding split (both
# children the same leaf) has bound 0xFFFFFFFF: every row goes left.
#
# A block's keys are stored column by column (ROWS_PER_BLOCK keys of one
# column, then the next): a node stores where its column starts
# (``column * ROWS_PER_BLOCK``), so that row j of a group of 8 reads
# ``group[offset + j]``, a constant displacement from one pointer per
# group: the 8 rows' chains need a register each for their position only.
cdef extern from *:
    """
    #include <string.h>
    typedef struct {
        uint32_t bound;   /* order_key of the float32 threshold, - 1 */
        int32_t offset;   /* ROWS_PER_BLOCK * column, where column is the
                             feature, + n_features if missing goes right */
    } skb_key_node;

    /* One step down a complete tree from position q, whose node is
       ``nd`` (read by the caller): position 2q (left) or 2q + 1. row: the
       row's key in column 0 (its key in column c at row[c *
       ROWS_PER_BLOCK]). On x86-64 GCC/Clang the node is one 8-byte value
       (bound in the low half, offset in the high half: 2 loads a step
       instead of 3) and the step the compare and add-with-carry it is
       (GCC otherwise emits setb, movzbl and lea). */
    static inline uint64_t skb_key_node_bits(const skb_key_node* nd) {
        uint64_t both;
        memcpy(&both, nd, sizeof both);
        return both;
    }

    static inline Py_ssize_t skb_key_step_bits(uint64_t both, Py_ssize_t q,
                                               const uint32_t* row) {
    #if defined(__GNUC__) && defined(__x86_64__)
        __asm__("cmpl %2, %k1; adcq %0, %0"
                : "+r"(q)
                : "r"(both), "m"(row[(int32_t) (both >> 32)]) : "cc");
        return q;
    #else
        skb_key_node nd;
        memcpy(&nd, &both, sizeof nd);
        return 2 * q + (nd.bound < row[nd.offset]);
    #endif
    }

    /* One step down a complete tree (tree[1] its root) from position q. */
    static inline Py_ssize_t skb_key_step(const skb_key_node* tree,
                                          Py_ssize_t q,
                                          const uint32_t* row) {
        return skb_key_step_bits(skb_key_node_bits(tree + q), q, row);
    }

    /* 8 rows (keys of row j at rows + j) down a complete tree of depth
       >= 2: pos[j] = their final positions (2^depth .. 2^(depth+1) - 1).
       The first two levels read no node in the rows' chains: the root is
       read once for the 8 rows, and at depth 1 the node is chosen between
       the two read before (a conditional move, not a load that waits for
       the step before): each row's chain of dependent loads is shorter by
       two node loads. */
    static inline void skb_walk8(const skb_key_node* tree, int depth,
                                 const uint32_t* rows, Py_ssize_t* pos) {
        uint64_t root = skb_key_node_bits(tree + 1);
        uint64_t n2 = skb_key_node_bits(tree + 2);
        uint64_t n3 = skb_key_node_bits(tree + 3);
        Py_ssize_t a, b, c, d, e, f, h, k;
        int s;
        a = skb_key_step_bits(root, 1, rows + 0);
        b = skb_key_step_bits(root, 1, rows + 1);
        c = skb_key_step_bits(root, 1, rows + 2);
        d = skb_key_step_bits(root, 1, rows + 3);
        e = skb_key_step_bits(root, 1, rows + 4);
        f = skb_key_step_bits(root, 1, rows + 5);
        h = skb_key_step_bits(root, 1, rows + 6);
        k = skb_key_step_bits(root, 1, rows + 7);
        a = skb_key_step_bits((a & 1) ? n3 : n2, a, rows + 0);
        b = skb_key_step_bits((b & 1) ? n3 : n2, b, rows + 1);
        c = skb_key_step_bits((c & 1) ? n3 : n2, c, rows + 2);
        d = skb_key_step_bits((d & 1) ? n3 : n2, d, rows + 3);
        e = skb_key_step_bits((e & 1) ? n3 : n2, e, rows + 4);
        f = skb_key_step_bits((f & 1) ? n3 : n2, f, rows + 5);
        h = skb_key_step_bits((h & 1) ? n3 : n2, h, rows + 6);
        k = skb_key_step_bits((k & 1) ? n3 : n2, k, rows + 7);
        for (s = 2; s < depth; s++) {
            a = skb_key_step(tree, a, rows + 0);
            b = skb_key_step(tree, b, rows + 1);
            c = skb_key_step(tree, c, rows + 2);
            d = skb_key_step(tree, d, rows + 3);
            e = skb_key_step(tree, e, rows + 4);
            f = skb_key_step(tree, f, rows + 5);
            h = skb_key_step(tree, h, rows + 6);
            k = skb_key_step(tree, k, rows + 7);
        }
        pos[0] = a; pos[1] = b; pos[2] = c; pos[3] = d;
        pos[4] = e; pos[5] = f; pos[6] = h; pos[7] = k;
    }
    """
    ctypedef struct KeyNode "skb_key_node":
        uint32_t bound
        int32_t offset
    Py_ssize_t key_step "skb_key_step"(const KeyNode* tree, Py_ssize_t q,
                                       const uint32_t* row) noexcept nogil
    void walk8 "skb_walk8"(const KeyNode* tree, int depth,
                           const uint32_t* rows, Py_ssize_t* pos) noexcept nogil


cdef extern from *:
    """
    #include <string.h>
    /* An unsigned key of a float32 that orders as the float does: the sign
       bit flipped for positive values, every bit for negative ones (-0.0
       is made +0.0 first; NaN is the caller's to handle). */
    static inline uint32_t skb_order_key(float x) {
        uint32_t b;
        x = x + 0.0f;
        memcpy(&b, &x, sizeof b);
        return b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u);
    }
    #define SKB_KEY_NAN_LEFT 0u
    #define SKB_KEY_NAN_RIGHT 0xFFFFFFFFu
    /* the keys of +inf and -inf */
    #define SKB_KEY_POS_INF 0xFF800000u
    #define SKB_KEY_NEG_INF 0x007FFFFFu
    """
    uint32_t order_key "skb_order_key"(float x) noexcept nogil
    uint32_t KEY_POS_INF "SKB_KEY_POS_INF"
    uint32_t KEY_NEG_INF "SKB_KEY_NEG_INF"
    uint32_t KEY_NAN_LEFT "SKB_KEY_NAN_LEFT"
    uint32_t KEY_NAN_RIGHT "SKB_KEY_NAN_RIGHT"


cdef enum:
    # deeper numeric trees (and trees with categorical splits) are walked
    # in the packed layout: a complete tree has 2^depth leaves
    COMPLETE_MAX_DEPTH = 10


# Rows per block: a block's rows walk each tree together, level by level, so
# the tree's nodes stay in cache, the rows (a few KB) stay in L1, and the
# rows' independent steps overlap in the CPU.
cdef enum:
    ROWS_PER_BLOCK = 64
    # Sparse rows are scattered into a dense buffer of about this many
    # values per thread (1 MB): fewer rows per block for wide matrices.
    SPARSE_BUFFER_VALUES = 262144


cdef enum:
    # the batch walk converts rows to keys for at most this many features
    # (its scratch: 2 keys per value of a block's rows, per thread)
    MAX_KEY_FEATURES = 8192


cdef class BlockScratch:
    """Per-thread scratch of the batch walk: a row of leaves, and, when the
    complete trees are walked on keys, the block's rows as keys."""

    cdef int32_t* leaf           # (n_threads, rows)
    cdef uint32_t* keys          # (n_threads, 2 * n_features, ROWS_PER_BLOCK)
                                 # or NULL (rows <= ROWS_PER_BLOCK)
    cdef uint8_t* infinity       # (n_threads,): 1 once a thread saw +-inf,
                                 # or NULL: not looked for
    cdef readonly Py_ssize_t rows
    cdef readonly bint use_keys
    cdef object leaf_array, key_array, infinity_array   # own the above

    def __cinit__(self, int n_threads, Py_ssize_t rows,
                  Py_ssize_t n_features, bint use_keys,
                  bint find_infinity=False):
        if use_keys and rows > ROWS_PER_BLOCK:
            raise ValueError("a block of keys holds at most ROWS_PER_BLOCK "
                             "rows")
        self.rows = rows
        self.use_keys = use_keys
        self.leaf_array = np.zeros(max(n_threads * rows, 1), dtype=np.int32)
        self.key_array = np.zeros(
            max(n_threads * ROWS_PER_BLOCK * 2 * n_features, 1)
            if use_keys else 1,
            dtype=np.uint32)
        cdef int32_t[::1] leaf = self.leaf_array
        cdef uint32_t[::1] keys = self.key_array
        self.leaf = &leaf[0]
        self.keys = &keys[0] if use_keys else NULL
        self.infinity_array = np.zeros(max(n_threads, 1), dtype=np.uint8)
        cdef uint8_t[::1] infinity = self.infinity_array
        self.infinity = &infinity[0] if find_infinity else NULL

    def saw_infinity(self):
        """Whether a thread met +-inf (when told to look for it)."""
        return bool(np.any(self.infinity_array))


cdef class PackedForest:
    """The trees of a model packed for prediction, validated once.

    Every row takes exactly ``depth(tree)`` steps down a tree, choosing the
    child by index (``child[not go_left]``) instead of by a branch: random
    rows then cost no branch mispredictions, which dominate a naive walk.

    Parameters
    ----------
    left_child, right_child, feature, threshold, default_left, value : ndarray
        Concatenated node arrays of all trees (see ``_tree.NODE_FIELDS``).
    tree_start : ndarray of shape (n_trees + 1,)
        Tree t owns nodes ``tree_start[t] .. tree_start[t+1]-1``.
    tree_group : ndarray of shape (n_trees,)
        Output column of each tree.
    n_features, n_groups : int
    cat_node, cat_size, cat_ptr, cat_bits : ndarray, optional
        The categorical splits of all trees (``_tree.py``), with ``cat_node``
        indices into the concatenated node arrays and ``cat_ptr`` into the
        concatenated ``cat_bits``.
    """

    cdef PackedNode* nodes
    cdef CategorySplit* cats
    cdef const CategorySplit* walk_cats  # cats, or NULL: no categorical split
    cdef const uint32_t* bits
    cdef readonly object cat_bits        # (n_words,) uint32, owns ``bits``
    cdef readonly object leaf_value      # (n_nodes,) float64, packed order
    cdef readonly object packed_of       # (n_nodes,) int64: packed position
                                         # of each node of the arrays given
    cdef readonly object original_local  # (n_nodes,) int32: tree-local
                                         # index given, of each packed node
    cdef readonly object tree_start
    cdef readonly object tree_group
    cdef readonly object tree_depth
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t n_groups
    cdef readonly Py_ssize_t n_trees
    # C views of tree_start, tree_depth, tree_group and leaf_value (which
    # own them), for the serial walk: no memoryview to take per call
    cdef const int64_t* c_start
    cdef const int32_t* c_depth
    cdef const int32_t* c_group
    cdef const double* c_value
    cdef const int32_t* c_original
    cdef readonly object steps_before   # (n_trees + 1,) int64: depths of
                                        # trees [0, t) plus t (node visits)
    # the complete layout (KeyNode) of the trees that have one, for the
    # batch walk; every tree keeps its packed layout too (the serial walk)
    cdef KeyNode* key_nodes
    cdef readonly object key_start      # (n_trees,) int64: tree t's first
                                        # KeyNode, -1: walked packed only
    cdef readonly object key_leaf_start  # (n_trees,) int64: its first leaf
    cdef readonly object key_leaf_value  # float64, per complete leaf
    cdef readonly object key_leaf_original  # int32: tree-local node given
    cdef readonly object key_steps_before   # (n_trees + 1,) int64: depths
                                            # of the complete trees in [0, t)
    cdef const int64_t* c_key_start
    cdef const int64_t* c_key_leaf_start
    cdef const double* c_key_leaf_value
    cdef const int32_t* c_key_leaf_original

    def __cinit__(self, left_child, right_child, feature, threshold,
                  default_left, value, tree_start, tree_group,
                  Py_ssize_t n_features, Py_ssize_t n_groups, cat_node=None,
                  cat_size=None, cat_ptr=None, cat_bits=None):
        arrays = [np.ascontiguousarray(a, dtype=d) for a, d in (
            (left_child, np.int32), (right_child, np.int32),
            (feature, np.int32), (threshold, np.float64),
            (default_left, np.uint8), (value, np.float64))]
        tree_start = np.ascontiguousarray(tree_start, dtype=np.int64)
        tree_group = np.ascontiguousarray(tree_group, dtype=np.int32)
        _check_forest(n_features, *arrays, tree_start, tree_group, n_groups)
        cat_arrays = _check_categorical(arrays[0], cat_node, cat_size,
                                        cat_ptr, cat_bits)
        # x < t  <=>  x < t32 for every float32 x, t32 the smallest float32
        # >= t: the walk compares in float32, exactly as the double would
        with np.errstate(over="ignore"):   # beyond float32: +-inf, as meant
            t32_arr = arrays[3].astype(np.float32)
        below = t32_arr.astype(np.float64) < arrays[3]
        t32_arr[below] = np.nextafter(t32_arr[below], np.float32(np.inf))
        n = arrays[0].shape[0]
        self.nodes = <PackedNode*> malloc(max(n, 1) * sizeof(PackedNode))
        if self.nodes == NULL:
            raise MemoryError()
        # packed position of every original node, and the reverse
        self.packed_of = np.zeros(max(n, 1), dtype=np.int64)
        self.original_local = np.zeros(max(n, 1), dtype=np.int32)
        depth_arr = np.zeros(tree_group.shape[0], dtype=np.int32)
        self._pack_trees(arrays[0], arrays[1], arrays[2], t32_arr, arrays[4],
                         tree_start, depth_arr)
        self.leaf_value = np.empty(max(n, 1), dtype=np.float64)
        self.leaf_value[self.packed_of[:n]] = arrays[5]
        # after the default directions: it adds the categorical kind bits
        self._pack_categories(*cat_arrays)
        self.tree_start = tree_start
        self.tree_group = tree_group
        self.tree_depth = depth_arr
        self.n_features = n_features
        self.n_groups = n_groups
        self.n_trees = tree_group.shape[0]
        self._set_c_views()
        self._build_complete()

    def _set_c_views(self):
        cdef const int64_t[::1] start = self.tree_start
        cdef const int32_t[::1] depth = self.tree_depth
        cdef const int32_t[::1] group = self.tree_group
        cdef const double[::1] value = self.leaf_value
        cdef const int32_t[::1] original = self.original_local
        self.c_start = &start[0]
        self.c_depth = &depth[0] if depth.shape[0] else NULL
        self.c_group = &group[0] if group.shape[0] else NULL
        self.c_value = &value[0]
        self.c_original = &original[0]
        steps = np.zeros(self.n_trees + 1, dtype=np.int64)
        np.cumsum(np.asarray(depth, dtype=np.int64) + 1, out=steps[1:])
        self.steps_before = steps

    def _build_complete(self):
        """The complete layout (KeyNode) of every numeric tree of depth at
        most COMPLETE_MAX_DEPTH, from its packed nodes."""
        cdef const int32_t[::1] depth = self.tree_depth
        cdef Py_ssize_t t, n_keys = 0, n_leaves = 0
        key_start = np.full(self.n_trees, -1, dtype=np.int64)
        leaf_start = np.zeros(self.n_trees, dtype=np.int64)
        key_steps = np.zeros(self.n_trees + 1, dtype=np.int64)
        for t in range(self.n_trees):
            key_steps[t + 1] = key_steps[t]
            # (beyond MAX_KEY_FEATURES no walk reads keys: no layout)
            if (depth[t] <= COMPLETE_MAX_DEPTH
                    and self.n_features <= MAX_KEY_FEATURES
                    and self._plain_numeric(t)):
                key_start[t] = n_keys
                leaf_start[t] = n_leaves
                n_keys += (1 << depth[t]) - 1
                n_leaves += 1 << depth[t]
                key_steps[t + 1] += depth[t]
        # tree t at key_nodes[key_start[t] + 1 ...]: position 1 is its root
        # (record 0 is never read)
        self.key_nodes = <KeyNode*> malloc((n_keys + 1) * sizeof(KeyNode))
        if self.key_nodes == NULL:
            raise MemoryError()
        self.key_leaf_value = np.zeros(max(n_leaves, 1), dtype=np.float64)
        self.key_leaf_original = np.zeros(max(n_leaves, 1), dtype=np.int32)
        self.key_start, self.key_leaf_start = key_start, leaf_start
        self.key_steps_before = key_steps
        for t in range(self.n_trees):
            if key_start[t] >= 0:
                self._fill_complete(t, key_start[t], leaf_start[t])
        cdef const int64_t[::1] ks = self.key_start
        cdef const int64_t[::1] ls = self.key_leaf_start
        cdef const double[::1] lv = self.key_leaf_value
        cdef const int32_t[::1] lo = self.key_leaf_original
        self.c_key_start = &ks[0] if ks.shape[0] else NULL
        self.c_key_leaf_start = &ls[0] if ls.shape[0] else NULL
        self.c_key_leaf_value = &lv[0]
        self.c_key_leaf_original = &lo[0]

    cdef bint _plain_numeric(self, Py_ssize_t t):
        """Whether every split of tree t is numeric with a threshold that
        is a number (a NaN threshold has no key)."""
        cdef const int64_t[::1] start = self.tree_start
        cdef Py_ssize_t q
        cdef const PackedNode* nd
        for q in range(start[t + 1] - start[t]):
            nd = &self.nodes[start[t] + q]
            if nd.left > q and (nd.kind >= 2 or isnan(nd.threshold)):
                return False
        return True

    cdef void _fill_complete(self, Py_ssize_t t, int64_t key0, int64_t leaf0):
        """Write tree t's complete layout at key_nodes[key0 + 1:] and its leaves
        at key_leaf_*[leaf0:], position by position in heap order."""
        cdef const int64_t[::1] start = self.tree_start
        cdef const int32_t[::1] depth = self.tree_depth
        cdef const double[::1] value = self.leaf_value
        cdef const int32_t[::1] original = self.original_local
        cdef double[::1] leaf_value = self.key_leaf_value
        cdef int32_t[::1] leaf_original = self.key_leaf_original
        cdef Py_ssize_t n_inner = (1 << depth[t]) - 1, p, q
        # the packed node (tree-local) standing at each position: a split,
        # or a leaf repeated down the subtree it stands for
        cdef int32_t[::1] source = np.zeros(2 * n_inner + 1, dtype=np.int32)
        cdef const PackedNode* nd
        # out[p]: position p + 1 of the walk (heap order from 1)
        cdef KeyNode* out = self.key_nodes + key0 + 1
        for p in range(n_inner):
            q = source[p]
            nd = &self.nodes[start[t] + q]
            if nd.left > q:          # a split (a leaf's left is q - 1)
                out[p].bound = order_key(nd.threshold) - 1
                out[p].offset = ROWS_PER_BLOCK * (nd.feature + (
                    0 if nd.kind & 1 else <int32_t> self.n_features))
                source[2 * p + 1] = nd.left
                source[2 * p + 2] = nd.left + 1
            else:                    # every row left, to the leaf's copy
                out[p].bound = 0xFFFFFFFF
                out[p].offset = 0
                source[2 * p + 1] = source[2 * p + 2] = <int32_t> q
        # positions at depth(t) hold leaves: a node there has no children
        for p in range(n_inner, 2 * n_inner + 1):
            q = source[p]
            leaf_value[leaf0 + p - n_inner] = value[start[t] + q]
            leaf_original[leaf0 + p - n_inner] = original[start[t] + q]

    def _pack_trees(self, const int32_t[::1] left, const int32_t[::1] right,
                    const int32_t[::1] feat, const float[::1] thr,
                    const uint8_t[::1] dl, const int64_t[::1] start,
                    int32_t[::1] depth):
        """Fill ``nodes`` tree by tree in breadth-first order (siblings
        adjacent), with ``packed_of``, ``original_local`` and the depth of
        every tree (from validated arrays: children inside their tree,
        after their parent)."""
        cdef uint8_t[::1] reached = np.zeros(max(left.shape[0], 1),
                                             dtype=np.uint8)
        cdef int32_t[::1] node_depth = np.zeros(max(left.shape[0], 1),
                                                dtype=np.int32)
        cdef Py_ssize_t t, q, size, n_trees = start.shape[0] - 1
        cdef int32_t filled
        cdef int64_t[::1] packed = self.packed_of
        cdef int32_t[::1] original = self.original_local
        # each tree keeps its range of the node arrays: packing permutes the
        # nodes inside it, so tree_start stays valid for the packed arrays
        for t in range(n_trees):
            size = start[t + 1] - start[t]
            filled = self._pack_reached(t, left, right, feat, thr, dl, start,
                                        reached, node_depth, depth)
            # nodes no root reaches (never walked) keep a place, as leaves
            for q in range(size):
                if not reached[start[t] + q]:
                    self._pack_leaf(start[t], filled, q, packed, original)
                    reached[start[t] + q] = 1
                    filled += 1

    cdef int32_t _pack_reached(self, Py_ssize_t t, const int32_t[::1] left,
                               const int32_t[::1] right,
                               const int32_t[::1] feat, const float[::1] thr,
                               const uint8_t[::1] dl,
                               const int64_t[::1] start,
                               uint8_t[::1] reached,
                               int32_t[::1] node_depth,
                               int32_t[::1] depth) except -1:
        """Pack the nodes tree ``t``'s root reaches, breadth first (position
        q holds local node ``original_local[start + q]``); returns how many."""
        cdef int32_t[::1] original = self.original_local
        cdef int64_t[::1] packed = self.packed_of
        cdef int64_t s0 = start[t]
        cdef int32_t filled = 1, q = 0
        cdef int64_t i
        cdef PackedNode* nd
        original[s0] = 0
        reached[s0] = 1
        # a queue in the packed order itself: position q is taken in order,
        # its children appended at `filled`, two by two (breadth first)
        while q < filled:
            i = s0 + original[s0 + q]
            if left[i] == NO_CHILD:
                self._pack_leaf(s0, q, original[s0 + q], packed, original)
                q += 1
                continue
            if (left[i] == right[i] or reached[s0 + left[i]]
                    or reached[s0 + right[i]]):
                raise ValueError("a node is the child of two parents")
            reached[s0 + left[i]] = reached[s0 + right[i]] = 1
            nd = &self.nodes[s0 + q]
            nd.threshold = thr[i]
            nd.feature = feat[i]
            nd.left = filled
            nd.kind = dl[i] != 0
            packed[i] = s0 + q
            original[s0 + filled] = left[i]
            original[s0 + filled + 1] = right[i]
            filled += 2
            node_depth[s0 + left[i]] = node_depth[s0 + right[i]] = (
                node_depth[i] + 1)
            depth[t] = max(depth[t], node_depth[i] + 1)
            q += 1
        return filled

    cdef void _pack_leaf(self, int64_t s0, int32_t q, int32_t local,
                         int64_t[::1] packed, int32_t[::1] original):
        """Packed position ``q`` of the tree starting at ``s0`` is the leaf
        ``local``: threshold NaN sends every value right, to ``left + 1``,
        itself."""
        cdef PackedNode* nd = &self.nodes[s0 + q]
        nd.threshold = NAN
        nd.feature = 0
        nd.left = q - 1
        nd.kind = 0
        original[s0 + q] = local
        packed[s0 + local] = s0 + q

    def _pack_categories(self, cat_node, cat_size, cat_ptr, cat_bits):
        """Mark the categorical nodes and build their CategorySplit table
        (from validated arrays)."""
        cdef const int32_t[::1] node = cat_node
        cdef const int32_t[::1] size = cat_size
        cdef const int64_t[::1] ptr = cat_ptr
        cdef const uint32_t[::1] words = cat_bits
        cdef const int64_t[::1] packed = self.packed_of
        cdef Py_ssize_t i, m = node.shape[0]
        self.cats = <CategorySplit*> malloc(max(m, 1) * sizeof(CategorySplit))
        if self.cats == NULL:
            raise MemoryError()
        # kind bit 0 stays default_left; bits 1.. hold 1 + the index of the
        # node's CategorySplit (0: numeric), so one int says both
        for i in range(m):
            self.cats[i].begin = ptr[i]
            self.cats[i].n_words = <int32_t> (ptr[i + 1] - ptr[i])
            self.cats[i].n_categories = size[i]
            self.nodes[packed[node[i]]].kind |= <int32_t> ((i + 1) << 1)
        self.cat_bits = cat_bits
        self.bits = &words[0]
        self.walk_cats = self.cats if m else NULL

    def __dealloc__(self):
        free(self.nodes)
        free(self.cats)
        free(self.key_nodes)

    cdef int _team(self, int n_threads, Py_ssize_t n_rows, Py_ssize_t n_blocks,
                   Py_ssize_t first, Py_ssize_t last):
        """Threads worth starting: at most one per block of rows, and
        enough node steps (rows x depths of the trees) for each."""
        cdef const int64_t[::1] steps = self.steps_before
        cdef int64_t steps_per_row = steps[last] - steps[first]
        return max(1, min(n_threads, n_blocks,
                          threads_for_work(n_threads, n_rows * steps_per_row)))

    cdef bint _use_keys(self, Py_ssize_t first, Py_ssize_t last):
        """Whether the batch walk converts rows to keys: when the complete
        trees in [first, last) take at least 2 steps per row and feature
        (the conversion writes 2 keys per value)."""
        cdef const int64_t[::1] steps = self.key_steps_before
        return (self.n_features <= MAX_KEY_FEATURES
                and steps[last] - steps[first] >= 2 * self.n_features)

    def uses_key_walk(self, Py_ssize_t first, Py_ssize_t last):
        """Whether the batch walk of trees [first, last) walks the trees
        that have a complete layout on order keys (``KeyNode``); the
        others, and all trees otherwise, walk their packed layout. Both
        reach the same leaves."""
        if not 0 <= first <= last <= self.n_trees:
            raise ValueError("tree range outside the forest")
        return bool(self._use_keys(first, last))

    def complete_trees(self):
        """Boolean mask of the trees with a complete layout (numeric, of
        depth at most COMPLETE_MAX_DEPTH, no NaN threshold, in a forest of
        at most MAX_KEY_FEATURES features)."""
        return np.asarray(self.key_start) >= 0

    def _check_call(self, X, Py_ssize_t first, Py_ssize_t last, n_threads):
        n_threads = check_n_threads(n_threads)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, the forest "
                             f"expects {self.n_features}")
        if not 0 <= first <= last <= self.n_trees:
            raise ValueError("tree range outside the forest")

    def predict_raw(self, const float[:, ::1] X not None,
                    double[:, ::1] out not None,      # IN/OUT (n_rows, n_groups)
                    Py_ssize_t first, Py_ssize_t last, int n_threads,
                    bint refuse_infinity=False):
        """``out += sum of trees [first, last) at X``, trees summed in order
        for every row (independent of the number of threads).

        With ``refuse_infinity``, returns False when X holds +-inf (``out``
        then holds partial sums, to be discarded), found while the rows are
        read for the walk (no pass of its own); else True.
        """
        self._check_call(X, first, last, n_threads)
        if out.shape[0] != X.shape[0] or out.shape[1] != self.n_groups:
            raise ValueError("out must be (n_rows, n_groups)")
        if refuse_infinity and last <= first:   # no walk reads the rows
            return not has_infinity(X)
        return not self._walk_dense(X, first, last, n_threads, out, None,
                                    refuse_infinity)

    def predict_raw_sparse(self, SparseRows X not None,
                           double[:, ::1] out not None,  # IN/OUT (n_rows, n_groups)
                           Py_ssize_t first, Py_ssize_t last, int n_threads):
        """``predict_raw`` for sparse rows: each block of rows is scattered
        into a per-thread dense buffer (absent entries hold
        ``X.absent_value``), walked like dense rows, and cleared again, so
        the cost is linear in the stored entries plus the tree walks."""
        self._check_call(X, first, last, n_threads)
        if out.shape[0] != X.n_rows or out.shape[1] != self.n_groups:
            raise ValueError("out must be (n_rows, n_groups)")
        self._walk_sparse(X, first, last, n_threads, out, None)

    def predict_leaves_sparse(self, SparseRows X not None,
                              Py_ssize_t first, Py_ssize_t last,
                              int n_threads):
        """``predict_leaves`` for sparse rows."""
        self._check_call(X, first, last, n_threads)
        out_arr = np.empty((X.n_rows, last - first), dtype=np.int32)
        self._walk_sparse(X, first, last, n_threads, None, out_arr)
        return out_arr

    cdef _walk_sparse(self, SparseRows X, Py_ssize_t first, Py_ssize_t last,
                      int n_threads, raw_out, leaves_out):
        """Adds leaf values to ``raw_out`` or writes leaf indices to
        ``leaves_out`` (the other is None)."""
        if last <= first:
            return
        cdef bint want_raw = raw_out is not None
        cdef double[:, ::1] raw = raw_out if want_raw else np.empty((1, 1))
        cdef int32_t[:, ::1] leaves_idx = (
            leaves_out if not want_raw else np.empty((1, 1), dtype=np.int32))
        cdef Py_ssize_t n_features = max(X.n_features, 1)
        cdef Py_ssize_t rows_per_block = max(
            1, min(ROWS_PER_BLOCK, SPARSE_BUFFER_VALUES // n_features))
        cdef float[:, ::1] buffers = np.full(
            (n_threads, rows_per_block * n_features), X.absent_value,
            dtype=np.float32)
        cdef BlockScratch scratch = BlockScratch(
            n_threads, rows_per_block, self.n_features,
            self._use_keys(first, last))
        cdef const int64_t[::1] indptr = X.indptr
        cdef const int32_t[::1] indices = X.indices
        cdef const float[::1] data = X.data
        cdef float absent = X.absent_value
        cdef bint absent_is_nan = absent != absent
        cdef Py_ssize_t n_rows = X.n_rows, block, r, r0, n
        cdef Py_ssize_t n_blocks = (n_rows + rows_per_block - 1) // rows_per_block
        cdef int64_t k
        cdef float* buf
        cdef int team = self._team(n_threads, n_rows, n_blocks, first, last)
        # per block: scatter its stored entries into the thread's dense
        # buffer, walk every tree as for dense rows, then put the absent
        # value back at the same places (cost: the stored entries, not
        # rows x features)
        for block in prange(n_blocks, nogil=True, schedule="static",
                            num_threads=team):
            buf = &buffers[threadid(), 0]
            r0 = block * rows_per_block
            n = min(rows_per_block, n_rows - r0)
            for r in range(n):
                for k in range(indptr[r0 + r], indptr[r0 + r + 1]):
                    buf[r * n_features + indices[k]] = data[k]
            # NaN among the block's values: in its stored entries, or in
            # the absent ones (NaN absent, and a row not wholly stored)
            self._block_trees(buf, n, first, last, scratch, threadid(),
                              &raw[r0, 0] if want_raw else NULL,
                              NULL if want_raw else &leaves_idx[r0, 0],
                              NULL, 0, 0, 0,
                              block_has_nan(&indptr[0], &data[0], r0, n,
                                            n_features, absent_is_nan))
            for r in range(n):
                for k in range(indptr[r0 + r], indptr[r0 + r + 1]):
                    buf[r * n_features + indices[k]] = absent

    def serial_work(self, Py_ssize_t n_rows, Py_ssize_t first,
                    Py_ssize_t last):
        """Whether ``n_rows`` through trees [first, last) are too little work
        for a second thread (``predict_raw_small`` then loses nothing)."""
        cdef const int64_t[::1] steps = self.steps_before
        return threads_for_work(2, n_rows * (steps[last] - steps[first])) == 1

    def predict_raw_small(self, X, const double[::1] base_margin not None,
                          Py_ssize_t first, Py_ssize_t last):
        """Margins of a few rows, in the calling thread: base margin plus
        trees [first, last), the same sums as ``predict_raw``.

        ``X`` is a C-contiguous 2-D float32 or float64 ndarray with
        ``n_features`` columns (other input: TypeError), read in place
        (float64 values rounded to float32 as read, NaN missing). Returns
        the (n_rows, n_groups) float64 margins, the only allocation, or
        None when a value of X is infinite as float32 (the caller's full
        conversion then refuses it with its message).
        """
        if not 0 <= first <= last <= self.n_trees:
            raise ValueError("tree range outside the forest")
        if base_margin.shape[0] != self.n_groups:
            raise ValueError("base_margin must have n_groups entries")
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must be 2-D with {self.n_features} columns")
        cdef const float[:, ::1] x32
        cdef const double[:, ::1] x64
        if X.dtype == np.float32:
            x32 = X
            return small_margins(self, x32, base_margin, first, last)
        if X.dtype == np.float64:
            x64 = X
            return small_margins(self, x64, base_margin, first, last)
        raise TypeError("X must be float32 or float64")

    def predict_leaves(self, const float[:, ::1] X not None,
                       Py_ssize_t first, Py_ssize_t last, int n_threads):
        """Tree-local leaf index of every row in trees [first, last)."""
        self._check_call(X, first, last, n_threads)
        out_arr = np.empty((X.shape[0], last - first), dtype=np.int32)
        self._walk_dense(X, first, last, n_threads, None, out_arr)
        return out_arr

    cdef bint _walk_dense(self, const float[:, ::1] X, Py_ssize_t first,
                          Py_ssize_t last, int n_threads, raw_out, leaves_out,
                          bint find_infinity=False) except -1:
        """Adds leaf values to ``raw_out`` or writes leaf indices to
        ``leaves_out`` (the other is None), ROWS_PER_BLOCK rows at a time.
        Returns whether X held +-inf, when told to ``find_infinity``."""
        if last <= first:
            return False
        cdef bint want_raw = raw_out is not None
        cdef double[:, ::1] raw = raw_out if want_raw else np.empty((1, 1))
        cdef int32_t[:, ::1] leaves_idx = (
            leaves_out if not want_raw else np.empty((1, 1), dtype=np.int32))
        cdef Py_ssize_t n_rows = X.shape[0], block, r0, n
        cdef Py_ssize_t n_blocks = (n_rows + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
        cdef BlockScratch scratch = BlockScratch(
            n_threads, ROWS_PER_BLOCK, self.n_features,
            self._use_keys(first, last), find_infinity)
        cdef int team = self._team(n_threads, n_rows, n_blocks, first, last)
        # the next block's rows are fetched into cache while this block
        # walks the trees, a share of them before each tree
        cdef Py_ssize_t lines_per_tree = (
            ROWS_PER_BLOCK * X.shape[1] // 16 + max(last - first, 1)
        ) // max(last - first, 1) + 1
        # blocks of rows in parallel, each block through every tree in
        # order: a row's output is the sum of its trees in tree order, the
        # same whatever block went to which thread
        for block in prange(n_blocks, nogil=True, schedule="static",
                            num_threads=team):
            r0 = block * ROWS_PER_BLOCK
            n = min(ROWS_PER_BLOCK, n_rows - r0)
            self._block_trees(&X[r0, 0], n, first, last, scratch, threadid(),
                              &raw[r0, 0] if want_raw else NULL,
                              NULL if want_raw else &leaves_idx[r0, 0],
                              &X[0, 0], n_rows, r0 + n, lines_per_tree)
        return scratch.saw_infinity()

    cdef bint _read_block(self, const float* x0, Py_ssize_t n,
                          uint32_t* keys, BlockScratch scratch, int thread,
                          int missing) noexcept nogil:
        """One pass over a block's n rows before its trees: their keys
        into ``keys`` (when not NULL), a +-inf flagged in
        ``scratch.infinity``; returns whether the block has no missing
        value (``missing`` as ``_block_trees`` takes it)."""
        cdef int saw = 0
        cdef bint no_missing
        if keys != NULL:
            saw = rows_to_keys(x0, n, self.n_features, keys)
            no_missing = (saw & SAW_NAN) == 0 if missing < 0 else missing == 0
        else:
            no_missing = (no_nan(x0, n * self.n_features)
                          if missing < 0 else missing == 0)
            if scratch.infinity != NULL and not all_finite_or_nan(
                    x0, n * self.n_features):
                saw = SAW_INFINITY
        if saw & SAW_INFINITY and scratch.infinity != NULL:
            scratch.infinity[thread] = 1
        return no_missing

    cdef void _block_trees(self, const float* x0, Py_ssize_t n,
                           Py_ssize_t first, Py_ssize_t last,
                           BlockScratch scratch, int thread,
                           double* raw, int32_t* leaves,
                           const float* X, Py_ssize_t n_rows,
                           Py_ssize_t next_row,
                           Py_ssize_t lines_per_tree,
                           int missing=-1) noexcept nogil:
        """The n rows at x0 (row-major, n_features columns) through trees
        [first, last) in order: each tree's leaf value added to ``raw``
        (n rows of n_groups), or its tree-local leaf written to ``leaves``
        (n rows of last - first), whichever is not NULL. With X not NULL,
        the rows of X from ``next_row`` are prefetched meanwhile.
        ``missing``: whether the rows hold a NaN (1) or not (0), or -1 to
        find out by reading them (the sparse walk knows it from the stored
        entries, without reading a wide block's every value)."""
        cdef int32_t* leaf = scratch.leaf + thread * scratch.rows
        cdef uint32_t* keys = NULL
        cdef Py_ssize_t r, t, next_line = 0
        cdef int64_t kstart
        cdef const double* values
        cdef const int32_t* original
        cdef bint no_missing
        if scratch.use_keys:
            keys = (scratch.keys
                    + thread * <Py_ssize_t> ROWS_PER_BLOCK * 2 * self.n_features)
        no_missing = self._read_block(x0, n, keys, scratch, thread, missing)
        for t in range(first, last):
            if X != NULL:
                next_line = prefetch_lines(X, self.n_features, n_rows,
                                           next_row, next_line,
                                           lines_per_tree)
            kstart = self.c_key_start[t]
            if keys != NULL and kstart >= 0 and raw != NULL:
                # the leaf values added in the walk (same order, same sums)
                walk_keys_add(self.key_nodes + kstart, self.c_depth[t], keys,
                              n, self.c_key_leaf_value
                              + self.c_key_leaf_start[t],
                              raw + self.c_group[t], self.n_groups)
                continue
            if keys != NULL and kstart >= 0:
                walk_keys(self.key_nodes + kstart, self.c_depth[t], keys, n,
                          leaf)
                values = self.c_key_leaf_value + self.c_key_leaf_start[t]
                original = (self.c_key_leaf_original
                            + self.c_key_leaf_start[t])
            else:
                walk_tree(&self.nodes[self.c_start[t]], self.walk_cats,
                          self.bits, self.c_depth[t], x0, self.n_features, n,
                          leaf, no_missing)
                values = self.c_value + self.c_start[t]
                original = self.c_original + self.c_start[t]
            if raw != NULL:
                for r in range(n):
                    raw[r * self.n_groups + self.c_group[t]] += values[leaf[r]]
            else:
                for r in range(n):
                    leaves[r * (last - first) + t - first] = original[leaf[r]]


cdef inline int block_has_nan(const int64_t* indptr, const float* data,
                              Py_ssize_t r0, Py_ssize_t n,
                              Py_ssize_t n_features,
                              bint absent_is_nan) noexcept nogil:
    """Whether sparse rows r0 .. r0 + n - 1, absent entries read as NaN
    (``absent_is_nan``) or as 0, hold a NaN: 1 or 0, from their stored
    entries alone (a cost linear in them, not in rows x features)."""
    cdef int64_t k
    cdef Py_ssize_t r
    if absent_is_nan:
        for r in range(r0, r0 + n):
            if indptr[r + 1] - indptr[r] < n_features:
                return 1
    for k in range(indptr[r0], indptr[r0 + n]):
        if data[k] != data[k]:
            return 1
    return 0


cdef inline int category_goes_left(const CategorySplit* split,
                                   const uint32_t* bits, float x,
                                   int default_left) noexcept nogil:
    """A category code in [0, n_categories) goes left when its bit is set
    (codes beyond the set's words go right); NaN and every other value
    (a category unseen in training) follow the default direction."""
    cdef int32_t c
    if not (x >= 0 and x < split.n_categories):   # NaN fails too
        return default_left
    c = <int32_t> x
    if c != x:
        return default_left
    if c >= 32 * <int64_t> split.n_words:
        return 0
    return (bits[split.begin + (c >> 5)] >> (c & 31)) & 1


# The walks are compiled three times (a fused type of empty tags): forests
# without categorical splits step without testing a node's kind, and rows
# without a missing value (checked per block) without testing for NaN.
ctypedef struct NumericPresent:
    char unused
ctypedef struct NumericSplits:
    char unused
ctypedef struct AnySplits:
    char unused
ctypedef fused SplitKinds:
    NumericPresent
    NumericSplits
    AnySplits

# The rows a walk reads: float32 (the kernels' X) or float64 (a caller's
# array read in place by the serial walk, each value rounded to float32
# as it is read: the same float32 the conversion of X would give).
ctypedef fused RowValue:
    float
    double


cdef inline int32_t step(const SplitKinds* kinds, const PackedNode* tree,
                         const CategorySplit* cats, const uint32_t* bits,
                         int32_t node, const RowValue* x_row) noexcept nogil:
    """One step down from ``node`` for the row ``x_row``, branch-free on
    numeric splits."""
    cdef const PackedNode* nd = &tree[node]
    cdef float x = <float> x_row[nd.feature]
    cdef int go_left
    if SplitKinds is NumericPresent:
        # no NaN among the rows: no default direction to follow
        go_left = x < nd.threshold
    elif SplitKinds is NumericSplits or nd.kind < 2:
        # NaN compares false: it goes left only by its default
        go_left = (x < nd.threshold) | ((x != x) & (nd.kind & 1))
    else:
        go_left = category_goes_left(&cats[(nd.kind >> 1) - 1], bits, x,
                                     nd.kind & 1)
    return nd.left + 1 - go_left


cdef inline void walk_tree(const PackedNode* tree, const CategorySplit* cats,
                           const uint32_t* bits, int32_t depth,
                           const RowValue* x0, Py_ssize_t n_features,
                           Py_ssize_t n, int32_t* leaf,
                           bint no_missing) noexcept nogil:
    """``walk_block``, specialised: without categorical splits in the
    forest (``cats`` NULL) the numeric-only walk, and without a missing
    value among the n rows (``no_missing``) the walk that tests none."""
    if cats == NULL and no_missing:
        walk_block(<const NumericPresent*> NULL, tree, cats, bits, depth, x0,
                   n_features, n, leaf)
    elif cats == NULL:
        walk_block(<const NumericSplits*> NULL, tree, cats, bits, depth, x0,
                   n_features, n, leaf)
    else:
        walk_block(<const AnySplits*> NULL, tree, cats, bits, depth, x0,
                   n_features, n, leaf)


cdef inline void walk_block(const SplitKinds* kinds, const PackedNode* tree,
                           const CategorySplit* cats, const uint32_t* bits,
                           int32_t depth,
                           const RowValue* x0, Py_ssize_t n_features,
                           Py_ssize_t n, int32_t* leaf) noexcept nogil:
    """leaf[r] = tree-local leaf reached by the row ``x0 + r * n_features``,
    for r < n: every row steps ``depth`` times (a leaf steps to itself),
    branch-free; groups of 8 rows advance together, their nodes in
    registers, so that their independent steps overlap."""
    cdef Py_ssize_t g, r
    cdef int32_t s, a, b, c, d, e, f, h, k
    # eight independent chains of loads: while one row waits for its next
    # node record, the others' steps proceed (a single walk is one long
    # chain of dependent loads). The rows past the last group of 8 walk
    # one by one below.
    for g in range(0, n - 7, 8):
        a = b = c = d = e = f = h = k = 0
        for s in range(depth):
            a = step(kinds, tree, cats, bits, a, x0 + (g + 0) * n_features)
            b = step(kinds, tree, cats, bits, b, x0 + (g + 1) * n_features)
            c = step(kinds, tree, cats, bits, c, x0 + (g + 2) * n_features)
            d = step(kinds, tree, cats, bits, d, x0 + (g + 3) * n_features)
            e = step(kinds, tree, cats, bits, e, x0 + (g + 4) * n_features)
            f = step(kinds, tree, cats, bits, f, x0 + (g + 5) * n_features)
            h = step(kinds, tree, cats, bits, h, x0 + (g + 6) * n_features)
            k = step(kinds, tree, cats, bits, k, x0 + (g + 7) * n_features)
        leaf[g + 0] = a
        leaf[g + 1] = b
        leaf[g + 2] = c
        leaf[g + 3] = d
        leaf[g + 4] = e
        leaf[g + 5] = f
        leaf[g + 6] = h
        leaf[g + 7] = k
    for r in range(n - n % 8, n):
        a = 0
        for s in range(depth):
            a = step(kinds, tree, cats, bits, a, x0 + r * n_features)
        leaf[r] = a


cdef enum:
    # what rows_to_keys saw among a block's values (bits of its result)
    SAW_NAN = 1
    SAW_INFINITY = 2


cdef inline int rows_to_keys(const float* x0, Py_ssize_t n,
                             Py_ssize_t n_features,
                             uint32_t* keys) noexcept nogil:
    """The n rows at x0 (n <= ROWS_PER_BLOCK) as order keys, column by
    column (key of row r, column c at ``keys[c * ROWS_PER_BLOCK + r]``),
    each feature twice: NaN is KEY_NAN_LEFT in column f, KEY_NAN_RIGHT in
    column n_features + f (see KeyNode). Returns SAW_NAN | SAW_INFINITY,
    the bits of what the values held, so that the walk needs no scan of
    its own for either (branch-free: a value costs the same whatever it
    is)."""
    cdef Py_ssize_t r, f
    cdef float x
    cdef uint32_t key, nan_mask, saw_nan = 0, saw_inf = 0
    cdef uint32_t* nan_left
    cdef uint32_t* nan_right
    for f in range(n_features):
        nan_left = keys + f * ROWS_PER_BLOCK
        nan_right = keys + (n_features + f) * ROWS_PER_BLOCK
        for r in range(n):
            x = x0[r * n_features + f]
            key = order_key(x)
            # all ones for NaN, else 0: NaN's key becomes 0 on the left
            # and all ones on the right
            nan_mask = 0u - <uint32_t> (x != x)
            nan_left[r] = key & ~nan_mask
            nan_right[r] = key | nan_mask
            saw_nan |= nan_mask
            saw_inf |= (key == KEY_POS_INF) | (key == KEY_NEG_INF)
    return (SAW_NAN if saw_nan else 0) | (SAW_INFINITY if saw_inf else 0)


cdef inline void walk_keys(const KeyNode* tree, int32_t depth,
                           const uint32_t* k0, Py_ssize_t n,
                           int32_t* leaf) noexcept nogil:
    """leaf[r] = the complete leaf (0 .. 2^depth - 1) that row r of the
    block of keys at k0 (``rows_to_keys``) reaches, for r < n, down the
    complete tree whose root is ``tree[1]``: groups of 8 rows step
    together (independent chains of loads, as in walk_block), row j of a
    group read at a constant displacement from the group's pointer."""
    cdef Py_ssize_t g, r, a, b, c, d, e, f, h, k
    cdef Py_ssize_t first_leaf = <Py_ssize_t> 1 << depth
    cdef int32_t s
    cdef Py_ssize_t pos[8]
    for g in range(0, n - 7 if depth >= 2 else 0, 8):
        walk8(tree, depth, k0 + g, pos)
        for r in range(8):
            leaf[g + r] = <int32_t> (pos[r] - first_leaf)
    # the rows past the last group of 8 (all rows below depth 2) one by one
    for r in range(n - n % 8 if depth >= 2 else 0, n):
        a = 1
        for s in range(depth):
            a = key_step(tree, a, k0 + r)
        leaf[r] = <int32_t> (a - first_leaf)


cdef inline void walk_keys_add(const KeyNode* tree, int32_t depth,
                               const uint32_t* k0, Py_ssize_t n,
                               const double* leaf_value, double* raw,
                               Py_ssize_t stride) noexcept nogil:
    """``walk_keys`` that adds the leaf values at once: ``raw[r * stride]
    += leaf_value[leaf of row r]`` for r < n (the same sums as adding them
    after the walk; no leaf index stored and read back)."""
    cdef Py_ssize_t g, r, a, b, c, d, e, f, h, k
    # leaf_value indexed by the final position (2^depth .. 2^(depth+1) - 1)
    cdef const double* value = leaf_value - (<Py_ssize_t> 1 << depth)
    cdef int32_t s
    cdef Py_ssize_t pos[8]
    cdef double* out
    for g in range(0, n - 7 if depth >= 2 else 0, 8):
        walk8(tree, depth, k0 + g, pos)
        out = raw + g * stride
        out[0] += value[pos[0]]
        out[stride] += value[pos[1]]
        out[2 * stride] += value[pos[2]]
        out[3 * stride] += value[pos[3]]
        out[4 * stride] += value[pos[4]]
        out[5 * stride] += value[pos[5]]
        out[6 * stride] += value[pos[6]]
        out[7 * stride] += value[pos[7]]
    # the rows past the last group of 8, one by one (all rows of a tree of
    # depth 0 or 1: walk8 takes 2 levels)
    for r in range(n - n % 8 if depth >= 2 else 0, n):
        a = 1
        for s in range(depth):
            a = key_step(tree, a, k0 + r)
        raw[r * stride] += value[a]


cdef inline Py_ssize_t prefetch_lines(const float* X, Py_ssize_t n_features,
                                      Py_ssize_t n_rows, Py_ssize_t row0,
                                      Py_ssize_t line, Py_ssize_t count
                                      ) noexcept nogil:
    """Prefetch cache lines ``line .. line + count - 1`` (64 bytes, 16
    floats each) of the block of rows starting at ``row0`` (at most
    ROWS_PER_BLOCK rows, none past ``n_rows``); the next line to fetch."""
    cdef Py_ssize_t end = min(ROWS_PER_BLOCK, n_rows - row0) * n_features
    cdef Py_ssize_t i
    # the block's rows are contiguous (row-major X): its lines are fetched
    # in order, a few before each tree, never past the end of X
    for i in range(line * 16, min((line + count) * 16, end), 16):
        prefetch(X + row0 * n_features + i)
    return line + count


# The serial walk, for the few rows of a serving call: no thread team, no
# scratch beyond the stack. Blocks of 8 rows walk each tree together
# (walk_block); each remaining row walks 8 trees together instead, so that
# even one row has 8 independent chains of node loads in flight. The leaf
# values are added in tree order in both cases: the same sums, bit for
# bit, as the parallel walk.
cdef enum:
    TREES_PER_ROW_WALK = 8


cdef inline void add_trees_one_row(
        const SplitKinds* kinds, const PackedNode* nodes,
        const CategorySplit* cats, const uint32_t* bits,
        const int64_t* start, const int32_t* depth, const int32_t* group,
        const double* value, Py_ssize_t first, Py_ssize_t last,
        const RowValue* x, double* out_row) noexcept nogil:
    """``out_row[group[t]] += `` the leaf value ``x`` reaches in tree t,
    for t in [first, last) in order."""
    cdef int32_t node[TREES_PER_ROW_WALK]
    cdef Py_ssize_t t, j, m
    cdef int32_t s, steps
    t = first
    while t < last:
        m = min(<Py_ssize_t> TREES_PER_ROW_WALK, last - t)
        # the deepest of the m trees: a leaf steps to itself, so the
        # shallower trees take the extra steps in place
        steps = 0
        for j in range(m):
            node[j] = 0
            steps = max(steps, depth[t + j])
        if m == TREES_PER_ROW_WALK:   # unrolled by the compiler: 8 chains
            for s in range(steps):
                for j in range(TREES_PER_ROW_WALK):
                    node[j] = step(kinds, nodes + start[t + j], cats, bits,
                                   node[j], x)
        else:
            for s in range(steps):
                for j in range(m):
                    node[j] = step(kinds, nodes + start[t + j], cats, bits,
                                   node[j], x)
        for j in range(m):
            out_row[group[t + j]] += value[start[t + j] + node[j]]
        t += m


cdef void serial_walk(const SplitKinds* kinds, const PackedNode* nodes,
                      const CategorySplit* cats, const uint32_t* bits,
                      const int64_t* start, const int32_t* depth,
                      const int32_t* group, const double* value,
                      Py_ssize_t first, Py_ssize_t last,
                      const RowValue* X, Py_ssize_t n_rows,
                      Py_ssize_t n_features, double* out,
                      Py_ssize_t n_groups) noexcept nogil:
    """``out += sum of trees [first, last)`` at the rows of X (C order),
    in the calling thread."""
    cdef int32_t leaf[8]
    cdef Py_ssize_t r0, r, t
    for r0 in range(0, n_rows - 7, 8):
        for t in range(first, last):
            walk_block(kinds, nodes + start[t], cats, bits, depth[t],
                       X + r0 * n_features, n_features, 8, leaf)
            for r in range(8):
                out[(r0 + r) * n_groups + group[t]] += value[
                    start[t] + leaf[r]]
    for r in range(n_rows - n_rows % 8, n_rows):
        add_trees_one_row(kinds, nodes, cats, bits, start, depth, group,
                          value, first, last, X + r * n_features,
                          out + r * n_groups)


cdef inline bint no_nan(const RowValue* X, Py_ssize_t n) noexcept nogil:
    """Whether none of the n values is NaN."""
    cdef Py_ssize_t i
    for i in range(n):
        if X[i] != X[i]:
            return False
    return True


cdef bint all_finite_or_nan(const RowValue* X, Py_ssize_t n) noexcept nogil:
    """Whether no value of X is infinite once rounded to float32 (the check
    of the estimators' conversion, which refuses infinity)."""
    cdef Py_ssize_t i
    cdef float x
    for i in range(n):
        x = <float> X[i]
        if isinf(x):
            return False
    return True


cdef void serial_walk_any(PackedForest forest, const RowValue* X,
                          Py_ssize_t n_rows, double* out,
                          Py_ssize_t first, Py_ssize_t last) noexcept nogil:
    """``serial_walk``, specialised on whether the forest has categorical
    splits and the rows missing values (as ``walk_tree``)."""
    if forest.walk_cats == NULL and no_nan(X, n_rows * forest.n_features):
        serial_walk(<const NumericPresent*> NULL, forest.nodes,
                    forest.walk_cats, forest.bits, forest.c_start,
                    forest.c_depth, forest.c_group, forest.c_value, first,
                    last, X, n_rows, forest.n_features, out,
                    forest.n_groups)
    elif forest.walk_cats == NULL:
        serial_walk(<const NumericSplits*> NULL, forest.nodes,
                    forest.walk_cats, forest.bits, forest.c_start,
                    forest.c_depth, forest.c_group, forest.c_value, first,
                    last, X, n_rows, forest.n_features, out,
                    forest.n_groups)
    else:
        serial_walk(<const AnySplits*> NULL, forest.nodes, forest.walk_cats,
                    forest.bits, forest.c_start, forest.c_depth,
                    forest.c_group, forest.c_value, first, last, X, n_rows,
                    forest.n_features, out, forest.n_groups)


cdef small_margins(PackedForest forest, const RowValue[:, ::1] X,
                   const double[::1] base_margin, Py_ssize_t first,
                   Py_ssize_t last):
    """``PackedForest.predict_raw_small`` for one dtype of X (validated)."""
    cdef Py_ssize_t n_rows = X.shape[0], r, k, n_groups = forest.n_groups
    if n_rows and X.shape[1] and not all_finite_or_nan(
            &X[0, 0], n_rows * X.shape[1]):
        return None
    out_arr = np.empty((n_rows, n_groups), dtype=np.float64)
    if n_rows == 0 or n_groups == 0:
        return out_arr
    cdef double[:, ::1] out = out_arr
    for r in range(n_rows):
        for k in range(n_groups):
            out[r, k] = base_margin[k]
    if last > first:
        with nogil:
            serial_walk_any(forest, &X[0, 0], n_rows, &out[0, 0], first,
                            last)
    return out_arr


cdef bint has_infinity(const float[:, ::1] X):
    """Whether X holds +-inf (NaN does not count): for a call that walks
    no tree, so that no block read finds it."""
    if X.shape[0] == 0 or X.shape[1] == 0:
        return False
    cdef bint finite
    with nogil:
        finite = all_finite_or_nan(&X[0, 0], X.shape[0] * X.shape[1])
    return not finite
