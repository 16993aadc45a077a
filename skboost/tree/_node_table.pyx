"""A level's bookkeeping in the histogram finders' node table, in one call.

Once a level's rows are partitioned, ``PooledHistogramFinder.apply_splits``
records for each split node k (``nodes[k]``, children ``left[k]`` and
``right[k]``) in the per-node arrays of its ``NodeTable``:

- the children's slices of the row partition: the left child's rows
  ``[begin, begin + n_left)``, the right child's ``[begin + n_left, end)``;
- their histograms' rows in the pool: the smaller child (by rows; the left
  on a tie) gets a new row, whose histogram is built; the larger child
  takes its parent's row, where its histogram is the parent's minus the
  smaller one's; when the children will be leaves, neither has one;
- their exact fixed-point sums: the left child's from its split, the
  right child's the parent's minus it.

These were some 25 numpy calls a level, each a few microseconds on the
small arrays of a level (and more with the caches cold after the
histogram and partition passes): a tenth of a second over a fit of 100
depth-8 trees. Here they are one C loop over the level's nodes.
"""

import numpy as np

from ._common cimport int64_t, uint8_t


def split_level(int64_t[::1] begin not None,          # IN/OUT (capacity,)
                int64_t[::1] end not None,            # IN/OUT (capacity,)
                int64_t[::1] hist_row not None,       # IN/OUT (capacity,)
                int64_t[:, ::1] sums not None,        # IN/OUT (capacity, m)
                const int64_t[:] nodes not None,    # IN (n,) split nodes
                const int64_t[:] left not None,     # IN (n,) their children
                const int64_t[:] right not None,    # IN (n,)
                const int64_t[:] n_left not None,   # IN (n,) rows going left
                const int64_t[:, ::1] left_sums not None,  # IN (n, m)
                small_rows):
    """Write a level's children into the node table (see the module).

    ``sums`` holds each node's m fixed-point sums (a gradient and hessian
    pair: m = 2; one per output: m = 2 T); ``left_sums`` the left
    children's. ``small_rows`` (int64, one per node) are the pool rows of
    the smaller children's histograms, or None when the children will be
    leaves (no histogram row for either).

    Returns
    -------
    left_smaller : ndarray of shape (n,), bool
        Whether each node's left child is its smaller one.
    small_begin, small_end : ndarray of shape (n,), int64
        The smaller children's slices (whose histograms are built).
    parent_rows : ndarray of shape (n,), int64
        The nodes' histogram rows before the call (-1: none), which the
        larger children now hold (or which go back to the pool).
    """
    cdef Py_ssize_t n = nodes.shape[0], m = sums.shape[1]
    cdef const int64_t[::1] small = _checked_level(
        begin, end, hist_row, sums, nodes, left, right, n_left, left_sums,
        small_rows)
    left_smaller_arr = np.empty(n, dtype=bool)
    small_begin_arr = np.empty(n, dtype=np.int64)
    small_end_arr = np.empty(n, dtype=np.int64)
    parent_rows_arr = np.empty(n, dtype=np.int64)
    # the parents' begin, split point, end and right sums: all read before
    # any child is written (as numpy's gathers were)
    cdef int64_t[:, ::1] parent = np.empty((n, 3), dtype=np.int64)
    cdef int64_t[:, ::1] right_sums = np.empty((n, m), dtype=np.int64)
    cdef uint8_t[::1] left_smaller = left_smaller_arr.view(np.uint8)
    cdef int64_t[::1] small_begin = small_begin_arr, small_end = small_end_arr
    cdef int64_t[::1] parent_rows = parent_rows_arr
    cdef Py_ssize_t k, j
    cdef int64_t node, mid
    for k in range(n):
        node = nodes[k]
        mid = begin[node] + n_left[k]
        parent[k, 0], parent[k, 1], parent[k, 2] = begin[node], mid, end[node]
        left_smaller[k] = n_left[k] <= end[node] - mid
        small_begin[k] = begin[node] if left_smaller[k] else mid
        small_end[k] = mid if left_smaller[k] else end[node]
        parent_rows[k] = hist_row[node]
        for j in range(m):
            right_sums[k, j] = sums[node, j] - left_sums[k, j]
    for k in range(n):
        hist_row[nodes[k]] = -1
    _children_hist_rows(hist_row, left, right, left_smaller, parent_rows,
                        small)
    for k in range(n):
        begin[left[k]], end[left[k]] = parent[k, 0], parent[k, 1]
    for k in range(n):
        begin[right[k]], end[right[k]] = parent[k, 1], parent[k, 2]
    for k in range(n):
        for j in range(m):
            sums[right[k], j] = right_sums[k, j]
    for k in range(n):
        for j in range(m):
            sums[left[k], j] = left_sums[k, j]
    return left_smaller_arr, small_begin_arr, small_end_arr, parent_rows_arr


_NO_ROWS = np.empty(0, dtype=np.int64)


cdef void _children_hist_rows(int64_t[::1] hist_row,
                              const int64_t[:] left,
                              const int64_t[:] right,
                              const uint8_t[::1] left_smaller,
                              const int64_t[::1] parent_rows,
                              const int64_t[::1] small_rows) noexcept:
    """The children's histogram rows: the smaller's new row, the larger
    its parent's (every smaller child first, then every larger one); -1
    for both without ``small_rows`` (an empty view: leaves)."""
    cdef Py_ssize_t k, n = left.shape[0]
    if small_rows.shape[0] == 0 and n > 0:
        for k in range(n):
            hist_row[left[k]] = -1
        for k in range(n):
            hist_row[right[k]] = -1
        return
    for k in range(n):
        hist_row[left[k] if left_smaller[k] else right[k]] = small_rows[k]
    for k in range(n):
        hist_row[right[k] if left_smaller[k] else left[k]] = parent_rows[k]


cdef const int64_t[::1] _checked_level(
        const int64_t[::1] begin, const int64_t[::1] end,
        const int64_t[::1] hist_row, const int64_t[:, ::1] sums,
        const int64_t[:] nodes, const int64_t[:] left,
        const int64_t[:] right, const int64_t[:] n_left,
        const int64_t[:, ::1] left_sums, small_rows) except *:
    """The arrays of ``split_level`` checked before its loops index with
    them: the table's arrays one entry per node id (``capacity``), the
    level's one per split node, every node id inside the table, every
    split point inside its node's slice (C loops: numpy's checks would
    cost what the call saves). Returns ``small_rows`` as an int64 view
    (empty for None)."""
    cdef Py_ssize_t capacity = begin.shape[0], n = nodes.shape[0], k
    if not (end.shape[0] == hist_row.shape[0] == sums.shape[0] == capacity):
        raise ValueError("begin, end, hist_row and sums must have one entry "
                         "per node id")
    if not (left.shape[0] == right.shape[0] == n_left.shape[0]
            == left_sums.shape[0] == n):
        raise ValueError("left, right, n_left and left_sums must have one "
                         "entry per split node")
    if left_sums.shape[1] != sums.shape[1]:
        raise ValueError("left_sums must have as many sums per node as sums")
    if small_rows is None:
        small_rows = _NO_ROWS
    elif np.shape(small_rows) != (n,):
        raise ValueError("small_rows must have one entry per split node")
    for k in range(n):
        if not (0 <= nodes[k] < capacity and 0 <= left[k] < capacity
                and 0 <= right[k] < capacity):
            raise ValueError("node ids must be in [0, capacity of the "
                             "table)")
        if not 0 <= n_left[k] <= end[nodes[k]] - begin[nodes[k]]:
            raise ValueError("n_left must be in [0, rows of the node]")
    return small_rows
