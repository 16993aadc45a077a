"""Presorted column blocks for the exact greedy finder.

For each feature, the non-missing entries as (value, row) pairs sorted by
value (ties by row, so the layout is deterministic), stored CSC-like:
feature j owns ``values[col_ptr[j]:col_ptr[j+1]]`` and the matching
``rows``. Built once per fit; the cost of a level scan is then linear in the
number of present entries.
"""

import numpy as np

from ._exact import SortedColumns


def presort_dense(X):
    """Sort each column of a float32 C-ordered matrix, dropping NaN entries.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
        NaN marks a missing value.

    Returns
    -------
    SortedColumns
    """
    n_rows, n_features = X.shape
    if n_rows >= np.iinfo(np.int32).max:
        raise ValueError("the exact method supports fewer than 2**31 rows")
    present_per_column = n_rows - np.count_nonzero(np.isnan(X), axis=0)
    col_ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(present_per_column, out=col_ptr[1:])
    values = np.empty(col_ptr[-1], dtype=np.float32)
    rows = np.empty(col_ptr[-1], dtype=np.int32)
    for j in range(n_features):
        column = X[:, j]
        # A stable sort puts NaN last and keeps equal values in row order.
        order = np.argsort(column, kind="stable")[: present_per_column[j]]
        values[col_ptr[j] : col_ptr[j + 1]] = column[order]
        rows[col_ptr[j] : col_ptr[j + 1]] = order
    return SortedColumns(col_ptr, values, rows, n_rows)
