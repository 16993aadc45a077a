"""Thread counts: the work thresholds of the kernels' parallel regions, the
per-thread cap, skboost's own OpenMP runtime, and the ThreadTuner that picks
each round's thread count on a busy machine."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from skboost import BoostRegressor
from skboost._openmp_helpers import check_n_threads
from skboost._openmp_runtime import PRIVATE_RUNTIME, SPIN_COUNT
from skboost._parallel import get_thread_cap, set_thread_cap
from skboost._threads import (MIN_ROWS_TO_SHARE_COLUMNS, CpuLoadMonitor,
                              ThreadTuner, _median, _read_proc_stat,
                              map_columns)


def _regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    return X, X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=n)


# ------------------------------------------------------------- the cap


def test_thread_cap_bounds_every_kernel_call_and_is_per_thread():
    assert check_n_threads(2) == 2
    set_thread_cap(1)
    try:
        assert check_n_threads(8) == 1
        seen = []
        other = threading.Thread(target=lambda: seen.append(get_thread_cap()))
        other.start()
        other.join()
        assert seen[0] > 1_000_000  # another thread has no cap
    finally:
        set_thread_cap(1 << 30)
    with pytest.raises(ValueError, match="thread cap"):
        set_thread_cap(0)


def test_fit_restores_the_cap_and_the_model_does_not_depend_on_it():
    X, y = _regression()
    reference = BoostRegressor(n_estimators=6, n_jobs=1).fit(X, y).predict(X)
    set_thread_cap(1 << 30)
    est = BoostRegressor(n_estimators=6, n_jobs=2).fit(X, y)
    assert get_thread_cap() == 1 << 30
    np.testing.assert_array_equal(est.predict(X), reference)


# ------------------------------------------------------------- the tuner


class _Simulated:
    """A machine where a round takes ``cost[threads]`` seconds and shows
    ``preempted`` involuntary switches, driven through ThreadTuner.round."""

    def __init__(self, cost, preempted, monitor=None):
        self.cost, self.preempted = cost, preempted
        self.now, self.switches = 0.0, 0
        self.tuner = ThreadTuner(2, clock=lambda: self.now,
                                 preemptions=lambda: self.switches,
                                 monitor=monitor)

    def run(self, rounds):
        used = []
        for _ in range(rounds):
            with self.tuner.round() as threads:
                assert get_thread_cap() == threads
                self.now += self.cost[threads]
                self.switches += self.preempted
            used.append(threads)
        return used


def test_tuner_on_an_idle_machine_never_leaves_all_threads():
    """No preemptions: no probe at all, every round with every thread."""
    machine = _Simulated({1: 1.0, 2: 0.6}, preempted=0)
    assert machine.run(200) == [2] * 200


def test_tuner_on_a_busy_machine_moves_to_the_faster_count():
    """Preempted rounds where one thread is faster: the tuner moves to one
    thread after its first probe and stays there but for a few probes back
    up, at doubling intervals."""
    machine = _Simulated({1: 1.0, 2: 1.6}, preempted=500)
    used = machine.run(100)
    assert used[:4] == [2, 2, 2, 1]
    assert all(t == 1 for t in used[4:12])
    assert used[4:].count(2) <= 6  # probes up: about log2(100 / 2)
    # and the cost is close to always using one thread
    assert sum(machine.cost[t] for t in used) < 1.1 * 100 * 1.0


def test_tuner_keeps_all_threads_when_they_are_faster_even_if_busy():
    machine = _Simulated({1: 1.0, 2: 0.7}, preempted=500)
    used = machine.run(100)
    assert used.count(1) <= 6
    assert used[-1] == 2


def test_tuner_goes_back_up_when_the_load_goes():
    machine = _Simulated({1: 1.0, 2: 1.6}, preempted=500)
    assert machine.run(20)[-1] == 1
    machine.cost, machine.preempted = {1: 1.0, 2: 0.55}, 0
    used = machine.run(80)
    assert used[-1] == 2 and used[-20:] == [2] * 20


class _FakeMonitor:
    """The CPUs a load reading leaves free, set by the test."""

    def __init__(self, free=None):
        self.free = free

    def free_cpus(self, n_cpus):
        return None if self.free is None else min(self.free, n_cpus)


def test_tuner_follows_a_load_reading_at_once():
    """A reading that another process holds a CPU moves the very next round
    to one thread, before any preempted round is seen."""
    monitor = _FakeMonitor()
    machine = _Simulated({1: 1.0, 2: 1.6}, preempted=0, monitor=monitor)
    assert machine.run(3) == [2, 2, 2]
    monitor.free = 1
    used = machine.run(20)
    assert used[0] == 1 and used.count(2) <= 2   # a probe or two back up
    monitor.free = 2   # the load went: back to every thread at once
    assert machine.run(5)[0] == 2


def test_setup_runs_with_the_threads_a_load_reading_leaves():
    """A fit's set-up (binning, first margins) runs before any round: it
    takes its thread count from the load reading, and the cap is restored
    after; the first round then starts from the same count."""
    monitor = _FakeMonitor()
    monitor.free = 1
    tuner = ThreadTuner(2, preemptions=lambda: 0, monitor=monitor)
    before = get_thread_cap()
    with tuner.setup() as threads:
        assert threads == 1 and get_thread_cap() == 1
    assert get_thread_cap() == before
    assert tuner.next_threads() == 1
    monitor.free = None   # no reading: every thread
    with ThreadTuner(2, monitor=monitor).setup() as threads:
        assert threads == 2


def test_map_columns_follows_the_cap_and_keeps_the_order():
    """``map_columns`` (the sketches and presorts of a fit's columns) gives
    the results in column order, runs in the calling thread under a cap of
    one, and on a pool of worker threads otherwise."""
    def where(j):
        return j * j, threading.get_ident()

    main = threading.get_ident()
    set_thread_cap(1)
    try:
        results = map_columns(where, range(7), 4)
    finally:
        set_thread_cap(1 << 30)
    assert [r for r, _ in results] == [j * j for j in range(7)]
    assert {ident for _, ident in results} == {main}
    results = map_columns(where, range(7), 2)
    assert [r for r, _ in results] == [j * j for j in range(7)]
    assert main not in {ident for _, ident in results}
    # short columns stay in the calling thread; long ones are shared
    short = map_columns(where, range(7), 2,
                        n_rows=MIN_ROWS_TO_SHARE_COLUMNS - 1)
    assert {ident for _, ident in short} == {main}
    long = map_columns(where, range(7), 2, n_rows=MIN_ROWS_TO_SHARE_COLUMNS)
    assert main not in {ident for _, ident in long}


def test_no_probe_above_a_load_reading():
    """While a reading says another process holds a CPU, no round probes
    more threads than the reading leaves (a probe costs a slow round on a
    busy core); a reading that the load went moves the count up at once,
    and without a reading the probes alone decide again."""
    monitor = _FakeMonitor(free=1)
    machine = _Simulated({1: 1.0, 2: 0.6}, preempted=0, monitor=monitor)
    assert machine.run(40) == [1] * 40
    monitor.free = 2
    assert machine.run(5) == [2] * 5
    monitor.free = None  # no reading: back to the probes, still at 2
    assert machine.run(5) == [2] * 5


def test_probes_down_below_a_load_reading():
    """A reading leaves both CPUs free, but the rounds are preempted and one
    thread is faster (a burst the reading has not seen yet): the probes
    move the count down all the same."""
    monitor = _FakeMonitor(free=2)
    machine = _Simulated({1: 1.0, 2: 1.6}, preempted=500, monitor=monitor)
    used = machine.run(40)
    assert used[-10:] == [1] * 10


def test_cpu_load_monitor_arithmetic():
    """Others' CPUs = busy CPU time of the machine's CPUs minus this
    process's, over the window."""
    state = {"now": 0.0, "busy": 100.0, "own": 10.0}
    monitor = CpuLoadMonitor(lambda: state["busy"],
                             clock=lambda: state["now"],
                             process_time=lambda: state["own"])
    assert monitor.others() is None            # the window begins
    state.update(now=0.02, busy=100.04, own=10.02)
    assert monitor.others() is None            # too short to say
    # 0.5 s: the CPUs were busy 1.6 s, of which 0.9 s was this process
    state.update(now=0.5, busy=101.6, own=10.9)
    assert monitor.others() == pytest.approx((1.6 - 0.9) / 0.5)
    assert monitor.free_cpus(2) == 1      # 2 - 1.4 = 0.6, rounds to 1
    state.update(now=1.0, busy=102.6, own=11.85)   # others 0.1 CPU
    assert monitor.free_cpus(2) == 2
    assert monitor.free_cpus(8) == 8
    state.update(now=10.0)                 # an old reading says nothing
    assert monitor.others() is None


def test_cpu_load_monitor_reads_a_short_first_window_when_unambiguous():
    """A first window shorter than MIN_WINDOW gives a reading only when the
    tick error (a tick per CPU) cannot change the count of free CPUs."""
    tick, n_cpus = CpuLoadMonitor.TICK, len(os.sched_getaffinity(0))
    error = n_cpus * tick / 0.05
    state = {"now": 0.0, "busy": 100.0, "own": 10.0}
    monitor = CpuLoadMonitor(lambda: state["busy"],
                             clock=lambda: state["now"],
                             process_time=lambda: state["own"])
    assert monitor.others() is None            # the window begins
    # 0.05 s, others at a whole CPU: clear when the error stays under 0.5
    state.update(now=0.05, busy=100.0 + 0.05 * n_cpus, own=10.0 + 0.05 * (n_cpus - 1))
    if error < 0.5:
        assert monitor.others() == pytest.approx(1.0)
    else:
        assert monitor.others() is None
    # at the rounding boundary a short window waits for MIN_WINDOW
    state = {"now": 0.0, "busy": 100.0, "own": 10.0}
    monitor = CpuLoadMonitor(lambda: state["busy"],
                             clock=lambda: state["now"],
                             process_time=lambda: state["own"])
    monitor.others()
    others = n_cpus - 1.5   # free CPUs: 1 or 2, by the rounding
    state.update(now=0.05, busy=100.0 + 0.05 * others, own=10.0)
    assert monitor.others() is None
    state.update(now=0.1, busy=100.0 + 0.1 * others, own=10.0)
    assert monitor.others() == pytest.approx(others)


def test_without_a_window_reading_the_runnable_count_stands_in():
    """Until a window closes (just after import, or when the last reading
    is too old), ``free_cpus`` reads the runnable threads of this instant;
    a window's reading replaces it."""
    state = {"now": 0.0, "busy": 100.0, "own": 10.0, "running": 2.0}
    monitor = CpuLoadMonitor(lambda: state["busy"],
                             clock=lambda: state["now"],
                             process_time=lambda: state["own"],
                             read_running=lambda: state["running"])
    assert monitor.free_cpus(2) == 1          # two others runnable now
    state["running"] = 0.0
    assert monitor.free_cpus(2) == 1          # the instant is kept 20 ms
    state["now"] = 0.03
    assert monitor.free_cpus(2) == 2
    state.update(now=0.5, busy=101.0, own=10.9, running=5.0)
    assert monitor.free_cpus(2) == 2          # the window: others 0.2 CPU
    state.update(now=10.0, running=2.0)       # stale: the instant again
    assert monitor.free_cpus(2) == 1
    silent = CpuLoadMonitor(lambda: None, read_running=lambda: None)
    assert silent.free_cpus(2) is None


def test_others_running_reads_the_runnable_count(tmp_path, monkeypatch):
    import skboost._threads as threads_module
    path = tmp_path / "loadavg"
    path.write_text("0.52 0.58 0.59 3/467 12345\n")
    assert threads_module._others_running(path, own=lambda: 1) == 2.0
    assert threads_module._others_running(path, own=lambda: 2) == 1.0
    assert threads_module._own_running_threads() >= 1   # the caller
    path.write_text("garbage\n")
    assert threads_module._others_running(path) is None
    assert threads_module._others_running(tmp_path / "missing") is None
    # the count is the machine's: a monitor of some of its CPUs does not
    # read it
    monkeypatch.setattr(threads_module, "available_cpus",
                        lambda: (os.cpu_count() or 1) + 1)
    monitor = threads_module.CpuLoadMonitor(lambda: None)
    assert monitor.free_cpus(2) is None


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"),
                    reason="reads /proc/loadavg (Linux)")
def test_others_running_sees_a_spinning_process():
    """A process spinning on the CPU is always runnable: the instant's
    count shows at least one other thread while it runs."""
    from skboost._threads import _others_running, available_cpus
    if available_cpus() != os.cpu_count():
        pytest.skip("the process may not use every CPU")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)   # started and spinning
        assert _others_running() >= 1
    finally:
        spinner.kill()
        spinner.wait()


def test_read_proc_stat_sums_the_given_cpus(tmp_path):
    path = tmp_path / "stat"
    path.write_text("cpu  9 9 9 9 9 9 9 9 0 0\n"
                    "cpu0 1 2 3 100 50 4 5 6 0 0\n"
                    "cpu1 10 20 30 100 50 40 50 60 0 0\n"
                    "intr 1 2 3\n")
    ticks = os.sysconf("SC_CLK_TCK")
    assert _read_proc_stat({0}, path) == pytest.approx(21 / ticks)
    assert _read_proc_stat({0, 1}, path) == pytest.approx(231 / ticks)
    # nice time (processes of lowered priority) left out on request
    assert _read_proc_stat({0, 1}, path, count_nice=False) == \
        pytest.approx((231 - 22) / ticks)
    assert _read_proc_stat({0}, tmp_path / "missing") is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"),
                    reason="reads /proc/stat (Linux)")
def test_cpu_load_monitor_sees_a_busy_process():
    """A real process spinning on one of our CPUs shows as at least half
    a CPU of others' use (it takes a whole one; the machine may be busier
    still, never less busy)."""
    cpu = min(os.sched_getaffinity(0))
    spinner = subprocess.Popen(
        [sys.executable, "-c",
         f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    try:
        time.sleep(0.3)   # started and spinning
        monitor = CpuLoadMonitor(clock=time.monotonic)
        assert monitor.others() is None
        time.sleep(0.5)
        assert monitor.others() >= 0.5
    finally:
        spinner.kill()
        spinner.wait()


def test_tuner_without_preemption_counts_does_nothing():
    tuner = ThreadTuner(4, preemptions=lambda: None, monitor=None)
    for _ in range(20):
        with tuner.round() as threads:
            assert threads == 4


# ------------------------------------------------------------- runtime


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="the private OpenMP runtime is built on Linux")
def test_kernels_use_skboosts_own_openmp_runtime():
    """The kernels are linked to .libs/libgomp-skboost.so.1, loaded once
    with skboost's spin count; the environment is left as it was."""
    assert os.path.exists(PRIVATE_RUNTIME)
    code = (
        "import os, skboost\n"
        "from skboost.tree import _histogram\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('libgomp-skboost.so.1' in maps, 'GOMP_SPINCOUNT' in os.environ)\n"
        "from threadpoolctl import threadpool_info\n"
        "print(any(i['filepath'].endswith('libgomp-skboost.so.1') and\n"
        "          i['user_api'] == 'openmp' for i in threadpool_info()))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "True"]
    assert 0 < SPIN_COUNT < 300_000  # shorter than libgomp's default


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="the private OpenMP runtime is built on Linux")
def test_the_spin_count_reaches_the_private_runtime_only():
    """Within skboost's runtime, a region's worker threads wait for the
    spin count skboost set; a user's OMP_WAIT_POLICY is kept. Read back
    through the runtime's own display of its settings (OMP_DISPLAY_ENV)."""
    code = "import skboost\n"
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    shown = subprocess.run(
        [sys.executable, "-c", code], env={**base, "OMP_DISPLAY_ENV": "verbose"},
        capture_output=True, text=True, check=True).stderr
    assert f"GOMP_SPINCOUNT = '{SPIN_COUNT}'" in shown
    shown = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, "OMP_DISPLAY_ENV": "verbose", "OMP_WAIT_POLICY": "active"},
        capture_output=True, text=True, check=True).stderr
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in shown
    assert f"GOMP_SPINCOUNT = '{SPIN_COUNT}'" not in shown


@pytest.mark.parametrize("values", [[3.0], [2.0, 1.0], [0.5, 0.1, 0.3],
                                    [4.0, 1.0, 3.0, 2.0], [1.0, 1.0, 7.0]])
def test_median_is_statistics_median(values):
    """The tuner's median of recent rounds is ``statistics.median``'s."""
    import statistics
    assert _median(values) == statistics.median(values)
