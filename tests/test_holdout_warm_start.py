"""Early stopping on an internal hold-out (``validation_fraction``),
``warm_start`` and ``callbacks`` inside model selection.

Oracles: the same model fitted on the explicit split with ``eval_set``
(scikit-learn's ``train_test_split``, the documented split), the rows a
recording metric sees, and a model fitted in one go for warm starts.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost.callback import TrainingCallback


def _data(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=1.0, size=n)
    return X, y


class Recorder:
    """A metric that records the labels (and weights) it is given."""

    def __init__(self):
        self.seen = []
        self.__name__ = "recorded"

    def __call__(self, y_true, y_pred, sample_weight=None):
        self.seen.append((np.array(y_true), np.array(sample_weight)))
        return 0.0


# ------------------------------------------------------------ hold-out


def test_regressor_holdout_is_the_documented_random_split():
    X, y = _data()
    est = BoostRegressor(n_estimators=200, learning_rate=0.5,
                         early_stopping_rounds=4, validation_fraction=0.2,
                         random_state=7).fit(X, y)
    train, val = train_test_split(np.arange(len(y)), test_size=0.2,
                                  random_state=np.random.RandomState(7))
    train, val = np.sort(train), np.sort(val)
    ref = BoostRegressor(n_estimators=200, learning_rate=0.5,
                         early_stopping_rounds=4, random_state=7).fit(
        X[train], y[train], eval_set=[(X[val], y[val])])
    assert est.best_iteration == ref.best_iteration < 150
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    assert est.evals_result_["validation"] == ref.evals_result_["validation_0"]


def test_classifier_holdout_is_stratified_and_reproducible():
    X, y = _data(n=200)
    labels = np.where(np.arange(200) % 10 == 0, "rare", "common")  # 20 rare
    seen = {}
    for seed in (0, 0, 1):
        rec = Recorder()
        BoostClassifier(n_estimators=3, early_stopping_rounds=2,
                        eval_metric=rec, validation_fraction=0.1,
                        random_state=seed).fit(X, labels)
        y_val, _ = rec.seen[0]
        assert len(y_val) == 20 and np.sum(y_val == 1) == 2  # 10% of each class
        seen.setdefault(seed, []).append(y_val)
    # the same seed holds out the same rows: the same model
    a = BoostClassifier(n_estimators=30, early_stopping_rounds=2,
                        random_state=0).fit(X, y > 0)
    b = BoostClassifier(n_estimators=30, early_stopping_rounds=2,
                        random_state=0).fit(X, y > 0)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    train, val = train_test_split(np.arange(200), test_size=0.1, stratify=y > 0,
                                  random_state=np.random.RandomState(0))
    ref = BoostClassifier(n_estimators=30, early_stopping_rounds=2,
                          random_state=0).fit(
        X[np.sort(train)], (y > 0)[np.sort(train)],
        eval_set=[(X[np.sort(val)], (y > 0)[np.sort(val)])])
    np.testing.assert_array_equal(a.predict_proba(X), ref.predict_proba(X))


def test_ranker_holds_out_whole_queries():
    X, y = _data(n=400)
    qid = np.repeat(np.arange(40), 10)
    relevance = np.digitize(y, [0.0, 1.0])
    weight = 1.0 + qid / 100.0  # identifies the query of each row
    rec = Recorder()
    BoostRanker(n_estimators=3, early_stopping_rounds=2, eval_metric=rec,
                validation_fraction=0.1, random_state=0).fit(
        X, relevance, qid=qid, sample_weight=weight)
    _, w_val = rec.seen[0]
    queries, counts = np.unique(np.round((w_val - 1.0) * 100).astype(int),
                                return_counts=True)
    assert len(queries) == 4 and np.all(counts == 10)  # 4 whole queries


def test_holdout_errors_are_clear():
    X, y = _data(n=20)
    labels = np.array([0] * 19 + [1])
    with pytest.raises(ValueError, match="validation_fraction"):
        BoostClassifier(early_stopping_rounds=2).fit(X, labels)
    with pytest.raises(ValueError, match="validation_fraction.*queries"):
        BoostRanker(early_stopping_rounds=2).fit(
            X, np.digitize(y, [0.0]), qid=np.zeros(20, dtype=int))


_SEEN = []


def _record(y_true, y_pred):
    """A metric that records the labels; a plain function, so that clone's
    deep copies of the parameters still record here."""
    _SEEN.append(np.array(y_true))
    return 0.0


def test_grid_search_pipeline_early_stops_on_training_folds_only():
    X, y = _data(n=240)  # continuous y: every value identifies its row
    _SEEN.clear()
    pipe = make_pipeline(StandardScaler(), BoostRegressor(
        n_estimators=50, early_stopping_rounds=3, eval_metric=_record,
        random_state=0))
    cv = KFold(3, shuffle=True, random_state=0)
    folds = list(cv.split(X))
    search = GridSearchCV(pipe, {"boostregressor__max_depth": [2, 3]},
                          cv=cv, n_jobs=1).fit(X, y)
    assert search.best_estimator_.steps[-1][1].best_iteration >= 0
    held_sets = {tuple(np.sort(v)) for v in _SEEN}
    assert len(held_sets) == 4  # one per training fold, one for the refit
    for held in map(np.array, held_sets):
        if len(held) == 24:  # the refit on all 240 rows
            assert np.isin(held, y).all()
            continue
        assert len(held) == 16  # 10% of a 160-row training fold
        assert any(np.isin(held, y[train]).all() and not np.isin(held, y[test]).any()
                   for train, test in folds)


# ----------------------------------------------------------- warm start


@pytest.mark.parametrize("Est, method, target", [
    (BoostRegressor, "hist", lambda y: y),
    (BoostClassifier, "exact", lambda y: np.digitize(y, [-0.5, 0.5, 1.5])),
    (BoostClassifier, "approx", lambda y: y > 0.5),
])
def test_warm_start_adds_rounds_like_one_fit(Est, method, target):
    X, y = _data()
    y = target(y)
    one_go = Est(n_estimators=8, tree_method=method).fit(X, y)
    est = Est(n_estimators=3, tree_method=method, warm_start=True).fit(X, y)
    first_trees = list(est.booster_.trees)
    est.set_params(n_estimators=8).fit(X, y)
    assert est.booster_.trees[:len(first_trees)] == first_trees
    assert est.booster_.n_rounds == 8
    np.testing.assert_array_equal(est.predict(X, output_margin=True),
                                  one_go.predict(X, output_margin=True))


def test_warm_start_ranker():
    X, y = _data()
    relevance = np.digitize(y, [0.0, 1.0])
    qid = np.repeat(np.arange(40), 10)
    one_go = BoostRanker(n_estimators=6).fit(X, relevance, qid=qid)
    est = BoostRanker(n_estimators=3, warm_start=True).fit(X, relevance, qid=qid)
    est.set_params(n_estimators=6).fit(X, relevance, qid=qid)
    np.testing.assert_array_equal(est.predict(X), one_go.predict(X))


def test_warm_start_edge_cases():
    X, y = _data()
    est = BoostRegressor(n_estimators=4, warm_start=True).fit(X, y)
    booster = est.booster_
    assert est.fit(X, y).booster_ is booster  # nothing to add
    est.set_params(n_estimators=3)
    with pytest.raises(ValueError, match="n_estimators=3 is below the 4"):
        est.fit(X, y)
    est.set_params(n_estimators=6)
    with pytest.raises(ValueError, match="features of the first fit"):
        est.fit(X[:, :3], y)
    clf = BoostClassifier(n_estimators=2, warm_start=True).fit(X, y > 0)
    with pytest.raises(ValueError, match="classes"):
        clf.set_params(n_estimators=4).fit(X, np.where(y > 0, "a", "b"))
    # without warm_start, fit starts again
    cold = BoostRegressor(n_estimators=4).fit(X, y)
    first = cold.booster_
    assert cold.fit(X, y).booster_ is not first


def test_warm_start_continues_a_loaded_model(tmp_path):
    X, y = _data()
    BoostRegressor(n_estimators=3).fit(X, y).save_model(tmp_path / "m.json")
    est = BoostRegressor.load(tmp_path / "m.json")
    est.set_params(warm_start=True, n_estimators=7).fit(X, y)
    np.testing.assert_array_equal(est.predict(X),
                                  BoostRegressor(n_estimators=7).fit(X, y).predict(X))


def test_warm_start_with_early_stopping_counts_rounds_on():
    X, y = _data()
    est = BoostRegressor(n_estimators=5, learning_rate=0.5, warm_start=True,
                         early_stopping_rounds=3, random_state=0).fit(X, y)
    assert len(est.evals_result_["validation"]["rmse"]) <= 5
    n_before = est.booster_.n_rounds
    est.set_params(n_estimators=n_before + 50).fit(X, y)
    log = est.evals_result_["validation"]["rmse"]
    assert len(log) == est.booster_.n_rounds - n_before
    assert n_before <= est.best_iteration < est.booster_.n_rounds
    assert est.best_score == log[est.best_iteration - n_before]


# ------------------------------------------------------------ callbacks


class StopAfter(TrainingCallback):
    def __init__(self, rounds):
        self.rounds = rounds

    def after_iteration(self, booster, iteration, evals_log):
        return iteration + 1 >= self.rounds


def test_callbacks_work_through_clone_and_grid_search():
    X, y = _data(n=120)
    est = BoostRegressor(n_estimators=50, callbacks=[StopAfter(4)])
    assert clone(est).fit(X, y).booster_.n_rounds == 4
    search = GridSearchCV(est, {"max_depth": [2, 3]}, cv=2).fit(X, y)
    assert search.best_estimator_.booster_.n_rounds == 4
