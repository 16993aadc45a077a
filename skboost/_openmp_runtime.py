"""skboost's own OpenMP runtime, loaded before any kernel, with short waits.

Between parallel regions and at their barriers, GCC's OpenMP runtime keeps
idle threads spinning for a long time (about 300,000 polls) before they
sleep. On an idle machine that saves a wake-up; on a busy one (other
processes, a grid search, a notebook next to other jobs) a spinning thread
burns the CPU share the scheduler would give the thread everyone waits for,
and a fit can become tens of times slower. The runtime reads its spin count
once, from the environment, when it is loaded.

The build gives the kernels a private copy of the runtime
(``.libs/libgomp-skboost.so.1``, see setup.py), so skboost can set that
count for its own thread pool alone: this module loads the copy with
``GOMP_SPINCOUNT`` at SPIN_COUNT, then puts the environment back as it was.
The runtime other libraries share (LightGBM's, for instance) is untouched.
A user who sets ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` keeps their
setting. Without the private copy (a build without patchelf, or not on
Linux), nothing is done and the kernels use the shared runtime.
"""

import ctypes
import os

__all__ = ["SPIN_COUNT", "PRIVATE_RUNTIME", "load_private_runtime"]

# Polls before an idle thread sleeps: enough to bridge the gaps between the
# regions of a tree level (the Python between two kernels, up to a few
# hundred microseconds) on an idle machine, a tenth of libgomp's default so
# that a busy machine does not collapse (benchmarks/contention.py; a busy
# machine's fit also drops to fewer threads: ThreadTuner). At 3,000 polls
# the threads slept between most regions and every region paid a wake-up:
# bench_categorical's fit ran on ~1.65 cores and took ~10-15% longer.
SPIN_COUNT = 30000

PRIVATE_RUNTIME = os.path.join(os.path.dirname(__file__), ".libs",
                               "libgomp-skboost.so.1")

_USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def load_private_runtime(path=PRIVATE_RUNTIME):
    """Load skboost's OpenMP runtime (once) and return its handle, or None
    when the build did not make one.

    Loaded with RTLD_LOCAL: it serves the kernels linked to it by name and
    never stands in for another library's runtime.
    """
    if not os.path.exists(path):
        return None
    if any(name in os.environ for name in _USER_SETTINGS):
        return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    finally:
        del os.environ["GOMP_SPINCOUNT"]


_runtime = load_private_runtime()
