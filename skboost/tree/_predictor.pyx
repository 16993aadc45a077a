"""Prediction over the flat node arrays of an ensemble, parallel over rows.

All trees of a model are concatenated: tree t owns the nodes
``tree_start[t] .. tree_start[t+1]-1`` and its child indices are local to
it. A node is a leaf when ``left_child == -1``. Every array is validated
(``_check_forest``) before the nogil loops, so a hand-edited model can not
make them read out of bounds or loop forever (children always have a larger
index than their parent).
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython

from cython.parallel cimport prange
from libc.math cimport isnan

from ._common cimport NO_CHILD, int32_t, int64_t, uint8_t


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
    check_n_threads(n_threads)
    _check_forest(X.shape[1], left_child, right_child, feature, threshold,
                  default_left, value, tree_start, tree_group, out.shape[1])
    if out.shape[0] != X.shape[0]:
        raise ValueError("out must have one row per row of X")
    cdef Py_ssize_t r, t, n_trees = tree_group.shape[0]
    cdef int32_t leaf
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
    check_n_threads(n_threads)
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
