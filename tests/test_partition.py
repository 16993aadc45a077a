"""``apply_level_splits`` against a naive per-row loop."""

import numpy as np
import pytest

from skboost.tree._partition import apply_level_splits


def naive_partition(X, row_slot, feature, threshold, default_left, left_slot,
                    right_slot):
    new_slot = []
    for r in range(X.shape[0]):
        s = row_slot[r]
        if s == -1 or feature[s] == -1:
            new_slot.append(-1)
            continue
        x = float(X[r, feature[s]])
        if np.isnan(x):
            go_left = bool(default_left[s])
        else:
            go_left = x < threshold[s]
        new_slot.append(left_slot[s] if go_left else right_slot[s])
    return np.array(new_slot, dtype=np.int32)


def random_level(seed):
    rng = np.random.default_rng(seed)
    n_rows, n_features = int(rng.integers(1, 300)), int(rng.integers(1, 6))
    n_slots = int(rng.integers(1, 7))
    X = rng.integers(-3, 4, size=(n_rows, n_features)).astype(np.float32)
    X += rng.choice([0.0, 0.25], size=X.shape).astype(np.float32)
    X[rng.random(X.shape) < rng.uniform(0, 0.3)] = np.nan
    row_slot = rng.integers(-1, n_slots, n_rows).astype(np.int32)
    feature = rng.integers(-1, n_features, n_slots).astype(np.int32)
    # Thresholds on present values (equality goes right) and between them.
    threshold = rng.integers(-3, 4, n_slots) + rng.choice([0.0, 0.125, 0.25],
                                                          n_slots)
    default_left = rng.integers(0, 2, n_slots).astype(np.uint8)
    # Children in a shuffled order, leaves get arbitrary (unused) slots.
    split = feature >= 0
    n_next = 2 * int(split.sum())
    children = rng.permutation(n_next).astype(np.int32)
    left_slot = np.full(n_slots, -1, dtype=np.int32)
    right_slot = np.full(n_slots, 7, dtype=np.int32)
    left_slot[split] = children[0::2]
    right_slot[split] = children[1::2]
    return (X, row_slot, feature, threshold.astype(np.float64), default_left,
            left_slot, right_slot, n_next)


@pytest.mark.parametrize("seed", range(40))
def test_matches_naive_loop(seed):
    X, row_slot, feature, threshold, default_left, left, right, n_next = (
        random_level(seed))
    expected = naive_partition(X, row_slot, feature, threshold, default_left,
                               left, right)
    got_slot = row_slot.copy()
    counts = apply_level_splits(X, got_slot, feature, threshold, default_left,
                                left, right, n_next_slots=n_next,
                                n_threads=1 + seed % 2)
    np.testing.assert_array_equal(got_slot, expected)
    assert counts.dtype == np.int64
    assert counts.tolist() == [int(np.sum(expected == k))
                               for k in range(n_next)]


def test_nan_follows_default_left_and_ties_go_right():
    X = np.array([[np.nan], [1.0], [2.0], [np.nan], [0.5]], dtype=np.float32)
    for default_left, nan_slot in [(1, 0), (0, 1)]:
        row_slot = np.zeros(5, dtype=np.int32)
        counts = apply_level_splits(
            X, row_slot, np.array([0], np.int32), np.array([1.0]),
            np.array([default_left], np.uint8), np.array([0], np.int32),
            np.array([1], np.int32),
            n_next_slots=2, n_threads=1)
        # 1.0 < 1.0 is false: right. 0.5 goes left, 2.0 right.
        assert row_slot.tolist() == [nan_slot, 1, 1, nan_slot, 0]
        assert counts.tolist() == [1 + 2 * (nan_slot == 0),
                                   2 + 2 * (nan_slot == 1)]


def test_threshold_compared_in_float64():
    # The exact finder's thresholds sit between adjacent float32 values;
    # the comparison must not round the threshold to float32.
    a = np.float32(1.0)
    b = np.nextafter(a, np.float32(2.0))
    X = np.array([[a], [b]], dtype=np.float32)
    row_slot = np.zeros(2, dtype=np.int32)
    apply_level_splits(X, row_slot, np.array([0], np.int32),
                       np.array([0.5 * (float(a) + float(b))]),
                       np.array([0], np.uint8), np.array([0], np.int32),
                       np.array([1], np.int32),
                       n_next_slots=2, n_threads=1)
    assert row_slot.tolist() == [0, 1]


def test_leaves_and_inactive_rows_get_no_slot():
    X = np.zeros((4, 1), dtype=np.float32)
    row_slot = np.array([0, 1, -1, 1], dtype=np.int32)
    counts = apply_level_splits(X, row_slot, np.array([-1, 0], np.int32),
                                np.array([0.0, 1.0]), np.zeros(2, np.uint8),
                                np.array([-1, 0], np.int32),
                                np.array([-1, 1], np.int32),
                                n_next_slots=2, n_threads=1)
    assert row_slot.tolist() == [-1, 0, -1, 0]
    assert counts.tolist() == [2, 0]


def test_threads_give_identical_results():
    X, row_slot, feature, threshold, default_left, left, right, n_next = (
        random_level(123))
    X = np.tile(X, (40, 1))
    row_slot = np.tile(row_slot, 40)
    results = []
    for n_threads in (1, 2):
        slots = row_slot.copy()
        counts = apply_level_splits(X, slots, feature, threshold,
                                    default_left, left, right,
                                    n_next_slots=n_next, n_threads=n_threads)
        results.append((slots, counts))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def valid_arguments():
    return dict(
        X=np.zeros((4, 2), dtype=np.float32),
        row_slot=np.array([0, 1, 1, -1], dtype=np.int32),
        split_feature=np.array([0, 1], dtype=np.int32),
        split_threshold=np.array([0.5, 0.5]),
        default_left=np.array([0, 1], dtype=np.uint8),
        left_slot=np.array([0, 2], dtype=np.int32),
        right_slot=np.array([1, 3], dtype=np.int32),
        n_next_slots=4, n_threads=1)


def _with(**changes):
    args = valid_arguments()
    args.update(changes)
    return args


BAD_INPUTS = {
    "row_slot beyond the slots": _with(
        row_slot=np.array([0, 2, 1, -1], dtype=np.int32)),
    "row_slot below -1": _with(
        row_slot=np.array([0, -2, 1, -1], dtype=np.int32)),
    "row_slot shorter than X": _with(row_slot=np.zeros(3, dtype=np.int32)),
    "feature beyond X's columns": _with(
        split_feature=np.array([0, 2], dtype=np.int32)),
    "feature below -1": _with(split_feature=np.array([-2, 0], dtype=np.int32)),
    "left child beyond the next level": _with(
        left_slot=np.array([0, 4], dtype=np.int32)),
    "right child beyond the next level": _with(
        right_slot=np.array([1, 4], dtype=np.int32)),
    "negative child of a split node": _with(
        left_slot=np.array([-1, 2], dtype=np.int32)),
    "threshold of other length": _with(split_threshold=np.array([0.5])),
    "default_left of other length": _with(default_left=np.zeros(3, np.uint8)),
    "left_slot of other length": _with(left_slot=np.array([0], np.int32)),
    "right_slot of other length": _with(right_slot=np.array([1], np.int32)),
    "rows but no slots": _with(
        split_feature=np.zeros(0, np.int32), split_threshold=np.zeros(0),
        default_left=np.zeros(0, np.uint8), left_slot=np.zeros(0, np.int32),
        right_slot=np.zeros(0, np.int32)),
}


def test_valid_arguments_run():
    args = valid_arguments()
    counts = apply_level_splits(**args)
    assert args["row_slot"].tolist() == [0, 2, 2, -1]
    assert counts.tolist() == [1, 0, 2, 0]


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_invalid_arrays_raise_value_error(case):
    args = BAD_INPUTS[case]
    before = args["row_slot"].copy()
    with pytest.raises(ValueError):
        apply_level_splits(**args)
    # Validation happens before any row moves.
    np.testing.assert_array_equal(args["row_slot"], before)
