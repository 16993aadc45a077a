cdef class BinnedData:
    # Bin codes validated once at construction: every code of feature f is
    # below bin_ptr[f+1] - bin_ptr[f]. Kernels that take a BinnedData rely on
    # it and never re-check the codes.
    cdef readonly object codes        # (n_rows, n_features) uint8 or uint16
    cdef readonly object codes_by_feature  # the same, (n_features, n_rows)
    cdef readonly object bin_ptr      # (n_features + 1,) int64
    cdef readonly object missing_code  # (n_features,) int32
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t n_bins

    cdef _assign(self, codes, codes_by_feature, bin_ptr)
