"""Treelite export (skboost.treelite): treelite.gtil's predictions against
skboost's own, for every estimator and objective."""

import numpy as np
import pytest

treelite = pytest.importorskip("treelite")

from _export_cases import (CLASSIFICATION_OBJECTIVES,  # noqa: E402
                           MULTILABEL_OBJECTIVES, REGRESSION_OBJECTIVES,
                           fit_classifier, fit_multilabel, fit_ranker,
                           fit_regressor, make_categorical_data, make_data)

from skboost import BoostRegressor  # noqa: E402
from skboost.treelite import to_treelite  # noqa: E402

TOL = dict(rtol=1e-5, atol=1e-5)


def gtil(model, X):
    """(n_rows, n_targets * n_classes) predictions of Treelite's GTIL."""
    out = treelite.gtil.predict(to_treelite(model), X.astype(np.float64))
    return out.reshape(X.shape[0], -1)


@pytest.mark.parametrize("objective", REGRESSION_OBJECTIVES)
def test_regressor(objective):
    model, X = fit_regressor(objective)
    np.testing.assert_allclose(gtil(model, X),
                               model.predict(X).reshape(X.shape[0], -1),
                               **TOL)


@pytest.mark.parametrize("objective", CLASSIFICATION_OBJECTIVES)
def test_classifier(objective):
    binary = objective.startswith("binary")
    model, X = fit_classifier(objective, ["no", "yes"] if binary
                              else ["a", "b", "c", "d"])
    proba = model.predict_proba(X)
    expected = proba[:, 1:] if binary else proba
    np.testing.assert_allclose(gtil(model, X), expected, **TOL)


@pytest.mark.parametrize("strategy", ["one_output_per_tree",
                                      "multi_output_tree"])
@pytest.mark.parametrize("objective", MULTILABEL_OBJECTIVES)
def test_multilabel_classifier(objective, strategy):
    """One Treelite target per label: predict_proba's (N, n_labels)."""
    model, X = fit_multilabel(objective, multi_strategy=strategy)
    np.testing.assert_allclose(gtil(model, X), model.predict_proba(X), **TOL)


def test_ranker():
    model, X = fit_ranker()
    np.testing.assert_allclose(gtil(model, X)[:, 0], model.predict(X), **TOL)


def test_float32_input():
    model, X = fit_regressor("reg:squarederror")
    out = treelite.gtil.predict(to_treelite(model), X)
    np.testing.assert_allclose(out[:, 0, 0], model.predict(X), **TOL)


def test_early_stopped_model_exports_best_rounds():
    X, score, _ = make_data(1)
    model = BoostRegressor(n_estimators=200, learning_rate=0.5,
                           early_stopping_rounds=3).fit(X, score)
    assert model.best_iteration + 1 < model.booster_.n_rounds
    exported = to_treelite(model)
    assert exported.num_tree == model.best_iteration + 1
    np.testing.assert_allclose(gtil(model, X)[:, 0], model.predict(X), **TOL)


def test_categorical_splits_with_unseen_values():
    X, y, X_test = make_categorical_data(values=np.arange(12) * 3 + 1)
    model = BoostRegressor(n_estimators=30, categorical_features=[5],
                           max_cat_to_onehot=1).fit(X, y)
    assert any(t.has_categorical_splits for t in model.booster_.trees)
    integral = np.isnan(X_test[:, 5]) | (X_test[:, 5] == np.round(X_test[:, 5]))
    X_test = X_test[integral]     # Treelite truncates fractional categories
    np.testing.assert_allclose(gtil(model, X_test)[:, 0],
                               model.predict(X_test), **TOL)


def test_non_integer_categories_raise():
    X, y, _ = make_categorical_data()       # categories -3, -1.5, 0, ...
    model = BoostRegressor(n_estimators=5, categorical_features=[5],
                           max_cat_to_onehot=1).fit(X, y)
    with pytest.raises(ValueError, match="'f5'.*non-negative integers"):
        to_treelite(model)


def test_missing_marker_raises():
    X, score, _ = make_data()
    model = BoostRegressor(n_estimators=3, missing=-999.0).fit(
        np.nan_to_num(X, nan=-999.0), score)
    with pytest.raises(ValueError, match="-999"):
        to_treelite(model)


def test_callable_objective_raises():
    X, score, _ = make_data()

    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    model = BoostRegressor(n_estimators=3, objective=squared).fit(X, score)
    with pytest.raises(ValueError, match="callable objective"):
        to_treelite(model)
