"""A grown tree's leaf values added to the training margins in row order.

After a tree is grown, every active row's margin moves by its leaf's
value. The partition knows where the rows ended: leaf k's rows are the
slice ``row_index[begin[k]:end[k]]`` (in increasing row order: the
partition is stable), or, for the last level, which is not partitioned
(``SplitLeafRows``), node k's slice and its numeric split decide between
two leaves per row.

Walking the slices (as ``_partition.add_leaf_values`` does, and the
last level's kernel did before this one) reads and writes one margin per row at
scattered places, and one code per row of a scattered column: a cache
line of memory each, about 200 MB of traffic a tree for 1,000,000 rows.
This kernel visits the rows in row order instead, in blocks of
``BLOCK_ROWS`` rows that a thread owns (so no two threads touch one
margin), with two passes per block:

1. each group's rows inside the block: every group's slice is sorted, so
   a cursor per group advances through it, writing the value of each of
   its rows at ``delta[row - block start]`` (an array of the block, in
   the second-level cache); a split group reads its rows' codes in its
   feature's column (feature-major codes: the block's rows of one
   feature are a few contiguous kilobytes), its constants held in
   registers for the whole run of rows;
2. the rows of the block in order: ``margin += delta``, read and written
   forward, with no test and no lookup per row (a row of no slice has
   ``delta`` -0.0, which adds nothing: ``x + -0.0`` is ``x``, bit for
   bit).

Memory traffic is then the margins streamed once, the row index once and
the split features' columns once. Each row of a slice gets exactly the
one addition the slice walk gives it (the same double added to the same
margin), so the margins are the same bits, for any thread count. (The
kernel it replaced looked up each row's group, split and code in pass 2:
a chain of dependent loads per row, three times this one's time.)

Groups: k is a leaf when ``feature[k] < 0`` (``value_left[k]`` is its
value), else a split: the row goes to ``value_left[k]`` when its code of
``feature[k]`` is ``<= split_bin[k]`` (missing: when ``default_left[k]``),
else to ``value_right[k]``.
"""

import numpy as np

cimport cython

from skboost._openmp_helpers import check_n_threads

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc

from ._common cimport int32_t, int64_t, uint8_t
from .._parallel cimport threads_for_work
from libc.stdint cimport uint16_t

ctypedef fused code_t:
    uint8_t
    uint16_t

cdef enum:
    # rows a block: its values (8 bytes each) stay in the second-level
    # cache between the two passes
    BLOCK_ROWS = 8192


@cython.boundscheck(True)
@cython.wraparound(True)
def _checked_groups(row_index, n_rows, begin, end, feature, split_bin,
                    default_left, value_left, value_right, codes,
                    missing_code, raw, column):
    """The group arrays in the kernel's dtypes, after every check that
    keeps the kernel's reads inside its arrays."""
    begin = np.ascontiguousarray(begin, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    arrays = (np.ascontiguousarray(feature, dtype=np.int32),
              np.ascontiguousarray(split_bin, dtype=np.int32),
              np.ascontiguousarray(default_left, dtype=np.uint8),
              np.ascontiguousarray(value_left, dtype=np.float64),
              np.ascontiguousarray(value_right, dtype=np.float64))
    n_groups = begin.shape[0]
    if begin.ndim != 1 or any(a.shape != (n_groups,) for a in (end,) + arrays):
        raise ValueError("begin, end, feature, split_bin, default_left, "
                         "value_left and value_right need one entry per "
                         "group")
    if n_groups and (begin.min() < 0 or end.max() > row_index.shape[0]
                     or np.any(end < begin)):
        raise ValueError("group slices outside the row index")
    order = np.argsort(begin, kind="stable")
    if np.any(end[order][:-1] > begin[order][1:]):
        raise ValueError("group slices overlap")
    if raw.ndim != 2 or raw.shape[0] != n_rows or not (
            0 <= column < raw.shape[1]):
        raise ValueError("raw must be (n_rows, n_columns) with column inside")
    if codes.ndim != 2 or codes.shape[0] != n_rows:
        raise ValueError("codes must be (n_rows, n_features)")
    if missing_code.shape != (codes.shape[1],):
        raise ValueError("missing_code needs one entry per feature")
    if n_groups and arrays[0].max() >= codes.shape[1]:
        raise ValueError("split feature outside [0, n_features)")
    return (begin, end) + arrays


def add_group_values(const int32_t[::1] row_index not None,  # IN partition
                     begin, end,                 # IN (n_groups,) slices
                     feature, split_bin, default_left,   # IN the splits
                     value_left, value_right,    # IN (n_groups,) values
                     codes,                      # IN (n_rows, n_features)
                     missing_code,               # IN (n_features,) int32
                     double[:, ::1] raw not None,  # IN/OUT (n_rows, K)
                     *, Py_ssize_t column, int n_threads):
    """``raw[row, column] +=`` each row's value for the rows of every
    group's slice of ``row_index`` (module docstring: a leaf's value, or
    the value of the side of its split the row's code goes to).

    Slices must not overlap, and each slice must hold increasing rows in
    ``[0, n_rows)`` (a RowPartition's); rows of no slice are left as
    they are. A row outside ``[0, n_rows)``, or out of order across a
    block boundary (where the walk would miss it), is a ValueError (after
    some margins were updated: a RowPartition never has one).

    ``codes`` in either layout: the kernel reads them feature-major, so
    ``codes_by_feature.T`` (F order) is read in place, and C-ordered
    codes are copied to that layout first."""
    n_threads = check_n_threads(n_threads)
    codes = np.asarray(codes)
    if codes.dtype != np.uint8 and codes.dtype != np.uint16:
        raise ValueError("codes must be uint8 or uint16")
    missing = np.ascontiguousarray(missing_code, dtype=np.int32)
    groups = _checked_groups(row_index, raw.shape[0], begin, end, feature,
                             split_bin, default_left, value_left,
                             value_right, codes, missing, raw, column)
    # (n_features, n_rows), C order: free for a feature-major array's .T
    codes_by_feature = np.ascontiguousarray(codes.T)
    n_rows = raw.shape[0]
    n_blocks = (n_rows + BLOCK_ROWS - 1) // BLOCK_ROWS
    n_updates = int((groups[1] - groups[0]).sum())
    # a thread gets whole blocks: enough rows each for its cursors' set-up
    n_threads = min(threads_for_work(n_threads, 4 * n_updates),
                    max(1, n_blocks))
    if codes.dtype == np.uint8:
        bad = _add_values[uint8_t](row_index, *groups, codes_by_feature,
                                   missing, raw, column, n_threads)
    else:
        bad = _add_values[uint16_t](row_index, *groups, codes_by_feature,
                                    missing, raw, column, n_threads)
    if bad:
        raise ValueError("a group's slice of row_index is not increasing "
                         "rows in [0, n_rows)")


cdef int _add_values(const int32_t[::1] row_index,
                     const int64_t[::1] begin, const int64_t[::1] end,
                     const int32_t[::1] feature,
                     const int32_t[::1] split_bin,
                     const uint8_t[::1] default_left,
                     const double[::1] value_left,
                     const double[::1] value_right,
                     const code_t[:, ::1] codes_by_feature,
                     const int32_t[::1] missing_code,
                     double[:, ::1] raw, Py_ssize_t column,
                     int n_threads) noexcept:
    """The two passes of the module docstring over each thread's share of
    the blocks (a contiguous range, static); returns 1 when a slice was
    found out of order or not consumed whole (checked: the first thread
    starts at the slices' beginnings, each thread stops where the next
    one started, and the last one at the slices' ends)."""
    cdef Py_ssize_t n_rows = raw.shape[0], n_groups = begin.shape[0]
    cdef Py_ssize_t n_blocks = (n_rows + BLOCK_ROWS - 1) // BLOCK_ROWS
    # starts[t, k]: where thread t starts in group k's slice; stops[t, k]:
    # where it stopped (row n_threads of starts: the slices' ends)
    start_array = np.empty((n_threads + 1, max(n_groups, 1)), dtype=np.int64)
    start_array[n_threads, :n_groups] = end
    stop_array = np.empty((n_threads, max(n_groups, 1)), dtype=np.int64)
    cdef int64_t[:, ::1] starts = start_array, stops = stop_array
    cdef uint8_t[::1] failed = np.zeros(n_threads, dtype=np.uint8)
    # sides[2 k], sides[2 k + 1]: group k's left and right values, adjacent
    # so that a row's side indexes them
    sides_array = np.empty(2 * max(n_groups, 1))
    sides_array[0:2 * n_groups:2] = value_left
    sides_array[1:2 * n_groups:2] = value_right
    cdef const double[::1] sides = sides_array
    cdef int t
    cdef Py_ssize_t first_block, stop_block
    cdef double* delta
    for t in prange(n_threads, nogil=True, schedule="static", chunksize=1,
                    num_threads=n_threads):
        first_block = t * n_blocks // n_threads
        stop_block = (t + 1) * n_blocks // n_threads
        _start_cursors(row_index, begin, end, first_block * BLOCK_ROWS,
                       &starts[t, 0], &stops[t, 0])
        delta = <double*> malloc(BLOCK_ROWS * sizeof(double))
        if delta == NULL:
            failed[t] = 2
        else:
            failed[t] = _add_block_range(
                row_index, end, feature, split_bin, default_left, &sides[0],
                codes_by_feature, missing_code, raw, column, first_block,
                stop_block, &stops[t, 0], delta)
            free(delta)
    if np.any(np.asarray(failed) == 2):
        raise MemoryError("no memory for a block's values")
    return int(np.any(np.asarray(failed))
               or np.any(start_array[0, :n_groups] != np.asarray(begin))
               or np.any(stop_array[:, :n_groups]
                         != start_array[1:, :n_groups]))


cdef void _start_cursors(const int32_t[::1] row_index,
                         const int64_t[::1] begin, const int64_t[::1] end,
                         Py_ssize_t first_row,
                         int64_t* start, int64_t* cursor) noexcept nogil:
    """start[k] and cursor[k]: the first position of group k's slice whose
    row is ``>= first_row`` (a binary search: the slice is sorted; if it
    is not, the checks of ``_add_values`` catch it)."""
    cdef Py_ssize_t k
    cdef int64_t lo, hi, mid
    for k in range(begin.shape[0]):
        lo = begin[k]
        hi = end[k]
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if row_index[mid] < first_row:
                lo = mid + 1
            else:
                hi = mid
        start[k] = lo
        cursor[k] = lo


cdef uint8_t _add_block_range(const int32_t[::1] row_index,
                              const int64_t[::1] end,
                              const int32_t[::1] feature,
                              const int32_t[::1] split_bin,
                              const uint8_t[::1] default_left,
                              const double* sides,
                              const code_t[:, ::1] codes_by_feature,
                              const int32_t[::1] missing_code,
                              double[:, ::1] raw, Py_ssize_t column,
                              Py_ssize_t first_block, Py_ssize_t stop_block,
                              int64_t* cursor,
                              double* delta) noexcept nogil:
    """Blocks ``first_block .. stop_block - 1``, each in the two passes;
    returns 1 when a slice's rows were found out of order (a row below
    the block its cursor is in)."""
    cdef Py_ssize_t n_rows = raw.shape[0], n_groups = end.shape[0]
    cdef Py_ssize_t n_columns = raw.shape[1]
    cdef Py_ssize_t block, start, stop, i, k
    cdef double* margin
    for block in range(first_block, stop_block):
        start = block * BLOCK_ROWS
        stop = min(start + BLOCK_ROWS, n_rows)
        # pass 1: each row's value. -0.0 for a row of no slice: x + -0.0
        # is x, bit for bit (-0.0 too), so pass 2 needs no test per row
        for i in range(stop - start):
            delta[i] = -0.0
        for k in range(n_groups):
            if _group_values(row_index, end[k], feature[k], split_bin[k],
                             default_left[k], &sides[2 * k],
                             codes_by_feature, missing_code, start, stop,
                             &cursor[k], delta):
                return 1
        # pass 2: the margins in row order, one addition each
        margin = &raw[0, column]
        for i in range(start, stop):
            margin[i * n_columns] += delta[i - start]
    return 0


cdef inline uint8_t _group_values(const int32_t[::1] row_index, int64_t end,
                                  int32_t f, int32_t split_bin,
                                  uint8_t default_left, const double* sides,
                                  const code_t[:, ::1] codes_by_feature,
                                  const int32_t[::1] missing_code,
                                  Py_ssize_t start, Py_ssize_t stop,
                                  int64_t* cursor,
                                  double* delta) noexcept nogil:
    """Pass 1 for one group: ``delta[row - start]`` = the value of each
    row of its slice inside the block (its cursor advanced past them).
    A split reads its feature's column (``codes_by_feature[f]``: the
    block's rows of it are a few contiguous kilobytes), the side computed,
    not branched on (a coin toss from row to row). Returns 1 for a row
    below the block (out of order)."""
    cdef int64_t c = cursor[0]
    cdef Py_ssize_t row
    cdef const code_t* column
    cdef int32_t code, missing
    cdef int right, missing_right = default_left == 0
    if f < 0:
        while c < end and row_index[c] < stop:
            row = row_index[c]
            if row < start:        # out of order: never written
                return 1
            delta[row - start] = sides[0]
            c += 1
    else:
        column = &codes_by_feature[f, 0]
        missing = missing_code[f]
        while c < end and row_index[c] < stop:
            row = row_index[c]
            if row < start:
                return 1
            code = column[row]
            right = ((code == missing) & missing_right) | (
                (code != missing) & (code > split_bin))
            delta[row - start] = sides[right]
            c += 1
    cursor[0] = c
    return 0
