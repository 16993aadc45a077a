"""Run kernel calls in child processes, so that a crash (a segfault, an
abort) fails only its own test case instead of the whole session.

Used by the bad-input tests of the kernels: every invalid input must raise
a ValueError (or TypeError), never crash or read out of bounds. A case's
outcome is the name of the exception it raised, ``"returned"``, or
``"crashed (exit status ...)"``.
"""

import pickle
import subprocess
import sys

_RUNNER = r"""
import importlib, importlib.util, pickle, sys, types
# Load the compiled kernels without the package's __init__ (fast start).
root = importlib.util.find_spec("skboost").submodule_search_locations[0]
for name, path in (("skboost", root), ("skboost.tree", root + "/tree")):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
kind, prelude, cases = pickle.load(sys.stdin.buffer)
for i in range(int(sys.argv[1]), len(cases)):
    try:
        if kind == "call":
            module, function, args, kwargs = cases[i]
            getattr(importlib.import_module(module), function)(*args, **kwargs)
        else:
            exec(prelude + cases[i], {})
        outcome = "returned"
    except Exception as exc:
        outcome = type(exc).__name__
    print(i, outcome, flush=True)
"""


def _outcomes(kind, prelude, cases):
    payload = pickle.dumps((kind, prelude, cases))
    outcomes = {}
    start = 0
    while start < len(cases):
        proc = subprocess.run([sys.executable, "-c", _RUNNER, str(start)],
                              input=payload, capture_output=True, timeout=120)
        for line in proc.stdout.decode().splitlines():
            i, outcome = line.split(" ", 1)
            outcomes[int(i)] = outcome
        while start in outcomes:
            start += 1
        if start < len(cases):  # the case at `start` killed the process
            outcomes[start] = f"crashed (exit status {proc.returncode})"
            start += 1
    return [outcomes[i] for i in range(len(cases))]


def call_outcomes(calls):
    """Outcome of each ``(module, function, args, kwargs)`` call."""
    return _outcomes("call", "", calls)


def snippet_outcomes(prelude, cases):
    """Outcome of running the code ``prelude + case`` for each case."""
    return _outcomes("snippet", prelude, cases)


def snippet_input_tests(prelude, bad_inputs, valid):
    """The two tests of a kernel module's inputs, for assignment at module
    level::

        test_valid_arguments_run, test_bad_inputs_raise_value_error = \\
            snippet_input_tests(PRELUDE, BAD_INPUTS, VALID)

    ``valid`` cases (the baselines: without the defect the call works) must
    return; every ``bad_inputs`` case must raise ValueError. All cases run
    once per test process, in child processes.
    """
    import functools

    import pytest

    names = list(bad_inputs) + list(valid)

    @functools.lru_cache(maxsize=None)
    def outcomes():
        cases = [{**bad_inputs, **valid}[name] for name in names]
        return dict(zip(names, snippet_outcomes(prelude, cases)))

    @pytest.mark.parametrize("case", list(valid))
    def test_valid_arguments_run(case):
        assert outcomes()[case] == "returned"

    @pytest.mark.parametrize("case", list(bad_inputs))
    def test_bad_inputs_raise_value_error(case):
        assert outcomes()[case] == "ValueError"

    return test_valid_arguments_run, test_bad_inputs_raise_value_error


_WORKER = r"""
import pickle, struct, sys, traceback
sys.setrecursionlimit(10000)
namespace = {}
exec(pickle.load(sys.stdin.buffer), namespace)   # the prelude: defines run()
out = sys.stdout.buffer
while True:
    header = sys.stdin.buffer.read(8)
    if len(header) < 8:
        break
    case = pickle.loads(sys.stdin.buffer.read(struct.unpack("<q", header)[0]))
    try:
        result = ("returned", namespace["run"](case))
    except Exception as exc:
        result = ("raised", (type(exc).__name__, str(exc)[:500],
                             traceback.format_exc()[-2000:]))
    payload = pickle.dumps(result)
    out.write(struct.pack("<q", len(payload)) + payload)
    out.flush()
"""


class CaseWorker:
    """A child process that runs cases one after another with the function
    ``run(case)`` defined by ``prelude`` (Python source), restarted after a
    case kills it: a crash or a hang fails its case, not the test runner.

    ``outcome(case)`` is ``("returned", value)``, ``("raised", (name,
    message, traceback))``, ``("crashed", exit status)`` or ``("hung",
    seconds)``.
    """

    def __init__(self, prelude, timeout=60.0, env=None):
        self.prelude = prelude
        self.timeout = timeout
        self.env = env
        self.proc = None
        self.cases_run = 0

    def _start(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=self.env)
        self.proc.stdin.write(pickle.dumps(self.prelude))
        self.proc.stdin.flush()

    def outcome(self, case):
        import select
        import struct

        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.cases_run += 1
        payload = pickle.dumps(case)
        try:
            self.proc.stdin.write(struct.pack("<q", len(payload)) + payload)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            self.close()
            return ("hung", self.timeout)
        header = self.proc.stdout.read(8)
        if len(header) < 8:
            return self._died()
        size = struct.unpack("<q", header)[0]
        return pickle.loads(self.proc.stdout.read(size))

    def _died(self):
        status = self.proc.wait()
        self.proc = None
        return ("crashed", status)

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
