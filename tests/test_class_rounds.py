"""The class trees of a round grown side by side (``_class_rounds.py``).

Oracle: the same fit with one thread, which grows the class trees one after
another (the path every other model takes); the models must be identical
bit for bit, trees and predictions.
"""

import numpy as np
import pytest

from skboost import BoostClassifier
from skboost._model.class_rounds import class_workers
from skboost.tree._tree import NODE_FIELDS
from skboost.tree.driver import TreeParams
from skboost.tree.methods import make_grower


def data(seed=0, n=3000, n_classes=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    logits = X[:, :n_classes] * 2 + rng.normal(size=(n, n_classes))
    y = np.argmax(np.nan_to_num(logits), axis=1)
    return X, y


def same_trees(a, b):
    ta, tb = a.booster_.trees, b.booster_.trees
    return len(ta) == len(tb) and all(
        np.array_equal(getattr(s, name), getattr(t, name))
        for s, t in zip(ta, tb) for name in NODE_FIELDS)


@pytest.mark.parametrize("params", [
    dict(),
    dict(subsample=0.7, random_state=3),
    dict(max_depth=3, reg_alpha=0.5, max_delta_step=0.3, gamma=0.1),
    dict(grow_policy="lossguide", max_leaves=12, max_depth=0),
    dict(monotone_constraints=(1, 0, -1, 0, 0, 0, 0, 0)),
    dict(interaction_constraints=[[0, 1, 2], [3, 4, 5, 6, 7]]),
    dict(categorical_features=[7], max_cat_to_onehot=1),
], ids=str)
def test_side_by_side_class_trees_are_the_sequential_ones(params,
                                                         monkeypatch):
    import skboost._model.train as booster_module
    import skboost._threads as threads_module

    # every thread whatever else the machine runs (the load reading would
    # move a busy machine's rounds to one thread, and the path under test
    # needs two)
    monkeypatch.setattr(threads_module, "_MONITOR", None)

    rounds = []   # rounds grown side by side (a spy: the real function runs)
    real = booster_module.grow_class_trees
    monkeypatch.setattr(booster_module, "grow_class_trees",
                        lambda *a: rounds.append(1) or real(*a))
    X, y = data()
    if "categorical_features" in params:
        X[:, 7] = np.floor(np.abs(np.nan_to_num(X[:, 7])) * 3)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    kwargs = dict(n_estimators=6, tree_method="hist", **params)
    one = BoostClassifier(n_jobs=1, **kwargs).fit(X, y, sample_weight=weight)
    assert not rounds
    two = BoostClassifier(n_jobs=2, **kwargs).fit(X, y, sample_weight=weight)
    assert rounds    # the first rounds run with every thread
    assert same_trees(one, two)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_early_stopping_and_eval_sets_see_the_same_rounds():
    X, y = data(seed=2)
    kwargs = dict(n_estimators=40, early_stopping_rounds=3,
                  learning_rate=0.5)
    fits = [BoostClassifier(n_jobs=n, **kwargs).fit(
        X[:2000], y[:2000], eval_set=[(X[2000:], y[2000:])])
        for n in (1, 2)]
    assert fits[0].best_iteration == fits[1].best_iteration
    assert fits[0].evals_result_ == fits[1].evals_result_
    assert same_trees(*fits)


def _grower(X, **params):
    return make_grower(X, TreeParams(**params), 2,
                       np.random.default_rng(0))


def test_side_by_side_only_where_it_gives_the_same_trees():
    X, _ = data(n=200)
    hist = _grower(X)
    assert class_workers(hist, 5, 2, 1, False) == 2
    assert class_workers(hist, 5, 4, 1, False) == 4
    assert class_workers(hist, 3, 8, 1, False) == 3     # a worker per class
    assert class_workers(hist, 1, 2, 1, False) == 1     # one output
    assert class_workers(hist, 5, 1, 1, False) == 1     # one thread
    assert class_workers(hist, 5, 2, 2, False) == 1     # parallel trees
    assert class_workers(hist, 5, 2, 1, True) == 1      # leaf re-fits
    # column samples are drawn while a tree grows: the order would change
    assert class_workers(_grower(X, colsample_bynode=0.5), 5, 2, 1,
                         False) == 1
    assert class_workers(_grower(X, tree_method="exact"), 5, 2, 1,
                         False) == 1


def test_one_tree_per_target_regression_side_by_side():
    """Several targets with one tree per target take the same path."""
    from skboost import BoostRegressor

    X, y = data(seed=4)
    rng = np.random.default_rng(4)
    Y = np.column_stack([np.nan_to_num(X[:, t]) + rng.normal(size=len(y))
                         for t in range(3)])
    fits = [BoostRegressor(n_estimators=5, n_jobs=n).fit(X, Y)
            for n in (1, 2)]
    assert same_trees(*fits)
    np.testing.assert_array_equal(fits[0].predict(X), fits[1].predict(X))
