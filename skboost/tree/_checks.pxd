# Checks of the small index arrays the kernels' Python entry points take
# (node slices, histogram rows, bin pointers), before any nogil loop reads
# through them. One C loop each: the numpy equivalents (min, max, diff,
# unique) cost a few microseconds apiece, and a tree level calls several
# kernels with a dozen of them, which dominated small fits.

from libc.stdlib cimport calloc, free

from ._common cimport int32_t, int64_t, uint8_t

ctypedef fused index_t:
    int32_t
    int64_t


cdef inline bint all_in_range(const index_t[::1] values, int64_t low,
                              int64_t high) noexcept nogil:
    """Every value in [low, high)."""
    cdef Py_ssize_t i
    for i in range(values.shape[0]):
        if values[i] < low or values[i] >= high:
            return False
    return True


cdef inline bint valid_slices(const int64_t[::1] begin,
                              const int64_t[::1] end,
                              int64_t limit) noexcept nogil:
    """``0 <= begin[k] <= end[k] <= limit`` for every k (the caller checks
    that both have the same length)."""
    cdef Py_ssize_t k
    for k in range(begin.shape[0]):
        if begin[k] < 0 or end[k] < begin[k] or end[k] > limit:
            return False
    return True


cdef inline bint rising_from_zero(const int64_t[::1] ptr,
                                  int64_t last) noexcept nogil:
    """``ptr`` starts at 0, ends at ``last`` and rises by at least 1 at
    every step (each feature owns at least one bin)."""
    cdef Py_ssize_t i, n = ptr.shape[0]
    if n < 1 or ptr[0] != 0 or ptr[n - 1] != last:
        return False
    for i in range(1, n):
        if ptr[i] - ptr[i - 1] < 1:
            return False
    return True


cdef inline int distinct_in_range(const int64_t[::1] values,
                                  int64_t high) noexcept nogil:
    """1 when every value is in [0, high) and none repeats, 0 when not,
    -1 when out of memory (a byte per possible value, as np.unique would
    sort a copy)."""
    cdef Py_ssize_t i
    cdef uint8_t* seen
    cdef int distinct = 1
    if not all_in_range(values, 0, high):
        return 0
    seen = <uint8_t*> calloc(max(high, 1), 1)
    if seen == NULL:
        return -1
    for i in range(values.shape[0]):
        if seen[values[i]]:
            distinct = 0
            break
        seen[values[i]] = 1
    free(seen)
    return distinct
