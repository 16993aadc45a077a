"""The logistic kernel's exponentials eight at a time
(``_objectives._exp_lanes``, ``sigmoid_lanes``) against libm's own
``exp`` (Python's ``math.exp`` calls it): the same bits on every value
they take, NaN (left to libm) on every other; the logistic pairs of
the vector path against a naive numpy version whose exponentials are
``math.exp``'s, and against the scalar loop; the squared-error pairs
and their extremes of both paths against numpy's."""

import math
import platform

import numpy as np
import pytest

from skboost import _objectives

# glibc's main path, the lanes' range: 2^-54 <= |x| < 512
SMALLEST = 2.0 ** -54
LARGEST = 512.0


def lanes_available():
    """Whether this CPU and libm take the vector path (the kernel checks
    its lanes against the running libm before using them)."""
    previous = _objectives.set_vector_exp(True)
    available = _objectives.set_vector_exp(previous)
    return available


needs_lanes = pytest.mark.skipif(
    not lanes_available(), reason="no AVX-512, or a libm whose exp the "
    "lanes do not reproduce (the scalar loop is then the only path)")


def libm_exp(x):
    """libm's exp of every value (math.exp raises on overflow: inf)."""
    out = np.empty_like(x)
    for i, v in enumerate(x.tolist()):
        try:
            out[i] = math.exp(v)
        except OverflowError:
            out[i] = math.inf
    return out


def assert_lanes_match_libm(x):
    lanes = _objectives._exp_lanes(x)
    taken = (np.abs(x) >= SMALLEST) & (np.abs(x) < LARGEST)
    # the lanes take exactly the main path's values, NaN elsewhere
    np.testing.assert_array_equal(~np.isnan(lanes), taken)
    expected = libm_exp(x[taken])
    different = lanes[taken].view(np.int64) != expected.view(np.int64)
    assert not different.any(), (
        f"{different.sum()} of {taken.sum()} differ, first at "
        f"x={x[taken][different][:3]!r}")


def around(values, steps=4):
    """Each value and its float64 neighbours up to ``steps`` away."""
    values = np.asarray(values, dtype=np.float64)
    out = [values]
    up, down = values.copy(), values.copy()
    for _ in range(steps):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        out += [up, down]
    return np.concatenate(out)


@needs_lanes
@pytest.mark.parametrize("seed", range(4))
def test_uniform_over_the_range_gives_libms_bits(seed):
    rng = np.random.default_rng(seed)
    assert_lanes_match_libm(rng.uniform(-LARGEST, LARGEST, 1_500_000))


@needs_lanes
def test_margins_scale_gives_libms_bits():
    # the logistic kernel's arguments: -|m| for margins of a few units
    rng = np.random.default_rng(10)
    assert_lanes_match_libm(-np.abs(rng.standard_normal(2_000_000) * 6))


@needs_lanes
def test_every_magnitude_gives_libms_bits():
    # log-uniform magnitudes from below 2^-54 to above 512, both signs
    rng = np.random.default_rng(11)
    magnitude = 2.0 ** rng.uniform(-60, 10, 1_000_000)
    sign = np.where(rng.random(magnitude.size) < 0.5, -1.0, 1.0)
    assert_lanes_match_libm(sign * magnitude)


@needs_lanes
def test_table_index_rounding_boundaries_give_libms_bits():
    # x at and around (k + 1/2) ln2/128, where the table index rounds
    # over, and at k ln2/128 exactly, for every k of the range
    ln2_over_n = math.log(2.0) / 128
    k = np.arange(-int(LARGEST / ln2_over_n), int(LARGEST / ln2_over_n))
    assert_lanes_match_libm(around(np.concatenate(
        [(k + 0.5) * ln2_over_n, k * ln2_over_n])))


def test_special_values_are_left_to_libm():
    x = np.concatenate([
        around([SMALLEST, -SMALLEST, LARGEST, -LARGEST], steps=8),
        [0.0, -0.0, 5e-324, -5e-324, 1e-300, -700.0, -745.0, -746.0,
         709.0, 710.0, math.inf, -math.inf, math.nan, -math.nan]])
    if lanes_available():
        assert_lanes_match_libm(x)
    lanes = _objectives._exp_lanes(x)
    outside = ~((np.abs(x) >= SMALLEST) & (np.abs(x) < LARGEST))
    assert np.isnan(lanes[outside]).all()


def naive_logistic_pairs(y, raw, weight):
    """g = p - y, h = max(p (1 - p), 1e-16), times the weight, as float32;
    p = sigmoid(m) the way skboost/_math.pxd writes it, its exponential
    from libm (math.exp), every step a float64 operation of numpy."""
    with np.errstate(invalid="ignore"):
        argument = np.where(np.isnan(raw), raw, -np.abs(raw))
        e = libm_exp(argument)
        numerator = np.where(np.isnan(raw) | (raw < 0), e, 1.0)
        p = numerator / (1.0 + e)
        h = p * (1.0 - p)
        h = np.where(h > 1e-16, h, 1e-16)
    g = p - y.astype(np.float64)
    if weight is not None:
        g, h = g * weight, h * weight
    return np.stack([g, h], axis=1).astype(np.float32)


def margins(n, seed):
    """Margins of a few units, with every special case the lanes leave to
    libm: zeros, the main path's ends, saturated and infinite, NaN."""
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal(n) * 5
    special = np.array([0.0, -0.0, SMALLEST, -SMALLEST, 1e-17, -1e-300,
                        LARGEST, -LARGEST, np.nextafter(LARGEST, 0),
                        -np.nextafter(LARGEST, 0), 740.0, -750.0,
                        math.inf, -math.inf, math.nan])
    at = rng.choice(n, min(n, special.size), replace=False)
    raw[at] = special[:at.size]
    return raw


# sizes around the pairs' 16-row steps and the 1024-row chunks
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 33, 1023, 1024,
                               1025, 5000])
@pytest.mark.parametrize("label_dtype", [np.float64, np.float32, np.uint8])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_logistic_pairs_match_the_naive_version(n, label_dtype, weighted,
                                                n_threads):
    rng = np.random.default_rng(n)
    raw = margins(n, seed=n + 1)
    y = (rng.random(n) < 0.4).astype(label_dtype)
    if label_dtype != np.uint8:   # reg:logistic's labels in [0, 1]
        fractional = rng.random(n) < 0.5
        y[fractional] = rng.random(int(fractional.sum()))
    weight = rng.uniform(0.1, 3.0, n) if weighted else None
    expected = naive_logistic_pairs(y, raw, weight)
    previous = _objectives.set_vector_exp(True)
    try:
        for vector in (True, False):
            _objectives.set_vector_exp(vector)
            pairs = np.full((n, 2), -7.0, dtype=np.float32)
            _objectives.logistic_gradient(y, raw, weight, pairs, n_threads)
            np.testing.assert_array_equal(pairs.view(np.int32),
                                          expected.view(np.int32))
    finally:
        _objectives.set_vector_exp(previous)


@needs_lanes
def test_vector_and_scalar_pairs_equal_on_a_million_rows():
    n = 1_000_000
    rng = np.random.default_rng(3)
    raw = margins(n, seed=4) * rng.uniform(0.01, 30, n)
    y = (rng.random(n) < 0.5).astype(np.float64)
    out = []
    previous = _objectives.set_vector_exp(True)
    try:
        for vector, n_threads in [(True, 1), (True, 2), (False, 1)]:
            _objectives.set_vector_exp(vector)
            pairs = np.empty((n, 2), dtype=np.float32)
            _objectives.logistic_gradient(y, raw, None, pairs, n_threads)
            out.append(pairs)
    finally:
        _objectives.set_vector_exp(previous)
    for pairs in out[1:]:
        np.testing.assert_array_equal(pairs.view(np.int32),
                                      out[0].view(np.int32))


def test_set_vector_exp_returns_the_previous_setting():
    previous = _objectives.set_vector_exp(False)
    try:
        assert _objectives.set_vector_exp(True) is False
        assert _objectives.set_vector_exp(True) is lanes_available()
    finally:
        _objectives.set_vector_exp(previous)


def cpu_has_avx512f():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line
                       for line in f)
    except OSError:
        return False


@pytest.mark.skipif(
    platform.machine() != "x86_64" or platform.libc_ver()[0] != "glibc"
    or not cpu_has_avx512f(), reason="the lanes are for glibc on AVX-512")
def test_lanes_are_taken_on_glibc_with_avx512():
    # the load-time check against libm passed: a lane differing from libm
    # would turn the vector path off and skip the tests above
    assert lanes_available()


@pytest.mark.parametrize("n", [0, 1, 31, 1025, 70_000])
@pytest.mark.parametrize("vector", [True, False])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("nan_at", ["middle", "last"])
def test_logistic_kernel_returns_its_pairs_extremes(n, vector, n_threads,
                                                    nan_at):
    # the gradient check's (max |g|, max |h|, least h), taken by the kernel
    # as it writes the pairs, against numpy's of the pairs written (NaN
    # where a NaN margin made one)
    rng = np.random.default_rng(n + 20)
    raw = rng.standard_normal(n) * 8
    y = (rng.random(n) < 0.5).astype(np.float64)
    weight = rng.uniform(0.1, 3.0, n)
    previous = _objectives.set_vector_exp(vector)
    try:
        # a NaN in a 16-row step, or in the rows after the last step
        for margins in (raw, margins_with_a_nan(raw, nan_at)):
            pairs = np.empty((n, 2), dtype=np.float32)
            found = _objectives.logistic_gradient(y, margins, weight, pairs,
                                                  n_threads)
            g, h = np.abs(pairs[:, 0]), np.abs(pairs[:, 1])
            expected = (float(g.max(initial=0.0)), float(h.max(initial=0.0)))
            # exact (NaN where a column holds one)
            np.testing.assert_array_equal(np.array(found[:2]),
                                          np.array(expected))
            assert found[2] == float(pairs[:, 1].min(initial=np.inf))
    finally:
        _objectives.set_vector_exp(previous)


def margins_with_a_nan(raw, at="middle"):
    out = raw.copy()
    if out.size:
        out[out.size // 2 if at == "middle" else -1] = np.nan
    return out


def test_gradient_check_takes_the_kernels_extremes():
    # check_gradients with the objective's extremes gives the array its own
    # pass gives; the binary objective returns them
    from skboost._model.limits import check_gradients
    from skboost.objectives import get_objective
    rng = np.random.default_rng(30)
    n = 3000
    y = (rng.random(n) < 0.5).astype(np.float64)
    raw = rng.standard_normal((n, 1)) * 4
    gpair = np.empty((1, n, 2), dtype=np.float32)
    extremes = get_objective("binary:logistic").gradient(y, raw, None,
                                                          gpair, 2)
    assert extremes is not None and len(extremes) == 1
    own = check_gradients(gpair, float(n), "binary:logistic", 0, 2)
    taken = check_gradients(gpair, float(n), "binary:logistic", 0, 2,
                            extremes=extremes)
    np.testing.assert_array_equal(taken, own)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 2047, 2048, 2049, 5000])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_squared_error_pairs_and_extremes_match_the_naive_version(
        n, weighted, n_threads):
    # g = m - y, h = 1, times the weight, each rounded to float32 once
    # (numpy's float64 arithmetic, then its cast); the extremes those of
    # the pairs written, NaN where a column holds one; from the 16-row
    # steps (vector) and the scalar loop alike
    rng = np.random.default_rng(n + 50)
    raw = margins(n, seed=n + 51)   # NaN and infinities among them
    y = rng.standard_normal(n) * 100
    weight = rng.uniform(0.1, 3.0, n) if weighted else None
    g = raw - y
    h = np.ones(n)
    if weighted:
        g, h = g * weight, h * weight
    expected = np.stack([g, h], axis=1).astype(np.float32)
    with np.errstate(invalid="ignore"):
        largest = [float(np.abs(expected[:, c]).max(initial=0.0))
                   for c in range(2)]
    nan = np.isnan(expected).any(axis=0)
    previous = _objectives.set_vector_exp(True)
    try:
        for vector in (True, False):
            _objectives.set_vector_exp(vector)
            pairs = np.full((n, 2), -7.0, dtype=np.float32)
            found = _objectives.squared_error_gradient(y, raw, weight, pairs,
                                                       n_threads)
            np.testing.assert_array_equal(pairs.view(np.int32),
                                          expected.view(np.int32))
            for c in range(2):
                assert (math.isnan(found[c]) if nan[c]
                        else found[c] == largest[c])
            assert found[2] == float(expected[:, 1].min(initial=np.inf))
    finally:
        _objectives.set_vector_exp(previous)
