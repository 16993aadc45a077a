"""Presorted column blocks for the exact greedy finder.

For each feature, the non-missing entries as (value, row) pairs sorted by
value (ties by row, so the layout is deterministic), stored CSC-like:
feature j owns ``values[col_ptr[j]:col_ptr[j+1]]`` and the matching
``rows``. Built once per fit; the cost of a level scan is then linear in the
number of present entries.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._exact import SortedColumns


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

    row_ids = np.arange(n_rows, dtype=np.uint64)

    def sort_column(j):
        column = np.ascontiguousarray(X[:, j])
        present = ~np.isnan(column)
        values = column[present] + np.float32(0.0)   # -0.0 becomes +0.0
        rows = row_ids[present]
        # Sort (value, row) as one 64-bit key: the float's bits mapped to an
        # order-preserving unsigned integer, then the row. Keys are unique,
        # so equal values come out in row order, and the integer sort is
        # several times faster than a stable float argsort.
        bits = values.view(np.uint32)
        ordered = np.where(bits >> 31, ~bits, bits | np.uint32(1 << 31))
        keys = (ordered.astype(np.uint64) << np.uint64(32)) | rows
        keys.sort()
        order = (keys & np.uint64(0xFFFFFFFF)).astype(np.int32)
        return column[order], order

    with ThreadPoolExecutor(max_workers=max(1, n_threads)) as pool:
        blocks = list(pool.map(sort_column, range(n_features)))
    col_ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum([values.shape[0] for values, _ in blocks], out=col_ptr[1:])
    values = (np.concatenate([v for v, _ in blocks]) if blocks
              else np.empty(0, dtype=np.float32))
    rows = (np.concatenate([r for _, r in blocks]) if blocks
            else np.empty(0, dtype=np.int32))
    return SortedColumns(col_ptr, values, rows, n_rows)
