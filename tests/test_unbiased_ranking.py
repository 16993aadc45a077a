"""Position-debiased LambdaMART (``lambdarank_unbiased``, issue 37).

Oracle: XGBoost's ``XGBRanker(lambdarank_unbiased=True)`` on the same rows,
with per-row base margins that make every score distinct from the first
round (so that neither library's order of equal scores plays a part, and
the rows can keep the order they were shown in: the positions). The exact
method then grows the same trees; the position-bias estimates equal the
``ti+`` / ``tj-`` of XGBoost's saved configuration.
"""

import json

import numpy as np
import pytest

from skboost import BoostRanker


def _clicks(n_queries=40, per_query=12, seed=0):
    """Queries shown in a fixed order; a document is clicked when it is
    relevant and examined, the examination chance falling with its
    position (the bias to undo)."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.normal(size=(n, 5)).astype(np.float32)
    qid = np.repeat(np.arange(n_queries), per_query)
    position = np.tile(np.arange(per_query), n_queries)
    relevance = X[:, 0] + 0.5 * X[:, 1] * X[:, 2]
    examined = rng.random(n) < 1.0 / (1.0 + 0.4 * position)
    y = np.clip(np.round(relevance + 1), 0, 3) * examined
    margin = rng.normal(scale=1e-3, size=n)   # every score distinct
    return X, y, qid, margin


PARAMS = dict(n_estimators=10, max_depth=4, learning_rate=0.3,
              tree_method="exact", objective="rank:ndcg", n_jobs=1,
              min_child_weight=2.0, lambdarank_unbiased=True)


@pytest.mark.parametrize("bias_norm", [1.0, 0.5])
def test_equals_xgboosts_unbiased_lambdamart(bias_norm):
    xgb = pytest.importorskip("xgboost")
    X, y, qid, margin = _clicks()
    ours = BoostRanker(**PARAMS, lambdarank_bias_norm=bias_norm).fit(
        X, y, qid=qid, base_margin=margin)
    theirs = xgb.XGBRanker(**PARAMS, lambdarank_bias_norm=bias_norm,
                           base_score=0.0).fit(X, y, qid=qid,
                                               base_margin=margin)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X),
                               atol=1e-5)
    config = json.loads(theirs.get_booster().save_config())
    objective = config["learner"]["objective"]
    t_plus, t_minus = ours.position_bias_
    np.testing.assert_allclose(t_plus, np.asarray(objective["ti+"]),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(t_minus, np.asarray(objective["tj-"]),
                               rtol=1e-4, atol=1e-6)
    # the estimates moved away from 1: there was a bias to estimate
    assert np.abs(t_plus[1:12] - 1.0).max() > 0.05
    # and debiasing changed the model
    biased = BoostRanker(**dict(PARAMS, lambdarank_unbiased=False)).fit(
        X, y, qid=qid, base_margin=margin)
    assert np.abs(biased.predict(X) - ours.predict(X)).max() > 1e-3
    assert biased.position_bias_ is None


def test_same_model_whatever_the_threads():
    X, y, qid, margin = _clicks(seed=1)
    models = [BoostRanker(**dict(PARAMS, n_jobs=n)).fit(
        X, y, qid=qid, base_margin=margin) for n in (1, 2)]
    assert np.array_equal(models[0].predict(X), models[1].predict(X))
    for a, b in zip(models[0].position_bias_, models[1].position_bias_):
        assert np.array_equal(a, b)


def test_not_with_xendcg():
    X, y, qid, _ = _clicks(n_queries=4)
    with pytest.raises(ValueError, match="not rank:xendcg"):
        BoostRanker(objective="rank:xendcg", lambdarank_unbiased=True,
                    n_estimators=2).fit(X, y, qid=qid)


def test_kernel_checks_its_bias_arrays():
    from skboost._ranking import lambda_gradient

    y = np.array([1.0, 0.0, 2.0])
    gpair = np.zeros((3, 2), dtype=np.float32)
    common = dict(objective="rank:ndcg", pair_method="topk", num_pair=4,
                  exp_gain=True, score_normalise=True, iteration=0,
                  n_threads=1)
    ptr = np.array([0, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="together"):
        lambda_gradient(y, np.zeros(3), ptr, gpair, t_plus=np.ones(4),
                        **common)
    with pytest.raises(ValueError, match="one entry per row"):
        lambda_gradient(y, np.zeros(3), ptr, gpair, t_plus=np.ones(4),
                        t_minus=np.ones(4), li=np.zeros(2), lj=np.zeros(3),
                        **common)
    with pytest.raises(ValueError, match="same length"):
        lambda_gradient(y, np.zeros(3), ptr, gpair, t_plus=np.ones(4),
                        t_minus=np.ones(3), li=np.zeros(3), lj=np.zeros(3),
                        **common)
