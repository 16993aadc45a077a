"""Exact sums of float64 values (``skboost/_exact_sums.py``), the sums
over every row that objectives gather from the parts of a fit (Dask
shards).

Oracles: ``fractions.Fraction`` arithmetic (exact), ``math.fsum`` (the
correctly rounded sum), and the sums of the parts added as integers.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from skboost._exact_sums import SCALE_BITS, add_sums, exact_sums, to_float


def _wide_values(rng, n):
    """Values over the whole float64 range, subnormals and zeros too."""
    values = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, size=n)
    values[:4] = [5e-324, -2.5e-320, 0.0, -0.0]
    return values


@pytest.mark.parametrize("seed", range(5))
def test_sum_is_exact_and_rounded_once(seed):
    rng = np.random.default_rng(seed)
    values = _wide_values(rng, 500)
    (total,) = exact_sums(values)
    assert Fraction(total, 1 << SCALE_BITS) == sum(map(Fraction, values))
    assert to_float([total])[0] == math.fsum(values)


def test_parts_add_to_the_whole_in_any_split():
    rng = np.random.default_rng(7)
    values = rng.normal(size=(300, 3)) * [1.0, 1e-8, 1e12]
    whole = exact_sums(values)
    for cuts in ([150], [1, 2, 299], [100, 200]):
        parts = [exact_sums(p) for p in np.split(values, cuts)]
        assert add_sums(parts) == whole
        assert add_sums(parts[::-1]) == whole
    # a float sum in another order may differ; the exact one cannot
    assert np.array_equal(to_float(whole),
                          [math.fsum(values[:, k]) for k in range(3)])


def test_many_large_mantissas_stay_exact():
    """Sums beyond 2**53 of the per-exponent bins (the two halves keep
    every bin an exact integer)."""
    values = np.full(70_000, 1.0 - 2.0 ** -53)   # every mantissa bit set
    (total,) = exact_sums(values)
    assert Fraction(total, 1 << SCALE_BITS) == 70_000 * Fraction(values[0])


def test_non_finite_and_empty_columns():
    sums = exact_sums(np.array([[1.0, np.inf], [2.0, 1.0]]))
    assert sums[0] == 3 << SCALE_BITS
    assert math.isnan(sums[1])
    with_more = add_sums([sums, exact_sums(np.ones((1, 2)))])
    assert math.isnan(to_float(with_more)[1])
    assert exact_sums(np.zeros(0)) == [0]
