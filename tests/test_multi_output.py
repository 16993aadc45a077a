"""Multi-output regression and multi-label classification (a 2-D y).

Oracles: scikit-learn's ``MultiOutputRegressor`` / ``MultiOutputClassifier``
of single-target skboost models (without sampling, one tree per target
and round is exactly that), XGBoost's exact method on the same data (the
same trees to float32 rounding), and metrics recomputed by hand.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_multilabel_classification
from sklearn.multioutput import MultiOutputClassifier, MultiOutputRegressor
from sklearn.utils import get_tags

from skboost import (BoostClassifier, BoostRanker, BoostRegressor,
                     BoostRFRegressor)


def _regression_data(n=400, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.05] = np.nan
    Y = np.column_stack([
        np.sin(2 * np.nan_to_num(X[:, 0])) + np.nan_to_num(X[:, 1]),
        np.nan_to_num(X[:, 2] * X[:, 3]) + 0.1 * rng.normal(size=n),
        np.nan_to_num(X[:, 4]) - 0.5 * np.nan_to_num(X[:, 5])])
    return X, Y


def _multilabel_data():
    X, Y = make_multilabel_classification(n_samples=300, n_features=8,
                                          n_classes=4, random_state=0)
    return X, Y


@pytest.mark.parametrize("tree_method", ["hist", "approx", "exact"])
@pytest.mark.parametrize("sparse", [False, True])
def test_one_tree_per_target_is_multioutput_regressor(tree_method, sparse):
    """Without sampling, the targets' models are independent single-target
    fits: the predictions equal MultiOutputRegressor's bit for bit."""
    X, Y = _regression_data()
    if sparse:
        X = sp.csr_matrix(np.nan_to_num(X))
    weight = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    params = dict(n_estimators=8, max_depth=4, tree_method=tree_method)
    model = BoostRegressor(**params).fit(X, Y, sample_weight=weight)
    oracle = MultiOutputRegressor(BoostRegressor(**params)).fit(
        X, Y, sample_weight=weight)
    assert model.predict(X).shape == Y.shape
    np.testing.assert_array_equal(model.predict(X), oracle.predict(X))
    assert len(model.booster_.trees) == 8 * Y.shape[1]


@pytest.mark.parametrize("objective", ["reg:absoluteerror", "count:poisson",
                                       "reg:pseudohubererror"])
def test_other_objectives_per_target(objective):
    """Any single-output regression objective applies per target (leaf
    re-fits of the absolute error included)."""
    X, Y = _regression_data()
    Y = np.abs(Y) if objective == "count:poisson" else Y
    params = dict(n_estimators=5, max_depth=3, objective=objective)
    model = BoostRegressor(**params).fit(X, Y)
    oracle = MultiOutputRegressor(BoostRegressor(**params)).fit(X, Y)
    np.testing.assert_array_equal(model.predict(X), oracle.predict(X))


def test_multilabel_is_one_binary_model_per_label():
    X, Y = _multilabel_data()
    params = dict(n_estimators=10, max_depth=3)
    model = BoostClassifier(**params).fit(X, Y)
    oracle = MultiOutputClassifier(BoostClassifier(**params)).fit(X, Y)
    proba = np.column_stack([p[:, 1] for p in oracle.predict_proba(X)])
    np.testing.assert_array_equal(model.predict_proba(X), proba)
    np.testing.assert_array_equal(model.predict(X), oracle.predict(X))
    margins = np.column_stack([e.decision_function(X)
                               for e in oracle.estimators_])
    np.testing.assert_array_equal(model.decision_function(X), margins)
    np.testing.assert_array_equal(model.classes_, np.arange(Y.shape[1]))
    assert model.predict(X).dtype == np.int64


def test_matches_xgboost_exact():
    """XGBoost trains a 2-D y the same way (one tree per target and round,
    base score per target): same margins to float32 rounding."""
    xgboost = pytest.importorskip("xgboost")
    X, Y = _regression_data(n=500, seed=3)
    X = np.nan_to_num(X)  # no ties in the missing-value conventions
    params = dict(n_estimators=10, max_depth=4, tree_method="exact")
    ours = BoostRegressor(**params).fit(X, Y)
    theirs = xgboost.XGBRegressor(**params).fit(X, Y)
    np.testing.assert_allclose(ours.booster_.base_margin, theirs.intercept_,
                               rtol=1e-6)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-5)
    labels = (Y > 0).astype(int)
    ours = BoostClassifier(**params).fit(X, labels)
    theirs = xgboost.XGBClassifier(**params).fit(X, labels)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X),
                               atol=1e-5)


def test_tags():
    assert get_tags(BoostRegressor()).target_tags.multi_output
    tags = get_tags(BoostClassifier())
    assert tags.target_tags.multi_output and tags.classifier_tags.multi_label
    assert not get_tags(BoostRanker()).target_tags.multi_output


@pytest.mark.parametrize("tree_method", ["hist", "exact"])
def test_save_load_pickle(tmp_path, tree_method):
    import pickle

    X, Y = _regression_data()
    reg = BoostRegressor(n_estimators=4, tree_method=tree_method).fit(X, Y)
    Xc, Yc = _multilabel_data()
    clf = BoostClassifier(n_estimators=4, tree_method=tree_method).fit(Xc, Yc)
    for model, data in ((reg, X), (clf, Xc)):
        path = tmp_path / "model.json"
        model.save_model(path)
        loaded = type(model).load(path)
        assert loaded.booster_.n_targets == model.booster_.n_targets > 1
        np.testing.assert_array_equal(loaded.predict(data), model.predict(data))
        again = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(again.predict(data), model.predict(data))
    np.testing.assert_array_equal(loaded.predict_proba(Xc),
                                  clf.predict_proba(Xc))


def test_single_output_files_have_no_new_entries(tmp_path):
    X, Y = _regression_data()
    BoostRegressor(n_estimators=2).fit(X, Y[:, 0]).save_model(
        tmp_path / "m.json")
    booster = json.loads((tmp_path / "m.json").read_text())["model"]["booster"]
    assert "n_targets" not in booster and "num_parallel_tree" not in booster


def test_corrupted_target_count_is_rejected(tmp_path):
    X, Y = _regression_data()
    BoostRegressor(n_estimators=2).fit(X, Y).save_model(tmp_path / "m.json")
    data = json.loads((tmp_path / "m.json").read_text())
    data.pop("checksum")
    for bad in (2, 0, "3", 7):
        data["model"]["booster"]["n_targets"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(data))
        with pytest.raises(ValueError):
            BoostRegressor.load(tmp_path / "bad.json")


def test_eval_set_metric_over_all_targets():
    """The eval metric of a multi-target model is over every (row, target)
    pair, as XGBoost's."""
    X, Y = _regression_data()
    model = BoostRegressor(n_estimators=5).fit(
        X[:300], Y[:300], eval_set=[(X[300:], Y[300:])])
    rmse = model.evals_result_["validation_0"]["rmse"][-1]
    want = np.sqrt(np.mean((model.predict(X[300:]) - Y[300:]) ** 2))
    assert rmse == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="shape"):
        BoostRegressor(n_estimators=2).fit(X, Y, eval_set=[(X, Y[:, 0])])


def test_early_stopping_holdout_with_2d_targets():
    X, Y = _multilabel_data()
    model = BoostClassifier(n_estimators=200, early_stopping_rounds=3,
                            random_state=0).fit(X, Y)
    assert model.best_iteration < 199
    assert model.predict(X).shape == Y.shape


def test_column_vector_is_single_target():
    X, Y = _regression_data()
    with pytest.warns(Warning, match="column-vector"):
        model = BoostRegressor(n_estimators=3).fit(X, Y[:, :1])
    single = BoostRegressor(n_estimators=3).fit(X, Y[:, 0])
    np.testing.assert_array_equal(model.predict(X), single.predict(X))


def test_bad_targets_raise_clear_errors():
    X, Y = _regression_data()
    multiclass = np.column_stack([np.arange(X.shape[0]) % 3,
                                  np.arange(X.shape[0]) % 2])
    with pytest.raises(ValueError, match="multi-label"):
        BoostClassifier(n_estimators=2).fit(X, multiclass)
    labels = (Y > 0).astype(int)
    with pytest.raises(ValueError, match="binary"):
        BoostClassifier(n_estimators=2, objective="multi:softprob").fit(
            X, labels)
    with pytest.raises(ValueError, match="scale_pos_weight"):
        BoostClassifier(n_estimators=2, scale_pos_weight=2.0).fit(X, labels)
    with pytest.raises(ValueError, match="one quantile"):
        BoostRegressor(objective="reg:quantileerror",
                       quantile_alpha=[0.2, 0.8]).fit(X, Y)
    reg = BoostRegressor(n_estimators=2, warm_start=True).fit(X, Y)
    reg.set_params(n_estimators=4)
    with pytest.raises(ValueError, match="targets"):
        reg.fit(X, Y[:, :2])


def test_warm_start_adds_rounds_per_target():
    X, Y = _regression_data()
    model = BoostRegressor(n_estimators=3, warm_start=True).fit(X, Y)
    model.set_params(n_estimators=6).fit(X, Y)
    full = BoostRegressor(n_estimators=6).fit(X, Y)
    np.testing.assert_array_equal(model.predict(X), full.predict(X))


def test_contributions_sum_to_margins_and_importances():
    X, Y = _regression_data()
    model = BoostRegressor(n_estimators=5, max_depth=3).fit(X, Y)
    contribs = model.get_booster().predict(X, pred_contribs=True)
    assert contribs.shape == (X.shape[0], Y.shape[1], X.shape[1] + 1)
    np.testing.assert_allclose(contribs.sum(axis=2),
                               model.predict(X, output_margin=True),
                               atol=1e-9)
    importances = model.feature_importances_
    assert importances.shape == (X.shape[1],)
    assert importances.sum() == pytest.approx(1.0)


def test_callable_objective_per_target():
    """A callable objective sees the (n, n_targets) labels and margins."""
    X, Y = _regression_data()

    def squared(y_true, y_pred):
        assert y_true.shape == y_pred.shape == Y.shape
        return y_pred - y_true, np.ones_like(y_pred)

    model = BoostRegressor(n_estimators=4, objective=squared,
                           base_score=0.0).fit(X, Y)
    named = BoostRegressor(n_estimators=4, base_score=0.0).fit(X, Y)
    np.testing.assert_allclose(model.predict(X), named.predict(X), atol=1e-6)


def test_export_multi_target_regressor():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("skl2onnx")
    import onnxruntime as ort

    from skboost.onnx import to_onnx

    X, Y = _regression_data()
    model = BoostRegressor(n_estimators=5).fit(X, Y)
    session = ort.InferenceSession(to_onnx(model, X).SerializeToString())
    got = session.run(None, {session.get_inputs()[0].name: X})[0]
    np.testing.assert_allclose(got, model.predict(X), rtol=1e-5, atol=1e-5)


def test_forest_with_2d_targets():
    X, Y = _regression_data()
    forest = BoostRFRegressor(n_estimators=6, random_state=0).fit(X, Y)
    assert forest.predict(X).shape == Y.shape
    assert len(forest.booster_.trees) == 6 * Y.shape[1]
    assert clone(forest).get_params() == forest.get_params()


@pytest.mark.parametrize("strategy", ["one_output_per_tree",
                                      "multi_output_tree"])
def test_booster_files_and_continued_training(tmp_path, strategy):
    """The booster's own .json/.ubj files hold the layout; 4 rounds
    continued by 4 are the 8-round model; a model of other targets can not
    be continued."""
    from skboost._model.booster import Booster

    X, Y = _regression_data()
    X = np.nan_to_num(X)
    model = BoostRegressor(n_estimators=4, multi_strategy=strategy).fit(X, Y)
    for suffix in ("json", "ubj"):
        model.get_booster().save_model(tmp_path / f"b.{suffix}")
        booster = Booster(model_file=tmp_path / f"b.{suffix}")
        np.testing.assert_array_equal(booster.predict(X), model.predict(X))
    more = BoostRegressor(n_estimators=4, multi_strategy=strategy).fit(
        X, Y, xgb_model=model)
    full = BoostRegressor(n_estimators=8, multi_strategy=strategy).fit(X, Y)
    np.testing.assert_array_equal(more.predict(X), full.predict(X))
    with pytest.raises(ValueError, match="targets"):
        BoostRegressor(n_estimators=2, multi_strategy=strategy).fit(
            X, Y[:, :2], xgb_model=model)
    np.testing.assert_allclose(model.intercept_, Y.mean(axis=0))
