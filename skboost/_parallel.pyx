"""Thread counts of the kernels' parallel regions (see _parallel.pxd)."""

cdef extern from *:
    """
    /* The calling thread's cap on the threads of the regions it starts:
       thread-local, so concurrent fits in one process each have their own. */
    static __thread int skboost_thread_cap = 1 << 30;
    """
    int skboost_thread_cap


cdef int capped(int n_threads) noexcept nogil:
    """``n_threads``, at most the calling thread's cap (and at least 1)."""
    if n_threads > skboost_thread_cap:
        n_threads = skboost_thread_cap
    return n_threads if n_threads > 1 else 1


cdef int threads_for_work(int n_threads, int64_t work) noexcept nogil:
    """At most ``capped(n_threads)``, and one thread per MIN_WORK_PER_THREAD
    units of ``work`` (at least one)."""
    cdef int64_t worth = work // MIN_WORK_PER_THREAD
    n_threads = capped(n_threads)
    if worth <= 1:
        return 1
    if worth < n_threads:
        return <int> worth
    return n_threads


def set_thread_cap(int cap):
    """Cap the threads of the regions the calling thread starts (>= 1)."""
    if cap < 1:
        raise ValueError(f"the thread cap must be >= 1, got {cap}")
    global skboost_thread_cap
    skboost_thread_cap = cap


def get_thread_cap():
    """The calling thread's cap (a very large number when none is set)."""
    return skboost_thread_cap
