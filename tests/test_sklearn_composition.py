"""The estimators inside scikit-learn's composition and model-selection
tools, end to end, and the thread count they get inside joblib workers.

Oracles: the same computation done by hand (a manual loop over folds,
fitting the parts of a pipeline one by one, averaging predictions for a
partial dependence), since skboost's training is deterministic.
"""

import os

import numpy as np
import pytest
from scipy.stats import randint, uniform
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.ensemble import (StackingClassifier, StackingRegressor,
                              VotingClassifier)
from sklearn.feature_selection import SelectFromModel
from sklearn.inspection import partial_dependence, permutation_importance
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import (GridSearchCV, KFold, RandomizedSearchCV,
                                     StratifiedKFold, cross_val_score,
                                     cross_validate)
from sklearn.multioutput import MultiOutputRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from threadpoolctl import threadpool_limits

from skboost import BoostClassifier, BoostRegressor
from skboost._openmp_helpers import openmp_max_threads
from skboost._threads import available_cpus, effective_n_threads

pd = pytest.importorskip("pandas")

SMALL = dict(n_estimators=10, max_depth=3, n_jobs=1)


def _regression(n=240, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n)
    return X, y


def _classification(n=240, d=6, seed=0, n_classes=2):
    X, y = _regression(n, d, seed)
    return X, np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))


def test_pipeline_with_column_transformer_on_a_dataframe():
    X, y = _classification()
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["colour"] = np.array(["red", "green", "blue"])[(X[:, 2] > 0).astype(int)
                                                         + (X[:, 3] > 1)]
    pre = ColumnTransformer([("onehot", OneHotEncoder(sparse_output=False),
                              ["colour"])], remainder="passthrough")
    pipe = make_pipeline(pre, BoostClassifier(**SMALL)).fit(frame, y)
    # oracle: the parts one after the other
    Z = clone(pre).fit_transform(frame)
    manual = BoostClassifier(**SMALL).fit(Z, y)
    np.testing.assert_array_equal(pipe.predict_proba(frame), manual.predict_proba(Z))


def _manual_cv_scores(est, X, y, cv, score):
    out = []
    for train, test in cv.split(X, y):
        model = clone(est).fit(X[train], y[train])
        out.append(score(y[test], model.predict(X[test])))
    return np.array(out)


def test_cross_val_score_and_cross_validate_match_a_manual_loop():
    X, y = _classification()
    est = BoostClassifier(**SMALL)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    manual = _manual_cv_scores(est, X, y, cv, accuracy_score)
    np.testing.assert_allclose(cross_val_score(est, X, y, cv=cv), manual)
    result = cross_validate(est, X, y, cv=cv, return_estimator=True,
                            scoring=["accuracy", "roc_auc"])
    np.testing.assert_allclose(result["test_accuracy"], manual)
    assert all(isinstance(e, BoostClassifier) for e in result["estimator"])


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_matches_a_manual_search(n_jobs):
    X, y = _regression()
    grid = {"max_depth": [1, 3], "learning_rate": [0.1, 0.5]}
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(BoostRegressor(n_estimators=10, n_jobs=1), grid,
                          cv=cv, n_jobs=n_jobs).fit(X, y)
    for params, score in zip(search.cv_results_["params"],
                             search.cv_results_["mean_test_score"]):
        est = BoostRegressor(n_estimators=10, n_jobs=1, **params)
        assert score == pytest.approx(
            _manual_cv_scores(est, X, y, cv, r2_score).mean(), rel=1e-12)
    best = BoostRegressor(n_estimators=10, n_jobs=1, **search.best_params_).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), best.predict(X))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_randomized_search(n_jobs):
    X, y = _classification(n_classes=3)
    dists = {"max_depth": randint(1, 5), "subsample": uniform(0.5, 0.5),
             "reg_lambda": uniform(0.0, 3.0)}
    search = RandomizedSearchCV(BoostClassifier(**SMALL, random_state=0),
                                dists, n_iter=4, cv=3, random_state=0,
                                n_jobs=n_jobs).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.5  # three balanced classes: chance is 1/3
    # numpy integer parameters from the distributions survive a saved model
    assert isinstance(search.best_params_["max_depth"], (int, np.integer))


def test_clone_gives_an_unfitted_copy_with_equal_parameters():
    X, y = _regression()
    est = BoostRegressor(**SMALL, reg_alpha=0.5).fit(X, y)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "booster_")
    np.testing.assert_array_equal(copy.fit(X, y).predict(X), est.predict(X))


def test_calibrated_classifier():
    X, y = _classification(n=300)
    cal = CalibratedClassifierCV(BoostClassifier(**SMALL), cv=3,
                                 method="isotonic").fit(X, y)
    proba = cal.predict_proba(X)
    assert proba.shape == (300, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert accuracy_score(y, cal.predict(X)) > 0.8


def test_stacking_and_voting():
    X, y = _classification(n_classes=3)
    stack = StackingClassifier(
        [("boost", BoostClassifier(**SMALL)), ("lr", LogisticRegression())],
        final_estimator=LogisticRegression(), cv=3).fit(X, y)
    assert accuracy_score(y, stack.predict(X)) > 0.7
    vote = VotingClassifier([("a", BoostClassifier(**SMALL, max_leaves=4,
                                                   grow_policy="lossguide")),
                             ("b", BoostClassifier(**SMALL))],
                            voting="soft").fit(X, y)
    # oracle: the average of the two models' probabilities
    a = BoostClassifier(**SMALL, max_leaves=4, grow_policy="lossguide").fit(X, y)
    b = BoostClassifier(**SMALL).fit(X, y)
    np.testing.assert_allclose(vote.predict_proba(X),
                               (a.predict_proba(X) + b.predict_proba(X)) / 2)
    Xr, yr = _regression()
    reg = StackingRegressor([("boost", BoostRegressor(**SMALL)),
                             ("lin", LinearRegression())], cv=3).fit(Xr, yr)
    assert r2_score(yr, reg.predict(Xr)) > 0.8


def test_multi_output_regressor_fits_one_model_per_target():
    X, y = _regression()
    Y = np.column_stack([y, X[:, 2] ** 2])
    multi = MultiOutputRegressor(BoostRegressor(**SMALL)).fit(X, Y)
    for k in range(2):
        single = BoostRegressor(**SMALL).fit(X, Y[:, k])
        np.testing.assert_array_equal(multi.predict(X)[:, k], single.predict(X))


def test_transformed_target_regressor():
    X, y = _regression()
    y = np.exp(y / 3)
    ttr = TransformedTargetRegressor(BoostRegressor(**SMALL), func=np.log,
                                     inverse_func=np.exp).fit(X, y)
    manual = np.exp(BoostRegressor(**SMALL).fit(X, np.log(y)).predict(X))
    np.testing.assert_allclose(ttr.predict(X), manual, rtol=1e-12)


def test_select_from_model_keeps_features_above_a_threshold():
    X, y = _regression(d=8)
    est = BoostRegressor(**SMALL, importance_type="total_gain")
    selector = SelectFromModel(est, threshold="0.5*mean").fit(X, y)
    importances = clone(est).fit(X, y).feature_importances_
    np.testing.assert_array_equal(selector.get_support(),
                                  importances >= 0.5 * importances.mean())
    assert selector.get_support()[:2].all()  # the two informative features
    assert selector.transform(X).shape[1] == selector.get_support().sum()


def test_permutation_importance_ranks_the_informative_features_first():
    X, y = _regression()
    est = BoostRegressor(**SMALL).fit(X, y)
    result = permutation_importance(est, X, y, n_repeats=3, random_state=0)
    order = np.argsort(result.importances_mean)[::-1]
    assert set(order[:2]) == {0, 1}


def test_partial_dependence_is_the_average_prediction():
    X, y = _regression()
    est = BoostRegressor(**SMALL).fit(X, y)
    pd_result = partial_dependence(est, X, [0], method="brute",
                                   grid_resolution=7)
    grid = pd_result["grid_values"][0]
    manual = []
    for value in grid:
        Xv = X.copy()
        Xv[:, 0] = value
        manual.append(est.predict(Xv).mean())
    np.testing.assert_allclose(pd_result["average"][0], manual, rtol=1e-12)


def test_partial_dependence_display_renders(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.inspection import PartialDependenceDisplay

    X, y = _classification()
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    est = BoostClassifier(**SMALL).fit(frame, y)
    display = PartialDependenceDisplay.from_estimator(est, frame, ["x0", "x1"])
    path = tmp_path / "pdp.png"
    display.figure_.savefig(path)
    plt.close(display.figure_)
    assert path.stat().st_size > 1000


# --------------------------------------------------------------- threads


def _threads_scorer(estimator, X, y):
    """A 'score' that reports the thread count the default n_jobs resolves
    to where the scorer runs (inside the worker)."""
    return effective_n_threads(estimator.n_jobs)


def test_grid_search_workers_do_not_oversubscribe():
    """GridSearchCV(n_jobs=2) on this machine: each worker's default n_jobs
    uses its share of the cores (joblib limits OpenMP in its workers), so
    2 workers do not run 2 x n_cores busy threads."""
    X, y = _regression(n=60)
    search = GridSearchCV(BoostRegressor(n_estimators=2, n_jobs=None),
                          {"max_depth": [1, 2]}, cv=2, n_jobs=2,
                          scoring=_threads_scorer).fit(X, y)
    share = max(1, (os.cpu_count() or 1) // 2)
    assert np.all(search.cv_results_["mean_test_score"] <= share)
    assert np.all(search.cv_results_["mean_test_score"] >= 1)


def test_threadpoolctl_limits_the_default_thread_count():
    X, y = _regression(n=60)
    with threadpool_limits(limits=1, user_api="openmp"):
        assert effective_n_threads(None) == 1
        assert effective_n_threads(-1) == 1
        est = BoostRegressor(n_estimators=2).fit(X, y)
    assert effective_n_threads(None) == min(available_cpus(),
                                            openmp_max_threads())
    np.testing.assert_array_equal(est.predict(X), BoostRegressor(
        n_estimators=2, n_jobs=2).fit(X, y).predict(X))


def test_n_jobs_never_exceeds_the_available_cpus():
    """The default and any explicit n_jobs resolve to at most the CPUs this
    process may run on (its affinity mask), as joblib does; a huge n_jobs
    trains (it used to crash the process in the OpenMP runtime)."""
    n_cpus = len(os.sched_getaffinity(0))
    assert available_cpus() <= n_cpus
    for n_jobs in (None, -1, 1, 2, 3, 64, 100_000):
        assert 1 <= effective_n_threads(n_jobs) <= n_cpus
    assert effective_n_threads(-n_cpus - 5) == 1
    X, y = _regression(n=60)
    BoostRegressor(n_estimators=2, n_jobs=100_000).fit(X, y).predict(X)


def test_cgroup_quota_caps_the_thread_count(tmp_path):
    """A CPU quota of 1.5 CPUs (cgroup v2 file format) allows 2 threads; no
    quota ("max") allows any; cgroup v1 files are read too."""
    from skboost._threads import _cgroup_cpu_quota
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert _cgroup_cpu_quota(str(tmp_path)) == 2
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _cgroup_cpu_quota(str(tmp_path)) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("300000")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert _cgroup_cpu_quota(str(v1)) == 3
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    assert _cgroup_cpu_quota(str(v1)) is None
