"""Sparse rows (CSR) for the kernels (``_partition.apply_level_splits`` and
the predictor read them).

An entry that is not stored takes ``absent_value``: NaN (missing, the
default, as in the paper and XGBoost) or 0.0. Stored NaN is always missing.
"""

import numpy as np

cimport cython

from libc.math cimport isnan

from ._common cimport int32_t, int64_t, uint8_t
from libc.stdint cimport uint16_t


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


cdef class BinnedRows:
    """Bin codes of the stored entries of sparse rows, with the histogram
    layout they index into: the histogram finder's input for sparse data
    in distributed training (``skboost.dask``, ``skboost.spark``), where a
    dense code matrix (a byte per row and feature) is what must never be
    made. Memory: one code per stored entry, the rows' structure shared
    with ``rows``.

    An entry that is not stored has its feature's ``absent_code``: the
    missing bin when absent entries are missing, the bin of 0.0 when they
    are 0.0 (``SparseRows.absent_value``).

    Parameters
    ----------
    rows : SparseRows
    codes : ndarray of shape (nnz,), uint8 or uint16
        Bin code of each stored entry (NaN: its feature's missing code).
    bin_ptr : ndarray of shape (n_features + 1,), int64
        Feature f owns bins ``bin_ptr[f] .. bin_ptr[f+1]-1``, the last its
        missing bin (``binning.HistogramLayout``).
    absent_code : ndarray of shape (n_features,), int32
    """

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, SparseRows rows not None, codes, bin_ptr,
                 absent_code):
        codes = np.asarray(codes)
        if codes.dtype not in (np.uint8, np.uint16) or codes.shape != (
                np.asarray(rows.indices).shape[0],):
            raise ValueError("codes must be uint8 or uint16, one per stored "
                             "entry")
        bin_ptr = np.ascontiguousarray(bin_ptr, dtype=np.int64)
        if bin_ptr.shape != (rows.n_features + 1,) or bin_ptr[0] != 0:
            raise ValueError("bin_ptr must have n_features + 1 entries "
                             "from 0")
        widths = np.diff(bin_ptr)
        if np.any(widths < 1):
            raise ValueError("every feature needs at least its missing bin")
        absent_code = np.ascontiguousarray(absent_code, dtype=np.int32)
        if absent_code.shape != (rows.n_features,) or (
                absent_code.size and (absent_code.min() < 0
                                      or np.any(absent_code >= widths))):
            raise ValueError("absent_code must be a bin of each feature")
        codes = np.ascontiguousarray(codes)
        # every code inside its own feature's bins: the kernels add at
        # bin_ptr[f] + code with no check
        if codes.dtype == np.uint8:
            inside = _codes_inside[uint8_t](codes, rows.indices, widths)
        else:
            inside = _codes_inside[uint16_t](codes, rows.indices, widths)
        if not inside:
            raise ValueError("a bin code is beyond its feature's bins")
        self.rows = rows
        self.codes = codes
        self.bin_ptr = bin_ptr
        self.missing_code = (widths - 1).astype(np.int32)
        self.absent_code = absent_code
        self.n_rows = rows.n_rows
        self.n_features = rows.n_features
        self.n_bins = int(bin_ptr[-1])

    @property
    def nbytes(self):
        """Bytes of the binned rows: the codes, the per-feature arrays,
        and the stored entries' structure they read (the column index of
        each entry and the row pointers, shared with ``rows``)."""
        return int(self.codes.nbytes + self.bin_ptr.nbytes
                   + self.missing_code.nbytes + self.absent_code.nbytes
                   + self.rows.indices.nbytes + self.rows.indptr.nbytes)


ctypedef fused entry_code_t:
    uint8_t
    uint16_t


cdef bint _codes_inside(const entry_code_t[::1] codes,
                        const int32_t[::1] indices,
                        const int64_t[::1] widths):
    """Every code below its feature's number of bins (the indices are
    SparseRows', inside [0, n_features))."""
    cdef Py_ssize_t k
    cdef bint inside = True
    with nogil:
        for k in range(codes.shape[0]):
            if codes[k] >= widths[indices[k]]:
                inside = False
                break
    return inside
