"""How many threads a parallel region is worth (implemented in _parallel.pyx).

Every parallel region ends at a barrier where the team's threads wait for
each other. On an idle machine that costs microseconds; on a busy one, a
thread the scheduler has preempted keeps the others waiting for a whole time
slice (milliseconds). So a region is split across threads only when each
thread gets enough work to make that risk small: small nodes, small levels
and small data run on the calling thread alone, with no barrier at all.

Work is counted in elementary updates (one histogram addition, one row
moved, one row's gradient): about a nanosecond each on these machines.

On top of that, the calling thread's thread cap (``set_thread_cap``, set by
the boosting loop's ``ThreadTuner`` when it measures that fewer threads run
faster on a busy machine) bounds every region. Results never depend on the
thread count, so neither changes anything but speed.
"""

from libc.stdint cimport int64_t

cdef enum:
    # Updates a thread must get before a region is split: ~50-100 us of
    # work, against ~2 us for a region and its barrier on an idle machine
    # (benchmarks/contention.py).
    MIN_WORK_PER_THREAD = 1 << 16

cdef int threads_for_work(int n_threads, int64_t work) noexcept nogil
cdef int capped(int n_threads) noexcept nogil
