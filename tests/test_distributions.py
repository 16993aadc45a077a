"""Distributional regression (``skboost/distributions.py``,
``BoostDistributionRegressor``).

Oracles: scipy.stats (log-densities, means, quantiles of the same
parameters), central finite differences of the NLL (gradients), the
Fisher information as E[score²] by numerical integration or summation
over the support, the CRPS as the integral of (F(x) - 1{x >= y})² by
quadrature (a sum over the support for counts), the closed-form MLE of
the normal and Poisson constant models, and the data-generating process of
heteroscedastic data.
"""

import pickle

import numpy as np
import pytest
from scipy import integrate, stats

from skboost import BoostDistributionRegressor
from skboost.distributions import (FAMILIES, HESSIAN_FLOOR,
                                   DistributionObjective, get_family)
from skboost.objectives import get_objective

# (family, margins of three rows, labels in the support)
CASES = {
    "normal": ([[0.3, -0.2], [-1.0, 0.4], [2.0, 0.0]], [0.1, 1.5, -0.7]),
    "lognormal": ([[0.3, -0.2], [-1.0, 0.4], [2.0, 0.0]], [0.8, 2.5, 6.0]),
    "gamma": ([[0.3, 0.5], [-1.0, 1.2], [2.0, -0.3]], [0.8, 0.2, 12.0]),
    "poisson": ([[0.3], [-1.0], [2.5]], [0.0, 2.0, 9.0]),
    "negbinomial": ([[0.3, 0.5], [1.0, -0.4], [2.5, 1.5]], [0.0, 7.0, 9.0]),
    "studentt": ([[0.3, -0.2], [-1.0, 0.4], [2.0, 0.0]], [0.1, 4.5, -0.7]),
}


def _case(name):
    raw, y = CASES[name]
    return get_family(name, student_df=4.0), np.array(raw), np.array(y)


def _logpdf(dist, y, family):
    return dist.logpmf(y) if family.discrete else dist.logpdf(y)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_nll_mean_and_quantiles_are_scipys(name):
    family, raw, y = _case(name)
    dist = family.frozen(raw)
    np.testing.assert_allclose(family.nll(y, raw), -_logpdf(dist, y, family),
                               rtol=1e-10)
    np.testing.assert_allclose(family.mean(raw), dist.mean(), rtol=1e-10)
    q = np.array([0.05, 0.5, 0.95])
    expected = np.column_stack([dist.ppf(np.full(3, p)) for p in q])
    np.testing.assert_allclose(family.quantiles(raw, q), expected, rtol=1e-10)
    # the parameters are scipy's own keywords
    scipy_dist = getattr(stats, {"normal": "norm", "lognormal": "lognorm",
                                 "gamma": "gamma", "poisson": "poisson",
                                 "negbinomial": "nbinom",
                                 "studentt": "t"}[name])
    np.testing.assert_allclose(
        scipy_dist(**family.natural(raw)).mean(), dist.mean(), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_gradients_are_finite_differences_of_the_nll(name):
    family, raw, y = _case(name)
    grad, _ = family.grad_fisher(y, raw)
    step = 1e-6
    for k in range(raw.shape[1]):
        up, down = raw.copy(), raw.copy()
        up[:, k] += step
        down[:, k] -= step
        numeric = (family.nll(y, up) - family.nll(y, down)) / (2 * step)
        np.testing.assert_allclose(grad[:, k], numeric, rtol=1e-6, atol=1e-7)


def _expected_square_score(family, theta, k):
    """E[(d nll / d margin_k)²] under the distribution of ``theta``: the
    Fisher information, by quadrature or a sum over the support."""
    raw = theta[np.newaxis, :]
    dist = family.frozen(raw)

    def score_sq(x):
        grad, _ = family.grad_fisher(np.array([x], dtype=float), raw)
        return grad[0, k] ** 2
    if family.discrete:
        support = np.arange(0, int(dist.ppf(np.array([1 - 1e-13]))[0]) + 1)
        return sum(score_sq(x) * dist.pmf(np.array([x]))[0] for x in support)
    low, high = dist.ppf(np.array([1e-12]))[0], dist.ppf(np.array([1 - 1e-12]))[0]
    value, _ = integrate.quad(lambda x: score_sq(x) * dist.pdf(np.array([x]))[0],
                              low, high, limit=400)
    return value


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_hessians_are_the_fisher_information(name):
    """Every closed-form Fisher entry equals E[score²]; the negative
    binomial's log size (observed hessian, clipped) equals the finite
    difference of its gradient where that is above the floor."""
    family, raw, y = _case(name)
    _, fisher = family.grad_fisher(y, raw)
    assert np.all(fisher > 0)
    for row in range(raw.shape[0]):
        for k in range(raw.shape[1]):
            if name == "negbinomial" and k == 1:
                continue
            expected = _expected_square_score(family, raw[row], k)
            assert fisher[row, k] == pytest.approx(expected, rel=1e-5), (row, k)
    if name == "negbinomial":
        step = 1e-5
        up, down = raw.copy(), raw.copy()
        up[:, 1] += step
        down[:, 1] -= step
        numeric = (family.grad_fisher(y, up)[0][:, 1]
                   - family.grad_fisher(y, down)[0][:, 1]) / (2 * step)
        np.testing.assert_allclose(fisher[:, 1],
                                   np.maximum(numeric, HESSIAN_FLOOR),
                                   rtol=1e-5, atol=1e-8)


def _crps_by_integration(family, theta, y):
    raw = theta[np.newaxis, :]
    dist = family.frozen(raw)
    if family.discrete:
        top = int(max(dist.ppf(np.array([1 - 1e-14]))[0], y)) + 1
        k = np.arange(0, top + 1)
        return float(np.sum((dist.cdf(k) - (k >= y)) ** 2))

    def below(x):
        return dist.cdf(np.array([x]))[0] ** 2

    def above(x):
        return (1.0 - dist.cdf(np.array([x]))[0]) ** 2
    low = dist.ppf(np.array([1e-14]))[0]
    if family.positive:
        low = 0.0
    left, _ = integrate.quad(below, low, y, limit=400)
    right, _ = integrate.quad(above, y, np.inf, limit=400)
    return left + right


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_crps_is_the_integral_of_the_squared_cdf_difference(name):
    family, raw, y = _case(name)
    crps = family.crps(y, raw)
    for row in range(raw.shape[0]):
        assert crps[row] == pytest.approx(
            _crps_by_integration(family, raw[row], y[row]), rel=1e-6,
            abs=1e-9)


@pytest.mark.parametrize("natural", [False, True])
def test_a_round_steps_by_fisher_scoring_or_the_natural_gradient(natural):
    """One round, one leaf (no split possible), no regularisation: the leaf
    moves each margin by -lr sum(g) / sum(I) (Fisher scoring) or
    -lr mean(g / I) (natural gradient), the normal's g and I written out
    here from its density."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = rng.normal(2.0, 3.0, size=200)
    start = np.array([0.5, np.log(1.5)])
    reg = BoostDistributionRegressor(
        n_estimators=1, learning_rate=0.5, reg_lambda=0.0,
        gamma=1e12, natural_gradient=natural)
    reg.fit(X, y, base_margin=np.tile(start, (200, 1)))
    moved = reg.predict(X[:1], base_margin=start[np.newaxis, :],
                        ) - start[0]
    sigma2 = np.exp(2 * start[1])
    g_mu, i_mu = -(y - start[0]) / sigma2, np.full(200, 1 / sigma2)
    g_s, i_s = 1 - (y - start[0]) ** 2 / sigma2, np.full(200, 2.0)
    if natural:
        step = -0.5 * np.array([np.mean(g_mu / i_mu), np.mean(g_s / i_s)])
    else:
        step = -0.5 * np.array([g_mu.sum() / i_mu.sum(), g_s.sum() / i_s.sum()])
    assert moved[0] == pytest.approx(step[0], rel=1e-5)
    scale = reg.predict_params(X[:1])["scale"][0]
    tree_scale = reg.booster_.predict_raw(
        np.asarray(X[:1], dtype=np.float32), base_margin=start[None, :])[0, 1]
    assert tree_scale - start[1] == pytest.approx(step[1], rel=1e-5)
    assert scale > 0


def test_constant_model_is_the_maximum_likelihood_estimate():
    rng = np.random.default_rng(1)
    y = rng.normal(4.0, 2.0, size=500)
    w = rng.uniform(0.5, 2.0, size=500)
    margin = get_objective("dist:normal").estimate_base_margin(y, w, 2)
    mean = np.average(y, weights=w)
    sd = np.sqrt(np.average((y - mean) ** 2, weights=w))
    np.testing.assert_allclose(margin, [mean, np.log(sd)], rtol=1e-5)
    counts = rng.poisson(3.0, size=500).astype(float)
    margin = get_objective("dist:poisson").estimate_base_margin(counts, w, 1)
    assert margin[0] == pytest.approx(np.log(np.average(counts, weights=w)),
                                      rel=1e-6)
    # gamma: scipy's own MLE (location fixed at 0)
    positive = rng.gamma(2.5, 1.3, size=2000)
    margin = get_objective("dist:gamma").estimate_base_margin(
        positive, np.ones(2000), 2)
    shape, _, scale = stats.gamma.fit(positive, floc=0)
    np.testing.assert_allclose(margin, [np.log(shape * scale), np.log(shape)],
                               rtol=1e-3)


def _heteroscedastic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    sigma = np.exp(X[:, 1])
    return X, 2.0 * X[:, 0] + sigma * rng.normal(size=n), sigma


@pytest.mark.parametrize("strategy", ["one_output_per_tree",
                                      "multi_output_tree"])
@pytest.mark.parametrize("natural", [False, True])
def test_fit_recovers_the_scale_of_heteroscedastic_noise(strategy, natural):
    X, y, _ = _heteroscedastic(3000, 0)
    X_test, y_test, sigma_test = _heteroscedastic(2000, 1)
    reg = BoostDistributionRegressor(
        n_estimators=60, learning_rate=0.1, max_depth=3,
        multi_strategy=strategy, natural_gradient=natural).fit(X, y)
    scale = reg.predict_params(X_test)["scale"]
    assert np.corrcoef(np.log(scale), np.log(sigma_test))[0, 1] > 0.9
    # better than the true constant-variance model's log-likelihood
    constant = stats.norm(2.0 * X_test[:, 0], np.std(y - 2.0 * X[:, 0]))
    assert reg.score(X_test, y_test) > np.mean(constant.logpdf(y_test)) + 0.1
    # 90% central intervals of the predicted quantiles cover about 90%
    q = reg.predict_quantiles(X_test, [0.05, 0.95])
    coverage = np.mean((q[:, 0] <= y_test) & (y_test <= q[:, 1]))
    assert 0.86 < coverage < 0.94


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_fits_saves_and_loads(name, tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    mean = np.exp(0.5 * X[:, 0] + 1.0)
    y = {"normal": mean + rng.normal(size=300),
         "studentt": mean + rng.standard_t(4, size=300),
         "lognormal": mean * rng.lognormal(0, 0.3, size=300),
         "gamma": rng.gamma(3.0, mean / 3.0),
         "poisson": rng.poisson(mean).astype(float),
         "negbinomial": rng.negative_binomial(3, 3 / (3 + mean)).astype(float),
         }[name]
    reg = BoostDistributionRegressor(
        distribution=name, n_estimators=20, learning_rate=0.1, max_depth=2,
        eval_metric=["nll", "crps"])
    reg.fit(X[:200], y[:200], eval_set=[(X[:200], y[:200]),
                                        (X[200:], y[200:])])
    # boosting lowers the training NLL (and CRPS, here)
    train_log = reg.evals_result_["validation_0"]
    assert train_log["nll"][-1] < train_log["nll"][0]
    assert train_log["crps"][-1] < train_log["crps"][0]
    log = reg.evals_result_["validation_1"]
    # the metric is the held-out NLL score() negates
    assert log["nll"][-1] == pytest.approx(-reg.score(X[200:], y[200:]),
                                           rel=1e-9)
    path = tmp_path / "model.ubj"
    reg.save_model(path)
    loaded = BoostDistributionRegressor.load(path)
    for a, b in ((loaded.predict_params(X), reg.predict_params(X)),
                 (pickle.loads(pickle.dumps(reg)).predict_params(X),
                  reg.predict_params(X))):
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])
    assert loaded.distribution == name


def test_early_stopping_on_crps_and_shap_per_parameter():
    X, y, _ = _heteroscedastic(1500, 3)
    reg = BoostDistributionRegressor(
        n_estimators=300, learning_rate=0.3, max_depth=3, eval_metric="crps",
        early_stopping_rounds=5).fit(X[:1000], y[:1000],
                                     eval_set=[(X[1000:], y[1000:])])
    assert reg.best_iteration < 299
    contributions = reg.predict_contributions(X[:50])
    margins = reg.booster_.predict_raw(
        np.asarray(X[:50], dtype=np.float32),
        iteration_range=(0, reg.best_iteration + 1))
    # one explanation per parameter, adding up to its margin
    np.testing.assert_allclose(contributions.sum(axis=-1), margins,
                               rtol=1e-4, atol=1e-4)


def test_bad_input_is_named():
    X = np.zeros((4, 1))
    with pytest.raises(ValueError, match="distribution='gamma' needs labels > 0"):
        BoostDistributionRegressor(distribution="gamma").fit(
            X, [1.0, 0.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="counts"):
        BoostDistributionRegressor(distribution="poisson").fit(
            X, [1.0, 0.5, 2.0, 3.0])
    with pytest.raises(ValueError, match="eval_metric='rmse'"):
        BoostDistributionRegressor(eval_metric="rmse").fit(X, [1, 2, 3, 4.0])
    with pytest.raises(ValueError, match="distribution"):
        BoostDistributionRegressor(distribution="cauchy").fit(X, [1, 2, 3, 4.0])
    reg = BoostDistributionRegressor(n_estimators=2).fit(X, [1, 2, 3, 4.0])
    with pytest.raises(ValueError, match="q must be levels"):
        reg.predict_quantiles(X, [0.5, 1.0])
    with pytest.raises(ValueError, match="base_score"):
        BoostDistributionRegressor(base_score=1.0).fit(X, [1, 2, 3, 4.0])


def test_a_damaged_distribution_in_the_file_is_rejected(tmp_path):
    X = np.arange(20.0).reshape(10, 2)
    reg = BoostDistributionRegressor(n_estimators=2).fit(X, np.arange(10.0))
    path = tmp_path / "m.json"
    reg.save_model(path)
    text = path.read_text().replace('"distribution":"normal"',
                                    '"distribution":"cauchy"', 1)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(ValueError):
        BoostDistributionRegressor.load(bad)


def test_objective_instances_name_their_family():
    for name in FAMILIES:
        objective = get_objective("dist:" + name)
        assert isinstance(objective, DistributionObjective)
        assert objective.family.name == name
        assert objective.n_outputs(None) == objective.family.n_params


def test_the_model_does_not_depend_on_the_thread_count():
    X, y, _ = _heteroscedastic(2000, 4)
    params = dict(distribution="studentt", n_estimators=15, max_depth=4,
                  subsample=0.8, random_state=3)
    one = BoostDistributionRegressor(n_jobs=1, **params).fit(X, y)
    two = BoostDistributionRegressor(n_jobs=2, **params).fit(X, y)
    np.testing.assert_array_equal(one.booster_.predict_raw(
        np.asarray(X, dtype=np.float32)), two.booster_.predict_raw(
        np.asarray(X, dtype=np.float32)))


def test_onnx_export_gives_the_parameters_margins():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from skboost.onnx import to_onnx
    X, y, _ = _heteroscedastic(500, 5)
    reg = BoostDistributionRegressor(distribution="gamma", n_estimators=10,
                                     multi_strategy="multi_output_tree")
    reg.fit(X, np.exp(y / 4))
    X32 = np.asarray(X, dtype=np.float32)
    session = ort.InferenceSession(to_onnx(reg, X32[:1]).SerializeToString())
    margins = session.run(None, {session.get_inputs()[0].name: X32})[0]
    expected = reg.booster_.predict_raw(X32)
    np.testing.assert_allclose(margins, expected, rtol=1e-5, atol=1e-5)
    # the parameters follow from the margins by the family's links
    np.testing.assert_allclose(np.exp(margins[:, 0]), reg.predict(X),
                               rtol=1e-4)
