"""Random forests: ``num_parallel_tree`` and the forest estimators.

Oracles: closed forms of the leaf values (XGBoost's semantics: each of a
round's k trees carries ``learning_rate / k``, so the round adds their
mean), the single-tree model when the k trees must be identical, and
XGBoost's ``XGBRFClassifier`` / ``XGBRFRegressor`` on held-out data of
the shared data sets (error no worse, over several seeds).
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import log_loss, mean_squared_error
from sklearn.model_selection import train_test_split

from skboost import (BoostClassifier, BoostRegressor, BoostRFClassifier,
                     BoostRFRegressor)
from _shared_data import load_tsv


def _data(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    return X, y


def test_identical_parallel_trees_are_one_tree():
    """Without sampling the k trees of a round are the same tree, each
    carrying learning_rate / k: the model predicts as the k = 1 model."""
    X, y = _data()
    one = BoostRegressor(n_estimators=4, max_depth=3).fit(X, y)
    three = BoostRegressor(n_estimators=4, max_depth=3,
                           num_parallel_tree=3).fit(X, y)
    assert len(three.booster_.trees) == 12 and three.booster_.n_rounds == 4
    np.testing.assert_allclose(three.predict(X), one.predict(X), atol=1e-12)
    for k, tree in enumerate(three.booster_.trees):
        reference = one.booster_.trees[k // 3]
        np.testing.assert_array_equal(tree.feature, reference.feature)
        np.testing.assert_allclose(tree.value, reference.value / 3,
                                   rtol=1e-12)


@pytest.mark.parametrize("objective", ["reg:squarederror",
                                       "reg:absoluteerror"])
def test_leaf_values_closed_form(objective):
    """One round from the base margin b, column sampling only: each leaf of
    each tree holds learning_rate / k times the regularised mean residual
    of its rows, sum(y - b) / (n + lambda) (squared error), or the median
    residual of its rows (the absolute error's re-fit, computed from the
    margins the round started from, not those of the round's earlier
    trees)."""
    X, y = _data()
    k, lam, eta = 4, 2.0, 0.5
    model = BoostRegressor(n_estimators=1, num_parallel_tree=k,
                           colsample_bynode=0.5, reg_lambda=lam,
                           learning_rate=eta, max_depth=3, random_state=0,
                           objective=objective).fit(X, y)
    base = model.booster_.base_margin[0]
    leaves = model.apply(X)
    features = set()
    for t, tree in enumerate(model.booster_.trees):
        features.add(tuple(tree.feature))
        for leaf in np.unique(leaves[:, t]):
            residual = y[leaves[:, t] == leaf] - base
            if objective == "reg:squarederror":
                want = residual.sum() / (residual.size + lam)
            else:
                want = np.quantile(residual, 0.5, method="weibull")
            assert tree.value[leaf] == pytest.approx(eta / k * want,
                                                     rel=1e-5, abs=1e-7)
    assert len(features) > 1  # the trees differ (own column samples)


def test_multiclass_layout_and_iteration_range():
    X, y = _data()
    labels = np.digitize(y, [-0.5, 0.5])
    model = BoostClassifier(n_estimators=3, num_parallel_tree=2,
                            subsample=0.7, random_state=0).fit(X, labels)
    booster = model.booster_
    assert booster.trees_per_round == 6 and booster.n_rounds == 3
    # the k trees of a class are together within a round
    assert booster.tree_group[:6] == [0, 0, 1, 1, 2, 2]
    first = model.predict_proba(X, iteration_range=(0, 1))
    manual = booster.base_margin + np.column_stack([
        sum(_tree_margin(booster, X, t)
            for t in range(6) if booster.tree_group[t] == c)
        for c in range(3)])
    np.testing.assert_allclose(
        first, np.exp(manual) / np.exp(manual).sum(axis=1, keepdims=True),
        rtol=1e-6)
    assert model.apply(X).shape == (X.shape[0], 18)


def _tree_margin(booster, X, index):
    from skboost._model.train import single_tree_booster as _single_tree

    return _single_tree(booster.trees[index], X).predict_raw(
        np.ascontiguousarray(X, dtype=np.float32))[:, 0]


@pytest.mark.parametrize("Forest", [BoostRFClassifier, BoostRFRegressor])
def test_forest_defaults_are_xgboosts(Forest):
    xgboost = pytest.importorskip("xgboost")
    theirs = {"BoostRFClassifier": xgboost.XGBRFClassifier,
              "BoostRFRegressor": xgboost.XGBRFRegressor}[Forest.__name__]()
    ours = Forest().get_params()
    for name in ("learning_rate", "subsample", "colsample_bynode",
                 "reg_lambda"):
        assert ours[name] == theirs.get_params()[name], name
    assert ours["n_estimators"] == 100 and ours["max_depth"] == 6
    for name in ("num_parallel_tree", "early_stopping_rounds", "warm_start"):
        assert name not in ours
        with pytest.raises(TypeError):
            Forest(**{name: 1})


def test_forest_is_one_round_and_independent_of_threads(tmp_path):
    X, y = _data()
    fits = [BoostRFRegressor(n_estimators=8, random_state=3,
                             n_jobs=n_jobs).fit(X, y) for n_jobs in (1, 2)]
    assert fits[0].booster_.n_rounds == 1
    assert len(fits[0].booster_.trees) == 8
    np.testing.assert_array_equal(fits[0].predict(X), fits[1].predict(X))
    fits[0].save_model(tmp_path / "forest.json")
    loaded = BoostRFRegressor.load(tmp_path / "forest.json")
    np.testing.assert_array_equal(loaded.predict(X), fits[0].predict(X))
    assert clone(fits[0]).get_params() == fits[0].get_params()
    # the prediction is the base margin plus the mean of the trees
    trees = [_tree_margin(fits[0].booster_, X, t) for t in range(8)]
    base = fits[0].booster_.base_margin[0]
    np.testing.assert_allclose(fits[0].predict(X), base + np.sum(trees, 0),
                               atol=1e-9)


def test_boosted_forest_save_load_and_warm_start_check(tmp_path):
    X, y = _data()
    model = BoostRegressor(n_estimators=3, num_parallel_tree=2, subsample=0.8,
                           random_state=0, warm_start=True).fit(X, y)
    model.save_model(tmp_path / "m.json")
    loaded = BoostRegressor.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    model.set_params(n_estimators=5, num_parallel_tree=3)
    with pytest.raises(ValueError, match="num_parallel_tree"):
        model.fit(X, y)


def _shared_sets():
    X, y = load_breast_cancer(return_X_y=True)
    cancer = train_test_split(X, y, test_size=0.3, random_state=0)
    X, y = load_diabetes(return_X_y=True)
    diabetes = train_test_split(X, y, test_size=0.3, random_state=0)
    return {
        "higgs": ("classifier", *load_tsv("binary.train"),
                  *load_tsv("binary.test")),
        "cancer": ("classifier", cancer[0], cancer[2], cancer[1], cancer[3]),
        "regression": ("regressor", *load_tsv("regression.train"),
                       *load_tsv("regression.test")),
        "diabetes": ("regressor", diabetes[0], diabetes[2], diabetes[1],
                     diabetes[3]),
    }


# Forests of the two libraries differ by their random streams only: over a
# few seeds the mean held-out error must be within this factor of XGBoost's.
ERROR_RATIO = 1.02


@pytest.mark.parametrize("name", ["higgs", "cancer", "regression",
                                  "diabetes"])
def test_no_worse_than_xgbrf(name):
    xgboost = pytest.importorskip("xgboost")
    kind, X, y, X_test, y_test = _shared_sets()[name]
    ours, theirs = [], []
    for seed in range(4):
        params = dict(n_estimators=50, random_state=seed)
        if kind == "classifier":
            for Forest, out in ((BoostRFClassifier, ours),
                                (xgboost.XGBRFClassifier, theirs)):
                proba = Forest(**params).fit(X, y).predict_proba(X_test)
                out.append(log_loss(y_test, proba[:, 1]))
        else:
            for Forest, out in ((BoostRFRegressor, ours),
                                (xgboost.XGBRFRegressor, theirs)):
                pred = Forest(**params).fit(X, y).predict(X_test)
                out.append(mean_squared_error(y_test, pred) ** 0.5)
    assert np.mean(ours) <= ERROR_RATIO * np.mean(theirs), (ours, theirs)
