"""How many threads a call runs with: ``n_jobs`` resolved against the CPUs
this process may use.

The count is capped by the CPUs the process can run on (its affinity mask
and a cgroup CPU quota, as in containers and CI runners), not the machine's
core count: more OpenMP threads than CPUs only make the threads wait on each
other. Inside joblib workers and ``threadpoolctl`` limits the OpenMP default
is already limited, and the default ``n_jobs`` follows it.
"""

import collections
import contextlib
import math
import numbers
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ._openmp_helpers import openmp_max_threads
from ._parallel import get_thread_cap, set_thread_cap

__all__ = ["CpuLoadMonitor", "ThreadTuner", "available_cpus",
           "effective_n_threads", "map_columns"]


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


# The cgroup quota as last read, and when (time.monotonic): read at most
# once a second, since reading its files costs more than a serving call's
# whole prediction (about 70 us against 10).
_QUOTA_READ = [None, -float("inf")]
_QUOTA_TTL = 1.0


def _cached_cgroup_cpu_quota():
    now = time.monotonic()
    if now - _QUOTA_READ[1] > _QUOTA_TTL:
        _QUOTA_READ[:] = [_cgroup_cpu_quota(), now]
    return _QUOTA_READ[0]


def available_cpus():
    """CPUs this process may run on: its affinity mask, capped by a cgroup
    CPU quota (read again at most once a second)."""
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n_cpus = os.cpu_count() or 1
    quota = _cached_cgroup_cpu_quota()
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


def _preemptions():
    """Involuntary context switches of the calling thread so far (of the
    whole process where the OS does not count per thread), or None where
    the OS does not report them.

    The calling thread's count separates load well (measured on 2 cores: 5
    to 45 a second during an idle fit, 270 to 700 with another process on
    the cores); the process's does not, as its own threads' wake-ups
    preempt each other (150 to 350 a second on an idle machine)."""
    try:
        import resource
    except ImportError:  # not on Unix
        return None
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    return resource.getrusage(who).ru_nivcsw


def _read_proc_stat(cpus, path="/proc/stat", *, count_nice=True):
    """Seconds the CPUs ``cpus`` (ids) spent busy since boot, from
    ``/proc/stat``: user, system, irq, softirq and steal time (steal: taken
    by other virtual machines), and nice time (processes of lowered
    priority) when ``count_nice``; None where it cannot be read."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    busy = 0
    for line in lines:
        name, _, fields = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit()
                and int(name[3:]) in cpus):
            continue
        values = [int(v) for v in fields.split()]
        # user nice system idle iowait irq softirq steal ...
        busy += values[0] + values[2] + sum(values[5:8])
        if count_nice:
            busy += values[1]
    return busy / ticks


def _others_running(path="/proc/loadavg", own=None):
    """Other processes' threads runnable at this instant (the kernel's
    count of runnable threads, ``/proc/loadavg``, less this process's:
    ``own()``, by default its threads in state R), or None where it cannot
    say (not Linux). The count is the machine's: meaningful when every CPU
    is the process's (``CpuLoadMonitor`` checks)."""
    try:
        with open(path) as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    mine = (own or _own_running_threads)()
    return float(max(0, running - mine))


def _own_running_threads(tasks="/proc/self/task"):
    """This process's threads that are runnable now (at least the calling
    one): OpenMP threads still spinning after a region, reader threads."""
    count = 0
    try:
        names = os.listdir(tasks)
    except OSError:
        return 1
    for name in names:
        try:
            with open(os.path.join(tasks, name, "stat")) as f:
                # "tid (comm) S ...": the state follows the last ")"
                state = f.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        count += state == "R"
    return max(1, count)


def _process_is_niced():
    """Whether this process runs at a lowered priority (its CPU time is
    then counted as nice time in ``/proc/stat``)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0) > 0
    except (AttributeError, OSError):
        return False


class CpuLoadMonitor:
    """How many of this process's CPUs other processes keep busy.

    Compares the CPUs' busy time (``/proc/stat``, for the CPUs in the
    affinity mask) with this process's own CPU time over windows of at
    least ``MIN_WINDOW`` seconds; the difference is the other processes'
    (and other virtual machines') use, in CPUs. Processes of lowered
    priority (``nice``) are not counted, as the scheduler gives their CPU
    to a fit of normal priority. One monitor serves every fit of the
    process and starts when skboost is imported, so a fit started later
    (a script's, a cross-validation loop's, a notebook's) starts from a
    current reading.

    ``/proc/stat`` counts in ticks (10 ms), so a short window reads with
    an error of up to a tick per CPU; a window of ``FIRST_WINDOW`` seconds
    already gives a reading when that error cannot change the count of
    free CPUs (a fit shorter than ``MIN_WINDOW`` still sees a busy core).

    Parameters
    ----------
    read_busy : callable, optional
        Busy seconds of the process's CPUs so far (None: unknown).
    clock, process_time : callable, optional
        Wall time and the process's CPU time, in seconds.
    read_running : callable, optional
        Other threads runnable at this instant (None: unknown), read while
        no window has given a reading.
    """

    # /proc/stat counts in ticks of 10 ms: a window of 0.1 s reads the
    # others' use to about 0.1 CPU
    MIN_WINDOW = 0.1
    FIRST_WINDOW = 0.04
    TICK = 1.0 / (os.sysconf("SC_CLK_TCK")
                  if hasattr(os, "sysconf") else 100)
    # a reading older than this says nothing about now
    MAX_AGE = 2.0

    def __init__(self, read_busy=None, *, clock=time.monotonic,
                 process_time=time.process_time, read_running=None):
        try:
            cpus = os.sched_getaffinity(0)
        except (AttributeError, OSError):
            cpus = set(range(os.cpu_count() or 1))
        self._n_cpus = len(cpus)
        if read_busy is None:
            count_nice = _process_is_niced()  # our own time is nice time
            read_busy = lambda: _read_proc_stat(  # noqa: E731
                cpus, count_nice=count_nice)
        self._read_busy = read_busy
        if read_running is None:
            # the count is the machine's: only when every CPU is ours
            every_cpu = available_cpus() == (os.cpu_count() or 0)
            read_running = _others_running if every_cpu else lambda: None
        self._read_running = read_running
        self._instant_read = None   # (time, others runnable then)
        self._clock = clock
        self._process_time = process_time
        self._lock = threading.Lock()
        self._start = None  # (wall, busy, own) where the window began
        self._others = None  # CPUs used by others over the last window
        self._read_at = None

    def others(self):
        """CPUs other processes used over the latest window, or None when
        there is no recent reading (the window is still short, or the
        system does not report CPU time)."""
        with self._lock:
            now = self._clock()
            if self._start is None or now - self._start[0] > self.MAX_AGE:
                self._begin(now)
            elif now - self._start[0] >= self.FIRST_WINDOW:
                self._close_window(now)
            if self._read_at is None or now - self._read_at > self.MAX_AGE:
                return None
            return self._others

    def _begin(self, now):
        busy = self._read_busy()
        self._start = None if busy is None else (now, busy,
                                                 self._process_time())

    def _close_window(self, now):
        """Read the others' use since the window began; a window shorter
        than ``MIN_WINDOW`` is read only when it is the first and its
        tick error cannot change the count of free CPUs."""
        wall0, busy0, own0 = self._start
        seconds = now - wall0
        if seconds < self.MIN_WINDOW and self._read_at is not None:
            return
        busy, own = self._read_busy(), self._process_time()
        if busy is None:
            self._start = None
            return
        others = max(0.0, ((busy - busy0) - (own - own0)) / seconds)
        if seconds < self.MIN_WINDOW:
            error = self._n_cpus * self.TICK / seconds
            if _free(self._n_cpus, others - error) != _free(
                    self._n_cpus, others + error):
                return  # too close to call yet: the window goes on
        self._others = others
        self._read_at = now
        self._start = (now, busy, own)

    def free_cpus(self, n_cpus):
        """Threads worth running on ``n_cpus`` CPUs now: the CPUs the
        others leave (rounded to the nearest, at least 1), or None
        without a reading. Until a window gives one (the first 0.04 to
        0.1 s after import, or after a pause of more than ``MAX_AGE``),
        the count of runnable processes at this instant stands in."""
        others = self.others()
        if others is None:
            others = self._instant()
        if others is None:
            return None
        return _free(n_cpus, others)

    # an instant's count is kept this long (reading it costs ~0.1 ms)
    INSTANT_AGE = 0.02

    def _instant(self):
        """The runnable count of ``read_running``, read at most every
        ``INSTANT_AGE`` seconds."""
        now = self._clock()
        if (self._instant_read is None
                or now - self._instant_read[0] > self.INSTANT_AGE):
            self._instant_read = (now, self._read_running())
        return self._instant_read[1]


def _median(values):
    """The median of a few numbers (``statistics.median``'s value, without
    importing ``statistics`` and ``fractions`` with skboost: ~1 ms)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _free(n_cpus, others):
    """CPUs of ``n_cpus`` that ``others`` CPUs of use leave, rounded to the
    nearest (at least 1)."""
    return max(1, min(n_cpus, int(math.floor(n_cpus - others + 0.5))))


_MONITOR = CpuLoadMonitor()
_MONITOR.others()  # the first window begins at import


class ThreadTuner:
    """The thread count of each boosting round, chosen by measurement.

    On a busy machine (other processes on the cores) a team of threads waits
    at every barrier for whichever of its threads the scheduler preempted,
    and fewer threads can be faster than many. The tuner watches the
    calling thread's involuntary context switches: on an idle machine there
    are next to none, and it does nothing (every round runs with all threads,
    at no cost). When recent rounds were preempted, it times one round with half
    the threads (a probe) against the median of the recent rounds and
    keeps the faster count; from a reduced count it probes back up now and
    then, since the load may have gone. Probe intervals double while
    probes lose, so a steady state costs little.

    The model never depends on the thread count, only the speed does.

    Parameters
    ----------
    n_threads : int
        The most threads a round may use (the resolved ``n_jobs``).
    clock, preemptions : callable, optional
        Time in seconds, and the process's count of involuntary context
        switches (None: not available); replaceable for tests.
    monitor : CpuLoadMonitor, None or "process", optional
        The other processes' CPU use ("process": the process's monitor);
        each new reading sets the thread count to the CPUs they leave free,
        at once, and the probes stay below that count until the next
        reading (probes down still correct it, e.g. for short bursts of
        load). None: probes only.
    """

    # rounds between probes: first, and at most (doubling in between)
    FIRST_INTERVAL = 2
    MAX_INTERVAL = 64
    # a probe must beat the recent median by this factor to win
    MARGIN = 0.9
    # preemptions per second of a round that mean "busy" (see _preemptions)
    BUSY_RATE = 100.0

    def __init__(self, n_threads, *, clock=time.perf_counter,
                 preemptions=_preemptions, monitor="process"):
        self.n_max = max(1, int(n_threads))
        # "process": the process's monitor, looked up now (tests replace it)
        self._monitor = _MONITOR if monitor == "process" else monitor
        self._load_choice = None  # the count the latest load reading gave
        self.current = self.n_max
        self._clock = clock
        self._preemptions = preemptions
        self._recent = collections.deque(maxlen=3)
        self._busy = collections.deque(maxlen=3)
        self._interval = self.FIRST_INTERVAL
        self._next_probe = self.FIRST_INTERVAL
        self._rounds = 0
        self._warm = False  # the first round pays one-time costs: untimed
        self.history = []  # (threads, seconds) of every timed round

    def next_threads(self):
        """The thread count of the next round."""
        if self.n_max == 1:
            return 1
        self._follow_load()
        if self._rounds < self._next_probe:
            return self.current
        if len(self._recent) < 2:
            return self.current
        if self.current > 1 and sum(self._busy) >= 2:  # not a stray one
            return max(1, self.current // 2)
        # no probe above the CPUs a load reading leaves: the reading
        # follows the load (a new one moves the count up when it goes)
        ceiling = self._load_choice or self.n_max
        if self.current < ceiling:
            return min(ceiling, self.current * 2)
        return self.current

    def _follow_load(self):
        """Move to the CPUs the other processes leave free when a new load
        reading says something new."""
        if self._monitor is None:
            return
        free = self._monitor.free_cpus(self.n_max)
        if free is None:  # no reading (any more): the probes alone decide
            self._load_choice = None
            return
        if free == self._load_choice:
            return
        self._load_choice = free
        if free != self.current:
            self.current = free
            self._recent.clear()
            self._busy.clear()
            self._interval = self.FIRST_INTERVAL
            self._next_probe = self._rounds + 4 * self.FIRST_INTERVAL

    def record(self, threads, seconds, preempted):
        """Account a round run with ``threads`` that took ``seconds`` and
        was preempted ``preempted`` times (None: unknown)."""
        self._rounds += 1
        self.history.append((threads, seconds))
        busy = (preempted is not None and preempted >= 2
                and preempted > self.BUSY_RATE * seconds)
        if threads == self.current:
            self._recent.append(seconds)
            self._busy.append(busy)
            return
        baseline = _median(self._recent)
        if seconds < self.MARGIN * baseline:
            self.current = threads
            self._recent.clear()
            self._recent.append(seconds)
            self._busy.clear()
            self._busy.append(busy)
            # a count that just won is kept a while before the next probe
            self._interval = 4 * self.FIRST_INTERVAL
        else:
            self._interval = min(2 * self._interval, self.MAX_INTERVAL)
        self._next_probe = self._rounds + self._interval

    @contextlib.contextmanager
    def setup(self):
        """Run a fit's set-up (binning, the first margins) with the thread
        count the latest load reading leaves (``with tuner.setup():``);
        untimed, as the set-up is not a round."""
        if self.n_max > 1:
            self._follow_load()
        previous = get_thread_cap()
        set_thread_cap(self.current)
        try:
            yield self.current
        finally:
            set_thread_cap(previous)

    @contextlib.contextmanager
    def round(self):
        """Run a round (``with tuner.round():``) with the thread count
        chosen for it: kernels started from this thread use at most that
        many (``_parallel.set_thread_cap``); the cap is restored after."""
        threads = self.next_threads()
        previous = get_thread_cap()
        set_thread_cap(threads)
        before = self._preemptions()
        start = self._clock()
        try:
            yield threads
        finally:
            seconds = self._clock() - start
            after = self._preemptions()
            set_thread_cap(previous)
        if not self._warm:
            self._warm = True
            return
        preempted = None if before is None else after - before
        self.record(threads, seconds, preempted)


# Rows a column must have before its columns are shared among threads:
# starting a pool and passing the GIL back and forth costs about 1.5 ms,
# and the sketches of 20 columns break even at about 20,000 rows (5,000
# rows: 1.8 ms on one thread, 3.2 ms on two; 100,000 rows: 19 vs 12.5 ms).
MIN_ROWS_TO_SHARE_COLUMNS = 32_768


def map_columns(function, columns, n_threads, *, n_rows=None):
    """``[function(j) for j in columns]``, on up to ``n_threads`` Python
    threads (at most the calling thread's cap, ``_parallel``), or in the
    calling thread when one or when the columns are short (``n_rows``
    below MIN_ROWS_TO_SHARE_COLUMNS; None: long enough): ``function``
    releases the GIL in its loops, and the columns are independent."""
    n_threads = min(max(1, n_threads), get_thread_cap())
    if n_rows is not None and n_rows < MIN_ROWS_TO_SHARE_COLUMNS:
        n_threads = 1
    if n_threads == 1:
        return [function(j) for j in columns]
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        return list(pool.map(function, columns))
