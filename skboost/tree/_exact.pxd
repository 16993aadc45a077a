cdef class SortedColumns:
    # Presorted blocks, validated once at construction (see _exact.pyx).
    cdef readonly object col_ptr
    cdef readonly object values
    cdef readonly object rows
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
