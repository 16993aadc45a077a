"""Thread counts: the work thresholds of the kernels' parallel regions, the
per-thread cap, skboost's own OpenMP runtime, and the ThreadTuner that picks
each round's thread count on a busy machine."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from skboost import BoostRegressor
from skboost._openmp_helpers import check_n_threads
from skboost._openmp_runtime import PRIVATE_RUNTIME, SPIN_COUNT
from skboost._parallel import get_thread_cap, set_thread_cap
from skboost._threads import ThreadTuner


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

    def __init__(self, cost, preempted):
        self.cost, self.preempted = cost, preempted
        self.now, self.switches = 0.0, 0
        self.tuner = ThreadTuner(2, clock=lambda: self.now,
                                 preemptions=lambda: self.switches)

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


def test_tuner_without_preemption_counts_does_nothing():
    tuner = ThreadTuner(4, preemptions=lambda: None)
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
