"""How many threads a call runs with: ``n_jobs`` resolved against the CPUs
this process may use.

The count is capped by the CPUs the process can run on (its affinity mask
and a cgroup CPU quota, as in containers and CI runners), not the machine's
core count: more OpenMP threads than CPUs only make the threads wait on each
other. Inside joblib workers and ``threadpoolctl`` limits the OpenMP default
is already limited, and the default ``n_jobs`` follows it.
"""

import math
import numbers
import os

from ._openmp_helpers import openmp_max_threads

__all__ = ["available_cpus", "effective_n_threads"]


def _cgroup_cpu_quota(root="/sys/fs/cgroup"):
    """CPUs allowed by a cgroup quota (rounded up), or None without one."""
    try:  # cgroup v2: "max 100000" or "<quota> <period>"
        with open(os.path.join(root, "cpu.max")) as f:
            quota, period = f.read().split()[:2]
        if quota == "max":
            return None
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as f:
            period = int(f.read())
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, math.ceil(quota / period))


def available_cpus():
    """CPUs this process may run on: its affinity mask, capped by a cgroup
    CPU quota."""
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n_cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        n_cpus = min(n_cpus, quota)
    return max(1, n_cpus)


def effective_n_threads(n_jobs):
    """Number of threads for ``n_jobs`` (scikit-learn's convention).

    ``None`` or ``-1`` use the threads OpenMP allows here (which honours
    ``OMP_NUM_THREADS`` and ``threadpoolctl`` limits, so there is no
    over-subscription inside joblib workers), capped at the available CPUs;
    ``n >= 1`` uses ``n`` capped at the available CPUs (as joblib does, so
    that no value can ask the OpenMP runtime for thousands of threads);
    ``-2`` uses all CPUs but one, and so on.
    """
    if n_jobs is not None and (isinstance(n_jobs, bool)
                               or not isinstance(n_jobs, numbers.Integral)):
        raise TypeError(f"n_jobs must be None or an int, got {n_jobs!r}")
    n_cpus = available_cpus()
    if n_jobs is None or n_jobs == -1:
        return max(1, min(openmp_max_threads(), n_cpus))
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or >= 1")
    if n_jobs < 0:
        return max(1, n_cpus + 1 + int(n_jobs))
    return min(int(n_jobs), n_cpus)
