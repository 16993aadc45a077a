from ._common cimport int32_t, int64_t


cdef class SparseRows:
    # A CSR matrix validated once at construction: indptr rises from 0 to
    # nnz, every row's column indices are strictly increasing and inside
    # [0, n_features). Kernels that take a SparseRows rely on it.
    cdef readonly object indptr       # (n_rows + 1,) int64
    cdef readonly object indices      # (nnz,) int32
    cdef readonly object data         # (nnz,) float32
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
    cdef readonly float absent_value  # value of an entry not stored


ctypedef struct CSRView:
    # the arrays of a SparseRows as pointers, for nogil loops (valid while
    # the SparseRows lives; NULL for an empty array)
    const int64_t* indptr
    const int32_t* indices
    const float* data
    float absent


cdef CSRView csr_view(SparseRows X)


cdef inline float row_value(const int64_t* indptr, const int32_t* indices,
                            const float* data, Py_ssize_t row,
                            int32_t feature, float absent) noexcept nogil:
    """Value of (row, feature): a binary search in the row's sorted column
    indices; ``absent`` when the entry is not stored."""
    cdef int64_t lo = indptr[row], hi = indptr[row + 1], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < feature:
            lo = mid + 1
        else:
            hi = mid
    if lo < indptr[row + 1] and indices[lo] == feature:
        return data[lo]
    return absent


cdef class BinnedRows:
    # The bin codes of a SparseRows' stored entries only (never a dense
    # code matrix), validated once at construction: every stored code and
    # every feature's absent code is one of its feature's bins. Kernels
    # that take a BinnedRows rely on it.
    cdef readonly SparseRows rows     # the entries' rows and features
    cdef readonly object codes        # (nnz,) uint8 or uint16
    cdef readonly object bin_ptr      # (n_features + 1,) int64
    cdef readonly object missing_code  # (n_features,) int32
    cdef readonly object absent_code  # (n_features,) int32
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t n_bins
