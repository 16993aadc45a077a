"""Evaluation metrics against scikit-learn's (and scipy's) implementations,
or a naive per-query loop where scikit-learn has no equivalent."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm
from sklearn.datasets import make_classification

from skboost.metrics import METRIC_NAMES, get_metric


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def weights(rng, n, weighted):
    return rng.uniform(0.2, 3.0, n) if weighted else np.ones(n)


def call(name, y, pred, weight, query_ptr=None, params=None):
    return get_metric(name, params)(y, pred, weight, query_ptr)


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_metrics_match_sklearn(rng, weighted):
    n = 300
    y = rng.gamma(2.0, 2.0, n) + 0.1
    pred = y * rng.uniform(0.5, 1.5, n)
    w = weights(rng, n, weighted)
    sw = dict(sample_weight=w)
    assert call("rmse", y, pred, w) == pytest.approx(
        skm.root_mean_squared_error(y, pred, **sw), rel=1e-12)
    assert call("rmsle", y, pred, w) == pytest.approx(
        skm.root_mean_squared_log_error(y, pred, **sw), rel=1e-12)
    assert call("mae", y, pred, w) == pytest.approx(
        skm.mean_absolute_error(y, pred, **sw), rel=1e-12)
    assert call("mape", y, pred, w) == pytest.approx(
        skm.mean_absolute_percentage_error(y, pred, **sw), rel=1e-12)
    assert call("gamma-deviance", y, pred, w) == pytest.approx(
        skm.mean_gamma_deviance(y, pred, **sw), rel=1e-12)
    for alpha in (0.1, 0.5, 0.9):
        assert call("quantile", y, pred, w, params={"quantile_alpha": alpha}
                    ) == pytest.approx(
            skm.mean_pinball_loss(y, pred, alpha=alpha, **sw), rel=1e-12)
    # several quantiles: the mean of the per-quantile losses
    alphas = [0.2, 0.7]
    preds = np.column_stack([pred, pred * 1.1])
    expected = np.mean([skm.mean_pinball_loss(y, preds[:, k], alpha=a, **sw)
                        for k, a in enumerate(alphas)])
    assert call("quantile", y, preds, w, params={"quantile_alpha": alphas}
                ) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_likelihood_metrics_match_scipy(rng, weighted):
    n = 200
    w = weights(rng, n, weighted)
    mu = rng.uniform(0.5, 4.0, n)
    counts = rng.poisson(mu).astype(float)
    assert call("poisson-nloglik", counts, mu, w) == pytest.approx(
        -np.average(stats.poisson.logpmf(counts, mu), weights=w), rel=1e-10)
    # XGBoost's gamma-nloglik: a gamma distribution of shape 1 (its fixed
    # dispersion) and mean mu
    y = rng.gamma(2.0, 1.0, n)
    assert call("gamma-nloglik", y, mu, w) == pytest.approx(
        -np.average(stats.gamma.logpdf(y, a=1.0, scale=mu), weights=w),
        rel=1e-10)


@pytest.mark.parametrize("rho", [1.2, 1.5, 1.8])
def test_tweedie_nloglik_differences_are_half_the_deviance(rng, rho):
    """The Tweedie negative log-likelihood drops the terms in y alone, so
    nloglik(y, mu) - nloglik(y, y) is half of scikit-learn's deviance."""
    n = 200
    y = np.where(rng.random(n) < 0.3, 0.0, rng.gamma(2.0, 1.0, n))
    mu = rng.uniform(0.3, 3.0, n)
    w = rng.uniform(0.5, 2.0, n)
    name = f"tweedie-nloglik@{rho}"
    at_y = np.where(y > 0, y, 1e-300)  # mu -> 0 where y = 0: its limit
    difference = call(name, y, mu, w) - call(name, y, at_y, w)
    assert difference == pytest.approx(
        0.5 * skm.mean_tweedie_deviance(y, mu, sample_weight=w, power=rho),
        rel=1e-9)


def test_mphe_is_the_pseudo_huber_loss(rng):
    y = rng.normal(size=100)
    pred = rng.normal(size=100)
    w = np.ones(100)
    for slope in (0.5, 1.0, 3.0):
        r = pred - y
        expected = np.mean(slope ** 2 * (np.sqrt(1 + (r / slope) ** 2) - 1))
        assert call("mphe", y, pred, w, params={"huber_slope": slope}
                    ) == pytest.approx(expected, rel=1e-12)
    # and it tends to half the squared error for a large slope
    assert call("mphe", y, pred, w, params={"huber_slope": 1e4}
                ) == pytest.approx(0.5 * np.mean((pred - y) ** 2), rel=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_metrics_match_sklearn(rng, weighted):
    n = 400
    y = (rng.random(n) < 0.35).astype(float)
    p = np.clip(0.3 * y + rng.uniform(0, 0.7, n), 0.01, 0.99)
    p[:20] = 0.5  # ties
    w = weights(rng, n, weighted)
    sw = dict(sample_weight=w)
    assert call("logloss", y, p, w) == pytest.approx(
        skm.log_loss(y, p, **sw), rel=1e-12)
    assert call("auc", y, p, w) == pytest.approx(
        skm.roc_auc_score(y, p, **sw), rel=1e-12)
    # aucpr interpolates between the curve's points (see below): close to,
    # not equal to, the step-wise average precision
    assert call("aucpr", y, p, w) == pytest.approx(
        skm.average_precision_score(y, p, **sw), abs=0.02)
    for threshold in (0.5, 0.3, 0.8):
        name = "error" if threshold == 0.5 else f"error@{threshold}"
        assert call(name, y, p, w) == pytest.approx(
            1 - skm.accuracy_score(y, p > threshold, **sw), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_metrics_match_sklearn(rng, weighted):
    n, K = 300, 4
    y = rng.integers(0, K, n)
    logits = rng.normal(size=(n, K)) + 1.5 * np.eye(K)[y]
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    w = weights(rng, n, weighted)
    sw = dict(sample_weight=w)
    assert call("mlogloss", y, p, w) == pytest.approx(
        skm.log_loss(y, p, **sw), rel=1e-12)
    assert call("merror", y, p, w) == pytest.approx(
        1 - skm.accuracy_score(y, p.argmax(axis=1), **sw), rel=1e-12)
    assert call("auc", y, p, w) == pytest.approx(
        skm.roc_auc_score(y, p, multi_class="ovr", average="weighted", **sw),
        rel=1e-12)


def ranking_data(rng, n_queries=12, max_label=3):
    sizes = rng.integers(3, 15, n_queries)
    query_ptr = np.r_[0, np.cumsum(sizes)]
    n = query_ptr[-1]
    y = rng.integers(0, max_label + 1, n).astype(float)
    y[query_ptr[:-1]] = max_label  # every query has a relevant document
    scores = y + rng.normal(scale=1.5, size=n)  # no ties
    return y, scores, query_ptr


def per_query(query_ptr, score_query):
    return np.mean([score_query(slice(b, e))
                    for b, e in zip(query_ptr[:-1], query_ptr[1:])])


@pytest.mark.parametrize("k", [None, 1, 3, 10])
@pytest.mark.parametrize("exp_gain", [True, False])
def test_ndcg_matches_sklearn(rng, k, exp_gain):
    y, scores, query_ptr = ranking_data(rng)
    name = "ndcg" if k is None else f"ndcg@{k}"
    gains = 2.0 ** y - 1 if exp_gain else y
    expected = per_query(query_ptr, lambda q: skm.ndcg_score(
        gains[q][None, :], scores[q][None, :], k=k))
    assert call(name, y, scores, np.ones_like(y), query_ptr,
                {"ndcg_exp_gain": exp_gain}) == pytest.approx(expected,
                                                              rel=1e-12)


def test_ndcg_of_a_query_without_relevant_documents(rng):
    """1 by default (XGBoost's convention), 0 with the '-' suffix (what
    scikit-learn's ndcg_score gives)."""
    y = np.zeros(6)
    scores = rng.normal(size=6)
    w = np.ones(6)
    assert call("ndcg", y, scores, w) == 1.0
    assert call("ndcg-", y, scores, w) == 0.0
    assert skm.ndcg_score(y[None, :], scores[None, :]) == 0.0


def test_map_matches_sklearn_average_precision(rng):
    y, scores, query_ptr = ranking_data(rng, max_label=1)
    expected = per_query(query_ptr, lambda q: skm.average_precision_score(
        y[q], scores[q]))
    assert call("map", y, scores, np.ones_like(y), query_ptr
                ) == pytest.approx(expected, rel=1e-12)


def test_map_at_and_precision_at_match_a_naive_loop(rng):
    y, scores, query_ptr = ranking_data(rng, max_label=1)

    def naive_map_at(q, k):
        ranked = y[q][np.argsort(-scores[q])]
        hits, total = 0, 0.0
        for i, rel in enumerate(ranked[:k]):
            if rel:
                hits += 1
                total += hits / (i + 1)
        return total / min(ranked.sum(), k)

    for k in (1, 2, 5):
        assert call(f"map@{k}", y, scores, np.ones_like(y), query_ptr
                    ) == pytest.approx(per_query(
                        query_ptr, lambda q: naive_map_at(q, k)), rel=1e-12)
        assert call(f"pre@{k}", y, scores, np.ones_like(y), query_ptr
                    ) == pytest.approx(per_query(
                        query_ptr, lambda q: np.sum(
                            y[q][np.argsort(-scores[q])][:k] > 0) / k),
                        rel=1e-12)


def test_ranking_auc_is_the_mean_over_queries(rng):
    y, scores, query_ptr = ranking_data(rng, max_label=1)
    expected = per_query(query_ptr, lambda q: skm.roc_auc_score(
        y[q], scores[q]) if 0 < y[q].sum() < len(y[q]) else np.nan)
    valid = [skm.roc_auc_score(y[b:e], scores[b:e])
             for b, e in zip(query_ptr[:-1], query_ptr[1:])
             if 0 < y[b:e].sum() < e - b]
    assert not np.isnan(expected) or valid
    assert call("auc", y, scores, np.ones_like(y), query_ptr
                ) == pytest.approx(np.mean(valid), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_aucpr_matches_xgboost(weighted):
    """XGBoost's aucpr interpolates precision between the points of the PR
    curve (Davis and Goadrich): compare with the value XGBoost logs for its
    own predictions."""
    xgb = pytest.importorskip("xgboost")
    X, y = make_classification(n_samples=1200, n_features=8, flip_y=0.3,
                               random_state=0)
    w = weights(np.random.default_rng(1), 600, weighted)
    model = xgb.XGBClassifier(n_estimators=3, eval_metric="aucpr").fit(
        X[:600], y[:600], eval_set=[(X[600:], y[600:])],
        sample_weight_eval_set=[w], verbose=False)
    logged = model.evals_result()["validation_0"]["aucpr"][-1]
    p = model.predict_proba(X[600:])[:, 1].astype(np.float64)
    assert call("aucpr", y[600:], p, w) == pytest.approx(logged, rel=1e-6)


def test_aucpr_of_perfect_and_reversed_rankings():
    y = np.array([1.0, 1.0, 0.0, 0.0, 0.0])
    w = np.ones(5)
    assert call("aucpr", y, np.array([5.0, 4, 3, 2, 1]), w) == pytest.approx(
        1.0)
    # all scores tied: precision is the positive rate at every recall
    assert call("aucpr", y, np.zeros(5), w) == pytest.approx(0.4)


def test_ranking_aucpr_is_xgboosts_mean_over_queries(rng):
    xgb = pytest.importorskip("xgboost")
    y, scores, query_ptr = ranking_data(rng, max_label=1)
    X = np.column_stack([scores + rng.normal(size=len(y)),
                         rng.normal(size=len(y))])
    qid = np.repeat(np.arange(len(query_ptr) - 1), np.diff(query_ptr))
    model = xgb.XGBRanker(n_estimators=2, eval_metric="aucpr").fit(
        X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid], verbose=False)
    logged = model.evals_result()["validation_0"]["aucpr"][-1]
    pred = model.predict(X).astype(np.float64)
    assert call("aucpr", y, pred, np.ones_like(y), query_ptr) == (
        pytest.approx(logged, rel=1e-6))


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_direction_of_improvement(name):
    """Scores (AUC, NDCG, MAP, precision) are maximised, losses minimised."""
    name = name.replace("@t", "@0.4").replace("@n", "@3").replace(
        "@rho", "@1.5")
    maximised = name.split("@")[0] in {"auc", "aucpr", "ndcg", "map", "pre",
                                       "interval-regression-accuracy"}
    assert get_metric(name).higher_is_better == maximised


@pytest.mark.parametrize("name", ["rsme", "ndcg@0", "ndcg@x", "pre@-1",
                                  "map@2.5", "rmse@3", ""])
def test_unknown_or_malformed_names_are_rejected(name):
    with pytest.raises(ValueError, match="eval_metric"):
        get_metric(name)


@pytest.mark.parametrize("name", [3, None, b"rmse", ["rmse"]])
def test_metrics_of_wrong_type_are_type_errors(name):
    """As XGBoost: a metric is a name or a callable, anything else is a
    TypeError (a name it does not know, a ValueError)."""
    with pytest.raises(TypeError, match="eval_metric"):
        get_metric(name)


def test_callable_metric_gets_predictions_and_weights(rng):
    y = rng.normal(size=50)
    pred = rng.normal(size=50)
    w = rng.uniform(0.5, 2, 50)
    metric = get_metric(skm.mean_absolute_error)
    assert metric.name == "mean_absolute_error"
    assert not metric.higher_is_better
    assert metric(y, pred, w) == pytest.approx(
        skm.mean_absolute_error(y, pred, sample_weight=w), rel=1e-12)


# --------------------------------------------------------------------------
# Every metric against the value XGBoost logs for its own predictions
# --------------------------------------------------------------------------

XGBOOST_CASES = [
    ("reg:squarederror", ["rmse", "rmsle", "mae", "mape", "mphe"],
     {"huber_slope": 2.0}),
    ("count:poisson", ["poisson-nloglik"], {}),
    ("reg:gamma", ["gamma-nloglik", "gamma-deviance"], {}),
    ("reg:tweedie", ["tweedie-nloglik@1.3"], {"tweedie_variance_power": 1.3}),
    ("reg:quantileerror", ["quantile"], {"quantile_alpha": [0.2, 0.7]}),
    ("binary:logistic", ["logloss", "error", "error@0.3", "auc", "aucpr"], {}),
    ("multi:softprob", ["mlogloss", "merror", "auc"], {}),
    ("rank:ndcg", ["ndcg", "ndcg@5", "ndcg-", "ndcg@3-"], {}),
    ("rank:map", ["map", "map@5", "map-", "map@3-", "pre@2", "pre@5",
                  "aucpr"], {}),
]


@pytest.mark.parametrize("objective, names, params", XGBOOST_CASES,
                         ids=[case[0] for case in XGBOOST_CASES])
def test_metrics_match_xgboosts_logged_values(objective, names, params):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    n = 1200
    X = rng.normal(size=(n, 6))
    signal = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n)
    fit = {}
    if objective.startswith("rank:"):
        y = np.clip(np.round(signal + 1), 0, 1 if objective == "rank:map"
                    else 3)
        qid = np.repeat(np.arange(n // 20), 20)
        model = xgb.XGBRanker
        fit = dict(qid=qid[:600], eval_qid=[qid[600:]])
        query_ptr = np.arange(0, 601, 20)
    else:
        query_ptr = None
        if objective.startswith("multi:"):
            y = np.digitize(signal, [-0.5, 0.5])
            model = xgb.XGBClassifier
        elif objective.startswith("binary:"):
            y = (signal > 0).astype(int)
            model = xgb.XGBClassifier
        else:
            y = np.exp(signal / 2)
            if objective == "count:poisson":
                y = np.round(y)
            model = xgb.XGBRegressor
    booster = model(n_estimators=3, objective=objective, eval_metric=names,
                    **params).fit(X[:600], y[:600],
                                  eval_set=[(X[600:], y[600:])], verbose=False,
                                  **fit)
    logged = booster.evals_result()["validation_0"]
    if model is xgb.XGBClassifier:
        pred = booster.predict_proba(X[600:]).astype(np.float64)
        if pred.shape[1] == 2:
            pred = pred[:, 1]
    else:
        pred = booster.predict(X[600:]).astype(np.float64)
    for name in names:
        ours = get_metric(name, params)(y[600:].astype(np.float64), pred,
                                        np.ones(600), query_ptr)
        # XGBoost computes in float32 in places (and adds 1e-6 to the
        # predictions of gamma-deviance)
        assert ours == pytest.approx(logged[name][-1], rel=1e-5, abs=1e-7), (
            name)
