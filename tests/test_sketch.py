"""Tests of the weighted quantile sketch (skboost/tree/_sketch.pyx).

The oracle is naive: sort the data, accumulate the weights, and read the
exact weighted ranks r-(x) (weight < x) and r+(x) (weight <= x) of any value
by bisection. Every bound is checked against it, with a tolerance of float64
rounding of the weight sums only.
"""

import functools
import pickle

import numpy as np
import pytest

from skboost.tree import _sketch
from skboost.tree._sketch import WeightedQuantileSummary, sketch_column

try:
    from hypothesis import given, settings, strategies as st
except ImportError:  # pragma: no cover
    given = None


class Oracle:
    """Exact weighted ranks of a column (NaN values, zero weights dropped)."""

    def __init__(self, values, weights=None):
        v = np.asarray(values, dtype=np.float64)
        w = (np.ones_like(v) if weights is None
             else np.asarray(weights, dtype=np.float64))
        keep = ~np.isnan(v) & (w > 0)
        order = np.argsort(v[keep], kind="stable")
        self.v = v[keep][order]
        self.cw = np.concatenate([[0.0], np.cumsum(w[keep][order])])
        self.W = float(self.cw[-1])
        self.distinct = np.unique(self.v)
        self.tol = 1e-9 * self.W + 1e-12

    def below(self, x):
        return self.cw[np.searchsorted(self.v, x, side="left")]

    def at_or_below(self, x):
        return self.cw[np.searchsorted(self.v, x, side="right")]

    def err(self, x, r):
        """Distance from rank r to the rank interval [r-(x), r+(x)]."""
        return np.maximum(0.0, np.maximum(self.below(x) - r,
                                          r - self.at_or_below(x)))


def make_datasets():
    rng = np.random.default_rng(42)
    n = 3000
    uniform = rng.random(n, dtype=np.float32)
    skewed = rng.lognormal(0.0, 2.0, n)
    skewed_w = np.ones(n)
    skewed_w[rng.choice(n, 5, replace=False)] = 1e3 * n   # a few huge rows
    tied = rng.integers(0, 7, n).astype(np.float64)
    zipf = np.minimum(rng.zipf(1.3, n), 400).astype(np.float64)
    with_nan = rng.normal(size=n)
    with_nan[rng.random(n) < 0.3] = np.nan
    nan_w = rng.exponential(size=n)
    nan_w[rng.random(n) < 0.1] = 0.0                      # ignored rows
    return {
        "uniform": (uniform, None),
        "uniform_weighted": (uniform, rng.uniform(0.5, 2.0, n)),
        "skewed": (skewed, skewed_w),
        "heavy_tied": (tied, rng.exponential(size=n)),
        "heavy_tied_unweighted": (tied, None),
        "zipf_tied": (zipf, rng.exponential(size=n)),
        "constant": (np.full(n, 3.5), rng.uniform(0.1, 1.0, n)),
        "with_nan": (with_nan, nan_w),
    }


DATASETS = make_datasets()


@pytest.fixture(params=sorted(DATASETS))
def dataset(request):
    values, weights = DATASETS[request.param]
    return values, weights, Oracle(values, weights)


# ---------------------------------------------------------------- checkers

def check_invariant(s, oracle):
    """(a): every entry brackets the true ranks of its value; the values are
    data values, increasing, and include the minimum and the maximum."""
    tol = oracle.tol
    x = s.values
    assert s.total_weight == pytest.approx(oracle.W, rel=1e-12, abs=1e-12)
    assert len(x) == s.size == len(s.rmin) == len(s.rmax) == len(s.wmin)
    if oracle.W == 0:
        assert s.size == 0
        return
    assert np.all(np.diff(x) > 0)
    assert np.all(np.isin(x, oracle.distinct))
    assert x[0] == oracle.distinct[0] and x[-1] == oracle.distinct[-1]
    below, upto = oracle.below(x), oracle.at_or_below(x)
    assert np.all(s.rmin <= below + tol)                  # rmin <= r-
    assert np.all(below <= s.rmax - s.wmin + tol)         # r- <= rmax - wmin
    assert np.all(s.rmin + s.wmin <= upto + tol)          # rmin + wmin <= r+
    assert np.all(upto <= s.rmax + tol)                   # r+ <= rmax
    assert np.all(s.wmin >= 0)
    assert np.all(s.wmin <= upto - below + tol)           # wmin <= w(x)
    # (M): a = rmin + wmin and b = rmax - wmin nondecreasing.
    assert np.all(np.diff(s.rmin + s.wmin) >= -tol)
    assert np.all(np.diff(s.rmax - s.wmin) >= -tol)


def check_queries(s, oracle, n_ranks=301):
    """(b): query(r) answers a value within eps * W of rank r."""
    if s.size == 0:
        return
    W = s.total_weight
    ranks = np.concatenate([np.linspace(0.0, W, n_ranks),
                            np.clip(oracle.cw[::37], 0.0, W)])
    answers = np.array([s.query(r) for r in ranks])
    errors = oracle.err(answers, ranks)
    assert np.all(errors <= s.eps * W + oracle.tol), errors.max() / W


def check_cuts(s, oracle, max_bin):
    """(c): each cut is within eps * W of a target rank k W / max_bin, each
    target within eps * W of a cut or the minimum, and every bin holds at
    most W / max_bin + 2 eps W besides the weight of its left edge value."""
    cuts = s.cut_points(max_bin)
    assert cuts.dtype == np.float64
    assert len(cuts) <= max_bin - 1
    if s.size == 0:
        assert len(cuts) == 0
        return
    assert np.all(np.diff(cuts) > 0)
    assert np.all(cuts > oracle.distinct[0])
    if s.is_exact and s.size <= max_bin:
        return  # midpoints: checked in test_few_distinct_values_*
    W, E, tol = oracle.W, s.eps * oracle.W, oracle.tol
    targets = np.arange(1, max_bin) * W / max_bin
    if len(cuts):
        cut_errors = oracle.err(cuts[:, None], targets[None, :]).min(axis=1)
        assert np.all(cut_errors <= E + tol)
    candidates = np.concatenate([[oracle.distinct[0]], cuts])
    target_errors = oracle.err(candidates[:, None],
                               targets[None, :]).min(axis=0)
    assert np.all(target_errors <= E + tol)
    edges = np.concatenate([[oracle.distinct[0]], cuts])
    inside = np.append(oracle.below(edges[1:]), W) - oracle.at_or_below(edges)
    assert np.all(inside <= W / max_bin + 2 * E + tol), inside.max()


def check_all(s, oracle, max_bins=(2, 5, 16)):
    check_invariant(s, oracle)
    check_queries(s, oracle)
    for max_bin in max_bins:
        check_cuts(s, oracle, max_bin)


def entries(s):
    return (s.values, s.rmin, s.rmax, s.wmin)


def assert_same_entries(s, t):
    for u, v in zip(entries(s), entries(t)):
        np.testing.assert_array_equal(u, v)
    assert s.total_weight == t.total_weight
    assert s.eps == t.eps


def streaming_bound(values, weights, chunk_size, summary_size):
    """A priori bound of sketch_column (Theorems 2 and 3) in weight units."""
    oracle_chunks = [Oracle(values[i:i + chunk_size],
                            None if weights is None
                            else weights[i:i + chunk_size])
                     for i in range(0, len(values), chunk_size)]
    chunk_w = np.array([o.W for o in oracle_chunks])
    return np.sum(chunk_w + np.cumsum(chunk_w)) / (2 * (summary_size - 1))


# ------------------------------------------------------------------- tests

def test_exact_summary_matches_oracle(dataset):
    values, weights, oracle = dataset
    s = WeightedQuantileSummary.from_data(values, weights)
    assert s.is_exact and s.eps == 0.0
    np.testing.assert_array_equal(s.values, oracle.distinct)
    np.testing.assert_allclose(s.rmin, oracle.below(s.values),
                               rtol=1e-12, atol=oracle.tol)
    np.testing.assert_allclose(s.rmax, oracle.at_or_below(s.values),
                               rtol=1e-12, atol=oracle.tol)
    np.testing.assert_allclose(s.wmin, s.rmax - s.rmin,
                               rtol=1e-12, atol=oracle.tol)
    check_all(s, oracle)


def test_sketch_column_bounds(dataset):
    values, weights, oracle = dataset
    s = sketch_column(values, weights, max_bin=16, chunk_size=257,
                      summary_size=24)
    assert s.size <= 24
    assert s.eps * oracle.W <= (streaming_bound(values, weights, 257, 24)
                                + oracle.tol)
    if len(oracle.distinct) > 24:
        assert not s.is_exact and s.eps > 0
    check_all(s, oracle)


def test_query_is_exact_on_exact_summary():
    values = np.array([3.0, 1.0, 2.0, 2.0, 5.0])
    s = WeightedQuantileSummary.from_data(values, [1.0, 1.0, 0.5, 0.5, 2.0])
    # Ranks: 1 -> [0, 1], 2 -> [1, 2], 3 -> [2, 3], 5 -> [3, 5].
    assert [s.query(r) for r in (0.0, 0.5, 1.5, 2.5, 4.0, 5.0)] == [
        1.0, 1.0, 2.0, 3.0, 5.0, 5.0]
    with pytest.raises(ValueError):
        s.query(5.5)
    with pytest.raises(ValueError):
        s.query(-0.1)
    with pytest.raises(ValueError):
        s.query(np.nan)


def split_chunks(values, weights, k, rng):
    """k disjoint chunks, one of them empty and one a single value (k >= 3)."""
    n = len(values)
    bounds = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
    pieces = np.split(np.arange(n), bounds)
    if k >= 3:
        valid = ~np.isnan(values) & (True if weights is None else weights > 0)
        j = np.flatnonzero(valid)[0]
        rest = [np.setdiff1d(p, [j]) for p in pieces]
        pieces = [np.concatenate([rest[0], rest[1], rest[-1]]), np.array([j])]
        pieces += rest[2:-1] + [np.array([], dtype=np.intp)]
        assert sum(len(p) for p in pieces) == n and len(pieces) == k
    return [(values[p], None if weights is None else weights[p])
            for p in pieces]


@pytest.mark.parametrize("k", range(2, 11))
@pytest.mark.parametrize("name", ["uniform_weighted", "skewed", "heavy_tied",
                                  "with_nan"])
def test_merge_of_k_partial_summaries(name, k):
    values, weights = DATASETS[name]
    oracle = Oracle(values, weights)
    rng = np.random.default_rng(k)
    parts = [WeightedQuantileSummary.from_data(v, w).prune(12)
             for v, w in split_chunks(values, weights, k, rng)]
    if k >= 3:
        assert parts[-1].size == 0 and parts[1].size == 1
    merged = functools.reduce(WeightedQuantileSummary.merge, parts)
    # Theorem 2: absolute errors add, relative errors do not grow.
    abs_bound = sum(p.eps * p.total_weight for p in parts)
    assert merged.eps * merged.total_weight <= abs_bound + oracle.tol
    assert merged.eps <= max(p.eps for p in parts) + 1e-12
    check_all(merged, oracle)
    # Any order gives a summary with the same guarantees.
    shuffled = [parts[i] for i in rng.permutation(k)]
    other = functools.reduce(WeightedQuantileSummary.merge, shuffled)
    assert other.total_weight == pytest.approx(merged.total_weight)
    check_all(other, oracle)


@pytest.mark.parametrize("name", ["uniform", "skewed", "heavy_tied",
                                  "with_nan", "constant"])
def test_merge_is_commutative(name):
    values, weights = DATASETS[name]
    for cut in (0, 1, 700, 1999):
        wa = None if weights is None else weights[:cut]
        wb = None if weights is None else weights[cut:]
        a = WeightedQuantileSummary.from_data(values[:cut], wa).prune(10)
        b = WeightedQuantileSummary.from_data(values[cut:], wb).prune(17)
        assert_same_entries(a.merge(b), b.merge(a))


def test_merge_with_empty_is_identity(dataset):
    values, weights, oracle = dataset
    s = sketch_column(values, weights, max_bin=8, chunk_size=500)
    empty = WeightedQuantileSummary.empty()
    assert_same_entries(s.merge(empty), s)
    assert_same_entries(empty.merge(s), s)
    assert_same_entries(WeightedQuantileSummary().merge(empty), empty)


def test_merge_of_exact_summaries_is_exact(dataset):
    values, weights, oracle = dataset
    parts = [WeightedQuantileSummary.from_data(
        values[i:i + 400], None if weights is None else weights[i:i + 400])
        for i in range(0, len(values), 400)]
    merged = functools.reduce(WeightedQuantileSummary.merge, parts)
    whole = WeightedQuantileSummary.from_data(values, weights)
    assert merged.is_exact and merged.eps == 0.0
    np.testing.assert_array_equal(merged.values, whole.values)
    for u, v in zip(entries(merged)[1:], entries(whole)[1:]):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=oracle.tol)


@pytest.mark.parametrize("max_size", [2, 3, 5, 17, 64])
def test_prune_size_and_bound(dataset, max_size):
    values, weights, oracle = dataset
    for s in (WeightedQuantileSummary.from_data(values, weights),
              sketch_column(values, weights, max_bin=8, chunk_size=600,
                            summary_size=80)):
        p = s.prune(max_size)
        assert p.size <= max_size
        assert p.total_weight == s.total_weight
        # A subset of the entries, bounds unchanged, both ends kept.
        kept = np.searchsorted(s.values, p.values)
        for u, v in zip(entries(p), entries(s)):
            np.testing.assert_array_equal(u, v[kept])
        if s.size:
            assert p.values[0] == s.values[0]
            assert p.values[-1] == s.values[-1]
        # Theorem 3: eps grows by at most 1 / (2 (max_size - 1)).
        assert p.eps <= s.eps + 1.0 / (2 * (max_size - 1)) + 1e-12
        assert p.is_exact == (s.is_exact and s.size <= max_size)
        check_all(p, oracle)


def test_prune_that_fits_keeps_summary(dataset):
    values, weights, oracle = dataset
    s = WeightedQuantileSummary.from_data(values, weights)
    p = s.prune(max(s.size, 2))
    assert p.is_exact
    assert_same_entries(p, s)
    with pytest.raises(ValueError):
        s.prune(1)


def test_prune_bisection_stays_near_ideal_on_a_stream():
    # The proof's threshold would add 1 / (2 (s - 1)) per prune; the bisected
    # one keeps the certified eps below one bin's width over 25 chunks.
    x = np.random.default_rng(0).random(200_000, dtype=np.float32)
    s = sketch_column(x, max_bin=256, chunk_size=8192)
    assert s.size <= 8 * 256
    assert s.eps < 1.0 / 256
    assert s.eps < streaming_bound(x, None, 8192, 2048) / len(x) / 3


@pytest.mark.parametrize("weights", [None, [1.0, 2.0, 0.5, 0.5, 3.0, 1.0]])
def test_few_distinct_values_give_exact_midpoints(weights):
    values = np.array([5.0, 1.0, 2.0, 2.0, 9.0, 1.0])
    expected = np.array([1.5, 3.5, 7.0])
    for s in (WeightedQuantileSummary.from_data(values, weights),
              sketch_column(values, weights, max_bin=4, chunk_size=2)):
        assert s.is_exact
        np.testing.assert_array_equal(s.cut_points(4), expected)
        np.testing.assert_array_equal(s.cut_points(256), expected)
        # One bin fewer than distinct values: quantile cuts at data values.
        cuts = s.cut_points(3)
        assert len(cuts) <= 2 and np.all(np.isin(cuts, values))
        check_cuts(s, Oracle(values, weights), 3)


def test_midpoints_are_computed_in_float64():
    values = np.array([0.1, 0.2, 0.7], dtype=np.float32)
    cuts = sketch_column(values).cut_points(256)
    v = values.astype(np.float64)
    np.testing.assert_array_equal(cuts, (v[:-1] + v[1:]) / 2)
    assert cuts[0] != np.float32(0.15)     # not rounded to float32


def test_midpoints_never_merge_two_values():
    # No float64 midpoint strictly between neighbours, or it overflows: the
    # upper value is the cut, so each value still has its own bin.
    a = 1.0
    b = np.nextafter(a, 2.0)
    values = np.array([-np.inf, a, b, 1.0e308, 1.7e308, np.inf])
    cuts = sketch_column(values).cut_points(8)
    bins = np.searchsorted(cuts, values, side="right")
    np.testing.assert_array_equal(bins, np.arange(len(values)))


def test_nan_values_are_ignored(dataset):
    values, weights, oracle = dataset
    rng = np.random.default_rng(1)
    holes = rng.random(len(values)) < 0.2
    noisy = values.astype(np.float64)
    noisy[holes] = np.nan
    keep = ~holes
    clean_w = None if weights is None else weights[keep]
    with_nan = WeightedQuantileSummary.from_data(noisy, weights)
    without = WeightedQuantileSummary.from_data(values[keep], clean_w)
    np.testing.assert_array_equal(with_nan.values, without.values)
    # Tied weights may be summed in another order: equal up to rounding.
    for u, v in zip(entries(with_nan)[1:], entries(without)[1:]):
        np.testing.assert_allclose(u, v, rtol=1e-13, atol=1e-9)
    s = sketch_column(noisy, weights, max_bin=8, chunk_size=300)
    check_all(s, Oracle(noisy, weights))
    assert sketch_column(np.full(10, np.nan)).size == 0


def test_invalid_weights_and_shapes_raise():
    values = np.arange(5.0)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedQuantileSummary.from_data(values, [1, 1, -1, 1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        sketch_column(values, [1, 1, 1, 1, -1e-300], chunk_size=2)
    with pytest.raises(ValueError, match="finite"):
        WeightedQuantileSummary.from_data(values, [1, 1, np.nan, 1, 1])
    with pytest.raises(ValueError, match="finite"):
        sketch_column(values, [1, 1, np.inf, 1, 1])
    with pytest.raises(ValueError, match="shape"):
        WeightedQuantileSummary.from_data(values, [1.0, 2.0])
    with pytest.raises(ValueError, match="1-D"):
        WeightedQuantileSummary.from_data(values.reshape(5, 1))
    with pytest.raises(ValueError):
        sketch_column(values, max_bin=0)
    with pytest.raises(ValueError):
        sketch_column(values, summary_size=1)
    with pytest.raises(ValueError):
        sketch_column(values, chunk_size=0)


def test_all_zero_weights_give_empty_summary():
    values = np.array([1.0, 2.0, 3.0])
    for s in (WeightedQuantileSummary.from_data(values, np.zeros(3)),
              sketch_column(values, np.zeros(3), chunk_size=2),
              WeightedQuantileSummary.empty(),
              WeightedQuantileSummary(),
              sketch_column(np.array([]))):
        assert s.size == 0 and s.total_weight == 0.0 and s.eps == 0.0
        for max_bin in (1, 2, 256):
            cuts = s.cut_points(max_bin)
            assert cuts.shape == (0,) and cuts.dtype == np.float64
        with pytest.raises(ValueError):
            s.query(0.0)
        assert s.prune(2).size == 0


def test_zero_weight_values_are_not_entries():
    s = WeightedQuantileSummary.from_data([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(s.values, [1.0, 3.0])
    np.testing.assert_array_equal(s.cut_points(4), [2.0])


def test_constant_column_has_no_cuts():
    values, weights = DATASETS["constant"]
    for s in (WeightedQuantileSummary.from_data(values, weights),
              sketch_column(values, weights, max_bin=4, chunk_size=100)):
        assert s.size == 1
        assert s.cut_points(1).size == 0
        assert s.cut_points(256).size == 0
        assert s.query(s.total_weight / 2) == 3.5


def test_quantile_cuts_never_equal_the_minimum():
    # Half the weight on the minimum: the first targets all answer it.
    values = np.concatenate([np.zeros(1000), np.arange(1.0, 1001.0)])
    s = WeightedQuantileSummary.from_data(values)
    cuts = s.cut_points(8)
    assert cuts[0] > 0.0
    check_cuts(s, Oracle(values), 8)


def test_cut_points_of_exact_many_values_are_exact_quantiles():
    values = np.arange(1000.0)
    cuts = WeightedQuantileSummary.from_data(values).cut_points(4)
    np.testing.assert_array_equal(cuts, [250.0, 500.0, 750.0])


def test_summary_is_read_only_and_pickles():
    s = sketch_column(np.random.default_rng(3).random(5000), max_bin=4,
                      chunk_size=700)
    for arr in entries(s):
        with pytest.raises(ValueError):
            arr[0] = 1.0
        with pytest.raises(ValueError):
            arr.flags.writeable = True
    with pytest.raises(AttributeError):
        s.eps = 0.0
    t = pickle.loads(pickle.dumps(s))
    assert_same_entries(s, t)
    assert t.is_exact == s.is_exact
    np.testing.assert_array_equal(t.cut_points(4), s.cut_points(4))


if given is not None:
    value_sets = st.sampled_from([
        [0.0, 1.0, 2.0],
        [-1.5, 0.0, 0.25, 7.0, 1e6],
        list(np.linspace(-3, 3, 40)),
    ])

    @settings(max_examples=150, deadline=None)
    @given(data=st.data(), chunk_size=st.integers(1, 25),
           summary_size=st.integers(2, 12), max_bin=st.integers(1, 9),
           weighted=st.booleans())
    def test_random_streams_keep_every_bound(data, chunk_size, summary_size,
                                             max_bin, weighted):
        pool = data.draw(value_sets)
        n = data.draw(st.integers(0, 80))
        values = np.array(data.draw(st.lists(
            st.one_of(st.sampled_from(pool),
                      st.floats(-10, 10, allow_nan=False),
                      st.just(np.nan)), min_size=n, max_size=n)))
        weights = None
        if weighted:
            weights = np.array(data.draw(st.lists(
                st.one_of(st.just(0.0), st.integers(1, 5).map(float),
                          st.floats(1e-3, 1e3)), min_size=n, max_size=n)))
        oracle = Oracle(values, weights)
        s = sketch_column(values, weights, max_bin=max_bin,
                          chunk_size=chunk_size, summary_size=summary_size)
        assert s.size <= max(summary_size, 0)
        check_invariant(s, oracle)
        check_queries(s, oracle, n_ranks=41)
        check_cuts(s, oracle, max_bin)
        half = WeightedQuantileSummary.from_data(
            values[: n // 2], None if weights is None else weights[: n // 2])
        rest = WeightedQuantileSummary.from_data(
            values[n // 2:], None if weights is None else weights[n // 2:])
        a, b = half.prune(summary_size), rest.prune(summary_size)
        assert_same_entries(a.merge(b), b.merge(a))
        check_invariant(a.merge(b), oracle)
        check_queries(a.merge(b), oracle, n_ranks=41)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kept_chunk_orders_give_the_same_summary(dtype):
    """``sketch_column(..., orders=chunk_orders(values))`` (the sort kept
    across calls with other weights) equals the summary sorted afresh,
    bit for bit, with ties, NaN and zero weights."""
    from skboost.tree._sketch import chunk_orders, sketch_column

    rng = np.random.default_rng(3)
    values = rng.integers(0, 500, size=2500).astype(dtype)
    values[rng.random(2500) < 0.05] = np.nan
    orders = chunk_orders(values, chunk_size=700)
    for seed in range(3):
        weights = np.random.default_rng(seed).random(2500)
        weights[::5] = 0.0
        a = sketch_column(values, weights, max_bin=16, chunk_size=700)
        b = sketch_column(values, weights, max_bin=16, chunk_size=700,
                          orders=orders)
        for name in ("values", "rmin", "rmax", "wmin"):
            assert np.array_equal(getattr(a, name), getattr(b, name))
        assert a.total_weight == b.total_weight


def _float32_edge_values(rng, n):
    """float32 values with every kind of bit pattern: random bits
    (denormals, infinities, NaNs of both signs), ties, and ordinary
    values."""
    bits = rng.integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32).copy()
    values[::3] = rng.normal(size=values[::3].shape[0]).astype(np.float32)
    values[1::7] = np.float32(1.5)                # a long run of ties
    values[2::11] = np.float32(np.inf)
    values[3::13] = np.float32(-np.inf)
    values[values == 0] = np.float32(1.0)         # no zeros of either sign
    return values


def _entries(summary):
    return [getattr(summary, name).tobytes()
            for name in ("values", "rmin", "rmax", "wmin")] + [
        summary.total_weight, summary.eps]


@pytest.fixture(params=["radix sort", "numpy sort"])
def float32_sort(request):
    """Each sort of unweighted float32 chunks: the radix sort, and np.sort
    where numpy sorts them in AVX-512 (elsewhere both are the radix
    sort)."""
    previous = _sketch.set_numpy_sort(request.param == "numpy sort")
    yield request.param
    _sketch.set_numpy_sort(previous)


@pytest.mark.parametrize("chunk_size", [50, 997, 65536])
def test_float32_radix_sort_gives_the_float64_sort_summary(chunk_size,
                                                           float32_sort):
    """An unweighted float32 column (its chunks radix-sorted) has the
    summary, bit for bit, of the same values as float64, whose chunks
    numpy sorts: the same doubles in the same order either way."""
    rng = np.random.default_rng(11)
    values = _float32_edge_values(rng, 20_000)
    a = sketch_column(values, max_bin=32, chunk_size=chunk_size)
    b = sketch_column(values.astype(np.float64), max_bin=32,
                      chunk_size=chunk_size)
    assert _entries(a) == _entries(b)
    assert a.size > 2


def test_float32_radix_sort_exact_summary_matches_unique(float32_sort):
    """Without pruning, the summary of radix-sorted chunks is np.unique's
    values and counts (NaNs of either sign left out)."""
    rng = np.random.default_rng(12)
    values = _float32_edge_values(rng, 5000)
    s = WeightedQuantileSummary.from_data(values)
    kept = values[~np.isnan(values)].astype(np.float64)
    unique, counts = np.unique(kept, return_counts=True)
    np.testing.assert_array_equal(s.values, unique)
    np.testing.assert_array_equal(s.wmin, counts)
    np.testing.assert_array_equal(s.rmax, np.cumsum(counts))
    np.testing.assert_array_equal(s.rmin, np.cumsum(counts) - counts)


def test_float32_chunks_with_negative_zero_sort_like_numpy(float32_sort):
    """A chunk holding -0.0 is sorted by np.sort (which of -0.0 and 0.0
    an entry keeps is np.sort's choice): the summary's entries equal the
    values and counts of the zeros and the rest."""
    values = np.array([3.0, -0.0, 0.0, -1.0, np.nan, 0.0, -0.0, 2.0],
                      dtype=np.float32)
    s = WeightedQuantileSummary.from_data(values)
    np.testing.assert_array_equal(s.values, [-1.0, 0.0, 2.0, 3.0])
    np.testing.assert_array_equal(s.wmin, [1.0, 4.0, 1.0, 1.0])
    assert s.values[1] == 0.0


def test_both_float32_sorts_give_the_same_summaries():
    """The radix sort and np.sort give every chunk's summary bit for bit
    (the same floats in the same order, NaN left out or last), chunks with
    -0.0 included; the set_numpy_sort switch returns the previous
    setting."""
    rng = np.random.default_rng(13)
    values = _float32_edge_values(rng, 30_000)
    values[5::4001] = np.float32(-0.0)    # some chunks with -0.0
    values[6::8001] = np.float32(0.0)
    out = {}
    previous = _sketch.set_numpy_sort(False)
    try:
        for numpy_sort in (False, True):
            _sketch.set_numpy_sort(numpy_sort)
            out[numpy_sort] = [
                _entries(sketch_column(values, max_bin=64, chunk_size=c))
                for c in (100, 4000, 65536)]
        assert _sketch.set_numpy_sort(False) is _sketch._numpy_sorts_in_avx512()
    finally:
        _sketch.set_numpy_sort(previous)
    assert out[False] == out[True]
