"""Objectives: gradients and hessians against finite differences of each
objective's own ``loss``, base margins against a numerical minimiser."""

import sys

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from skboost.distributions import DISTRIBUTION_OBJECTIVES
from skboost.objectives import (OBJECTIVES, RANKING_OBJECTIVES,
                                SURVIVAL_OBJECTIVES, get_objective)
from _isolation import call_outcomes

N_CLASSES = 4


# Objectives with a pointwise loss (the ranking ones have none: see
# test_ranker.py), and a variant with several quantiles. The distributions'
# objectives (Fisher information, not the observed hessian) are tested in
# test_distributions.py; the survival objectives, whose labels are times or
# intervals, in test_survival.py.
POINTWISE = sorted(set(OBJECTIVES) - RANKING_OBJECTIVES - SURVIVAL_OBJECTIVES
                   - set(DISTRIBUTION_OBJECTIVES)) + ["multi-quantile"]
QUANTILES = [0.1, 0.5, 0.8]


def objective(name):
    if name == "multi-quantile":
        return get_objective("reg:quantileerror",
                             {"quantile_alpha": QUANTILES})
    return get_objective(name, {"huber_slope": 1.7,
                                "tweedie_variance_power": 1.3})


def make_data(name, n, seed):
    """(labels, n_outputs) for an objective; a new objective needs an entry."""
    rng = np.random.default_rng(seed)
    if name in ("reg:squarederror", "reg:pseudohubererror",
                "reg:absoluteerror", "reg:quantileerror"):
        return rng.normal(scale=3.0, size=n), 1
    if name == "multi-quantile":
        return rng.normal(scale=3.0, size=n), len(QUANTILES)
    if name == "reg:squaredlogerror":
        return rng.exponential(2.0, size=n), 1
    if name in ("binary:logistic", "binary:logitraw", "reg:logistic"):
        y = (rng.random(n) < 0.4).astype(np.float64)
        y[:3] = [0.25, 0.5, 0.9]  # soft labels are valid too
        return y, 1
    if name == "binary:hinge":
        return (rng.random(n) < 0.4).astype(np.float64), 1
    if name == "count:poisson":
        return rng.poisson(3.0, size=n).astype(np.float64), 1
    if name == "reg:gamma":
        return rng.gamma(2.0, 1.5, size=n), 1
    if name == "reg:tweedie":
        return np.where(rng.random(n) < 0.3, 0.0, rng.gamma(2.0, 1.5, n)), 1
    if name in ("multi:softprob", "multi:softmax"):
        y = rng.integers(0, N_CLASSES, n)
        y[:N_CLASSES] = np.arange(N_CLASSES)  # every class present
        return y, N_CLASSES
    raise AssertionError(f"no test data for objective {name!r}")


def make_margins(name, n, n_outputs, rng):
    if name == "reg:squaredlogerror":  # the loss needs m > -1
        return rng.uniform(-0.5, 4.0, size=(n, n_outputs))
    return rng.normal(scale=1.5, size=(n, n_outputs))


def surrogate_hessian(name, y, m, hess):
    """The hessian an objective's kernel uses in place of the loss's own
    second derivative ``hess`` (XGBoost's choices, named here):

    - absolute and quantile errors: the loss is piecewise linear (hess 0);
      the kernel uses 1 and the leaves are re-fitted to quantiles after the
      tree is grown, so only the tree structure depends on it;
    - hinge: 1 inside the margin, FLT_MIN outside;
    - poisson: ``exp(m + max_delta_step)``, ``max_delta_step`` 0.7 by default,
      a safeguard that slows the steps of the exp link;
    - squared log error: floored at 1e-6 where the loss is concave;
    - softmax: twice the diagonal (see test_softmax_diagonal_bounds...).
    """
    if name in ("reg:absoluteerror", "reg:quantileerror", "multi-quantile"):
        return 1.0
    if name == "binary:hinge":
        return 1.0 if (2 * y - 1) * m < 1 else np.finfo(np.float32).tiny
    if name == "count:poisson":
        return np.exp(0.7) * hess
    if name == "reg:squaredlogerror":
        return max(hess, 1e-6)
    if name.startswith("multi:"):
        return 2.0 * hess
    return hess


def gradient_pairs(obj, y, raw, weight, n_threads=1):
    gpair = np.full((raw.shape[1], raw.shape[0], 2), np.nan, dtype=np.float32)
    obj.gradient(obj.prepare_labels(y), raw, weight, gpair, n_threads)
    return gpair


def row_loss(obj, y, raw, i):
    """Loss of row i alone (the weighted mean over one row is its loss)."""
    return lambda m: obj.loss(obj.prepare_labels(y[i:i + 1]), m[None, :],
                              np.ones(1))


def finite_differences(f, m, k, eps_grad=1e-5, eps_hess=1e-4):
    """First and second central differences of f along coordinate k."""
    def at(delta):
        shifted = m.copy()
        shifted[k] += delta
        return f(shifted)
    grad = (at(eps_grad) - at(-eps_grad)) / (2 * eps_grad)
    hess = (at(eps_hess) - 2 * at(0.0) + at(-eps_hess)) / eps_hess**2
    return grad, hess


@pytest.mark.parametrize("name", POINTWISE)
@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_and_hessian_match_finite_differences(name, weighted):
    obj = objective(name)
    n = 40
    y, n_outputs = make_data(name, n, seed=0)
    rng = np.random.default_rng(1)
    raw = make_margins(name, n, n_outputs, rng)
    weight = rng.uniform(0.2, 3.0, n) if weighted else np.ones(n)
    gpair = gradient_pairs(obj, y, raw, weight)
    for i in range(n):
        f = row_loss(obj, y, raw, i)
        for k in range(n_outputs):
            grad, hess = finite_differences(f, raw[i].copy(), k)
            hess = surrogate_hessian(name, y[i], raw[i, k], hess)
            # gpair holds float32 values already multiplied by the weight.
            assert gpair[k, i, 0] == pytest.approx(weight[i] * grad, rel=1e-5,
                                                   abs=1e-6), (i, k)
            assert gpair[k, i, 1] == pytest.approx(weight[i] * hess, rel=1e-4,
                                                   abs=1e-5), (i, k)


def test_softmax_diagonal_bounds_the_full_hessian():
    """What the factor 2 is for: diag(2 p (1 - p)) - Hessian is positive
    semi-definite, the Hessian computed by finite differences of the loss."""
    obj = get_objective("multi:softprob")
    rng = np.random.default_rng(2)
    y, K = make_data("multi:softprob", 10, seed=2)
    raw = rng.normal(scale=2.0, size=(10, K))
    raw[0] = [4.0, 0.0, 0.0, 0.0]  # one dominant class
    gpair = gradient_pairs(obj, y, raw, np.ones(10))
    eps = 1e-4
    for i in range(10):
        f = row_loss(obj, y, raw, i)
        full = np.empty((K, K))
        for a in range(K):
            for b in range(K):
                def at(da, db):
                    m = raw[i].copy()
                    m[a] += da
                    m[b] += db
                    return f(m)
                full[a, b] = (at(eps, eps) - at(eps, -eps) - at(-eps, eps)
                              + at(-eps, -eps)) / (4 * eps**2)
        bound = np.diag(gpair[:, i, 1].astype(np.float64)) - full
        assert np.linalg.eigvalsh(bound).min() > -1e-5


def single_output(obj, k):
    """Output k of a multi-quantile objective as a one-quantile objective."""
    if obj.n_outputs(None) == 1:
        return obj
    return get_objective("reg:quantileerror",
                         {"quantile_alpha": obj.alphas[k]})


def weighted_loss_of_constant(obj, y, weight, n_outputs):
    """The weighted loss of the constant margin vector c (a scalar if 1)."""
    labels = obj.prepare_labels(y)
    return lambda c: obj.loss(
        labels, np.tile(np.reshape(c, (1, n_outputs)), (len(y), 1)), weight)


# Losses whose minimiser is an interval (piecewise linear): the estimate must
# reach the minimum loss, not a particular point of the interval.
PIECEWISE_LINEAR = {"reg:absoluteerror", "reg:quantileerror", "multi-quantile",
                    "binary:hinge"}


@pytest.mark.parametrize("name", POINTWISE)
@pytest.mark.parametrize("weighted", [False, True])
def test_estimate_base_margin_minimises_the_weighted_loss(name, weighted):
    obj = objective(name)
    n = 200
    y, n_outputs = make_data(name, n, seed=3)
    rng = np.random.default_rng(4)
    weight = rng.uniform(0.1, 5.0, n) if weighted else np.ones(n)
    margin = obj.estimate_base_margin(obj.prepare_labels(y), weight, n_outputs)
    assert margin.shape == (n_outputs,)
    loss = weighted_loss_of_constant(obj, y, weight, n_outputs)
    if name in PIECEWISE_LINEAR:
        best = np.array([minimize_scalar(
            lambda c: weighted_loss_of_constant(
                single_output(obj, k), y, weight, 1)(c),
            bounds=(-10, 10), method="bounded",
            options={"xatol": 1e-10}).x for k in range(n_outputs)])
    elif n_outputs == 1:
        # the squared log error is defined for margins > -1
        bracket = (0.0, 5.0) if name == "reg:squaredlogerror" else (-5.0, 5.0)
        best = minimize_scalar(loss, bracket=bracket,
                               options={"xtol": 1e-12}).x
        assert margin[0] == pytest.approx(best, abs=1e-5)
    else:
        best = minimize(loss, np.zeros(n_outputs), method="BFGS",
                        options={"gtol": 1e-10}).x
        # softmax ignores a common shift: compare the probabilities
        p = np.exp(margin - margin.max())
        p_best = np.exp(best - best.max())
        np.testing.assert_allclose(p / p.sum(), p_best / p_best.sum(),
                                   atol=1e-5)
    # and it is at least as good as the numerical minimiser
    assert loss(margin) <= loss(best) + 1e-10


@pytest.mark.parametrize("base_score", [0.0, 1.0, -0.5, 1.5, np.nan, np.inf])
def test_logistic_base_score_outside_unit_interval_rejected(base_score):
    with pytest.raises(ValueError):
        get_objective("binary:logistic").base_score_to_margin(base_score, 1)


@pytest.mark.parametrize("base_score", [1e-6, 0.3, 0.5, 0.999])
def test_logistic_base_score_is_its_log_odds(base_score):
    margin = get_objective("binary:logistic").base_score_to_margin(
        base_score, 1)
    assert margin.shape == (1,)
    assert margin[0] == pytest.approx(np.log(base_score / (1 - base_score)),
                                      rel=1e-12)
    # and the link maps it back
    assert 1 / (1 + np.exp(-margin[0])) == pytest.approx(base_score,
                                                         rel=1e-12)


@pytest.mark.parametrize("name", POINTWISE)
def test_threads_give_identical_results(name):
    obj = objective(name)
    n = 20_000
    y, n_outputs = make_data(name, n, seed=5)
    rng = np.random.default_rng(6)
    raw = make_margins(name, n, n_outputs, rng)
    weight = rng.uniform(0.5, 2.0, n)
    one = gradient_pairs(obj, y, raw, weight, n_threads=1)
    two = gradient_pairs(obj, y, raw, weight, n_threads=2)
    assert not np.isnan(one).any()
    np.testing.assert_array_equal(one, two)


# --------------------------------------------------------------------------
# Invalid arguments of the gradient kernels: a ValueError, never a write
# out of bounds or a crash. Each call runs in a child process so that a
# crash (or a corrupted heap) fails its own case only.
# --------------------------------------------------------------------------

outcomes_in_child_processes = call_outcomes


N = 6


def per_row_kernel_args(kernel, **changes):
    args = dict(y=np.zeros(N), raw=np.zeros(N), weight=np.ones(N),
                gpair=np.zeros((N, 2), np.float32), n_threads=1)
    args.update(changes)
    return ("skboost._objectives", kernel, (), args)


def softmax_kernel_args(**changes):
    args = dict(y=np.zeros(N, np.int32), raw=np.zeros((N, 3)),
                weight=np.ones(N), gpair=np.zeros((3, N, 2), np.float32),
                n_threads=1)
    args.update(changes)
    return ("skboost._objectives", "softmax_gradient", (), args)


BAD_KERNEL_CALLS = {}
for _kernel in ("squared_error_gradient", "logistic_gradient"):
    BAD_KERNEL_CALLS.update({
        f"{_kernel}: gpair (n, 1)": per_row_kernel_args(
            _kernel, gpair=np.zeros((N, 1), np.float32)),
        f"{_kernel}: gpair (n, 3)": per_row_kernel_args(
            _kernel, gpair=np.zeros((N, 3), np.float32)),
        f"{_kernel}: gpair of other rows": per_row_kernel_args(
            _kernel, gpair=np.zeros((N - 1, 2), np.float32)),
        f"{_kernel}: raw of other rows": per_row_kernel_args(
            _kernel, raw=np.zeros(N + 1)),
        f"{_kernel}: n_threads -1": per_row_kernel_args(_kernel, n_threads=-1),
    })
def elementwise_kernel_args(**changes):
    from skboost._objectives import LOSS_CODES
    args = dict(loss=LOSS_CODES["tweedie"], y=np.zeros(N), raw=np.zeros(N),
                weight=np.ones(N), gpair=np.zeros((N, 2), np.float32),
                param=1.5, n_threads=1)
    args.update(changes)
    return ("skboost._objectives", "elementwise_gradient", (), args)


BAD_KERNEL_CALLS.update({
    "elementwise_gradient: loss code 0": elementwise_kernel_args(loss=0),
    "elementwise_gradient: loss code 99": elementwise_kernel_args(loss=99),
    "elementwise_gradient: gpair (n, 1)": elementwise_kernel_args(
        gpair=np.zeros((N, 1), np.float32)),
    "elementwise_gradient: gpair of other rows": elementwise_kernel_args(
        gpair=np.zeros((N + 1, 2), np.float32)),
    "elementwise_gradient: weight of other rows": elementwise_kernel_args(
        weight=np.ones(N - 1)),
    "elementwise_gradient: n_threads -1": elementwise_kernel_args(
        n_threads=-1),
})
BAD_KERNEL_CALLS.update({
    "softmax_gradient: gpair (K, n, 1)": softmax_kernel_args(
        gpair=np.zeros((3, N, 1), np.float32)),
    "softmax_gradient: gpair of other classes": softmax_kernel_args(
        gpair=np.zeros((2, N, 2), np.float32)),
    "softmax_gradient: weight of other rows": softmax_kernel_args(
        weight=np.ones(N - 1)),
    "softmax_gradient: class index beyond K": softmax_kernel_args(
        y=np.full(N, 3, np.int32)),
    "softmax_gradient: n_threads -1": softmax_kernel_args(n_threads=-1),
})


@pytest.fixture(scope="module")
def kernel_outcomes():
    valid = [per_row_kernel_args("squared_error_gradient"),
             per_row_kernel_args("logistic_gradient"), softmax_kernel_args(),
             elementwise_kernel_args()]
    outcomes = outcomes_in_child_processes(
        valid + list(BAD_KERNEL_CALLS.values()))
    return outcomes[:4], dict(zip(BAD_KERNEL_CALLS, outcomes[4:]))


def test_valid_kernel_calls_run(kernel_outcomes):
    assert kernel_outcomes[0] == ["returned"] * 4


@pytest.mark.parametrize("case", list(BAD_KERNEL_CALLS))
def test_gradient_kernels_reject_bad_arguments(case, kernel_outcomes):
    assert kernel_outcomes[1][case] == "ValueError"


# --------------------------------------------------------------------------
# The objectives through the estimators
# --------------------------------------------------------------------------

from sklearn.datasets import make_classification, make_regression  # noqa: E402

from skboost import BoostClassifier, BoostRegressor  # noqa: E402


@pytest.fixture(scope="module")
def positive_regression():
    X, y = make_regression(n_samples=800, n_features=6, noise=5.0,
                           random_state=0)
    return X, (y - y.min()) / 50  # in [0, ~17]


# base_score is given where XGBoost's own estimate differs from the loss
# minimiser skboost uses (one Newton step from its default, for these two).
XGBOOST_REGRESSION_CASES = [
    ("reg:squarederror", lambda y: y, {}),
    ("reg:pseudohubererror", lambda y: y, {"huber_slope": 5.0,
                                           "base_score": 7.0}),
    ("reg:squaredlogerror", lambda y: y, {"base_score": 1.0}),
    ("count:poisson", np.round, {}),
    ("count:poisson", np.round, {"max_delta_step": 0.2}),
    ("reg:gamma", lambda y: y + 0.1, {}),
    ("reg:tweedie", lambda y: y, {"tweedie_variance_power": 1.3}),
    ("reg:logistic", lambda y: y / y.max(), {}),
]


@pytest.mark.parametrize("name, target, extra", XGBOOST_REGRESSION_CASES,
                         ids=[f"{c[0]}{c[2]}" for c in XGBOOST_REGRESSION_CASES])
def test_regression_objectives_match_xgboost(positive_regression, name,
                                             target, extra):
    """Same data and parameters, exact greedy method: the same model as
    XGBoost's, up to float32 rounding (XGBoost sums margins in float32)."""
    xgb = pytest.importorskip("xgboost")
    X, y = positive_regression
    y = target(y)
    params = dict(n_estimators=10, max_depth=4, learning_rate=0.3,
                  tree_method="exact", objective=name, **extra)
    ours = BoostRegressor(**params).fit(X, y).predict(X)
    theirs = xgb.XGBRegressor(**params).fit(X, y).predict(X)
    np.testing.assert_allclose(ours, theirs, rtol=2e-6)


@pytest.mark.parametrize("name", ["binary:logistic", "binary:logitraw",
                                  "multi:softprob", "multi:softmax"])
def test_classification_objectives_match_xgboost(name):
    xgb = pytest.importorskip("xgboost")
    X, y = make_classification(n_samples=800, n_features=6, n_informative=4,
                               n_classes=3, random_state=0)
    if name.startswith("binary:"):
        y = (y == 1).astype(int)
    params = dict(n_estimators=10, max_depth=4, learning_rate=0.3,
                  tree_method="exact", objective=name)
    if name == "binary:logitraw":
        # XGBoost's estimate is the mean label taken as a margin, not the
        # loss minimiser (the log-odds of the mean) skboost uses
        params["base_score"] = 0.0
    ours = BoostClassifier(**params).fit(X, y)
    theirs = xgb.XGBClassifier(**params).fit(X, y)
    np.testing.assert_allclose(ours.predict(X, output_margin=True),
                               theirs.predict(X, output_margin=True),
                               rtol=2e-6, atol=1e-6)
    if name != "binary:logitraw":  # XGBoost returns margins as probabilities
        np.testing.assert_allclose(ours.predict_proba(X),
                                   theirs.predict_proba(X), atol=1e-6)


def test_scale_pos_weight_is_a_weight_on_the_positive_class():
    X, y = make_classification(n_samples=500, n_features=5, weights=[0.8],
                               random_state=1)
    scaled = BoostClassifier(n_estimators=8, scale_pos_weight=4.0).fit(X, y)
    weighted = BoostClassifier(n_estimators=8).fit(
        X, y, sample_weight=np.where(y == 1, 4.0, 1.0))
    np.testing.assert_array_equal(scaled.predict_proba(X),
                                  weighted.predict_proba(X))
    plain = BoostClassifier(n_estimators=8).fit(X, y)
    assert scaled.predict_proba(X)[:, 1].mean() > (
        plain.predict_proba(X)[:, 1].mean())


def test_poisson_default_max_delta_step_is_xgboosts_07(positive_regression):
    X, y = positive_regression
    y = np.round(y)
    default = BoostRegressor(n_estimators=5, objective="count:poisson")
    explicit = BoostRegressor(n_estimators=5, objective="count:poisson",
                              max_delta_step=0.7)
    unclipped = BoostRegressor(n_estimators=5, objective="count:poisson",
                               max_delta_step=0.0)
    np.testing.assert_array_equal(default.fit(X, y).predict(X),
                                  explicit.fit(X, y).predict(X))
    assert not np.array_equal(default.predict(X),
                              unclipped.fit(X, y).predict(X))


@pytest.mark.parametrize("method", ["exact", "hist", "approx"])
@pytest.mark.parametrize("alpha", [0.5, 0.2, [0.1, 0.9]])
def test_leaf_values_are_weighted_quantiles_of_the_residuals(
        positive_regression, method, alpha):
    """One tree of reg:quantileerror / reg:absoluteerror: every leaf holds
    learning_rate times the weighted alpha-quantile of the residuals of its
    rows (the smallest residual whose cumulative weight reaches alpha)."""
    X, y = positive_regression
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    alphas = np.atleast_1d(alpha)
    objective = ("reg:absoluteerror" if alpha == 0.5
                 else "reg:quantileerror")
    reg = BoostRegressor(n_estimators=1, max_depth=3, learning_rate=0.5,
                         tree_method=method, objective=objective,
                         quantile_alpha=alpha, base_score=2.0)
    reg.fit(X, y, sample_weight=w)
    prediction = reg.predict(X).reshape(len(y), -1)
    leaves = reg.apply(X)
    for k, a in enumerate(alphas):
        for leaf in np.unique(leaves[:, k]):
            rows = leaves[:, k] == leaf
            residual, weight = y[rows] - 2.0, w[rows]
            order = np.argsort(residual)
            cumulative = np.cumsum(weight[order])
            quantile = residual[order][np.argmax(
                cumulative >= a * cumulative[-1] * (1 - 1e-12))]
            np.testing.assert_allclose(prediction[rows, k],
                                       2.0 + 0.5 * quantile, rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.5, 0.37])
def test_unweighted_leaf_values_interpolate_like_xgboost(positive_regression,
                                                         alpha):
    """Without weights XGBoost interpolates the quantile between order
    statistics at alpha (n + 1) (numpy's "weibull" method)."""
    X, y = positive_regression
    reg = BoostRegressor(n_estimators=1, max_depth=3, learning_rate=0.5,
                         objective="reg:quantileerror", quantile_alpha=alpha,
                         base_score=2.0).fit(X, y)
    leaves = reg.apply(X)[:, 0]
    prediction = reg.predict(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        quantile = np.quantile(y[rows] - 2.0, alpha, method="weibull")
        np.testing.assert_allclose(prediction[rows], 2.0 + 0.5 * quantile,
                                   rtol=1e-12)


def test_quantile_regression_covers_its_quantiles(positive_regression):
    X, y = positive_regression
    reg = BoostRegressor(n_estimators=30, max_depth=3,
                         objective="reg:quantileerror",
                         quantile_alpha=[0.1, 0.5, 0.9]).fit(X, y)
    coverage = (y[:, None] <= reg.predict(X)).mean(axis=0)
    np.testing.assert_allclose(coverage, [0.1, 0.5, 0.9], atol=0.03)


def test_hinge_predicts_classes_and_hard_probabilities():
    X, y = make_classification(n_samples=400, n_features=5, random_state=2)
    clf = BoostClassifier(n_estimators=10, objective="binary:hinge").fit(X, y)
    proba = clf.predict_proba(X)
    assert set(np.unique(proba)) <= {0.0, 1.0}
    np.testing.assert_array_equal(clf.predict(X), proba[:, 1])
    np.testing.assert_array_equal(clf.predict(X),
                                  clf.decision_function(X) > 0)
    assert clf.score(X, y) > 0.9


def test_callable_objective_matches_the_built_in_one(positive_regression):
    X, y = positive_regression

    def squared_error(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_true)

    received = []

    def weighted_logistic(y_true, y_pred, sample_weight):
        received.append(sample_weight)
        p = 1 / (1 + np.exp(-y_pred))
        return (p - y_true) * sample_weight, p * (1 - p) * sample_weight

    w = np.random.default_rng(0).uniform(0.5, 2, len(y))
    custom = BoostRegressor(n_estimators=5, objective=squared_error).fit(
        X, y, sample_weight=w)
    built_in = BoostRegressor(n_estimators=5, base_score=0.0).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(custom.predict(X), built_in.predict(X),
                               rtol=1e-6, atol=1e-6)
    labels = (y > np.median(y)).astype(int)
    # exact: the weights of hist's cut points would differ (the callable,
    # not the grower, applies them)
    custom = BoostClassifier(n_estimators=5, objective=weighted_logistic,
                             tree_method="exact").fit(X, labels,
                                                      sample_weight=w)
    built_in = BoostClassifier(n_estimators=5, base_score=0.5,
                               tree_method="exact").fit(X, labels,
                                                        sample_weight=w)
    np.testing.assert_allclose(custom.predict_proba(X),
                               built_in.predict_proba(X), atol=1e-6)
    assert len(received) == 5
    np.testing.assert_array_equal(received[0], w)


def test_callable_objective_with_bad_output_is_rejected(positive_regression):
    X, y = positive_regression
    with pytest.raises(ValueError, match="shape"):
        BoostRegressor(n_estimators=2, objective=lambda t, p: (p, p[:-1])).fit(
            X, y)
    with pytest.raises(ValueError, match="NaN"):
        BoostRegressor(n_estimators=2, objective=lambda t, p: (
            p * np.nan, np.ones_like(p))).fit(X, y)


@pytest.mark.parametrize("objective, labels, match", [
    ("count:poisson", [1.0, -1.0, 2.0, 0.0], "non-negative"),
    ("reg:tweedie", [1.0, -0.5, 2.0, 0.0], "non-negative"),
    ("reg:gamma", [1.0, 0.0, 2.0, 3.0], "positive"),
    ("reg:gamma", [1.0, -2.0, 2.0, 3.0], "positive"),
    ("reg:logistic", [0.0, 1.5, 0.5, 1.0], r"\[0, 1\]"),
    ("reg:logistic", [0.0, -0.1, 0.5, 1.0], r"\[0, 1\]"),
    ("reg:squaredlogerror", [0.0, -1.0, 0.5, 1.0], "greater than -1"),
])
def test_invalid_labels_are_rejected(objective, labels, match):
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ValueError, match=match) as info:
        BoostRegressor(n_estimators=2, objective=objective).fit(X, labels)
    assert objective in str(info.value)


@pytest.mark.parametrize("params, match", [
    (dict(objective="reg:quantileerror", quantile_alpha=[0.2, 1.0]),
     "quantile_alpha"),
    (dict(objective="binary:hinge"), "two classes"),
])
def test_invalid_objective_settings_are_rejected(params, match):
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 1, 2, 0, 1, 2])
    estimator = (BoostClassifier if params["objective"].startswith("binary")
                 else BoostRegressor)
    with pytest.raises(ValueError, match=match):
        estimator(n_estimators=2, **params).fit(X, y)


@pytest.mark.parametrize("objective, extra", [
    ("reg:quantileerror", {"quantile_alpha": [0.2, 0.8]}),
    ("reg:absoluteerror", {}),
    ("count:poisson", {}),
    ("reg:tweedie", {}),
    ("reg:pseudohubererror", {}),
])
def test_models_do_not_depend_on_threads(positive_regression, objective,
                                         extra):
    X, y = positive_regression
    y = np.round(y) if objective == "count:poisson" else y
    one, two = (BoostRegressor(n_estimators=5, objective=objective, n_jobs=n,
                               subsample=0.8, random_state=0, **extra
                               ).fit(X, y).predict(X) for n in (1, 2))
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("objective, extra", [
    ("reg:absoluteerror", {}),
    ("reg:quantileerror", {"quantile_alpha": 0.37}),
    ("reg:quantileerror", {"quantile_alpha": [0.1, 0.77]}),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_leaf_refit_matches_xgboost(positive_regression, objective, extra,
                                    weighted):
    """Trees of one leaf (a huge gamma) isolate the re-fit from the split
    finding: each round's leaf is the quantile of all the residuals, and
    XGBoost's (hist) agrees for weighted and unweighted data."""
    xgb = pytest.importorskip("xgboost")
    X, y = positive_regression
    w = (np.random.default_rng(0).uniform(0.5, 2.0, len(y)) if weighted
         else None)
    params = dict(n_estimators=3, gamma=1e9, learning_rate=0.3,
                  tree_method="hist", objective=objective, base_score=6.0,
                  **extra)
    ours = BoostRegressor(**params).fit(X, y, sample_weight=w).predict(X)
    theirs = xgb.XGBRegressor(**params).fit(X, y, sample_weight=w).predict(X)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_multiclass_callable_objective_matches_softprob():
    X, y = make_classification(n_samples=600, n_features=6, n_informative=4,
                               n_classes=3, random_state=3)

    def softmax_objective(y_true, y_pred):
        assert y_pred.shape == (len(y_true), 3)
        p = np.exp(y_pred - y_pred.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        onehot = np.eye(3)[y_true.astype(int)]
        return p - onehot, np.maximum(2 * p * (1 - p), 1e-16)

    custom = BoostClassifier(n_estimators=5, objective=softmax_objective)
    # base_score 0.5 on every class: the same probabilities as margins 0
    built_in = BoostClassifier(n_estimators=5, base_score=0.5)
    np.testing.assert_allclose(custom.fit(X, y).predict_proba(X),
                               built_in.fit(X, y).predict_proba(X),
                               atol=1e-6)


@pytest.mark.parametrize("objective", ["multi:softprob", "multi:softmax"])
def test_two_classes_under_a_multi_objective(objective):
    """scikit-learn's binary convention: a 1-D decision_function whose sign
    gives the class; it is the log-odds of classes_[1]."""
    X, y = make_classification(n_samples=300, n_features=5, random_state=4)
    clf = BoostClassifier(n_estimators=5, objective=objective).fit(X, y)
    margin = clf.decision_function(X)
    proba = clf.predict_proba(X)
    assert margin.shape == (300,)
    np.testing.assert_allclose(margin, np.log(proba[:, 1] / proba[:, 0]),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[
        (margin > 0).astype(int)])
