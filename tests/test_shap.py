"""Explanations: SHAP contributions, Saabas contributions and SHAP
interaction values (``Booster.predict(pred_contribs=..., ...)``,
``predict_contributions``, ``shap_explanation``).

Oracles: exact Shapley values (and the Shapley interaction index) by brute
force over every coalition of features, each coalition's value the
path-dependent expectation of the trees computed from their own covers by a
naive recursive walk; Saabas contributions by a naive walk; XGBoost's
``pred_contribs`` / ``pred_interactions`` on the same trees (both libraries
grow the same trees with ``tree_method="exact"``); the ``shap`` package's
TreeExplainer fed the trees in its generic format. Properties: additivity,
interaction rows summing to the contributions, symmetry, zero for an unused
feature, independence from ``n_jobs``.
"""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost.tree._shap import ShapForest
from skboost.tree._tree import category_goes_left

ATOL = 1e-9      # float64 kernels against float64 oracles


# --------------------------------------------------------------------------
# Naive oracles (written from the definitions)
# --------------------------------------------------------------------------


def goes_left(tree, node, x):
    """The documented split rule of _tree.py, walked in Python."""
    value = x[tree.feature[node]]
    left = tree.left_categories(node)
    if left is None:
        if np.isnan(value):
            return bool(tree.default_left[node])
        return value < tree.threshold[node]
    i = int(np.searchsorted(tree.cat_node, node))
    words = tree.cat_bits[tree.cat_ptr[i]:tree.cat_ptr[i + 1]]
    return category_goes_left(value, tree.cat_size[i], words,
                              tree.default_left[node])


def cover_split(tree, node):
    left, right = tree.left_child[node], tree.right_child[node]
    total = tree.cover[node]
    if total > 0:
        return left, right, tree.cover[left] / total, tree.cover[right] / total
    return left, right, 0.5, 0.5


def expectation(tree, x, known, node=0):
    """E[tree(x) | the features in ``known``], path-dependent: an unknown
    feature's split sends the row both ways weighted by the covers."""
    if tree.left_child[node] == -1:
        return tree.value[node]
    left, right, z_left, z_right = cover_split(tree, node)
    if tree.feature[node] in known:
        return expectation(tree, x, known,
                           left if goes_left(tree, node, x) else right)
    return (z_left * expectation(tree, x, known, left)
            + z_right * expectation(tree, x, known, right))


def coalition_values(booster, x, first, last, output):
    F = booster.n_features
    trees = [t for k, t in enumerate(booster.trees[first:last], first)
             if booster.tree_group[k] == output]
    return {S: booster.base_margin[output]
            + sum(expectation(t, x, set(S)) for t in trees)
            for size in range(F + 1)
            for S in itertools.combinations(range(F), size)}


def brute_shap(booster, x, first=0, last=None, output=0):
    """Shapley values of the features (and the expected value last)."""
    F = booster.n_features
    v = coalition_values(booster, x, first, last, output)
    phi = np.zeros(F + 1)
    for i in range(F):
        others = [j for j in range(F) if j != i]
        for size in range(F):
            weight = (math.factorial(size) * math.factorial(F - size - 1)
                      / math.factorial(F))
            for S in itertools.combinations(others, size):
                phi[i] += weight * (v[tuple(sorted(S + (i,)))] - v[S])
    phi[F] = v[()]
    return phi


def brute_interactions(booster, x, first=0, last=None, output=0):
    """The Shapley interaction index (Lundberg et al. 2018), the diagonal
    the rest of each Shapley value, the expected value at [F, F]."""
    F = booster.n_features
    v = coalition_values(booster, x, first, last, output)
    phi = brute_shap(booster, x, first, last, output)
    out = np.zeros((F + 1, F + 1))
    for i, j in itertools.combinations(range(F), 2):
        others = [k for k in range(F) if k not in (i, j)]
        total = 0.0
        for size in range(F - 1):
            weight = (math.factorial(size) * math.factorial(F - size - 2)
                      / (2 * math.factorial(F - 1)))
            for S in itertools.combinations(others, size):
                key = lambda extra: tuple(sorted(S + extra))  # noqa: E731
                total += weight * (v[key((i, j))] - v[key((i,))]
                                   - v[key((j,))] + v[S])
        out[i, j] = out[j, i] = total
    for i in range(F):
        out[i, i] = phi[i] - out[i, :F].sum()
    out[F, F] = phi[F]
    return out


def naive_saabas(booster, x, output=0):
    F = booster.n_features

    def mean(tree, node):
        if tree.left_child[node] == -1:
            return tree.value[node]
        left, right, z_left, z_right = cover_split(tree, node)
        return z_left * mean(tree, left) + z_right * mean(tree, right)

    phi = np.zeros(F + 1)
    phi[F] = booster.base_margin[output]
    for tree, group in zip(booster.trees, booster.tree_group):
        if group != output:
            continue
        node = 0
        phi[F] += mean(tree, 0)
        while tree.left_child[node] != -1:
            child = (tree.left_child[node] if goes_left(tree, node, x)
                     else tree.right_child[node])
            phi[tree.feature[node]] += mean(tree, child) - mean(tree, node)
            node = child
    return phi


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def make_data(seed, n=400, d=4, missing=0.15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    filled = X.copy()
    X[rng.random((n, d)) < missing] = np.nan
    signal = filled[:, 0] + filled[:, 1] * filled[:, 2] + np.sin(filled[:, -1])
    y = signal + rng.normal(scale=0.3, size=n)
    return X, y, rng


def fit(kind, X, y, **params):
    params = {**dict(n_estimators=6, max_depth=4, learning_rate=0.3,
                     n_jobs=1), **params}
    if kind == "regression":
        return BoostRegressor(**params).fit(X, y)
    if kind == "binary":
        return BoostClassifier(**params).fit(X, (y > 0.3).astype(int))
    return BoostClassifier(**params).fit(X, np.digitize(y, [-0.5, 0.8]))


def per_output(values, n_outputs):
    """(n, [K,] ...) -> (n, K, ...)"""
    return values if n_outputs > 1 else values[:, None]


# --------------------------------------------------------------------------
# Against brute force
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_contributions_are_exact_shapley_values(kind):
    X, y, _ = make_data(0)
    model = fit(kind, X, y)
    booster = model.get_booster()
    values = per_output(booster.predict(X[:12], pred_contribs=True),
                        booster.n_outputs)
    assert values.shape == (12, booster.n_outputs, X.shape[1] + 1)
    assert np.isnan(X[:12]).any()
    for r in range(12):
        for k in range(booster.n_outputs):
            np.testing.assert_allclose(values[r, k],
                                       brute_shap(booster, X[r], output=k),
                                       rtol=0, atol=ATOL)


@pytest.mark.parametrize("kind", ["regression", "multiclass"])
def test_interactions_are_the_shapley_interaction_index(kind):
    X, y, _ = make_data(1)
    model = fit(kind, X, y)
    booster = model.get_booster()
    values = per_output(booster.predict(X[:8], pred_interactions=True),
                        booster.n_outputs)
    assert values.shape == (8, booster.n_outputs, 5, 5)
    for r in range(8):
        for k in range(booster.n_outputs):
            np.testing.assert_allclose(
                values[r, k], brute_interactions(booster, X[r], output=k),
                rtol=0, atol=ATOL)


def test_deep_trees_with_repeated_features_are_exact():
    """Depth 12, lossguide, 6 features: features repeat along paths (merged
    cover fractions) and paths hold up to 6 distinct features (quadrature
    of degree 5)."""
    X, y, _ = make_data(2, n=3000, d=6, missing=0.1)
    model = BoostRegressor(n_estimators=2, max_depth=12, max_leaves=300,
                           grow_policy="lossguide", min_child_weight=0.5,
                           n_jobs=1).fit(X, y)
    booster = model.get_booster()
    assert booster.trees[0].max_depth >= 10
    shap_values = booster.predict(X[:4], pred_contribs=True)
    inter = booster.predict(X[:4], pred_interactions=True)
    for r in range(4):
        np.testing.assert_allclose(shap_values[r], brute_shap(booster, X[r]),
                                   rtol=0, atol=1e-8)
        np.testing.assert_allclose(inter[r],
                                   brute_interactions(booster, X[r]),
                                   rtol=0, atol=1e-8)


def test_zero_covers_give_finite_exact_values():
    """Covers of 0 (a child no training row reached: cover fraction 0; a
    parent of cover 0: half each), edited into trained trees since training
    drops zero-weight rows."""
    X, y, _ = make_data(3, n=300)
    model = fit("regression", X, y, n_estimators=3, max_depth=5)
    booster = model.get_booster()
    for tree in booster.trees:
        leaves = np.flatnonzero(tree.left_child == -1)
        tree.cover[leaves[0]] = 0.0
        twins = [n for n in range(tree.n_nodes)
                 if tree.left_child[n] in leaves[1:]
                 and tree.right_child[n] in leaves[1:]]
        tree.cover[[twins[0], tree.left_child[twins[0]],
                    tree.right_child[twins[0]]]] = 0.0
    values = booster.predict(X[:10], pred_contribs=True)
    inter = booster.predict(X[:10], pred_interactions=True)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(inter))
    for r in range(10):
        np.testing.assert_allclose(values[r], brute_shap(booster, X[r]),
                                   rtol=0, atol=ATOL)
        np.testing.assert_allclose(inter[r], brute_interactions(booster, X[r]),
                                   rtol=0, atol=ATOL)
        np.testing.assert_allclose(
            booster.predict(X[r:r + 1], pred_contribs=True,
                            approx_contribs=True)[0],
            naive_saabas(booster, X[r]), rtol=0, atol=ATOL)


def test_categorical_splits_are_exact():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    n = 600
    colour = rng.choice(list("abcdefg"), size=n)
    frame = pd.DataFrame({
        "x": rng.normal(size=n),
        "colour": pd.Categorical(colour, categories=list("abcdefg")),
        "z": np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
    })
    effect = pd.Series(colour).map(dict(zip("abcdefg", [2, -1, 0, 3, -2, 1, 0])))
    y = frame["x"] + effect.to_numpy() + np.nan_to_num(frame["z"]) * 0.5
    model = BoostRegressor(n_estimators=5, max_depth=4, max_cat_to_onehot=1,
                           n_jobs=1).fit(frame, y)
    booster = model.get_booster()
    assert any(t.has_categorical_splits for t in booster.trees)
    # new rows: a category unseen in training and a missing one
    test = frame.iloc[:10].copy()
    test["colour"] = pd.Categorical(list("abcdefgaaa"),
                                    categories=list("abcdefgh"))
    test.loc[7, "colour"] = np.nan
    test.loc[8, "colour"] = "h"
    from skboost._input.arrays import check_X

    coded = check_X(model, test, reset=False)
    values = booster.predict(test, pred_contribs=True)
    inter = booster.predict(test, pred_interactions=True)
    saabas = booster.predict(test, pred_contribs=True, approx_contribs=True)
    for r in range(10):
        np.testing.assert_allclose(values[r], brute_shap(booster, coded[r]),
                                   rtol=0, atol=ATOL)
        np.testing.assert_allclose(inter[r],
                                   brute_interactions(booster, coded[r]),
                                   rtol=0, atol=ATOL)
        np.testing.assert_allclose(saabas[r], naive_saabas(booster, coded[r]),
                                   rtol=0, atol=ATOL)
    np.testing.assert_allclose(values.sum(axis=1),
                               model.predict(test, output_margin=True),
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("kind", ["regression", "multiclass"])
def test_saabas_matches_a_naive_walk(kind):
    X, y, _ = make_data(5)
    model = fit(kind, X, y)
    booster = model.get_booster()
    values = per_output(booster.predict(X[:20], pred_contribs=True,
                                        approx_contribs=True),
                        booster.n_outputs)
    for r in range(20):
        for k in range(booster.n_outputs):
            np.testing.assert_allclose(values[r, k],
                                       naive_saabas(booster, X[r], k),
                                       rtol=0, atol=ATOL)


# --------------------------------------------------------------------------
# Against XGBoost on the same trees
# --------------------------------------------------------------------------

def _xgb_case(objective, seed=6, n=800, d=6):
    """Continuous features without missing values: the exact method of both
    libraries grows the same trees with the same thresholds (with missing
    values too: tests/test_missing_directions.py)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    signal = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    noisy = signal + rng.normal(scale=0.5, size=n)
    if objective == "reg:squarederror":
        y = 2.0 * noisy
    elif objective == "binary:logistic":
        y = (noisy > 0.2).astype(int)
    else:
        y = np.digitize(noisy, [-0.5, 0.6])
    return X, y, rng.uniform(0.2, 3.0, size=n)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "multi:softprob"])
def test_matches_xgboost_exact(objective):
    xgboost = pytest.importorskip("xgboost")
    X, y, weight = _xgb_case(objective)
    kw = dict(n_estimators=12, max_depth=5, tree_method="exact", n_jobs=1,
              objective=objective, base_score=0.5, learning_rate=0.3,
              # large nodes: no two splits with gains equal up to rounding
              # (which could send the same rows the same way on different
              # features: equal margins, other explanations)
              min_child_weight=5.0)
    if objective == "reg:squarederror":
        ours, theirs = BoostRegressor(**kw), xgboost.XGBRegressor(**kw)
    else:
        ours, theirs = BoostClassifier(**kw), xgboost.XGBClassifier(**kw)
    ours.fit(X, y, sample_weight=weight)
    theirs.fit(X, y, sample_weight=weight)
    booster, reference = ours.get_booster(), theirs.get_booster()
    data = xgboost.DMatrix(X)
    for flags in ({"pred_contribs": True}, {"pred_interactions": True},
                  {"pred_contribs": True, "approx_contribs": True},
                  {"pred_interactions": True, "approx_contribs": True}):
        mine, theirs_values = booster.predict(X, **flags), reference.predict(
            data, **flags)
        assert mine.shape == theirs_values.shape
        if objective == "multi:softprob":
            # XGBoost 3 gives every class the same base margin, skboost its
            # own: compare all but the expected value
            if "pred_contribs" in flags:
                mine, theirs_values = mine[..., :-1], theirs_values[..., :-1]
            else:
                mine, theirs_values = (mine[..., :-1, :-1],
                                       theirs_values[..., :-1, :-1])
        # XGBoost computes in float32
        np.testing.assert_allclose(mine, theirs_values, rtol=0, atol=1e-5)


# --------------------------------------------------------------------------
# Against the shap package, fed the trees in its generic format
# --------------------------------------------------------------------------


def _as_shap_model(booster):
    """skboost's trees as shap's generic dict model. shap sends
    ``x <= t`` left, skboost ``x < t``: for float32 x, x < t exactly when
    x <= the largest float32 below the smallest float32 >= t."""
    trees = []
    for tree in booster.trees:
        t32 = tree.threshold.astype(np.float32)
        t32 = np.where(t32.astype(np.float64) < tree.threshold,
                       np.nextafter(t32, np.float32(np.inf)), t32)
        at_or_below = np.nextafter(t32, np.float32(-np.inf)).astype(np.float64)
        leaf = tree.left_child == -1
        trees.append({
            "children_left": tree.left_child.astype(np.int64),
            "children_right": tree.right_child.astype(np.int64),
            "children_default": np.where(
                tree.default_left == 1, tree.left_child,
                tree.right_child).astype(np.int64),
            "features": np.where(leaf, -2, tree.feature).astype(np.int64),
            "thresholds": np.where(leaf, 0.0, at_or_below),
            "values": tree.value.reshape(-1, 1),
            "node_sample_weight": tree.cover,
        })
    return {"trees": trees, "base_offset": float(booster.base_margin[0])}


def test_matches_the_shap_package():
    shap = pytest.importorskip("shap")
    X, y, _ = make_data(7, n=500, d=5, missing=0.1)
    model = fit("regression", X, y, max_depth=6)
    booster = model.get_booster()
    explainer = shap.TreeExplainer(_as_shap_model(booster))
    expected = explainer.shap_values(X[:50].astype(np.float64))
    values = booster.predict(X[:50], pred_contribs=True)
    np.testing.assert_allclose(values[:, :-1], expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(values[:, -1], np.ravel(explainer.expected_value)[0],
                               rtol=0, atol=1e-6)
    expected_inter = explainer.shap_interaction_values(
        X[:20].astype(np.float64))
    inter = booster.predict(X[:20], pred_interactions=True)
    np.testing.assert_allclose(inter[:, :-1, :-1], expected_inter, rtol=0,
                               atol=1e-6)


# --------------------------------------------------------------------------
# Properties, inputs, options
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_properties(kind):
    X, y, rng = make_data(8, n=600, d=6)
    X[:, 4] = 1.0       # constant: no tree can split on it
    model = fit(kind, X, y, n_estimators=20, max_depth=6)
    booster = model.get_booster()
    K = booster.n_outputs
    margin = booster.predict(X, output_margin=True).reshape(X.shape[0], K)
    values = per_output(booster.predict(X, pred_contribs=True), K)
    inter = per_output(booster.predict(X, pred_interactions=True), K)
    np.testing.assert_allclose(values.sum(axis=-1), margin,
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(inter.sum(axis=-1), values, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(inter, np.swapaxes(inter, -1, -2))
    assert np.all(values[..., 4] == 0)
    assert np.all(inter[..., 4, :] == 0) and np.all(inter[..., :, 4] == 0)
    bias = values[..., -1]
    assert np.all(bias == bias[:1])           # the same expected value for all
    np.testing.assert_allclose(inter[..., -1, -1], bias, rtol=0, atol=1e-12)


def test_results_do_not_depend_on_n_jobs():
    X, y, _ = make_data(9, n=700, d=6)
    model = fit("multiclass", X, y, n_estimators=10, max_depth=6)
    booster = model.get_booster()
    Xs = sp.csr_matrix(np.nan_to_num(X, nan=0.0))
    for flags in ({"pred_contribs": True}, {"pred_interactions": True},
                  {"pred_contribs": True, "approx_contribs": True}):
        for data in (X, Xs):
            one = booster.predict(data, n_jobs=1, **flags)
            for n_jobs in (2, 3):
                np.testing.assert_array_equal(
                    booster.predict(data, n_jobs=n_jobs, **flags), one)


@pytest.mark.parametrize("absent", ["missing", "zero"])
def test_sparse_input_equals_dense(absent):
    X, y, rng = make_data(10, n=500, d=6, missing=0.0)
    X[rng.random(X.shape) < 0.5] = 0.0
    Xs = sp.csr_matrix(X)
    model = BoostRegressor(n_estimators=8, max_depth=5, n_jobs=1,
                           sparse_absent=absent).fit(Xs, y)
    dense = X.copy()
    if absent == "missing":
        dense[X == 0] = np.nan
    booster = model.get_booster()
    for flags in ({"pred_contribs": True}, {"pred_interactions": True},
                  {"pred_contribs": True, "approx_contribs": True}):
        for sparse in (Xs, Xs.tocsc(), sp.coo_array(Xs)):
            np.testing.assert_allclose(booster.predict(sparse, **flags),
                                       booster.predict(dense, **flags),
                                       rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        booster.predict(Xs, pred_contribs=True).sum(axis=1),
        model.predict(Xs, output_margin=True), rtol=0, atol=1e-10)


def test_pandas_columns_by_name():
    pd = pytest.importorskip("pandas")
    X, y, _ = make_data(11, n=400, d=4)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = fit("regression", frame, y)
    booster = model.get_booster()
    reordered = frame[["d", "b", "a", "c"]]
    in_order = booster.predict(frame, pred_contribs=True)
    np.testing.assert_array_equal(
        booster.predict(reordered, pred_contribs=True), in_order)
    np.testing.assert_array_equal(model.predict_contributions(reordered),
                                  in_order)
    for r in range(5):
        np.testing.assert_allclose(in_order[r], brute_shap(booster, X[r]),
                                   rtol=0, atol=ATOL)


def test_iteration_range_and_best_iteration():
    X, y, _ = make_data(12, n=800)
    model = BoostRegressor(n_estimators=60, max_depth=4, learning_rate=0.5,
                           early_stopping_rounds=3, n_jobs=1)
    model.fit(X[:600], y[:600], eval_set=[(X[600:], y[600:])])
    booster = model.get_booster()
    assert model.best_iteration + 1 < booster.n_rounds
    default = booster.predict(X, pred_contribs=True)
    np.testing.assert_allclose(default.sum(axis=1),
                               model.predict(X, output_margin=True),
                               rtol=0, atol=1e-10)
    np.testing.assert_array_equal(
        default, booster.predict(X, pred_contribs=True,
                                 iteration_range=(0, model.best_iteration + 1)))
    everything = booster.predict(X, pred_contribs=True, iteration_range=(0, 0))
    np.testing.assert_allclose(
        everything.sum(axis=1),
        model.predict(X, output_margin=True,
                      iteration_range=(0, booster.n_rounds)),
        rtol=0, atol=1e-10)
    for start, end in [(0, 1), (2, 5)]:
        part = booster.predict(X[:5], pred_contribs=True,
                               iteration_range=(start, end))
        inter = booster.predict(X[:5], pred_interactions=True,
                                iteration_range=(start, end))
        for r in range(5):
            expected = brute_shap(booster, X[r], start, end)
            np.testing.assert_allclose(part[r], expected, rtol=0, atol=ATOL)
            np.testing.assert_allclose(inter[r].sum(axis=1), expected,
                                       rtol=0, atol=ATOL)
    np.testing.assert_array_equal(
        model.predict_contributions(X, iteration_range=(2, 5)),
        booster.predict(X, pred_contribs=True, iteration_range=(2, 5)))


def test_estimator_entry_point():
    X, y, _ = make_data(13)
    model = fit("multiclass", X, y)
    booster = model.get_booster()
    np.testing.assert_array_equal(model.predict_contributions(X),
                                  booster.predict(X, pred_contribs=True))
    np.testing.assert_array_equal(
        model.predict_contributions(X, interactions=True),
        booster.predict(X, pred_interactions=True))
    np.testing.assert_array_equal(
        model.predict_contributions(X, approximate=True),
        booster.predict(X, pred_contribs=True, approx_contribs=True))
    np.testing.assert_allclose(model.predict_contributions(X).sum(axis=-1),
                               model.decision_function(X), rtol=0, atol=1e-10)
    ranker = BoostRanker(n_estimators=5, n_jobs=1).fit(
        X, (y > 0).astype(int), qid=np.repeat(np.arange(40), 10))
    np.testing.assert_allclose(ranker.predict_contributions(X).sum(axis=1),
                               ranker.predict(X), rtol=0, atol=1e-10)


def test_booster_predict_other_outputs():
    X, y, _ = make_data(14)
    model = fit("binary", X, y)
    booster = model.get_booster()
    np.testing.assert_allclose(booster.predict(X), model.predict_proba(X)[:, 1],
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(booster.predict(X, output_margin=True),
                                  model.decision_function(X))
    np.testing.assert_array_equal(booster.predict(X, pred_leaf=True),
                                  model.apply(X))


def test_shap_explanation_and_plots(tmp_path):
    shap = pytest.importorskip("shap")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pd = pytest.importorskip("pandas")
    X, y, _ = make_data(15, n=300, d=4)
    frame = pd.DataFrame(X, columns=["age", "income", "score", "tenure"])
    model = fit("regression", frame, y)
    explanation = model.shap_explanation(frame)
    assert isinstance(explanation, shap.Explanation)
    assert explanation.values.shape == (300, 4)
    assert list(explanation.feature_names) == list(frame.columns)
    np.testing.assert_allclose(
        explanation.values.sum(axis=1) + explanation.base_values,
        model.predict(frame, output_margin=True), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(explanation.data, X)
    shap.plots.beeswarm(explanation, show=False)
    plt.savefig(tmp_path / "beeswarm.png")
    plt.close("all")
    shap.plots.waterfall(explanation[0], show=False)
    plt.savefig(tmp_path / "waterfall.png")
    plt.close("all")
    assert (tmp_path / "waterfall.png").stat().st_size > 0
    multi = fit("multiclass", X, y).shap_explanation(X)
    assert multi.values.shape == (300, 4, 3)
    assert multi.base_values.shape == (300, 3)
    assert multi.feature_names == ["f0", "f1", "f2", "f3"]


def test_errors():
    X, y, _ = make_data(16)
    model = fit("regression", X, y)
    booster = model.get_booster()
    with pytest.raises(ValueError, match="features"):
        booster.predict(X[:, :3], pred_contribs=True)
    with pytest.raises(ValueError, match="pred_contribs, pred_interactions"):
        booster.predict(X, pred_contribs=True, pred_interactions=True)
    with pytest.raises(ValueError, match="iteration_range"):
        booster.predict(X, pred_contribs=True, iteration_range=(0, 99))
    arrays = [np.concatenate([getattr(t, name) for t in booster.trees])
              for name in ("left_child", "right_child", "feature", "threshold",
                           "default_left", "value", "cover")]
    starts = np.cumsum([0] + [t.n_nodes for t in booster.trees])
    groups = np.zeros(len(booster.trees), np.int32)
    arrays[6] = arrays[6].copy()
    arrays[6][0] = -1.0
    with pytest.raises(ValueError, match="non-negative"):
        ShapForest(*arrays, starts, groups, X.shape[1], 1)
    arrays[6][0] = 1.0
    arrays[0] = arrays[0].copy()
    arrays[0][0] = 10 ** 6        # a child outside the tree
    with pytest.raises(ValueError):
        ShapForest(*arrays, starts, groups, X.shape[1], 1)


def test_unbound_booster_takes_arrays():
    import pickle

    pd = pytest.importorskip("pandas")
    X, y, _ = make_data(17)
    model = fit("regression", X, y)
    expected = model.get_booster().predict(X, pred_contribs=True)
    alone = pickle.loads(pickle.dumps(model.get_booster()))
    np.testing.assert_array_equal(alone.predict(X, pred_contribs=True),
                                  expected)
    with pytest.raises(TypeError, match="get_booster"):
        alone.predict(pd.DataFrame(X), pred_contribs=True)
    # the estimator, pickled, binds its booster again
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(
        again.get_booster().predict(pd.DataFrame(X), pred_contribs=True),
        expected)


def test_features_kept_apart_do_not_interact():
    """With interaction_constraints no path holds features of two different
    sets, so their interaction values are exactly 0 (and the others are
    not)."""
    X, y, _ = make_data(18, n=800, d=4)
    model = BoostRegressor(n_estimators=20, max_depth=4, n_jobs=1,
                           interaction_constraints=[[0, 1], [2, 3]]).fit(X, y)
    inter = model.predict_contributions(X, interactions=True)
    for i, j in [(0, 2), (0, 3), (1, 2), (1, 3)]:
        assert np.all(inter[:, i, j] == 0) and np.all(inter[:, j, i] == 0)
    assert np.abs(inter[:, 2, 3]).max() > 0
    np.testing.assert_allclose(inter.sum(axis=2),
                               model.predict_contributions(X), rtol=0,
                               atol=1e-10)
