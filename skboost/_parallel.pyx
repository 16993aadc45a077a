"""Thread counts of the kernels' parallel regions (see _parallel.pxd)."""

cdef extern from *:
    """
    /* The calling thread's cap on the threads of the regions it starts:
       thread-local, so concurrent fits in one process each have their own. */
    static __thread int skboost_thread_cap = 1 << 30;
    """
    int skboost_thread_cap


# How a kernel sizes a parallel region, the one way (every signature that
# takes n_threads means this): the caller passes the thread count it was
# given (n_jobs resolved by _threads.py, at most the CPUs the process may
# use); the kernel then calls threads_for_work(n_threads, work) with the
# work of that region, in elementary updates (_parallel.pxd), or capped()
# where the region is always worth splitting. Neither changes a result:
# every kernel's output is independent of the thread count.

cdef int capped(int n_threads) noexcept nogil:
    """``n_threads``, at most the calling thread's cap (and at least 1)."""
    if n_threads > skboost_thread_cap:
        n_threads = skboost_thread_cap
    return n_threads if n_threads > 1 else 1


cdef int threads_for_work(int n_threads, int64_t work) noexcept nogil:
    """At most ``capped(n_threads)``, and one thread per MIN_WORK_PER_THREAD
    units of ``work`` (at least one)."""
    # one thread per MIN_WORK_PER_THREAD updates: a region too small to
    # pay for waking a second thread (and for its barrier) runs on one
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
    # the boosting loop's ThreadTuner lowers it when fewer threads measure
    # faster on a busy machine; thread-local, so another fit running in
    # another Python thread keeps its own
    global skboost_thread_cap
    skboost_thread_cap = cap


def get_thread_cap():
    """The calling thread's cap (a very large number when none is set)."""
    return skboost_thread_cap
