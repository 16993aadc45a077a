cdef class SortedColumns:
    # Presorted blocks, validated once at construction (see _presorted.pyx).
    cdef readonly object col_ptr
    cdef readonly object values
    cdef readonly object rows
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
    # sparse input read with absent = 0.0: the stored missing entries
    cdef readonly bint zero_absent
    cdef readonly object missing_ptr  # (n_features + 1,) int64
    cdef readonly object missing_rows  # (n_missing,) int32
