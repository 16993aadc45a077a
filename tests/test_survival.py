"""Survival analysis: ``survival:cox`` and ``survival:aft`` (issue 37).

Oracles: XGBoost (the exact method grows the same trees from the same
gradients; its metrics), finite differences of the losses, a brute-force
Breslow gradient and concordance index, scikit-survival's
``concordance_index_censored``, scipy.stats densities.
"""

import pickle

import numpy as np
import pytest
from scipy import stats
from sklearn.model_selection import GridSearchCV, KFold

from skboost import BoostRegressor
from skboost._survival import (CoxRiskSets, aft_gradient, aft_loss,
                               concordance_index, cox_gradient,
                               cox_negative_log_likelihood)

xgb = pytest.importorskip("xgboost")

EXACT = dict(n_estimators=6, max_depth=3, tree_method="exact",
             learning_rate=0.3)
DISTRIBUTIONS = ["normal", "logistic", "extreme"]


def _survival_data(n=400, seed=0, ties=False):
    """Times from a log-linear model (float32 values, as XGBoost stores
    labels), about 30% right-censored."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    time = np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1] + 0.5 * rng.normal(size=n))
    if ties:
        time = np.ceil(time * 4) / 4
    time = time.astype(np.float32).astype(np.float64)
    event = rng.random(n) < 0.7
    return X, time, event


def _mixed_bounds(time, event, seed=0):
    """Observed, right-, left- and interval-censored rows."""
    rng = np.random.default_rng(seed)
    lower, upper = time.copy(), np.where(event, time, np.inf)
    kind = rng.integers(0, 4, size=time.size)
    left = kind == 1
    lower[left], upper[left] = 0.0, time[left]
    interval = kind == 2
    upper[interval] = (time[interval] * 1.5).astype(np.float32)
    return np.column_stack([lower, upper])


def _xgb_aft(X, bounds, distribution, rounds, **params):
    data = xgb.DMatrix(X.astype(np.float32))
    data.set_float_info("label_lower_bound", bounds[:, 0])
    data.set_float_info("label_upper_bound", bounds[:, 1])
    booster = xgb.train(dict(objective="survival:aft", tree_method="exact",
                             max_depth=EXACT["max_depth"],
                             eta=EXACT["learning_rate"],
                             aft_loss_distribution=distribution,
                             base_score=0.5, **params),
                        data, rounds, evals=[(data, "train")],
                        evals_result=(log := {}), verbose_eval=False)
    return booster, data, log


# -- the trees equal XGBoost's ------------------------------------------------

def test_cox_exact_equals_xgboost():
    X, time, event = _survival_data()
    y = np.where(event, time, -time)
    ours = BoostRegressor(objective="survival:cox", **EXACT).fit(X, y)
    theirs = xgb.XGBRegressor(objective="survival:cox", **EXACT).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X),
                               rtol=1e-5)
    for tree, dumped in zip(ours.get_booster().trees,
                            theirs.get_booster().get_dump()):
        assert tree.n_leaves == dumped.count("leaf=")


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_aft_exact_equals_xgboost(distribution):
    X, time, event = _survival_data(seed=1)
    bounds = _mixed_bounds(time, event)
    ours = BoostRegressor(objective="survival:aft", base_score=0.5,
                          aft_loss_distribution=distribution, **EXACT,
                          eval_metric=["aft-nloglik",
                                       "interval-regression-accuracy"])
    ours.fit(X, bounds, eval_set=[(X, bounds)])
    booster, data, log = _xgb_aft(X, bounds, distribution,
                                  EXACT["n_estimators"],
                                  eval_metric=["aft-nloglik",
                                               "interval-regression-accuracy"])
    np.testing.assert_allclose(ours.predict(X), booster.predict(data),
                               rtol=1e-5)
    ours_log = ours.evals_result_["validation_0"]
    np.testing.assert_allclose(ours_log["aft-nloglik"],
                               log["train"]["aft-nloglik"], rtol=1e-5)
    np.testing.assert_allclose(ours_log["interval-regression-accuracy"],
                               log["train"]["interval-regression-accuracy"],
                               atol=1.5 / len(X))


def test_aft_scale_equals_xgboost():
    X, time, event = _survival_data(seed=2)
    bounds = _mixed_bounds(time, event, seed=2)
    ours = BoostRegressor(objective="survival:aft", base_score=0.5,
                          aft_loss_distribution_scale=0.6, **EXACT).fit(
        X, bounds)
    booster, data, _ = _xgb_aft(X, bounds, "normal", EXACT["n_estimators"],
                                aft_loss_distribution_scale=0.6)
    np.testing.assert_allclose(ours.predict(X), booster.predict(data),
                               rtol=1e-5)


def test_cox_nloglik_equals_xgboost():
    X, time, event = _survival_data(seed=3)
    y = np.where(event, time, -time)
    ours = BoostRegressor(objective="survival:cox", **EXACT).fit(
        X, y, eval_set=[(X, y)])
    theirs = xgb.XGBRegressor(objective="survival:cox", **EXACT).fit(
        X, y, eval_set=[(X, y)], verbose=False)
    np.testing.assert_allclose(
        ours.evals_result_["validation_0"]["cox-nloglik"],
        theirs.evals_result()["validation_0"]["cox-nloglik"], rtol=1e-5)


# -- gradients -----------------------------------------------------------------

def _naive_breslow(y, margin):
    """Gradient and diagonal hessian of the Cox loss, term by term."""
    time, event = np.abs(y), y > 0
    risk = np.exp(margin)
    grad, hess = -event.astype(float), np.zeros(y.size)
    for i in np.flatnonzero(event):
        at_risk = time >= time[i]
        total = risk[at_risk].sum()
        share = np.where(at_risk, risk / total, 0.0)
        grad += share
        hess += share - share ** 2
    return grad, hess


@pytest.mark.parametrize("ties", [False, True])
def test_cox_gradient_equals_brute_force(ties):
    X, time, event = _survival_data(n=120, ties=ties)
    y = np.where(event, time, -time)
    margin = np.random.default_rng(5).normal(size=y.size)
    grad, hess = cox_gradient(CoxRiskSets(y), margin)
    expected_grad, expected_hess = _naive_breslow(y, margin)
    np.testing.assert_allclose(grad, expected_grad, atol=1e-12)
    np.testing.assert_allclose(hess, expected_hess, atol=1e-12)


def test_cox_gradient_is_the_derivative_of_the_loss():
    X, time, event = _survival_data(n=60, ties=True)
    y = np.where(event, time, -time)
    margin = np.random.default_rng(6).normal(size=y.size)
    n_events = event.sum()
    grad, _ = cox_gradient(CoxRiskSets(y), margin)
    step = 1e-6
    for k in [0, 7, 33, 59]:
        up, down = margin.copy(), margin.copy()
        up[k] += step
        down[k] -= step
        numeric = n_events * (cox_negative_log_likelihood(y, up)
                              - cox_negative_log_likelihood(y, down)) / (2 * step)
        assert numeric == pytest.approx(grad[k], abs=1e-6)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_aft_gradient_and_hessian_by_finite_differences(distribution):
    X, time, event = _survival_data(n=200, seed=4)
    bounds = _mixed_bounds(time, event, seed=4)
    margin = np.log(np.where(np.isfinite(bounds[:, 1]), bounds[:, 1],
                             bounds[:, 0]) + 0.3) + 0.2
    step = 1e-5
    grad, hess = aft_gradient(bounds, margin, distribution, 0.8)
    loss = lambda m: aft_loss(bounds, m, distribution, 0.8)   # noqa: E731
    numeric_grad = (loss(margin + step) - loss(margin - step)) / (2 * step)
    g = lambda m: aft_gradient(bounds, m, distribution, 0.8)[0]  # noqa: E731
    numeric_hess = (g(margin + step) - g(margin - step)) / (2 * step)
    inside = (np.abs(grad) < 14.9) & (hess > 1e-6) & (hess < 14.9)
    assert inside.mean() > 0.8   # most rows away from the clipping
    np.testing.assert_allclose(grad[inside], numeric_grad[inside], atol=1e-5)
    np.testing.assert_allclose(hess[inside], numeric_hess[inside], atol=1e-4)


@pytest.mark.parametrize("distribution,frozen", [
    ("normal", stats.norm()), ("logistic", stats.logistic()),
    ("extreme", stats.gumbel_l())])
def test_aft_loss_is_the_log_likelihood_of_scipy_distributions(distribution,
                                                                frozen):
    rng = np.random.default_rng(7)
    time = np.exp(rng.normal(size=50))
    margin, sigma = rng.normal(size=50), 0.7
    z = (np.log(time) - margin) / sigma
    floor = -np.log(1e-12)   # the loss's cap (a likelihood floored)

    def check(bounds, expected, rtol):
        actual = aft_loss(bounds, margin, distribution, sigma)
        np.testing.assert_allclose(actual, np.minimum(expected, floor),
                                   rtol=rtol, atol=1e-12)

    # the density of T: f(z) / (sigma t)
    check(np.column_stack([time, time]),
          -(frozen.logpdf(z) - np.log(sigma * time)), 1e-9)
    check(np.column_stack([time, np.full(50, np.inf)]), -frozen.logsf(z),
          1e-7)
    check(np.column_stack([np.zeros(50), time]), -frozen.logcdf(z), 1e-7)


def test_far_margins_take_finite_limits():
    """A margin far from its interval: finite, clipped gradients, pulling
    the margin back (none where the interval is open on that side)."""
    bounds = np.array([[1.0, 1.0], [1.0, np.inf], [0.0, 1.0], [1.0, 2.0]] * 2)
    margin = np.array([80.0] * 4 + [-80.0] * 4)
    for distribution in DISTRIBUTIONS:
        grad, hess = aft_gradient(bounds, margin, distribution, 1.0)
        assert np.all(np.isfinite(grad)) and np.all(hess > 0)
        assert np.all(grad[:4] >= -1e-12) and np.all(grad[4:] <= 1e-12)
        assert grad[0] > 0 and grad[4] < 0     # observed times pull back


# -- concordance ---------------------------------------------------------------

def _naive_concordance(event, time, estimate):
    concordant = comparable = 0.0
    for i in range(time.size):
        if not event[i]:
            continue
        for j in range(time.size):
            if time[i] < time[j] or (time[i] == time[j] and not event[j]):
                comparable += 1
                concordant += (1.0 if estimate[i] > estimate[j]
                               else 0.5 if estimate[i] == estimate[j] else 0.0)
    return concordant / comparable


def test_concordance_index_equals_brute_force_and_scikit_survival():
    rng = np.random.default_rng(8)
    time = rng.integers(1, 30, size=300).astype(float)   # many ties
    event = rng.random(300) < 0.6
    estimate = np.round(rng.normal(size=300) - 0.05 * time, 1)  # ties too
    ours = concordance_index(event, time, estimate)
    assert ours == pytest.approx(_naive_concordance(event, time, estimate),
                                 abs=1e-12)
    sksurv_metrics = pytest.importorskip("sksurv.metrics")
    theirs = sksurv_metrics.concordance_index_censored(event, time,
                                                        estimate)[0]
    assert ours == pytest.approx(theirs, abs=1e-12)


# -- the estimator -------------------------------------------------------------

def test_label_forms_give_the_same_model():
    X, time, event = _survival_data(n=200)
    signed = np.where(event, time, -time)
    structured = np.empty(200, dtype=[("event", bool), ("time", float)])
    structured["event"], structured["time"] = event, time
    bounds = np.column_stack([time, np.where(event, time, np.inf)])
    for objective, forms in [("survival:cox", [signed, structured]),
                             ("survival:aft", [signed, structured, bounds])]:
        predictions = [BoostRegressor(objective=objective, n_estimators=4)
                       .fit(X, y).predict(X) for y in forms]
        for other in predictions[1:]:
            assert np.array_equal(predictions[0], other)


def test_bad_survival_labels_are_clear_errors():
    X = np.zeros((4, 2))
    cox = BoostRegressor(objective="survival:cox", n_estimators=2)
    with pytest.raises(ValueError, match="non-zero times"):
        cox.fit(X, [1.0, 0.0, 2.0, -3.0])
    with pytest.raises(ValueError, match="non-zero times"):
        cox.fit(X, [1.0, np.nan, 2.0, -3.0])
    aft = BoostRegressor(objective="survival:aft", n_estimators=2)
    with pytest.raises(ValueError, match="upper bounds"):
        aft.fit(X, [[1, 2], [3, 1], [1, 1], [2, np.inf]])
    with pytest.raises(ValueError, match="lower bounds"):
        aft.fit(X, [[-1, 2], [3, 4], [1, 1], [2, np.inf]])
    with pytest.raises(ValueError, match="shape"):
        aft.fit(X, np.ones((4, 3)))
    bad = np.zeros(4, dtype=[("time", float), ("event", bool)])
    with pytest.raises(ValueError, match="two fields"):
        cox.fit(X, bad)
    with pytest.raises(ValueError, match="aft_loss_distribution"):
        BoostRegressor(objective="survival:aft",
                       aft_loss_distribution="weibull").fit(
            X, [[1, 1], [2, 2], [3, 3], [4, 4]])


def test_score_is_concordance_and_grid_search_uses_it():
    X, time, event = _survival_data(n=300, seed=9)
    y = np.where(event, time, -time)
    model = BoostRegressor(objective="survival:cox", n_estimators=10).fit(X, y)
    assert model.score(X, y) == pytest.approx(
        _naive_concordance(event, time, model.predict(X)))
    search = GridSearchCV(
        BoostRegressor(objective="survival:cox", n_estimators=10),
        {"max_depth": [1, 3]}, cv=KFold(3, shuffle=True, random_state=0))
    search.fit(X, y)
    assert 0.5 < search.best_score_ <= 1.0


def test_aft_early_stopping_on_interval_eval_set():
    X, time, event = _survival_data(n=400, seed=10)
    bounds = _mixed_bounds(time, event, seed=10)
    model = BoostRegressor(objective="survival:aft", n_estimators=200,
                           early_stopping_rounds=5, learning_rate=0.3)
    model.fit(X[:300], bounds[:300], eval_set=[(X[300:], bounds[300:])])
    log = model.evals_result_["validation_0"]["aft-nloglik"]
    assert model.best_iteration == int(np.argmin(log))
    assert len(log) == model.best_iteration + 6


def test_aft_base_margin_minimises_the_constant_loss():
    X, time, event = _survival_data(n=300, seed=11)
    bounds = _mixed_bounds(time, event, seed=11)
    model = BoostRegressor(objective="survival:aft", n_estimators=1,
                           learning_rate=1e-6).fit(X, bounds)
    base = model.get_booster().base_margin[0]
    grid = base + np.linspace(-0.05, 0.05, 11)
    losses = [aft_loss(bounds, np.full(300, m), "normal", 1.0).mean()
              for m in grid]
    assert int(np.argmin(losses)) == 5


@pytest.mark.parametrize("objective", ["survival:cox", "survival:aft"])
def test_survival_models_round_trip(tmp_path, objective):
    X, time, event = _survival_data(n=200, seed=12)
    y = np.where(event, time, -time)
    model = BoostRegressor(objective=objective, n_estimators=5,
                           aft_loss_distribution="logistic").fit(X, y)
    model.save_model(tmp_path / "m.json")
    loaded = BoostRegressor.load(tmp_path / "m.json")
    assert np.array_equal(loaded.predict(X), model.predict(X))
    assert loaded.aft_loss_distribution == "logistic"
    assert np.array_equal(pickle.loads(pickle.dumps(model)).predict(X),
                          model.predict(X))


def test_concordance_on_a_real_data_set_at_least_xgboosts():
    """gbsg2 (scikit-survival's German Breast Cancer Study): mean held-out
    concordance of 5 folds, skboost's hist against XGBoost's hist."""
    datasets = pytest.importorskip("sksurv.datasets")
    X, y = datasets.load_gbsg2()
    X = X.assign(**{c: X[c].cat.codes for c in X.select_dtypes("category")})
    X = X.to_numpy(dtype=float)
    signed = np.where(y["cens"], y["time"], -y["time"])
    params = dict(n_estimators=60, max_depth=2, learning_rate=0.05,
                  subsample=1.0)
    ours, theirs = [], []
    for train, test in KFold(5, shuffle=True, random_state=0).split(X):
        a = BoostRegressor(objective="survival:cox", **params).fit(
            X[train], signed[train])
        b = xgb.XGBRegressor(objective="survival:cox", **params).fit(
            X[train], signed[train])
        ours.append(a.score(X[test], signed[test]))
        theirs.append(concordance_index(y["cens"][test], y["time"][test],
                                        b.predict(X[test])))
    assert np.mean(ours) >= np.mean(theirs) - 0.005


# (survival:cox and survival:aft on Dask: tests/test_dask_objectives.py)
