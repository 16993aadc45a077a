"""The histogram split scan (``_hist_split.find_best_splits_hist``) against a
naive scan written here over the same histograms.

The naive scan enumerates, for every node and every allowed feature, each
candidate split explicitly from the histogram's bins, with the semantics of
``binning.py`` and ``_hist_split.pyx``:

- "value bins 0..b go left" for every value bin b but the last, at the
  threshold ``thresholds[k, bin_ptr[f] + b]`` (node k's row of thresholds,
  or the one row shared by every node), with missing values right and,
  when the node has missing values for the feature (its missing bin is not
  empty), with missing values left as well;
- when the missing bin is empty, one direction only, missing values right
  (XGBoost's hist and approx methods);
- when it is not empty, "every present value left, missing right" at the
  last value bin, whose threshold is +inf;
- admissible when both children have H >= min_child_weight;
- the best: highest gain, then lower feature, then lower threshold, then
  missing right before missing left.

Gradient and hessian sums are small integers divided by power-of-two
scales, so every float64 value below is exact whatever the order of the
operations: equal partitions give equal gains and ties are real ties.
"""

import sys

import numpy as np
import pytest

from skboost.tree._hist_split import _split_record_layout, find_best_splits_hist
from skboost.tree.splits import SPLIT_RECORD
from _oracles import REG_GRID, score, split_context
from _isolation import snippet_input_tests



# --------------------------------------------------------------------------
# The naive scan
# --------------------------------------------------------------------------



def naive_candidates(hist, sums, bin_ptr, thresholds, allowed, scales, reg):
    """Every admissible candidate of one node as
    (gain, feature, threshold, default_left, split_bin, Gq_left, Hq_left)."""
    scale_g, scale_h = scales
    Gq, Hq = int(sums[0]), int(sums[1])
    parent = score(Gq / scale_g, Hq / scale_h, reg)
    out = []

    def consider(feature, b, Gq_left, Hq_left, default_left):
        H_left, H_right = Hq_left / scale_h, (Hq - Hq_left) / scale_h
        if H_left >= reg[3] and H_right >= reg[3]:
            gain = 0.5 * (score(Gq_left / scale_g, H_left, reg)
                          + score((Gq - Gq_left) / scale_g, H_right, reg)
                          - parent)
            out.append((gain, feature, float(thresholds[bin_ptr[feature] + b]),
                        default_left, b, Gq_left, Hq_left))

    for f in np.flatnonzero(allowed):
        first, stop = int(bin_ptr[f]), int(bin_ptr[f + 1])
        n_value = stop - first - 1
        Gq_miss, Hq_miss = (int(v) for v in hist[stop - 1])
        has_missing = Gq_miss != 0 or Hq_miss != 0
        for b in range(n_value):
            Gq_left = int(hist[first:first + b + 1, 0].sum())
            Hq_left = int(hist[first:first + b + 1, 1].sum())
            if b < n_value - 1:
                if has_missing:
                    consider(f, b, Gq_left, Hq_left, False)
                    consider(f, b, Gq_left + Gq_miss, Hq_left + Hq_miss, True)
                else:   # no missing value: missing right (XGBoost's hist)
                    consider(f, b, Gq_left, Hq_left, False)
            elif has_missing:
                # present vs missing (threshold +inf in real layouts)
                consider(f, b, Gq_left, Hq_left, False)
    return out


def naive_best(*args):
    candidates = naive_candidates(*args)
    if not candidates:
        return None
    return min(candidates, key=lambda c: (-c[0], c[1], c[2], c[3]))


# --------------------------------------------------------------------------
# Random problems
# --------------------------------------------------------------------------

def random_problem(seed, n_nodes=None, n_features=None, max_width=8,
                   n_rows=None, big=False):
    """Histograms built from rows: random codes (the missing code included),
    small integer quantised gradients, random nodes."""
    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(1, 5)) if n_nodes is None else n_nodes
    n_features = int(rng.integers(1, 6)) if n_features is None else n_features
    n_rows = int(rng.integers(1, 60)) if n_rows is None else n_rows
    widths = rng.integers(1, max_width + 1, n_features)
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
    # some features without missing values; some duplicated (exact ties)
    for f in range(n_features):
        if rng.random() < 0.4 and widths[f] > 1:
            codes[:, f] = np.minimum(codes[:, f], widths[f] - 2)
    for f in range(1, n_features):
        if rng.random() < 0.25 and widths[f] == widths[f - 1]:
            codes[:, f] = codes[:, f - 1]
    q = np.column_stack([rng.integers(-12, 13, n_rows),
                         rng.integers(0, 9, n_rows)]).astype(np.int64)
    if big:  # the magnitudes of real quantised gradients
        q = np.column_stack([rng.integers(-2**45, 2**45, n_rows),
                             rng.integers(0, 2**45, n_rows)]).astype(np.int64)
    node_of_row = rng.integers(0, n_nodes, n_rows)
    hist = np.zeros((n_nodes, int(bin_ptr[-1]), 2), dtype=np.int64)
    for f in range(n_features):
        for c in range(2):
            np.add.at(hist[:, :, c], (node_of_row, bin_ptr[f] + codes[:, f]),
                      q[:, c])
    sums = np.zeros((n_nodes, 2), dtype=np.int64)
    for c in range(2):
        np.add.at(sums[:, c], node_of_row, q[:, c])
    # thresholds: increasing cuts, then +inf (last value bin), NaN (missing)
    # one row shared by the nodes, or one row per node
    n_rows_thr = 1 if rng.random() < 0.5 else n_nodes
    thresholds = np.stack([np.concatenate([
        np.concatenate([np.sort(rng.choice(np.arange(-2000, 2000) / 4.0, w - 2,
                                           replace=False)) if w > 2 else [],
                        [np.inf] if w > 1 else [], [np.nan]])
        for w in widths]) for _ in range(n_rows_thr)])
    allowed = (rng.random((n_nodes, n_features))
               < rng.uniform(0.4, 1.0)).astype(np.uint8)
    scales = (2.0 ** int(rng.integers(0, 5)), 2.0 ** int(rng.integers(0, 5)))
    return hist, sums, bin_ptr, thresholds, allowed, scales


def run_kernel(hist, sums, bin_ptr, thresholds, allowed, scales, reg,
               n_threads=1):
    return find_best_splits_hist(hist, sums, bin_ptr, thresholds, allowed,
                                 context=split_context(reg, n_threads,
                                               scale_g=scales[0],
                                               scale_h=scales[1]))


def thresholds_of(thresholds, k):
    """Node k's row of thresholds (one row: shared by every node)."""
    return thresholds[k if thresholds.shape[0] > 1 else 0]


def check_against_naive(problem, reg, n_threads):
    hist, sums, bin_ptr, thresholds, allowed, scales = problem
    got = run_kernel(*problem, reg, n_threads)
    n_found = 0
    for k in range(hist.shape[0]):
        best = naive_best(hist[k], sums[k], bin_ptr,
                          thresholds_of(thresholds, k), allowed[k], scales,
                          reg)
        where = f"node {k}"
        if best is None:
            assert got["feature"][k] == -1, where
            assert got["split_bin"][k] == -1, where
            continue
        n_found += 1
        gain, feature, threshold, default_left, split_bin, Gq_l, Hq_l = best
        assert got["feature"][k] == feature, where
        assert got["split_bin"][k] == split_bin, where
        assert got["threshold"][k] == threshold, where
        assert bool(got["default_left"][k]) == default_left, where
        assert got["gain"][k] == pytest.approx(gain, rel=1e-12, abs=1e-300)
        assert got["Gq_left"][k] == Gq_l and got["Hq_left"][k] == Hq_l, where
        assert got["G_left"][k] == Gq_l / scales[0], where
        assert got["H_left"][k] == Hq_l / scales[1], where
    return n_found


# --------------------------------------------------------------------------
# Against the naive scan
# --------------------------------------------------------------------------

@pytest.mark.parametrize("first_seed", range(0, 400, 100))
def test_matches_naive_scan_on_random_problems(first_seed):
    n_found = 0
    for seed in range(first_seed, first_seed + 100):
        reg = REG_GRID[seed % len(REG_GRID)]
        n_found += check_against_naive(random_problem(seed), reg,
                                       1 + seed % 2)
    assert n_found > 100  # most nodes have admissible splits to compare


@pytest.mark.parametrize("n_threads", [1, 2])
def test_hist_rows_select_each_nodes_histogram_from_a_pool(n_threads):
    # node k reads pool[hist_rows[k]]: the same result as the stacked
    # histograms of the nodes (checked against the naive scan above)
    for seed in range(20):
        hist, sums, bin_ptr, thresholds, allowed, scales = random_problem(
            seed)
        rng = np.random.default_rng(seed)
        n_nodes = hist.shape[0]
        pool = rng.integers(-5, 5, (n_nodes + 3,) + hist.shape[1:])
        rows = rng.permutation(pool.shape[0])[:n_nodes]
        pool[rows] = hist
        stacked = run_kernel(hist, sums, bin_ptr, thresholds, allowed,
                             scales, REG_GRID[0], n_threads)
        pooled = find_best_splits_hist(
            pool, sums, bin_ptr, thresholds, allowed,
            context=split_context(REG_GRID[0], n_threads, scale_g=scales[0],
                          scale_h=scales[1]), hist_rows=rows)
        for key in stacked.dtype.names:
            np.testing.assert_array_equal(pooled[key], stacked[key])


@pytest.mark.parametrize("reg", REG_GRID)
def test_matches_naive_scan_for_each_regularisation(reg):
    for seed in range(1000, 1040):
        check_against_naive(random_problem(seed), reg, 1)


def test_realistic_sums_match_naive_gain():
    # large quantised sums (scales near 2**40): gains agree to rounding and
    # the chosen candidate is one of the best
    for seed in range(30):
        hist, sums, bin_ptr, thresholds, allowed, _ = random_problem(
            seed, n_rows=400, max_width=20, big=True)
        scales = (2.0 ** 40, 2.0 ** 41)
        reg = REG_GRID[seed % len(REG_GRID)]
        got = run_kernel(hist, sums, bin_ptr, thresholds, allowed, scales, reg)
        for k in range(hist.shape[0]):
            candidates = naive_candidates(hist[k], sums[k], bin_ptr,
                                          thresholds_of(thresholds, k),
                                          allowed[k], scales, reg)
            if not candidates:
                assert got["feature"][k] == -1
                continue
            best_gain = max(c[0] for c in candidates)
            assert got["gain"][k] == pytest.approx(best_gain, rel=1e-12,
                                                   abs=1e-300)
            mine = [c for c in candidates
                    if (c[1], c[4], c[3]) == (got["feature"][k],
                                              got["split_bin"][k],
                                              bool(got["default_left"][k]))]
            assert len(mine) == 1
            assert mine[0][0] == pytest.approx(got["gain"][k], rel=1e-12,
                                               abs=1e-300)
            assert (mine[0][5], mine[0][6]) == (got["Gq_left"][k],
                                                got["Hq_left"][k])


# --------------------------------------------------------------------------
# Hand-made cases
# --------------------------------------------------------------------------

def one_feature(value_bins, missing_bin, thresholds=None, reg=(1.0, 0, 0, 0),
                scales=(1.0, 1.0)):
    hist = np.array([value_bins + [missing_bin]], dtype=np.int64)
    n_bins = hist.shape[1]
    sums = hist[0].sum(axis=0)[None, :]
    if thresholds is None:
        thresholds = list(np.arange(n_bins - 2) + 0.5) + [np.inf, np.nan]
    return run_kernel(hist, sums, np.array([0, n_bins]),
                      np.array([thresholds], dtype=np.float64),
                      np.ones((1, 1), np.uint8), scales, reg)


def test_present_vs_missing_split_has_threshold_inf():
    # the missing rows carry all the negative gradient: the best split puts
    # every present value left and only the missing ones right
    got = one_feature([[1, 1], [1, 1], [1, 1]], [-4, 2])
    # left (G, H) = (3, 3), right (-4, 2): 1/2 [9/4 + 16/3 - 1/6] = 89/24
    assert got["feature"][0] == 0
    assert got["threshold"][0] == np.inf
    assert got["split_bin"][0] == 2
    assert got["default_left"][0] == 0
    assert got["gain"][0] == pytest.approx(89 / 24, rel=1e-12)
    assert (got["Gq_left"][0], got["Hq_left"][0]) == (3, 3)


def test_missing_values_go_where_they_help():
    # bins (G, H): [-3, 1], [3, 1]; missing [-3, 1] joins the left bin
    got = one_feature([[-3, 1], [3, 1]], [-3, 1])
    assert got["split_bin"][0] == 0 and got["default_left"][0] == 1
    assert (got["Gq_left"][0], got["Hq_left"][0]) == (-6, 2)
    # ... and the right one when it looks like it
    got = one_feature([[-3, 1], [3, 1]], [3, 1])
    assert got["split_bin"][0] == 0 and got["default_left"][0] == 0
    assert (got["Gq_left"][0], got["Hq_left"][0]) == (-3, 1)


def test_empty_missing_bin_scans_one_direction_missing_right():
    """Where a node saw no missing value, missing values go right, as in
    XGBoost's hist and approx methods."""
    got = one_feature([[-3, 1], [1, 1], [3, 1]], [0, 0])
    assert got["default_left"][0] == 0
    assert got["split_bin"][0] == 0 and got["threshold"][0] == 0.5
    # with an empty missing bin, the last value bin is no split at all
    got = one_feature([[-3, 1]], [0, 0])
    assert got["feature"][0] == -1 and got["split_bin"][0] == -1


def test_missing_rows_with_zero_gradient_and_hessian_count_as_empty():
    # the scan sees sums, not rows: (0, 0) in the missing bin is no missing
    got = one_feature([[-3, 1], [3, 1]], [0, 0])
    assert got["default_left"][0] == 0 and got["split_bin"][0] == 0


def test_ties_go_to_the_lower_feature_then_the_lower_threshold():
    # two identical features; empty bins repeat the same partition at
    # several thresholds
    block = [[-2, 1], [0, 0], [0, 0], [2, 1], [0, 0]]
    hist = np.array([block + block], dtype=np.int64)
    sums = np.array([[0, 2]], dtype=np.int64)
    bin_ptr = np.array([0, 5, 10])
    thresholds = np.array([[1.0, 2.0, 3.0, np.inf, np.nan] * 2])
    for allowed, feature in [([1, 1], 0), ([0, 1], 1)]:
        got = run_kernel(hist, sums, bin_ptr, thresholds,
                         np.array([allowed], np.uint8), (1.0, 1.0),
                         (1.0, 0, 0, 0), n_threads=1)
        assert got["feature"][0] == feature
        assert got["split_bin"][0] == 0 and got["threshold"][0] == 1.0
    # an empty first bin: the first threshold that separates the rows wins
    block = [[0, 0], [-2, 1], [0, 0], [2, 1], [0, 0]]
    got = run_kernel(np.array([block + block], dtype=np.int64), sums,
                     bin_ptr, thresholds, np.ones((1, 2), np.uint8),
                     (1.0, 1.0), (1.0, 0, 0, 0), 1)
    assert got["feature"][0] == 0
    assert got["split_bin"][0] == 1 and got["threshold"][0] == 2.0


def test_wide_features_with_mostly_empty_bins_match_the_naive_scan():
    """On features of up to 1,200 bins filled by a few rows (most bins
    empty, their candidates repeating the previous bin's sums), with and
    without missing values, the scan picks the naive full scan's split."""
    for seed in range(40):
        problem = random_problem(seed, max_width=1200,
                                 n_rows=int(5 + seed * 3))
        for reg in REG_GRID[:3]:
            check_against_naive(problem, reg, n_threads=1 + seed % 2)


def chunk_boundary_problem(seed, widths, n_rows=3000):
    """``random_problem``'s histograms with features of the given widths
    (value bins and the missing bin), real magnitudes of quantised sums,
    most rows in a few bins so that the best split can sit anywhere."""
    rng = np.random.default_rng(seed)
    widths = np.asarray(widths)
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([
        np.minimum(rng.geometric(rng.uniform(0.01, 0.2), n_rows) - 1,
                   w - (2 if rng.random() < 0.5 else 1)) for w in widths])
    q = np.column_stack([rng.integers(-2**45, 2**45, n_rows),
                         rng.integers(0, 2**45, n_rows)]).astype(np.int64)
    hist = np.zeros((1, int(bin_ptr[-1]), 2), dtype=np.int64)
    for f, w in enumerate(widths):
        for c in range(2):
            np.add.at(hist[0, :, c], bin_ptr[f] + codes[:, f], q[:, c])
    sums = q.sum(axis=0, keepdims=True)
    thresholds = np.concatenate([np.concatenate(
        [np.arange(w - 2, dtype=np.float64), [np.inf], [np.nan]])
        for w in widths])[None, :]
    allowed = np.ones((1, len(widths)), np.uint8)
    return hist, sums, bin_ptr, thresholds, allowed, (2.0**40, 2.0**40)


def test_scans_across_pretest_chunks_match_the_naive_scan():
    """The L2 scan pre-tests its candidates in chunks of 64 bins
    (``PRETEST_BINS``): on features whose bins end just before, at and
    after a chunk boundary, with and without missing values (the
    missing-left candidate of the last value bin is never offered), on any
    thread count, the splits are the naive scan's."""
    widths = [2, 63, 64, 65, 66, 129, 130, 257]
    for seed in range(12):
        problem = chunk_boundary_problem(seed, widths)
        for reg in [(1.0, 0, 0, 0), (0.0, 0, 0, 0), (1.0, 0, 0, 200.0)]:
            for n_threads in (1, 2):
                check_against_naive(problem, reg, n_threads)
            # each feature alone: its own best, wherever it falls
            hist, sums, bin_ptr, thresholds, allowed, scales = problem
            for f in range(len(widths)):
                only = np.zeros_like(allowed)
                only[0, f] = 1
                check_against_naive((hist, sums, bin_ptr, thresholds, only,
                                     scales), reg, 1)


def test_min_child_weight_rejects_light_children():
    value_bins = [[-4, 1], [2, 3], [2, 3]]
    got = one_feature(value_bins, [0, 0], reg=(1.0, 0, 0, 0.0))
    assert got["split_bin"][0] == 0
    got = one_feature(value_bins, [0, 0], reg=(1.0, 0, 0, 1.5))
    assert got["split_bin"][0] == 1  # left H = 4, right H = 3
    got = one_feature(value_bins, [0, 0], reg=(1.0, 0, 0, 3.5))
    assert got["feature"][0] == -1


def test_scales_divide_the_sums():
    # the same histogram in other units: hessians 4x finer, gradients 2x
    got = one_feature([[-8, 8], [4, 4], [8, 8]], [-4, 4], scales=(2.0, 4.0))
    ref = one_feature([[-4, 2], [2, 1], [4, 2]], [-2, 1])
    for key in ("feature", "split_bin", "default_left", "threshold", "gain",
                "G_left", "H_left"):
        assert got[key][0] == ref[key][0], key


def test_no_allowed_feature_no_split():
    hist, sums, bin_ptr, thresholds, allowed, scales = random_problem(
        3, n_nodes=3, n_features=4)
    allowed[1] = 0
    got = run_kernel(hist, sums, bin_ptr, thresholds, allowed, scales,
                     REG_GRID[0])
    assert got["feature"][1] == -1


def test_returned_records():
    got = run_kernel(*random_problem(5, n_nodes=3), REG_GRID[0])
    assert got.dtype == SPLIT_RECORD
    expected = {"gain": np.float64, "feature": np.int32,
                "threshold": np.float64, "split_bin": np.int32,
                "default_left": np.uint8, "G_left": np.float64,
                "H_left": np.float64, "Gq_left": np.int64, "Hq_left": np.int64,
                "cat_kind": np.uint8}
    assert set(got.dtype.names) == set(expected)
    for key, dtype in expected.items():
        assert got[key].dtype == dtype and got[key].shape == (3,), key


def test_cython_split_record_is_split_record():
    # _hist_split's packed SplitRecord is written field by field into
    # SPLIT_RECORD arrays: the C layout (as the compiler laid it out) must
    # be the numpy dtype's, field for field, offset for offset
    size, offsets = _split_record_layout()
    assert size == SPLIT_RECORD.itemsize
    assert list(offsets) == list(SPLIT_RECORD.names)
    for name in SPLIT_RECORD.names:
        assert offsets[name] == SPLIT_RECORD.fields[name][1], name
    # every field's width, from the offsets and the total size
    ends = [offsets[n] for n in SPLIT_RECORD.names[1:]] + [size]
    for name, end in zip(SPLIT_RECORD.names, ends):
        assert end - offsets[name] == SPLIT_RECORD.fields[name][0].itemsize


def test_threads_give_identical_results():
    # large enough for two threads (>= 2 * 32768 bins of scanning), with
    # duplicated features (exact ties across threads)
    hist, sums, bin_ptr, thresholds, allowed, scales = random_problem(
        77, n_nodes=6, n_features=40, max_width=600, n_rows=5000)
    assert hist.shape[0] * hist.shape[1] >= 2 * 32768
    # the same features twice: every split of the second copy ties with
    # the first's
    dup_hist = np.concatenate([hist, hist], axis=1)
    dup_ptr = np.concatenate([bin_ptr, bin_ptr[1:] + bin_ptr[-1]])
    dup_thr = np.concatenate([thresholds, thresholds], axis=1)
    dup_allowed = np.concatenate([allowed, np.ones_like(allowed)], axis=1)
    for problem in [(hist, sums, bin_ptr, thresholds, allowed, scales),
                    (dup_hist, sums, dup_ptr, dup_thr, dup_allowed, scales)]:
        for reg in REG_GRID[:4]:
            one = run_kernel(*problem, reg, n_threads=1)
            two = run_kernel(*problem, reg, n_threads=2)
            assert (one["feature"] >= 0).all()
            for key in one.dtype.names:
                np.testing.assert_array_equal(one[key], two[key], err_msg=key)
            check_against_naive(problem, reg, 2)


def test_nodes_without_a_split_leave_the_same_record_on_any_thread_count():
    # nodes with no admissible split (no allowed feature; children too
    # light for min_child_weight; an empty node) beside nodes with one, in
    # a batch large enough for two threads: the whole output, byte for
    # byte, is the same on 1 and 2 threads, and a node without a split
    # holds the record of no split in every field (the left sums were
    # left as the allocator gave them)
    hist, sums, bin_ptr, thresholds, allowed, scales = random_problem(
        78, n_nodes=12, n_features=40, max_width=600, n_rows=5000)
    assert hist.shape[0] * hist.shape[1] >= 2 * 32768
    allowed[[1, 5, 9]] = 0
    hist[[3, 7]] = 0
    sums[[3, 7]] = 0
    no_split = np.zeros(1, dtype=SPLIT_RECORD)
    no_split["feature"], no_split["split_bin"] = -1, -1
    no_split["gain"] = run_kernel(hist[:1], sums[:1], bin_ptr,
                                  thresholds[:1], np.zeros_like(allowed[:1]),
                                  scales, REG_GRID[0])["gain"]
    for reg in [REG_GRID[1], (1.0, 0.0, 0.0, 1e30)]:
        outputs = []
        for n_threads in (1, 2, 1, 2):
            # the same scan with every feature allowed just before: its
            # freed candidates (a split in every node) are the memory the
            # next scan's candidates are likely to be given
            run_kernel(hist, sums, bin_ptr, thresholds, np.ones_like(allowed),
                       scales, reg, n_threads=n_threads)
            outputs.append(run_kernel(hist, sums, bin_ptr, thresholds,
                                      allowed, scales, reg,
                                      n_threads=n_threads))
        for out in outputs[1:]:
            assert out.tobytes() == outputs[0].tobytes(), reg
        empty = outputs[0]["feature"] < 0
        assert empty[[1, 3, 5, 7, 9]].all()
        assert np.all(outputs[0][empty] == no_split[0])
        if reg[3] < 1e30:
            assert (~empty).sum() == 7
        for k in np.flatnonzero(empty):
            assert naive_best(hist[k], sums[k], bin_ptr,
                              thresholds_of(thresholds, k), allowed[k],
                              scales, reg) is None


# --------------------------------------------------------------------------
# Invalid inputs: a ValueError, never a crash or a silent out-of-bounds read.
# Each case runs in a child process so that a crash fails its own case only.
# --------------------------------------------------------------------------



_PRELUDE = """
import numpy as np
from skboost.tree._context import SplitContext
from skboost.tree._hist_split import _split_record_layout, find_best_splits_hist
hist = np.ones((2, 7, 2), dtype=np.int64)
sums = np.full((2, 2), 4, dtype=np.int64)
bin_ptr = np.array([0, 4, 7], dtype=np.int64)
thresholds = np.array([[0.5, 1.5, np.inf, np.nan, 0.5, np.inf, np.nan]])
allowed = np.ones((2, 2), dtype=np.uint8)
CONTEXT = dict(scale_g=1.0, scale_h=1.0, reg_lambda=1.0, reg_alpha=0.0,
               max_delta_step=0.0, min_child_weight=0.0, n_threads=1)
def scan(**changes):
    # a change of a context setting goes to the SplitContext (which
    # validates it), the others to the scan
    settings = {name: changes.pop(name, value)
                for name, value in CONTEXT.items()}
    args = dict(hist=hist, node_sums=sums, bin_ptr=bin_ptr,
                thresholds=thresholds, feature_allowed=allowed,
                context=SplitContext(**settings))
    args.update(changes)
    return find_best_splits_hist(**args)
"""

BAD_INPUTS = {
    "hist with 3 entries per bin": "scan(hist=np.ones((2, 7, 3), np.int64))",
    "hist with fewer bins than bin_ptr": (
        "scan(hist=np.ones((2, 6, 2), np.int64))"),
    "hist with more bins than bin_ptr": (
        "scan(hist=np.ones((2, 8, 2), np.int64))"),
    "hist int32": "scan(hist=np.ones((2, 7, 2), np.int32))",
    "hist float64": "scan(hist=np.ones((2, 7, 2)))",
    "hist 2-d": "scan(hist=np.ones((7, 2), np.int64))",
    "hist_rows beyond hist": "scan(hist_rows=[0, 2])",
    "hist_rows negative": "scan(hist_rows=[0, -1])",
    "hist_rows of other length": "scan(hist_rows=[0])",
    "hist of fewer nodes without hist_rows": (
        "scan(hist=np.ones((1, 7, 2), np.int64))"),
    "hist not C-contiguous": (
        "scan(hist=np.ones((2, 2, 7), np.int64).transpose(0, 2, 1))"),
    "node_sums of more nodes": "scan(node_sums=np.ones((3, 2), np.int64))",
    "node_sums of fewer nodes": "scan(node_sums=np.ones((1, 2), np.int64))",
    "node_sums with 3 columns": "scan(node_sums=np.ones((2, 3), np.int64))",
    "node_sums float64": "scan(node_sums=np.ones((2, 2)))",
    "bin_ptr not starting at 0": "scan(bin_ptr=np.array([1, 4, 7]))",
    "bin_ptr end short of n_bins": "scan(bin_ptr=np.array([0, 4, 6]))",
    "bin_ptr end beyond n_bins": "scan(bin_ptr=np.array([0, 4, 8]))",
    "bin_ptr with an empty feature": (
        "scan(bin_ptr=np.array([0, 4, 4, 7]),"
        " feature_allowed=np.ones((2, 3), np.uint8))"),
    "bin_ptr inner entry beyond n_bins": (
        "scan(bin_ptr=np.array([0, 10**6, 7]))"),
    "bin_ptr inner entry negative": "scan(bin_ptr=np.array([0, -3, 7]))",
    "bin_ptr empty": (
        "scan(bin_ptr=np.zeros(0, np.int64),"
        " feature_allowed=np.ones((2, 0), np.uint8))"),
    "thresholds too short": "scan(thresholds=thresholds[:, :-1])",
    "thresholds too long": (
        "scan(thresholds=np.append(thresholds, [[1.0]], axis=1))"),
    "thresholds 1-d": "scan(thresholds=thresholds[0])",
    "thresholds of more rows than nodes": (
        "scan(thresholds=np.repeat(thresholds, 3, axis=0))"),
    "thresholds of no rows": "scan(thresholds=thresholds[:0])",
    "feature_allowed of fewer nodes": (
        "scan(feature_allowed=np.ones((1, 2), np.uint8))"),
    "feature_allowed of more features": (
        "scan(feature_allowed=np.ones((2, 3), np.uint8))"),
    "feature_allowed of fewer features": (
        "scan(feature_allowed=np.ones((2, 1), np.uint8))"),
    "n_threads 0": "scan(n_threads=0)",
    "n_threads -1": "scan(n_threads=-1)",
}

VALID = {
    "valid": (
        "out = scan()\n"
        "assert (out['feature'] >= 0).all(), out"),
    "valid, a row of thresholds per node": (
        "out = scan(thresholds=np.repeat(thresholds, 2, axis=0))\n"
        "assert (out['feature'] >= 0).all(), out"),
    "valid, no nodes": (
        "out = scan(hist=np.ones((0, 7, 2), np.int64),"
        " node_sums=np.ones((0, 2), np.int64),"
        " feature_allowed=np.ones((0, 2), np.uint8))\n"
        "assert out['feature'].shape == (0,)"),
}


test_valid_arguments_run, test_bad_inputs_raise_value_error = \
    snippet_input_tests(_PRELUDE, BAD_INPUTS, VALID)
