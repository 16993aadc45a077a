cdef class RowPartition:
    # Row indices grouped so that each node's rows are a contiguous slice.
    # Every entry is a valid row of the data (checked at construction);
    # partitioning only permutes entries inside a node's slice, so it stays
    # valid and kernels never re-check it.
    cdef readonly object row_index    # (n_active,) int32
    cdef readonly Py_ssize_t n_rows   # rows of the data it indexes
    cdef object _scratch              # (n_active,) int32, reused by splits
