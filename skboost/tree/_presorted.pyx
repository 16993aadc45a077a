"""The presorted columns every presorted finder starts from.

The training matrix is presorted once per fit (see ``_presort.py``): for
each feature a block of (value, row) pairs holding the non-missing entries
only, sorted by value. The exact finder (``_node_blocks``,
``_exact_scan``), the approx proposals (``_approx``), the categorical
histograms (``_categorical_scan``) and the column-wise histogram scan
(``_column_scan``) all read them.
"""

import numpy as np

cimport cython


# The layout, for three features (CSC-like: a block per feature, back to
# back in two parallel arrays):
#
#     col_ptr:  0       3    4          7
#     values:  [.1 .5 .9 | 2. | -1. 0. 3. ]     each block ascending
#     rows:    [ 4  0  7 |  2 |  5  1  3  ]     the row of each value
#
# A walk of a block meets the rows in value order, which is the order of
# the candidate thresholds: the exact finder's sums are running sums, and
# the approx proposals and codes are merges with sorted cut lists. The
# rows are scattered, which is why the walks prefetch ahead.

cdef class SortedColumns:
    """Presorted blocks of the present entries of each feature (CSC-like).

    Feature j owns ``values[col_ptr[j]:col_ptr[j+1]]`` (sorted, no NaN) and
    the matching ``rows``. Validated once here: the scan kernels rely on it
    and never re-check it.

    With ``missing_ptr`` (sparse input whose absent entries are 0.0), the
    blocks hold the stored values, feature j's stored *missing* entries are
    the rows ``missing_rows[missing_ptr[j]:missing_ptr[j+1]]``, and every
    other row has the value 0.0 (the implicit zero block, whose statistics
    the kernels recover from the node totals).

    Parameters
    ----------
    col_ptr : array-like of shape (n_features + 1,), int64
    values : array-like of shape (n_entries,), float32
    rows : array-like of shape (n_entries,), int32
    n_rows : int
        Number of rows of the matrix the entries come from.
    missing_ptr : array-like of shape (n_features + 1,), int64, optional
    missing_rows : array-like of shape (n_missing,), int32, optional
    """

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, col_ptr, values, rows, Py_ssize_t n_rows,
                 missing_ptr=None, missing_rows=None):
        col_ptr = np.ascontiguousarray(col_ptr, dtype=np.int64)
        values = np.ascontiguousarray(values, dtype=np.float32)
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        if col_ptr.ndim != 1 or col_ptr.shape[0] < 1 or col_ptr[0] != 0:
            raise ValueError("col_ptr must be 1-d, start at 0")
        if np.any(np.diff(col_ptr) < 0):
            raise ValueError("col_ptr must be non-decreasing")
        if values.ndim != 1 or rows.ndim != 1 or not (
                col_ptr[-1] == values.shape[0] == rows.shape[0]):
            raise ValueError("col_ptr does not match the sorted blocks")
        # every kernel indexes per-row arrays (gradients, slots) by these
        # rows without a check: they are checked here, once
        if n_rows < 0 or (rows.size and (rows.min() < 0
                                         or rows.max() >= n_rows)):
            raise ValueError("rows must be indices in [0, n_rows)")
        if np.isnan(values).any():
            raise ValueError("the sorted blocks hold present values only")
        self.col_ptr = col_ptr
        self.values = values
        self.rows = rows
        self.n_rows = n_rows
        self.n_features = col_ptr.shape[0] - 1
        self.zero_absent = missing_ptr is not None
        # without stored missing entries: empty arrays of the same shape, so
        # the kernels read missing_ptr unconditionally (an empty range each)
        if not self.zero_absent:
            missing_ptr = np.zeros(col_ptr.shape[0], dtype=np.int64)
            missing_rows = np.empty(0, dtype=np.int32)
        missing_ptr = np.ascontiguousarray(missing_ptr, dtype=np.int64)
        missing_rows = np.ascontiguousarray(missing_rows, dtype=np.int32)
        if missing_ptr.shape != col_ptr.shape or missing_ptr[0] != 0 or (
                missing_ptr[-1] != missing_rows.shape[0]) or np.any(
                    np.diff(missing_ptr) < 0):
            raise ValueError("missing_ptr does not match missing_rows")
        if missing_rows.size and (missing_rows.min() < 0
                                  or missing_rows.max() >= n_rows):
            raise ValueError("missing_rows must be indices in [0, n_rows)")
        self.missing_ptr = missing_ptr
        self.missing_rows = missing_rows

