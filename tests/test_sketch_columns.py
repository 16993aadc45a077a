"""The one-pass sketch of a matrix's columns (``_sketch.sketch_columns``),
the prune's walk from the previous jump (``_sketch._walks``) and the NaN
column check (``_binning.columns_with_nan``), each against the code it
stands for: ``sketch_column`` of each copied-out column, the entry-by-entry
scan and a naive Python walk, numpy's isnan."""

import numpy as np
import pytest

from skboost.tree._binning import columns_with_nan
from skboost.tree._sketch import _walks, sketch_column, sketch_columns
from skboost.tree.binning import BinMapper, category_cuts, value_bin_caps


def _same_summary(a, b):
    for name in ("values", "rmin", "rmax", "wmin"):
        np.testing.assert_array_equal(
            np.asarray(getattr(a, name)).view(np.uint64),
            np.asarray(getattr(b, name)).view(np.uint64))
    assert a.total_weight == b.total_weight and a.eps == b.eps
    assert a.is_exact == b.is_exact


def _matrix(rng, n_rows, dtype=np.float32):
    X = np.column_stack([
        rng.normal(size=n_rows),                      # continuous
        rng.integers(0, 5, n_rows),                   # few distinct values
        np.round(rng.exponential(size=n_rows), 2),    # many ties
        rng.normal(size=n_rows) * 1e30,               # huge magnitudes
        np.zeros(n_rows),                             # one value
    ]).astype(dtype)
    X[rng.random(n_rows) < 0.1, 0] = np.nan
    X[rng.random(n_rows) < 0.02, 2] = -0.0           # np.sort's path
    return X


@pytest.mark.parametrize("n_rows, chunk_size", [
    (1, 65536), (1000, 65536), (70_000, 65536), (5000, 700)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sketch_columns_equal_sketch_column_bit_for_bit(n_rows, chunk_size,
                                                        weighted, dtype):
    rng = np.random.default_rng(n_rows + chunk_size)
    X = _matrix(rng, n_rows, dtype)
    weights = rng.exponential(size=n_rows) if weighted else None
    if weighted:
        weights[rng.random(n_rows) < 0.1] = 0.0
    features, max_bins = [4, 0, 2, 1, 3], [16, 256, 255, 2, 64]
    summaries = sketch_columns(X, features, max_bins, weights,
                               chunk_size=chunk_size)
    for f, b, summary in zip(features, max_bins, summaries):
        _same_summary(summary, sketch_column(
            np.ascontiguousarray(X[:, f]), weights, max_bin=b,
            chunk_size=chunk_size))


def test_sketch_columns_reads_any_layout():
    rng = np.random.default_rng(3)
    X = _matrix(rng, 3000)
    expected = sketch_columns(X, range(5), [32] * 5)
    for layout in (np.asfortranarray(X), X[::-1][::-1]):
        for a, b in zip(sketch_columns(layout, range(5), [32] * 5),
                        expected):
            _same_summary(a, b)


def test_sketch_columns_bad_input():
    X = np.zeros((10, 3), np.float32)
    with pytest.raises(ValueError, match="outside"):
        sketch_columns(X, [3], [8])
    with pytest.raises(ValueError, match="one max_bin per feature"):
        sketch_columns(X, [0, 1], [8])
    with pytest.raises(ValueError, match="max_bin must be >= 1"):
        sketch_columns(X, [0], [0])
    with pytest.raises(ValueError, match="2-D"):
        sketch_columns(X[:, 0], [0], [8])
    with pytest.raises(ValueError, match="weights must have the shape"):
        sketch_columns(X, [0], [8], np.ones(9))


def _naive_walk(low, high, tau, limit):
    """Prune's greedy walk in plain Python (the docstring's rule)."""
    n, p, kept = len(low), 0, [0]
    while p < n - 1:
        q = p + 1
        while q + 1 < n and high[q + 1] <= low[p] + tau:
            q += 1
        p = q
        if len(kept) == limit:
            return None
        kept.append(p)
    return kept


@pytest.mark.parametrize("seed", range(40))
def test_walk_from_the_previous_jump_keeps_the_same_entries(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    # ranks of a summary: nondecreasing b, a = b + weight, with ties,
    # plateaus and heavy entries
    weight = rng.choice([0.0, 1.0, 2.5, 40.0], p=[0.1, 0.6, 0.25, 0.05],
                        size=n) * rng.choice([1.0, 1e-3])
    high = np.concatenate([[0.0], np.cumsum(weight)[:-1]])
    low = high + weight
    for tau in rng.uniform(0, 80, size=6):
        limit = int(rng.integers(1, n + 2))
        scan, fast = _walks(low, high, tau, limit)
        naive = _naive_walk(low, high, tau, limit)
        assert (scan is None) == (naive is None) == (fast is None)
        if naive is not None:
            np.testing.assert_array_equal(scan, naive)
            np.testing.assert_array_equal(fast, naive)


def test_walk_with_unsorted_high_scans():
    low = np.array([1.0, 2.0, 3.0, 4.0])
    high = np.array([0.0, 2.0, 1.0, 3.0])
    scan, fast = _walks(low, high, 1.0, 10)
    assert fast is None
    np.testing.assert_array_equal(scan, _naive_walk(low, high, 1.0, 10))


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n_rows", [0, 1, 2047, 2048, 100_001])
def test_columns_with_nan_equal_numpy(n_threads, n_rows):
    rng = np.random.default_rng(n_rows)
    X = rng.normal(size=(n_rows, 6)).astype(np.float32)
    for f in (1, 4):
        if n_rows:
            X[rng.integers(0, n_rows), f] = np.nan
    X[:, 5] = np.inf
    np.testing.assert_array_equal(columns_with_nan(X, n_threads),
                                  np.isnan(X).any(axis=0))


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("where", ["none", "last", "block start",
                                   "negative nan"])
def test_columns_with_nan_where_the_flat_scan_finds_one(n_threads, where):
    # a block is scanned flat first: NaN-free blocks, a NaN as the very
    # last float, the first row of the second block, a NaN with its sign
    # bit set; and no features at all
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5000, 7)).astype(np.float32)
    if where == "last":
        X[-1, -1] = np.nan
    elif where == "block start":
        X[2048, 2] = np.nan
    elif where == "negative nan":
        X[4000, 0] = -np.float32(np.nan)
    np.testing.assert_array_equal(columns_with_nan(X, n_threads),
                                  np.isnan(X).any(axis=0))
    empty = np.empty((10, 0), dtype=np.float32)
    assert columns_with_nan(empty, n_threads).shape == (0,)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_bin_mapper_cuts_are_those_of_each_column_sketched(n_threads,
                                                           weighted):
    """BinMapper.fit against its definition: each numeric column sketched
    alone with its cap of value bins (255 with missing values at
    max_bin=256), each categorical one a bin per category."""
    rng = np.random.default_rng(5)
    X = _matrix(rng, 40_000)
    X[:, 1] = rng.integers(0, 7, 40_000)
    weight = rng.exponential(size=40_000) if weighted else None
    n_categories = np.array([0, 7, 0, 0, 0])
    mapper = BinMapper(256).fit(X, weight, n_threads,
                                n_categories=n_categories)
    missing = np.isnan(X).any(axis=0)
    np.testing.assert_array_equal(mapper.has_missing_, missing)
    caps = value_bin_caps(256, missing)
    for f in range(5):
        if n_categories[f]:
            expected = category_cuts(7)
        else:
            expected = sketch_column(np.ascontiguousarray(X[:, f]), weight,
                                     max_bin=int(caps[f])).cut_points(
                                         int(caps[f]))
        np.testing.assert_array_equal(mapper.cuts_[f], expected)
