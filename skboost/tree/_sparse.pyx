"""Sparse rows (CSR) for the kernels (``_partition.apply_level_splits`` and
the predictor read them).

An entry that is not stored takes ``absent_value``: NaN (missing, the
default, as in the paper and XGBoost) or 0.0. Stored NaN is always missing.
"""

import numpy as np

cimport cython

from libc.math cimport isnan

from ._common cimport int32_t, int64_t


# CSR: row r's stored entries are indices/data[indptr[r]:indptr[r + 1]],
# columns increasing. The kernels either search a row for one feature
# (row_value, _sparse.pxd: a binary search, for the partitioner, which
# needs one value per row) or scatter a whole row into a dense buffer of
# absent values and restore it after (the predictor and TreeSHAP, which
# read many features per row): both cost the stored entries only.

cdef class SparseRows:
    """Validated CSR storage of a matrix.

    Parameters
    ----------
    indptr : array-like of shape (n_rows + 1,)
    indices : array-like of shape (nnz,)
        Column of each stored entry, strictly increasing within a row.
    data : array-like of shape (nnz,)
        Stored values (float32; NaN = missing).
    n_features : int
    absent_value : float
        Value of the entries that are not stored: NaN or 0.0.
    """

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, indptr, indices, data, Py_ssize_t n_features,
                 float absent_value):
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        data = np.ascontiguousarray(data, dtype=np.float32)
        if indptr.ndim != 1 or indptr.shape[0] < 1 or indptr[0] != 0:
            raise ValueError("indptr must be 1-d and start at 0")
        nnz = indices.shape[0]
        if indices.ndim != 1 or data.shape != (nnz,) or indptr[-1] != nnz:
            raise ValueError("indptr, indices and data do not agree")
        if np.any(np.diff(indptr) < 0):
            raise ValueError("indptr must be non-decreasing")
        if n_features < 0 or (nnz and (indices.min() < 0
                                       or indices.max() >= n_features)):
            raise ValueError("column indices must be in [0, n_features)")
        # strictly increasing inside each row
        if not lines_sorted_unique(indptr, indices):
            raise ValueError("column indices must be sorted and unique "
                             "within each row")
        if not (isnan(absent_value) or absent_value == 0.0):
            raise ValueError("absent_value must be NaN or 0.0")
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.n_rows = indptr.shape[0] - 1
        self.n_features = n_features
        self.absent_value = absent_value

    @property
    def shape(self):
        return (self.n_rows, self.n_features)

    def __getitem__(self, rows):
        """``X[rows]`` for an array of row indices: ``take_rows``."""
        return self.take_rows(rows)

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def take_rows(self, rows):
        """The SparseRows of the given rows (in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
            raise ValueError("rows outside the matrix")
        # vectorised gather: the new indptr is the cumulative lengths, and
        # each kept entry's source is its new position plus its row's shift
        indptr = np.asarray(self.indptr)
        starts, stops = indptr[rows], indptr[rows + 1]
        lengths = stops - starts
        new_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=new_ptr[1:])
        # positions of the kept entries, row after row
        offsets = np.repeat(starts - new_ptr[:-1], lengths)
        take = np.arange(new_ptr[-1], dtype=np.int64) + offsets
        return SparseRows(new_ptr, np.asarray(self.indices)[take],
                          np.asarray(self.data)[take], self.n_features,
                          self.absent_value)


ctypedef fused SparseIndex:
    int32_t
    int64_t

ctypedef fused SparsePointer:
    int32_t
    int64_t


cdef int _sorted_unique(const SparsePointer[::1] indptr,
                        const SparseIndex[::1] indices) noexcept nogil:
    """1: every line's indices strictly increase, 0: not, -1: indptr
    decreases or leaves ``indices`` (then nothing past it is read)."""
    cdef Py_ssize_t line, k
    for line in range(indptr.shape[0] - 1):
        if (indptr[line + 1] < indptr[line]
                or indptr[line + 1] > indices.shape[0]):
            return -1
    for line in range(indptr.shape[0] - 1):
        for k in range(indptr[line] + 1, indptr[line + 1]):
            if indices[k] <= indices[k - 1]:
                return 0
    return 1


def lines_sorted_unique(indptr, indices):
    """Whether every line (row of CSR, column of CSC) stores strictly
    increasing indices: one pass over them, no temporary array (the checks
    of sparse input ran it in numpy as several passes and copies, as long
    as the prediction itself on large inputs).

    Returns None when the arrays are not 1-D C-contiguous int32/int64, or
    ``indptr`` does not start at 0, rise, and stay within ``indices`` (the
    caller then checks in numpy, with its messages).
    """
    indptr, indices = np.asarray(indptr), np.asarray(indices)
    if (indptr.ndim != 1 or indices.ndim != 1 or indptr.shape[0] < 1
            or not indptr.flags.c_contiguous
            or not indices.flags.c_contiguous
            or indptr.dtype not in (np.int32, np.int64)
            or indices.dtype not in (np.int32, np.int64)
            or indptr[0] != 0):
        return None
    if indptr.dtype == np.int32 and indices.dtype == np.int32:
        return _sorted_unique_call[int32_t, int32_t](indptr, indices)
    if indptr.dtype == np.int32:
        return _sorted_unique_call[int32_t, int64_t](indptr, indices)
    if indices.dtype == np.int32:
        return _sorted_unique_call[int64_t, int32_t](indptr, indices)
    return _sorted_unique_call[int64_t, int64_t](indptr, indices)


cdef object _sorted_unique_call(const SparsePointer[::1] indptr,
                                const SparseIndex[::1] indices):
    cdef int result
    with nogil:
        result = _sorted_unique(indptr, indices)
    return None if result < 0 else result == 1


cdef CSRView csr_view(SparseRows X):
    cdef CSRView view
    cdef const int64_t[::1] indptr = X.indptr
    cdef const int32_t[::1] indices = X.indices
    cdef const float[::1] data = X.data
    # pointers into the SparseRows' own arrays (they outlive the views);
    # NULL for an empty matrix, whose ranges are all empty
    view.indptr = &indptr[0]
    view.indices = &indices[0] if indices.shape[0] else NULL
    view.data = &data[0] if data.shape[0] else NULL
    view.absent = X.absent_value
    return view
