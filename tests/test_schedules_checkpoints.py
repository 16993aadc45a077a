"""Learning-rate schedules, checkpoints, the before_iteration hook and model
slicing (issue 37's callbacks and ``booster[a:b]``).

Oracles: XGBoost (its ``LearningRateScheduler`` on the exact method grows
the same trees, and its model slicing selects the same rounds), an
uninterrupted fit (a fit resumed from a checkpoint must equal it bit for
bit), and ``iteration_range`` (a slice's margins are those of its rounds).
"""

import os
import pickle

import numpy as np
import pytest

from skboost import Booster, BoostClassifier, BoostRegressor
from skboost.callback import (LearningRateScheduler, TrainingCallback,
                              TrainingCheckPoint, reset_parameter)

xgb = pytest.importorskip("xgboost")

RATES = [0.5, 0.1, 0.05, 0.2, 0.3, 0.1, 0.25]
EXACT = dict(n_estimators=7, max_depth=3, tree_method="exact",
             base_score=0.0, learning_rate=0.3)


def _regression(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=n)
    return X, y


def _classes(n=400, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    return X, y


# -- LearningRateScheduler: XGBoost's convention, XGBoost's trees -----------

@pytest.mark.parametrize("as_function", [False, True])
def test_scheduler_equals_xgboost_regression(as_function):
    X, y = _regression()
    rates = (lambda i: RATES[i]) if as_function else RATES
    ours = BoostRegressor(**EXACT, callbacks=[LearningRateScheduler(rates)])
    theirs = xgb.XGBRegressor(
        **EXACT, callbacks=[xgb.callback.LearningRateScheduler(rates)])
    np.testing.assert_allclose(ours.fit(X, y).predict(X),
                               theirs.fit(X, y).predict(X), atol=1e-5)
    # and the schedule mattered: a fixed rate gives another model
    fixed = BoostRegressor(**EXACT).fit(X, y).predict(X)
    assert np.abs(ours.predict(X) - fixed).max() > 1e-2


def test_scheduler_equals_xgboost_multiclass():
    X, y = _classes()
    ours = BoostClassifier(**EXACT, callbacks=[LearningRateScheduler(RATES)])
    theirs = xgb.XGBClassifier(
        **EXACT, callbacks=[xgb.callback.LearningRateScheduler(RATES)])
    np.testing.assert_allclose(ours.fit(X, y).predict_proba(X),
                               theirs.fit(X, y).predict_proba(X), atol=1e-5)


def test_scheduler_with_parallel_trees_equals_xgboost():
    X, y = _regression()
    params = dict(EXACT, num_parallel_tree=2, colsample_bynode=1.0)
    ours = BoostRegressor(**params, callbacks=[LearningRateScheduler(RATES)])
    theirs = xgb.XGBRegressor(
        **params, callbacks=[xgb.callback.LearningRateScheduler(RATES)])
    np.testing.assert_allclose(ours.fit(X, y).predict(X),
                               theirs.fit(X, y).predict(X), atol=1e-5)


@pytest.mark.parametrize("method", ["hist", "approx"])
def test_constant_schedule_is_the_fixed_rate_bit_for_bit(method):
    X, y = _classes()
    params = dict(EXACT, tree_method=method, learning_rate=0.2)
    fixed = BoostClassifier(**params).fit(X, y)
    scheduled = BoostClassifier(
        **params, callbacks=[LearningRateScheduler(lambda i: 0.2)]).fit(X, y)
    assert np.array_equal(fixed.predict_proba(X), scheduled.predict_proba(X))


def test_reset_parameter_is_lightgbm_convention():
    """Round i uses rates[i]: XGBoost's scheduler one round later, with
    the estimator's rate set to rates[0]."""
    X, y = _regression()
    ours = BoostRegressor(**dict(EXACT, learning_rate=0.9),
                          callbacks=[reset_parameter(learning_rate=RATES)])
    theirs = xgb.XGBRegressor(
        **dict(EXACT, learning_rate=RATES[0]),
        callbacks=[xgb.callback.LearningRateScheduler(RATES[1:] + [0.5])])
    np.testing.assert_allclose(ours.fit(X, y).predict(X),
                               theirs.fit(X, y).predict(X), atol=1e-5)


def test_schedule_errors():
    X, y = _regression(50)
    with pytest.raises(TypeError, match="learning_rates"):
        LearningRateScheduler(0.1)
    with pytest.raises(ValueError, match="no learning rate for round 2"):
        BoostRegressor(n_estimators=5, callbacks=[
            LearningRateScheduler([0.1, 0.2])]).fit(X, y)
    with pytest.raises(ValueError, match=r"learning_rate must be finite "
                       r"and >= 0"):
        BoostRegressor(n_estimators=3, callbacks=[
            LearningRateScheduler(lambda i: -0.5)]).fit(X, y)
    with pytest.raises(ValueError, match="only learning_rate can"):
        reset_parameter(max_depth=[3, 4])
    booster = BoostRegressor(n_estimators=2).fit(X, y).get_booster()
    with pytest.raises(ValueError, match="'max_depth' cannot change"):
        booster.set_param("max_depth", 3)
    with pytest.raises(TypeError, match="must be a number"):
        booster.set_param({"eta": "fast"})


# -- before_iteration --------------------------------------------------------

class _StopBefore(TrainingCallback):
    def __init__(self, round_):
        self.round_, self.seen = round_, []

    def before_iteration(self, booster, iteration, evals_log):
        self.seen.append((iteration, booster.num_boosted_rounds()))
        return iteration == self.round_


def test_before_iteration_sees_each_round_and_can_stop():
    X, y = _regression(100)
    hook = _StopBefore(3)
    model = BoostRegressor(n_estimators=10, callbacks=[hook]).fit(X, y)
    assert hook.seen == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert model.get_booster().num_boosted_rounds() == 3


# -- TrainingCheckPoint ------------------------------------------------------

def test_checkpoint_files_follow_xgboost(tmp_path):
    """The same file names and rounds as XGBoost's callback."""
    X, y = _regression(100)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    theirs.mkdir()   # XGBoost's callback needs it; ours makes it
    BoostRegressor(n_estimators=10, callbacks=[
        TrainingCheckPoint(ours, interval=3)]).fit(X, y)
    xgb.XGBRegressor(n_estimators=10, callbacks=[
        xgb.callback.TrainingCheckPoint(theirs, interval=3)]).fit(X, y)
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    for name in os.listdir(ours):   # model_k holds rounds 0..k
        k = int(name[len("model_"):-len(".ubj")])
        assert Booster(model_file=ours / name).num_boosted_rounds() == k + 1


@pytest.mark.parametrize("method", ["hist", "approx", "exact"])
def test_resumed_from_checkpoint_equals_uninterrupted(tmp_path, method):
    X, y = _classes()
    params = dict(max_depth=4, tree_method=method, learning_rate=0.3,
                  random_state=0)
    whole = BoostClassifier(n_estimators=12, **params).fit(X, y)
    BoostClassifier(n_estimators=8, **params, callbacks=[
        TrainingCheckPoint(tmp_path, interval=3)]).fit(X, y)
    # the last checkpoint: model_6 (rounds 0..6); 5 rounds left
    assert sorted(os.listdir(tmp_path)) == ["model_3.ubj", "model_6.ubj"]
    resumed = BoostClassifier(n_estimators=5, **params).fit(
        X, y, xgb_model=str(tmp_path / "model_6.ubj"))
    assert np.array_equal(whole.predict_proba(X), resumed.predict_proba(X))
    for a, b in zip(whole.get_booster().trees, resumed.get_booster().trees):
        assert np.array_equal(a.value, b.value)
        assert np.array_equal(a.threshold, b.threshold, equal_nan=True)


def test_pickled_checkpoint_is_the_model_so_far(tmp_path):
    X, y = _regression(120)
    model = BoostRegressor(n_estimators=6, callbacks=[
        TrainingCheckPoint(tmp_path, as_pickle=True, interval=2)]).fit(X, y)
    with open(tmp_path / "model_4.pkl", "rb") as file:
        booster = pickle.load(file)
    X32 = X.astype(np.float32)
    assert np.array_equal(
        booster.predict(X32),
        model.get_booster().predict(X32, iteration_range=(0, 5)))


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


class _Poison(TrainingCallback):
    """Makes the booster unpicklable from round 3 on: a real failure in
    the middle of writing the checkpoint."""

    def after_iteration(self, booster, iteration, evals_log):
        if iteration == 3:
            booster.poison = _Unpicklable()
        return False


def test_failed_checkpoint_leaves_no_partial_file(tmp_path):
    X, y = _regression(80)
    with pytest.raises(RuntimeError, match="cannot pickle"):
        BoostRegressor(n_estimators=8, callbacks=[
            _Poison(), TrainingCheckPoint(tmp_path, as_pickle=True,
                                          interval=2)]).fit(X, y)
    # model_2 was written before the poison; model_4's write failed whole
    assert os.listdir(tmp_path) == ["model_2.pkl"]
    with open(tmp_path / "model_2.pkl", "rb") as file:
        assert pickle.load(file).num_boosted_rounds() == 3


def test_checkpoint_interval_is_checked():
    with pytest.raises(ValueError, match="interval"):
        TrainingCheckPoint("x", interval=0)


# -- booster[a:b] ------------------------------------------------------------

def _margins(booster, X, iteration_range):
    return booster.predict(X, output_margin=True,
                           iteration_range=iteration_range)


@pytest.mark.parametrize("rounds", [slice(1, 3), slice(None, 4), slice(2, None),
                                    1, slice(0, 6, 1)])
def test_slices_equal_xgboost_slices(rounds):
    X, y = _regression()
    params = dict(EXACT, n_estimators=6)
    ours = BoostRegressor(**params).fit(X, y).get_booster()
    theirs = xgb.XGBRegressor(**params).fit(X, y).get_booster()
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(
        ours[rounds].predict(X32, output_margin=True),
        theirs[rounds].predict(xgb.DMatrix(X32), output_margin=True),
        atol=1e-5)


@pytest.mark.parametrize("params", [
    dict(),                                   # one output
    dict(num_parallel_tree=2, subsample=0.8),  # parallel trees
    dict(multi_strategy="multi_output_tree"),  # vector leaves
])
def test_slice_margins_are_those_of_its_rounds(params):
    X, y = _classes()
    booster = BoostClassifier(n_estimators=6, max_depth=3, random_state=0,
                              **params).fit(X, y).get_booster()
    X32 = X.astype(np.float32)
    base = _margins(booster, X32, None) - (
        _margins(booster, X32, (0, 6)) - booster.base_margin)
    for a, b in [(0, 2), (1, 4), (5, 6)]:
        np.testing.assert_allclose(booster[a:b].predict(X32, output_margin=True),
                                   _margins(booster, X32, (a, b)), atol=1e-12)
    # a step: base margin plus the rounds' own contributions
    per_round = [_margins(booster, X32, (r, r + 1)) - booster.base_margin
                 for r in range(6)]
    expected = booster.base_margin + per_round[0] + per_round[2] + per_round[4]
    np.testing.assert_allclose(booster[::2].predict(X32, output_margin=True),
                               expected, atol=1e-9)
    assert booster[::2].num_boosted_rounds() == 3
    assert np.allclose(base, booster.base_margin)


def test_slice_round_trips_through_a_file(tmp_path):
    X, y = _classes()
    booster = BoostClassifier(n_estimators=5).fit(X, y).get_booster()
    part = booster[1:4]
    part.save_model(tmp_path / "part.json")
    loaded = Booster(model_file=tmp_path / "part.json")
    X32 = X.astype(np.float32)
    assert np.array_equal(loaded.predict(X32), part.predict(X32))
    assert loaded.num_boosted_rounds() == 3


def test_slice_errors_follow_xgboost():
    X, y = _regression(60)
    booster = BoostRegressor(n_estimators=5).fit(X, y).get_booster()
    with pytest.raises(IndexError):
        booster[3:100]
    with pytest.raises(IndexError):
        booster[7]
    with pytest.raises(ValueError, match="selects no round"):
        booster[2:1]
    with pytest.raises(ValueError, match="selects no round"):
        booster[5:]
    with pytest.raises(ValueError, match="step"):
        booster[::0]
    with pytest.raises(ValueError, match="step"):
        booster[::-1]
    with pytest.raises(ValueError, match="one dimension"):
        booster[1, 2]
    with pytest.raises(TypeError, match="int or a slice"):
        booster["a"]
    assert booster[...].num_boosted_rounds() == 5
    assert booster[-1].num_boosted_rounds() == 1
    assert booster[:-1].num_boosted_rounds() == 4


# -- on Dask: the same schedule, the same model -------------------------------

def test_scheduler_on_dask_equals_in_process():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from skboost.dask import DaskBoostRegressor

    rng = np.random.default_rng(0)
    # at most 30 distinct values per feature: cuts do not depend on the
    # partitioning, so the Dask model equals the in-process one
    X = rng.integers(0, 30, size=(600, 4)).astype(np.float32)
    y = X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=600)
    params = dict(n_estimators=6, max_depth=3, n_jobs=1)
    schedule = [0.5, 0.1, 0.05, 0.2, 0.3, 0.1]
    local = BoostRegressor(**params, callbacks=[
        LearningRateScheduler(schedule)]).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        model = DaskBoostRegressor(**params, callbacks=[
            LearningRateScheduler(schedule)]).fit(
            da.from_array(X, chunks=200), da.from_array(y, chunks=200))
        dask_predictions = model.predict(
            da.from_array(X, chunks=200)).compute()
    assert np.array_equal(dask_predictions, local.predict(X))
    # and the schedule was applied (another model than the fixed rate's)
    assert not np.array_equal(
        dask_predictions, BoostRegressor(**params).fit(X, y).predict(X))
