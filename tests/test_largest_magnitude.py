"""The one-pass bound of the round's gradient check
(``_objectives.largest_magnitude``, used by ``limits.check_gradients``)
against numpy's max of the absolute values."""

import numpy as np
import pytest

from skboost._model.limits import check_gradients
from skboost._objectives import largest_magnitude


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
