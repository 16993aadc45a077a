"""Presorted column blocks for the exact greedy finder.

For each feature, the non-missing entries as (value, row) pairs sorted by
value (ties by row, so the layout is deterministic), stored CSC-like:
feature j owns ``values[col_ptr[j]:col_ptr[j+1]]`` and the matching
``rows``. Built once per fit; the cost of a level scan is then linear in the
number of present entries.
"""


import numpy as np

from .._threads import map_columns
from ._presorted import SortedColumns


def presort_dense(X, n_threads=1):
    """Sort each column of a float32 C-ordered matrix, dropping NaN entries.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
        NaN marks a missing value.
    n_threads : int, default=1
        Columns sorted at once (NumPy's sort releases the GIL); the result
        does not depend on it.

    Returns
    -------
    SortedColumns
    """
    n_rows, n_features = X.shape
    if n_rows >= np.iinfo(np.int32).max:
        raise ValueError("the exact method supports fewer than 2**31 rows")

    # sizes first, so that every column is sorted straight into its slice
    n_present = np.array([n_rows - np.count_nonzero(np.isnan(X[:, j]))
                          for j in range(n_features)], dtype=np.int64)
    col_ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(n_present, out=col_ptr[1:])
    values = np.empty(col_ptr[-1], dtype=np.float32)
    rows = np.empty(col_ptr[-1], dtype=np.int32)
    row_ids = np.arange(n_rows, dtype=np.uint64)

    def sort_column(j):
        column = np.ascontiguousarray(X[:, j])
        present = ~np.isnan(column)
        value = column[present] + np.float32(0.0)   # -0.0 becomes +0.0
        # Sort (value, row) as one 64-bit key: the float's bits mapped to an
        # order-preserving unsigned integer, then the row. Keys are unique,
        # so equal values come out in row order, and the integer sort is
        # several times faster than a stable float argsort.
        bits = value.view(np.uint32)
        ordered = np.where(bits >> 31, ~bits, bits | np.uint32(1 << 31))
        keys = (ordered.astype(np.uint64) << np.uint64(32)) | row_ids[present]
        keys.sort()
        order = (keys & np.uint64(0xFFFFFFFF)).astype(np.int32)
        values[col_ptr[j]:col_ptr[j + 1]] = column[order]
        rows[col_ptr[j]:col_ptr[j + 1]] = order

    map_columns(sort_column, range(n_features), n_threads, n_rows=n_rows)
    return SortedColumns(col_ptr, values, rows, n_rows)


def presort_sparse(X):
    """Presorted blocks of the stored, non-missing entries of sparse rows.

    One stable sort of every entry by (column, value), from the CSC order
    (rows increasing within a column), so ties keep the row order exactly
    as in ``presort_dense``; the cost is that of sorting the stored entries,
    whatever the number of columns. When X's absent entries are 0.0, the
    stored missing (NaN) entries are kept aside, per column, for the
    kernels to tell them from the implicit zero block.

    Parameters
    ----------
    X : SparseRows

    Returns
    -------
    SortedColumns
    """
    import scipy.sparse as sp

    if X.n_rows >= np.iinfo(np.int32).max:
        raise ValueError("the exact method supports fewer than 2**31 rows")
    csc = sp.csr_matrix((X.data, X.indices, X.indptr),
                        shape=(X.n_rows, X.n_features)).tocsc()
    csc.sort_indices()
    columns = np.repeat(np.arange(X.n_features, dtype=np.uint64),
                        np.diff(csc.indptr))
    present = ~np.isnan(csc.data)
    every = bool(present.all())   # no stored NaN: no selection (5M entries)
    # + 0.0: -0.0 becomes +0.0
    values = (csc.data if every else csc.data[present]) + np.float32(0.0)
    rows = (csc.indices if every else csc.indices[present]).astype(np.int32)
    present_columns = columns if every else columns[present]
    order = np.argsort(_sort_keys(present_columns, values), kind="stable")
    col_ptr = _pointers(present_columns, X.n_features)
    if np.isnan(X.absent_value):
        return SortedColumns(col_ptr, values[order], rows[order], X.n_rows)
    missing = ~present
    return SortedColumns(col_ptr, values[order], rows[order], X.n_rows,
                         missing_ptr=_pointers(columns[missing], X.n_features),
                         missing_rows=csc.indices[missing])


def _sort_keys(columns, values):
    """uint64 keys ordering entries by (column, float32 value): the column
    in the high word, the value's bits in the low word made to sort as
    unsigned integers (negative values: every bit flipped; others: the
    sign bit set), built in place (no temporaries of every entry)."""
    bits = values.view(np.uint32)
    # all ones for a negative value, the sign bit alone otherwise
    flip = (bits.view(np.int32) >> 31).view(np.uint32)
    flip |= np.uint32(1 << 31)
    flip ^= bits
    keys = columns << np.uint64(32)
    keys |= flip
    return keys


def _pointers(columns, n_features):
    """CSC pointers of entries grouped by (sorted) column."""
    ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(np.bincount(columns.astype(np.int64), minlength=n_features),
              out=ptr[1:])
    return ptr
