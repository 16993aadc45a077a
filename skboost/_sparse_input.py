"""scipy.sparse input: validation to one canonical form, and the view the
kernels read.

Every sparse X (CSR, CSC, COO, matrices or arrays, float32 or float64)
becomes a float32 CSR matrix with sorted, unique column indices, without
ever being densified. An entry that is not stored is missing, as in the
paper and XGBoost: it follows the learned default direction. A stored NaN
is missing too, and so is a stored value equal to the estimator's
``missing`` marker; both are dropped from the storage (to be absent is to
be missing). A stored 0.0 is a value like any other.
"""

import numpy as np
import scipy.sparse as sp

from .tree._sparse import SparseRows

SPARSE_FORMATS = ("csr", "csc", "coo")


def canonical_csr(X, missing):
    """Float32 CSR copy of validated sparse X with sorted unique indices,
    the missing entries (NaN, or equal to ``missing``) removed."""
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)
    X.sum_duplicates()          # also sorts the indices
    data = X.data
    if not np.isnan(missing):
        data[data == np.float32(missing)] = np.nan
    if np.isinf(data).any():
        raise ValueError("Input X contains infinity (other than the missing "
                         f"marker {missing}).")
    stored = ~np.isnan(data)
    if not stored.all():
        kept_per_row = np.add.reduceat(stored, X.indptr[:-1]) if data.size \
            else np.zeros(X.shape[0], dtype=np.int64)
        # reduceat repeats the entry at a row start for empty rows
        kept_per_row[np.diff(X.indptr) == 0] = 0
        indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
        np.cumsum(kept_per_row, out=indptr[1:])
        X = sp.csr_matrix((data[stored], X.indices[stored], indptr),
                          shape=X.shape)
    return X


def sparse_rows(X):
    """The kernels' view (``SparseRows``) of a canonical CSR matrix."""
    X = sp.csr_matrix(X)
    return SparseRows(X.indptr, X.indices, X.data, X.shape[1], np.nan)
