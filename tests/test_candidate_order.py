"""``_candidate_order.better_of`` against a naive statement of the finders'
total order (``_common.is_better``): higher gain, then lower feature index,
then lower threshold; a record with no split (feature < 0) loses to any
split, and never wins."""

import numpy as np
import pytest

from skboost.tree._candidate_order import better_of
from skboost.tree.finders.categorical import merge_splits
from skboost.tree.splits import SPLIT_RECORD, empty_records


def naive_b_wins(a, b):
    if b["feature"] < 0:
        return False
    if a["feature"] < 0:
        return True
    if b["gain"] != a["gain"]:
        return b["gain"] > a["gain"]
    if b["feature"] != a["feature"]:
        return b["feature"] < a["feature"]
    return b["threshold"] < a["threshold"]


def random_records(rng, n):
    """Records drawn from few values, so that ties of gain, of feature and
    of threshold are frequent; some without a split."""
    records = empty_records(n)
    records["feature"] = rng.integers(-1, 3, n)
    records["gain"] = rng.choice([-1e300, -0.5, 0.0, 0.25, 1.0, 2.0], n)
    records["threshold"] = rng.choice([-np.inf, -1.0, 0.5, 2.0, np.inf], n)
    records["default_left"] = rng.integers(0, 2, n)
    return records


@pytest.mark.parametrize("seed", range(20))
def test_matches_naive_order_on_random_records(seed):
    rng = np.random.default_rng(seed)
    a, b = random_records(rng, 500), random_records(rng, 500)
    got = better_of(a, b)
    want = np.array([naive_b_wins(x, y) for x, y in zip(a, b)])
    assert got.dtype == bool and got.shape == (500,)
    np.testing.assert_array_equal(got, want)
    # ties (equal gains and features) were drawn
    assert np.any((a["gain"] == b["gain"]) & (a["feature"] == b["feature"])
                  & (a["feature"] >= 0))


def test_a_record_never_beats_itself():
    records = random_records(np.random.default_rng(0), 200)
    assert not better_of(records, records).any()


def test_no_split_loses_to_any_split_whatever_the_gains():
    a, b = empty_records(3), empty_records(3)
    a["gain"] = [5.0, 5.0, -1e300]   # a higher gain, but no feature
    b["feature"] = [0, -1, 2]
    b["gain"] = [1.0, 9.0, -1e300]
    np.testing.assert_array_equal(better_of(a, b), [True, False, True])


def test_hand_made_order():
    a, b = empty_records(4), empty_records(4)
    a["feature"], b["feature"] = [3, 3, 3, 3], [5, 1, 3, 3]
    a["gain"], b["gain"] = [1.0, 1.0, 1.0, 1.0], [2.0, 1.0, 1.0, 1.0]
    a["threshold"], b["threshold"] = [0, 0, 0.5, 0.5], [0, 0, 0.25, 0.75]
    # higher gain; same gain, lower feature; lower threshold; higher one
    np.testing.assert_array_equal(better_of(a, b),
                                  [True, True, True, False])


def test_empty_records():
    assert better_of(empty_records(0), empty_records(0)).shape == (0,)


def test_rejects_other_arrays():
    with pytest.raises(ValueError, match="equal length"):
        better_of(empty_records(2), empty_records(3))
    with pytest.raises(ValueError, match="SPLIT_RECORD"):
        better_of(np.zeros(2), empty_records(2))
    with pytest.raises(ValueError, match="SPLIT_RECORD"):
        better_of(empty_records(4).reshape(2, 2), empty_records(4))


@pytest.mark.parametrize("seed", range(5))
def test_merge_splits_keeps_the_rule_it_had(seed):
    # merge_splits's own rule before better_of (numeric and categorical
    # features differ): the categorical best wins if it exists and the
    # numeric one does not, or it has a higher gain, or an equal gain and a
    # lower feature index
    rng = np.random.default_rng(seed)
    numeric, categorical = random_records(rng, 300), random_records(rng, 300)
    categorical["feature"] = np.where(categorical["feature"] >= 0,
                                      categorical["feature"] + 1, -1)
    numeric["feature"] = np.where(numeric["feature"] >= 0,
                                  2 * numeric["feature"] + 4, -1)
    left_sets = np.array([np.array([True, bool(k % 2)]) for k in range(300)]
                         + [None], dtype=object)[:300]
    cat_wins = (categorical["feature"] >= 0) & (
        (numeric["feature"] < 0) | (categorical["gain"] > numeric["gain"])
        | ((categorical["gain"] == numeric["gain"])
           & (categorical["feature"] < numeric["feature"])))
    merged, merged_sets = merge_splits(numeric, (categorical, left_sets))
    assert merged.dtype == SPLIT_RECORD
    for name in SPLIT_RECORD.names:
        np.testing.assert_array_equal(
            merged[name], np.where(cat_wins, categorical[name],
                                   numeric[name]))
    for k in range(300):
        assert merged_sets[k] is (left_sets[k] if cat_wins[k] else None)
