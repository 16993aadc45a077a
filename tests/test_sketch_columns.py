"""The one-pass sketch of a matrix's columns (``_sketch.sketch_columns``,
its chunk gather ``gather_columns``), the prune's walk from the previous
jump (``_sketch._walks``), the prune's whole selection and the NaN column
check (``_binning.columns_with_nan``), each against the code it stands
for: ``sketch_column`` of each copied-out column, numpy's indexing, the
entry-by-entry scan and a naive Python walk, the prune's docstring in
plain Python, numpy's isnan."""

import numpy as np
import pytest

from skboost.tree._binning import columns_with_nan
from skboost.tree._sketch import (WeightedQuantileSummary, _ExactBuilder,
                                  _walks, gather_columns, sketch_column,
                                  sketch_columns)
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


def _cython_max(a, b):
    """Cython's ``max(a, b)`` of doubles: b if b > a else a."""
    return b if b > a else a


def _naive_prune_keep(summary, max_size):
    """The entries ``prune`` keeps, by ``select_pruned``'s docstring in
    plain Python: a_i, b_i, the bisection's ends (maxima taken one entry
    after the other), the bisection itself and the naive walk."""
    rmin, rmax, wmin = summary.rmin, summary.rmax, summary.wmin
    weight = summary.total_weight
    low, high = rmin + wmin, rmax - wmin
    n = len(low)
    gap, heaviest = -np.inf, 0.0
    for i in range(n - 1):
        gap = _cython_max(gap, high[i + 1] - low[i])
    for i in range(n):
        heaviest = _cython_max(heaviest, rmax[i] - rmin[i])
    tau_low = _cython_max(gap, (weight - max_size * heaviest)
                          / (max_size - 1) * (1.0 - 1e-9))
    tau_high = _cython_max(2.0 * (summary.eps * weight)
                           + weight / (max_size - 1), tau_low)

    def fits(tau):
        return _naive_walk(low, high, tau, max_size) is not None

    if fits(tau_low):
        return _naive_walk(low, high, tau_low, max_size)
    while not fits(tau_high):
        tau_high = _cython_max(2.0 * tau_high,
                               _cython_max(high[n - 1] - low[0], weight))
    while tau_high - tau_low > 2.0 ** -8 * tau_high:
        tau = tau_low + 0.5 * (tau_high - tau_low)
        if tau <= tau_low or tau >= tau_high:
            break
        if fits(tau):
            tau_high = tau
        else:
            tau_low = tau
    return _naive_walk(low, high, tau_high, max_size)


def _summaries_to_prune(rng):
    """Exact and merged summaries, unweighted and weighted: continuous,
    tied and heavy values."""
    n = int(rng.integers(50, 3000))
    values = np.concatenate([rng.normal(size=n),
                             rng.integers(0, 20, n // 3).astype(float)])
    weights = rng.choice([0.0, 1.0, 2.5, 40.0], p=[0.1, 0.6, 0.25, 0.05],
                         size=values.shape[0])
    exact = WeightedQuantileSummary.from_data(values)
    weighted = WeightedQuantileSummary.from_data(values, weights)
    merged = sketch_column(values, weights, max_bin=8, chunk_size=300,
                           summary_size=int(rng.integers(20, 200)))
    return exact, weighted, merged


@pytest.mark.parametrize("seed", range(12))
def test_prune_keeps_the_entries_of_its_docstring(seed):
    """``prune`` (select_pruned: one pass for a_i, b_i, the order check
    and the two maxima, taken in four lanes) keeps exactly the entries of
    the plain-Python bisection and walk, whatever the maxima's lanes."""
    rng = np.random.default_rng(seed)
    for summary in _summaries_to_prune(rng):
        for max_size in rng.integers(2, max(3, summary.size), size=4):
            if summary.size <= max_size:
                continue
            kept = summary.prune(int(max_size))
            expected = _naive_prune_keep(summary, int(max_size))
            np.testing.assert_array_equal(
                kept.values, summary.values[np.asarray(expected)])


@pytest.mark.parametrize("seed", range(6))
def test_unweighted_chunk_prune_keeps_what_unit_weights_keep(seed):
    """An unweighted chunk is pruned without the pre-pass
    (select_pruned_unit: a_i, b_i are its rmax_i, rmin_i): the entries
    kept are those of the same chunk with every weight 1.0 (the general
    path), and of the plain-Python prune of its exact summary."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(100, 20_000))
    values = np.concatenate([rng.normal(size=n),
                             rng.integers(0, 30, n // 2)]).astype(np.float32)
    values[rng.random(values.shape[0]) < 0.05] = np.nan
    builder = _ExactBuilder(values.shape[0], np.float32)
    for max_size in (2, 3, 17, int(rng.integers(4, 600))):
        unit = builder.build(values, None, max_size)
        general = builder.build(values, np.ones(values.shape[0]), max_size)
        _same_summary(unit, general)
        expected = _naive_prune_keep(
            WeightedQuantileSummary.from_data(values), max_size)
        exact_values = np.unique(values[~np.isnan(values)])
        np.testing.assert_array_equal(unit.values,
                                      exact_values[np.asarray(expected)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unweighted_exact_ranks_are_positions(dtype):
    """An unweighted exact summary's ranks (written as positions in the
    sorted values) are the running sums of np.unique's counts, bit for
    bit: ties, NaNs left out, one value, all NaN."""
    rng = np.random.default_rng(4)
    columns = [np.round(rng.normal(size=5000), 1),
               np.where(rng.random(5000) < 0.3, np.nan,
                        rng.integers(0, 7, 5000)),
               np.full(10, 2.5), np.full(4, np.nan)]
    for column in columns:
        values = column.astype(dtype)
        s = WeightedQuantileSummary.from_data(values)
        present = values[~np.isnan(values)].astype(np.float64)
        unique, counts = np.unique(present, return_counts=True)
        running = np.cumsum(counts).astype(np.float64)
        np.testing.assert_array_equal(s.values, unique)
        for got, want in ((s.wmin, counts.astype(np.float64)),
                          (s.rmax, running), (s.rmin, running - counts)):
            np.testing.assert_array_equal(np.asarray(got).view(np.uint64),
                                          want.view(np.uint64))


@pytest.mark.parametrize("n_rows, start, stop", [
    (1, 0, 1), (40, 0, 40), (100, 3, 97), (1000, 17, 17), (1000, 0, 1000),
    (5000, 1234, 4321)])
def test_gather_columns_equals_numpy_indexing(n_rows, start, stop):
    """Columns gathered 16 rows a step: X[start:stop, features] for any
    features (repeated, out of order), rows not a multiple of 16, an
    out buffer wider than the chunk (its tail untouched)."""
    rng = np.random.default_rng(n_rows + start)
    X = rng.normal(size=(n_rows, 9)).astype(np.float32)
    features = np.array([8, 0, 3, 3, 5], dtype=np.intp)
    out = np.full((features.shape[0], stop - start + 5), -7.0, np.float32)
    gather_columns(X, start, stop, features, out)
    np.testing.assert_array_equal(out[:, :stop - start],
                                  X[start:stop, features].T)
    assert np.all(out[:, stop - start:] == -7.0)


def test_gather_columns_bad_input():
    X = np.zeros((10, 3), np.float32)
    out = np.zeros((2, 10), np.float32)
    features = np.array([0, 2], dtype=np.intp)
    for start, stop in ((-1, 5), (5, 11), (6, 5)):
        with pytest.raises(ValueError, match="within X"):
            gather_columns(X, start, stop, features, out)
    with pytest.raises(ValueError, match="outside"):
        gather_columns(X, 0, 10, np.array([0, 3], dtype=np.intp), out)
    with pytest.raises(ValueError, match="outside"):
        gather_columns(X, 0, 10, np.array([-1, 0], dtype=np.intp), out)
    with pytest.raises(ValueError, match="row per feature"):
        gather_columns(X, 0, 10, features, np.zeros((2, 9), np.float32))
    with pytest.raises(ValueError, match="row per feature"):
        gather_columns(X, 0, 10, features, np.zeros((3, 10), np.float32))


def test_build_of_scratch_values_sorts_them_in_place():
    """A chunk handed over as scratch (sketch_columns' gathered columns)
    gets the summary of a copied chunk, bit for bit; a chunk that cannot
    be sorted in place as it is is refused."""
    rng = np.random.default_rng(8)
    values = rng.normal(size=3000).astype(np.float32)
    values[::17] = np.nan
    builder = _ExactBuilder(4000, np.float32)
    copied = builder.build(values, None, 64)
    scratch = values.copy()
    in_place = builder.build(scratch, None, 64, scratch=True)
    _same_summary(in_place, copied)
    for bad in (values.astype(np.float64), values[::2].copy()[::2],
                np.frombuffer(values.tobytes(), np.float32)):
        with pytest.raises(ValueError, match="scratch values"):
            builder.build(bad, None, 64, scratch=True)


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
