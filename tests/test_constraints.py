"""Monotone and interaction constraints and weighted feature sampling
(``tree/constraints.py``, the growth driver, ``_gain.pxd``).

Oracles: the sign of every difference of predictions along a sweep of the
constrained feature (monotone), equal differences for every row
(additivity of an isolated feature), the trees' own paths (interactions),
XGBoost's exact method, which grows the same trees as skboost's (with and
without constraints, on data without missing values), the closed form of
the bounded gain, and frequencies of the weighted column draws.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import mean_squared_error, roc_auc_score

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost.tree._column_sampler import ColumnSampler
from skboost.tree._gain import py_bounded_split_loss_reduction, py_leaf_weight
from skboost.tree.constraints import (parse_interactions, parse_monotone)

METHODS = [dict(tree_method="exact"), dict(tree_method="hist"),
           dict(tree_method="approx"),
           dict(tree_method="approx", approx_proposal="local")]
METHOD_IDS = ["exact", "hist", "approx-global", "approx-local"]
SWEEP = np.concatenate([[-1e30, -50.0], np.linspace(-3.05, 3.05, 62),
                        [50.0, 1e30]])   # the range, beyond it; no 0.0


def non_monotone_data(seed, n=1500, missing=0.0):
    """Five features; the target rises and falls in feature 0, falls and
    rises in feature 1, and depends on feature 2 with no constant sign."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (np.sin(2.5 * X[:, 0]) + X[:, 0] - 0.5 * X[:, 1] ** 2 - X[:, 1]
         + np.cos(2 * X[:, 2]) + X[:, 3] * X[:, 4]
         + 0.3 * rng.normal(size=n))
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y


def sweep_differences(predict, X_rows, feature):
    """For each row, the predictions along SWEEP in ``feature``, differenced
    (rows x len(SWEEP)-1)."""
    n = X_rows.shape[0]
    Z = np.repeat(X_rows, SWEEP.shape[0], axis=0)
    Z[:, feature] = np.tile(SWEEP, n)
    return np.diff(predict(Z).reshape(n, SWEEP.shape[0]), axis=1)


def assert_monotone(predict, X_rows, feature, direction):
    diffs = sweep_differences(predict, X_rows, feature) * direction
    assert diffs.min() >= 0.0, (feature, diffs.min())
    return diffs


def assert_not_monotone(predict, X_rows, feature):
    diffs = sweep_differences(predict, X_rows, feature)
    assert diffs.min() < 0 < diffs.max()


# ---------------------------------------------------------------- monotone


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_regressor_is_monotone_where_constrained(method, missing,
                                                 grow_policy):
    X, y = non_monotone_data(0, missing=missing)
    est = BoostRegressor(n_estimators=25, max_depth=5, grow_policy=grow_policy,
                         max_leaves=24 if grow_policy == "lossguide" else 0,
                         monotone_constraints=(1, -1, 0, 0, 0), **method)
    est.fit(X, y)
    rows = X[:60]   # with missing values in the other features too
    assert_monotone(est.predict, rows, 0, +1)
    assert_monotone(est.predict, rows, 1, -1)
    assert_not_monotone(est.predict, rows, 2)
    # the constraint was needed: unconstrained, feature 0 is not monotone
    free = BoostRegressor(n_estimators=25, max_depth=5, **method).fit(X, y)
    assert_not_monotone(free.predict, rows, 0)


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
@pytest.mark.parametrize("sparse_absent", ["missing", "zero"])
@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_monotone_on_sparse_input(method, sparse_absent, grow_policy):
    X, y = non_monotone_data(1)
    X[np.random.default_rng(1).random(X.shape) < 0.4] = 0.0
    est = BoostRegressor(n_estimators=20, max_depth=5,
                         sparse_absent=sparse_absent, grow_policy=grow_policy,
                         max_leaves=20 if grow_policy == "lossguide" else 0,
                         monotone_constraints="(-1, 1, 0, 0, 0)", **method)
    if (sparse_absent == "zero"
            and method.get("approx_proposal") == "local"):
        # a combination refused by design: the error names both settings
        with pytest.raises(ValueError, match="sparse_absent"):
            est.fit(sp.csr_matrix(X), y)
        return
    est.fit(sp.csr_matrix(X), y)

    def predict(Z):
        return est.predict(sp.csr_matrix(Z))

    assert_monotone(predict, X[:40], 0, -1)
    assert_monotone(predict, X[:40], 1, +1)


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
def test_classifier_probabilities_are_monotone(method):
    X, y = non_monotone_data(2, missing=0.1)
    labels = (y > np.median(y)).astype(int)
    est = BoostClassifier(n_estimators=25, max_depth=4,
                          monotone_constraints=[1, -1, 0, 0, 0], **method)
    est.fit(X, labels)
    rows = X[:60]
    assert_monotone(lambda Z: est.predict_proba(Z)[:, 1], rows, 0, +1)
    assert_monotone(lambda Z: est.predict_proba(Z)[:, 1], rows, 1, -1)


def test_multiclass_margins_are_monotone_in_every_class():
    X, y = non_monotone_data(3)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    est = BoostClassifier(n_estimators=15, max_depth=4,
                          monotone_constraints=(1, 0, 0, 0, 0)).fit(X, labels)
    for k in range(3):
        assert_monotone(
            lambda Z: est.predict(Z, output_margin=True)[:, k], X[:30], 0, 1)


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
def test_monotone_with_categorical_splits_elsewhere(method):
    pd = pytest.importorskip("pandas")
    X, y = non_monotone_data(4)
    rng = np.random.default_rng(4)
    city = rng.integers(0, 7, size=X.shape[0])
    y = y + np.array([0.0, 2.0, -1.0, 0.5, 3.0, -2.0, 1.0])[city] * X[:, 0]
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["city"] = pd.Categorical(city)
    est = BoostRegressor(n_estimators=20, max_depth=5,
                         monotone_constraints={"a": 1}, **method)
    est.fit(frame, y)
    assert any(t.has_categorical_splits for t in est.booster_.trees)

    def predict(Z):
        f = pd.DataFrame(Z[:, :5], columns=list("abcde"))
        f["city"] = pd.Categorical(Z[:, 5].astype(int), categories=range(7))
        return est.predict(f)

    rows = np.column_stack([X[:40], city[:40]])
    assert_monotone(predict, rows, 0, +1)


def test_ranker_scores_are_monotone():
    X, y = non_monotone_data(5, n=1200)
    qid = np.repeat(np.arange(60), 20)
    relevance = np.clip(np.digitize(y, np.quantile(y, [0.5, 0.8, 0.95])), 0, 3)
    est = BoostRanker(n_estimators=15, max_depth=4,
                      monotone_constraints=(1, 0, 0, 0, 0))
    est.fit(X, relevance, qid=qid)
    assert_monotone(est.predict, X[:30], 0, +1)


@pytest.mark.parametrize("max_delta_step, reg_alpha",
                         [(0.0, 0.0), (0.3, 0.0), (0.0, 2.0)])
def test_bounded_gain_matches_its_closed_form(max_delta_step, reg_alpha):
    """``_gain.pxd``'s bounded gain against the formula written out:
    weights clipped into [lower, upper], scores from the clipped weights,
    -inf for a split that breaks the order."""
    rng = np.random.default_rng(0)
    reg = dict(reg_lambda=1.5, reg_alpha=reg_alpha,
               max_delta_step=max_delta_step, min_child_weight=0.5)

    def score(G, H, w):
        return -(2 * G * w + (H + reg["reg_lambda"]) * w * w
                 + 2 * reg_alpha * abs(w))

    for _ in range(300):
        G_l, G_r = rng.normal(scale=3, size=2)
        H_l, H_r = rng.uniform(0.5, 4, size=2)
        lower, upper = np.sort(rng.normal(scale=0.8, size=2))
        direction = int(rng.integers(-1, 2))
        clip = lambda w: min(max(w, lower), upper)  # noqa: E731
        w_l = clip(py_leaf_weight(G_l, H_l, **reg))
        w_r = clip(py_leaf_weight(G_r, H_r, **reg))
        w_p = clip(py_leaf_weight(G_l + G_r, H_l + H_r, **reg))
        want = 0.5 * (score(G_l, H_l, w_l) + score(G_r, H_r, w_r)
                      - score(G_l + G_r, H_l + H_r, w_p))
        if direction * (w_l - w_r) > 0:
            want = -np.inf
        got = py_bounded_split_loss_reduction(G_l, H_l, G_r, H_r, lower,
                                              upper, direction, **reg)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_leaf_values_lie_in_the_bounds_their_splits_set():
    """Structural check of XGBoost's method: under every split on an
    increasing feature, every leaf of the left subtree is at most every
    leaf of the right subtree."""
    X, y = non_monotone_data(6, missing=0.1)
    est = BoostRegressor(n_estimators=10, max_depth=6, tree_method="hist",
                         monotone_constraints=(1, 0, 0, 0, 0)).fit(X, y)
    for tree in est.booster_.trees:
        for node in np.flatnonzero(tree.feature == 0):
            left = _leaf_values(tree, tree.left_child[node])
            right = _leaf_values(tree, tree.right_child[node])
            assert left.max() <= right.min()


def _leaf_values(tree, node):
    if tree.left_child[node] < 0:
        return np.array([tree.value[node]])
    return np.concatenate([_leaf_values(tree, tree.left_child[node]),
                           _leaf_values(tree, tree.right_child[node])])


@pytest.mark.parametrize("seed, missing", [(0, 0.0), (1, 0.0), (2, 0.1),
                                           (3, 0.1)])
@pytest.mark.parametrize("task", ["regression", "binary"])
def test_exact_constrained_trees_equal_xgboosts(seed, missing, task):
    """XGBoost's exact method grows the same trees as skboost's; with the
    same monotone constraints (XGBoost's method), the same constrained
    trees too, with and without missing values (the split of the missing
    values alone considered in both orders)."""
    xgb = pytest.importorskip("xgboost")
    X, y = non_monotone_data(seed, n=2000, missing=missing)
    X = X.astype(np.float32)
    cons = (1, -1, 1, 0, -1)
    params = dict(n_estimators=20, max_depth=5, learning_rate=0.3,
                  tree_method="exact", base_score=0.5,
                  monotone_constraints=cons)
    if task == "binary":
        y = (y > np.median(y)).astype(int)
        ours = BoostClassifier(**params).fit(X, y).predict_proba(X)
        theirs = xgb.XGBClassifier(**params, n_jobs=1).fit(X, y).predict_proba(X)
    else:
        ours = BoostRegressor(**params).fit(X, y).predict(X)
        theirs = xgb.XGBRegressor(**params, n_jobs=1).fit(X, y).predict(X)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)


def _rmse_and_auc(seed, xgb):
    X, y = non_monotone_data(seed, n=4000, missing=0.05)
    X_test, y_test = non_monotone_data(seed + 100, n=4000, missing=0.05)
    # a target truly monotone in features 0 and 1 (and noise)
    def target(X, noisy):
        X = np.nan_to_num(X)
        return np.tanh(X[:, 0]) * 2 - X[:, 1] ** 3 / 4 + noisy / 3

    y, y_test = target(X, y), target(X_test, y_test)
    params = dict(n_estimators=60, max_depth=5, learning_rate=0.1,
                  tree_method="hist", monotone_constraints=(1, -1, 0, 0, 0))
    reg_ours = BoostRegressor(**params).fit(X, y)
    reg_theirs = xgb.XGBRegressor(**params).fit(X, y)
    labels = (y > np.median(y)).astype(int)
    clf_ours = BoostClassifier(**params).fit(X, labels)
    clf_theirs = xgb.XGBClassifier(**params).fit(X, labels)
    labels_test = (y_test > np.median(y)).astype(int)
    return (
        [mean_squared_error(y_test, m.predict(X_test)) ** 0.5
         for m in (reg_ours, reg_theirs)],
        [roc_auc_score(labels_test, m.predict_proba(X_test)[:, 1])
         for m in (clf_ours, clf_theirs)])


def test_constrained_accuracy_no_worse_than_xgboost_hist():
    xgb = pytest.importorskip("xgboost")
    rmse, auc = zip(*[_rmse_and_auc(seed, xgb) for seed in range(3)])
    rmse, auc = np.array(rmse), np.array(auc)
    # mean over seeds, within noise: over 8 seeds the two means were within
    # 1.1% of each other, either way (see the closing note of the issue)
    assert rmse[:, 0].mean() <= rmse[:, 1].mean() * 1.02, rmse
    assert auc[:, 0].mean() >= auc[:, 1].mean() - 0.005, auc


# ------------------------------------------------------------- interaction


def _paths(tree, node=0, path=()):
    """The sets of features on each root-to-leaf path."""
    if tree.left_child[node] < 0:
        return [frozenset(path)]
    path = path + (int(tree.feature[node]),)
    return (_paths(tree, tree.left_child[node], path)
            + _paths(tree, tree.right_child[node], path))


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_isolated_feature_is_additive(method, missing, grow_policy):
    """With [[0, 1], [2], [3, 4]], changing feature 2 moves every row's
    prediction by the same amount, and no path mixes two sets."""
    X, y = non_monotone_data(7, missing=missing)
    y = y + np.nan_to_num(X[:, 2] * X[:, 0])   # an interaction to forbid
    sets = [[0, 1], [2], [3, 4]]
    est = BoostRegressor(n_estimators=25, max_depth=5,
                         grow_policy=grow_policy,
                         max_leaves=20 if grow_policy == "lossguide" else 0,
                         interaction_constraints=sets, **method).fit(X, y)
    rows = X[:80]
    diffs = sweep_differences(est.predict, rows, 2)
    assert np.abs(diffs).max() > 0.01          # feature 2 is used
    np.testing.assert_allclose(diffs, np.broadcast_to(diffs[0], diffs.shape),
                               atol=1e-9)
    allowed = [frozenset(s) for s in sets]
    for tree in est.booster_.trees:
        for path in _paths(tree):
            assert any(path <= s for s in allowed), path


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
def test_one_set_of_every_feature_is_the_unconstrained_model(method):
    X, y = non_monotone_data(8, missing=0.1)
    free = BoostRegressor(n_estimators=10, max_depth=5, **method).fit(X, y)
    one = BoostRegressor(n_estimators=10, max_depth=5,
                         interaction_constraints=[[4, 3, 2, 1, 0]],
                         **method).fit(X, y)
    for a, b in zip(free.booster_.trees, one.booster_.trees):
        for name in ("feature", "threshold", "value", "left_child"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_unlisted_features_are_sets_of_their_own():
    """XGBoost's rule: a feature in no set may split a root and then only
    itself; every path holds one unlisted feature alone, or features of
    one listed set."""
    X, y = non_monotone_data(9)
    est = BoostRegressor(n_estimators=30, max_depth=4,
                         interaction_constraints=[[0, 1]]).fit(X, y)
    paths = {p for tree in est.booster_.trees for p in _paths(tree)}
    assert all(p <= {0, 1} or len(p) == 1 for p in paths), paths
    assert any(len(p) == 1 and p.isdisjoint({0, 1}) for p in paths)


@pytest.mark.parametrize("seed", range(2))
def test_interaction_constrained_trees_equal_xgboosts(seed):
    xgb = pytest.importorskip("xgboost")
    X, y = non_monotone_data(seed, n=2000)
    X = X.astype(np.float32)
    params = dict(n_estimators=20, max_depth=5, tree_method="exact",
                  base_score=0.5)
    ours = BoostRegressor(**params, interaction_constraints=[[0, 1], [3, 4]])
    theirs = xgb.XGBRegressor(**params, n_jobs=1,
                              interaction_constraints="[[0, 1], [3, 4]]")
    np.testing.assert_allclose(ours.fit(X, y).predict(X),
                               theirs.fit(X, y).predict(X), atol=2e-5)


@pytest.mark.parametrize("method", METHODS, ids=METHOD_IDS)
def test_constrained_models_do_not_depend_on_n_jobs(method):
    X, y = non_monotone_data(10, missing=0.1)
    params = dict(n_estimators=8, max_depth=5, colsample_bynode=0.6,
                  random_state=0, monotone_constraints=(1, 0, -1, 0, 0),
                  interaction_constraints=[[0, 1, 2], [3]],
                  feature_weights=[1, 2, 3, 4, 5], **method)
    one = BoostRegressor(n_jobs=1, **params).fit(X, y).predict(X)
    two = BoostRegressor(n_jobs=2, **params).fit(X, y).predict(X)
    np.testing.assert_array_equal(one, two)


# --------------------------------------------------------- feature weights


def test_weighted_draws_follow_the_weights():
    """One feature per draw (a node sample of 1 of 4): its frequency is
    its weight's share."""
    weights = np.array([1.0, 2.0, 0.0, 5.0])
    sampler = ColumnSampler(4, 1.0, 1.0, 0.25, np.random.default_rng(0),
                            feature_weights=weights)
    sampler.start_tree()
    counts = sampler.masks(0, 16000).sum(axis=0)
    np.testing.assert_allclose(counts / 16000, weights / weights.sum(),
                               atol=0.015)
    assert counts[2] == 0


def test_zero_weight_features_are_never_drawn():
    X, y = non_monotone_data(11)
    est = BoostRegressor(n_estimators=20, max_depth=4, colsample_bytree=0.6,
                         feature_weights=[0, 1, 1, 0, 1], random_state=3)
    est.fit(X, y)
    used = {int(f) for t in est.booster_.trees for f in t.feature if f >= 0}
    assert used and used <= {1, 2, 4}


def test_feature_weights_are_deterministic_for_a_random_state():
    X, y = non_monotone_data(12)
    params = dict(n_estimators=10, colsample_bylevel=0.5,
                  feature_weights=[5, 1, 1, 1, 1])
    a = BoostRegressor(random_state=7, **params).fit(X, y).predict(X)
    b = BoostRegressor(random_state=7, **params).fit(X, y).predict(X)
    c = BoostRegressor(random_state=8, **params).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize("value, message", [
    ((1, 0), "has 2 entries; X has 5 features"),
    ((1, 0, 2, 0, 0), r"monotone_constraints\[2\] must be -1, 0 or 1"),
    ((1, 0, 0.5, 0, 0), r"monotone_constraints\[2\] must be -1, 0 or 1"),
    ("(1,x,0)", "is not a tuple of -1, 0 and 1"),
    ("(1,0)", "has 2 entries"),
    ({"a": 1}, "needs X with string column names"),
    (5, "monotone_constraints"),
])
def test_bad_monotone_constraints(value, message):
    X, y = non_monotone_data(0, n=50)
    with pytest.raises(ValueError, match=message):
        BoostRegressor(n_estimators=2, monotone_constraints=value).fit(X, y)


def test_monotone_constraints_by_unknown_name_or_on_a_category():
    pd = pytest.importorskip("pandas")
    X, y = non_monotone_data(0, n=80)
    frame = pd.DataFrame(X, columns=list("abcde"))
    with pytest.raises(ValueError, match="'zz', which is not a column"):
        BoostRegressor(monotone_constraints={"zz": 1}).fit(frame, y)
    with pytest.raises(ValueError, match=r"\['a'\] must be -1, 0 or 1"):
        BoostRegressor(monotone_constraints={"a": 3}).fit(frame, y)
    frame["city"] = pd.Categorical(np.arange(80) % 3)
    with pytest.raises(ValueError, match="categorical feature 'city'"):
        BoostRegressor(monotone_constraints={"city": 1}).fit(frame, y)


@pytest.mark.parametrize("value, message", [
    ([[0, 1], [1, 2]], r"\[0\] and \[1\] both hold feature 1"),
    ([[0, 1], []], r"interaction_constraints\[1\] is empty"),
    ([[0, 0]], "lists a feature twice"),
    ([[0, 7]], "holds feature 7; X has 5 features"),
    ([[0, 1.5]], "not a feature index or name"),
    ([["a", "b"]], "names need X with string column names"),
    ([0, 1], r"interaction_constraints\[0\] must be a list"),
    ("[[0, 1", "is not a list of lists"),
])
def test_bad_interaction_constraints(value, message):
    X, y = non_monotone_data(0, n=50)
    with pytest.raises(ValueError, match=message):
        BoostRegressor(n_estimators=2,
                       interaction_constraints=value).fit(X, y)


@pytest.mark.parametrize("value, message", [
    ([1, 2], r"has shape \(2,\); X has 5 features"),
    ([1, 1, -1, 1, 1], "finite and >= 0"),
    ([1, 1, np.nan, 1, 1], "finite and >= 0"),
    ([0, 0, 0, 0, 0], "must not all be 0"),
    (["a", 1, 1, 1, 1], "array of numbers"),
])
def test_bad_feature_weights(value, message):
    X, y = non_monotone_data(0, n=50)
    with pytest.raises(ValueError, match=message):
        BoostRegressor(n_estimators=2, feature_weights=value).fit(X, y)


def test_names_work_in_both_constraints():
    pd = pytest.importorskip("pandas")
    X, y = non_monotone_data(13)
    frame = pd.DataFrame(X, columns=["age", "income", "zip", "u", "v"])
    by_name = BoostRegressor(
        n_estimators=8, monotone_constraints={"income": -1, "age": 1},
        interaction_constraints=[["age", "income"], ["u", "v"]]).fit(frame, y)
    by_index = BoostRegressor(
        n_estimators=8, monotone_constraints=(1, -1, 0, 0, 0),
        interaction_constraints=[[0, 1], [3, 4]]).fit(X, y)
    np.testing.assert_array_equal(by_name.predict(frame), by_index.predict(X))


def test_parsers_formats():
    assert parse_monotone("[1, -1, 0]", 3).tolist() == [1, -1, 0]
    assert parse_monotone((0, 0, 0), 3) is None
    assert parse_interactions("[[2, 0]]", 4) == ((0, 2), (1,), (3,))


# ------------------------------------------------------------- saved models


def test_saved_model_keeps_the_constraints(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = non_monotone_data(14)
    frame = pd.DataFrame(X, columns=list("abcde"))
    est = BoostRegressor(n_estimators=10, monotone_constraints={"a": 1},
                         interaction_constraints=[["a", "b"], ["c"]],
                         feature_weights=np.array([1.0, 2, 3, 4, 5]),
                         colsample_bynode=0.8, random_state=0).fit(frame, y)
    path = tmp_path / "model.json"
    est.save_model(path)
    loaded = BoostRegressor().load_model(path)
    params = loaded.get_params()
    assert params["monotone_constraints"] == {"a": 1}
    assert params["interaction_constraints"] == [["a", "b"], ["c"]]
    assert list(params["feature_weights"]) == [1.0, 2, 3, 4, 5]
    np.testing.assert_array_equal(loaded.predict(frame), est.predict(frame))
    # the loaded parameters refit the same model
    refit = BoostRegressor(**params).fit(frame, y)
    np.testing.assert_array_equal(refit.predict(frame), est.predict(frame))
