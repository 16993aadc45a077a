"""The OpenMP runtime as Python sees it (``n_jobs`` is resolved in
``skboost._threads``)."""

cimport openmp


def openmp_max_threads():
    """Threads OpenMP would use by default here (honours OMP_NUM_THREADS and
    threadpoolctl limits)."""
    return openmp.omp_get_max_threads()


def check_n_threads(n_threads):
    """Kernels take an already resolved thread count: it must be >= 1
    (OpenMP aborts the process on a negative one)."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
