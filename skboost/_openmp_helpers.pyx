"""Resolve ``n_jobs`` to a number of OpenMP threads, once per call."""

import os

cimport openmp


def openmp_max_threads():
    """Threads OpenMP would use by default here (honours OMP_NUM_THREADS and
    threadpoolctl limits)."""
    return openmp.omp_get_max_threads()


def effective_n_threads(n_jobs):
    """Number of threads for ``n_jobs`` (scikit-learn convention).

    ``None`` or ``-1`` use the threads OpenMP allows here (which respects
    ``OMP_NUM_THREADS`` and threadpoolctl limits, so no over-subscription
    inside joblib workers), capped at the number of CPUs; ``n >= 1`` uses
    ``n``; ``-2`` all but one, and so on.
    """
    n_cpus = os.cpu_count() or 1
    if n_jobs is None or n_jobs == -1:
        return max(1, min(openmp.omp_get_max_threads(), n_cpus))
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or >= 1")
    if n_jobs < 0:
        return max(1, n_cpus + 1 + n_jobs)
    return int(n_jobs)


def check_n_threads(n_threads):
    """Kernels take an already resolved thread count: it must be >= 1
    (OpenMP aborts the process on a negative one)."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
