"""Freed memory kept for reuse while a shard works on a Dask worker.

Dask's nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_=65536``
(the ``distributed.nanny.pre-spawn-environ`` setting, so that workers give
freed memory back to the system). Under glibc, setting that variable also
switches off malloc's dynamic mmap threshold: every block above 128 KiB
is then a fresh ``mmap`` and goes back with ``munmap`` when freed, so each
temporary array of a round (gradients, row masks, sketch buffers, the
kernels' scratch) faults its pages in again on first touch. On one worker
that made a 200,000-row fit about 1.5x slower than the same fit in a
plain process, and the merged-sketch summaries 3x slower.

While a shard's method runs, ``keeps_freed_memory`` raises the two
thresholds (blocks up to 32 MiB come from the heap and freed memory stays
there for the next round) and afterwards restores the worker's own values
and trims, so between calls the worker behaves as Dask configured it.
This only happens under glibc, and only when the environment fixed the
thresholds (otherwise malloc already keeps its freed memory).
"""

import ctypes
import functools
import os
import platform
import threading

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's defaults, and the largest mmap threshold it accepts on 64-bit
DEFAULT_MMAP_THRESHOLD = 128 * 1024
DEFAULT_TRIM_THRESHOLD = 128 * 1024
WORKING_MMAP_THRESHOLD = 32 * 1024 * 1024
WORKING_TRIM_THRESHOLD = 1024 * 1024 * 1024


def _glibc():
    """The C library when it is glibc with ``mallopt``, else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


def _environment_thresholds(environ):
    """The (mmap, trim) thresholds the environment fixed for this process,
    or None when it fixed neither (glibc then adapts them itself, keeping
    freed blocks as the program's allocations grow)."""
    names = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
    if not any(name in environ for name in names):
        return None
    try:
        mmap = int(environ.get(names[0], DEFAULT_MMAP_THRESHOLD))
        trim = int(environ.get(names[1], DEFAULT_TRIM_THRESHOLD))
    except ValueError:
        return None   # glibc ignores what it cannot parse: leave it alone
    return mmap, trim


class _Thresholds:
    """Working thresholds in force while at least one method runs."""

    def __init__(self, libc, restored):
        self.libc = libc
        self.restored = restored    # (mmap, trim) the environment set
        self.lock = threading.Lock()
        self.active = 0

    def enter(self):
        with self.lock:
            self.active += 1
            if self.active == 1:
                self.libc.mallopt(M_MMAP_THRESHOLD, WORKING_MMAP_THRESHOLD)
                self.libc.mallopt(M_TRIM_THRESHOLD, WORKING_TRIM_THRESHOLD)

    def exit(self):
        with self.lock:
            self.active -= 1
            if self.active == 0:
                mmap, trim = self.restored
                self.libc.mallopt(M_MMAP_THRESHOLD, mmap)
                self.libc.mallopt(M_TRIM_THRESHOLD, trim)
                self.libc.malloc_trim(0)


_state = None
_state_lock = threading.Lock()


def _thresholds():
    """This process's ``_Thresholds`` (None where there is nothing to do)."""
    global _state
    with _state_lock:
        if _state is None:
            libc = _glibc()
            restored = _environment_thresholds(os.environ)
            _state = (False if libc is None or restored is None
                      else _Thresholds(libc, restored))
        return _state or None


def keeps_freed_memory(method):
    """Run ``method`` with malloc keeping its freed blocks for reuse (see
    the module docstring); the process's own thresholds come back after."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        state = _thresholds()
        if state is None:
            return method(*args, **kwargs)
        state.enter()
        try:
            return method(*args, **kwargs)
        finally:
            state.exit()
    return wrapper
