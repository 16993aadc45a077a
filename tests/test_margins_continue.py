"""Base margins, continued training (``xgb_model``/``init_model``),
``class_weight``, ``intercept_``, ``n_estimators_`` and Generator seeds.

Oracles: XGBoost's exact method on the same data (base margins: the same
trees from the same starting margins), a single longer fit (8 + 8 rounds
== 16 rounds bit for bit), the fit given the weights by hand (class_weight),
and closed forms (the intercept of squared error is the mean, of logistic
the base rate).
"""

import numpy as np
import pytest
from sklearn.utils.class_weight import compute_sample_weight

from skboost import BoostClassifier, BoostRanker, BoostRegressor

ATOL = 1e-5  # float32 gradients summed over a few trees (as test_compare_xgboost)


def continuous_data(seed=0, n=400, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    signal = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    return X, signal + 0.3 * rng.normal(size=n), rng


# ----------------------------------------------------------- base margins

@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "multi:softprob"])
def test_base_margin_model_equals_xgboost(objective):
    """Exact method, same margins per row (per class): the same trees, so
    the margins with and without base_margin agree with XGBoost's."""
    xgb = pytest.importorskip("xgboost")
    X, signal, rng = continuous_data()
    n = X.shape[0]
    if objective == "reg:squarederror":
        y, margin = signal, rng.normal(size=n)
        Ours, Theirs = BoostRegressor, xgb.XGBRegressor
    elif objective == "binary:logistic":
        y, margin = (signal > 0.2).astype(int), rng.normal(size=n)
        Ours, Theirs = BoostClassifier, xgb.XGBClassifier
    else:
        y = np.digitize(signal, [-0.5, 0.6])
        margin = rng.normal(size=(n, 3))
        Ours, Theirs = BoostClassifier, xgb.XGBClassifier
    params = dict(n_estimators=6, max_depth=3, tree_method="exact", n_jobs=1,
                  objective=objective)
    X_eval, m_eval = X[:100], margin[:100]
    ours = Ours(**params).fit(X, y, base_margin=margin,
                              eval_set=[(X_eval, y[:100])],
                              base_margin_eval_set=[m_eval])
    theirs = Theirs(**params).fit(X, y, base_margin=margin,
                                  eval_set=[(X_eval, y[:100])],
                                  base_margin_eval_set=[m_eval], verbose=False)
    with_margin = ours.predict(X, output_margin=True, base_margin=margin)
    np.testing.assert_allclose(
        with_margin, theirs.predict(X, output_margin=True, base_margin=margin),
        atol=ATOL)
    if objective != "reg:squarederror":
        np.testing.assert_allclose(
            ours.predict_proba(X, base_margin=margin),
            theirs.predict_proba(X, base_margin=margin), atol=ATOL)
    # the eval log starts from the eval margins as well
    (name,) = ours.evals_result_["validation_0"]
    np.testing.assert_allclose(ours.evals_result_["validation_0"][name],
                               theirs.evals_result()["validation_0"][name],
                               rtol=1e-5)
    # without a margin: trees + intercept (both estimate it from y alone)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ours.predict(X, output_margin=True),
                               theirs.predict(X, output_margin=True),
                               atol=ATOL)


def test_base_margin_is_where_boosting_starts():
    """A zero-round-like check: with learning_rate tiny, the predictions
    are the given margins; and a margin shifts a regressor's model exactly
    as a shifted target would (squared error: residuals are the same)."""
    X, y, rng = continuous_data(1)
    shift = rng.normal(size=len(y))
    a = BoostRegressor(n_estimators=5, max_depth=3, base_score=0.0).fit(
        X, y, base_margin=shift)
    b = BoostRegressor(n_estimators=5, max_depth=3, base_score=0.0).fit(
        X, y - shift)
    np.testing.assert_allclose(a.predict(X, base_margin=shift),
                               b.predict(X) + shift, atol=1e-6)


def test_init_score_is_base_margin():
    X, y, rng = continuous_data(2)
    margin = rng.normal(size=len(y))
    a = BoostRegressor(n_estimators=4).fit(X, y, base_margin=margin)
    b = BoostRegressor(n_estimators=4).fit(X, y, init_score=margin)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    with pytest.raises(TypeError, match="not both"):
        BoostRegressor(n_estimators=1).fit(X, y, base_margin=margin,
                                           init_score=margin)


def test_base_margin_shapes_are_checked():
    X, y, _ = continuous_data(3)
    labels = np.digitize(y, [-0.5, 0.5])
    with pytest.raises(ValueError, match=r"shape \(400, 3\)"):
        BoostClassifier(n_estimators=1).fit(X, labels,
                                            base_margin=np.zeros(400))
    clf = BoostClassifier(n_estimators=2).fit(X, labels,
                                              base_margin=np.zeros((400, 3)))
    # the flattened row-major form is XGBoost's too
    np.testing.assert_array_equal(
        clf.predict_proba(X, base_margin=np.ones((400, 3))),
        clf.predict_proba(X, base_margin=np.ones(1200)))
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(X, base_margin=np.full((400, 3), np.nan))
    with pytest.raises(ValueError, match="needs an eval_set"):
        BoostRegressor(n_estimators=1).fit(X, y, base_margin_eval_set=[y])


def test_base_margin_with_early_stopping_holdout():
    """The internal hold-out takes the margins of its rows: the same as
    shifting the target (squared error)."""
    X, y, rng = continuous_data(4)
    shift = rng.normal(size=len(y))
    params = dict(n_estimators=30, early_stopping_rounds=3, random_state=0,
                  base_score=0.0)
    a = BoostRegressor(**params).fit(X, y, base_margin=shift)
    b = BoostRegressor(**params).fit(X, y - shift)
    assert a.best_iteration == b.best_iteration
    np.testing.assert_allclose(a.evals_result_["validation"]["rmse"],
                               b.evals_result_["validation"]["rmse"],
                               rtol=1e-6)


def test_ranker_base_margin_follows_its_rows():
    """Rows are sorted by query inside: the margins must move with them
    (interleaved queries give the model of grouped ones)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=300)), 0, 3)
    qid = rng.integers(0, 10, 300)
    margin = rng.normal(size=300)
    order = np.argsort(qid, kind="stable")
    a = BoostRanker(n_estimators=4).fit(X, y, qid=qid, base_margin=margin)
    b = BoostRanker(n_estimators=4).fit(X[order], y[order], qid=qid[order],
                                        base_margin=margin[order])
    np.testing.assert_array_equal(a.predict(X, base_margin=margin),
                                  b.predict(X, base_margin=margin))


# ----------------------------------------------------- continued training

@pytest.mark.parametrize("method", ["exact", "hist", "approx"])
@pytest.mark.parametrize("kind", ["estimator", "booster", "path", "init_model"])
def test_eight_plus_eight_rounds_is_sixteen(method, kind, tmp_path):
    X, y, _ = continuous_data(6)
    labels = np.digitize(y, [-0.5, 0.5])
    params = dict(tree_method=method, max_depth=3)
    first = BoostClassifier(n_estimators=8, **params).fit(X, labels)
    model = {"estimator": first, "booster": first.get_booster(),
             "init_model": first}.get(kind)
    if kind == "path":
        model = tmp_path / "first.json"
        first.save_model(model)
    second = BoostClassifier(n_estimators=8, **params)
    if kind == "init_model":
        second.fit(X, labels, init_model=model)
    else:
        second.fit(X, labels, xgb_model=model)
    whole = BoostClassifier(n_estimators=16, **params).fit(X, labels)
    assert second.n_estimators_ == 16
    np.testing.assert_array_equal(second.predict_proba(X),
                                  whole.predict_proba(X))
    for a, b in zip(second.booster_.trees, whole.booster_.trees):
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_array_equal(a.value, b.value)
    # the given model is left as it was
    assert first.n_estimators_ == 8


def test_continued_training_matches_xgboost():
    """XGBoost's own xgb_model on the same data: 5 + 5 rounds."""
    xgb = pytest.importorskip("xgboost")
    X, y, _ = continuous_data(7)
    params = dict(n_estimators=5, max_depth=3, tree_method="exact", n_jobs=1,
                  base_score=0.3)
    ours = BoostRegressor(**params).fit(X, y)
    ours = BoostRegressor(**params).fit(X, y, xgb_model=ours)
    theirs = xgb.XGBRegressor(**params).fit(X, y)
    theirs = xgb.XGBRegressor(**params).fit(X, y,
                                            xgb_model=theirs.get_booster())
    assert theirs.get_booster().num_boosted_rounds() == ours.n_estimators_
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=ATOL)


@pytest.mark.parametrize("kind", ["estimator", "path"])
def test_continued_training_across_category_orders(kind, tmp_path):
    """A category column holding the same categories in another order
    continues the model (categories matched by value, as at predict): the
    oracle is the same continuation on the first frame's order."""
    pd = pytest.importorskip("pandas")
    X, y, rng = continuous_data(9)
    colour = np.array(["red", "green", "blue", "grey"])[
        rng.integers(0, 4, X.shape[0])]
    y = y + (colour == "blue") - (colour == "red")
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["colour"] = pd.Categorical(colour,
                                     categories=["red", "green", "blue",
                                                 "grey"])
    shuffled = frame.copy()
    shuffled["colour"] = pd.Categorical(colour, categories=[
        "grey", "blue", "red", "green"])
    params = dict(n_estimators=4, max_depth=3, max_cat_to_onehot=1)
    first = BoostRegressor(**params).fit(frame, y)
    model = first
    if kind == "path":
        model = tmp_path / "first.json"
        first.save_model(model)
    reordered = BoostRegressor(**params).fit(shuffled, y, xgb_model=model)
    same_order = BoostRegressor(**params).fit(frame, y, xgb_model=first)
    np.testing.assert_array_equal(reordered.predict(shuffled),
                                  same_order.predict(frame))
    np.testing.assert_array_equal(reordered.predict(frame),
                                  same_order.predict(frame))
    assert list(reordered.categories_["colour"]) == ["red", "green", "blue",
                                                     "grey"]
    other = shuffled.copy()
    other["colour"] = pd.Categorical(np.where(colour == "grey", "pink",
                                              colour))
    with pytest.raises(ValueError, match="categories differ"):
        BoostRegressor(**params).fit(other, y, xgb_model=first)


def test_continued_training_mismatches_are_value_errors(tmp_path):
    X, y, _ = continuous_data(8)
    labels = np.digitize(y, [-0.5, 0.5])
    clf = BoostClassifier(n_estimators=3).fit(X, labels)
    with pytest.raises(ValueError, match="features"):
        BoostClassifier(n_estimators=2).fit(X[:, :4], labels, xgb_model=clf)
    with pytest.raises(ValueError, match="classes"):
        BoostClassifier(n_estimators=2).fit(X, labels % 2 + 5, xgb_model=clf)
    with pytest.raises(ValueError, match="objective"):
        BoostClassifier(n_estimators=2, objective="multi:softmax").fit(
            X, labels, xgb_model=clf)
    reg = BoostRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="objective"):
        BoostRegressor(n_estimators=2, objective="reg:pseudohubererror").fit(
            X, y, xgb_model=reg)
    path = tmp_path / "reg.json"
    reg.save_model(path)
    with pytest.raises(ValueError, match="BoostRegressor"):
        BoostClassifier(n_estimators=2).fit(X, labels, xgb_model=path)
    with pytest.raises(ValueError, match="no model file"):
        BoostRegressor(n_estimators=2).fit(X, y, xgb_model=tmp_path / "no")
    with pytest.raises(TypeError, match="xgb_model"):
        BoostRegressor(n_estimators=2).fit(X, y, xgb_model=3)


def test_continued_training_adds_to_base_margins():
    """A model continued on margins: 4 + 4 rounds from base_margin are the
    8-round model from them."""
    X, y, rng = continuous_data(9)
    margin = rng.normal(size=len(y))
    first = BoostRegressor(n_estimators=4).fit(X, y, base_margin=margin)
    second = BoostRegressor(n_estimators=4).fit(X, y, base_margin=margin,
                                                xgb_model=first)
    whole = BoostRegressor(n_estimators=8).fit(X, y, base_margin=margin)
    np.testing.assert_array_equal(second.predict(X, base_margin=margin),
                                  whole.predict(X, base_margin=margin))


# ----------------------------------------------- class_weight, attributes

@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 3.0, 2: 0.5}])
def test_class_weight_is_sample_weight(class_weight):
    X, y, rng = continuous_data(10)
    labels = np.digitize(y, [-0.5, 1.0])
    sample_weight = rng.uniform(0.5, 2.0, size=len(y))
    a = BoostClassifier(n_estimators=5, class_weight=class_weight).fit(
        X, labels, sample_weight=sample_weight)
    # scikit-learn's definition, computed by hand for "balanced"
    if class_weight == "balanced":
        counts = np.bincount(labels)
        per_class = len(labels) / (len(counts) * counts)
    else:
        per_class = np.array([class_weight[k] for k in range(3)])
    b = BoostClassifier(n_estimators=5).fit(
        X, labels, sample_weight=sample_weight * per_class[labels])
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_allclose(per_class[labels],
                               compute_sample_weight(class_weight, labels))


def test_class_weight_with_unknown_class_is_an_error():
    X, y, _ = continuous_data(11)
    with pytest.raises(ValueError, match="class_weight"):
        BoostClassifier(n_estimators=1, class_weight={7: 1.0}).fit(X, y > 0)


def test_intercept_closed_forms():
    X, y, _ = continuous_data(12)
    reg = BoostRegressor(n_estimators=1).fit(X, y)
    np.testing.assert_allclose(reg.intercept_, [np.mean(y)], rtol=1e-6)
    labels = (y > 0.3).astype(int)
    clf = BoostClassifier(n_estimators=1).fit(X, labels)
    np.testing.assert_allclose(clf.intercept_, [labels.mean()], rtol=1e-6)
    fixed = BoostClassifier(n_estimators=1, base_score=0.25).fit(X, labels)
    np.testing.assert_allclose(fixed.intercept_, [0.25])


def test_n_estimators_and_best_iteration_are_consistent():
    X, y, _ = continuous_data(13)
    reg = BoostRegressor(n_estimators=500, learning_rate=0.5,
                         early_stopping_rounds=4).fit(
        X[:300], y[:300], eval_set=[(X[300:], y[300:])])
    assert reg.n_estimators_ < 500
    assert reg.n_estimators_ == reg.best_iteration + 1 + 4
    log = reg.evals_result_["validation_0"]["rmse"]
    assert len(log) == reg.n_estimators_
    assert reg.best_iteration == int(np.argmin(log))


def test_generator_random_state():
    """A Generator is accepted; two fits from equal Generators agree and a
    reused Generator draws new samples (as a RandomState instance does)."""
    X, y, _ = continuous_data(14)
    params = dict(n_estimators=3, subsample=0.5)
    a = BoostRegressor(**params, random_state=np.random.default_rng(1)).fit(X, y)
    b = BoostRegressor(**params, random_state=np.random.default_rng(1)).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    shared = BoostRegressor(**params, random_state=np.random.default_rng(1))
    first = shared.fit(X, y).predict(X)
    assert not np.array_equal(first, shared.fit(X, y).predict(X))
