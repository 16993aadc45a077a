"""The exact greedy finder (``_exact_scan.find_best_splits``) against a
naive one.

The naive finder below enumerates, for every open node and every allowed
feature, each candidate split of the node's rows explicitly (as a set of
rows going left) and scores it from the maths of the regularised objective.
Its semantics, from ``_exact_scan.pyx``:

- candidates sit at the midpoints (in float64) of consecutive distinct
  present values of the node; each is tried with missing values right
  ("forward") and, when the node has missing values for the feature, with
  missing values left ("backward");
- when the node has missing values, "all present values left, missing
  right" is a candidate too, at XGBoost's threshold above the largest
  present value (largest + (|largest| + 1e-6), in float32);
- a feature with no missing value in a node sends missing values right (the
  kernel; ``ExactFinder`` turns the features that never miss a value in the
  training data left, XGBoost's exact convention, tested against XGBoost in
  test_missing_directions.py);
- a candidate is admissible when both children have H >= min_child_weight;
- the best is the highest gain, then the lower feature, then the lower
  threshold, then missing-right before missing-left (the forward scan
  offers first and only a strictly better candidate replaces it).

Gradients, hessians and weights are small dyadic rationals, so every float64
sum is exact whatever the summation order: equal partitions then give equal
gains in both finders, and ties are real ties, broken by the rule above.
"""

import math
import sys

import numpy as np
import pytest

from skboost.tree._context import SplitContext
from skboost.tree._exact_scan import find_best_splits
from skboost.tree._node_blocks import NodeBlocks
from skboost.tree._presorted import SortedColumns
from _oracles import REG_GRID, score, split_context
from _isolation import call_outcomes



# --------------------------------------------------------------------------
# The naive finder
# --------------------------------------------------------------------------



def naive_best_split(X, g, h, rows, feature_allowed_row, reg):
    """Best split of the node holding ``rows`` as a dict, or None.

    ``g`` and ``h`` are the weighted float64 gradients and hessians.
    """
    mcw = reg[3]
    G, H = g[rows].sum(), h[rows].sum()
    parent = score(G, H, reg)
    candidates = []  # (gain, feature, threshold, default_left, G_L, H_L)

    def consider(feature, threshold, left_rows, default_left):
        G_left, H_left = g[left_rows].sum(), h[left_rows].sum()
        G_right, H_right = G - G_left, H - H_left
        if H_left >= mcw and H_right >= mcw:
            gain = 0.5 * (score(G_left, H_left, reg)
                          + score(G_right, H_right, reg) - parent)
            candidates.append((gain, feature, threshold, default_left,
                               G_left, H_left))

    for feature in np.flatnonzero(feature_allowed_row):
        x = X[rows, feature]
        present = ~np.isnan(x)
        if not present.any():
            continue
        missing_rows = rows[~present]
        distinct = np.unique(x[present])  # float32, sorted
        for lo, hi in zip(distinct[:-1], distinct[1:]):
            threshold = 0.5 * (float(lo) + float(hi))
            below = rows[present & (x < threshold)]
            if missing_rows.size:
                consider(feature, threshold, below, False)
                consider(feature, threshold,
                         np.concatenate([below, missing_rows]), True)
            else:
                # no missing value in the node: missing right (the kernel's
                # convention; ExactFinder turns features that never miss
                # a value left, as XGBoost's exact method)
                consider(feature, threshold, below, False)
        if missing_rows.size:
            # present vs missing, at XGBoost's threshold: the largest
            # present value plus (its magnitude + 1e-6), in float32
            largest = distinct[-1]
            consider(feature, float(largest + (abs(largest)
                                               + np.float32(1e-6))),
                     rows[present], False)

    if not candidates:
        return None
    # Highest gain, then lower feature, then lower threshold, then missing
    # right (False) before missing left (True).
    return min(candidates, key=lambda c: (-c[0], c[1], c[2], c[3]))


# --------------------------------------------------------------------------
# Random problems
# --------------------------------------------------------------------------

def sorted_blocks(X):
    """(col_ptr, values, rows) of the present entries of each column, sorted
    by (value, row), built here without ``_presort``."""
    col_ptr, values, rows = [0], [], []
    for j in range(X.shape[1]):
        present = np.flatnonzero(~np.isnan(X[:, j]))
        order = present[np.lexsort((present, X[present, j]))]
        values.append(X[order, j])
        rows.append(order)
        col_ptr.append(col_ptr[-1] + order.size)
    return (np.array(col_ptr, dtype=np.int64),
            np.concatenate(values).astype(np.float32),
            np.concatenate(rows).astype(np.int32))


def random_problem(seed):
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 41))
    n_features = int(rng.integers(1, 6))
    n_slots = int(rng.integers(1, 5))
    if rng.random() < 0.5:  # many ties
        X = rng.integers(0, rng.integers(1, 8), size=(n_rows, n_features))
        X = (X * rng.choice([0.5, 1.0, 3.25])).astype(np.float32)
    else:
        X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    X[rng.random(X.shape) < rng.uniform(0.0, 0.3)] = np.nan
    # Small dyadic rationals: every float64 sum below is exact.
    gpair = np.column_stack([rng.integers(-16, 17, n_rows) / 8.0,
                             rng.integers(0, 17, n_rows) / 8.0])
    gpair = np.ascontiguousarray(gpair, dtype=np.float32)
    weight = None
    if rng.random() < 0.4:
        weight = rng.choice([0.0, 0.25, 0.5, 1.0, 1.5, 3.0], size=n_rows)
    row_slot = rng.integers(-1, n_slots, size=n_rows).astype(np.int32)
    allowed = (rng.random((n_slots, n_features))
               < rng.uniform(0.3, 1.0)).astype(np.uint8)
    reg = REG_GRID[int(rng.integers(len(REG_GRID)))]
    return X, gpair, weight, row_slot, allowed, reg


def node_statistics(gpair, weight, row_slot, n_slots):
    w = np.ones(gpair.shape[0]) if weight is None else weight
    g = gpair[:, 0].astype(np.float64) * w
    h = gpair[:, 1].astype(np.float64) * w
    node_G = np.array([g[row_slot == s].sum() for s in range(n_slots)])
    node_H = np.array([h[row_slot == s].sum() for s in range(n_slots)])
    count = np.array([np.count_nonzero(row_slot == s) for s in range(n_slots)],
                     dtype=np.int64)
    return g, h, node_G, node_H, count


def run_kernel(X, gpair, weight, row_slot, allowed, reg, n_threads=1):
    n_slots = allowed.shape[0]
    _, _, node_G, node_H, count = node_statistics(gpair, weight, row_slot,
                                                  n_slots)
    col_ptr, values, rows = sorted_blocks(X)
    columns = SortedColumns(col_ptr, values, rows, X.shape[0])
    return find_best_splits(columns, gpair, row_slot, node_G, node_H, count,
                            allowed, context=split_context(reg, n_threads),
                            weight=weight)


def check_against_naive(X, gpair, weight, row_slot, allowed, reg, n_threads):
    n_slots = allowed.shape[0]
    got = run_kernel(X, gpair, weight, row_slot, allowed, reg, n_threads)
    g, h, _, _, _ = node_statistics(gpair, weight, row_slot, n_slots)
    n_found = 0
    for s in range(n_slots):
        rows = np.flatnonzero(row_slot == s)
        best = naive_best_split(X, g, h, rows, allowed[s], reg)
        where = f"slot {s} of {n_slots}"
        if best is None:
            assert got["feature"][s] == -1, where
            continue
        n_found += 1
        gain, feature, threshold, default_left, G_left, H_left = best
        assert got["feature"][s] == feature, where
        assert got["threshold"][s] == threshold, where
        assert bool(got["default_left"][s]) == default_left, where
        scale = max(abs(gain), 1e-300)
        assert abs(got["gain"][s] - gain) <= 1e-9 * scale + 1e-300, where
        assert got["G_left"][s] == pytest.approx(G_left, rel=1e-9, abs=1e-12)
        assert got["H_left"][s] == pytest.approx(H_left, rel=1e-9, abs=1e-12)
    return n_found


@pytest.mark.parametrize("first_seed", range(0, 400, 50))
def test_matches_naive_finder_on_random_problems(first_seed):
    n_found = 0
    for seed in range(first_seed, first_seed + 50):
        problem = random_problem(seed)
        n_found += check_against_naive(*problem, n_threads=1 + seed % 2)
    assert n_found > 40  # most problems have admissible splits to compare


@pytest.mark.parametrize("reg", REG_GRID)
def test_matches_naive_finder_for_each_regularisation(reg):
    for seed in range(1000, 1030):
        X, gpair, weight, row_slot, allowed, _ = random_problem(seed)
        check_against_naive(X, gpair, weight, row_slot, allowed, reg, 1)


def test_missing_split_on_missingness_and_directions():
    """A hand-made node whose best split is "present vs missing": the
    missing rows carry all the negative gradient."""
    X = np.array([[1.0], [2.0], [np.nan], [np.nan], [3.0]], dtype=np.float32)
    gpair = np.array([[1, 1], [1, 1], [-2, 1], [-2, 1], [1, 1]],
                     dtype=np.float32)
    row_slot = np.zeros(5, dtype=np.int32)
    allowed = np.ones((1, 1), dtype=np.uint8)
    got = run_kernel(X, gpair, None, row_slot, allowed, (1.0, 0, 0, 0))
    # Left = {1, 2, 3} (G = 3, H = 3), right = the two missing (G = -4, H = 2)
    # 1/2 [9/4 + 16/3 - 1/6] = 1/2 [(27 + 64 - 2)/12] = 89/24
    assert got["feature"][0] == 0
    # every present value goes left: XGBoost's threshold above the largest
    # present value 3, 3 + (3 + 1e-6) in float32
    assert got["threshold"][0] == float(np.float32(3) + (
        np.float32(3) + np.float32(1e-6)))
    assert got["default_left"][0] == 0
    assert got["gain"][0] == pytest.approx(89 / 24, rel=1e-12)
    assert got["G_left"][0] == 3.0 and got["H_left"][0] == 3.0

    # Without missing values in the node (rows 2, 3 in another slot), the
    # kernel sends missing values right (XGBoost's exact method on a feature
    # with missing values in the training data)
    row_slot = np.array([0, 0, 1, 1, 0], dtype=np.int32)
    got = run_kernel(X, gpair, None, row_slot, np.ones((2, 1), np.uint8),
                     (1.0, 0, 0, 0))
    assert got["feature"][0] == 0 and got["default_left"][0] == 0
    assert got["feature"][1] == -1  # only missing values: nothing to split


# --------------------------------------------------------------------------
# Monotone constraints: the naive finder with bounded weights
# --------------------------------------------------------------------------

def naive_leaf_weight(G, H, reg, lower, upper):
    """The optimal leaf weight (soft threshold, max_delta_step; 0 for a
    node lighter than min_child_weight), clipped into the node's bounds."""
    reg_lambda, reg_alpha, mds, mcw = reg
    if H < mcw or H <= 0.0:
        return min(max(0.0, lower), upper)
    w = -math.copysign(max(abs(G) - reg_alpha, 0.0), G) / (H + reg_lambda)
    if mds > 0.0 and abs(w) > mds:
        w = math.copysign(mds, w)
    return min(max(w, lower), upper)


def naive_weighted_score(G, H, w, reg):
    reg_lambda, reg_alpha, _, mcw = reg
    if H < mcw or H <= 0.0:
        return 0.0
    return -(2.0 * G * w + (H + reg_lambda) * w * w + 2.0 * reg_alpha * abs(w))


def naive_bounded_best_split(X, g, h, rows, allowed_row, reg, bounds,
                             directions):
    """The best split of a node whose weights are clipped into ``bounds``
    (lower, upper), splits on a feature of direction +1 (-1) admissible
    only when the left weight is <= (>=) the right one (XGBoost's monotone
    constraints), as a dict; None when no split is admissible.

    Candidates: every boundary between present values with the missing
    rows right and, where the node has missing rows, left; the split on
    missingness with every present value left (XGBoost's threshold); and,
    for a constrained feature only, the same partition with the missing
    rows left (threshold -inf), which the constraint may admit where it
    refuses the other."""
    mcw = reg[3]
    lower, upper = bounds
    G, H = g[rows].sum(), h[rows].sum()
    parent = naive_weighted_score(G, H, naive_leaf_weight(G, H, reg, lower,
                                                          upper), reg)
    candidates = []

    def consider(feature, threshold, left_rows, default_left):
        G_left, H_left = g[left_rows].sum(), h[left_rows].sum()
        G_right, H_right = G - G_left, H - H_left
        if H_left < mcw or H_right < mcw:
            return
        w_left = naive_leaf_weight(G_left, H_left, reg, lower, upper)
        w_right = naive_leaf_weight(G_right, H_right, reg, lower, upper)
        direction = directions[feature]
        if (direction > 0 and w_left > w_right) or (
                direction < 0 and w_left < w_right):
            return
        gain = 0.5 * (naive_weighted_score(G_left, H_left, w_left, reg)
                      + naive_weighted_score(G_right, H_right, w_right, reg)
                      - parent)
        candidates.append((gain, feature, threshold, default_left))

    for feature in np.flatnonzero(allowed_row):
        x = X[rows, feature]
        present = ~np.isnan(x)
        if not present.any():
            continue
        missing_rows = rows[~present]
        distinct = np.unique(x[present])
        for lo, hi in zip(distinct[:-1], distinct[1:]):
            threshold = 0.5 * (float(lo) + float(hi))
            below = rows[present & (x < threshold)]
            consider(feature, threshold, below, False)
            if missing_rows.size:
                consider(feature, threshold,
                         np.concatenate([below, missing_rows]), True)
        if missing_rows.size:
            largest = distinct[-1]
            consider(feature, float(largest + (abs(largest)
                                               + np.float32(1e-6))),
                     rows[present], False)
            if directions[feature] != 0:
                consider(feature, -np.inf, missing_rows, True)
    if not candidates:
        return None
    return min(candidates, key=lambda c: (-c[0], c[1], c[2], c[3]))


def bounded_problem(seed):
    """A random problem with monotone directions and node bounds, in
    dyadic rationals (exact float64 sums) and with many missing values."""
    X, gpair, weight, row_slot, allowed, reg = random_problem(seed)
    rng = np.random.default_rng(10_000 + seed)
    X[rng.random(X.shape) < 0.25] = np.nan
    directions = rng.integers(-1, 2, size=X.shape[1]).astype(np.int8)
    centre = rng.uniform(-1.0, 1.0, size=allowed.shape[0])
    width = rng.choice([np.inf, 2.0, 0.5, 0.1], size=allowed.shape[0])
    bounds = np.column_stack([centre - width, centre + width])
    return X, gpair, weight, row_slot, allowed, reg, bounds, directions


@pytest.mark.parametrize("first_seed", range(0, 300, 100))
def test_matches_naive_finder_with_monotone_bounds(first_seed):
    """Monotone directions and node bounds: the kernel's best equals the
    naive finder's, with one thread and with two (the pre-test that skips a
    group's walks must offer the same splits on missingness as the walks,
    whichever features a thread scanned before)."""
    n_compared = 0
    for seed in range(first_seed, first_seed + 100):
        (X, gpair, weight, row_slot, allowed, reg, bounds,
         directions) = bounded_problem(seed)
        n_slots = allowed.shape[0]
        g, h, node_G, node_H, count = node_statistics(gpair, weight,
                                                      row_slot, n_slots)
        col_ptr, values, rows = sorted_blocks(X)
        columns = SortedColumns(col_ptr, values, rows, X.shape[0])
        for n_threads in (1, 2):
            got = find_best_splits(
                columns, gpair, row_slot, node_G, node_H, count, allowed,
                context=split_context(reg, n_threads), weight=weight,
                bounds=bounds, monotone=directions)
            for s in range(n_slots):
                best = naive_bounded_best_split(
                    X, g, h, np.flatnonzero(row_slot == s), allowed[s], reg,
                    bounds[s], directions)
                where = f"seed {seed}, slot {s}, {n_threads} threads"
                if best is None:
                    assert got["feature"][s] == -1, where
                    continue
                n_compared += 1
                gain, feature, threshold, default_left = best
                assert (got["feature"][s], got["threshold"][s],
                        bool(got["default_left"][s])) == (
                            feature, threshold, default_left), where
                assert got["gain"][s] == pytest.approx(gain, rel=1e-9,
                                                       abs=1e-12), where
    assert n_compared > 100


def test_threads_give_identical_results():
    rng = np.random.default_rng(7)
    n_rows, n_features, n_slots = 3000, 24, 4
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    X[:, ::3] = np.round(X[:, ::3] * 2)  # ties
    X[rng.random(X.shape) < 0.15] = np.nan
    X[:, 5] = X[:, 2]  # duplicated features: exact ties between features
    gpair = np.ascontiguousarray(
        np.column_stack([rng.normal(size=n_rows), rng.uniform(0.1, 1, n_rows)]),
        dtype=np.float32)
    weight = rng.uniform(0.5, 2.0, n_rows)
    row_slot = rng.integers(-1, n_slots, n_rows).astype(np.int32)
    allowed = (rng.random((n_slots, n_features)) < 0.8).astype(np.uint8)
    for reg in [(1.0, 0.0, 0.0, 1.0), (0.5, 0.3, 0.7, 0.0)]:
        for w in (None, weight):
            one = run_kernel(X, gpair, w, row_slot, allowed, reg, 1)
            two = run_kernel(X, gpair, w, row_slot, allowed, reg, 2)
            assert (one["feature"] >= 0).all()
            for key in one.dtype.names:
                np.testing.assert_array_equal(one[key], two[key], err_msg=key)


def test_integer_weights_equal_repeated_rows():
    """The docstring's promise: weight k adds what k copies of the row add."""
    rng = np.random.default_rng(3)
    n_rows, n_features = 60, 4
    X = np.round(rng.normal(size=(n_rows, n_features)) * 3).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    gpair = np.column_stack([rng.integers(-8, 9, n_rows) / 4.0,
                             rng.integers(1, 9, n_rows) / 4.0])
    gpair = np.ascontiguousarray(gpair, dtype=np.float32)
    weight = rng.integers(0, 4, n_rows).astype(np.float64)
    row_slot = rng.integers(0, 2, n_rows).astype(np.int32)
    allowed = np.ones((2, n_features), dtype=np.uint8)
    reg = (1.0, 0.0, 0.0, 1.0)
    weighted = run_kernel(X, gpair, weight, row_slot, allowed, reg)
    repeat = weight.astype(np.int64)
    repeated = run_kernel(np.repeat(X, repeat, axis=0),
                          np.repeat(gpair, repeat, axis=0), None,
                          np.repeat(row_slot, repeat), allowed, reg)
    for key in weighted.dtype.names:
        np.testing.assert_array_equal(weighted[key], repeated[key],
                                      err_msg=key)


# --------------------------------------------------------------------------
# Invalid inputs: a ValueError, never a crash or a silent out-of-bounds read.
# Each call runs in a child process so that a crash fails its own case only.
# --------------------------------------------------------------------------

outcomes_in_child_processes = call_outcomes


def valid_blocks():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2)).astype(np.float32)
    col_ptr, values, rows = sorted_blocks(X)
    return dict(col_ptr=col_ptr, values=values, rows=rows, n_rows=6)


def valid_arguments():
    return dict(
        blocks=SortedColumns(**valid_blocks()),
        gpair=np.ones((6, 2), dtype=np.float32),
        row_slot=np.array([0, 0, 0, 1, 1, -1], dtype=np.int32),
        node_G=np.array([3.0, 2.0]), node_H=np.array([3.0, 2.0]),
        node_count=np.array([3, 2], dtype=np.int64),
        feature_allowed=np.ones((2, 2), dtype=np.uint8),
        context=SplitContext(reg_lambda=1.0, reg_alpha=0.0,
                             max_delta_step=0.0, min_child_weight=0.0,
                             n_threads=1))


def _with(**changes):
    args = valid_arguments()
    args.update(changes)
    return "find_best_splits", args


def _blocks_with(**changes):
    """The sorted blocks are validated once, when SortedColumns is built;
    the scan kernel only accepts a SortedColumns."""
    args = valid_blocks()
    args.update(changes)
    return "SortedColumns", args


BAD_INPUTS = {
    "col_ptr not starting at 0": _blocks_with(
        col_ptr=np.array([1, 6, 12], dtype=np.int64)),
    "col_ptr end beyond the blocks": _blocks_with(
        col_ptr=np.array([0, 6, 13], dtype=np.int64)),
    "col_ptr end short of the blocks": _blocks_with(
        col_ptr=np.array([0, 6, 11], dtype=np.int64)),
    "col_ptr empty": _blocks_with(col_ptr=np.zeros(0, dtype=np.int64)),
    "col_ptr inner entry beyond the blocks": _blocks_with(
        col_ptr=np.array([0, 10**9, 12], dtype=np.int64)),
    "col_ptr inner entry negative": _blocks_with(
        col_ptr=np.array([0, -5, 12], dtype=np.int64)),
    "col_ptr decreasing": _blocks_with(
        col_ptr=np.array([0, 8, 7, 12], dtype=np.int64)),
    "values and rows of different lengths": _blocks_with(
        rows=np.zeros(11, dtype=np.int32)),
    "row index beyond n_rows": _blocks_with(n_rows=3),
    "NaN in the sorted values": _blocks_with(
        values=np.full(12, np.nan, dtype=np.float32)),
    "gpair with 3 columns": _with(gpair=np.ones((6, 3), dtype=np.float32)),
    "gpair of other rows than row_slot": _with(
        gpair=np.ones((5, 2), dtype=np.float32)),
    "node_H of other length": _with(node_H=np.ones(3)),
    "node_count of other length": _with(node_count=np.ones(1, np.int64)),
    "feature_allowed with too few slots": _with(
        feature_allowed=np.ones((1, 2), np.uint8)),
    "feature_allowed with too many features": _with(
        feature_allowed=np.ones((2, 3), np.uint8)),
    "row_slot beyond the slots": _with(
        row_slot=np.array([0, 0, 0, 1, 2, -1], dtype=np.int32)),
    "row_slot below -1": _with(
        row_slot=np.array([0, 0, 0, 1, -2, -1], dtype=np.int32)),
    "weight of other length": ("find_best_splits",
                               dict(valid_arguments(), weight=np.ones(5))),
    # the thread count comes in the context, validated when it is built
    "n_threads 0": ("SplitContext", dict(n_threads=0)),
    "n_threads -1": ("SplitContext", dict(n_threads=-1)),
}

# the module of each function called above
MODULES = {"find_best_splits": "skboost.tree._exact_scan",
           "SortedColumns": "skboost.tree._presorted",
           "SplitContext": "skboost.tree._context"}


@pytest.fixture(scope="module")
def bad_input_outcomes():
    calls = [(MODULES[function], function, (), kwargs)
             for function, kwargs in BAD_INPUTS.values()]
    calls.append((MODULES["find_best_splits"], "find_best_splits", (),
                  valid_arguments()))
    return dict(zip(list(BAD_INPUTS) + ["valid"],
                    outcomes_in_child_processes(calls)))


def test_valid_arguments_run(bad_input_outcomes):
    # The baseline of the cases below: without the defect, the call works.
    assert bad_input_outcomes["valid"] == "returned"
    find_best_splits(**valid_arguments())


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_inputs_raise_value_error(case, bad_input_outcomes):
    assert bad_input_outcomes[case] == "ValueError"


@pytest.mark.parametrize("columns", [None, (np.zeros(1), np.zeros(0), np.zeros(0))])
def test_columns_must_be_sorted_columns(columns):
    # Only a validated SortedColumns reaches the nogil scan.
    args = dict(valid_arguments(), blocks=columns)
    with pytest.raises(TypeError):
        find_best_splits(**args)


# --------------------------------------------------------------------------
# The blocks regrouped by node (NodeBlocks)
# --------------------------------------------------------------------------

def naive_groups(X, row_slot, feature):
    """{slot: its rows with a present value, in (value, row) order}."""
    out = {}
    present = np.flatnonzero(~np.isnan(X[:, feature]) & (row_slot >= 0))
    order = present[np.lexsort((present, X[present, feature]))]
    for row in order:
        out.setdefault(int(row_slot[row]), []).append(row)
    return {s: np.array(rows) for s, rows in out.items()}


def assert_groups_equal(blocks, X, row_slot):
    for feature in range(X.shape[1]):
        got = blocks.groups(feature)
        want = naive_groups(X, row_slot, feature)
        assert sorted(got) == sorted(want)
        for slot in want:
            np.testing.assert_array_equal(got[slot], want[slot])


def next_level(rng, row_slot, n_slots):
    """A random level's outcome: each slot split (its rows sent to either
    child at random) or made a leaf; returns (row_slot, left_slot, n_next)."""
    split = rng.random(n_slots) < 0.7
    left_slot = np.full(n_slots, -1, dtype=np.int32)
    left_slot[split] = 2 * np.arange(np.count_nonzero(split))
    n_next = 2 * int(np.count_nonzero(split))
    nxt = np.full(row_slot.shape[0], -1, dtype=np.int32)
    active = row_slot >= 0
    go_right = rng.random(row_slot.shape[0]) < rng.uniform(0.0, 1.0)
    nxt[active] = left_slot[row_slot[active]] + go_right[active]
    nxt[active & (left_slot[np.maximum(row_slot, 0)] < 0)] = -1
    return nxt, left_slot, n_next


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_node_blocks_split_equals_regrouping(seed, n_threads):
    # Splitting the groups level after level (in place, from the second
    # level on) gives the groups a fresh grouping by the rows' slots gives,
    # checked against a naive grouping.
    rng = np.random.default_rng(seed)
    X, _, _, _, _, _ = random_problem(seed)
    col_ptr, values, rows = sorted_blocks(X)
    blocks = NodeBlocks(SortedColumns(col_ptr, values, rows, X.shape[0]))
    row_slot = np.where(rng.random(X.shape[0]) < 0.8, 0, -1).astype(np.int32)
    if seed % 2:
        row_slot[:] = 0  # the one-group-per-block start, read in place
    blocks.start(row_slot, 1, n_threads)
    assert_groups_equal(blocks, X, row_slot)
    n_slots = 1
    for _ in range(4):
        if n_slots == 0:
            break
        row_slot, left_slot, n_slots = next_level(rng, row_slot, n_slots)
        blocks.split(row_slot, left_slot, n_slots, n_threads)
        assert blocks.n_slots == n_slots
        assert_groups_equal(blocks, X, row_slot)


@pytest.mark.parametrize("seed", range(30))
def test_finder_on_split_blocks_equals_finder_on_columns(seed):
    # The grower's path (groups split from the previous level) finds the
    # same splits as a grouping made for the level.
    rng = np.random.default_rng(1000 + seed)
    X, gpair, weight, _, _, reg = random_problem(seed)
    columns = SortedColumns(*sorted_blocks(X), X.shape[0])
    blocks = NodeBlocks(columns)
    row_slot = np.zeros(X.shape[0], dtype=np.int32)
    blocks.start(row_slot, 1, 1)
    row_slot, left_slot, n_slots = next_level(rng, row_slot, 1)
    blocks.split(row_slot, left_slot, n_slots, 2)
    allowed = np.ones((n_slots, X.shape[1]), dtype=np.uint8)
    _, _, node_G, node_H, count = node_statistics(gpair, weight, row_slot,
                                                  n_slots)
    args = (gpair, row_slot, node_G, node_H, count, allowed)
    context = split_context(reg, 2)
    assert blocks.split_pending
    got = find_best_splits(blocks, *args, context=context, weight=weight)
    want = find_best_splits(columns, *args, context=context, weight=weight)
    for name in want.dtype.names:
        np.testing.assert_array_equal(got[name], want[name])
    # the finder carried out the split on its way
    assert not blocks.split_pending
    assert_groups_equal(blocks, X, row_slot)


def test_node_blocks_reject_bad_levels():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    blocks = NodeBlocks(SortedColumns(*sorted_blocks(X), 6))
    blocks.start(np.zeros(6, dtype=np.int32), 1, 1)
    good_slots = np.array([0, 0, 1, 1, 1, -1], dtype=np.int32)
    with pytest.raises(ValueError, match="left_slot"):
        blocks.split(good_slots, np.array([1], dtype=np.int32), 2, 1)
    with pytest.raises(ValueError, match="left_slot"):
        blocks.split(good_slots, np.array([0, 0], dtype=np.int32), 2, 1)
    with pytest.raises(ValueError, match="row_slot"):
        blocks.split(good_slots + 1, np.array([0], dtype=np.int32), 2, 1)
    with pytest.raises(ValueError, match="row_slot"):
        blocks.start(good_slots[:5], 2, 1)
    with pytest.raises(ValueError, match="n_threads"):
        blocks.split(good_slots, np.array([0], dtype=np.int32), 2, 0)
    blocks.split(good_slots, np.array([0], dtype=np.int32), 2, 1)
    assert_groups_equal(blocks, X, good_slots)
    # the finder refuses blocks grouped for another level
    with pytest.raises(ValueError, match="grouped for 2 slots"):
        find_best_splits(blocks, np.ones((6, 2), np.float32),
                         np.zeros(6, np.int32), np.ones(1), np.ones(1),
                         np.ones(1, np.int64), np.ones((1, 2), np.uint8),
                         context=SplitContext(min_child_weight=0.0))


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_route_rows_equals_apply_level_splits(seed, n_threads):
    # Rows routed from the split features' groups go where the row
    # partitioner, reading X itself, sends them.
    from skboost.tree._partition import apply_level_splits

    rng = np.random.default_rng(2000 + seed)
    X, _, _, row_slot, allowed, _ = random_problem(seed)
    n_slots = allowed.shape[0]
    blocks = NodeBlocks(SortedColumns(*sorted_blocks(X), X.shape[0]))
    blocks.start(row_slot, n_slots, 1)
    split = rng.random(n_slots) < 0.7
    feature = np.where(split, rng.integers(0, X.shape[1], n_slots),
                       -1).astype(np.int32)
    # thresholds at data values, between them, and beyond them
    threshold = rng.choice(np.concatenate([np.nan_to_num(X.ravel()),
                                           [-np.inf, np.inf, 0.25]]),
                           n_slots).astype(np.float64)
    default_left = rng.integers(0, 2, n_slots).astype(np.uint8)
    left_slot = np.full(n_slots, -1, dtype=np.int32)
    left_slot[split] = 2 * np.arange(np.count_nonzero(split))
    n_next = 2 * int(np.count_nonzero(split))
    want_slots = row_slot.copy()
    want = apply_level_splits(X, want_slots, feature, threshold,
                              default_left, left_slot, left_slot + 1,
                              n_next_slots=n_next, n_threads=1)
    got_slots = row_slot.copy()
    got = blocks.route_rows(got_slots, feature, threshold, default_left,
                            left_slot, n_next=n_next, n_threads=n_threads)
    np.testing.assert_array_equal(got_slots, want_slots)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(12))
def test_grower_tracks_the_leaf_of_each_active_row(seed):
    # The exact grower routes rows from the groups and records where each
    # active row ends; that must be the leaf the predictor sends it to.
    from skboost._model.train import single_tree_booster as _single_tree
    from skboost.tree.driver import TreeParams
    from skboost.tree.methods import make_grower

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.3] = np.nan
    gpair = np.column_stack([rng.normal(size=300), rng.uniform(0.1, 1, 300)])
    gpair = np.ascontiguousarray(gpair, dtype=np.float32)
    active = rng.random(300) < 0.8
    params = TreeParams(tree_method="exact",
                        max_depth=int(rng.integers(1, 6)),
                        min_child_weight=0.5, reg_lambda=1.0)
    grower = make_grower(X, params, 2, rng)
    tree, leaf_rows = grower.grow(gpair, active)
    want = _single_tree(tree, X).predict_leaves(X, n_threads=1)[:, 0]
    np.testing.assert_array_equal(leaf_rows.leaf[active], want[active])
    assert np.all(leaf_rows.leaf[~active] == -1)
    assert np.all(tree.left_child[leaf_rows.leaf[active]] == -1)
