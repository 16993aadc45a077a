"""The predictor against a naive tree walk, and its validation of forests."""

import sys

import numpy as np
import pytest

from skboost.tree._predictor import predict_leaves, predict_raw
from skboost.tree._tree import Tree
from _isolation import call_outcomes


# --------------------------------------------------------------------------
# Random forests and the naive walk
# --------------------------------------------------------------------------

def random_tree(rng, X, max_depth, breadth_first):
    """A Tree with children numbered after their parents, either breadth
    first or depth first (pre-order); thresholds often equal to values of X
    so that ``value == threshold`` (goes right) is exercised."""
    n_features = X.shape[1]
    # Build the shape as nested lists first: node = [depth, left, right].
    root = {"depth": 0, "children": None}
    stack = [root]
    while stack:
        node = stack.pop()
        if node["depth"] < max_depth and rng.random() < 0.75:
            node["children"] = [{"depth": node["depth"] + 1, "children": None}
                                for _ in range(2)]
            stack.extend(node["children"])
    order = []
    if breadth_first:
        queue = [root]
        while queue:
            node = queue.pop(0)
            order.append(node)
            queue.extend(node["children"] or [])
    else:
        def visit(node):
            order.append(node)
            for child in node["children"] or []:
                visit(child)
        visit(root)
    index = {id(node): i for i, node in enumerate(order)}
    n = len(order)
    tree = Tree(left_child=np.full(n, -1, np.int32),
                right_child=np.full(n, -1, np.int32),
                feature=np.full(n, -1, np.int32), threshold=np.zeros(n),
                default_left=np.zeros(n, np.uint8),
                value=rng.normal(size=n), gain=np.zeros(n), cover=np.ones(n))
    for i, node in enumerate(order):
        if node["children"]:
            tree.left_child[i] = index[id(node["children"][0])]
            tree.right_child[i] = index[id(node["children"][1])]
            f = int(rng.integers(n_features))
            tree.feature[i] = f
            column = X[:, f][~np.isnan(X[:, f])]
            if column.size and rng.random() < 0.5:
                tree.threshold[i] = float(rng.choice(column))
            else:
                tree.threshold[i] = rng.normal()
            tree.default_left[i] = rng.integers(2)
    return tree


def naive_leaf(tree, x):
    node = 0
    while tree.left_child[node] != -1:
        v = float(x[tree.feature[node]])
        if np.isnan(v):
            go_left = bool(tree.default_left[node])
        else:
            go_left = v < tree.threshold[node]
        node = tree.left_child[node] if go_left else tree.right_child[node]
    return node


def concatenate(trees):
    fields = ["left_child", "right_child", "feature", "threshold",
              "default_left", "value"]
    flat = {f: np.concatenate([getattr(t, f) for t in trees]) for f in fields}
    flat["tree_start"] = np.concatenate(
        [[0], np.cumsum([t.n_nodes for t in trees])]).astype(np.int64)
    return flat


def random_forest(seed, n_rows=60):
    rng = np.random.default_rng(seed)
    n_features = int(rng.integers(1, 5))
    X = np.round(rng.normal(size=(n_rows, n_features)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    trees = [random_tree(rng, X, int(rng.integers(0, 6)), bool(k % 2))
             for k in range(int(rng.integers(1, 7)))]
    n_groups = int(rng.integers(1, 4))
    tree_group = rng.integers(0, n_groups, len(trees)).astype(np.int32)
    return X, trees, tree_group, n_groups, rng


def raw_call(X, flat, tree_group, out, n_threads):
    predict_raw(X, flat["left_child"], flat["right_child"], flat["feature"],
                flat["threshold"], flat["default_left"], flat["value"],
                flat["tree_start"], tree_group, out, n_threads)


@pytest.mark.parametrize("seed", range(30))
def test_matches_naive_walk(seed):
    X, trees, tree_group, n_groups, rng = random_forest(seed)
    flat = concatenate(trees)
    base = rng.normal(size=(X.shape[0], n_groups))
    expected = base.copy()
    expected_leaves = np.empty((X.shape[0], len(trees)), dtype=np.int32)
    for r in range(X.shape[0]):
        for t, tree in enumerate(trees):
            leaf = naive_leaf(tree, X[r])
            expected_leaves[r, t] = leaf
            expected[r, tree_group[t]] += tree.value[leaf]
    out = base.copy()
    raw_call(X, flat, tree_group, out, 1 + seed % 2)
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)
    leaves = predict_leaves(X, flat["left_child"], flat["right_child"],
                            flat["feature"], flat["threshold"],
                            flat["default_left"], flat["tree_start"],
                            1 + seed % 2)
    assert leaves.shape == (X.shape[0], len(trees))
    np.testing.assert_array_equal(leaves, expected_leaves)


def stump(feature=0, threshold=1.0, default_left=1):
    return Tree(left_child=np.array([1, -1, -1], np.int32),
                right_child=np.array([2, -1, -1], np.int32),
                feature=np.array([feature, -1, -1], np.int32),
                threshold=np.array([threshold, 0.0, 0.0]),
                default_left=np.array([default_left, 0, 0], np.uint8),
                value=np.array([0.0, -1.0, 1.0]), gain=np.zeros(3),
                cover=np.ones(3))


@pytest.mark.parametrize("default_left", [0, 1])
def test_nan_follows_default_left(default_left):
    X = np.array([[0.0], [np.nan], [1.0], [2.0]], dtype=np.float32)
    flat = concatenate([stump(default_left=default_left)])
    out = np.zeros((4, 1))
    raw_call(X, flat, np.zeros(1, np.int32), out, 1)
    nan_value = -1.0 if default_left else 1.0
    # 0 < 1 left; NaN by default; 1 < 1 is false: right; 2 right.
    assert out[:, 0].tolist() == [-1.0, nan_value, 1.0, 1.0]


def test_groups_accumulate_in_their_columns():
    X = np.array([[0.0], [5.0]], dtype=np.float32)
    flat = concatenate([stump(), stump(threshold=3.0), stump()])
    out = np.full((2, 3), 10.0)
    raw_call(X, flat, np.array([2, 0, 2], np.int32), out, 1)
    # Row 0 is left everywhere (-1), row 1 right everywhere (+1); column 2
    # gets two trees, column 0 one, column 1 none.
    assert out.tolist() == [[9.0, 10.0, 8.0], [11.0, 10.0, 12.0]]


def test_threads_give_identical_results():
    X, trees, tree_group, n_groups, rng = random_forest(5, n_rows=4000)
    trees = trees + [random_tree(rng, X, 8, True) for _ in range(10)]
    tree_group = rng.integers(0, n_groups, len(trees)).astype(np.int32)
    flat = concatenate(trees)
    outs = []
    for n_threads in (1, 2):
        out = np.zeros((X.shape[0], n_groups))
        raw_call(X, flat, tree_group, out, n_threads)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    leaves = [predict_leaves(X, flat["left_child"], flat["right_child"],
                             flat["feature"], flat["threshold"],
                             flat["default_left"], flat["tree_start"],
                             n_threads) for n_threads in (1, 2)]
    np.testing.assert_array_equal(leaves[0], leaves[1])


# --------------------------------------------------------------------------
# _check_forest: invalid forests raise ValueError, never crash. Each call
# runs in a child process so that a crash fails its own case only.
# --------------------------------------------------------------------------

outcomes_in_child_processes = call_outcomes


def valid_forest():
    """Two trees over 2 features: a depth-2 tree (5 nodes) and a stump."""
    return dict(
        X=np.array([[0.0, 1.0], [2.0, np.nan], [1.0, -1.0]], np.float32),
        left_child=np.array([1, 3, -1, -1, -1, 1, -1, -1], np.int32),
        right_child=np.array([2, 4, -1, -1, -1, 2, -1, -1], np.int32),
        feature=np.array([0, 1, -1, -1, -1, 1, -1, -1], np.int32),
        threshold=np.array([1.5, 0.0, 0, 0, 0, 0.5, 0, 0]),
        default_left=np.array([1, 0, 0, 0, 0, 1, 0, 0], np.uint8),
        value=np.arange(8, dtype=np.float64),
        tree_start=np.array([0, 5, 8], np.int64),
        tree_group=np.array([0, 1], np.int32),
        out=np.zeros((3, 2)), n_threads=1)


def _with(**changes):
    args = valid_forest()
    for name, change in changes.items():
        if callable(change):
            change(args[name])
        else:
            args[name] = change
    return args


def _set(index, value):
    def change(array):
        array[index] = value
    return change


BAD_FORESTS = {
    # child index out of its tree (tree-local indices)
    "left child beyond the tree": _with(left_child=_set(1, 5)),
    "right child beyond the tree": _with(right_child=_set(5, 3)),
    "child index into the next tree": _with(right_child=_set(0, 6)),
    "negative child": _with(right_child=_set(1, -3)),
    # child index <= parent: cycles
    "node is its own child": _with(left_child=_set(0, 0)),
    "child before its parent": _with(left_child=_set(1, 1),
                                     right_child=_set(1, 0)),
    "cycle in the second tree": _with(left_child=_set(5, 0)),
    # features
    "feature beyond n_features": _with(feature=_set(1, 2)),
    "negative feature on a split": _with(feature=_set(5, -1)),
    # lengths
    "right_child shorter": _with(right_child=np.array([2, 4, -1, -1, -1, 2,
                                                       -1], np.int32)),
    "feature shorter": _with(feature=np.zeros(7, np.int32)),
    "threshold longer": _with(threshold=np.zeros(9)),
    "default_left shorter": _with(default_left=np.zeros(7, np.uint8)),
    "value shorter": _with(value=np.zeros(7)),
    # tree_start
    "tree_start not from 0": _with(tree_start=np.array([1, 5, 8], np.int64)),
    "tree_start short of n_nodes": _with(
        tree_start=np.array([0, 5, 7], np.int64)),
    "tree_start beyond n_nodes": _with(
        tree_start=np.array([0, 5, 9], np.int64)),
    "tree_start with an empty tree": _with(
        tree_start=np.array([0, 5, 5, 8], np.int64),
        tree_group=np.array([0, 1, 0], np.int32)),
    "tree_start decreasing": _with(tree_start=np.array([0, 9, 8], np.int64)),
    "tree_start empty": _with(tree_start=np.zeros(0, np.int64),
                              tree_group=np.zeros(0, np.int32)),
    # tree_group
    "tree_group of other length": _with(tree_group=np.zeros(3, np.int32)),
    "tree_group negative": _with(tree_group=np.array([0, -1], np.int32)),
    "tree_group beyond the columns": _with(
        tree_group=np.array([2, 0], np.int32)),
    # output
    "out with other rows": _with(out=np.zeros((2, 2))),
    # threads (resolved from n_jobs before the kernels; -1 must not reach
    # OpenMP, which aborts the process on a negative thread count)
    "n_threads -1": _with(n_threads=-1),
}

# Cases about arguments that predict_leaves does not take.
RAW_ONLY = {"value shorter", "tree_group of other length",
            "tree_group negative", "tree_group beyond the columns",
            "out with other rows"}

# Arrays passed as None: the kernels' memoryview arguments accept None; the
# call must then raise (any exception) rather than read through a null view.
NONE_ARGUMENTS = ["X", "left_child", "right_child", "feature", "threshold",
                  "default_left", "value", "tree_start", "tree_group", "out"]

LEAVES_ARGUMENTS = ["X", "left_child", "right_child", "feature", "threshold",
                    "default_left", "tree_start", "n_threads"]


def leaves_call(args):
    return ("skboost.tree._predictor", "predict_leaves", (),
            {name: args[name] for name in LEAVES_ARGUMENTS})


def raw_call_spec(args):
    return ("skboost.tree._predictor", "predict_raw", (), args)


@pytest.fixture(scope="module")
def outcomes():
    cases = {"valid raw": raw_call_spec(valid_forest()),
             "valid leaves": leaves_call(valid_forest())}
    for name, args in BAD_FORESTS.items():
        cases["raw: " + name] = raw_call_spec(args)
        if name not in RAW_ONLY:
            cases["leaves: " + name] = leaves_call(args)
    for name in NONE_ARGUMENTS:
        cases["raw: None " + name] = raw_call_spec(_with(**{name: None}))
        if name in LEAVES_ARGUMENTS:
            cases["leaves: None " + name] = leaves_call(_with(**{name: None}))
    return dict(zip(cases, outcomes_in_child_processes(list(cases.values()))))


def test_valid_forest_runs(outcomes):
    assert outcomes["valid raw"] == "returned"
    assert outcomes["valid leaves"] == "returned"
    args = valid_forest()
    predict_raw(**args)
    # Row 0: x0 = 0 < 1.5 left to node 1; x1 = 1 >= 0 right: leaf 4.
    # Row 1: x0 = 2 right: leaf 2. Row 2: x0 = 1 left, x1 = -1 < 0: leaf 3.
    # Stump on x1 < 0.5 (NaN left): rows 0 right (7), 1 NaN left (6), 2 (6).
    assert args["out"].tolist() == [[4.0, 7.0], [2.0, 6.0], [3.0, 6.0]]


@pytest.mark.parametrize("case", [f"{kind}: {name}" for name in BAD_FORESTS
                                  for kind in ("raw", "leaves")
                                  if kind == "raw" or name not in RAW_ONLY])
def test_invalid_forest_raises_value_error(case, outcomes):
    assert outcomes[case] == "ValueError"


@pytest.mark.parametrize("case", [f"raw: None {name}"
                                  for name in NONE_ARGUMENTS]
                         + [f"leaves: None {name}" for name in NONE_ARGUMENTS
                            if name in LEAVES_ARGUMENTS])
def test_none_array_raises_not_crashes(case, outcomes):
    assert outcomes[case] != "returned"
    assert not outcomes[case].startswith("crashed"), outcomes[case]


def test_packed_forest_matches_node_arrays_on_many_blocks():
    """PackedForest (branch-free, row blocks, per-thread scratch) against the
    plain node-array predictor, on enough rows for many blocks per thread:
    a scratch buffer shared between threads would show up here."""
    from sklearn.datasets import make_regression

    from skboost import BoostRegressor
    from skboost.tree._predictor import PackedForest, predict_leaves

    X, y = make_regression(20_000, 8, random_state=0)
    X = X.astype(np.float32)
    X[np.random.default_rng(0).random(X.shape) < 0.05] = np.nan
    booster = BoostRegressor(n_estimators=30, max_depth=7).fit(X, y).booster_
    trees = booster.trees
    sizes = [t.n_nodes for t in trees]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cat = {f: np.concatenate([getattr(t, f) for t in trees])
           for f in ("left_child", "right_child", "feature", "threshold",
                     "default_left", "value")}
    groups = np.zeros(len(trees), dtype=np.int32)
    expected = np.zeros((X.shape[0], 1))
    predict_raw(X, cat["left_child"], cat["right_child"], cat["feature"],
                cat["threshold"], cat["default_left"], cat["value"], starts,
                groups, expected, 1)
    expected_leaves = predict_leaves(X, cat["left_child"], cat["right_child"],
                                     cat["feature"], cat["threshold"],
                                     cat["default_left"], starts, 1)
    forest = PackedForest(*cat.values(), starts, groups, X.shape[1], 1)
    for n_threads in (1, 2, 3):
        for _ in range(3):
            out = np.zeros((X.shape[0], 1))
            forest.predict_raw(X, out, 0, len(trees), n_threads)
            np.testing.assert_array_equal(out, expected)
            np.testing.assert_array_equal(
                forest.predict_leaves(X, 0, len(trees), n_threads),
                expected_leaves)


def test_packed_forest_float32_comparison_is_exact_at_the_edges():
    """The packed walk compares float32 inputs with the smallest float32 >=
    each (float64) threshold; that must route exactly as the float64
    comparison does, also for thresholds strictly between two adjacent
    float32 values and inputs equal to either neighbour."""
    from skboost.tree._predictor import PackedForest

    rng = np.random.default_rng(0)
    below = rng.normal(size=200).astype(np.float32) * np.float32(1e3)
    above = np.nextafter(below, np.float32(np.inf))
    # midpoints of adjacent float32 values: not representable in float32
    thresholds = 0.5 * (below.astype(np.float64) + above.astype(np.float64))
    thresholds = np.concatenate([thresholds, below.astype(np.float64),
                                 [np.inf, -np.inf, 1e39, -1e39]])
    for t in thresholds:
        # a stump: x < t goes to leaf 1 (value -1), else leaf 2 (value +1)
        forest = PackedForest(np.array([1, -1, -1], np.int32),
                              np.array([2, -1, -1], np.int32),
                              np.array([0, -1, -1], np.int32),
                              np.array([t, 0, 0]), np.zeros(3, np.uint8),
                              np.array([0.0, -1.0, 1.0]),
                              np.array([0, 3], np.int64),
                              np.zeros(1, np.int32), 1, 1)
        with np.errstate(over="ignore"):
            near = np.float32(t)
        near = near if np.isfinite(near) else np.float32(0)
        xs = np.array([near, np.nextafter(near, np.float32(np.inf)),
                       np.nextafter(near, np.float32(-np.inf)), below[0],
                       above[0], np.inf, -np.inf], dtype=np.float32)
        out = np.zeros((xs.shape[0], 1))
        forest.predict_raw(xs[:, None].copy(), out, 0, 1, 1)
        expected = np.where(xs.astype(np.float64) < t, -1.0, 1.0)
        np.testing.assert_array_equal(out[:, 0], expected, err_msg=repr(t))


# --------------------------------------------------------------------------
# PackedForest: breadth-first packing, prefetching of row blocks
# --------------------------------------------------------------------------

def packed(trees, tree_group, n_features, n_groups):
    from skboost.tree._predictor import PackedForest

    flat = concatenate(trees)
    return PackedForest(flat["left_child"], flat["right_child"],
                        flat["feature"], flat["threshold"],
                        flat["default_left"], flat["value"],
                        flat["tree_start"], tree_group, n_features, n_groups)


def naive_forest(X, trees, tree_group, n_groups):
    """Margins and tree-local leaves of the naive walk, tree by tree."""
    raw = np.zeros((X.shape[0], n_groups))
    leaves = np.zeros((X.shape[0], len(trees)), dtype=np.int32)
    for t, (tree, group) in enumerate(zip(trees, tree_group)):
        for r in range(X.shape[0]):
            leaves[r, t] = naive_leaf(tree, X[r])
            raw[r, group] += tree.value[leaves[r, t]]
    return raw, leaves


@pytest.mark.parametrize("seed", range(20))
def test_packed_forest_matches_naive_walk_in_any_node_order(seed):
    """Trees numbered depth first or breadth first are repacked breadth
    first; predictions and the leaf indices reported (those of the arrays
    given) are those of the naive walk."""
    X, trees, tree_group, n_groups, _ = random_forest(seed, n_rows=150)
    forest = packed(trees, tree_group, X.shape[1], n_groups)
    raw, leaves = naive_forest(X, trees, tree_group, n_groups)
    for n_threads in (1, 2):
        out = np.zeros((X.shape[0], n_groups))
        forest.predict_raw(X, out, 0, len(trees), n_threads)
        np.testing.assert_allclose(out, raw, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(
            forest.predict_leaves(X, 0, len(trees), n_threads), leaves)


def test_packed_forest_wide_rows_over_many_blocks():
    """Rows of 700 features over many blocks of rows (the next block
    prefetched during the current one), a last block shorter than the
    others, and a tree range that is not the whole forest."""
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(1003, 700)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    trees = [random_tree(rng, X, 7, bool(k % 2)) for k in range(6)]
    tree_group = np.zeros(len(trees), np.int32)
    forest = packed(trees, tree_group, X.shape[1], 1)
    raw, leaves = naive_forest(X, trees[1:5], tree_group[1:5], 1)
    for n_threads in (1, 2, 3):
        out = np.zeros((X.shape[0], 1))
        forest.predict_raw(X, out, 1, 5, n_threads)
        np.testing.assert_allclose(out, raw, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(
            forest.predict_leaves(X, 1, 5, n_threads), leaves)


def test_packed_forest_keeps_nodes_no_root_reaches():
    """A node no split points to (never walked) does not disturb the
    packing of the others."""
    from skboost.tree._predictor import PackedForest

    # tree 0: root -> nodes 2 and 3; node 1 is unreachable
    forest = PackedForest(np.array([2, -1, -1, -1, -1], np.int32),
                          np.array([3, -1, -1, -1, -1], np.int32),
                          np.array([0, -1, -1, -1, -1], np.int32),
                          np.array([0.5, 0, 0, 0, 0]), np.zeros(5, np.uint8),
                          np.array([0.0, 100.0, -1.0, 1.0, 7.0]),
                          np.array([0, 4, 5], np.int64),
                          np.zeros(2, np.int32), 1, 1)
    X = np.array([[0.0], [1.0], [np.nan]], np.float32)
    out = np.zeros((3, 1))
    forest.predict_raw(X, out, 0, 2, 1)
    np.testing.assert_array_equal(out[:, 0], [-1.0 + 7, 1.0 + 7, 1.0 + 7])
    np.testing.assert_array_equal(forest.predict_leaves(X, 0, 2, 1),
                                  [[2, 0], [3, 0], [3, 0]])


@pytest.mark.parametrize("left, right", [([1, 2, -1, -1], [2, 3, -1, -1]),
                                         ([1, -1], [1, -1])])
def test_packed_forest_rejects_a_node_with_two_parents(left, right):
    """Node arrays that are not a tree (a node reached twice) are refused,
    not packed past their tree's end."""
    from skboost.tree._predictor import PackedForest

    n = len(left)
    feature = np.where(np.array(left) == -1, -1, 0).astype(np.int32)
    with pytest.raises(ValueError, match="two parents"):
        PackedForest(np.array(left, np.int32), np.array(right, np.int32),
                     feature, np.zeros(n), np.zeros(n, np.uint8), np.zeros(n),
                     np.array([0, n], np.int64), np.zeros(1, np.int32), 1, 1)


# --------------------------------------------------------------------------
# The complete layout on order keys (the batch walk of numeric trees)
# --------------------------------------------------------------------------

# float32 values where an order key could go wrong: both zeros, the
# infinities, the smallest subnormal, the largest float32, their neighbours
EDGE_VALUES = np.array(
    [0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38,
     1.0, np.nextafter(np.float32(1), np.float32(2)),
     np.nextafter(np.float32(1), np.float32(0)), -1.0, 0.5, np.nan],
    dtype=np.float32)


@pytest.mark.parametrize("default_left", [0, 1])
def test_key_walk_routes_edge_values_as_float_comparisons(default_left):
    """Stumps on thresholds at the float32 edges (both zeros, infinities,
    subnormals, beyond float32, between two float32), repeated so that the
    batch walk takes the key path: every value goes where ``x < t`` in
    float64 (NaN: its default) sends it."""
    from skboost.tree._predictor import PackedForest

    thresholds = np.concatenate([
        EDGE_VALUES[~np.isnan(EDGE_VALUES)].astype(np.float64),
        [1e39, -1e39, 0.5 * (1.0 + np.float64(np.nextafter(
            np.float32(1), np.float32(2)))), 2.5e-45]])
    x = EDGE_VALUES[:, None].copy()
    for t in thresholds:
        n_trees = 4   # 4 key steps per row >= 2 per feature: the key walk
        forest = PackedForest(
            np.tile([1, -1, -1], n_trees).astype(np.int32),
            np.tile([2, -1, -1], n_trees).astype(np.int32),
            np.tile([0, -1, -1], n_trees).astype(np.int32),
            np.tile([t, 0, 0], n_trees).astype(np.float64),
            np.tile([default_left, 0, 0], n_trees).astype(np.uint8),
            np.tile([0.0, -1.0, 1.0], n_trees),
            np.arange(0, 3 * n_trees + 1, 3, dtype=np.int64),
            np.zeros(n_trees, np.int32), 1, 1)
        assert forest.uses_key_walk(0, n_trees)
        assert forest.complete_trees().all()
        goes_left = np.where(np.isnan(EDGE_VALUES), bool(default_left),
                             EDGE_VALUES.astype(np.float64) < t)
        out = np.zeros((x.shape[0], 1))
        forest.predict_raw(x, out, 0, n_trees, 1)
        np.testing.assert_array_equal(
            out[:, 0], n_trees * np.where(goes_left, -1.0, 1.0),
            err_msg=repr(t))
        leaves = forest.predict_leaves(x, 0, n_trees, 2)
        np.testing.assert_array_equal(
            leaves, np.repeat(np.where(goes_left, 1, 2)[:, None], n_trees, 1))


def deep_forest(seed, n_rows=300):
    """Trees of depths 0 to 13 (deeper than the complete layout takes, and
    leaves at every depth), many of them so that the key walk runs, on
    rows with NaN and edge values."""
    rng = np.random.default_rng(seed)
    n_features = int(rng.integers(1, 6))
    X = np.round(rng.normal(size=(n_rows, n_features)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.05] = rng.choice(EDGE_VALUES)
    depths = rng.integers(0, 14, 24)
    trees = [random_tree(rng, X, int(d), bool(k % 2))
             for k, d in enumerate(depths)]
    n_groups = int(rng.integers(1, 4))
    tree_group = rng.integers(0, n_groups, len(trees)).astype(np.int32)
    return X, trees, tree_group, n_groups


@pytest.mark.parametrize("seed", range(12))
def test_complete_layout_matches_naive_walk(seed):
    """Forests mixing complete trees (depth <= 10) and deeper packed ones:
    margins and leaves equal the naive walk's, for 1 to 3 threads, dense
    and sparse rows, whole forests and tree ranges."""
    import scipy.sparse as sp

    from skboost._input.sparse import sparse_rows

    X, trees, tree_group, n_groups = deep_forest(seed)
    forest = packed(trees, tree_group, X.shape[1], n_groups)
    assert forest.uses_key_walk(0, len(trees))
    depths = np.asarray(forest.tree_depth)
    np.testing.assert_array_equal(forest.complete_trees(), depths <= 10)
    # zeros absent, NaN stored: the same rows as X
    sparse = sparse_rows(sp.csr_matrix(X), 0.0)
    for first, last in ((0, len(trees)), (3, len(trees) - 2)):
        raw, leaves = naive_forest(X, trees[first:last],
                                   tree_group[first:last], n_groups)
        for n_threads in (1, 2, 3):
            out = np.zeros((X.shape[0], n_groups))
            forest.predict_raw(X, out, first, last, n_threads)
            np.testing.assert_allclose(out, raw, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(
                forest.predict_leaves(X, first, last, n_threads), leaves)
            out = np.zeros((X.shape[0], n_groups))
            forest.predict_raw_sparse(sparse, out, first, last, n_threads)
            np.testing.assert_allclose(out, raw, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(
                forest.predict_leaves_sparse(sparse, first, last, n_threads),
                leaves)


@pytest.mark.parametrize("seed", range(6))
def test_key_walk_sums_equal_the_serial_walk_bit_for_bit(seed):
    """The batch walk (keys) and the serial walk of the packed trees add
    the same leaf values in the same order: equal bit for bit."""
    X, trees, tree_group, n_groups = deep_forest(seed, n_rows=200)
    X[np.isinf(X)] = 3e38   # the serial walk refuses infinity (None)
    forest = packed(trees, tree_group, X.shape[1], n_groups)
    base = np.random.default_rng(seed).normal(size=n_groups)
    batch = np.tile(base, (X.shape[0], 1))
    forest.predict_raw(X, batch, 0, len(trees), 2)
    serial = forest.predict_raw_small(X, base, 0, len(trees))
    np.testing.assert_array_equal(batch, serial)


@pytest.mark.parametrize("wide", [False, True])
def test_refuse_infinity_reports_exactly_the_rows_with_infinity(wide):
    """``predict_raw(refuse_infinity=True)`` (the serving path's check,
    made while the key conversion reads the rows; a scan of its own on the
    packed walk of wide rows) returns False exactly when X holds +-inf,
    whichever block (first, middle, last, a short last one) holds it; with
    none, the margins equal the naive walk's and the unchecked call's."""
    rng = np.random.default_rng(5)
    n_features = 700 if wide else 3
    X = np.round(rng.normal(size=(203, n_features)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.02] = 3.4028235e38   # finite edge values
    trees = [random_tree(rng, X, int(d), bool(d % 2))
             for d in (0, 1, 2, 5, 8, 3)]
    group = np.zeros(len(trees), np.int32)
    forest = packed(trees, group, n_features, 1)
    assert forest.uses_key_walk(0, len(trees)) is (not wide)
    raw, _ = naive_forest(X, trees, group, 1)
    for n_threads in (1, 2):
        out = np.zeros((X.shape[0], 1))
        assert forest.predict_raw(X, out, 0, len(trees), n_threads,
                                  refuse_infinity=True) is True
        np.testing.assert_allclose(out, raw, rtol=0, atol=1e-12)
        plain = np.zeros((X.shape[0], 1))
        forest.predict_raw(X, plain, 0, len(trees), n_threads)
        np.testing.assert_array_equal(out, plain)
        for row in (0, 100, 192, 202):
            for value in (np.inf, -np.inf):
                bad = X.copy()
                bad[row, n_features - 1] = value
                out = np.zeros((X.shape[0], 1))
                assert forest.predict_raw(bad, out, 0, len(trees), n_threads,
                                          refuse_infinity=True) is False
        # no tree to walk: the check still runs
        assert forest.predict_raw(bad, out, 2, 2, n_threads,
                                  refuse_infinity=True) is False


def test_a_nan_threshold_keeps_its_tree_packed():
    """A split whose threshold is NaN (a hand-made model: every number goes
    right, NaN by its default) has no key: its tree is walked packed,
    exactly as the naive walk."""
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(100, 2)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    trees = [random_tree(rng, X, 4, True) for _ in range(8)]
    trees[2].threshold[0] = np.nan
    trees[2].default_left[0] = 1
    forest = packed(trees, np.zeros(8, np.int32), 2, 1)
    assert forest.uses_key_walk(0, 8)
    assert not forest.complete_trees()[2]
    raw, leaves = naive_forest(X, trees, np.zeros(8, np.int32), 1)
    out = np.zeros((X.shape[0], 1))
    forest.predict_raw(X, out, 0, 8, 2)
    np.testing.assert_allclose(out, raw, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(forest.predict_leaves(X, 0, 8, 1), leaves)


def test_wide_rows_or_few_steps_skip_the_key_walk():
    """Converting a row to keys costs 2 keys per feature: with fewer key
    steps than that per row the batch walk stays packed."""
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(50, 700)), 1).astype(np.float32)
    trees = [random_tree(rng, X, 7, bool(k % 2)) for k in range(6)]
    forest = packed(trees, np.zeros(6, np.int32), 700, 1)
    assert not forest.uses_key_walk(0, 6)
    with pytest.raises(ValueError, match="tree range"):
        forest.uses_key_walk(0, 7)


def test_categorical_trees_walk_packed_beside_complete_numeric_ones():
    """A model with categorical splits: its numeric trees take the key
    walk, its categorical ones the packed walk; the margins equal the
    serial walk's bit for bit, for 1 and 2 threads."""
    from skboost import BoostRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    X[:, 0] = rng.integers(0, 12, 3000)
    X[rng.random(X.shape) < 0.05] = np.nan
    # a weak categorical effect: some trees split on category 3, some not
    y = (0.3 * (X[:, 0] == 3) + X[:, 1] + 0.5 * X[:, 2]
         + rng.normal(scale=0.1, size=3000))
    booster = BoostRegressor(n_estimators=30, max_depth=3,
                             categorical_features=[0]).fit(
                                 X, np.nan_to_num(y)).booster_
    forest = booster._packed_forest()
    complete = forest.complete_trees()
    assert complete.any() and not complete.all()
    assert forest.uses_key_walk(0, forest.n_trees)
    for n_threads in (1, 2):
        batch = np.tile(booster.base_margin, (X.shape[0], 1))
        forest.predict_raw(X, batch, 0, forest.n_trees, n_threads)
        serial = forest.predict_raw_small(X, booster.base_margin, 0,
                                          forest.n_trees)
        np.testing.assert_array_equal(batch, serial)


def test_key_walk_of_wide_sparse_rows_in_short_blocks():
    """Sparse rows so wide that a block holds fewer rows than a block of
    keys (5,000 features), and enough stumps (12,000, over every feature,
    missing values both ways) for the key walk: each stump's leaf equals
    ``x < t`` in float64 (NaN and absent-as-NaN: its default), summed in
    tree order as the naive walk sums them."""
    import scipy.sparse as sp

    from skboost._input.sparse import sparse_rows
    from skboost.tree._predictor import PackedForest

    rng = np.random.default_rng(11)
    n_rows, n_features, n_trees = 70, 5000, 12000
    dense = np.full((n_rows, n_features), np.nan, dtype=np.float32)
    stored = rng.random(dense.shape) < 0.3
    drawn = np.round(rng.normal(size=stored.sum()), 1)
    drawn[drawn == 0] = 0.1        # explicit zeros might be dropped
    dense[stored] = drawn
    dense[rng.random(dense.shape) < 0.02] = np.nan    # stored NaN too
    feature = rng.integers(0, n_features, n_trees).astype(np.int32)
    threshold = np.round(rng.normal(size=n_trees), 1)
    default_left = rng.integers(0, 2, n_trees).astype(np.uint8)
    value = rng.normal(size=(n_trees, 2))
    forest = PackedForest(
        np.tile([1, -1, -1], n_trees).astype(np.int32),
        np.tile([2, -1, -1], n_trees).astype(np.int32),
        np.column_stack([feature, np.zeros((n_trees, 2), np.int32)]).ravel(),
        np.column_stack([threshold, np.zeros((n_trees, 2))]).ravel(),
        np.column_stack([default_left,
                         np.zeros((n_trees, 2), np.uint8)]).ravel(),
        np.column_stack([np.zeros(n_trees), value]).ravel(),
        np.arange(0, 3 * n_trees + 1, 3, dtype=np.int64),
        np.zeros(n_trees, np.int32), n_features, 1)
    assert forest.uses_key_walk(0, n_trees)
    x = dense[:, feature].astype(np.float64)
    goes_left = np.where(np.isnan(x), default_left.astype(bool),
                         x < threshold)
    expected = np.zeros(n_rows)
    for t in range(n_trees):   # in tree order, as the walk adds them
        expected += np.where(goes_left[:, t], value[t, 0], value[t, 1])
    # absent entries are NaN: store the drawn entries only (some NaN)
    rows = sparse_rows(sp.csr_matrix(
        (dense[stored], np.nonzero(stored)[1],
         np.concatenate([[0], np.cumsum(stored.sum(1))])),
        shape=dense.shape), np.nan)
    for n_threads in (1, 2):
        out = np.zeros((n_rows, 1))
        forest.predict_raw_sparse(rows, out, 0, n_trees, n_threads)
        np.testing.assert_array_equal(out[:, 0], expected)
        np.testing.assert_array_equal(
            forest.predict_leaves_sparse(rows, 0, n_trees, n_threads),
            np.where(goes_left, 1, 2))
        out = np.zeros((n_rows, 1))
        forest.predict_raw(dense, out, 0, n_trees, n_threads)
        np.testing.assert_array_equal(out[:, 0], expected)


@pytest.mark.parametrize("kind", ["multiclass", "dart"])
def test_multiclass_and_dart_models_take_the_key_walk(kind):
    """Every tree of a multi-class model (one per class and round) and of
    a DART model (its weights folded into the leaf values) has the
    complete layout, and the batch walk's margins equal the serial walk's
    of the packed trees bit for bit, for 1 and 2 threads."""
    from skboost import BoostClassifier

    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    if kind == "multiclass":
        y = np.digitize(np.nan_to_num(X[:, 0] + X[:, 1]), [-0.5, 0.5])
        model = BoostClassifier(n_estimators=15, max_depth=4)
    else:
        y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
        model = BoostClassifier(n_estimators=15, max_depth=4,
                                booster="dart", rate_drop=0.3,
                                random_state=0)
    booster = model.fit(X, y).booster_
    if kind == "dart":
        assert any(w != 1.0 for w in booster.tree_weights)
    forest = booster._packed_forest()
    assert forest.complete_trees().all()
    assert forest.uses_key_walk(0, forest.n_trees)
    for n_threads in (1, 2):
        batch = np.tile(booster.base_margin, (X.shape[0], 1))
        forest.predict_raw(X, batch, 0, forest.n_trees, n_threads)
        serial = forest.predict_raw_small(X, booster.base_margin, 0,
                                          forest.n_trees)
        np.testing.assert_array_equal(batch, serial)
