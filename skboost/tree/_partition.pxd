cdef class RowPartition:
    # Row indices grouped so that each node's rows are a contiguous slice.
    # Every entry is a valid row of the data (checked at construction);
    # partitioning only permutes entries inside a node's slice, so it stays
    # valid and kernels never re-check it.
    cdef readonly object row_index    # (n_active,) int32
    cdef readonly Py_ssize_t n_rows   # rows of the data it indexes
    cdef object _scratch              # (n_active,) int32, reused by splits
    # The tree's gradient pairs in partition order (``ordered_gpair[i]`` is
    # row ``row_index[i]``'s), moved by every split with the rows, or None;
    # ``gpair_source`` the (n_rows, 2) array they were gathered from.
    cdef readonly object ordered_gpair    # (n_active, 2) float32 or None
    cdef readonly object gpair_source
    cdef object _ordered_buffer           # (n_active, 2) float32, reused
    cdef object _gpair_scratch            # (n_active, 2) float32, reused
