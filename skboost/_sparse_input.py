"""scipy.sparse input: validation to one canonical form, and the view the
kernels read.

Every sparse X (CSR, CSC, COO, matrices or arrays, float32 or float64)
becomes a float32 CSR matrix with sorted, unique column indices, without
ever being densified. A stored NaN is missing, and so is a stored value
equal to the estimator's ``missing`` marker. What an entry that is not
stored means is the estimator's ``sparse_absent``:

- ``"missing"`` (default, as in the paper and XGBoost): it is missing and
  follows the learned default direction. Stored missing entries are then
  dropped (to be absent is to be missing); a stored 0.0 is a value.
- ``"zero"``: it is 0.0, so a sparse matrix and its dense form give the same
  model. Stored zeros are then dropped; stored missing entries are kept as
  NaN.
"""

import numpy as np
import scipy.sparse as sp

from .tree._sparse import SparseRows

SPARSE_FORMATS = ("csr", "csc", "coo")


def canonical_csr(X, missing, absent="missing"):
    """Float32 CSR copy of validated sparse X with sorted unique indices.

    With ``absent="missing"`` the missing entries (NaN, or equal to
    ``missing``) are removed: absent means missing. With ``absent="zero"``
    they are kept as stored NaN and the stored zeros are removed instead:
    absent means 0.0.
    """
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)
    X.sum_duplicates()          # also sorts the indices
    data = X.data
    if not np.isnan(missing):
        data[data == np.float32(missing)] = np.nan
    if np.isinf(data).any():
        raise ValueError("Input X contains infinity (other than the missing "
                         f"marker {missing}).")
    dropped = (data == 0.0) if absent == "zero" else np.isnan(data)
    if dropped.any():
        X = _without_entries(X, dropped)
    return X


def _without_entries(X, dropped):
    """CSR X without the stored entries marked in ``dropped``."""
    kept = ~dropped
    kept_per_row = np.bincount(np.repeat(np.arange(X.shape[0]),
                                         np.diff(X.indptr)),
                               weights=kept, minlength=X.shape[0])
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(kept_per_row.astype(np.int64), out=indptr[1:])
    return sp.csr_matrix((X.data[kept], X.indices[kept], indptr),
                         shape=X.shape)


def sparse_rows(X, absent_value=np.nan):
    """The kernels' view (``SparseRows``) of a canonical CSR matrix whose
    absent entries have ``absent_value`` (NaN: missing, or 0.0)."""
    X = sp.csr_matrix(X)
    return SparseRows(X.indptr, X.indices, X.data, X.shape[1], absent_value)
