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

from ..tree._sparse import SparseRows, lines_sorted_unique

SPARSE_FORMATS = ("csr", "csc", "coo")


def check_sparse_structure(X, name="X"):
    """Raise a ValueError naming the problem when the arrays of a scipy
    sparse matrix do not describe a matrix: before scipy or any kernel
    reads them (scipy's own routines crash or fail obscurely on them).

    CSR and CSC: ``indptr`` must start at 0, never decrease and end within
    ``indices`` and ``data``; every index must lie inside the shape; a row
    (column) must not store the same column (row) twice. Unsorted indices
    are valid (scipy makes them, for example when selecting columns) and
    are sorted in the copy skboost makes. COO: ``row`` and ``col`` inside
    the shape, one per stored value (duplicates are summed, as COO
    defines).
    """
    if not sp.issparse(X) or X.format not in ("csr", "csc", "coo"):
        return
    if X.format == "coo":
        _check_coo(X, name)
        return
    n_major, n_minor = X.shape if X.format == "csr" else X.shape[::-1]
    line, other = ("row", "column") if X.format == "csr" else ("column", "row")
    indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1:
        raise ValueError(f"sparse {name} ({X.format}): indptr has "
                         f"{indptr.shape[0]} entries for {n_major} {line}s "
                         f"(needs {n_major + 1})")
    steps = np.diff(indptr)
    if indptr[0] != 0 or (steps < 0).any():
        raise ValueError(f"sparse {name} ({X.format}): indptr must start at 0 "
                         "and never decrease")
    nnz = int(indptr[-1])
    if indices.ndim != 1 or np.ndim(X.data) != 1 or nnz > min(
            indices.shape[0], np.shape(X.data)[0]):
        raise ValueError(f"sparse {name} ({X.format}): indptr ends at {nnz}, "
                         "beyond its indices or data")
    indices = indices[:nnz]
    if nnz and (indices.min() < 0 or indices.max() >= n_minor):
        raise ValueError(f"sparse {name} ({X.format}): an index is outside "
                         f"[0, {n_minor}), the number of {other}s")
    if _has_duplicates(indptr, indices, steps):
        raise ValueError(f"sparse {name} ({X.format}): a {line} stores the "
                         f"same {other} twice; call {name}.sum_duplicates() "
                         "if the values are meant to be added")


def _has_duplicates(indptr, indices, steps):
    """Whether a line stores an index twice (O(nnz) when sorted)."""
    if indices.shape[0] < 2:
        return False
    # sorted and unique, in one pass (the common case; None: not int arrays)
    if lines_sorted_unique(indptr, indices):
        return False
    starts = np.zeros(indices.shape[0], dtype=bool)  # first entry of a line
    starts[indptr[:-1][steps > 0]] = True
    step = np.diff(indices.astype(np.int64))
    if np.all((step > 0) | starts[1:]):
        return False    # sorted and unique
    line = np.repeat(np.arange(steps.shape[0]), steps)
    order = np.lexsort((indices, line))
    same = ((indices[order][1:] == indices[order][:-1])
            & (line[order][1:] == line[order][:-1]))
    return bool(same.any())


def _check_coo(X, name):
    row, col = np.asarray(X.row), np.asarray(X.col)
    n = np.shape(X.data)[0]
    if row.shape != (n,) or col.shape != (n,):
        raise ValueError(f"sparse {name} (coo): row, col and data must have "
                         "one entry per stored value")
    for what, index, bound in (("row", row, X.shape[0]),
                               ("column", col, X.shape[1])):
        if n and (index.min() < 0 or index.max() >= bound):
            raise ValueError(f"sparse {name} (coo): a {what} index is "
                             f"outside [0, {bound})")


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
