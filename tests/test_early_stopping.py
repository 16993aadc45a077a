"""Evaluation sets, early stopping and callbacks of the boosting loop.

Oracles: every logged metric is recomputed with scikit-learn from the
model's own predictions truncated to the round (``iteration_range``); the
early-stopping decision is recomputed from the logged values.
"""

import io

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.datasets import make_classification, make_regression

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost.callback import EarlyStopping, EvaluationMonitor, TrainingCallback


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(n_samples=600, n_features=8, noise=20.0,
                           random_state=0)
    return X[:400], y[:400], X[400:], y[400:]


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=600, n_features=8, flip_y=0.2,
                               random_state=0)
    return X[:400], y[:400], X[400:], y[400:]


def test_logged_metrics_match_sklearn_on_truncated_predictions(regression):
    X, y, X_val, y_val = regression
    w_val = np.random.default_rng(0).uniform(0.5, 2.0, y_val.shape[0])
    reg = BoostRegressor(n_estimators=12, max_depth=3,
                         eval_metric=["rmse", "mae"])
    reg.fit(X, y, eval_set=[(X, y), (X_val, y_val)],
            sample_weight_eval_set=[None, w_val])
    log = reg.evals_result_
    assert list(log) == ["validation_0", "validation_1"]
    assert reg.evals_result() is log
    for i in range(12):
        train_pred = reg.predict(X, iteration_range=(0, i + 1))
        val_pred = reg.predict(X_val, iteration_range=(0, i + 1))
        assert log["validation_0"]["rmse"][i] == pytest.approx(
            skm.root_mean_squared_error(y, train_pred), rel=1e-9)
        assert log["validation_1"]["rmse"][i] == pytest.approx(
            skm.root_mean_squared_error(y_val, val_pred, sample_weight=w_val),
            rel=1e-9)
        assert log["validation_1"]["mae"][i] == pytest.approx(
            skm.mean_absolute_error(y_val, val_pred, sample_weight=w_val),
            rel=1e-9)


def test_default_metrics_follow_the_objective(binary):
    X, y, X_val, y_val = binary
    clf = BoostClassifier(n_estimators=5).fit(X, y, eval_set=[(X_val, y_val)])
    logloss = clf.evals_result_["validation_0"]["logloss"]
    assert len(logloss) == 5
    assert logloss[-1] == pytest.approx(
        skm.log_loss(y_val, clf.predict_proba(X_val)), rel=1e-9)
    y3 = np.arange(len(y)) % 3
    clf = BoostClassifier(n_estimators=3).fit(X, y3, eval_set=[(X, y3)])
    assert list(clf.evals_result_["validation_0"]) == ["mlogloss"]
    reg = BoostRegressor(n_estimators=3, objective="count:poisson").fit(
        X, y3, eval_set=[(X, y3)])
    assert list(reg.evals_result_["validation_0"]) == ["poisson-nloglik"]


def test_classifier_eval_labels_are_encoded_like_training_labels(binary):
    X, y, X_val, y_val = binary
    names = np.array(["no", "yes"])
    clf = BoostClassifier(n_estimators=4, eval_metric="error").fit(
        X, names[y], eval_set=[(X_val, names[y_val])])
    assert clf.evals_result_["validation_0"]["error"][-1] == pytest.approx(
        1 - clf.score(X_val, names[y_val]))
    with pytest.raises(ValueError, match="training classes"):
        clf.fit(X, names[y], eval_set=[(X_val, np.full(len(y_val), "maybe"))])


def test_early_stopping_stops_rounds_after_the_best(regression):
    X, y, X_val, y_val = regression
    rounds = 4
    reg = BoostRegressor(n_estimators=500, learning_rate=0.5, max_depth=6,
                         early_stopping_rounds=rounds, eval_metric="rmse")
    reg.fit(X, y, eval_set=[(X_val, y_val)])
    log = np.array(reg.evals_result_["validation_0"]["rmse"])
    n_rounds = reg.get_booster().n_rounds
    assert n_rounds < 500
    assert len(log) == n_rounds
    best = int(np.argmin(log))
    # the first minimum, and exactly `rounds` rounds without improvement after
    assert reg.best_iteration == best
    assert reg.best_score == log[best]
    assert n_rounds == best + rounds + 1
    # predictions use the best round by default, all rounds on request
    np.testing.assert_array_equal(
        reg.predict(X_val), reg.predict(X_val, iteration_range=(0, best + 1)))
    assert not np.array_equal(
        reg.predict(X_val), reg.predict(X_val, iteration_range=(0, n_rounds)))
    assert skm.root_mean_squared_error(y_val, reg.predict(X_val)) == (
        pytest.approx(reg.best_score, rel=1e-9))
    assert reg.apply(X_val).shape[1] == best + 1


def test_early_stopping_watches_the_last_metric_of_the_last_set(binary):
    X, y, X_val, y_val = binary
    clf = BoostClassifier(n_estimators=300, learning_rate=0.5,
                          early_stopping_rounds=3,
                          eval_metric=["logloss", "auc"])
    clf.fit(X, y, eval_set=[(X, y), (X_val, y_val)])
    auc = np.array(clf.evals_result_["validation_1"]["auc"])
    best = int(np.argmax(auc))  # AUC is maximised
    assert clf.best_iteration == best
    assert clf.best_score == auc[best]
    assert len(auc) == best + 3 + 1


def test_best_iteration_only_after_early_stopping(regression):
    X, y, _, _ = regression
    reg = BoostRegressor(n_estimators=3).fit(X, y)
    for name in ("best_iteration", "best_score"):
        assert not hasattr(reg, name)
    assert reg.evals_result_ == {}


@pytest.mark.parametrize("bad", [
    dict(eval_set=[(np.zeros((3, 8)),)]),
    dict(eval_set=[(np.zeros((3, 8)), np.zeros(4))]),
    dict(eval_set=[(np.zeros((3, 5)), np.zeros(3))]),
    dict(eval_set=[(np.zeros((3, 8)), np.zeros(3))],
         sample_weight_eval_set=[None, None]),
    dict(sample_weight_eval_set=[None]),
])
def test_bad_eval_sets_are_rejected(regression, bad):
    X, y, _, _ = regression
    with pytest.raises(ValueError):
        BoostRegressor(n_estimators=2).fit(X, y, **bad)


def test_unknown_metric_is_rejected(regression):
    X, y, X_val, y_val = regression
    with pytest.raises(ValueError, match="eval_metric"):
        BoostRegressor(n_estimators=2, eval_metric="rmsee").fit(
            X, y, eval_set=[(X_val, y_val)])


@pytest.mark.parametrize("eval_metric", [[123, "logloss"], 1.5, [None]])
def test_eval_metric_of_wrong_type_is_a_type_error(regression, eval_metric):
    """A non-name, non-callable metric is a TypeError (as in XGBoost), an
    unknown name a ValueError (above)."""
    X, y, X_val, y_val = regression
    with pytest.raises(TypeError, match="eval_metric"):
        BoostRegressor(n_estimators=2, eval_metric=eval_metric).fit(
            X, y, eval_set=[(X_val, y_val)])


def test_callable_eval_metric(regression):
    X, y, X_val, y_val = regression
    reg = BoostRegressor(n_estimators=6, eval_metric=skm.median_absolute_error,
                         early_stopping_rounds=2)
    reg.fit(X, y, eval_set=[(X_val, y_val)])
    log = reg.evals_result_["validation_0"]["median_absolute_error"]
    assert log[-1] == pytest.approx(skm.median_absolute_error(
        y_val, reg.predict(X_val, iteration_range=(0, len(log)))))


class Recorder(TrainingCallback):
    """Records the calls it receives; stops after `stop_after` rounds."""

    def __init__(self, stop_after=None):
        self.stop_after = stop_after
        self.calls = []

    def before_training(self, booster):
        self.calls.append("before")
        return booster

    def after_iteration(self, booster, iteration, evals_log):
        self.calls.append((iteration, booster.n_rounds,
                           len(evals_log["validation_0"]["rmse"])))
        return self.stop_after is not None and iteration + 1 >= self.stop_after

    def after_training(self, booster):
        self.calls.append("after")
        return booster


def test_callbacks_see_every_round_and_can_stop_training(regression):
    X, y, X_val, y_val = regression
    recorder = Recorder(stop_after=3)
    reg = BoostRegressor(n_estimators=10, callbacks=[recorder])
    reg.fit(X, y, eval_set=[(X_val, y_val)])
    assert recorder.calls == ["before", (0, 1, 1), (1, 2, 2), (2, 3, 3),
                              "after"]
    assert reg.get_booster().n_rounds == 3


def test_early_stopping_callback_with_min_delta(regression):
    """A callback instance gives the options the parameter does not."""
    X, y, X_val, y_val = regression
    stop = EarlyStopping(rounds=2, min_delta=1e9)  # nothing counts as better
    reg = BoostRegressor(n_estimators=50, callbacks=[stop])
    reg.fit(X, y, eval_set=[(X_val, y_val)])
    assert reg.best_iteration == 0
    assert reg.get_booster().n_rounds == 3


def test_verbose_prints_every_metric(regression, capsys):
    X, y, X_val, y_val = regression
    BoostRegressor(n_estimators=5, eval_metric=["rmse", "mae"]).fit(
        X, y, eval_set=[(X_val, y_val)], verbose=2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[2]", "[4]"]
    assert all("validation_0-rmse:" in line and "validation_0-mae:" in line
               for line in lines)


def test_evaluation_monitor_shows_progress_without_eval_sets(regression):
    X, y, _, _ = regression
    stream = io.StringIO()
    BoostRegressor(n_estimators=4, callbacks=[EvaluationMonitor(
        period=3, stream=stream)]).fit(X, y)
    lines = stream.getvalue().strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[3]"]
    assert all("elapsed:" in line for line in lines)


def test_ranker_early_stopping_on_ndcg():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 6))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=800)),
                0, 3)
    qid = rng.integers(0, 40, 800)
    ranker = BoostRanker(n_estimators=200, early_stopping_rounds=3,
                         eval_metric=["ndcg@5", "map@5"])
    ranker.fit(X[:600], y[:600], qid=qid[:600],
               eval_set=[(X[600:], y[600:])], eval_qid=[qid[600:]])
    log = ranker.evals_result_["validation_0"]
    best = int(np.argmax(log["map@5"]))
    assert ranker.best_iteration == best
    assert len(log["map@5"]) == best + 4


class _RoundClock(TrainingCallback):
    """A deterministic clock that advances ``step`` seconds per round (a
    callback placed before the monitor)."""

    def __init__(self, step):
        self.step, self.now = step, 0.0

    def __call__(self):
        return self.now

    def after_iteration(self, booster, iteration, evals_log):
        self.now += self.step
        return False


def test_progress_lines_carry_elapsed_time_and_time_left(regression):
    """2 s a round: after round i the elapsed time is 2(i + 1) s, the pace
    2 s a round, so 2 (n - i - 1) s are left; the estimate is shown once
    the fit has run estimate_after seconds."""
    X, y, _, _ = regression
    stream = io.StringIO()
    n = 40
    clock = _RoundClock(2.0)
    monitor = EvaluationMonitor(period=10, stream=stream, total_rounds=n,
                                estimate_after=15.0, clock=clock)
    BoostRegressor(n_estimators=n, callbacks=[clock, monitor]).fit(X, y)
    lines = stream.getvalue().strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == [
        "[0]", "[10]", "[20]", "[30]", "[39]"]
    fields = [dict(f.split(":", 1) for f in line.split("\t")[1:])
              for line in lines]
    assert [f["elapsed"] for f in fields] == ["2.0s", "22.0s", "42.0s",
                                             "1m02s", "1m20s"]
    assert "left" not in fields[0]             # before estimate_after
    assert [f.get("left") for f in fields[1:]] == ["~58.0s", "~38.0s",
                                                    "~18.0s", None]


def test_verbose_lines_go_through_logging(regression, caplog, capsys):
    import logging

    X, y, X_val, y_val = regression
    with caplog.at_level(logging.INFO, logger="skboost"):
        BoostRegressor(n_estimators=3).fit(X, y, eval_set=[(X_val, y_val)],
                                           verbose=True)
    printed = capsys.readouterr().out.strip().splitlines()
    logged = [r.getMessage() for r in caplog.records if r.name == "skboost"]
    assert logged == printed and len(logged) == 3
    assert all("elapsed:" in line for line in logged)
    # a handler on the "skboost" logger routes the lines: nothing printed
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("skboost")
    logger.addHandler(handler)
    try:
        with caplog.at_level(logging.INFO, logger="skboost"):
            BoostRegressor(n_estimators=2).fit(X, y, verbose=True)
    finally:
        logger.removeHandler(handler)
    assert capsys.readouterr().out == ""
    assert len(stream.getvalue().strip().splitlines()) == 2
