"""The one-pass bounds of the round's gradient check
(``_objectives.largest_magnitude`` and ``pair_magnitudes``, used by
``limits.check_gradients``) against numpy's max of the absolute values,
and ``FixedPointGradients`` taking the check's maxima against its own
pass."""

import numpy as np
import pytest

from skboost._model.limits import check_gradients
from skboost._objectives import largest_magnitude, pair_magnitudes
from skboost.tree._histogram import FixedPointGradients


@pytest.mark.parametrize("n", [0, 1, 65535, 65536, 200_001])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_equals_numpy_max_abs(n, n_threads):
    rng = np.random.default_rng(n)
    values = (rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)).astype(
        np.float32)
    expected = float(np.max(np.abs(values))) if n else 0.0
    assert largest_magnitude(values, n_threads) == expected
    if n:
        values[rng.integers(0, n)] = -np.inf
        assert largest_magnitude(values, n_threads) == np.inf


@pytest.mark.parametrize("where", [0, 65535, 65536, 199_998])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_nan_anywhere_gives_nan(where, n_threads):
    values = np.ones(200_000, dtype=np.float32)
    values[where] = np.nan
    values[-1] = np.inf              # a larger value after the NaN
    assert np.isnan(largest_magnitude(values, n_threads))


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e38])
def test_check_gradients_stops_on_bad_gradients(bad):
    gpair = np.ones((2, 1000, 2), dtype=np.float32)
    gpair[1, 500, 0] = bad
    with pytest.raises(ValueError, match="round 3"):
        check_gradients(gpair, 1e120, "reg:squarederror", 3, n_threads=2)
    gpair[1, 500, 0] = 1.0
    check_gradients(gpair, 1e120, "reg:squarederror", 3, n_threads=2)


# --------------------------------------------------------------------------
# pair_magnitudes: max |g| and max |h|, which the fixed-point scales take
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 65535, 65536, 200_001])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_pair_magnitudes_equal_numpy_column_max_abs(n, n_threads):
    rng = np.random.default_rng(n + 7)
    gpair = (rng.normal(size=(n, 2))
             * 10.0 ** rng.integers(-30, 30, (n, 2))).astype(np.float32)
    expected = (tuple(float(m) for m in np.max(np.abs(gpair), axis=0)) if n
                else (0.0, 0.0))
    assert pair_magnitudes(gpair, n_threads) == expected
    # and the least (signed) h, +inf for no row
    least = float(np.min(gpair[:, 1])) if n else np.inf
    assert pair_magnitudes(gpair, n_threads, least_hessian=True) == (
        expected + (least,))


@pytest.mark.parametrize("column", [0, 1])
@pytest.mark.parametrize("where", [0, 65536, 199_998])
def test_pair_magnitudes_nan_in_its_column_only(column, where):
    gpair = np.ones((200_000, 2), dtype=np.float32)
    gpair[where, column] = np.nan
    gpair[-1, column] = np.inf       # a larger value after the NaN
    maxima = pair_magnitudes(gpair, 2)
    assert np.isnan(maxima[column])
    assert maxima[1 - column] == 1.0


def test_pair_magnitudes_needs_pairs():
    with pytest.raises(ValueError, match="last axis of length 2"):
        pair_magnitudes(np.ones((10, 3), dtype=np.float32), 1)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_check_gradients_returns_each_outputs_maxima(n_outputs):
    rng = np.random.default_rng(n_outputs)
    gpair = rng.normal(size=(n_outputs, 5000, 2)).astype(np.float32)
    maxima = check_gradients(gpair, 5000.0, "reg:squarederror", 0)
    np.testing.assert_array_equal(
        maxima[:, :2], np.max(np.abs(gpair), axis=1).astype(np.float64))
    # and each output's least h
    np.testing.assert_array_equal(
        maxima[:, 2], np.min(gpair[:, :, 1], axis=1).astype(np.float64))
    # other layouts: checked, no maxima
    assert check_gradients(gpair.astype(np.float64), 5000.0,
                           "reg:squarederror", 0) is None


# --------------------------------------------------------------------------
# FixedPointGradients with the check's maxima: the scales of its own pass
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_fixed_point_scales_from_given_maxima_are_its_own(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 100_000))
    gpair = (rng.normal(size=(n, 2))
             * 10.0 ** rng.integers(-20, 20, 2)).astype(np.float32)
    every_row = np.ones(n, dtype=bool)
    own = FixedPointGradients(gpair, None, every_row, 2)
    given = FixedPointGradients(gpair, None, every_row, 2,
                                maxima=pair_magnitudes(gpair, 2))
    np.testing.assert_array_equal(given.scales, own.scales)
    assert given.n_active == own.n_active == n
    np.testing.assert_array_equal(given.quantized(every_row, 1),
                                  own.quantized(every_row, 1))


def test_fixed_point_given_maxima_with_inactive_rows_make_the_pass():
    """Maxima of every row do not describe a subset: with inactive rows
    the scales and count are those of the active rows, as without."""
    rng = np.random.default_rng(3)
    gpair = rng.normal(size=(1000, 2)).astype(np.float32)
    gpair[0] = 1e6    # the largest pair, inactive below
    active = np.ones(1000, dtype=bool)
    active[0] = False
    given = FixedPointGradients(gpair, None, active, 1,
                                maxima=pair_magnitudes(gpair, 1))
    own = FixedPointGradients(gpair, None, active, 1)
    np.testing.assert_array_equal(given.scales, own.scales)
    assert given.n_active == own.n_active == 999


@pytest.mark.parametrize("hessians", [
    "positive", "one rounds to zero", "one zero", "one negative"])
def test_fixed_point_given_least_hessian_answers_as_its_own_pass(hessians):
    """Given the least h (the check's third figure), hessians_positive
    answers without a pass what the pass over the rows answers: whether
    every fixed-point hessian is positive."""
    rng = np.random.default_rng(4)
    gpair = np.abs(rng.normal(size=(50_000, 2))).astype(np.float32) + 0.1
    if hessians == "one rounds to zero":
        gpair[123, 1] = 1e-30
    elif hessians == "one zero":
        gpair[7, 1] = 0.0
    elif hessians == "one negative":
        gpair[49_999, 1] = -0.5
    every_row = np.ones(50_000, dtype=bool)
    own = FixedPointGradients(gpair, None, every_row, 2)
    expected = hessians == "positive"
    assert own.hessians_positive() == expected
    for maxima in (pair_magnitudes(gpair, 2),
                   pair_magnitudes(gpair, 2, least_hessian=True)):
        given = FixedPointGradients(gpair, None, every_row, 2, maxima=maxima)
        assert given.hessians_positive() == expected
        np.testing.assert_array_equal(given.scales, own.scales)


@pytest.mark.parametrize("maxima, weight, message", [
    ((1.0, 1.0, np.nan), None, "least h"),
    ((1.0, 1.0, -2.0), None, "least h"),
    ((1.0, 1.0, 2.0), None, "least h"),
    ((1.0, 1.0, 0.5, 0.1), None, "maxima must be"),
    ((np.nan, 1.0), None, "finite"),
    ((1.0, np.inf), None, "finite"),
    ((-1.0, 1.0), None, "finite"),
    ((1.0, 1.0), np.ones(10), "unit weights"),
])
def test_fixed_point_bad_given_maxima(maxima, weight, message):
    gpair = np.ones((10, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        FixedPointGradients(gpair, weight, np.ones(10, dtype=bool), 1,
                            maxima=maxima)


@pytest.mark.parametrize("returned", ["gpair", "junk", "short", "none"])
def test_check_gradients_trusts_only_one_triple_per_output(returned):
    """What an Objective subclass's gradient returns is taken as the
    pairs' extremes only when it is one (max |g|, max |h|, least h) per
    output; anything else (the pairs themselves, a string, too few
    triples) gives the check's own pass: numpy's max of |g|, |h| and the
    least h."""
    rng = np.random.default_rng(3)
    gpair = rng.normal(size=(2, 5000, 2)).astype(np.float32)
    gpair[:, :, 1] = np.abs(gpair[:, :, 1]) + 0.5
    given = {"gpair": gpair, "junk": "not extremes",
             "short": [(1.0, 1.0, 1.0)], "none": None}[returned]
    maxima = check_gradients(gpair, 1.0, "test", 0, extremes=given)
    expected = np.stack([np.abs(gpair[:, :, 0]).max(axis=1),
                         np.abs(gpair[:, :, 1]).max(axis=1),
                         gpair[:, :, 1].min(axis=1)], axis=1)
    np.testing.assert_array_equal(np.asarray(maxima)[:, :3], expected)
