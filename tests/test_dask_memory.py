"""skboost.dask.memory: freed memory kept for reuse while a shard works
on a Dask worker (whose nanny sets MALLOC_TRIM_THRESHOLD_)."""

import os
import platform
import subprocess
import sys

import pytest

from skboost.dask.memory import _environment_thresholds

_CHILD = r"""
import resource, sys
import numpy as np
from skboost.dask.memory import keeps_freed_memory

def churn():
    # a fresh 8 MiB temporary, written and freed, 40 times
    for _ in range(40):
        a = np.empty(1 << 20)
        a[:] = 1.0
        del a

def faults(function):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    function()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

plain = faults(churn)
kept = faults(keeps_freed_memory(churn))
after = faults(churn)
print(plain, kept, after)
"""


def _faults(environ):
    env = dict(os.environ, **environ)
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env,
                         capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


@pytest.mark.skipif(platform.system() != "Linux"
                    or platform.libc_ver()[0] != "glibc",
                    reason="glibc malloc only")
def test_freed_blocks_are_reused_under_dasks_trim_threshold():
    """Oracle: the page faults of a loop of fresh 8 MiB arrays. Under
    Dask's MALLOC_TRIM_THRESHOLD_ each array is a fresh mapping whose
    pages fault in again; in ``keeps_freed_memory`` the freed block is
    reused (the first array's faults only); afterwards the process's own
    setting is back."""
    plain, kept, after = _faults({"MALLOC_TRIM_THRESHOLD_": "65536"})
    assert kept * 10 < plain
    assert kept * 10 < after


def test_nothing_to_do_without_fixed_thresholds():
    assert _environment_thresholds({}) is None
    assert _environment_thresholds({"MALLOC_TRIM_THRESHOLD_": "x"}) is None
    assert _environment_thresholds({"MALLOC_TRIM_THRESHOLD_": "65536"}) == (
        128 * 1024, 65536)
    assert _environment_thresholds({"MALLOC_MMAP_THRESHOLD_": "1048576"}) \
        == (1048576, 128 * 1024)
