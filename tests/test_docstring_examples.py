"""The examples in the public docstrings (``>>>`` lines, shown on the API
pages) run and print what they say."""

import doctest
import importlib

import pytest

import skboost

MODULES = ["skboost._model.booster", "skboost.plotting", "skboost.metrics",
           "skboost.callback"]


def _public_objects():
    objects = [getattr(skboost, name) for name in skboost.__all__]
    for name in MODULES:
        objects.append(importlib.import_module(name))
    return objects


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = {}
    for obj in _public_objects():
        for test in finder.find(obj):
            if test.examples:
                tests[test.name] = test
    return [tests[name] for name in sorted(tests)]


DOCTESTS = _doctests()


def test_the_estimators_have_examples():
    names = {test.name.split(".")[-1] for test in DOCTESTS}
    assert set(skboost.__all__) <= names, names


@pytest.mark.parametrize("test", DOCTESTS, ids=lambda test: test.name)
def test_docstring_example(test):
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=lambda text: pytest.fail(text, pytrace=False))
    assert runner.failures == 0
