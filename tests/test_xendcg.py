"""``rank:xendcg`` (LightGBM's cross-entropy NDCG loss, issue 37).

Oracles: a naive per-query transcription of the gradient (Bruch 2019, as
LightGBM's ``rank_xendcg`` expands it), the exact cross-entropy gradient for
its first-order term, and LightGBM's ``rank_xendcg`` on the bundled LETOR
sample (held-out NDCG@10 within noise).
"""

from pathlib import Path

import numpy as np
import pytest

from skboost import BoostRanker
from skboost.objectives import _xendcg_gradient


def _naive(y, score, query_ptr, gamma):
    grad, hess = np.zeros(y.size), np.zeros(y.size)
    for q in range(len(query_ptr) - 1):
        a, b = query_ptr[q], query_ptr[q + 1]
        if b - a <= 1:
            continue
        s = score[a:b]
        rho = np.exp(s - s.max())
        rho /= rho.sum()
        params = 2.0 ** y[a:b] - gamma[a:b]
        inv = 1.0 / max(params.sum(), 1e-15)
        lam = np.zeros(b - a)
        for i in range(b - a):
            lam[i] = -params[i] * inv + rho[i]
        p1 = lam / (1 - rho)
        second = np.array([rho[i] * (p1.sum() - p1[i]) for i in range(b - a)])
        p2 = second / (1 - rho)
        third = np.array([rho[i] * (p2.sum() - p2[i]) for i in range(b - a)])
        grad[a:b] = lam + second + third
        hess[a:b] = rho * (1 - rho)
    return grad, hess


def test_gradient_equals_the_naive_transcription():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 12, size=40)
    query_ptr = np.r_[0, np.cumsum(sizes)]
    y = rng.integers(0, 5, size=query_ptr[-1]).astype(float)
    score = rng.normal(size=y.size)
    gamma = rng.random(y.size)
    grad, hess = _xendcg_gradient(y, score, query_ptr, gamma)
    expected_grad, expected_hess = _naive(y, score, query_ptr, gamma)
    np.testing.assert_allclose(grad, expected_grad, atol=1e-12)
    np.testing.assert_allclose(hess, expected_hess, atol=1e-12)


def test_first_order_term_is_the_cross_entropy_gradient():
    """rho - target is d/ds of -sum target log softmax(s): by finite
    differences on one query."""
    rng = np.random.default_rng(1)
    y, score, gamma = rng.integers(0, 4, 8).astype(float), rng.normal(
        size=8), rng.random(8)
    target = (2.0 ** y - gamma) / (2.0 ** y - gamma).sum()

    def loss(s):
        return -np.sum(target * (s - s.max() - np.log(np.exp(s - s.max()).sum())))

    rho = np.exp(score) / np.exp(score).sum()
    step = 1e-6
    for i in range(8):
        up, down = score.copy(), score.copy()
        up[i] += step
        down[i] -= step
        assert (loss(up) - loss(down)) / (2 * step) == pytest.approx(
            rho[i] - target[i], abs=1e-7)


def _letor():
    from sklearn.datasets import load_svmlight_file

    data = Path(__file__).resolve().parents[1] / "data"
    if not (data / "rank.train.gz").exists():
        pytest.skip("the LETOR sample (data/rank.*.gz) is not there")
    out = []
    for name in ("rank.train", "rank.test"):
        X, y = load_svmlight_file(str(data / f"{name}.gz"), zero_based=True,
                                  n_features=301)
        sizes = np.loadtxt(data / f"{name}.query.gz", dtype=np.int64)
        out.append((X.toarray(), y, sizes))
    return out


def _mean_ndcg(y, scores, sizes, k=10):
    from sklearn.metrics import ndcg_score

    ptr = np.r_[0, np.cumsum(sizes)]
    return np.mean([ndcg_score([y[a:b]], [scores[a:b]], k=k)
                    if b - a > 1 else 1.0 for a, b in zip(ptr[:-1], ptr[1:])])


def test_ndcg_within_noise_of_lightgbm_xendcg():
    lgb = pytest.importorskip("lightgbm")
    (X, y, sizes), (X_test, y_test, sizes_test) = _letor()
    qid = np.repeat(np.arange(sizes.size), sizes)
    ours, theirs = [], []
    for seed in range(3):
        # the same trees' limits: depth 6, LightGBM's hessian floor (the
        # loss's hessians rho (1 - rho) are small: min_child_weight=1 would
        # stop most splits)
        model = BoostRanker(objective="rank:xendcg", n_estimators=100,
                            learning_rate=0.1, max_depth=6,
                            min_child_weight=1e-3,
                            random_state=seed).fit(X, y, qid=qid)
        ours.append(_mean_ndcg(y_test, model.predict(X_test), sizes_test))
        other = lgb.LGBMRanker(objective="rank_xendcg", n_estimators=100,
                               learning_rate=0.1, num_leaves=63, max_depth=6,
                               random_state=seed, verbose=-1, n_jobs=1).fit(
            X, y, group=sizes)
        theirs.append(_mean_ndcg(y_test, other.predict(X_test), sizes_test))
    spread = np.std(ours + theirs, ddof=1)
    assert np.mean(ours) >= np.mean(theirs) - 2 * spread - 0.005
    # and it learned: far above a random ranking
    random = _mean_ndcg(y_test, np.random.default_rng(0).random(
        y_test.size), sizes_test)
    assert np.mean(ours) > random + 0.1


def test_deterministic_for_a_random_state_and_threads():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 5))
    qid = np.repeat(np.arange(40), 10)
    y = np.clip(np.round(X[:, 0] + rng.normal(size=400)), 0, 3)
    models = [BoostRanker(objective="rank:xendcg", n_estimators=10,
                          random_state=7, n_jobs=n).fit(X, y, qid=qid)
              for n in (1, 2)]
    assert np.array_equal(models[0].predict(X), models[1].predict(X))
    other = BoostRanker(objective="rank:xendcg", n_estimators=10,
                        random_state=8).fit(X, y, qid=qid)
    assert not np.array_equal(models[0].predict(X), other.predict(X))
