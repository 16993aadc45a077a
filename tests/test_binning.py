"""Histogram binning (``binning.BinMapper``, ``_binning.map_to_bins``,
``_binning.BinnedData``) against oracles written here.

- Few distinct values: the cut points are the float64 midpoints of
  consecutive distinct values (of positive weight), one bin per value.
- Many distinct values: at most ``max_bin`` value bins, each holding about
  ``W / max_bin`` of the weight. The allowance is derived from the sketch's
  documented guarantees (``_sketch.pyx``): a column of at most one chunk
  gets an exact summary pruned to ``s = 8 * max_bin`` entries (Theorem 3:
  E <= W / (2 (s - 1))), merged into an empty summary (Theorem 2: E does not
  grow) and pruned again (Theorem 3 once more), so E <= W / (s - 1). Every cut
  answers the rank query ``k W / max_bin`` within E (Theorem 1), hence every
  bin's weight is within ``2 E + (weight of one value)`` of ``W / max_bin``.
- Codes: ``searchsorted(cuts, x, side="right")``; NaN gets the feature's
  missing code (its number of value bins).
- The invariant shared by the partitioner (which compares codes) and the
  predictor (which compares values): ``code <= b`` exactly when
  ``x < split_thresholds_[bin_ptr[f] + b]``, for every value bin b.
"""

import sys

import numpy as np
import pytest

from skboost.tree._binning import (BinnedData, _search_tables, bin_matrix,
                                   map_to_bins, set_table_search)
from skboost.tree.binning import BinMapper
from _isolation import snippet_input_tests


# --------------------------------------------------------------------------
# Oracles
# --------------------------------------------------------------------------

def naive_midpoints(column, weight=None):
    """Midpoints (float64) of consecutive distinct present values of
    positive weight."""
    keep = ~np.isnan(column)
    if weight is not None:
        keep &= weight > 0
    distinct = np.unique(column[keep].astype(np.float64))
    return 0.5 * (distinct[:-1] + distinct[1:])


def naive_codes(X, cuts):
    """Code of every value: number of cuts <= x; NaN -> len(cuts) + 1."""
    codes = np.empty(X.shape, dtype=np.int64)
    for f, c in enumerate(cuts):
        x = X[:, f].astype(np.float64)
        codes[:, f] = np.searchsorted(c, x, side="right")
        codes[np.isnan(x), f] = c.shape[0] + 1
    return codes


def sketch_error_bound(total_weight, n_bins):
    """A priori rank error of a one-chunk column (see the module docstring)."""
    summary_size = 8 * n_bins
    return total_weight / (summary_size - 1)


def check_threshold_invariant(mapper, X):
    """``code <= b`` iff ``x < split_thresholds_[bin_ptr[f] + b]`` for every
    value bin b; NaN gets the missing code (above every value bin)."""
    codes = mapper.transform(X)
    for f in range(X.shape[1]):
        n_value = int(mapper.n_value_bins_[f])
        first = int(mapper.bin_ptr_[f])
        thresholds = mapper.split_thresholds_[first:first + n_value]
        x = X[:, f].astype(np.float64)
        code = codes[:, f].astype(np.int64)
        present = ~np.isnan(x)
        assert np.all(code[~present] == n_value)
        goes_left_by_code = code[present, None] <= np.arange(n_value)
        goes_left_by_value = x[present, None] < thresholds[None, :]
        np.testing.assert_array_equal(goes_left_by_code, goes_left_by_value,
                                      err_msg=f"feature {f}")


def few_distinct_data(seed, n_rows=400, n_features=4, n_values=12):
    rng = np.random.default_rng(seed)
    X = np.empty((n_rows, n_features), dtype=np.float32)
    for f in range(n_features):
        values = rng.normal(scale=10.0 ** rng.integers(-3, 4),
                        size=int(rng.integers(1, n_values + 1)))
        X[:, f] = rng.choice(values.astype(np.float32), size=n_rows)
    X[rng.random(X.shape) < 0.15] = np.nan
    return X


# --------------------------------------------------------------------------
# Cut points
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
def test_few_distinct_values_give_midpoints(seed, weighted):
    rng = np.random.default_rng(100 + seed)
    X = few_distinct_data(seed)
    weight = None
    if weighted:
        # some zero weights: values seen only with weight 0 do not count
        weight = rng.choice([0.0, 0.5, 1.0, 2.5], size=X.shape[0])
    mapper = BinMapper(max_bin=12).fit(X, weight)
    for f in range(X.shape[1]):
        expected = naive_midpoints(X[:, f], weight)
        np.testing.assert_array_equal(mapper.cuts_[f], expected)
        assert mapper.n_value_bins_[f] == max(expected.shape[0] + 1, 1)
    check_threshold_invariant(mapper, X)


def test_midpoints_across_several_sketch_chunks():
    # more rows than one sketch chunk (65536): summaries of the chunks are
    # merged, and few distinct values must still give exact midpoints
    rng = np.random.default_rng(5)
    values = np.array([-7.5, -1.0, 0.0, 0.25, 3.0, 1e4], dtype=np.float32)
    X = rng.choice(values, size=(150_000, 1)).astype(np.float32)
    X[rng.random(X.shape) < 0.01] = np.nan
    mapper = BinMapper(max_bin=6).fit(X)
    np.testing.assert_array_equal(mapper.cuts_[0], naive_midpoints(X[:, 0]))


def test_adjacent_float32_values_get_a_cut_between_them():
    a = np.float32(1.0)
    b = np.nextafter(a, np.float32(2.0))
    X = np.array([[a], [b], [a], [b]], dtype=np.float32)
    mapper = BinMapper(max_bin=4).fit(X)
    cut = mapper.cuts_[0]
    assert cut.shape == (1,) and float(a) < cut[0] < float(b)
    assert mapper.transform(X)[:, 0].tolist() == [0, 1, 0, 1]


@pytest.mark.parametrize("max_bin", [2, 7, 32, 100])
@pytest.mark.parametrize("weighted", [False, True])
def test_continuous_bins_hold_about_equal_weight(max_bin, weighted):
    rng = np.random.default_rng(max_bin + 1000 * weighted)
    n_rows = 6000
    draws = [lambda: rng.normal(size=n_rows),
             lambda: rng.exponential(size=n_rows) ** 3,
             lambda: rng.uniform(-1, 1, n_rows)]
    X = np.empty((n_rows, len(draws)), dtype=np.float32)
    for f, draw in enumerate(draws):
        X[:, f] = draw()
        while np.unique(X[:, f]).size < n_rows:  # no ties in float32
            X[:, f] = draw()
    X[rng.random(X.shape) < 0.1] = np.nan
    weight = rng.uniform(0.5, 2.0, n_rows) if weighted else np.ones(n_rows)
    mapper = BinMapper(max_bin=max_bin).fit(X, weight if weighted else None)
    codes = mapper.transform(X)
    for f in range(X.shape[1]):
        present = ~np.isnan(X[:, f])
        assert np.unique(X[present, f]).size == present.sum()  # continuous
        W = weight[present].sum()
        E = sketch_error_bound(W, max_bin)
        n_value = int(mapper.n_value_bins_[f])
        assert n_value <= max_bin
        # with distinct values of weight <= 2 and targets W / max_bin apart,
        # every target has its own cut: exactly max_bin bins
        assert W / max_bin > 2 * E + 2 * weight.max()
        assert n_value == max_bin
        bin_weight = np.bincount(codes[present, f], weights=weight[present],
                                 minlength=n_value)
        assert bin_weight.shape == (n_value,)
        allowance = 2 * E + weight.max()
        assert np.all(np.abs(bin_weight - W / max_bin) <= allowance), (
            f, bin_weight, W / max_bin, allowance)


def test_ties_never_exceed_max_bin_and_bins_stay_light():
    # more distinct values than bins, with heavy ties: a bin holds at most
    # W / max_bin + 2 E besides the weight of the single value at its left
    # edge (no cut can split a value)
    rng = np.random.default_rng(11)
    n_rows, max_bin = 5000, 16
    X = np.column_stack([rng.integers(0, 60, n_rows),
                         rng.geometric(0.05, n_rows),
                         np.round(rng.normal(size=n_rows), 1)]).astype(np.float32)
    weight = rng.uniform(0.1, 3.0, n_rows)
    mapper = BinMapper(max_bin=max_bin).fit(X, weight)
    codes = mapper.transform(X)
    for f in range(X.shape[1]):
        W = weight.sum()
        E = sketch_error_bound(W, max_bin)
        n_value = int(mapper.n_value_bins_[f])
        assert 1 < n_value <= max_bin
        bin_weight = np.bincount(codes[:, f], weights=weight,
                                 minlength=n_value)
        for k in range(n_value):
            in_bin = codes[:, f] == k
            edge = X[in_bin, f].min()
            edge_weight = weight[in_bin & (X[:, f] == edge)].sum()
            assert bin_weight[k] <= W / max_bin + 2 * E + edge_weight + 1e-9
    check_threshold_invariant(mapper, X)


# --------------------------------------------------------------------------
# Codes and the threshold invariant
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_transform_matches_searchsorted_and_thresholds(seed):
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 3000))
    X = np.column_stack([
        rng.normal(size=n_rows),
        rng.integers(-5, 5, n_rows),
        rng.lognormal(sigma=3, size=n_rows),
        np.full(n_rows, 4.0),                      # a constant feature
    ]).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 0][rng.random(n_rows) < 0.5] = np.nan
    max_bin = int(rng.choice([2, 3, 16, 255, 256, 300]))
    weight = rng.uniform(0, 2, n_rows) if seed % 2 else None
    mapper = BinMapper(max_bin=max_bin).fit(X, weight)
    codes = mapper.transform(X, n_threads=1 + seed % 2)
    np.testing.assert_array_equal(codes.astype(np.int64),
                                  naive_codes(X, mapper.cuts_))
    check_threshold_invariant(mapper, X)
    # unseen values too (outside the range, between and on cut points)
    X_new = np.concatenate([
        rng.normal(scale=100, size=(500, 4)),
        np.column_stack([rng.choice(c, 200) if c.size else np.zeros(200)
                         for c in mapper.cuts_]),
    ]).astype(np.float32)
    X_new[rng.random(X_new.shape) < 0.1] = np.nan
    np.testing.assert_array_equal(mapper.transform(X_new).astype(np.int64),
                                  naive_codes(X_new, mapper.cuts_))
    check_threshold_invariant(mapper, X_new)


def test_layout_of_the_flat_histogram():
    X = few_distinct_data(3, n_features=5)
    X[:, 2] = np.nan  # a feature with missing values only
    mapper = BinMapper(max_bin=8).fit(X)
    n_value = np.array([c.shape[0] + 1 for c in mapper.cuts_])
    np.testing.assert_array_equal(mapper.n_value_bins_, n_value)
    np.testing.assert_array_equal(mapper.bin_ptr_,
                                  np.concatenate([[0], np.cumsum(n_value + 1)]))
    assert mapper.n_bins_total == int(np.sum(n_value + 1))
    assert mapper.split_thresholds_.shape == (mapper.n_bins_total,)
    for f, c in enumerate(mapper.cuts_):
        first = mapper.bin_ptr_[f]
        block = mapper.split_thresholds_[first:mapper.bin_ptr_[f + 1]]
        np.testing.assert_array_equal(block[:-2], c)
        assert block[-2] == np.inf       # last value bin: present vs missing
        assert np.isnan(block[-1])       # the missing bin
    assert mapper.n_value_bins_[2] == 1
    assert np.all(mapper.transform(X)[:, 2] == 1)


def test_max_bin_256_with_missing_values_keeps_one_byte_codes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 3)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    mapper = BinMapper(max_bin=256).fit(X)
    assert mapper.n_value_bins_.tolist() == [255, 255, 255]
    codes = mapper.transform(X)
    assert codes.dtype == np.uint8
    assert np.all(codes[np.isnan(X)] == 255)
    assert codes[~np.isnan(X)].max() == 254
    np.testing.assert_array_equal(codes.astype(np.int64),
                                  naive_codes(X, mapper.cuts_))


@pytest.mark.parametrize("max_bin,missing", [(256, False), (256, True),
                                             (300, False),
                                             (300, True), (1000, True),
                                             (255, False), (255, True),
                                             (64, True)])
def test_code_dtype_fits_every_code(max_bin, missing):
    # uint8 exactly when every code that can occur fits a byte: the value
    # codes 0..n_value_bins-1, and the missing code n_value_bins only for a
    # feature that has missing values
    rng = np.random.default_rng(max_bin)
    X = rng.normal(size=(20_000, 2)).astype(np.float32)
    if missing:
        X[rng.random(X.shape) < 0.05] = np.nan
    mapper = BinMapper(max_bin=max_bin).fit(X)
    has_missing = np.isnan(X).any(axis=0)
    largest_code = int(np.max(mapper.n_value_bins_ - 1 + has_missing))
    expected = np.uint8 if largest_code <= 255 else np.uint16
    codes = mapper.transform(X)
    assert codes.dtype == expected
    assert int(codes.max()) == largest_code
    if max_bin <= 256:
        assert codes.dtype == np.uint8
    else:
        assert largest_code > 255 and codes.dtype == np.uint16
    # continuous columns of 20,000 rows fill every allowed bin (see
    # test_continuous_bins_hold_about_equal_weight); only max_bin=256 with
    # missing values gives up a bin, so that the missing code fits a byte
    allowed = 255 if (max_bin == 256 and missing) else max_bin
    assert mapper.n_value_bins_.tolist() == [allowed] * X.shape[1]
    np.testing.assert_array_equal(codes.astype(np.int64),
                                  naive_codes(X, mapper.cuts_))
    check_threshold_invariant(mapper, X)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_map_to_bins_with_given_cuts(seed, dtype):
    rng = np.random.default_rng(seed)
    n_rows, n_features = 2000, 5
    limit = 254 if dtype == np.uint8 else 1000
    cuts = [np.unique(rng.normal(size=int(rng.integers(0, limit + 1)))
                      .astype(np.float32)).astype(np.float64)
            for _ in range(n_features)]
    cut_ptr = np.concatenate([[0], np.cumsum([c.size for c in cuts])])
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    # values equal to cut points go to the bin above the cut
    for f, c in enumerate(cuts):
        if c.size:
            on_cut = rng.random(n_rows) < 0.2
            X[on_cut, f] = rng.choice(c, on_cut.sum())
    X[rng.random(X.shape) < 0.1] = np.nan
    codes = np.full(X.shape, 77, dtype=dtype)
    map_to_bins(X, np.concatenate(cuts), cut_ptr.astype(np.int64), codes,
                1 + seed % 2)
    np.testing.assert_array_equal(codes.astype(np.int64), naive_codes(X, cuts))


# cut counts of consecutive features: runs of four or more with one
# count are searched four side by side (map_to_bins' lockstep groups),
# the rest one by one; runs cut short, counts of 0 and 1, a group
# starting past feature 0
LOCKSTEP_COUNTS = {
    "all equal": [255] * 9,
    "runs and breaks": [7, 7, 7, 7, 7, 3, 3, 3, 3, 0, 0, 0, 0, 1, 1, 1, 1,
                        5, 5, 5, 9, 9, 9, 9],
    "one feature": [31],
    "short runs": [4, 4, 4, 2, 2, 2, 6],
    "many cuts": [1000] * 5 + [999],
}


@pytest.mark.parametrize("counts", list(LOCKSTEP_COUNTS.values()),
                         ids=list(LOCKSTEP_COUNTS))
@pytest.mark.parametrize("seed", range(3))
def test_map_to_bins_side_by_side_searches_match_searchsorted(counts, seed):
    """Codes of features searched side by side (groups of four with as
    many cuts) and one by one: the number of cuts <= the value
    (np.searchsorted in float64), NaN the missing code, values on the
    cuts, beyond them and infinite included."""
    rng = np.random.default_rng(seed)
    cuts = [np.sort(rng.choice(np.unique(rng.normal(size=3 * n + 10).astype(
        np.float32)), size=n, replace=False)).astype(np.float64)
        for n in counts]
    n_rows = 3000
    X = rng.normal(scale=1.5, size=(n_rows, len(counts))).astype(np.float32)
    for f, c in enumerate(cuts):
        if c.size:
            on_cut = rng.random(n_rows) < 0.2
            X[on_cut, f] = rng.choice(c, on_cut.sum())
    X[rng.random(X.shape) < 0.05] = np.inf
    X[rng.random(X.shape) < 0.05] = -np.inf
    X[rng.random(X.shape) < 0.1] = np.nan
    dtype = np.uint16 if max(counts) > 254 else np.uint8
    codes = np.full(X.shape, 77, dtype=dtype)
    cut_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    map_to_bins(X, np.concatenate(cuts), cut_ptr, codes, 1 + seed % 2)
    np.testing.assert_array_equal(codes.astype(np.int64), naive_codes(X, cuts))


def test_map_to_bins_side_by_side_missing_code_overflow():
    """Four features of 255 cuts share a search: a NaN among them (missing
    code 256) does not fit uint8 codes, a ValueError; without NaN their
    codes fit. (Cuts two apart: a unit apart they would be counted, not
    searched side by side.)"""
    cuts = np.tile(np.arange(255.0) * 2, 4)
    cut_ptr = np.arange(0, 5 * 255, 255, dtype=np.int64)
    X = np.full((3, 4), 600.0, dtype=np.float32)
    codes = np.zeros(X.shape, dtype=np.uint8)
    map_to_bins(X, cuts, cut_ptr, codes, 1)
    assert np.all(codes == 255)
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match="missing code does not fit"):
        map_to_bins(X, cuts, cut_ptr, codes, 1)


# features whose cuts are a unit apart (categories' cuts, 0.5 .. n - 1.5,
# and shifted ones) are counted without a search (``unit_step_count``,
# checked against the two cuts around its guess): the codes must still be
# the number of cuts <= x for every float32, near the cuts or far away
UNIT_STEP_CUTS = {
    "categories": [np.arange(29_999) + 0.5],
    "too few to count": [np.arange(15) + 0.5, np.arange(16) + 0.5],
    "negative and large offsets": [np.arange(300) - 150.25,
                                   np.arange(40) + 1e6 + 0.5,
                                   np.arange(20) + 2.0 ** 23],
    "four alike beside a search group": [np.arange(99) + 0.5] * 4
    + [np.linspace(-1, 1, 99)] * 4,
    "a gap breaks the step": [np.r_[np.arange(20), 21.0] + 0.5],
}


@pytest.mark.parametrize("cuts", list(UNIT_STEP_CUTS.values()),
                         ids=list(UNIT_STEP_CUTS))
@pytest.mark.parametrize("seed", range(3))
def test_map_to_bins_unit_step_cuts_match_searchsorted(cuts, seed):
    """Codes of features of unit-step cuts: ``searchsorted`` (float64) of
    integers, values on the cuts and one float32 step either side of
    them, random reals, values far outside, +-inf, -0.0 and NaN."""
    rng = np.random.default_rng(seed)
    n_rows = 4000
    X = np.empty((n_rows, len(cuts)), dtype=np.float32)
    for f, c in enumerate(cuts):
        lo, hi = c[0] - 3, c[-1] + 3
        c32 = c.astype(np.float32)
        kinds = [np.floor(rng.uniform(lo, hi, n_rows)),
                 rng.choice(c32, n_rows),
                 np.nextafter(rng.choice(c32, n_rows), np.float32(np.inf)),
                 np.nextafter(rng.choice(c32, n_rows), np.float32(-np.inf)),
                 rng.uniform(lo, hi, n_rows),
                 rng.choice([-3e38, -1e9, 1e9, 3e38, np.inf, -np.inf, -0.0,
                             0.0, np.nan], n_rows)]
        X[:, f] = np.asarray(kinds)[rng.integers(0, len(kinds), n_rows),
                                    np.arange(n_rows)]
    cut_ptr = np.concatenate([[0], np.cumsum([c.size for c in cuts])])
    codes = np.full(X.shape, 77, dtype=np.uint16)
    map_to_bins(X, np.concatenate(cuts), cut_ptr.astype(np.int64), codes,
                1 + seed % 2)
    np.testing.assert_array_equal(codes.astype(np.int64),
                                  naive_codes(X, cuts))


def test_unit_step_features_flags():
    """Which features are counted directly: unit-step finite cuts, at
    least UNIT_STEP_MIN_CUTS (16) of them, exact in float32."""
    from skboost.tree._binning import _unit_step_features
    cuts = [np.arange(16) + 0.5, np.arange(15) + 0.5,
            np.r_[np.arange(20), 21.0], np.arange(16) * 2.0,
            np.full(16, np.inf), np.arange(16) + 0.1, np.arange(16) - 4.0]
    cut_ptr = np.concatenate([[0], np.cumsum([c.size for c in cuts])])
    cuts32 = np.concatenate(cuts).astype(np.float32)
    # 0.1 + j is no float32 unit step (0.1 rounds differently from 15.1)
    expected = [1, 0, 0, 0, 0, int(np.array_equal(
        cuts[5].astype(np.float32).astype(np.float64),
        np.float64(np.float32(0.1)) + np.arange(16))), 1]
    np.testing.assert_array_equal(_unit_step_features(cuts32, cut_ptr),
                                  expected)


def naive_unit_step_flags(cuts32, cut_ptr, min_cuts=16):
    """One feature at a time: finite first and last cut, at least
    min_cuts of them, each cut its first + j in float64."""
    cuts = np.asarray(cuts32, dtype=np.float64)
    flags = []
    for f in range(len(cut_ptr) - 1):
        c = cuts[cut_ptr[f]:cut_ptr[f + 1]]
        flags.append(int(c.size >= min_cuts and np.isfinite(c[0])
                         and np.isfinite(c[-1]) and all(
                             c[j] == c[0] + float(j) for j in range(c.size))))
    return flags


def naive_lockstep_starts(n_cuts, unit_step, lanes=4):
    """Greedy from feature 0: a group of `lanes` searched features with
    the same number of cuts (at least one) starts at f, then f += lanes."""
    starts = [0] * len(n_cuts)
    f = 0
    while f + lanes <= len(n_cuts):
        group = range(f, f + lanes)
        if n_cuts[f] >= 1 and all(n_cuts[g] == n_cuts[f]
                                  and not unit_step[g] for g in group):
            starts[f] = 1
            f += lanes
        else:
            f += 1
    return starts


@pytest.mark.parametrize("seed", range(6))
def test_feature_plans_match_one_feature_at_a_time(seed):
    """The unit-step flags and the side-by-side groups, computed over
    whole arrays, against the naive per-feature walk: random layouts of
    empty, short, unit-step (some broken by a gap, a NaN or an
    infinity) and equal-sized features."""
    from skboost.tree._binning import _lockstep_features, _unit_step_features
    rng = np.random.default_rng(seed)
    cuts, n = [], 0
    for _ in range(int(rng.integers(0, 40))):
        kind = rng.integers(0, 6)
        # runs of features with as many cuts (the side-by-side groups)
        if rng.random() < 0.4:
            n = int(rng.choice([0, 1, 3, 15, 16, 17, 40]))
        c = (rng.integers(-5, 5) + 0.5 + np.arange(n, dtype=np.float64)
             if kind < 3 else np.sort(rng.normal(size=n)))
        if kind == 1 and n:
            c[rng.integers(0, n)] += rng.choice([1.0, np.nan, np.inf])
        cuts.append(c.astype(np.float32))
    cut_ptr = np.concatenate([[0], np.cumsum([c.size for c in cuts])]
                             ).astype(np.int64)
    cuts32 = (np.concatenate(cuts) if cuts else np.empty(0, np.float32))
    unit_step = _unit_step_features(cuts32, cut_ptr)
    assert unit_step.dtype == np.uint8
    assert unit_step.tolist() == naive_unit_step_flags(cuts32, cut_ptr)
    n_cuts = np.diff(cut_ptr).tolist()
    for flags in (unit_step, None):
        expected = naive_lockstep_starts(
            n_cuts, [0] * len(n_cuts) if flags is None else flags.tolist())
        assert _lockstep_features(cut_ptr, flags).tolist() == expected


def test_map_to_bins_threads_give_identical_codes():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50_000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    mapper = BinMapper(max_bin=64).fit(X)
    np.testing.assert_array_equal(mapper.transform(X, n_threads=1),
                                  mapper.transform(X, n_threads=2))


# --------------------------------------------------------------------------
# The table search (map_to_bins where the CPU has AVX-512, every feature at
# most 256 sorted cuts): two compares of 16 lanes a value, the same codes
# as the binary search (np.searchsorted in float64 here), whichever block
# a value falls in, and the feature-major copy it writes beside them
# --------------------------------------------------------------------------

@pytest.fixture(params=[True, False], ids=["table search", "binary search"])
def table_search(request):
    previous = set_table_search(request.param)
    yield request.param
    set_table_search(previous)


# cut counts around the table's 16-cut blocks, none, and its 256
TABLE_COUNTS = [0, 1, 15, 16, 17, 31, 32, 33, 100, 239, 240, 241, 254,
                255, 256]


def _adversarial_cuts(rng, n):
    """n sorted distinct cuts: float32 values around 0 (0.0 among them
    when n > 2), float32's extremes at the ends when n > 4, +inf last
    when n > 8 (a cut the +inf padding equals)."""
    pool = np.unique(rng.normal(scale=3, size=4 * n + 8).astype(np.float32))
    cuts = np.sort(rng.choice(pool, size=n, replace=False)).astype(np.float64)
    if n > 2:
        cuts[n // 2] = 0.0
    if n > 4:
        cuts[0], cuts[-1] = -3.4028234663852886e38, 3.4028234663852886e38
    if n > 8:
        cuts[-1] = np.inf
    return np.unique(cuts)


def _values_around(rng, cuts, n_rows):
    """Values on the cuts, one float32 step either side of them, random
    reals, -0.0, 0.0, +-inf, NaN, float32's extremes and subnormals."""
    c32 = cuts.astype(np.float32) if cuts.size else np.zeros(1, np.float32)
    with np.errstate(over="ignore"):
        kinds = [rng.choice(c32, n_rows),
                 np.nextafter(rng.choice(c32, n_rows), np.float32(np.inf)),
                 np.nextafter(rng.choice(c32, n_rows), np.float32(-np.inf)),
                 rng.normal(scale=3, size=n_rows).astype(np.float32),
                 rng.choice(np.array([-0.0, 0.0, np.inf, -np.inf, np.nan,
                                      3.4028235e38, -3.4028235e38, 1e-45,
                                      -1e-45], np.float32), n_rows)]
    pick = rng.integers(0, len(kinds), n_rows)
    return np.asarray(kinds)[pick, np.arange(n_rows)]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_table_search_matches_searchsorted(table_search, n_threads, seed):
    rng = np.random.default_rng(seed)
    counts = list(rng.permutation(TABLE_COUNTS))
    cuts = [_adversarial_cuts(rng, n) for n in counts]
    n_rows = 8000          # enough work for two threads
    X = np.column_stack([_values_around(rng, c, n_rows) for c in cuts])
    # the feature-major copy is written in the same pass
    codes = np.full(X.shape, 7777, dtype=np.uint16)
    by_feature = np.full(X.shape[::-1], 7777, dtype=np.uint16)
    cut_ptr = np.concatenate([[0], np.cumsum([c.size for c in cuts])])
    # every feature fits the tables (the fixture's first case takes them)
    assert _search_tables(np.concatenate(cuts).astype(np.float32),
                          cut_ptr) is not None
    map_to_bins(X, np.concatenate(cuts), cut_ptr.astype(np.int64), codes,
                n_threads, by_feature)
    expected = naive_codes(X, cuts)
    np.testing.assert_array_equal(codes.astype(np.int64), expected)
    np.testing.assert_array_equal(by_feature, codes.T)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_table_search_byte_codes_and_their_copy(table_search, n_threads):
    # uint8 codes (at most 254 cuts: NaN's code fits), with the copy
    rng = np.random.default_rng(5)
    cuts = [_adversarial_cuts(rng, n) for n in (254, 3, 0, 16, 200, 33)]
    X = np.column_stack([_values_around(rng, c, 12_000) for c in cuts])
    codes = np.empty(X.shape, dtype=np.uint8)
    by_feature = np.empty(X.shape[::-1], dtype=np.uint8)
    cut_ptr = np.concatenate([[0], np.cumsum([c.size for c in cuts])])
    map_to_bins(X, np.concatenate(cuts), cut_ptr.astype(np.int64), codes,
                n_threads, by_feature)
    np.testing.assert_array_equal(codes.astype(np.int64),
                                  naive_codes(X, cuts))
    np.testing.assert_array_equal(by_feature, codes.T)


def test_search_tables_only_for_few_sorted_cuts():
    """The tables: cuts padded with +inf, each block's last cut; none
    where a feature has more than 256 cuts, unsorted or NaN cuts (the
    binary search codes those)."""
    cuts = np.arange(20, dtype=np.float32)
    tables, splitters = _search_tables(cuts, np.array([0, 3, 20]))
    assert tables.shape == (2, 256) and splitters.shape == (2, 16)
    np.testing.assert_array_equal(tables[0, :4], [0, 1, 2, np.inf])
    np.testing.assert_array_equal(tables[1, :17], np.arange(3, 20))
    assert np.all(np.isinf(tables[1, 17:]))
    np.testing.assert_array_equal(splitters[1, :2], [18, np.inf])
    np.testing.assert_array_equal(splitters, tables[:, 15::16])
    assert _search_tables(np.arange(257, dtype=np.float32),
                          np.array([0, 257])) is None
    assert _search_tables(np.array([0, 2, 1], np.float32),
                          np.array([0, 3])) is None
    assert _search_tables(np.array([0, np.nan], np.float32),
                          np.array([0, 2])) is None
    # a decrease across two features is no disorder
    assert _search_tables(np.array([5, 6, 1, 2], np.float32),
                          np.array([0, 2, 4])) is not None


def test_unsorted_cuts_code_as_the_search_does():
    # cuts out of order (no caller passes them, the docstring asks for
    # sorted ones): the table search is not taken, the codes are the
    # binary search's
    X = np.linspace(-3, 3, 50, dtype=np.float32).reshape(-1, 1)
    cuts, cut_ptr = np.array([0.0, -1.0, 2.0]), np.array([0, 3])
    out = {}
    for enabled in (True, False):
        previous = set_table_search(enabled)
        try:
            out[enabled] = np.empty(X.shape, np.uint8)
            map_to_bins(X, cuts, cut_ptr, out[enabled], 1)
        finally:
            set_table_search(previous)
    np.testing.assert_array_equal(out[True], out[False])


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("max_bin", [256, 32, 1000])
def test_bin_matrix_is_binned_data_of_transform(table_search, n_threads,
                                                max_bin):
    """BinMapper.binned (bin_matrix: codes in both layouts in one pass)
    against BinnedData of transform's codes, field by field."""
    rng = np.random.default_rng(max_bin)
    X = rng.normal(size=(9000, 9)).astype(np.float32)
    X[:, 3] = rng.integers(0, 5, X.shape[0])
    X[rng.random(X.shape) < 0.05] = np.nan
    mapper = BinMapper(max_bin).fit(X, n_threads=n_threads)
    binned = mapper.binned(X, n_threads)
    expected = BinnedData(mapper.transform(X, n_threads), mapper.bin_ptr_)
    for name in ("codes", "codes_by_feature", "bin_ptr", "missing_code"):
        got, want = getattr(binned, name), getattr(expected, name)
        assert got.dtype == want.dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    assert (binned.n_rows, binned.n_features, binned.n_bins) == (
        expected.n_rows, expected.n_features, expected.n_bins)


# --------------------------------------------------------------------------
# BinnedData
# --------------------------------------------------------------------------

def test_binned_data_attributes():
    codes = np.array([[0, 2, 0], [1, 0, 0], [2, 1, 0]], dtype=np.uint8)
    bin_ptr = np.array([0, 3, 6, 7])
    data = BinnedData(np.asfortranarray(codes), bin_ptr)
    assert data.codes.flags.c_contiguous
    np.testing.assert_array_equal(data.codes, codes)
    assert data.bin_ptr.dtype == np.int64
    assert data.missing_code.tolist() == [2, 2, 0]
    assert (data.n_rows, data.n_features, data.n_bins) == (3, 3, 7)
    wide = BinnedData(codes.astype(np.uint16) * 100, [0, 201, 402, 403])
    assert wide.codes.dtype == np.uint16 and wide.n_bins == 403


# --------------------------------------------------------------------------
# Invalid inputs: a ValueError, never a crash or a silent out-of-bounds read.
# Each case runs in a child process so that a crash fails its own case only.
# --------------------------------------------------------------------------



_PRELUDE = """
import numpy as np
from skboost.tree._binning import BinnedData, bin_matrix, map_to_bins
codes = np.array([[0, 1, 0], [2, 0, 0], [1, 3, 0]], dtype=np.uint8)
bin_ptr = np.array([0, 3, 7, 8], dtype=np.int64)
X = np.array([[0.5, np.nan], [2.0, -1.0], [1.0, 3.0]], dtype=np.float32)
cuts = np.array([0.0, 1.0, 2.5], dtype=np.float64)
cut_ptr = np.array([0, 2, 3], dtype=np.int64)
out = np.zeros((3, 2), dtype=np.uint8)
"""

BAD_INPUTS = {
    # BinnedData
    "code beyond its feature's bins": "codes[2, 0] = 3\nBinnedData(codes, bin_ptr)",
    "code of a width-1 feature": "codes[0, 2] = 1\nBinnedData(codes, bin_ptr)",
    "uint16 code beyond its bins": (
        "BinnedData(codes.astype(np.uint16) * 100, bin_ptr)"),
    "bin_ptr not starting at 0": "BinnedData(codes, bin_ptr + 1)",
    "bin_ptr too short": "BinnedData(codes, bin_ptr[:-1])",
    "bin_ptr too long": "BinnedData(codes, np.append(bin_ptr, 9))",
    "bin_ptr with an empty feature": (
        "BinnedData(codes[:, :2] * 0, np.array([0, 3, 3]))"),
    "bin_ptr decreasing": "BinnedData(codes * 0, np.array([0, 3, 2, 8]))",
    "bin_ptr 2-d": "BinnedData(codes, bin_ptr[None, :])",
    "codes int32": "BinnedData(codes.astype(np.int32), bin_ptr)",
    "codes int64": "BinnedData(codes.astype(np.int64), bin_ptr)",
    "codes int8": "BinnedData(codes.astype(np.int8), bin_ptr)",
    "codes float32": "BinnedData(codes.astype(np.float32), bin_ptr)",
    "codes bool": "BinnedData(codes > 0, bin_ptr)",
    "codes 1-d": "BinnedData(codes[0], bin_ptr)",
    "codes 3-d": "BinnedData(codes[None], bin_ptr)",
    # map_to_bins
    "codes of other rows than X": (
        "map_to_bins(X, cuts, cut_ptr, np.zeros((2, 2), np.uint8), 1)"),
    "codes of other features than X": (
        "map_to_bins(X, cuts, cut_ptr, np.zeros((3, 3), np.uint8), 1)"),
    "cut_ptr not starting at 0": (
        "map_to_bins(X, cuts, np.array([1, 2, 3]), out, 1)"),
    "cut_ptr end short of the cuts": (
        "map_to_bins(X, cuts, np.array([0, 2, 2]), out, 1)"),
    "cut_ptr end beyond the cuts": (
        "map_to_bins(X, cuts, np.array([0, 2, 4]), out, 1)"),
    "cut_ptr inner entry beyond the cuts": (
        "map_to_bins(X, cuts, np.array([0, 10**6, 3]), out, 1)"),
    "cut_ptr decreasing": (
        "map_to_bins(X, cuts, np.array([0, -2, 3]), out, 1)"),
    "cut_ptr of other length": (
        "map_to_bins(X, cuts, np.array([0, 3]), out, 1)"),
    "too many cuts for uint8 codes": (
        "map_to_bins(X, np.arange(300.0), np.array([0, 1, 300]), out, 1)"),
    "n_threads 0": "map_to_bins(X, cuts, cut_ptr, out, 0)",
    "n_threads -1": "map_to_bins(X, cuts, cut_ptr, out, -1)",
    "codes_by_feature of X's shape": (
        "map_to_bins(X, cuts, cut_ptr, out, 1, np.zeros((3, 2), np.uint8))"),
    "codes_by_feature of another dtype": (
        "map_to_bins(X, cuts, cut_ptr, out, 1, np.zeros((2, 3), np.uint16))"),
    "codes_by_feature in Fortran order": (
        "map_to_bins(X, cuts, cut_ptr, out, 1,\n"
        "            np.zeros((2, 3), np.uint8, order='F'))"),
    "codes_by_feature a list": (
        "map_to_bins(X, cuts, cut_ptr, out, 1, [[0, 0, 0], [0, 0, 0]])"),
    # bin_matrix
    "bin_matrix with no missing bin": (
        "bin_matrix(X, cuts, cut_ptr, np.array([0, 3, 5]), np.uint8)"),
    "bin_matrix with bin_ptr of another length": (
        "bin_matrix(X, cuts, cut_ptr, np.array([0, 4]), np.uint8)"),
    "bin_matrix with bin_ptr not from 0": (
        "bin_matrix(X, cuts, cut_ptr, np.array([1, 5, 8]), np.uint8)"),
}

VALID = {
    "valid BinnedData": "BinnedData(codes, bin_ptr)",
    "valid map_to_bins": (
        "map_to_bins(X, cuts, cut_ptr, out, 1)\n"
        "assert out.tolist() == [[1, 2], [2, 0], [2, 1]], out.tolist()"),
    "valid map_to_bins with its copy": (
        "by_feature = np.zeros((2, 3), np.uint8)\n"
        "map_to_bins(X, cuts, cut_ptr, out, 1, by_feature)\n"
        "assert by_feature.tolist() == [[1, 2, 2], [2, 0, 1]]"),
    "valid bin_matrix": (
        "b = bin_matrix(X, cuts, cut_ptr, np.array([0, 4, 7]), np.uint8)\n"
        "assert b.codes.tolist() == [[1, 2], [2, 0], [2, 1]]"),
    "valid uint16 with 300 cuts": (
        "out = np.zeros((3, 2), np.uint16)\n"
        "map_to_bins(X, np.arange(300.0), np.array([0, 1, 300]), out, 1)\n"
        "assert out.tolist() == [[1, 300], [1, 0], [1, 3]], out.tolist()"),
}


test_valid_arguments_run, test_bad_inputs_raise_value_error = \
    snippet_input_tests(_PRELUDE, BAD_INPUTS, VALID)


@pytest.mark.parametrize("dtype, n_codes", [(np.uint8, 256), (np.uint16, 700)])
@pytest.mark.parametrize("n_rows", [0, 1, 2047, 2048, 2049, 10_001])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_transposed_codes_equal_numpy_transpose(dtype, n_codes, n_rows,
                                                n_threads):
    # the blocked parallel copy against numpy's transpose, across the
    # block size (2048 rows) and both code widths
    from skboost.tree._binning import transposed_codes
    codes = np.random.default_rng(n_rows).integers(
        0, n_codes, (n_rows, 7)).astype(dtype)
    out = transposed_codes(codes, n_threads)
    assert out.dtype == dtype and out.flags.c_contiguous
    np.testing.assert_array_equal(out, codes.T)
    binned = BinnedData(codes, np.arange(8, dtype=np.int64) * (n_codes + 1),
                        n_threads)
    np.testing.assert_array_equal(binned.codes_by_feature, codes.T)


@pytest.mark.parametrize("seed", range(3))
def test_map_to_bins_with_cuts_between_float32_values(seed):
    """float64 cuts that no float32 equals (just above or below one, past
    float32's range): every code is the count of cuts <= the value, as
    np.searchsorted counts them in float64 (the kernel searches the cuts
    rounded up to float32)."""
    rng = np.random.default_rng(seed)
    base = np.unique(rng.normal(size=60).astype(np.float32)).astype(np.float64)
    cuts = np.unique(np.concatenate([
        base, base + 1e-12, base - 1e-12, [-1e39, 1e39, 3.4028234e38,
                                           -3.4028235e38, 1e-46, -1e-46]]))
    f32 = base.astype(np.float32)
    values = np.concatenate([
        f32, np.nextafter(f32, np.float32(np.inf)),
        np.nextafter(f32, np.float32(-np.inf)),
        rng.normal(size=3000).astype(np.float32),
        np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.4028235e38,
                  -3.4028235e38], dtype=np.float32)])
    X = np.ascontiguousarray(values.reshape(-1, 1))
    codes = np.empty(X.shape, dtype=np.uint8)
    map_to_bins(X, cuts, np.array([0, cuts.size], dtype=np.int64), codes,
                1 + seed % 2)
    expected = np.searchsorted(cuts, values.astype(np.float64), side="right")
    np.testing.assert_array_equal(codes[:, 0], expected)
