"""The OpenMP runtime as Python sees it (``n_jobs`` is resolved in
``skboost._threads``)."""

cimport openmp

from ._parallel import get_thread_cap


def openmp_max_threads():
    """Threads OpenMP would use by default here (honours OMP_NUM_THREADS and
    threadpoolctl limits)."""
    return openmp.omp_get_max_threads()


# Kernels taking n_threads check it here (a few with the same test inline;
# SplitContext checks its own at construction) before it reaches OpenMP's
# num_threads clause, where a count < 1 aborts the process.
def check_n_threads(n_threads):
    """The thread count a kernel runs with: ``n_threads`` (already resolved,
    it must be >= 1: OpenMP aborts the process on a negative one), at most
    the calling thread's cap (``skboost._parallel.set_thread_cap``)."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    return min(n_threads, get_thread_cap())
