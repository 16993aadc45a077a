"""The per-node pipeline of a depth-wise level (``_histogram.
build_subtract_scan``) against oracles written here and in the neighbour
tests:

- its histograms: the naive NumPy histograms of each child's rows
  (``test_histogram.naive_histograms``), the larger child's included
  (built from its own rows, not by subtraction);
- its splits: the naive scan of ``test_hist_split`` (every candidate
  enumerated) on small problems, and record for record the batch path
  (``build_histograms``, ``subtract_histograms``,
  ``find_best_splits_hist``) on levels of a realistic size;
- the finder: the same trees as with the pipeline switched off, on 1
  and 2 threads, with column samples per node and per level.
"""

import numpy as np
import pytest

from skboost import BoostRegressor
from skboost.tree._binning import BinnedData
from skboost.tree._hist_split import find_best_splits_hist
from skboost.tree._histogram import (FixedPointGradients, build_histograms,
                                     build_subtract_scan, subtract_histograms)
from skboost.tree._partition import ROWS_PER_TASK, RowPartition
from skboost.tree.finders import hist as hist_finders
from _oracles import REG_GRID, split_context
from test_hist_split import naive_best
from test_histogram import naive_histograms, split_levels


def level_problem(seed, n_rows, n_features, max_width, n_levels,
                  dtype=np.uint8):
    """A level of sibling pairs: binned rows split ``n_levels`` times, each
    pair's smaller child and its parent's slice, random gradients (with
    inactive rows) and the pool rows of the parents' histograms (built)
    and of the smaller children's (garbage)."""
    rng = np.random.default_rng(seed)
    widths = rng.integers(2, max_width + 1, n_features)
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
    # some features without missing values (their last bin empty)
    for f in np.flatnonzero(rng.random(n_features) < 0.4):
        codes[:, f] = np.minimum(codes[:, f], widths[f] - 2)
    data = BinnedData(codes.astype(dtype), bin_ptr)
    active = rng.random(n_rows) < 0.95
    partition = RowPartition(np.flatnonzero(active), n_rows)
    begin, end = split_levels(rng, data, partition, n_levels)
    gpair = np.column_stack([rng.normal(0, 1, n_rows),
                             rng.uniform(0.1, 1, n_rows)]).astype(np.float32)
    gradients = FixedPointGradients(gpair, None, active.astype(np.uint8), 1)
    left_smaller = (end - begin)[0::2] <= (end - begin)[1::2]
    pick = np.arange(0, begin.shape[0], 2) + ~left_smaller
    other = np.arange(0, begin.shape[0], 2) + left_smaller
    n_pairs = pick.shape[0]
    # the pool: rows shuffled, the parents' histograms built in theirs
    rows = rng.permutation(2 * n_pairs + 3)
    small_rows, parent_rows = rows[:n_pairs], rows[n_pairs:2 * n_pairs]
    pool = np.full((rows.shape[0], data.n_bins, 2), -777, dtype=np.int64)
    build_histograms(data, partition, gradients, begin[0::2], end[1::2],
                     pool, 1, hist_rows=parent_rows)
    return dict(data=data, partition=partition, gradients=gradients,
                active=active, small=(begin[pick], end[pick]),
                large=(begin[other], end[other]), small_rows=small_rows,
                parent_rows=parent_rows, pool=pool, rng=rng)


def children_inputs(problem, reg, n_threads, n_thresholds_rows=1):
    """What the level's scan takes: the children's exact sums (smaller
    children first), thresholds, allowed features and the context."""
    p, rng = problem, problem["rng"]
    quantized = p["gradients"].quantized(p["active"].astype(np.uint8), 1)
    row_index = np.asarray(p["partition"].row_index)
    sums = np.array([quantized[row_index[b:e]].sum(axis=0)
                     for b, e in zip(*(np.concatenate(s) for s in zip(
                         p["small"], p["large"])))], dtype=np.int64)
    n_nodes, data = sums.shape[0], p["data"]
    thresholds = np.sort(rng.normal(size=(n_thresholds_rows, data.n_bins)),
                         axis=1)
    allowed = (rng.random((n_nodes, data.n_features)) < 0.8).astype(np.uint8)
    context = split_context(reg, n_threads, scale_g=p["gradients"].scales[0],
                            scale_h=p["gradients"].scales[1])
    return sums, thresholds, allowed, context


def run_pipeline(problem, sums, thresholds, allowed, context):
    pool = problem["pool"].copy()
    records = build_subtract_scan(
        problem["data"], problem["partition"], problem["gradients"],
        *problem["small"], problem["small_rows"], problem["parent_rows"],
        pool, sums, thresholds, allowed, context=context)
    return pool, records


def run_batch_path(problem, sums, thresholds, allowed, context):
    """The three calls the pipeline stands for."""
    p, pool = problem, problem["pool"].copy()
    build_histograms(p["data"], p["partition"], p["gradients"], *p["small"],
                     pool, context.n_threads, hist_rows=p["small_rows"])
    subtract_histograms(pool, p["parent_rows"], p["small_rows"],
                        context.n_threads)
    records = find_best_splits_hist(
        pool, sums, p["data"].bin_ptr, thresholds, allowed, context=context,
        hist_rows=np.concatenate([p["small_rows"], p["parent_rows"]]))
    return pool, records


def naive_children(problem):
    """Each child's histogram from its own rows (NumPy)."""
    p = problem
    quantized = p["gradients"].quantized(p["active"].astype(np.uint8), 1)
    row_index = np.asarray(p["partition"].row_index)
    return [naive_histograms(p["data"].codes, p["data"].bin_ptr, quantized,
                             row_index, *p[side]) for side in
            ("small", "large")]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_matches_naive_histograms_and_naive_scan(seed, n_threads):
    problem = level_problem(seed, n_rows=300, n_features=4, max_width=7,
                            n_levels=3)
    reg = REG_GRID[seed % len(REG_GRID)]
    sums, thresholds, allowed, context = children_inputs(
        problem, reg, n_threads, n_thresholds_rows=1 + seed % 2 * 7)
    pool, records = run_pipeline(problem, sums, thresholds, allowed, context)
    small_hist, large_hist = naive_children(problem)
    np.testing.assert_array_equal(pool[problem["small_rows"]], small_hist)
    np.testing.assert_array_equal(pool[problem["parent_rows"]], large_hist)
    histograms = np.concatenate([small_hist, large_hist])
    scales = tuple(problem["gradients"].scales)
    n_found = 0
    for k in range(histograms.shape[0]):
        best = naive_best(histograms[k], sums[k], problem["data"].bin_ptr,
                          thresholds[k if thresholds.shape[0] > 1 else 0],
                          allowed[k], scales, reg)
        if best is None:
            assert records["feature"][k] == -1
            continue
        n_found += 1
        gain, feature, threshold, default_left, split_bin, Gq_l, Hq_l = best
        assert (records["feature"][k], records["split_bin"][k]) == (
            feature, split_bin)
        assert records["threshold"][k] == threshold
        assert bool(records["default_left"][k]) == default_left
        assert records["gain"][k] == pytest.approx(gain, rel=1e-12)
        assert (records["Gq_left"][k], records["Hq_left"][k]) == (Gq_l, Hq_l)
    assert n_found > 0


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype,max_width,n_levels", [
    (np.uint8, 256, 5), (np.uint8, 256, 3), (np.uint16, 600, 5)])
def test_same_records_as_the_batch_path(dtype, max_width, n_levels,
                                        n_threads):
    # 28 features; a fifth level (16 pairs, wide and narrow builds: uint8
    # smaller children above and below WIDE_MIN_ROWS), and a third (a
    # smaller child of more rows than a build task: on 2 threads, built
    # first by every thread)
    problem = level_problem(11, n_rows=150_000, n_features=28,
                            max_width=max_width, n_levels=n_levels,
                            dtype=dtype)
    sums, thresholds, allowed, context = children_inputs(
        problem, REG_GRID[1], n_threads)
    got_pool, got = run_pipeline(problem, sums, thresholds, allowed, context)
    want_pool, want = run_batch_path(problem, sums, thresholds, allowed,
                                     context)
    np.testing.assert_array_equal(got_pool, want_pool)
    assert got.tobytes() == want.tobytes()
    # (a node emptied by the random splits has none)
    assert np.count_nonzero(got["feature"] >= 0) > got.shape[0] // 2
    sizes = problem["small"][1] - problem["small"][0]
    if n_levels == 3:
        assert sizes.max() > ROWS_PER_TASK
    elif dtype == np.uint8:
        assert sizes.min() < 4096 <= sizes.max()


@pytest.mark.parametrize("change, message", [
    (dict(small_rows=lambda p: p["parent_rows"]), "distinct"),
    (dict(small_end=lambda p: p["small"][1] + 10 ** 7), "outside"),
    (dict(parent_rows=lambda p: p["parent_rows"][:-1]), "one entry"),
    (dict(allowed=lambda a: a[:-1]), "feature_allowed"),
    (dict(sums=lambda s: s[:-1]), "node_sums"),
])
def test_rejects_bad_inputs(change, message):
    problem = level_problem(3, n_rows=200, n_features=3, max_width=5,
                            n_levels=2)
    sums, thresholds, allowed, context = children_inputs(problem,
                                                         REG_GRID[0], 1)
    args = dict(small_begin=problem["small"][0], small_end=problem["small"][1],
                small_rows=problem["small_rows"],
                parent_rows=problem["parent_rows"])
    for name, edit in change.items():
        if name in args:
            args[name] = edit(problem)
        elif name == "allowed":
            allowed = edit(allowed)
        else:
            sums = edit(sums)
    with pytest.raises(ValueError, match=message):
        build_subtract_scan(problem["data"], problem["partition"],
                            problem["gradients"], args["small_begin"],
                            args["small_end"], args["small_rows"],
                            args["parent_rows"], problem["pool"], sums,
                            thresholds, allowed, context=context)


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("params", [
    dict(max_depth=7),
    dict(max_depth=6, colsample_bynode=0.6, colsample_bylevel=0.8,
         subsample=0.7, random_state=4),
    dict(max_depth=0, grow_policy="lossguide"),
    dict(max_depth=7, max_leaves=40),
    dict(max_depth=6, tree_method="approx"),
])
def test_trees_match_the_batch_path(monkeypatch, params, n_jobs):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6000, 9)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1]) * 3)
    calls = []
    pipeline = hist_finders.build_subtract_scan
    monkeypatch.setattr(hist_finders, "build_subtract_scan",
                        lambda *a, **k: calls.append(1) or pipeline(*a, **k))
    fit = dict(n_estimators=8, n_jobs=n_jobs, **params)
    got = BoostRegressor(**fit).fit(X, y)
    assert calls   # the pipeline grew some levels
    monkeypatch.setattr(hist_finders.HistFinder, "pipelines_levels", False)
    n_calls = len(calls)
    want = BoostRegressor(**fit).fit(X, y)
    assert len(calls) == n_calls   # the batch path alone
    assert got.get_booster().get_dump(dump_format="json") == (
        want.get_booster().get_dump(dump_format="json"))
    np.testing.assert_array_equal(got.predict(X), want.predict(X))
