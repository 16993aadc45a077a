"""Categorical features: the split scan against brute force over every
partition, trees against the one-hot encoding's, the predictor against a
naive walk, re-coding by value, unseen categories, save/load, errors.

Oracles: exhaustive enumeration of the partitions of a node's categories
(Fisher's result makes the sorted scan optimal for lambda = 0 and
min_child_weight = 0); the one-hot encoding of a feature, whose trees a
categorical feature with ``max_cat_to_onehot`` large must reproduce split
for split; a naive Python walk of the trees (``Tree.left_categories``);
the same data given as a ``category`` column, with its categories in
another order or with extra ones.
"""

import itertools

import numpy as np
import pytest

from skboost import BoostClassifier, BoostRegressor
from skboost.tree._categorical_scan import categorical_left_set
from skboost.tree._hist_split import find_best_splits_hist
from skboost.tree._predictor import PackedForest
from skboost.tree._tree import (Tree, category_bitset, category_bitsets,
                                category_goes_left)
from _oracles import REG_GRID, score, split_context

pd = pytest.importorskip("pandas")


# --------------------------------------------------------------------------
# The split scan
# --------------------------------------------------------------------------


def random_node(rng, k, with_missing, empty=0.2):
    """An int64 histogram of one categorical feature with k categories
    (some empty) and its missing bin."""
    hist = np.zeros((k + 1, 2), dtype=np.int64)
    hist[:, 0] = rng.integers(-40, 41, size=k + 1)
    hist[:, 1] = rng.integers(1, 30, size=k + 1)
    hist[:k][rng.random(k) < empty] = 0
    if not with_missing:
        hist[k] = 0
    return hist


def scan(hist, reg, onehot=1, threshold=64, scales=(4.0, 8.0)):
    k = hist.shape[0] - 1
    splits = find_best_splits_hist(
        hist[np.newaxis], hist.sum(axis=0, keepdims=True),
        np.array([0, k + 1], dtype=np.int64), np.zeros((1, k + 1)),
        np.ones((1, 1), dtype=np.uint8),
        context=split_context(reg, 1, scale_g=scales[0], scale_h=scales[1],
                      max_cat_to_onehot=onehot, max_cat_threshold=threshold),
        categorical=np.ones(1, np.uint8))
    return {key: splits[key][0] for key in splits.dtype.names}


def gain_of(hist, left, missing_left, reg, scales=(4.0, 8.0)):
    """Loss reduction of sending categories ``left`` (and the missing bin
    when ``missing_left``) left; None when a child is too light."""
    k = hist.shape[0] - 1
    mask = np.zeros(k + 1, dtype=bool)
    mask[list(left)] = True
    mask[k] = missing_left
    G, H = hist.sum(axis=0) / np.array(scales)
    GL, HL = hist[mask].sum(axis=0) / np.array(scales)
    if HL < reg[3] or H - HL < reg[3]:
        return None
    return 0.5 * (score(GL, HL, reg) + score(G - GL, H - HL, reg)
                  - score(G, H, reg))


def all_partitions(present):
    """Every non-empty set of present categories (a left side)."""
    for r in range(1, len(present) + 1):
        yield from itertools.combinations(present, r)


def brute_force(hist, reg, candidates):
    """The highest gain of the candidate left sets, each with missing
    values left and right."""
    best = -np.inf
    for left in candidates:
        for missing_left in (False, True):
            gain = gain_of(hist, left, missing_left, reg)
            if gain is not None:
                best = max(best, gain)
    return best


def present_of(hist):
    k = hist.shape[0] - 1
    return [c for c in range(k) if hist[c].any()]


def chosen_left(hist, split, reg):
    k = hist.shape[0] - 1
    left, rest_left = categorical_left_set(
        hist, first_bin=0, n_categories=k, cat_kind=int(split["cat_kind"]),
        split_bin=int(split["split_bin"]),
        context=split_context(reg, scale_g=4.0, scale_h=8.0))
    present = present_of(hist)
    n_left = len(set(np.flatnonzero(left)) & set(present))
    # "the rest" is the side of more present categories (one-hot: left)
    assert rest_left == (split["cat_kind"] == 1
                         or n_left > len(present) - n_left)
    return np.flatnonzero(left)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("with_missing", [False, True])
def test_sorted_scan_finds_the_best_partition(k, with_missing):
    """lambda = 0, min_child_weight = 0: the best of every partition of
    the present categories (and both missing directions)."""
    rng = np.random.default_rng(k + 10 * with_missing)
    reg = (0.0, 0.0, 0.0, 0.0)
    for _ in range(30):
        hist = random_node(rng, k, with_missing)
        present = present_of(hist)
        split = scan(hist, reg, onehot=1, threshold=k)
        best = brute_force(hist, reg, all_partitions(present))
        if split["feature"] < 0:
            assert best <= 0 or not np.isfinite(best)
            continue
        assert split["cat_kind"] == 2
        assert split["gain"] == pytest.approx(best, rel=1e-12, abs=1e-12)
        # the set it reports is a partition of that gain
        left = chosen_left(hist, split, reg)
        assert 1 <= len(set(left) & set(present)) <= len(present)
        again = gain_of(hist, left, bool(split["default_left"]), reg)
        assert again == pytest.approx(split["gain"], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("reg", REG_GRID)
@pytest.mark.parametrize("k", [2, 3, 5])
def test_one_hot_scan_is_the_best_single_category(reg, k):
    """k <= max_cat_to_onehot: the best "one category right, the rest
    left", under every regularisation and min_child_weight."""
    rng = np.random.default_rng(k)
    for _ in range(30):
        hist = random_node(rng, k, with_missing=rng.random() < 0.5)
        has_missing = bool(hist[k].any())
        present = present_of(hist)
        split = scan(hist, reg, onehot=k)
        best = -np.inf
        for c in present:
            rest = [d for d in range(k) if d != c]
            for missing_left in ((False, True) if has_missing else (True,)):
                gain = gain_of(hist, rest, missing_left, reg)
                if gain is not None:
                    best = max(best, gain)
        if split["feature"] < 0:
            assert not np.isfinite(best)
            continue
        assert split["cat_kind"] == 1
        assert split["gain"] == pytest.approx(best, rel=1e-12, abs=1e-12)
        left = chosen_left(hist, split, reg)
        assert list(left) == [d for d in range(k) if d != split["split_bin"]]


@pytest.mark.parametrize("reg", REG_GRID)
def test_sorted_scan_respects_min_child_weight_and_threshold(reg):
    rng = np.random.default_rng(1)
    for _ in range(40):
        hist = random_node(rng, 12, with_missing=True)
        split = scan(hist, reg, onehot=1, threshold=3)
        if split["feature"] < 0:
            continue
        present = present_of(hist)
        left = chosen_left(hist, split, reg)
        n_left = len(set(left) & set(present))
        assert min(n_left, len(present) - n_left) <= 3
        # absent categories go with the side of more present categories
        absent_left = set(left) - set(present)
        absent = set(range(12)) - set(present)
        assert absent_left == (absent if n_left > len(present) - n_left
                               else set())
        missing_left = bool(split["default_left"])
        assert gain_of(hist, left, missing_left, reg) == pytest.approx(
            split["gain"], rel=1e-12, abs=1e-12)
        mask = np.zeros(13, bool)
        mask[left] = True
        mask[12] = missing_left
        assert hist[mask, 0].sum() == split["Gq_left"]
        assert hist[mask, 1].sum() == split["Hq_left"]


def naive_prefix_scan(hist, reg, threshold, scales):
    """The sorted scan from the maths: the present categories in a full
    sort by (own leaf weight, code), every prefix with at most
    ``threshold`` categories on one side, missing right then left; the
    first of equal gains. Returns (gain, position, missing_left, order)."""
    has_missing = bool(hist[-1].any())
    keys = {c: naive_weight(hist[c, 0] / scales[0],
                            hist[c, 1] / scales[1], reg)
            for c in present_of(hist)}
    order = sorted(keys, key=lambda c: (keys[c], c))
    m = len(order)
    best, best_i, best_missing_left = -np.inf, None, None
    for i in range(m if has_missing else m - 1):
        if i + 1 > threshold and m - i - 1 > threshold:
            continue
        for missing_left in ((False, True) if has_missing else (True,)):
            if missing_left and has_missing and i == m - 1:
                continue
            gain = gain_of(hist, order[:i + 1], missing_left, reg, scales)
            if gain is not None and gain > best:
                best, best_i, best_missing_left = gain, i, missing_left
    return best, best_i, best_missing_left, order


def assert_scan_is_naive(hist, reg, threshold, scales, left_threshold=None):
    """The kernel's best sorted split, its sums and its left set (read with
    a context of ``left_threshold``, default the scan's) against
    ``naive_prefix_scan``."""
    k = hist.shape[0] - 1
    best, best_i, best_missing_left, order = naive_prefix_scan(
        hist, reg, threshold, scales)
    split = scan(hist, reg, onehot=1, threshold=threshold, scales=scales)
    if best_i is None:
        assert split["feature"] == -1
        return
    assert split["gain"] == pytest.approx(best, rel=1e-12, abs=1e-12)
    assert split["split_bin"] == best_i
    assert bool(split["default_left"]) == best_missing_left
    mask = np.zeros(k + 1, bool)
    mask[order[:best_i + 1]] = True
    mask[k] = best_missing_left
    assert split["Gq_left"] == hist[mask, 0].sum()
    assert split["Hq_left"] == hist[mask, 1].sum()
    left, rest_left = categorical_left_set(
        hist, first_bin=0, n_categories=k, cat_kind=2,
        split_bin=int(split["split_bin"]),
        context=split_context(reg, scale_g=scales[0], scale_h=scales[1],
                              max_cat_threshold=left_threshold or threshold))
    assert set(np.flatnonzero(left)) & set(order) == set(order[:best_i + 1])
    # categories absent from the node go with the larger side
    absent = set(range(k)) - set(order)
    assert set(np.flatnonzero(left)) & absent == (absent if rest_left
                                                    else set())
    assert rest_left == (best_i + 1 > len(order) - best_i - 1)


@pytest.mark.parametrize("reg", REG_GRID)
@pytest.mark.parametrize("k", [40, 300])
def test_sorted_scan_against_naive_prefix_scan(reg, k):
    """Many categories (the sort's merges), many equal keys: the kernel's
    order is (the category's own leaf weight, code) and its best prefix is
    the naive scan's (first of equal gains; missing right before missing
    left)."""
    rng = np.random.default_rng(k)
    for _ in range(5):
        hist = np.zeros((k + 1, 2), dtype=np.int64)
        hist[:, 0] = rng.integers(-3, 4, size=k + 1)
        hist[:, 1] = rng.integers(1, 4, size=k + 1)
        hist[:k][rng.random(k) < 0.2] = 0
        assert_scan_is_naive(hist, reg, 25, (4.0, 8.0), left_threshold=64)


@pytest.mark.parametrize("reg", REG_GRID)
@pytest.mark.parametrize("threshold", [1, 2, 5, 16])
@pytest.mark.parametrize("k", [3, 12, 200, 2000])
def test_sorted_scan_ends_against_naive_prefix_scan(reg, threshold, k):
    """Many more present categories than 2 max_cat_threshold + 1: the
    kernel orders only both ends of the order (a bounded selection), which
    must give the full sort's candidates, sums and left sets. Nodes with
    few categories, one category, none (an empty node), only missing
    values, ties of keys (equal gradients), and either side smaller."""
    rng = np.random.default_rng(threshold * 7919 + k)
    scales = (4.0, 8.0)
    for trial in range(6):
        hist = np.zeros((k + 1, 2), dtype=np.int64)
        spread = 2 if trial % 2 else 40    # few distinct keys: many ties
        hist[:, 0] = rng.integers(-spread, spread + 1, size=k + 1)
        hist[:, 1] = rng.integers(1, 6, size=k + 1)
        hist[:k][rng.random(k) < rng.choice([0.0, 0.5, 0.95])] = 0
        if trial == 5:
            hist[rng.integers(k + 1)] = 0      # no missing, maybe
        if rng.random() < 0.5:
            hist[k] = 0                        # no missing value
        assert_scan_is_naive(hist, reg, threshold, scales)
        # the left set read under a larger limit, as with a full order
        assert_scan_is_naive(hist, reg, threshold, scales,
                             left_threshold=10 * threshold)
    for kept in ([], [0], [k - 1]):            # empty node, one category
        hist = np.zeros((k + 1, 2), dtype=np.int64)
        hist[kept] = (5, 3)
        hist[k] = (-4, 2)
        assert_scan_is_naive(hist, reg, threshold, scales)


def test_sorted_scan_does_not_depend_on_n_jobs():
    """Many nodes of many categories in one call: the same records on 1
    and 2 threads (each thread orders in its own scratch)."""
    rng = np.random.default_rng(5)
    k, n_nodes = 3000, 8
    hist = np.zeros((n_nodes, k + 1, 2), dtype=np.int64)
    hist[..., 0] = rng.integers(-30, 31, size=(n_nodes, k + 1))
    hist[..., 1] = rng.integers(1, 9, size=(n_nodes, k + 1))
    hist[:, :k][rng.random((n_nodes, k)) < 0.3] = 0
    records = [find_best_splits_hist(
        hist, hist.sum(axis=1), np.array([0, k + 1], dtype=np.int64),
        np.zeros((1, k + 1)), np.ones((n_nodes, 1), dtype=np.uint8),
        context=split_context(REG_GRID[0], n_threads, scale_g=4.0,
                              scale_h=8.0, max_cat_to_onehot=1,
                              max_cat_threshold=8),
        categorical=np.ones(1, np.uint8)) for n_threads in (1, 2)]
    assert records[0].tobytes() == records[1].tobytes()
    assert np.all(records[0]["feature"] == 0)


def naive_weight(G, H, reg):
    """The leaf weight from the maths: 0 below min_child_weight, else
    -T_alpha(G) / (H + lambda) clipped to max_delta_step."""
    reg_lambda, reg_alpha, mds, mcw = reg
    if H < mcw or H <= 0:
        return 0.0
    t = np.sign(G) * max(abs(G) - reg_alpha, 0.0)
    w = -t / (H + reg_lambda)
    if mds > 0 and abs(w) > mds:
        w = np.sign(w) * mds
    return float(w)


def test_left_set_rejects_bad_arguments():
    hist = np.ones((4, 2), dtype=np.int64)
    reg = REG_GRID[0]
    with pytest.raises(ValueError):
        categorical_left_set(hist, first_bin=0, n_categories=4, cat_kind=2,
                             split_bin=0, context=split_context(reg))
    with pytest.raises(ValueError):
        categorical_left_set(hist, first_bin=0, n_categories=3, cat_kind=1,
                             split_bin=3, context=split_context(reg))
    with pytest.raises(ValueError):
        categorical_left_set(hist, first_bin=0, n_categories=3, cat_kind=2,
                             split_bin=5, context=split_context(reg))
    with pytest.raises(ValueError):
        categorical_left_set(hist, first_bin=0, n_categories=3, cat_kind=0,
                             split_bin=0, context=split_context(reg))


def naive_bitset(left):
    """uint32 words with bit c % 32 of word c // 32 set for each c in the
    set, up to the last word holding one (one word for an empty set)."""
    members = [c for c, x in enumerate(left) if x]
    words = [0] * (max(members) // 32 + 1 if members else 1)
    for c in members:
        words[c // 32] |= 1 << (c % 32)
    return np.array(words, dtype=np.uint32)


def test_bitsets_of_a_tree_against_naive_words():
    """``category_bitsets`` (a tree's sets packed together) and
    ``category_bitset`` (one set) against setting the bits one by one:
    sets of every length around a word, empty ones, ones whose set words
    end early, full ones, int and bool inputs."""
    rng = np.random.default_rng(3)
    sets = [np.zeros(1, bool), np.ones(1, bool), np.zeros(64, bool),
            np.ones(32, bool), np.ones(33, bool), np.arange(70) == 3,
            np.arange(300) == 299, (np.arange(100) % 7 == 0).astype(int)]
    sets += [rng.random(k) < p for k in (5, 31, 32, 33, 95, 2000)
             for p in (0.0, 0.01, 0.5)]
    order = rng.permutation(len(sets))
    sets = [sets[i] for i in order]
    words, n_words = category_bitsets(sets)
    naive = [naive_bitset(s) for s in sets]
    np.testing.assert_array_equal(n_words, [w.shape[0] for w in naive])
    np.testing.assert_array_equal(words, np.concatenate(naive))
    assert words.dtype == np.uint32
    for s, w in zip(sets, naive):
        np.testing.assert_array_equal(category_bitset(s), w)


# --------------------------------------------------------------------------
# The predictor
# --------------------------------------------------------------------------


def test_predictor_membership_against_naive_rule():
    """Random categorical stumps; values inside, outside, non-integer,
    negative and NaN, against ``category_goes_left``."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        k = int(rng.integers(1, 200))
        left = rng.random(k) < 0.4
        left[rng.integers(k)] = True
        default_left = int(rng.integers(2))
        words = category_bitset(left)
        tree = Tree(left_child=np.array([1, -1, -1], np.int32),
                    right_child=np.array([2, -1, -1], np.int32),
                    feature=np.array([0, -1, -1], np.int32),
                    threshold=np.zeros(3), default_left=np.array(
                        [default_left, 0, 0], np.uint8),
                    value=np.array([0.0, -1.0, 1.0]), gain=np.zeros(3),
                    cover=np.ones(3), cat_node=np.array([0], np.int32),
                    cat_size=np.array([k], np.int32),
                    cat_ptr=np.array([0, words.shape[0]], np.int64),
                    cat_bits=words)
        assert list(tree.left_categories(0)) == list(np.flatnonzero(left))
        x = np.concatenate([np.arange(-3, k + 40), [np.nan, 0.5, k - 0.5,
                                                    1e30, -1e30, np.inf]])
        X = x.astype(np.float32)[:, np.newaxis]
        forest = PackedForest(tree.left_child, tree.right_child, tree.feature,
                              tree.threshold, tree.default_left, tree.value,
                              np.array([0, 3]), np.zeros(1, np.int32), 1, 1,
                              tree.cat_node, tree.cat_size, tree.cat_ptr,
                              tree.cat_bits)
        out = np.zeros((X.shape[0], 1))
        forest.predict_raw(X, out, 0, 1, 1)
        expected = [-1.0 if category_goes_left(v, k, words, default_left)
                    else 1.0 for v in X[:, 0]]
        np.testing.assert_array_equal(out[:, 0], expected)


@pytest.mark.parametrize("bad", [
    dict(cat_node=np.array([1], np.int32)),          # a leaf
    dict(cat_size=np.array([0], np.int32)),
    dict(cat_ptr=np.array([0, 2], np.int64)),        # beyond the words
    dict(cat_ptr=np.array([0, 0], np.int64)),        # no word
])
def test_predictor_rejects_inconsistent_categorical_arrays(bad):
    args = dict(cat_node=np.array([0], np.int32),
                cat_size=np.array([5], np.int32),
                cat_ptr=np.array([0, 1], np.int64),
                cat_bits=np.array([3], np.uint32))
    args.update(bad)
    with pytest.raises(ValueError):
        PackedForest(np.array([1, -1, -1], np.int32),
                     np.array([2, -1, -1], np.int32),
                     np.array([0, -1, -1], np.int32), np.zeros(3),
                     np.zeros(3, np.uint8), np.zeros(3), np.array([0, 3]),
                     np.zeros(1, np.int32), 1, 1, **args)


# --------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------


def make_data(n=3000, k=(5, 40), seed=0, missing=0.0):
    """Two numeric features and categorical ones with k categories whose
    effects drive a regression target; codes as float (NaN: missing)."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n, 2))
    codes = np.column_stack([rng.integers(0, c, size=n) for c in k]).astype(
        np.float64)
    effects = [rng.normal(size=c) for c in k]
    y = numeric[:, 0] + sum(e[codes[:, j].astype(int)]
                            for j, e in enumerate(effects))
    y += 0.1 * rng.normal(size=n)
    if missing:
        codes[rng.random(codes.shape) < missing] = np.nan
    return numeric, codes, y


def frame(numeric, codes, k, names=("c0", "c1")):
    data = {"x0": numeric[:, 0], "x1": numeric[:, 1]}
    for j, c in enumerate(k):
        data[names[j]] = pd.Categorical.from_codes(
            np.where(np.isnan(codes[:, j]), -1, codes[:, j]).astype(int),
            categories=[f"v{i}" for i in range(c)])
    return pd.DataFrame(data)


def one_hot(numeric, codes, k):
    blocks = [numeric]
    for j, c in enumerate(k):
        blocks.append((codes[:, j:j + 1] == np.arange(c)).astype(np.float64))
    return np.hstack(blocks)


@pytest.mark.parametrize("tree_method", ["hist", "approx"])
@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_trees_equal_the_one_hot_encodings(grow_policy, tree_method):
    """max_cat_to_onehot >= k: every split is "one category against the
    rest", exactly the one-hot encoding's splits (same gains, covers,
    values; ties go to the lower category as to the lower column)."""
    k = (4,)
    numeric, codes, y = make_data(k=k)
    params = dict(n_estimators=8, max_depth=4, max_cat_to_onehot=10,
                  grow_policy=grow_policy, max_leaves=12,
                  tree_method=tree_method)
    cat = BoostRegressor(categorical_features=[2], **params).fit(
        np.column_stack([numeric, codes]), y)
    hot = BoostRegressor(**params).fit(one_hot(numeric, codes, k), y)
    for t_cat, t_hot in zip(cat.booster_.trees, hot.booster_.trees):
        np.testing.assert_array_equal(np.minimum(t_hot.feature, 2),
                                      t_cat.feature)
        np.testing.assert_array_equal(t_cat.value, t_hot.value)
        np.testing.assert_array_equal(t_cat.gain, t_hot.gain)
        np.testing.assert_array_equal(t_cat.cover, t_hot.cover)
        for node in np.flatnonzero(t_hot.feature >= 2):
            c = t_hot.feature[node] - 2   # the one-hot column's category
            assert list(t_cat.left_categories(node)) == [
                d for d in range(k[0]) if d != c]
    X_test = np.column_stack(make_data(n=500, k=k, seed=1)[:2])
    np.testing.assert_array_equal(
        cat.predict(X_test),
        hot.predict(one_hot(X_test[:, :2], X_test[:, 2:], k)))


def test_dtype_and_named_columns_give_the_same_model():
    """A category column equals the same codes named by
    categorical_features (categories sorted alike), predictions included."""
    k = (5, 40)
    numeric, codes, y = make_data(k=k, missing=0.05)
    df = frame(numeric, codes, k)
    by_dtype = BoostRegressor(n_estimators=10).fit(df, y)
    by_name = BoostRegressor(n_estimators=10, categorical_features=[2, 3]).fit(
        np.column_stack([numeric, codes]), y)
    np.testing.assert_array_equal(by_dtype.predict(df), by_name.predict(
        np.column_stack([numeric, codes])))
    assert any(t.has_categorical_splits for t in by_dtype.booster_.trees)


def test_predictions_recode_by_value():
    """Categories in another order, or a superset of them, at predict:
    the same predictions (codes differ, values match)."""
    k = (5, 40)
    numeric, codes, y = make_data(k=k, missing=0.05)
    df = frame(numeric, codes, k)
    model = BoostRegressor(n_estimators=10).fit(df, y)
    expected = model.predict(df)
    rng = np.random.default_rng(3)
    shuffled = df.copy()
    for name in ("c0", "c1"):
        cats = list(df[name].cat.categories)
        shuffled[name] = df[name].cat.reorder_categories(
            list(rng.permutation(cats)))
    np.testing.assert_array_equal(model.predict(shuffled), expected)
    superset = df.copy()
    superset["c1"] = df["c1"].cat.add_categories(["new", "other"])
    superset["c1"] = superset["c1"].cat.reorder_categories(
        ["other"] + list(df["c1"].cat.categories) + ["new"])
    np.testing.assert_array_equal(model.predict(superset), expected)
    reordered_columns = shuffled[["c1", "x1", "c0", "x0"]]
    np.testing.assert_array_equal(model.predict(reordered_columns), expected)


def test_unseen_categories_follow_the_missing_direction():
    """Values unseen in training predict as missing values do, and a naive
    walk of the trees (missing: default direction) agrees."""
    k = (5, 40)
    numeric, codes, y = make_data(k=k, missing=0.1)
    df = frame(numeric, codes, k)
    model = BoostRegressor(n_estimators=10, max_depth=3).fit(df, y)
    test = df.iloc[:200].copy()
    unseen = test.copy()
    unseen["c1"] = pd.Categorical(["never"] * 200)
    missing = test.copy()
    missing["c1"] = pd.Categorical([None] * 200,
                                   categories=df["c1"].cat.categories)
    np.testing.assert_array_equal(model.predict(unseen),
                                  model.predict(missing))
    # numeric input named categorical: unseen values too
    X = np.column_stack([numeric, codes])
    named = BoostRegressor(n_estimators=10, max_depth=3,
                           categorical_features=[2, 3]).fit(X, y)
    X_unseen, X_nan = X[:200].copy(), X[:200].copy()
    X_unseen[:, 3] = 1000.5
    X_nan[:, 3] = np.nan
    np.testing.assert_array_equal(named.predict(X_unseen),
                                  named.predict(X_nan))
    # the codes of column 2: ranks among its training values
    present = np.unique(codes[:, 0][~np.isnan(codes[:, 0])])
    X_codes = X_nan.copy()
    X_codes[:, 2] = np.searchsorted(present, X_nan[:, 2])
    X_codes[np.isnan(X_nan[:, 2]), 2] = np.nan
    np.testing.assert_allclose(named.predict(X_nan), naive_predict(
        named, X_codes), rtol=1e-6)


def naive_predict(model, X_codes):
    """Sum of the trees walked in Python: categorical splits test
    membership of the code, NaN follows default_left."""
    booster = model.booster_
    X_codes = np.asarray(X_codes, dtype=np.float32)   # the model's input
    out = np.full(X_codes.shape[0], booster.base_margin[0])
    for tree in booster.trees:
        for r, x in enumerate(X_codes):
            node = 0
            while tree.left_child[node] != -1:
                v = x[tree.feature[node]]
                left_set = tree.left_categories(node)
                if np.isnan(v):
                    go_left = bool(tree.default_left[node])
                elif left_set is not None:
                    go_left = int(v) in set(left_set)
                else:
                    go_left = v < tree.threshold[node]
                node = (tree.left_child[node] if go_left
                        else tree.right_child[node])
            out[r] += tree.value[node]
    return out


def test_high_cardinality_against_naive_walk():
    """Thousands of categories (16-bit codes): the predictor and the
    training margins agree with a naive walk."""
    rng = np.random.default_rng(0)
    n, k = 20000, 3000
    codes = rng.integers(0, k, size=n).astype(np.float64)
    effect = rng.normal(size=k)
    y = effect[codes.astype(int)] + 0.1 * rng.normal(size=n)
    X = np.column_stack([rng.normal(size=n), codes])
    model = BoostRegressor(n_estimators=5, max_depth=4, max_cat_threshold=500,
                           categorical_features=[1]).fit(X, y)
    sizes = [len(t.left_categories(n)) for t in model.booster_.trees
             for n in t.cat_node]
    assert sizes and max(sizes) > 32   # several bitset words
    codes_X = X.copy()   # the codes: ranks among the training values
    codes_X[:, 1] = np.unique(codes, return_inverse=True)[1]
    np.testing.assert_allclose(model.predict(X[:300]),
                               naive_predict(model, codes_X[:300]), rtol=1e-6)
    # a strong categorical signal is learned: far better than the mean
    assert np.mean((model.predict(X) - y) ** 2) < 0.8 * np.var(y)


def test_results_do_not_depend_on_n_jobs():
    k = (5, 300)
    numeric, codes, y = make_data(n=5000, k=k, missing=0.05)
    df = frame(numeric, codes, k)
    models = [BoostRegressor(n_estimators=5, n_jobs=n_jobs,
                             max_cat_threshold=8).fit(df, y)
              for n_jobs in (1, 2)]
    for a, b in zip(*(m.booster_.trees for m in models)):
        for name in ("feature", "threshold", "value", "gain", "cat_node",
                     "cat_ptr", "cat_bits"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_save_load_round_trip(tmp_path):
    k = (5, 40)
    numeric, codes, y = make_data(k=k, missing=0.05)
    df = frame(numeric, codes, k)
    y_class = (y > np.median(y)).astype(int)
    model = BoostClassifier(n_estimators=10).fit(df, y_class)
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = BoostClassifier.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(df),
                                  model.predict_proba(df))
    shuffled = df.copy()
    shuffled["c0"] = df["c0"].cat.reorder_categories(
        list(reversed(df["c0"].cat.categories)))
    np.testing.assert_array_equal(loaded.predict_proba(shuffled),
                                  model.predict_proba(df))
    with pytest.raises(ValueError, match="'c1'"):
        loaded.predict(df.astype({"c1": object}))


def test_saved_categorical_splits_are_validated(tmp_path):
    import json

    k = (5,)
    numeric, codes, y = make_data(k=k)
    model = BoostRegressor(n_estimators=3, categorical_features=[2]).fit(
        np.column_stack([numeric, codes]), y)
    text = json.loads(_dumps(model))
    trees = text["model"]["booster"]["trees"]
    t = next(i for i, tree in enumerate(trees) if tree["cat_node"])
    bad_cases = [
        lambda m: m["booster"]["trees"][t].update(
            cat_size=[99] * len(trees[t]["cat_size"])),
        lambda m: m["booster"]["trees"][t].update(cat_node=[], cat_size=[],
                                                  cat_ptr=[0], cat_bits=[]),
        lambda m: m["categories"].update(features=[0]),
        lambda m: m["categories"].update(values=[["a", "a"]]),
    ]
    for corrupt in bad_cases:
        doc = json.loads(json.dumps(text))
        del doc["checksum"]
        corrupt(doc["model"])
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="not a valid skboost model"):
            BoostRegressor.load(path)


def _dumps(model):
    from skboost._estimators.model_section import dumps_estimator

    return dumps_estimator(model)


def test_clear_errors():
    k = (5, 40)
    numeric, codes, y = make_data(k=k)
    df = frame(numeric, codes, k)
    model = BoostRegressor(n_estimators=2).fit(df, y)
    with pytest.raises(ValueError, match="'c0'.*categorical"):
        model.predict(df.assign(c0=codes[:, 0]))
    with pytest.raises(ValueError, match="'x0'.*categorical"):
        model.predict(df.assign(x0=pd.Categorical(numeric[:, 0] > 0)))
    with pytest.raises(ValueError, match="DataFrame"):
        model.predict(np.column_stack([numeric, codes]))
    with pytest.raises(ValueError, match="categorical_features"):
        BoostRegressor(categorical_features=["nope"]).fit(df, y)
    with pytest.raises(ValueError, match="categorical_features"):
        BoostRegressor(categorical_features=[7]).fit(numeric, y)
    with pytest.raises(ValueError, match="boolean mask"):
        BoostRegressor(categorical_features=[True]).fit(numeric, y)
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="DataFrame.*not sparse"):
        model.predict(sp.csr_matrix(np.column_stack([numeric, codes])))
    too_many = np.arange(70000, dtype=np.float64)[:, np.newaxis]
    with pytest.raises(ValueError, match="at most 65535"):
        BoostRegressor(categorical_features=[0]).fit(too_many,
                                                     np.zeros(70000))


def test_warm_start_needs_the_same_categories():
    k = (5, 40)
    numeric, codes, y = make_data(k=k)
    df = frame(numeric, codes, k)
    model = BoostRegressor(n_estimators=2, warm_start=True).fit(df, y)
    model.set_params(n_estimators=4).fit(df, y)
    assert model.booster_.n_rounds == 4
    other = df.copy()
    other["c0"] = df["c0"].cat.add_categories(["extra"])
    with pytest.raises(ValueError, match="categor"):
        model.set_params(n_estimators=6).fit(other, y)


def test_numeric_input_never_becomes_categorical():
    numeric, codes, y = make_data(k=(5,))
    model = BoostRegressor(n_estimators=3).fit(
        np.column_stack([numeric, codes]), y)
    assert not any(t.has_categorical_splits for t in model.booster_.trees)


def test_stump_partition_matches_xgboost():
    """A stump on one categorical feature with many categories: the same
    left set as XGBoost's (enable_categorical, hist), up to the side."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    n, k = 4000, 12
    codes = rng.integers(0, k, size=n)
    y = rng.normal(size=k)[codes] + rng.normal(size=n)
    df = pd.DataFrame({"c": pd.Categorical(codes, categories=range(k))})
    params = dict(n_estimators=1, max_depth=1, learning_rate=1.0,
                  reg_lambda=1.0, max_cat_to_onehot=1, max_cat_threshold=k,
                  base_score=0.0)
    ours = BoostRegressor(**params).fit(df, y)
    theirs = xgb.XGBRegressor(tree_method="hist", enable_categorical=True,
                              **params).fit(df, y)
    ours_pred = ours.predict(df)
    theirs_pred = theirs.predict(df)
    np.testing.assert_allclose(ours_pred, theirs_pred, rtol=1e-4, atol=1e-4)


def test_approx_equals_hist_on_categorical_features():
    """Only categorical features: approx keeps one bin per category, as hist
    does, so both grow the same trees."""
    _, codes, y = make_data(k=(7, 300), missing=0.05)
    models = [BoostRegressor(n_estimators=5, tree_method=method,
                             categorical_features=[0, 1]).fit(codes, y)
              for method in ("hist", "approx")]
    for a, b in zip(*(m.booster_.trees for m in models)):
        for name in ("feature", "value", "gain", "cat_node", "cat_bits"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_random_edits_of_categorical_splits_raise_or_predict_the_file():
    """Fuzz the categorical entries of a saved model: each edited file
    either raises a ValueError or predicts exactly what a naive walk of its
    trees gives (never a crash or an out-of-bounds read)."""
    import json

    from skboost._estimators.model_section import loads_estimator

    k = (5, 40)
    numeric, codes, y = make_data(n=600, k=k, missing=0.1)
    X = np.column_stack([numeric, codes])
    model = BoostRegressor(n_estimators=3, max_depth=3,
                           categorical_features=[2, 3]).fit(X, y)
    base = json.loads(_dumps(model))
    del base["checksum"]
    rng = np.random.default_rng(0)
    values = [-1, 0, 1, 2, 3, 31, 32, 40, 2**31, 2**32 - 1, 2**32, 0.5, None]
    X_test = X[:60].copy()
    X_test[:5, 3] = [-1, 40, 1e9, 0.5, np.nan]   # unseen values too
    loaded = rejected = 0
    for _ in range(150):
        doc = json.loads(json.dumps(base))
        trees = doc["model"]["booster"]["trees"]
        tree = trees[int(rng.integers(len(trees)))]
        field = ["cat_node", "cat_size", "cat_ptr", "cat_bits"][
            int(rng.integers(4))]
        if tree[field] and rng.random() < 0.8:
            tree[field][int(rng.integers(len(tree[field])))] = values[
                int(rng.integers(len(values)))]
        else:
            tree[field].append(values[int(rng.integers(len(values)))])
        try:
            edited = loads_estimator(BoostRegressor(), json.dumps(doc))
        except ValueError:
            rejected += 1
            continue
        loaded += 1
        present = [np.unique(codes[:, j][~np.isnan(codes[:, j])])
                   for j in range(2)]
        X_codes = X_test.copy()
        for j in range(2):
            column = X_test[:, 2 + j]
            position = np.searchsorted(present[j], column)
            inside = position < present[j].shape[0]
            found = np.zeros(column.shape[0], bool)
            found[inside] = present[j][position[inside]] == column[inside]
            X_codes[:, 2 + j] = np.where(found, position, np.nan)
        np.testing.assert_allclose(edited.predict(X_test),
                                   naive_predict(edited, X_codes), rtol=1e-6)
    assert rejected > 0


@pytest.mark.parametrize("onehot", [1, 30])
def test_missing_without_training_missing_goes_with_the_rest(onehot):
    """A split whose node had no missing value sends missing values and
    unseen categories with "the rest": the side of more categories (the
    other categories in a one-vs-rest split)."""
    rng = np.random.default_rng(5)
    k = 20
    codes = rng.integers(0, k, size=2000).astype(np.float64)
    y = rng.normal(size=k)[codes.astype(int)] + 0.1 * rng.normal(size=2000)
    model = BoostRegressor(n_estimators=1, max_depth=1, learning_rate=1.0,
                           categorical_features=[0],
                           max_cat_to_onehot=onehot).fit(codes[:, None], y)
    tree = model.booster_.trees[0]
    n_left = len(tree.left_categories(0))
    rest = tree.left_child[0] if n_left > k - n_left else tree.right_child[0]
    expected = model.booster_.base_margin[0] + tree.value[rest]
    for value in (np.nan, 100.0, -1.0):
        assert model.predict(np.array([[value]]))[0] == pytest.approx(
            expected, rel=1e-12)


# --------------------------------------------------------------------------
# Every tree method: exact and local approx (dense), sparse input
# --------------------------------------------------------------------------

LEVEL_WISE = [("exact", "global"), ("approx", "local")]


def few_values_data(seed=0, n=2000, missing=0.05):
    """Numeric features with few distinct values (so hist's bins are every
    exact and local candidate), categorical columns of 5 and 30 codes,
    NaN in all, continuous target and weights (gains far apart)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 8, n), rng.integers(0, 6, n) * 0.5
                         - 1.0, rng.integers(0, 5, n),
                         rng.integers(0, 30, n)]).astype(np.float64)
    codes = X[:, 2:].astype(int)
    y = (np.sin(X[:, 0]) + 0.5 * X[:, 1] + rng.normal(size=5)[codes[:, 0]]
         + rng.normal(size=30)[codes[:, 1]] + 0.3 * rng.normal(size=n))
    X[rng.random(X.shape) < missing] = np.nan
    return X, y, rng.uniform(0.2, 3.0, n)


@pytest.mark.parametrize("method, proposal", LEVEL_WISE)
@pytest.mark.parametrize("setting", [
    dict(), dict(max_cat_to_onehot=40), dict(reg_alpha=0.5,
                                             min_child_weight=3.0),
    dict(max_cat_threshold=3, max_delta_step=0.4)])
def test_level_wise_methods_equal_hist_on_categorical_features(
        method, proposal, setting):
    """Oracle: tree_method="hist" with max_bin above every numeric
    feature's distinct values. Its bins then hold every exact (and local)
    numeric candidate, categories are discrete for all methods, so the
    partitions are the same: same tree shapes, every training row in the
    same leaf, predictions to rounding (exact sums floats, hist exact
    integers), the same categorical left sets where both chose the same
    feature. (They may choose different features only on true ties: two
    splits partitioning a small node's rows identically, maybe with the
    sides swapped.)"""
    X, y, weight = few_values_data()
    params = dict(n_estimators=10, max_depth=5, categorical_features=[2, 3],
                  n_jobs=2, **setting)
    hist = BoostRegressor(tree_method="hist", max_bin=16, **params).fit(
        X, y, sample_weight=weight)
    other = BoostRegressor(tree_method=method, approx_proposal=proposal,
                           **params).fit(X, y, sample_weight=weight)
    np.testing.assert_allclose(other.predict(X), hist.predict(X), rtol=0,
                               atol=1e-9)
    # the same grouping of the rows into leaves (siblings may be swapped
    # where a true tie was broken the other way)
    for a, b in zip(hist.apply(X).T, other.apply(X).T):
        pairs = np.unique(np.column_stack([a, b]), axis=0)
        assert pairs.shape[0] == np.unique(a).size == np.unique(b).size
    n_cat_splits = same_feature = 0
    for a, b in zip(hist.booster_.trees, other.booster_.trees):
        np.testing.assert_array_equal(a.left_child, b.left_child)
        np.testing.assert_array_equal(a.right_child, b.right_child)
        assert a.feature[0] == b.feature[0]
        for node in np.flatnonzero(a.feature == b.feature):
            left_a = a.left_categories(node)
            if left_a is not None:
                n_cat_splits += 1
                np.testing.assert_array_equal(left_a,
                                              b.left_categories(node))
                assert a.default_left[node] == b.default_left[node]
        same_feature += np.count_nonzero(a.feature == b.feature)
    assert n_cat_splits >= 10
    assert same_feature >= 0.95 * sum(t.n_nodes for t in hist.booster_.trees)


@pytest.mark.parametrize("method, proposal", LEVEL_WISE)
def test_level_wise_methods_equal_the_one_hot_encodings(method, proposal):
    """max_cat_to_onehot >= k: one category against the rest, the one-hot
    encoding's splits, for the exact and local methods too."""
    k = (4,)
    numeric, codes, y = make_data(k=k)
    params = dict(n_estimators=6, max_depth=4, max_cat_to_onehot=10,
                  tree_method=method, approx_proposal=proposal)
    cat = BoostRegressor(categorical_features=[2], **params).fit(
        np.column_stack([numeric, codes]), y)
    hot_X = one_hot(numeric, codes, k)
    hot = BoostRegressor(**params).fit(hot_X, y)
    np.testing.assert_allclose(
        cat.predict(np.column_stack([numeric, codes])), hot.predict(hot_X),
        rtol=0, atol=1e-9)
    for t_cat, t_hot in zip(cat.booster_.trees, hot.booster_.trees):
        np.testing.assert_array_equal(np.minimum(t_hot.feature, 2),
                                      t_cat.feature)
        for node in np.flatnonzero(t_hot.feature >= 2):
            c = t_hot.feature[node] - 2
            # the one-hot column's split "x < 0.5" sends c right
            assert list(t_cat.left_categories(node)) == [
                d for d in range(k[0]) if d != c]


def _stump_rows_gain(model, X):
    tree = model.booster_.trees[0]
    return tree.gain[0], model.apply(X)[:, 0] == tree.left_child[0]


@pytest.mark.parametrize("method, proposal", LEVEL_WISE + [("hist", "global")])
@pytest.mark.parametrize("sparse", [False, True])
def test_stump_is_the_brute_force_best_partition(method, proposal, sparse):
    """A stump on one categorical feature (k <= 6, lambda = 0,
    min_child_weight = 0): its gain is the best over every partition of the
    present categories and both missing directions, computed in float64
    from the rows (squared error, base_score 0: g = -y, h = weight), and
    the rows it sends left form a partition of that gain."""
    import scipy.sparse as sp

    rng = np.random.default_rng(4)
    reg = (0.0, 0.0, 0.0, 0.0)
    for k in (3, 5, 6):
        n = 400
        codes = rng.integers(1, k + 1, size=n).astype(np.float64)
        codes[rng.random(n) < 0.1] = np.nan
        y = rng.normal(size=k + 1)[np.nan_to_num(codes).astype(int)] + (
            0.5 * rng.normal(size=n))
        weight = rng.uniform(0.5, 2.0, n)
        X = codes[:, None]
        fit_X = sp.csr_matrix(np.nan_to_num(X)) if sparse else X
        model = BoostRegressor(
            n_estimators=1, max_depth=1, learning_rate=1.0, base_score=0.0,
            reg_lambda=0.0, min_child_weight=0.0, max_cat_to_onehot=1,
            max_cat_threshold=k, tree_method=method,
            approx_proposal=proposal, categorical_features=[0]).fit(
                fit_X, y, sample_weight=weight)
        g, h = -y * weight, weight
        present = [c for c in range(1, k + 1)]
        miss = np.isnan(codes)
        best = -np.inf
        for left in all_partitions(present):
            in_left = np.isin(codes, left)
            for missing_left in (False, True):
                mask = in_left | (miss & missing_left)
                if mask.all() or not mask.any():
                    continue
                gain = 0.5 * (score(g[mask].sum(), h[mask].sum(), reg)
                              + score(g[~mask].sum(), h[~mask].sum(), reg)
                              - score(g.sum(), h.sum(), reg))
                best = max(best, gain)
        gain, goes_left = _stump_rows_gain(model, fit_X)
        assert gain == pytest.approx(best, rel=1e-6)
        GL, HL = g[goes_left].sum(), h[goes_left].sum()
        again = 0.5 * (score(GL, HL, reg) + score(g.sum() - GL,
                                                  h.sum() - HL, reg)
                       - score(g.sum(), h.sum(), reg))
        assert again == pytest.approx(best, rel=1e-6)


def sparse_categorical_problem(seed=0, n=1500):
    """CSR matrix (zeros not stored) with three numeric columns of few
    values, a categorical column of small non-negative integers (0
    included) and one of negative and non-integer values; its dense forms
    with absent entries as NaN and as 0.0."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    numeric = np.round(rng.normal(size=(n, 3)), 1)
    numeric[rng.random(numeric.shape) < 0.6] = 0.0
    small = rng.integers(0, 6, n).astype(np.float64)
    odd = rng.integers(-3, 40, n) * 0.5
    odd[rng.random(n) < 0.3] = 0.0
    X = np.column_stack([numeric, small, odd])
    y = (numeric[:, 0] + rng.normal(size=6)[small.astype(int)]
         + rng.normal(size=200)[(2 * odd + 6).astype(int)]
         + 0.3 * rng.normal(size=n))
    with_nan = np.where(X == 0.0, np.nan, X)
    return sp.csr_matrix(X), with_nan, X, y, rng.uniform(0.2, 3.0, n)


def _assert_same_trees(a, b):
    assert len(a.booster_.trees) == len(b.booster_.trees)
    for ta, tb in zip(a.booster_.trees, b.booster_.trees):
        for name in ("left_child", "right_child", "feature", "threshold",
                     "default_left", "value", "cat_node", "cat_size",
                     "cat_ptr", "cat_bits"):
            np.testing.assert_array_equal(getattr(ta, name),
                                          getattr(tb, name), err_msg=name)


SPARSE_CASES = [("missing", "exact", "global"), ("missing", "hist", "global"),
                ("missing", "approx", "global"), ("missing", "approx", "local"),
                ("zero", "hist", "global"), ("zero", "approx", "global")]


@pytest.mark.parametrize("absent, method, proposal", SPARSE_CASES)
def test_sparse_categorical_model_equals_dense_model(absent, method,
                                                     proposal):
    """Oracle: the dense equivalent (absent entries NaN for "missing", 0.0
    for "zero"), categorical values of any sign, weights: the same trees,
    left sets included, and the same predictions from either form."""
    S, with_nan, with_zero, y, weight = sparse_categorical_problem()
    dense = with_nan if absent == "missing" else with_zero
    params = dict(n_estimators=8, max_depth=4, tree_method=method,
                  approx_proposal=proposal, categorical_features=[3, 4],
                  n_jobs=2)
    on_sparse = BoostRegressor(sparse_absent=absent, **params).fit(
        S, y, sample_weight=weight)
    on_dense = BoostRegressor(**params).fit(dense, y, sample_weight=weight)
    _assert_same_trees(on_sparse, on_dense)
    assert sum(t.cat_node.size for t in on_sparse.booster_.trees) >= 8
    np.testing.assert_array_equal(on_sparse.predict(S), on_dense.predict(dense))
    np.testing.assert_array_equal(on_sparse.predict(dense), on_sparse.predict(S))
    for f in (3, 4):
        np.testing.assert_array_equal(on_sparse.categories_[f],
                                      on_dense.categories_[f])


def test_sparse_zero_absent_exact_equals_dense_to_rounding():
    """exact with absent = 0.0: the numeric zero blocks' float sums are
    totals minus stored entries (see test_sparse), so the models agree to
    rounding; the categorical splits are exact integer sums either way."""
    S, _, with_zero, y, weight = sparse_categorical_problem(1)
    params = dict(n_estimators=8, max_depth=4, tree_method="exact",
                  categorical_features=[3, 4], n_jobs=2)
    on_sparse = BoostRegressor(sparse_absent="zero", **params).fit(
        S, y, sample_weight=weight)
    on_dense = BoostRegressor(**params).fit(with_zero, y,
                                            sample_weight=weight)
    for ta, tb in zip(on_sparse.booster_.trees, on_dense.booster_.trees):
        assert ta.feature[0] == tb.feature[0]
        np.testing.assert_array_equal(ta.left_categories(0),
                                      tb.left_categories(0))
    np.testing.assert_allclose(on_sparse.predict(S), on_dense.predict(with_zero),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("absent", ["missing", "zero"])
def test_sparse_unseen_categories_and_round_trip(absent, tmp_path):
    """Sparse predict: a stored value that is no training category predicts
    as a missing (NaN) entry; with absent = 0.0 and 0.0 not a training
    category, an absent entry does too. Save/load keeps the predictions."""
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    n = 1200
    numeric = np.round(rng.normal(size=n), 1)
    cats = rng.integers(1, 9, n).astype(np.float64)   # every row stored
    y = numeric + rng.normal(size=9)[cats.astype(int)] + 0.2 * rng.normal(
        size=n)
    S = sp.csr_matrix(np.column_stack([numeric, cats]))
    model = BoostRegressor(n_estimators=6, max_depth=3, sparse_absent=absent,
                           categorical_features=[1]).fit(S, y)
    test = np.column_stack([numeric[:40], cats[:40]])
    test[:10, 1] = [100.0, -2.0, 3.5, 9.0, 1e6, 100.0, -2.0, 3.5, 9.0, 1e6]
    # the dense equivalent, unseen values as NaN
    reference = test.copy()
    reference[:10, 1] = np.nan
    if absent == "missing":
        reference[test == 0.0] = np.nan
    np.testing.assert_array_equal(model.predict(sp.csr_matrix(test)),
                                  model.predict(reference))
    if absent == "zero":
        blank = test.copy()
        blank[:, 1] = 0.0   # not stored: the value 0.0, unseen in training
        reference[:, 1] = np.nan
        np.testing.assert_array_equal(model.predict(sp.csr_matrix(blank)),
                                      model.predict(reference))
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = BoostRegressor.load(path)
    np.testing.assert_array_equal(loaded.predict(sp.csr_matrix(test)),
                                  model.predict(sp.csr_matrix(test)))
    assert loaded.sparse_absent == absent


def test_sparse_categorical_errors():
    """The dense rules: at most 65535 categories, at least one; a model
    trained on category columns needs a DataFrame."""
    import scipy.sparse as sp

    many = sp.csr_matrix(np.arange(1, 70001, dtype=np.float64)[:, None])
    with pytest.raises(ValueError, match="at most 65535"):
        BoostRegressor(categorical_features=[0]).fit(many, np.zeros(70000))
    empty = sp.csr_matrix((5, 2))
    with pytest.raises(ValueError, match="no categories"):
        BoostRegressor(categorical_features=[1]).fit(empty, np.zeros(5))
    # absent entries are 0.0: a column with nothing stored has category 0.0
    model = BoostRegressor(n_estimators=1, sparse_absent="zero",
                           categorical_features=[1]).fit(empty, np.zeros(5))
    assert list(model.categories_[1]) == [0.0]


# --------------------------------------------------------------------------
# Kernels of the level-wise methods
# --------------------------------------------------------------------------


def naive_category_histograms(codes, row_slot, quantized, n_slots, k):
    """codes: (n_rows,) float, NaN missing."""
    hist = np.zeros((n_slots, k + 1, 2), dtype=np.int64)
    for r in range(codes.shape[0]):
        if row_slot[r] < 0:
            continue
        b = k if np.isnan(codes[r]) else int(codes[r])
        hist[row_slot[r], b] += quantized[r]
    return hist


@pytest.mark.parametrize("zero_absent", [False, True])
def test_category_histograms_against_naive_sums(zero_absent):
    from skboost.tree._categorical_scan import category_histograms
    from skboost.tree._presort import presort_dense, presort_sparse
    from skboost._input.sparse import canonical_csr, sparse_rows
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    n, ks = 500, (4, 70)
    X = np.column_stack([rng.normal(size=n)] + [
        rng.integers(0, k, n).astype(np.float64) for k in ks])
    X[rng.random(X.shape) < 0.1] = np.nan
    row_slot = rng.integers(-1, 3, n).astype(np.int32)
    quantized = rng.integers(-1000, 1000, size=(n, 2)).astype(np.int64)
    if zero_absent:
        csr = canonical_csr(sp.csr_matrix(np.nan_to_num(X, nan=-7.0)), -7.0,
                            "zero")
        columns = presort_sparse(sparse_rows(csr, 0.0))
    else:
        columns = presort_dense(X.astype(np.float32))
    features = np.array([1, 2], dtype=np.int32)
    bin_ptr = np.array([0, ks[0] + 1, ks[0] + ks[1] + 2], dtype=np.int64)
    for n_threads in (1, 2):
        hist, sums = category_histograms(columns, features, bin_ptr,
                                         row_slot, quantized, n_slots=3,
                                         n_threads=n_threads)
        for j, f in enumerate(features):
            expected = naive_category_histograms(X[:, f], row_slot,
                                                 quantized, 3, ks[j])
            np.testing.assert_array_equal(
                hist[:, bin_ptr[j]:bin_ptr[j + 1]], expected)
        for s in range(3):
            np.testing.assert_array_equal(
                sums[s], quantized[row_slot == s].sum(axis=0))
    with pytest.raises(ValueError, match="slot"):
        category_histograms(columns, features, bin_ptr, row_slot, quantized,
                            n_slots=2, n_threads=1)
    with pytest.raises(ValueError, match="features"):
        category_histograms(columns, np.array([1, 9], dtype=np.int32),
                            bin_ptr, row_slot, quantized, n_slots=3,
                            n_threads=1)
    with pytest.raises(ValueError, match="bin_ptr"):
        category_histograms(columns, features, bin_ptr[:2], row_slot,
                            quantized, n_slots=3, n_threads=1)


@pytest.mark.parametrize("form", ["dense", "sparse_missing", "sparse_zero"])
def test_level_partition_with_left_sets_against_naive_rule(form):
    """apply_level_splits with categorical left sets: a row goes by its
    code's entry, NaN and values that are not codes of the set follow the
    default direction (``_tree.category_goes_left``), numeric slots by the
    threshold; sparse rows read absent entries as NaN or as 0.0 (code 0)."""
    from skboost.tree._partition import apply_level_splits
    from skboost._input.sparse import canonical_csr, sparse_rows
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    n = 300
    X = np.column_stack([rng.normal(size=n),
                         rng.integers(0, 8, n).astype(np.float64)])
    X[:20, 1] = [-1, 8, 100, 2.5, np.nan] * 4
    X[rng.random(X.shape) < 0.05] = np.nan
    X = X.astype(np.float32)
    data = X
    if form == "sparse_missing":   # absent entries (the zeros) are NaN
        data = sparse_rows(sp.csr_matrix(np.nan_to_num(X, nan=0.0)), np.nan)
        X = np.where(X == 0, np.float32(np.nan), X)
    elif form == "sparse_zero":    # absent entries are 0.0, NaN stored
        data = sparse_rows(canonical_csr(sp.csr_matrix(
            np.nan_to_num(X, nan=-7.0)), -7.0, "zero"), 0.0)
    left_set = rng.random(8) < 0.5
    feature = np.array([0, 1, 1, -1], dtype=np.int32)
    threshold = np.array([0.1, 0.0, 0.0, 0.0])
    default_left = np.array([1, 0, 1, 0], dtype=np.uint8)
    left_sets = [None, left_set, ~left_set, None]
    row_slot = rng.integers(-1, 4, n).astype(np.int32)
    expected = row_slot.copy()
    words = [category_bitset(s) for s in left_sets[1:3]]
    for r in range(n):
        s = row_slot[r]
        if s < 0:
            continue
        if feature[s] < 0:
            expected[r] = -1
            continue
        x = X[r, feature[s]]
        if s == 0:
            go = default_left[s] if np.isnan(x) else x < threshold[s]
        else:
            go = category_goes_left(float(x), 8, words[s - 1],
                                    default_left[s])
        expected[r] = 2 * s if go else 2 * s + 1
    counts = apply_level_splits(data, row_slot, feature, threshold,
                                default_left, np.arange(0, 8, 2, dtype=np.int32),
                                np.arange(1, 8, 2, dtype=np.int32),
                                n_next_slots=8, n_threads=2,
                                left_sets=left_sets)
    np.testing.assert_array_equal(row_slot, expected)
    np.testing.assert_array_equal(counts, np.bincount(expected[expected >= 0],
                                                      minlength=8))


def test_exact_finder_rejects_values_that_are_not_codes():
    from skboost.tree.driver import TreeParams
    from skboost.tree.finders import ExactFinder
    from skboost.tree._presort import presort_dense

    X = np.array([[0.0], [1.0], [2.5]], dtype=np.float32)
    with pytest.raises(ValueError, match="category codes"):
        ExactFinder(X, presort_dense(X), TreeParams(), 1,
                    n_categories=np.array([3]))
    with pytest.raises(ValueError, match="category codes"):
        ExactFinder(X, presort_dense(X), TreeParams(), 1,
                    n_categories=np.array([2]))
