"""The benchmarks' run order (``benchmarks/_common.interleaved_order``):
every contender runs once per repeat, and no contender holds the same
place in every repeat (the first place of a round ran slower on identical
code: a fixed order charged it to one library)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import interleaved_order  # noqa: E402


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_each_repeat_runs_every_contender_once(n):
    for repeat_index in range(4):
        assert sorted(interleaved_order(n, repeat_index)) == list(range(n))


@pytest.mark.parametrize("n", [2, 3, 6])
def test_places_alternate_between_repeats(n):
    first, second = (list(interleaved_order(n, i)) for i in (0, 1))
    assert first == list(range(n))      # the given order first
    for k in range(n):
        # a contender's two places mirror each other: first <-> last
        assert first.index(k) + second.index(k) == n - 1
