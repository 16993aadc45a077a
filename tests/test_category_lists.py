"""The categories a node's sorted scan visits (``NodeCategoryLists``).

A child's scan visits the non-empty categories its parent's scan found
instead of every category, when every row's fixed-point hessian is positive
(``positive_hessians``). Oracles: the scan of every category (the kernel
without lists, itself held to the naive prefix scan of test_categorical),
the non-empty categories read off the histograms with numpy, numpy's
rounding for the hessians, and, for whole fits, the level-wise exact method
(whose categorical scan visits every category) and the fit on one thread.
"""

import numpy as np
import pytest

from skboost import BoostRegressor
from skboost.tree._categorical_scan import (NodeCategoryLists,
                                            categorical_left_set,
                                            positive_hessians,
                                            subtract_listed_histograms)
from skboost.tree._hist_split import find_best_splits_hist
from skboost.tree._histogram import FixedPointGradients
from _oracles import split_context
from test_categorical import assert_scan_is_naive

REG = (1.0, 0.0, 0.0, 1.0)     # lambda, alpha, max_delta_step, min_child_weight


def node_histograms(codes, g, h, nodes, k):
    """Per node (a row subset), the (k + 1, 2) histogram of the codes
    (code k: missing) by numpy."""
    out = np.zeros((len(nodes), k + 1, 2), dtype=np.int64)
    for n, rows in enumerate(nodes):
        np.add.at(out[n, :, 0], codes[rows], g[rows])
        np.add.at(out[n, :, 1], codes[rows], h[rows])
    return out


def scan_level(hist, k, lists=None, n_threads=2, threshold=8):
    n = hist.shape[0]
    return find_best_splits_hist(
        hist, hist.sum(axis=1), np.array([0, k + 1], dtype=np.int64),
        np.zeros((1, k + 1)), np.ones((n, 1), dtype=np.uint8),
        context=split_context(REG, n_threads, scale_g=4.0, scale_h=8.0,
                              max_cat_to_onehot=1,
                              max_cat_threshold=threshold),
        categorical=np.ones(1, np.uint8), category_lists=lists)


def assert_same_splits(a, b):
    """The same best split of every node (the other fields of a node
    without one are not specified)."""
    np.testing.assert_array_equal(a["feature"], b["feature"])
    found = a["feature"] >= 0
    np.testing.assert_array_equal(a[found], b[found])


def grow_levels(rng, k=3000, n_rows=6000, depth=6):
    """Rows with Zipf-like codes, split at random level after level: each
    level's row subsets (the children of the previous level's)."""
    p = 1.0 / (np.arange(k + 1) + 5.0)
    codes = rng.choice(k + 1, size=n_rows, p=p / p.sum())
    g = rng.integers(-40, 41, size=n_rows)
    h = rng.integers(1, 9, size=n_rows)           # positive hessians
    levels = [[np.arange(n_rows)]]
    for _ in range(depth):
        children = []
        for rows in levels[-1]:
            left = rng.random(rows.shape[0]) < rng.uniform(0.2, 0.8)
            children += [rows[left], rows[~left]]
        levels.append(children)
    return codes, g, h, levels


@pytest.mark.parametrize("seed", [0, 1])
def test_listed_scans_equal_full_scans_and_find_the_present_categories(seed):
    """Level after level, each child visiting its parent's list: the same
    records as visiting every category, the naive prefix scan's split, the
    exact non-empty categories as the node's list, the same left sets, on 1
    and 2 threads; deep nodes visit a small part of the categories."""
    rng = np.random.default_rng(seed)
    k = 3000
    codes, g, h, levels = grow_levels(rng, k=k)
    bin_ptr = np.array([0, k + 1], dtype=np.int64)
    flags = np.ones(1, np.uint8)
    parents = [None]
    for depth, nodes in enumerate(levels):
        hist = node_histograms(codes, g, h, nodes, k)
        records = {}
        for n_threads in (1, 2):
            lists = NodeCategoryLists(parents, bin_ptr, flags)
            records[n_threads] = scan_level(hist, k, lists, n_threads)
            present = [lists.node_list(n, 0) for n in range(len(nodes))]
            for n in range(len(nodes)):
                # the node's list: its non-empty categories, in code order
                np.testing.assert_array_equal(
                    present[n], np.flatnonzero(hist[n, :k].any(axis=1)))
        assert_same_splits(records[1], records[2])
        assert_same_splits(records[2], scan_level(hist, k))
        context = split_context(REG, 2, scale_g=4.0, scale_h=8.0,
                                max_cat_to_onehot=1, max_cat_threshold=8)
        for n, split in enumerate(records[2]):
            if n < 4:
                assert_scan_is_naive(hist[n], REG, 8, (4.0, 8.0))
            if split["feature"] < 0:
                continue
            full = categorical_left_set(
                hist[n], first_bin=0, n_categories=k, cat_kind=2,
                split_bin=int(split["split_bin"]), context=context)
            listed = categorical_left_set(
                hist[n], first_bin=0, n_categories=k, cat_kind=2,
                split_bin=int(split["split_bin"]), context=context,
                codes=present[n])
            np.testing.assert_array_equal(full[0], listed[0])
            assert full[1] == listed[1]
        visited = lists.visited_counts()[:, 0]
        if depth == len(levels) - 1:
            # most categories are empty in a deep node: far fewer visited
            assert visited.max() < k / 4
        # the next level's nodes: children 2n and 2n + 1 of node n
        parents = [(lists, n // 2) for n in range(2 * len(nodes))]


def test_left_set_of_a_superset_list():
    """A list with empty categories, codes out of range and no order is a
    superset like any other: the same left set as every category."""
    rng = np.random.default_rng(3)
    k = 500
    hist = np.zeros((k + 1, 2), dtype=np.int64)
    present = rng.choice(k, size=200, replace=False)
    hist[present, 0] = rng.integers(-9, 10, size=200)
    hist[present, 1] = rng.integers(1, 5, size=200)
    hist[k] = (3, 2)
    split = scan_level(hist[np.newaxis], k)[0]
    context = split_context(REG, 1, scale_g=4.0, scale_h=8.0,
                            max_cat_to_onehot=1, max_cat_threshold=8)
    codes = np.concatenate([present, rng.choice(k, size=50), [-1, k, k + 7]])
    rng.shuffle(codes)
    args = dict(first_bin=0, n_categories=k, cat_kind=2,
                split_bin=int(split["split_bin"]), context=context)
    full = categorical_left_set(hist, **args)
    listed = categorical_left_set(hist, codes=codes.astype(np.int32), **args)
    np.testing.assert_array_equal(full[0], listed[0])
    assert full[1] == listed[1]


def test_lists_reject_foreign_parents():
    bin_ptr = np.array([0, 11], dtype=np.int64)
    flags = np.ones(1, np.uint8)
    lists = NodeCategoryLists([None], bin_ptr, flags)
    with pytest.raises(ValueError, match="parent"):
        NodeCategoryLists([("not lists", 0)], bin_ptr, flags)
    with pytest.raises(ValueError, match="parent"):
        NodeCategoryLists([(lists, 1)], bin_ptr, flags)
    with pytest.raises(ValueError, match="parent"):
        NodeCategoryLists([(lists, 0)], np.array([0, 21]), flags)
    hist = np.zeros((2, 11, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="category_lists"):
        scan_level(hist, 10, lists)          # one list, two nodes


def test_positive_hessians_against_numpy_rounding():
    """Oracle: numpy's round half to even of h w scale over active rows."""
    rng = np.random.default_rng(7)
    n = 5000
    gpair = rng.normal(size=(n, 2)).astype(np.float32)
    gpair[:, 1] = np.abs(gpair[:, 1]) + 1e-3
    weight = rng.uniform(0.5, 2.0, size=n)
    active = rng.random(n) < 0.9
    scale = 2.0 ** 10
    assert positive_hessians(gpair, weight, active, scale, 2)

    def oracle(gp, w, act):
        h = gp[:, 1].astype(np.float64) * (1.0 if w is None else w) * scale
        return bool(np.all(np.rint(h[act]) > 0))

    inactive = np.flatnonzero(~active)[0]
    for change in ("tiny", "zero weight", "inactive zero", "negative"):
        gp, w = gpair.copy(), weight.copy()
        row = inactive if change == "inactive zero" else 17
        if change == "tiny":
            gp[row, 1] = 0.4 / scale          # rounds to 0
        elif change == "zero weight":
            w[row] = 0.0
        elif change == "inactive zero":
            gp[row, 1] = 0.0
        else:
            gp[row, 1] = -1.0
        for threads in (1, 2):
            assert positive_hessians(gp, w, active, scale, threads) == (
                oracle(gp, w, active))
        assert positive_hessians(gp, None, active, scale, 2) == oracle(
            gp, None, active)


@pytest.mark.parametrize("weighted", [False, True])
def test_fixed_point_gradients_know_whether_hessians_are_positive(weighted):
    """``FixedPointGradients.hessians_positive`` (the least h w of its
    scales' pass, rounded) against numpy's rounding of every active row's
    h w scale_h, and against ``positive_hessians``' pass over the rows:
    tiny, half-unit (ties to even: 0), zero-weight, negative and inactive
    rows, the scales given or the rows' own, 1 and 2 threads."""
    rng = np.random.default_rng(3)
    n = 4000
    gpair = rng.normal(size=(n, 2)).astype(np.float32)
    gpair[:, 1] = np.abs(gpair[:, 1]) + 1e-3
    weight = rng.uniform(0.5, 2.0, size=n) if weighted else None
    active = rng.random(n) < 0.9
    scale = 2.0 ** 10
    inactive = np.flatnonzero(~active)[0]

    def oracle(gp, w, act, scale_h):
        h = gp[:, 1].astype(np.float64) * (1.0 if w is None else w) * scale_h
        return bool(np.all(np.rint(h[act]) > 0))

    cases = ("none", "tiny", "half unit", "zero weight", "inactive zero",
             "negative", "no active row")
    answers = []
    for change in cases:
        gp = gpair.copy()
        w = None if weight is None else weight.copy()
        act = active.copy()
        row = inactive if change == "inactive zero" else 17
        if change == "tiny":
            gp[row, 1] = 0.4 / scale
        elif change == "half unit":
            gp[row, 1] = 0.5 / scale
            if w is not None:
                w[row] = 1.0
        elif change == "zero weight":
            if w is None:
                continue
            w[row] = 0.0
        elif change == "inactive zero":
            gp[row, 1] = 0.0
        elif change == "negative":
            gp[row, 1] = -1.0
        elif change == "no active row":
            act[:] = False
        for threads in (1, 2):
            given = FixedPointGradients(gp, w, act.view(np.uint8), threads,
                                        scales=(1.0, scale))
            assert given.hessians_positive() == oracle(gp, w, act, scale), (
                change)
            own = FixedPointGradients(gp, w, act.view(np.uint8), threads)
            assert own.hessians_positive() == positive_hessians(
                gp, w, act, own.scales[1], threads) == oracle(
                gp, w, act, own.scales[1]), change
            if w is None:
                # maxima given (the round's gradient check; every row
                # active): no pass made yet, the least h w found when asked
                every = np.ones(n, dtype=bool)
                told = FixedPointGradients(
                    gp, None, every.view(np.uint8), threads,
                    maxima=np.abs(gp.astype(np.float64)).max(axis=0))
                answers.append(told.hessians_positive())
                assert answers[-1] == oracle(
                    gp, None, every, told.scales[1]), change
    if not weighted:
        assert True in answers and False in answers


def high_cardinality_data(seed=0, n=6000):
    """Categorical columns only (2,000 and 300 codes, Zipf-like, NaN in
    both): deep nodes hold a small part of the categories."""
    rng = np.random.default_rng(seed)
    columns, y = [], 0.3 * rng.normal(size=n)
    for k in (2000, 300):
        p = 1.0 / (np.arange(k) + 5.0)
        codes = rng.choice(k, size=n, p=p / p.sum())
        y = y + rng.normal(size=k)[codes]
        columns.append(codes.astype(np.float64))
    X = np.column_stack(columns)
    X[rng.random(X.shape) < 0.03] = np.nan
    return X, y


@pytest.mark.parametrize("weighted", [False, True])
def test_hist_fit_equals_exact_method_and_one_thread(weighted):
    """Oracle: the level-wise exact method, whose categorical scan visits
    every category of every node (categorical columns only, so both see
    the same candidates): the same trees, features and left sets, and the
    fit on one thread bit for bit. With weights of 0 some hessians are 0:
    the lists then do not nest and every node visits every category."""
    X, y = high_cardinality_data()
    weight = None
    if weighted:
        weight = np.random.default_rng(1).uniform(0.0, 2.0, size=len(y))
        weight[::50] = 0.0
    params = dict(n_estimators=6, max_depth=7, categorical_features=[0, 1],
                  max_cat_threshold=16)
    fits = [BoostRegressor(tree_method=method, n_jobs=n_jobs, **params).fit(
                X, y, sample_weight=weight)
            for method, n_jobs in (("hist", 2), ("hist", 1), ("exact", 2))]
    hist, one_thread, exact = (f.booster_.trees for f in fits)
    n_cat_splits = 0
    for a, b, c in zip(hist, one_thread, exact):
        for name in ("feature", "left_child", "value", "cat_node", "cat_ptr",
                     "cat_bits"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_array_equal(a.feature, c.feature)
        np.testing.assert_array_equal(a.left_child, c.left_child)
        for node in np.flatnonzero(a.feature >= 0):
            n_cat_splits += 1
            np.testing.assert_array_equal(a.left_categories(node),
                                          c.left_categories(node))
    assert n_cat_splits >= 100
    np.testing.assert_allclose(fits[0].predict(X), fits[2].predict(X),
                               rtol=0, atol=1e-9)


@pytest.mark.parametrize("heavy", [0.001, 0.01, 0.1])
def test_ends_of_many_light_categories_in_any_visiting_order(heavy):
    """Most categories lighter than min_child_weight (key 0, ordered by
    code among themselves), as in a deep node: the ends' selection must
    give the naive prefix scan's split and left set, and the same left set
    whether the listed codes rise, fall or come shuffled (the selection
    visits its entries in both directions)."""
    rng = np.random.default_rng(int(heavy * 1000))
    k, threshold, reg = 3000, 8, REG              # min_child_weight 1
    scales = (4.0, 8.0)
    hist = np.zeros((k + 1, 2), dtype=np.int64)
    hist[:k, 0] = rng.integers(-20, 21, size=k)
    hist[:k, 1] = rng.integers(1, 8, size=k)      # H < 1: key 0
    is_heavy = rng.random(k) < heavy
    hist[:k, 1][is_heavy] = rng.integers(8, 40, size=int(is_heavy.sum()))
    hist[:k][rng.random(k) < 0.3] = 0             # empty categories
    hist[k] = (-4, 2)
    assert_scan_is_naive(hist, reg, threshold, scales)
    split = scan_level(hist[np.newaxis], k, n_threads=1,
                       threshold=threshold)[0]
    context = split_context(reg, 1, scale_g=scales[0], scale_h=scales[1],
                            max_cat_to_onehot=1, max_cat_threshold=threshold)
    args = dict(first_bin=0, n_categories=k, cat_kind=2,
                split_bin=int(split["split_bin"]), context=context)
    full = categorical_left_set(hist, **args)
    present = np.flatnonzero(hist[:k].any(axis=1)).astype(np.int32)
    for codes in (present, present[::-1].copy(), rng.permutation(present)):
        listed = categorical_left_set(hist, codes=codes, **args)
        np.testing.assert_array_equal(full[0], listed[0])
        assert full[1] == listed[1]


def test_listed_subtraction_equals_numpy_subtraction():
    """Children of listed parents: the larger child's histogram by the
    listed subtraction (a categorical feature on its parent's non-empty
    categories and missing bin only) equals numpy's parent - smaller child
    on every bin, with a numeric feature, a feature the parent's scan did
    not list (every bin), a parent without lists, on 1 and 2 threads."""
    rng = np.random.default_rng(11)
    k, n_rows = 2000, 4000
    codes, g, h, levels = grow_levels(rng, k=k, n_rows=n_rows, depth=3)
    numeric = rng.integers(0, 16, size=n_rows)
    # layout: categorical (k + 1 bins), numeric (16), categorical again
    bin_ptr = np.array([0, k + 1, k + 17, 2 * k + 18], dtype=np.int64)
    flags = np.array([1, 0, 1], np.uint8)
    parents_rows, children = levels[2], levels[3]

    def histogram(rows):
        out = np.zeros((bin_ptr[-1], 2), dtype=np.int64)
        for first, column in ((0, codes), (k + 1, numeric),
                              (k + 17, codes)):
            np.add.at(out[:, 0], first + column[rows], g[rows])
            np.add.at(out[:, 1], first + column[rows], h[rows])
        return out

    parent_hist = np.stack([histogram(rows) for rows in parents_rows])
    lists = NodeCategoryLists([None] * len(parents_rows), bin_ptr, flags)
    scan = find_best_splits_hist(
        parent_hist, parent_hist[:, : k + 1].sum(axis=1), bin_ptr,
        np.zeros((1, bin_ptr[-1])), np.array([[1, 1, 0]] * len(parents_rows),
                                             dtype=np.uint8),
        context=split_context(REG, 1, scale_g=4.0, scale_h=8.0,
                              max_cat_to_onehot=1, max_cat_threshold=8),
        categorical=flags, category_lists=lists)
    assert np.all(scan["feature"] >= 0)
    # feature 2 not scanned (not allowed): no list, every bin subtracted
    assert lists.node_list(0, 2) is None
    assert lists.node_list(0, 0).shape[0] < k
    n = len(parents_rows)
    small = np.stack([histogram(children[2 * p]) for p in range(n)])
    expected = parent_hist - small
    for n_threads in (1, 2):
        pool = np.full((2 * n + 1, bin_ptr[-1], 2), 7, dtype=np.int64)
        pool[1:n + 1], pool[n + 1:] = parent_hist, small
        parent_lists = [(lists, p) for p in range(n - 1)] + [None]
        subtract_listed_histograms(
            pool, np.arange(1, n + 1), np.arange(n + 1, 2 * n + 1),
            parent_lists, bin_ptr, flags, n_threads)
        np.testing.assert_array_equal(pool[1:n + 1], expected)
        assert np.all(pool[0] == 7)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_subtraction_of_short_and_long_lists_equals_numpy(n_threads):
    """A parent's list holding few of a feature's categories is subtracted
    code by code, one holding many the whole feature (streaming): both
    give numpy's parent - smaller child on every bin. Two categorical
    features: 300 categories (long lists) and 30,000 (short ones); bins
    off the lists are 0 in parent and child, as the fit keeps them."""
    rng = np.random.default_rng(5)
    n_rows, wide = 3000, 30_000
    narrow_codes = rng.integers(0, 300, size=n_rows)
    wide_codes = rng.integers(0, wide, size=n_rows)
    g = rng.integers(-40, 41, size=n_rows)
    h = rng.integers(1, 9, size=n_rows)
    bin_ptr = np.array([0, 301, 301 + wide + 1], dtype=np.int64)
    flags = np.ones(2, np.uint8)
    parents_rows = np.array_split(rng.permutation(n_rows), 4)

    def histogram(rows):
        out = np.zeros((bin_ptr[-1], 2), dtype=np.int64)
        for first, column in ((0, narrow_codes), (301, wide_codes)):
            np.add.at(out[:, 0], first + column[rows], g[rows])
            np.add.at(out[:, 1], first + column[rows], h[rows])
        return out

    parent_hist = np.stack([histogram(rows) for rows in parents_rows])
    n = len(parents_rows)
    lists = NodeCategoryLists([None] * n, bin_ptr, flags)
    find_best_splits_hist(
        parent_hist, parent_hist[:, :301].sum(axis=1), bin_ptr,
        np.zeros((1, bin_ptr[-1])), np.ones((n, 2), dtype=np.uint8),
        context=split_context(REG, 1, scale_g=4.0, scale_h=8.0,
                              max_cat_to_onehot=1, max_cat_threshold=8),
        categorical=flags, category_lists=lists)
    counts = lists.present_counts()
    # the narrow feature's lists hold most of its categories, the wide
    # one's a few percent of them: both ways of subtracting are taken
    assert np.all(counts[:, 0] > 150) and np.all(counts[:, 1] < 1000)
    small = np.stack([histogram(rows[: rows.shape[0] // 3])
                      for rows in parents_rows])
    pool = np.full((2 * n + 1, bin_ptr[-1], 2), 7, dtype=np.int64)
    pool[1:n + 1], pool[n + 1:] = parent_hist, small
    subtract_listed_histograms(
        pool, np.arange(1, n + 1), np.arange(n + 1, 2 * n + 1),
        [(lists, p) for p in range(n)], bin_ptr, flags, n_threads)
    np.testing.assert_array_equal(pool[1:n + 1], parent_hist - small)
    assert np.all(pool[0] == 7)


def test_listed_subtraction_rejects_bad_rows_and_layouts():
    hist = np.zeros((4, 5, 2), dtype=np.int64)
    bin_ptr = np.array([0, 5], dtype=np.int64)
    flags = np.ones(1, np.uint8)
    lists = NodeCategoryLists([None], bin_ptr, flags)
    for parents, children, bins, parent_lists in (
            ([0], [0], bin_ptr, [None]),                 # not distinct
            ([0], [4], bin_ptr, [None]),                 # outside hist
            ([0], [1], np.array([0, 6]), [None]),        # not hist's bins
            ([0], [1], bin_ptr, []),                     # one per node
            ([0], [1], bin_ptr, [(lists, 1)]),           # not a node
            ([0], [1], np.array([0, 2, 5]), [(lists, 0)])):  # layout
        with pytest.raises(ValueError):
            subtract_listed_histograms(hist, parents, children, parent_lists,
                                       bins, np.ones(len(bins) - 1, np.uint8),
                                       1)


def naive_left_set(order, split_bin, k):
    """The left set of the cut after ``split_bin`` of the full order: the
    smaller side's categories as the set, every other category (absent
    ones too) with the larger side; and whether "the rest" goes left."""
    m = len(order)
    left = np.zeros(k, dtype=bool)
    if split_bin + 1 <= m - split_bin - 1:
        left[order[:split_bin + 1]] = True
        return left, False
    left[:] = True
    left[order[split_bin + 1:]] = False
    return left, True


@pytest.mark.parametrize("threshold", [1, 8, 40, 400])
def test_left_set_from_the_kept_order_against_the_naive_order(threshold):
    """Level after level (children visiting their parents' lists, on 1
    and 2 threads), each node's left set read off the order its scan kept
    equals the cut of the naive full sort (``naive_prefix_scan``'s order),
    for the chosen cut and every cut the scan could offer; a cut beyond
    ``max_cat_threshold`` on both sides, a one-hot kind, or lists kept
    without orders give None (the caller orders anew)."""
    from test_categorical import naive_prefix_scan
    rng = np.random.default_rng(threshold)
    k = 600
    codes, g, h, levels = grow_levels(rng, k=k, n_rows=3000, depth=4)
    bin_ptr = np.array([0, k + 1], dtype=np.int64)
    flags = np.ones(1, np.uint8)
    parents = [None]
    for nodes in levels:
        hist = node_histograms(codes, g, h, nodes, k)
        for n_threads in (1, 2):
            lists = NodeCategoryLists(parents, bin_ptr, flags,
                                      max_cat_threshold=threshold)
            records = scan_level(hist, k, lists, n_threads, threshold)
        for n, split in enumerate(records):
            if split["feature"] < 0:
                continue
            order = naive_prefix_scan(hist[n], REG, threshold, (4.0, 8.0))[3]
            m = len(order)
            offered = [i for i in range(m)
                       if min(i + 1, m - i - 1) <= threshold]
            assert int(split["split_bin"]) in offered
            for i in offered:
                kept = lists.left_set(n, 0, cat_kind=2, split_bin=i,
                                      n_categories=k)
                expected = naive_left_set(order, i, k)
                np.testing.assert_array_equal(kept[0], expected[0])
                assert kept[1] == expected[1]
            beyond = [i for i in range(m) if i not in offered]
            for i in beyond[:3]:
                assert lists.left_set(n, 0, cat_kind=2, split_bin=i,
                                      n_categories=k) is None
            assert lists.left_set(n, 0, cat_kind=1, split_bin=0,
                                  n_categories=k) is None
        parents = [(lists, n // 2) for n in range(2 * len(nodes))]
    plain = NodeCategoryLists([None], bin_ptr, flags)
    scan_level(hist[:1], k, plain, 1, threshold)
    assert plain.left_set(0, 0, cat_kind=2, split_bin=0,
                          n_categories=k) is None


def test_left_set_from_the_kept_order_rejects_bad_arguments():
    k = 50
    hist = np.zeros((1, k + 1, 2), dtype=np.int64)
    hist[0, :k, 0] = np.arange(k) - 25
    hist[0, :k, 1] = 3
    lists = NodeCategoryLists([None], np.array([0, k + 1]), np.ones(1, np.uint8),
                              max_cat_threshold=4)
    split = scan_level(hist, k, lists, 1, 4)[0]
    args = dict(cat_kind=2, split_bin=int(split["split_bin"]))
    with pytest.raises(IndexError):
        lists.left_set(1, 0, n_categories=k, **args)
    with pytest.raises(IndexError):
        lists.left_set(0, 1, n_categories=k, **args)
    with pytest.raises(ValueError, match="split_bin"):
        lists.left_set(0, 0, cat_kind=2, split_bin=k, n_categories=k)
    with pytest.raises(ValueError, match="n_categories"):
        lists.left_set(0, 0, n_categories=10, **args)


def per_split_left_sets(pool, rows, records, bin_ptr, context, lists):
    """The left sets one split at a time, as ``HistFinder`` read them
    before ``batch_left_sets``: the kept order (``left_set``), else
    ``categorical_left_set``; "the rest"'s side where the node's missing
    bin is empty (numpy), else -1."""
    n = records.shape[0]
    left_sets, missing_left = [None] * n, np.full(n, -1, dtype=np.int8)
    for k in np.flatnonzero((records["feature"] >= 0)
                            & (records["cat_kind"] > 0)):
        f = int(records["feature"][k])
        first, stop = bin_ptr[f], bin_ptr[f + 1]
        kind, cut = int(records["cat_kind"][k]), int(records["split_bin"][k])
        kept = None if lists is None else lists.left_set(
            k, f, cat_kind=kind, split_bin=cut, n_categories=stop - first - 1)
        if kept is None:
            kept = categorical_left_set(
                pool[rows[k]], first_bin=first, n_categories=stop - first - 1,
                cat_kind=kind, split_bin=cut, context=context,
                codes=None if lists is None else lists.node_list(k, f))
        left_sets[k] = kept[0]
        if not pool[rows[k], stop - 1].any():
            missing_left[k] = kept[1]
    return left_sets, missing_left


def two_feature_level(rng, codes, g, h, nodes, k):
    """The nodes' histograms of a numeric feature (4 value bins and a
    missing one) then the categorical codes, each node in a random row of
    a larger pool; half the nodes have their categorical missing bin
    emptied (its rows dropped from both features)."""
    numeric = rng.integers(0, 5, size=codes.shape[0])
    kept_nodes = [rows[codes[rows] != k] if n % 2 else rows
                  for n, rows in enumerate(nodes)]
    hist = np.concatenate([node_histograms(numeric, g, h, kept_nodes, 4),
                           node_histograms(codes, g, h, kept_nodes, k)],
                          axis=1)
    pool = np.zeros((2 * len(nodes) + 1,) + hist.shape[1:], dtype=np.int64)
    rows = rng.permutation(pool.shape[0])[:len(nodes)]
    pool[rows] = hist
    return pool, rows, hist[:, :5].sum(axis=1)


@pytest.mark.parametrize("threshold,onehot,keep_orders", [
    (1, 1, True), (8, 1, True), (400, 1, True), (8, 1, False),
    (8, 5000, True)])
def test_batch_left_sets_equal_the_per_split_calls(threshold, onehot,
                                                   keep_orders):
    """Level after level of a numeric and a categorical feature (pool
    rows shuffled, some nodes without missing values): ``batch_left_sets``
    gives each node the left set and missing direction of the per-split
    calls it replaces (themselves held to the naive order above), with the
    batch's lists, with lists kept without orders, with one-hot splits,
    and without lists."""
    from skboost.tree._categorical_scan import batch_left_sets
    rng = np.random.default_rng(threshold + onehot)
    k = 600
    codes, g, h, levels = grow_levels(rng, k=k, n_rows=3000, depth=4)
    bin_ptr = np.array([0, 5, k + 6], dtype=np.int64)
    flags = np.array([0, 1], np.uint8)
    context = split_context(REG, 2, scale_g=4.0, scale_h=8.0,
                            max_cat_to_onehot=onehot,
                            max_cat_threshold=threshold)
    parents, n_categorical = [None], 0
    for nodes in levels:
        pool, rows, sums = two_feature_level(rng, codes, g, h, nodes, k)
        lists = NodeCategoryLists(
            parents, bin_ptr, flags,
            max_cat_threshold=threshold if keep_orders else None)
        records = find_best_splits_hist(
            pool, sums, bin_ptr, np.zeros((1, k + 6)),
            np.ones((len(nodes), 2), dtype=np.uint8), context=context,
            hist_rows=rows, categorical=flags, category_lists=lists)
        for given in (lists, None):
            got = batch_left_sets(pool, rows, records["feature"],
                                  records["cat_kind"], records["split_bin"],
                                  bin_ptr, context, given)
            want = per_split_left_sets(pool, rows, records, bin_ptr,
                                       context, given)
            np.testing.assert_array_equal(got[1], want[1])
            for a, b in zip(got[0], want[0]):
                assert (a is None) == (b is None)
                if a is not None:
                    assert a.dtype == bool
                    np.testing.assert_array_equal(a, b)
            assert_sets_independent(got[0])
        n_categorical += sum(s is not None for s in got[0])
        parents = [(lists, n // 2) for n in range(2 * len(nodes))]
    assert n_categorical >= 5   # the case exercises categorical splits


def assert_sets_independent(left_sets):
    """A batch's left sets (slices of one buffer) share no flag: each
    set overwritten in turn leaves every other as it was."""
    sets = [s for s in left_sets if s is not None]
    before = [s.copy() for s in sets]
    for j, changed in enumerate(sets):
        changed[:] = ~before[j]
        for i, other in enumerate(sets):
            np.testing.assert_array_equal(
                other, ~before[i] if i <= j else before[i])
    for s, b in zip(sets, before):
        s[:] = b


def test_batch_left_sets_reject_bad_arguments():
    from skboost.tree._categorical_scan import batch_left_sets
    k = 6
    pool = np.zeros((3, k + 1, 2), dtype=np.int64)
    bin_ptr = np.array([0, k + 1], dtype=np.int64)
    context = split_context(REG, 1)
    lists = NodeCategoryLists([None, None], bin_ptr, np.ones(1, np.uint8))
    good = dict(hist=pool, hist_rows=[0, 1], feature=[0, 0],
                cat_kind=[2, 1], split_bin=[0, 0], bin_ptr=bin_ptr)
    for change in (dict(hist=pool.astype(np.int32)),        # dtype
                   dict(hist=pool[:, :, :1]),               # not (.., 2)
                   dict(hist_rows=[0, 3]),                  # outside
                   dict(hist_rows=[-1, 0]),
                   dict(feature=[0]),                       # one per node
                   dict(feature=[0, 1]),                    # no feature 1
                   dict(bin_ptr=np.array([0, k])),          # not hist's
                   dict(bin_ptr=np.array([0, 1, k + 1]),    # no category
                        feature=[0, 0])):
        with pytest.raises(ValueError):
            batch_left_sets(context=context, **dict(good, **change))
    with pytest.raises(ValueError):   # lists of another batch
        batch_left_sets(context=context, lists=NodeCategoryLists(
            [None], bin_ptr, np.ones(1, np.uint8)), **good)
    with pytest.raises(ValueError):   # split_bin beyond the categories
        batch_left_sets(context=context, **dict(good, cat_kind=[1, 1],
                                                split_bin=[k, 0]))
    # no categorical split: no set, no direction
    sets, missing = batch_left_sets(context=context, lists=lists,
                                    **dict(good, cat_kind=[0, 0]))
    assert sets == [None, None] and missing.tolist() == [-1, -1]
