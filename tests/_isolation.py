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
