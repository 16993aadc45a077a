"""Fixed-point gradient histograms (``_histogram.pyx``) against oracles
written here.

- ``build_histograms``: a naive NumPy histogram (``np.add.at``) of each
  node's fixed-point pairs (``FixedPointGradients.quantized``, itself
  checked below), for random codes, gradients, weights, row slices and
  several nodes per batch. The kernel quantises on the fly; sums are
  integers, so every comparison is exact.
- ``quantize_gradients``: checked against exact rational arithmetic
  (``fractions.Fraction``): the scale is a power of two, no sum of
  quantised values can overflow, the rounding error is at most half a unit,
  and the quantised values of a row of integer weight w dequantise to
  exactly w times the row's gradient (so it adds what w copies add).
"""

import sys
from fractions import Fraction

import numpy as np
import pytest

from skboost.tree._binning import BinnedData
from skboost.tree._histogram import (FixedPointGradients, build_histograms,
                                     quantization_scale, quantize_gradients,
                                     active_maxima, _wide_layout,
                                     _wide_of_bin)
from skboost.tree._partition import RowPartition
from _isolation import snippet_input_tests

SUM_LIMIT = 2 ** 62


# --------------------------------------------------------------------------
# Oracles and random problems
# --------------------------------------------------------------------------

def naive_histograms(codes, bin_ptr, quantized, row_index, begin, end):
    n_bins = int(bin_ptr[-1])
    hist = np.zeros((len(begin), n_bins, 2), dtype=np.int64)
    for k, (b, e) in enumerate(zip(begin, end)):
        rows = row_index[b:e]
        for f in range(codes.shape[1]):
            bins = bin_ptr[f] + codes[rows, f].astype(np.int64)
            np.add.at(hist[k, :, 0], bins, quantized[rows, 0])
            np.add.at(hist[k, :, 1], bins, quantized[rows, 1])
    return hist


def random_binned(rng, n_rows, n_features, dtype):
    widths = rng.integers(1, 12, n_features)
    if dtype == np.uint16:
        widths[rng.random(n_features) < 0.5] = rng.integers(257, 700)
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
    return BinnedData(codes.astype(dtype), bin_ptr)


def random_gradients(rng, active):
    """Fixed-point gradients of random float32 pairs, weighted or not, and
    their quantised pairs (the oracle's input)."""
    n_rows = active.shape[0]
    gpair = np.column_stack([rng.normal(0, rng.uniform(0.01, 100), n_rows),
                             rng.uniform(0, 3, n_rows)]).astype(np.float32)
    weight = None if rng.random() < 0.5 else rng.uniform(0, 5, n_rows)
    gradients = FixedPointGradients(gpair, weight, active.astype(np.uint8), 1)
    return gradients, gradients.quantized(active.astype(np.uint8), 1)


def random_slices(rng, n_active, n_nodes):
    """Node slices: disjoint, overlapping, empty or the whole partition."""
    begin = rng.integers(0, n_active + 1, n_nodes)
    end = np.minimum(n_active, begin + rng.integers(0, n_active + 1, n_nodes))
    if n_nodes > 1:
        begin[0], end[0] = 0, n_active
        begin[1] = end[1] = rng.integers(0, n_active + 1)  # empty
    return begin.astype(np.int64), end.astype(np.int64)


def random_problem(seed, dtype, n_rows=None):
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 400)) if n_rows is None else n_rows
    data = random_binned(rng, n_rows, int(rng.integers(1, 7)), dtype)
    active = rng.random(n_rows) < rng.uniform(0.3, 1.0)
    rows = np.flatnonzero(active)
    partition = RowPartition(rows, n_rows)
    # rows in any order inside slices: shuffle the partition the way
    # split_nodes would (a permutation of the active rows)
    if rows.size and seed % 2:
        feature = np.array([int(rng.integers(data.n_features))], np.int32)
        partition.split_nodes(data, [0], [rows.size], feature,
                              [int(rng.integers(-1, 5))], [seed % 3 == 0],
                              n_threads=1)
    gradients, quantized = random_gradients(rng, active)
    begin, end = random_slices(rng, rows.size, int(rng.integers(1, 6)))
    return data, partition, gradients, quantized, begin, end


def run_kernel(data, partition, gradients, begin, end, n_threads):
    # garbage in the output: the kernel must overwrite every entry
    hist = np.full((begin.shape[0], data.n_bins, 2), -12345, dtype=np.int64)
    build_histograms(data, partition, gradients, begin, end, hist, n_threads)
    return hist


# --------------------------------------------------------------------------
# build_histograms
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("first_seed", range(0, 60, 20))
def test_matches_naive_histograms(dtype, first_seed):
    for seed in range(first_seed, first_seed + 20):
        data, partition, gradients, quantized, begin, end = random_problem(
            seed, dtype)
        got = run_kernel(data, partition, gradients, begin, end,
                         1 + seed % 2)
        expected = naive_histograms(data.codes, data.bin_ptr, quantized,
                                    np.asarray(partition.row_index), begin,
                                    end)
        np.testing.assert_array_equal(got, expected, err_msg=f"seed {seed}")


@pytest.mark.parametrize("n_threads", [1, 2])
def test_pool_rows_receive_their_nodes_and_nothing_else(n_threads):
    # hist_rows: node k is written to hist[hist_rows[k]] of a larger pool;
    # the other rows keep what they held
    data, partition, gradients, quantized, begin, end = random_problem(
        5, np.uint8, n_rows=50_000)
    rng = np.random.default_rng(1)
    pool = rng.integers(-99, 99, (begin.shape[0] + 4, data.n_bins, 2))
    rows = rng.permutation(pool.shape[0])[:begin.shape[0]]
    before = pool.copy()
    build_histograms(data, partition, gradients, begin, end, pool, n_threads,
                     hist_rows=rows)
    expected = naive_histograms(data.codes, data.bin_ptr, quantized,
                                np.asarray(partition.row_index), begin, end)
    np.testing.assert_array_equal(pool[rows], expected)
    others = np.setdiff1d(np.arange(pool.shape[0]), rows)
    np.testing.assert_array_equal(pool[others], before[others])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_large_nodes_split_into_tasks(dtype):
    # nodes larger than a task (16384 rows): partial histograms per thread
    data, partition, gradients, quantized, begin, end = random_problem(
        7, dtype, n_rows=60_000)
    expected = naive_histograms(data.codes, data.bin_ptr, quantized,
                                np.asarray(partition.row_index), begin, end)
    one = run_kernel(data, partition, gradients, begin, end, 1)
    two = run_kernel(data, partition, gradients, begin, end, 2)
    np.testing.assert_array_equal(one, expected)
    np.testing.assert_array_equal(two, expected)


def test_large_nodes_of_many_bins_add_their_partials_exactly():
    """Nodes of several tasks over a histogram of several thousand bins
    (a 5,000-category-like feature beside narrow ones): the threads'
    partial histograms are added block by block of bins; every bin, the
    last partial block's included, equals the naive histogram."""
    rng = np.random.default_rng(17)
    n_rows = 70_000
    widths = np.array([5001, 9, 300, 2])
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
    data = BinnedData(codes.astype(np.uint16), bin_ptr)
    active = rng.random(n_rows) < 0.9
    partition = RowPartition(np.flatnonzero(active), n_rows)
    gradients, quantized = random_gradients(rng, active)
    n_active = int(active.sum())
    # two nodes of several tasks each, a small one, an empty one
    begin = np.array([0, 20_000, 61_000, 5], dtype=np.int64)
    end = np.array([20_000, 61_000, n_active, 5], dtype=np.int64)
    expected = naive_histograms(codes, bin_ptr, quantized,
                                np.asarray(partition.row_index), begin, end)
    for n_threads in (1, 2):
        np.testing.assert_array_equal(
            run_kernel(data, partition, gradients, begin, end, n_threads),
            expected)


def wide_binned(rng, n_rows, n_features):
    """uint8 codes of features wide enough for the wide layout
    (``_wide_layout``): 200 to 256 value bins, some with a missing bin no
    code reaches (257 bins: 256 value bins, no missing value), some codes
    missing."""
    widths = rng.integers(200, 258, n_features)
    widths[0] = 257
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([rng.integers(0, min(w, 256), n_rows)
                             for w in widths])
    # ties on one bin: a run of equal codes (consecutive updates of a bin)
    codes[: n_rows // 10, -1] = 3
    return BinnedData(codes.astype(np.uint8), bin_ptr)


@pytest.mark.parametrize("n_features", [1, 5, 28])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_wide_layout_matches_naive_histograms(n_features, n_threads):
    # the uint8 kernel's wide partial histograms (every feature WIDE_BINS
    # bins apart, moved to the narrow layout at the end): nodes below and
    # above WIDE_MIN_ROWS (4096), nodes of several tasks (16384 rows),
    # empty nodes, weighted and not
    rng = np.random.default_rng(n_features)
    n_rows = 45_000
    data = wide_binned(rng, n_rows, n_features)
    assert _wide_layout(data) is not None
    active = rng.random(n_rows) < 0.9
    partition = RowPartition(np.flatnonzero(active), n_rows)
    partition.split_nodes(data, [0], [int(active.sum())], [0], [100], [0],
                          n_threads=1)
    gpair = np.column_stack([rng.normal(0, 10, n_rows),
                             rng.uniform(0, 3, n_rows)]).astype(np.float32)
    for weight in (None, rng.uniform(0, 5, n_rows)):
        gradients = FixedPointGradients(gpair, weight, active.astype(np.uint8),
                                        1)
        quantized = gradients.quantized(active.astype(np.uint8), 1)
        n_active = int(active.sum())
        begin = np.array([0, 0, 100, 3000, 9000, 9000, 20000], np.int64)
        end = np.array([n_active, 50, 100, 9000, 14000, 9000, n_active],
                       np.int64)
        got = run_kernel(data, partition, gradients, begin, end, n_threads)
        expected = naive_histograms(data.codes, data.bin_ptr, quantized,
                                    np.asarray(partition.row_index), begin,
                                    end)
        np.testing.assert_array_equal(got, expected)


def split_levels(rng, data, partition, n_levels):
    """The slices of ``n_levels`` levels of random splits of every node
    (as a depth-wise tree grows): a deep node's rows are scattered over
    the data, the rows the kernel prefetches a few dozen ahead."""
    begin = np.array([0], np.int64)
    end = np.array([partition.row_index.shape[0]], np.int64)
    for _ in range(n_levels):
        k = begin.shape[0]
        n_left = partition.split_nodes(
            data, begin, end, rng.integers(0, data.n_features, k),
            rng.integers(0, 200, k), rng.integers(0, 2, k), n_threads=2)
        mid = begin + n_left
        begin = np.column_stack([begin, mid]).ravel()
        end = np.column_stack([mid, end]).ravel()
    return begin, end


@pytest.mark.parametrize("n_threads", [1, 2])
def test_scattered_deep_nodes_match_naive_histograms(n_threads):
    # the nodes of a fourth level of splits (16 nodes of scattered rows,
    # odd sizes, some above WIDE_MIN_ROWS and some below), a node of two
    # siblings' rows and the root (several tasks), weighted and not
    rng = np.random.default_rng(7 + n_threads)
    n_rows = 70_001
    data = wide_binned(rng, n_rows, 28)
    active = rng.random(n_rows) < 0.97
    partition = RowPartition(np.flatnonzero(active), n_rows)
    begin, end = split_levels(rng, data, partition, 4)
    sizes = end - begin
    assert sizes.min() < 4096 < sizes.max()   # narrow and wide nodes
    begin = np.concatenate([begin, [begin[0], 0]])
    end = np.concatenate([end, [end[1], end[-1]]])
    gpair = np.column_stack([rng.normal(0, 10, n_rows),
                             rng.uniform(0, 3, n_rows)]).astype(np.float32)
    for weight in (None, rng.uniform(0, 5, n_rows)):
        gradients = FixedPointGradients(gpair, weight, active.astype(np.uint8),
                                        n_threads)
        quantized = gradients.quantized(active.astype(np.uint8), 1)
        got = run_kernel(data, partition, gradients, begin, end, n_threads)
        expected = naive_histograms(data.codes, data.bin_ptr, quantized,
                                    np.asarray(partition.row_index), begin,
                                    end)
        np.testing.assert_array_equal(got, expected)


def test_wide_layout_only_where_it_pays():
    # narrow features (a few bins each) and uint16 codes keep the narrow
    # layout; the wide map sends a bin no uint8 code reaches to the zero
    # pair after every feature's
    rng = np.random.default_rng(0)
    assert _wide_layout(random_binned(rng, 100, 6, np.uint8)) is None
    assert _wide_layout(random_binned(rng, 100, 6, np.uint16)) is None
    bin_ptr = np.array([0, 257, 260], np.int64)
    wide = _wide_of_bin(bin_ptr)
    expected = np.concatenate([np.arange(256), [2 * 256],
                               256 + np.arange(3)])
    np.testing.assert_array_equal(wide, expected)


def naive_wide_of_bin(bin_ptr):
    """The wide layout's map bin by bin, as its definition reads (feature
    f's bin ``bin_ptr[f] + c`` at ``f * 256 + c``; c >= 256 at the zero
    pair after every feature's)."""
    n_features = len(bin_ptr) - 1
    out = []
    for f in range(n_features):
        for c in range(bin_ptr[f + 1] - bin_ptr[f]):
            out.append(f * 256 + c if c < 256 else n_features * 256)
    return np.array(out, dtype=np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_wide_of_bin_matches_naive_map(seed):
    # widths from 1 to 300 bins: some features past 256 bins (their last
    # bins at the zero pair), and a layout without features
    rng = np.random.default_rng(seed)
    widths = rng.integers(1, 301, size=rng.integers(1, 12))
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    np.testing.assert_array_equal(_wide_of_bin(bin_ptr),
                                  naive_wide_of_bin(bin_ptr))
    assert _wide_of_bin(np.zeros(1, np.int64)).shape == (0,)


@pytest.mark.parametrize("bin_ptr", [[1, 5], [0, 3, 3], [0, 4, 2], []])
def test_wide_of_bin_rejects_bad_layouts(bin_ptr):
    with pytest.raises(ValueError, match="bin_ptr"):
        _wide_of_bin(np.array(bin_ptr, dtype=np.int64))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_sibling_by_subtraction_is_exact(dtype):
    rng = np.random.default_rng(3)
    n_rows = 40_000
    data = random_binned(rng, n_rows, 8, dtype)
    # realistic quantised gradients: large values, sums close to 2**62
    gpair = np.column_stack([rng.normal(size=n_rows),
                             rng.uniform(0, 1, n_rows)]).astype(np.float32)
    gradients = FixedPointGradients(gpair, rng.uniform(0.2, 5, n_rows),
                                    np.ones(n_rows, np.uint8), 2)
    partition = RowPartition(np.arange(n_rows), n_rows)
    parent = run_kernel(data, partition, gradients, np.array([0]),
                        np.array([n_rows]), 2)
    for feature, split_bin in [(0, 0), (3, 2), (7, 1)]:
        partition = RowPartition(np.arange(n_rows), n_rows)
        n_left = int(partition.split_nodes(
            data, [0], [n_rows], [feature], [split_bin], [1],
            n_threads=2)[0])
        children = run_kernel(data, partition, gradients,
                              np.array([0, n_left]),
                              np.array([n_left, n_rows]), 2)
        np.testing.assert_array_equal(parent[0] - children[0], children[1])
        np.testing.assert_array_equal(parent[0] - children[1], children[0])


def test_threads_give_identical_histograms():
    rng = np.random.default_rng(9)
    n_rows = 70_000
    data = random_binned(rng, n_rows, 10, np.uint8)
    active = rng.random(n_rows) < 0.9
    gradients, _ = random_gradients(rng, active)
    partition = RowPartition(np.flatnonzero(active), n_rows)
    n_active = partition.row_index.shape[0]
    begin = np.array([0, 0, 1000, n_active // 2], dtype=np.int64)
    end = np.array([n_active, 20_000, 50_000, n_active], dtype=np.int64)
    one = run_kernel(data, partition, gradients, begin, end, 1)
    two = run_kernel(data, partition, gradients, begin, end, 2)
    np.testing.assert_array_equal(one, two)


def test_every_feature_sums_to_the_node_total():
    data, partition, gradients, quantized, begin, end = random_problem(
        11, np.uint8, n_rows=3000)
    hist = run_kernel(data, partition, gradients, begin, end, 2)
    rows = np.asarray(partition.row_index)
    for k in range(begin.shape[0]):
        total = quantized[rows[begin[k]:end[k]]].sum(axis=0)
        for f in range(data.n_features):
            block = hist[k, data.bin_ptr[f]:data.bin_ptr[f + 1]]
            np.testing.assert_array_equal(block.sum(axis=0), total)


# --------------------------------------------------------------------------
# quantize_gradients
# --------------------------------------------------------------------------

def is_power_of_two(x):
    mantissa, _ = np.frexp(x)
    return x > 0 and mantissa == 0.5


def exact(x):
    return Fraction(float(x))


def check_quantization(gpair, weight, active, n_threads=1):
    q, scales = quantize_gradients(gpair, weight, active.astype(np.uint8),
                                   n_threads)
    assert q.dtype == np.int64 and q.shape == gpair.shape
    assert scales.shape == (2,)
    assert np.all(q[~active] == 0)
    w = np.ones(gpair.shape[0]) if weight is None else weight
    n_active = int(active.sum())
    for c in range(2):
        scale = scales[c]
        assert is_power_of_two(scale)
        # no sum of the quantised values of the active rows can overflow
        largest = int(np.abs(q[active, c]).max()) if n_active else 0
        assert n_active * largest < SUM_LIMIT
        assert sum(abs(int(v)) for v in q[active, c]) < SUM_LIMIT
        for i in np.flatnonzero(active):
            value = exact(gpair[i, c]) * exact(w[i])
            # half a unit, plus the rounding of the float64 product g * w
            bound = Fraction(1, 2) / exact(scale) + abs(value) * Fraction(
                1, 2 ** 53)
            assert abs(Fraction(int(q[i, c])) / exact(scale) - value) <= bound
    return q, scales


@pytest.mark.parametrize("seed", range(12))
def test_quantization_is_bounded_and_accurate(seed):
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 300))
    magnitude = 10.0 ** rng.integers(-20, 20)
    gpair = np.column_stack([rng.normal(scale=magnitude, size=n_rows),
                             rng.uniform(0, magnitude, n_rows)])
    gpair = gpair.astype(np.float32)
    weight = None if seed % 3 == 0 else rng.uniform(0, 50, n_rows)
    active = rng.random(n_rows) < rng.uniform(0.2, 1.0)
    check_quantization(gpair, weight, active, 1 + seed % 2)


def test_quantization_uses_nearly_all_the_headroom():
    # the scale is the largest power of two of the bound, within a factor 4:
    # at most two bits below the fixed-point range
    rng = np.random.default_rng(1)
    for n_rows in (1, 2, 3, 1000, 65_537):
        gpair = rng.normal(size=(n_rows, 2)).astype(np.float32)
        q, scales = check_quantization(gpair, None, np.ones(n_rows, bool))
        for c in range(2):
            largest = np.abs(gpair[:, c].astype(np.float64)).max()
            assert n_rows * (largest * 4 * scales[c] + 0.5) >= SUM_LIMIT


def test_quantization_scale():
    for max_abs, n_terms in [(1.0, 1), (0.75, 1000), (3.0, 7), (1e-30, 5),
                             (1e30, 10**7), (1.0, 2**40), (1e-250, 3)]:
        s = quantization_scale(max_abs, n_terms)
        assert is_power_of_two(s)
        assert n_terms * (exact(max_abs) * exact(s) + Fraction(1, 2)) < SUM_LIMIT
        # at most two bits of headroom wasted
        assert n_terms * (exact(max_abs) * 4 * exact(s)
                          + Fraction(1, 2)) >= SUM_LIMIT
    assert quantization_scale(0.0, 10) == 1.0
    assert quantization_scale(1.0, 0) == 1.0


@pytest.mark.parametrize("max_abs", [1e-300, 2.0 ** -1000, 2.0 ** -1074])
def test_quantization_scale_of_tiny_values_is_finite(max_abs):
    # the largest power of two of the bound is beyond float64: the scale
    # must still be a finite power of two (an infinite one turns every
    # quantised value into llround(inf))
    s = quantization_scale(max_abs, 1)
    assert np.isfinite(s) and is_power_of_two(s)


def test_tiny_weights_quantize_accurately():
    # finite, positive weights whose products with the gradients are tiny
    rng = np.random.default_rng(6)
    gpair = np.column_stack([rng.normal(size=50),
                             rng.uniform(0.1, 1, 50)]).astype(np.float32)
    q, scales = check_quantization(gpair, np.full(50, 1e-300),
                                   np.ones(50, bool))
    assert np.all(np.isfinite(scales))
    # the values keep their signs and order
    assert np.all(np.sign(q[:, 0]) == np.sign(gpair[:, 0]))


def test_inactive_rows_do_not_affect_the_scale():
    rng = np.random.default_rng(2)
    gpair = rng.normal(size=(500, 2)).astype(np.float32)
    active = rng.random(500) < 0.5
    q, scales = check_quantization(gpair, None, active)
    gpair[~active] = 1e30  # huge gradients on inactive rows
    q2, scales2 = check_quantization(gpair, None, active)
    np.testing.assert_array_equal(scales, scales2)
    np.testing.assert_array_equal(q, q2)


def test_zero_gradients_and_no_active_rows():
    gpair = np.zeros((5, 2), dtype=np.float32)
    q, scales = check_quantization(gpair, None, np.ones(5, bool))
    assert np.all(q == 0)
    gpair = np.ones((5, 2), dtype=np.float32)
    q, scales = check_quantization(gpair, None, np.zeros(5, bool))
    assert np.all(q == 0)


def test_threads_give_identical_quantization():
    rng = np.random.default_rng(4)
    gpair = rng.normal(size=(100_000, 2)).astype(np.float32)
    weight = rng.uniform(0, 3, 100_000)
    active = (rng.random(100_000) < 0.8).astype(np.uint8)
    q1, s1 = quantize_gradients(gpair, weight, active, 1)
    q2, s2 = quantize_gradients(gpair, weight, active, 2)
    np.testing.assert_array_equal(q1, q2)
    np.testing.assert_array_equal(s1, s2)


def test_integer_weights_are_exact_multiples():
    """A row of integer weight w dequantises to exactly w times its
    gradient, as does the sum of w unit-weight copies: the weighted and the
    repeated data give the same histograms once dequantised."""
    rng = np.random.default_rng(5)
    n_rows = 300
    gpair = np.column_stack([rng.normal(size=n_rows),
                             rng.uniform(0.01, 1, n_rows)]).astype(np.float32)
    weight = rng.integers(0, 6, n_rows).astype(np.float64)
    active = np.ones(n_rows, bool)
    q_w, s_w = quantize_gradients(gpair, weight, active.view(np.uint8), 1)
    q_1, s_1 = quantize_gradients(gpair, None, active.view(np.uint8), 1)
    n_exact = 0
    for i in range(n_rows):
        for c in range(2):
            g = exact(gpair[i, c])
            if (g * exact(s_1[c])).denominator != 1:
                continue  # a tiny gradient: rounded, not exact
            n_exact += 1
            assert Fraction(int(q_1[i, c])) / exact(s_1[c]) == g
            assert (Fraction(int(q_w[i, c])) / exact(s_w[c])
                    == int(weight[i]) * g)
    assert n_exact == 2 * n_rows  # none of these gradients is tiny

    # histograms: weighted rows vs repeated rows
    codes = rng.integers(0, 4, (n_rows, 2)).astype(np.uint8)
    bin_ptr = np.array([0, 5, 10])
    repeat = weight.astype(np.int64)
    fixed_w = FixedPointGradients(gpair, weight, active.view(np.uint8), 1)
    fixed_r = FixedPointGradients(
        np.ascontiguousarray(np.repeat(gpair, repeat, axis=0)), None,
        np.ones(repeat.sum(), np.uint8), 1)
    s_r = fixed_r.scales
    h_w = run_kernel(BinnedData(codes, bin_ptr), RowPartition(
        np.arange(n_rows), n_rows), fixed_w, np.array([0]),
        np.array([n_rows]), 1)
    n_rep = int(repeat.sum())
    h_r = run_kernel(BinnedData(np.repeat(codes, repeat, axis=0), bin_ptr),
                     RowPartition(np.arange(n_rep), n_rep), fixed_r,
                     np.array([0]), np.array([n_rep]), 1)
    for c in range(2):
        for b in range(10):
            assert (Fraction(int(h_w[0, b, c])) / exact(s_w[c])
                    == Fraction(int(h_r[0, b, c])) / exact(s_r[c]))


# --------------------------------------------------------------------------
# Invalid inputs: a ValueError, never a crash or a silent out-of-bounds read.
# Each case runs in a child process so that a crash fails its own case only.
# --------------------------------------------------------------------------



_PRELUDE = """
import numpy as np
from skboost.tree._binning import BinnedData
from skboost.tree._histogram import (FixedPointGradients, build_histograms,
                                     quantize_gradients)
from skboost.tree._partition import RowPartition
N = 6
data = BinnedData(np.array([[0, 1], [1, 0], [2, 1], [0, 0], [1, 1], [2, 0]],
                           dtype=np.uint8), np.array([0, 4, 7]))
partition = RowPartition(np.arange(N), N)
begin = np.array([0, 2], dtype=np.int64)
end = np.array([2, 6], dtype=np.int64)
hist = np.zeros((2, 7, 2), dtype=np.int64)
gpair = np.ones((N, 2), dtype=np.float32)
active = np.ones(N, dtype=np.uint8)
gradients = FixedPointGradients(gpair, None, active, 1)
def build(**changes):
    args = dict(data=data, partition=partition, gradients=gradients,
                node_begin=begin, node_end=end, hist=hist, n_threads=1)
    args.update(changes)
    build_histograms(**args)
"""

BAD_INPUTS = {
    "gradients of fewer rows": (
        "build(gradients=FixedPointGradients(np.ones((N - 1, 2), np.float32),"
        " None, np.ones(N - 1, np.uint8), 1))"),
    "gpair float64": "FixedPointGradients(np.ones((N, 2)), None, active, 1)",
    "gpair not C-contiguous": (
        "FixedPointGradients(np.ones((2, N), np.float32).T, None, active, 1)"),
    "gpair 1-d": "FixedPointGradients(np.ones(2 * N, np.float32), None,"
                 " active, 1)",
    "quantized of other length": (
        "gradients.quantized(np.ones(N - 1, np.uint8), 1)"),
    "quantized into int32": (
        "gradients.quantized(active, 1, out=np.ones((N, 2), np.int32))"),
    "hist_rows repeated": (
        "build(hist_rows=[1, 1])"),
    "hist_rows beyond hist": (
        "build(hist_rows=[0, 2])"),
    "hist_rows negative": (
        "build(hist_rows=[-1, 0])"),
    "hist_rows of other length": (
        "build(hist_rows=[0])"),
    "hist with too few bins": "build(hist=np.zeros((2, 6, 2), np.int64))",
    "hist with too many nodes": "build(hist=np.zeros((3, 7, 2), np.int64))",
    "hist with 3 entries per bin": "build(hist=np.zeros((2, 7, 3), np.int64))",
    "hist float64": "build(hist=np.zeros((2, 7, 2)))",
    "hist not C-contiguous": (
        "build(hist=np.zeros((2, 2, 7), np.int64).transpose(0, 2, 1))"),
    "node range beyond the partition": (
        "build(node_end=np.array([2, 7]))"),
    "node range before the partition": (
        "build(node_begin=np.array([-1, 2]))"),
    "node range reversed": "build(node_begin=np.array([3, 2]))",
    "node_end of other length": (
        "build(node_end=np.array([2]), hist=np.zeros((2, 7, 2), np.int64))"),
    "node range beyond a smaller partition": (
        "build(partition=RowPartition(np.arange(4), N),"
        " node_end=np.array([2, 5]))"),
    "partition of other rows than data": (
        "build(partition=RowPartition(np.arange(3), 3),"
        " node_end=np.array([2, 3]))"),
    "build n_threads 0": "build(n_threads=0)",
    "build n_threads -1": "build(n_threads=-1)",
    "gpair with 3 columns": (
        "quantize_gradients(np.ones((N, 3), np.float32), None, active, 1)"),
    "gpair of other rows than active": (
        "quantize_gradients(gpair, None, np.ones(N + 1, np.uint8), 1)"),
    "weight of other length": (
        "quantize_gradients(gpair, np.ones(N - 1), active, 1)"),
    "quantize n_threads 0": "quantize_gradients(gpair, None, active, 0)",
    "quantize n_threads -1": "quantize_gradients(gpair, None, active, -1)",
    # llround of a non-finite value is undefined: its sums could overflow
    "NaN gradient": (
        "gpair[2, 0] = np.nan\nquantize_gradients(gpair, None, active, 1)"),
    "infinite hessian": (
        "gpair[2, 1] = np.inf\nquantize_gradients(gpair, None, active, 1)"),
    "NaN weight": (
        "w = np.ones(N)\nw[1] = np.nan\n"
        "quantize_gradients(gpair, w, active, 1)"),
}

VALID = {
    "valid pool build": (
        "pool = np.zeros((3, 7, 2), np.int64)\n"
        "build(hist=pool, hist_rows=[2, 0])\n"
        "units = pool[2] // gradients.scales.astype(np.int64)\n"
        "assert units[:, 0].tolist() == [1, 1, 0, 0, 1, 1, 0], units\n"
        "assert not pool[1].any()"),
    "valid build": (
        "build()\n"
        "units = hist // gradients.scales.astype(np.int64)\n"
        "assert units[0, :, 0].tolist() == [1, 1, 0, 0, 1, 1, 0], units[0]\n"
        "assert units[1, :, 1].tolist() == [1, 1, 2, 0, 2, 2, 0], units[1]"),
    "valid quantize": (
        "q, s = quantize_gradients(gpair, np.arange(N, dtype=float), active, 1)\n"
        "assert (q[:, 0] == np.arange(N) * s[0]).all()"),
}


test_valid_arguments_run, test_bad_inputs_raise_value_error = \
    snippet_input_tests(_PRELUDE, BAD_INPUTS, VALID)


@pytest.mark.parametrize("n_threads", [1, 2])
# the subtraction goes 64 int64 (32 bins) a block: fewer, exactly one,
# two, and a part block after whole ones
@pytest.mark.parametrize("n_bins", [17, 32, 64, 65, 200])
def test_subtract_histograms_equals_numpy(n_threads, n_bins):
    from skboost.tree._histogram import subtract_histograms
    rng = np.random.default_rng(3)
    hist = rng.integers(-2**40, 2**40, size=(9, n_bins, 2))
    parent, child = np.array([4, 0, 7]), np.array([2, 8, 1])
    want = hist.copy()
    want[parent] -= want[child]
    subtract_histograms(hist, parent, child, n_threads)
    np.testing.assert_array_equal(hist, want)


@pytest.mark.parametrize("parent,child", [([0, 1], [1, 2]), ([0], [9]),
                                          ([-1], [2]), ([0, 1], [2])])
def test_subtract_histograms_rejects_bad_rows(parent, child):
    from skboost.tree._histogram import subtract_histograms
    hist = np.zeros((4, 3, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="distinct rows"):
        subtract_histograms(hist, parent, child, 1)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_active_maxima_match_numpy(n_threads, weighted):
    # the scales' inputs: largest |g w|, |h w| over the active rows and
    # their count, whatever the threads (chunks); a non-finite value in an
    # inactive row is ignored, in an active one it is an error
    rng = np.random.default_rng(11)
    n = 100_003
    gpair = rng.normal(size=(n, 2)).astype(np.float32) * 3
    weight = rng.uniform(0.1, 4, n) if weighted else None
    active = rng.random(n) < 0.7
    inactive = np.flatnonzero(~active)
    gpair[inactive[:3], 0] = np.nan
    gpair[inactive[3:6], 1] = np.inf
    w = np.ones(n) if weight is None else weight
    expected = (float(np.abs(gpair[active, 0] * w[active]).max()),
                float(np.abs(gpair[active, 1] * w[active]).max()),
                int(active.sum()))
    got = active_maxima(gpair, weight, active.view(np.uint8), n_threads)
    assert got == expected
    gpair[np.flatnonzero(active)[-1], 1] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        active_maxima(gpair, weight, active.view(np.uint8), n_threads)
