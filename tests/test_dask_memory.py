"""skboost.dask.memory: freed memory kept for reuse while a shard works
on a Dask worker (whose nanny sets MALLOC_TRIM_THRESHOLD_)."""

import os
import platform
import resource
import subprocess
import sys

import pytest

from skboost.dask.memory import _environment_thresholds

_CHILD = r"""
import ctypes
# 4 KiB pages only (PR_SET_THP_DISABLE): with transparent huge pages a
# fresh 8 MiB mapping faults in 2 MiB at a time, whenever the kernel has
# huge pages free, and the counts below stop measuring reuse
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
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


# a Dask fit in a process whose malloc thresholds are fixed (or not) by
# the environment: the page faults of a fit of 16 rounds and of 48 (each
# call of the shards grows up to 16 rounds)
_FIT_CHILD = r"""
import ctypes
# 4 KiB pages only (PR_SET_THP_DISABLE): with transparent huge pages a
# fresh 8 MiB mapping faults in 2 MiB at a time, whenever the kernel has
# huge pages free, and the counts below stop measuring reuse
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
import resource, warnings
warnings.filterwarnings("ignore")
import numpy as np
import dask.array as da
from distributed import Client, LocalCluster
from skboost.dask import DaskBoostRegressor

rng = np.random.default_rng(0)
X = rng.normal(size=(100_000, 8)).astype(np.float32)
y = X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=X.shape[0])

def faults(cluster_X, cluster_y, n_rounds):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    DaskBoostRegressor(n_estimators=n_rounds, max_depth=6,
                       n_jobs=1).fit(cluster_X, cluster_y)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, Client(cluster):
    dX = da.from_array(X, chunks=50_000)
    dy = da.from_array(y, chunks=50_000)
    faults(dX, dy, 16)
    print(faults(dX, dy, 16), faults(dX, dy, 48))
"""


def _fit_faults(environ):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_")}
    env.update(environ)
    out = subprocess.run([sys.executable, "-c", _FIT_CHILD], env=env,
                         capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()[-2:]]


@pytest.mark.skipif(platform.system() != "Linux"
                    or platform.libc_ver()[0] != "glibc",
                    reason="glibc malloc only")
def test_rounds_keep_freed_memory_under_dasks_trim_threshold():
    """The shards' rounds run with freed memory kept (a merge once left
    ``grow_rounds`` without it: every level's arrays faulted in again).
    Oracle: the same fits in a process whose malloc adapts its own
    thresholds. There, 32 more rounds cost few page faults (freed blocks
    are reused); under Dask's MALLOC_TRIM_THRESHOLD_ the shard's calls
    trim when they end, so each of the two extra calls faults its working
    set in once (a few hundred pages for 100,000 rows), not once per
    array of every level of every tree (tens of thousands)."""
    pytest.importorskip("distributed")
    plain_16, plain_48 = _fit_faults({})
    fixed_16, fixed_48 = _fit_faults({"MALLOC_TRIM_THRESHOLD_": "65536"})
    extra_plain, extra_fixed = plain_48 - plain_16, fixed_48 - fixed_16
    # the working set of a call: X's codes (both layouts), gradients,
    # margins, the row partition, the histogram pools: < 8 MB of pages
    per_call = (8 << 20) // resource.getpagesize()
    assert extra_fixed <= extra_plain + 2 * per_call, (
        extra_plain, extra_fixed)


def test_nothing_to_do_without_fixed_thresholds():
    assert _environment_thresholds({}) is None
    assert _environment_thresholds({"MALLOC_TRIM_THRESHOLD_": "x"}) is None
    assert _environment_thresholds({"MALLOC_TRIM_THRESHOLD_": "65536"}) == (
        128 * 1024, 65536)
    assert _environment_thresholds({"MALLOC_MMAP_THRESHOLD_": "1048576"}) \
        == (1048576, 128 * 1024)
