"""BoostRanker and the LambdaMART kernel.

Oracles: a naive Python LambdaMART whose |delta metric| comes from actually
swapping two documents and recomputing NDCG or MAP; scikit-learn's
``ndcg_score``; a manual loop over GroupKFold folds for model selection;
a regressor with the same pointwise loss for callable objectives; XGBoost's
XGBRanker on the LETOR data.
"""

import numpy as np
import pytest
import sklearn
from sklearn import metrics as skm
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate

from skboost import BoostRanker, BoostRegressor
from skboost._ranking import lambda_gradient
from skboost.metrics import get_metric
from _shared_data import shared_data_path



# --------------------------------------------------------------------------
# The kernel against a naive LambdaMART
# --------------------------------------------------------------------------

def ndcg_of(labels_in_rank_order, exp_gain):
    gain = (2.0 ** labels_in_rank_order - 1) if exp_gain else labels_in_rank_order
    discount = 1 / np.log2(np.arange(len(gain)) + 2)
    ideal = np.sum(np.sort(gain)[::-1] * discount)
    return np.sum(gain * discount) / ideal if ideal > 0 else 0.0


def average_precision_of(labels_in_rank_order):
    hits, total = 0, 0.0
    for r, relevant in enumerate(labels_in_rank_order):
        if relevant:
            hits += 1
            total += hits / (r + 1)
    return total / hits if hits else 0.0


def naive_lambdas(y, s, query_ptr, objective, k, exp_gain):
    """LambdaMART pairs of the top-k method, written from the definition."""
    g = np.zeros(len(y))
    h = np.zeros(len(y))
    for begin, end in zip(query_ptr[:-1], query_ptr[1:]):
        yq, sq = y[begin:end], s[begin:end]
        order = sorted(range(end - begin), key=lambda i: (-sq[i], i))

        def metric(ranking):
            labels = yq[list(ranking)]
            if objective == "rank:ndcg":
                return ndcg_of(labels, exp_gain)
            return average_precision_of(labels)

        base = metric(order)
        gq, hq = np.zeros(end - begin), np.zeros(end - begin)
        total = 0.0
        for a in range(min(k, len(order))):
            for b in range(a + 1, len(order)):
                i, j = order[a], order[b]
                if yq[i] == yq[j]:
                    continue
                high, low = (i, j) if yq[i] > yq[j] else (j, i)
                if objective == "rank:pairwise":
                    delta = 1.0
                else:
                    swapped = list(order)
                    swapped[a], swapped[b] = swapped[b], swapped[a]
                    delta = abs(metric(swapped) - base)
                if sq.max() != sq.min():
                    delta /= abs(sq[high] - sq[low]) + 0.01
                sigma = 1 / (1 + np.exp(-(sq[high] - sq[low])))
                lam = (sigma - 1) * delta
                hess = 2 * max(sigma * (1 - sigma), 1e-16) * delta
                gq[high] += lam
                gq[low] -= lam
                hq[high] += hess
                hq[low] += hess
                total += -2 * lam
        if total > 0:
            gq *= np.log2(1 + total) / total
            hq *= np.log2(1 + total) / total
        g[begin:end], h[begin:end] = gq, hq
    return g, h


def kernel(y, s, query_ptr, objective, method="topk", k=32, exp_gain=True,
           iteration=0, n_threads=1):
    gpair = np.full((len(y), 2), np.nan, dtype=np.float32)
    lambda_gradient(y.astype(np.float64), s.astype(np.float64),
                    query_ptr.astype(np.int64), objective, method, k,
                    exp_gain, True, iteration, gpair, n_threads)
    return gpair


def random_queries(rng, n_queries=8, max_label=3, ties=False):
    sizes = rng.integers(1, 14, n_queries)
    sizes[0] = 0  # an empty query is allowed
    query_ptr = np.r_[0, np.cumsum(sizes)]
    n = query_ptr[-1]
    y = rng.integers(0, max_label + 1, n).astype(float)
    s = rng.normal(size=n)
    if ties:
        s = np.round(s)
    return y, s, query_ptr


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:map",
                                       "rank:pairwise"])
@pytest.mark.parametrize("k", [1, 3, 32])
@pytest.mark.parametrize("exp_gain", [True, False])
@pytest.mark.parametrize("ties", [False, True])
def test_topk_lambdas_match_a_naive_lambdamart(objective, k, exp_gain, ties):
    rng = np.random.default_rng(k + 10 * exp_gain + 100 * ties)
    y, s, query_ptr = random_queries(
        rng, max_label=1 if objective == "rank:map" else 3, ties=ties)
    gpair = kernel(y, s, query_ptr, objective, k=k, exp_gain=exp_gain)
    g, h = naive_lambdas(y, s, query_ptr, objective, k, exp_gain)
    np.testing.assert_allclose(gpair[:, 0], g, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(gpair[:, 1], h, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:map",
                                       "rank:pairwise"])
@pytest.mark.parametrize("method", ["topk", "mean"])
def test_lambdas_sum_to_zero_per_query_and_ignore_threads(objective, method):
    """Each pair adds +lambda and -lambda; the result does not depend on the
    number of threads (the random pairs of 'mean' are seeded per query)."""
    rng = np.random.default_rng(5)
    y, s, query_ptr = random_queries(rng, n_queries=300,
                                     max_label=1 if objective == "rank:map"
                                     else 4)
    one = kernel(y, s, query_ptr, objective, method, k=4, iteration=3)
    two = kernel(y, s, query_ptr, objective, method, k=4, iteration=3,
                 n_threads=2)
    np.testing.assert_array_equal(one, two)
    sums = np.add.reduceat(one[:, 0].astype(np.float64), query_ptr[1:-1])
    np.testing.assert_allclose(sums, 0.0, atol=1e-5)
    assert np.all(one[:, 1] >= 0)
    # documents of a query whose labels are all equal get nothing
    for b, e in zip(query_ptr[:-1], query_ptr[1:]):
        if e > b and np.all(y[b:e] == y[b]):
            assert np.all(one[b:e] == 0)


def test_mean_pairs_are_resampled_every_iteration():
    rng = np.random.default_rng(6)
    y, s, query_ptr = random_queries(rng, n_queries=20)
    first = kernel(y, s, query_ptr, "rank:ndcg", "mean", k=1, iteration=0)
    again = kernel(y, s, query_ptr, "rank:ndcg", "mean", k=1, iteration=0)
    second = kernel(y, s, query_ptr, "rank:ndcg", "mean", k=1, iteration=1)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)


def test_a_good_ranking_gets_smaller_lambdas():
    """Lambdas push relevant documents up: negative gradient on the relevant
    document, and a smaller push once it is ranked first."""
    y = np.array([0.0, 1.0, 0.0])
    ptr = np.array([0, 3])
    bad = kernel(y, np.array([2.0, 0.0, 1.0]), ptr, "rank:ndcg")
    good = kernel(y, np.array([0.0, 2.0, 1.0]), ptr, "rank:ndcg")
    assert bad[1, 0] < 0 and good[1, 0] < 0
    assert abs(good[1, 0]) < abs(bad[1, 0])


@pytest.mark.parametrize("bad", [
    dict(query_ptr=np.array([0, 3, 2, 6])),
    dict(query_ptr=np.array([0, 3, 7])),
    dict(query_ptr=np.array([1, 6])),
    dict(gpair=np.zeros((5, 2), np.float32)),
    dict(gpair=np.zeros((6, 3), np.float32)),
    dict(raw=np.zeros(5)),
    dict(objective="rank:unknown"),
    dict(pair_method="all"),
    dict(num_pair=0),
])
def test_kernel_rejects_bad_arguments(bad):
    args = dict(y=np.zeros(6), raw=np.zeros(6),
                query_ptr=np.array([0, 2, 6]), objective="rank:ndcg",
                pair_method="topk", num_pair=2, exp_gain=True,
                score_normalise=True, iteration=0,
                gpair=np.zeros((6, 2), np.float32), n_threads=1)
    args.update(bad)
    with pytest.raises(ValueError):
        lambda_gradient(**args)


# --------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def letor():
    def load(name):
        X, y = load_svmlight_file(str(shared_data_path(name)),
                                  zero_based=True, n_features=301)
        sizes = np.loadtxt(shared_data_path(f"{name}.query"), dtype=np.int64)
        return X.toarray(), y, np.repeat(np.arange(len(sizes)), sizes)
    return load("rank.train"), load("rank.test")


def synthetic(seed=0, n=600, n_queries=30):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n)), 0, 4)
    qid = np.sort(rng.integers(0, n_queries, n))
    return X, y, qid


def test_row_order_does_not_matter():
    """Queries interleaved (rows of a query keep their relative order) give
    the same model: rows are grouped by a stable sort of qid."""
    X, y, qid = synthetic()  # rows grouped by query
    rank_in_query = np.arange(len(qid)) - np.searchsorted(qid, qid)
    mixed = np.lexsort((qid, rank_in_query))  # round robin over the queries
    assert np.any(np.diff(qid[mixed]) < 0)
    grouped = BoostRanker(n_estimators=10).fit(X, y, qid=qid)
    interleaved = BoostRanker(n_estimators=10).fit(X[mixed], y[mixed],
                                                   qid=qid[mixed])
    np.testing.assert_array_equal(grouped.predict(X), interleaved.predict(X))
    # and predictions come back in the caller's row order
    np.testing.assert_array_equal(interleaved.predict(X[mixed]),
                                  grouped.predict(X)[mixed])


def test_group_sizes_and_qid_are_the_same_input():
    X, y, qid = synthetic()
    sizes = np.bincount(qid)
    a = BoostRanker(n_estimators=8).fit(X, y, qid=qid)
    b = BoostRanker(n_estimators=8).fit(X, y, group=sizes[sizes > 0])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_without_qid_the_input_is_one_query():
    X, y, _ = synthetic()
    a = BoostRanker(n_estimators=5).fit(X, y)
    b = BoostRanker(n_estimators=5).fit(X, y, qid=np.full(len(y), 7))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("method", ["topk", "mean"])
def test_threads_give_identical_models(method):
    X, y, qid = synthetic()
    one = BoostRanker(n_estimators=8, n_jobs=1,
                      lambdarank_pair_method=method).fit(X, y, qid=qid)
    two = BoostRanker(n_estimators=8, n_jobs=2,
                      lambdarank_pair_method=method).fit(X, y, qid=qid)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))


def test_training_improves_ndcg():
    X, y, qid = synthetic()
    ranker = BoostRanker(n_estimators=30, max_depth=3)
    ranker.fit(X, y, qid=qid)
    random_scores = np.random.default_rng(0).normal(size=len(y))
    ptr = np.r_[0, np.cumsum(np.bincount(qid))]
    ndcg = skm.ndcg_score  # per query below
    before = np.mean([ndcg([2 ** y[b:e] - 1], [random_scores[b:e]])
                      for b, e in zip(ptr[:-1], ptr[1:]) if e - b > 1])
    after = np.mean([ndcg([2 ** y[b:e] - 1], [ranker.predict(X[b:e])])
                     for b, e in zip(ptr[:-1], ptr[1:]) if e - b > 1])
    assert after > before + 0.1


@pytest.mark.parametrize("k", [None, 3])
def test_score_is_mean_ndcg_per_query(k):
    X, y, qid = synthetic()
    ranker = BoostRanker(n_estimators=5, score_k=k).fit(X, y, qid=qid)
    shuffle = np.random.default_rng(4).permutation(len(y))
    X, y, qid = X[shuffle], y[shuffle], qid[shuffle]
    scores = ranker.predict(X)
    per_query = []
    for q in np.unique(qid):
        rows = qid == q
        gains = 2 ** y[rows] - 1
        if gains.sum() == 0:
            per_query.append(1.0)  # XGBoost's convention; sklearn gives 0
        elif rows.sum() == 1:
            per_query.append(1.0)
        else:
            # ties in the scores rank in row order (sklearn would average
            # their gains): hand sklearn that order as tie-free scores
            order = np.lexsort((np.arange(rows.sum()), -scores[rows]))
            tie_free = np.empty(rows.sum())
            tie_free[order] = -np.arange(rows.sum())
            per_query.append(skm.ndcg_score([gains], [tie_free], k=k))
    assert ranker.score(X, y, qid=qid) == pytest.approx(np.mean(per_query),
                                                         rel=1e-12)


def test_model_selection_routes_qid_to_fit_and_score():
    """GridSearchCV with GroupKFold: every split's score is the score of a
    ranker fitted on the training queries (with their qid) and scored per
    query on the test queries; cross_validate agrees."""
    X, y, qid = synthetic(n=400, n_queries=20)
    params = dict(n_estimators=5, max_depth=3)
    cv = GroupKFold(n_splits=3)
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = BoostRanker(**params).set_fit_request(qid=True)
        ranker.set_score_request(qid=True)
        search = GridSearchCV(ranker, {"learning_rate": [0.1, 0.3]}, cv=cv)
        search.fit(X, y, groups=qid, qid=qid)
        result = cross_validate(ranker.set_params(learning_rate=0.3), X, y,
                                cv=cv, params={"groups": qid, "qid": qid})
    for i, (train, test) in enumerate(cv.split(X, y, groups=qid)):
        manual = BoostRanker(**params, learning_rate=0.3).fit(
            X[train], y[train], qid=qid[train])
        expected = manual.score(X[test], y[test], qid=qid[test])
        with pytest.raises(ValueError, match="needs qid"):
            manual.score(X[test], y[test])  # not one query silently
        assert search.cv_results_[f"split{i}_test_score"][1] == pytest.approx(
            expected, rel=1e-12)
        assert result["test_score"][i] == pytest.approx(expected, rel=1e-12)
    assert search.best_estimator_.get_params()["learning_rate"] in (0.1, 0.3)


def test_callable_objective_gets_sorted_qid():
    """A pointwise squared error through the ranker's callable objective
    trains the same trees as the regressor (base_score 0 for both), and
    sees the query ids of the rows it gets (grouped by query)."""
    X, y, qid = synthetic()
    shuffle = np.random.default_rng(3).permutation(len(y))
    X, y, qid = X[shuffle], y[shuffle], qid[shuffle]
    seen = []

    def squared_error(y_true, y_pred, *, qid):
        seen.append(qid)
        return y_pred - y_true, np.ones_like(y_true)

    ranker = BoostRanker(objective=squared_error, n_estimators=5).fit(
        X, y, qid=qid)
    regressor = BoostRegressor(n_estimators=5, base_score=0.0).fit(X, y)
    np.testing.assert_allclose(ranker.predict(X), regressor.predict(X),
                               rtol=1e-6, atol=1e-6)
    assert len(seen) == 5
    np.testing.assert_array_equal(seen[0], np.sort(qid))


@pytest.mark.parametrize("objective, labels, match", [
    ("rank:ndcg", [0, 1, -1, 2], "non-negative integers"),
    ("rank:ndcg", [0, 1.5, 1, 2], "non-negative integers"),
    ("rank:ndcg", [0, 32, 1, 2], "ndcg_exp_gain"),
    ("rank:map", [0, 2, 1, 0], "binary"),
    ("rank:pairwise", [0, 0.5, 1, 1], "non-negative integers"),
])
def test_invalid_labels_are_rejected(objective, labels, match):
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(ValueError, match=match):
        BoostRanker(objective=objective, n_estimators=2).fit(X, labels)


def test_large_labels_with_linear_gains():
    X = np.arange(8.0).reshape(4, 2)
    BoostRanker(n_estimators=2, ndcg_exp_gain=False).fit(X, [0, 40, 3, 1])


@pytest.mark.parametrize("kwargs, error", [
    (dict(qid=np.zeros(5, int)), ValueError),
    (dict(qid=np.zeros((6, 1), int)), ValueError),
    (dict(qid=np.linspace(0, 1, 6)), TypeError),
    (dict(group=[2, 3]), ValueError),
    (dict(group=[2, 2.5, 1.5]), ValueError),
    (dict(group=[3, 3], qid=np.zeros(6, int)), ValueError),
])
def test_invalid_queries_are_rejected(kwargs, error):
    X = np.arange(12.0).reshape(6, 2)
    with pytest.raises(error, match="qid|group"):
        BoostRanker(n_estimators=2).fit(X, [0, 1, 2, 0, 1, 2], **kwargs)


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise",
                                       "rank:map"])
def test_letor_ndcg_matches_xgboost(letor, objective):
    """With the same parameters (top-k pairs, the default), the model is
    XGBoost's: test NDCG@10 within 1e-3 of XGBRanker's."""
    xgb = pytest.importorskip("xgboost")
    (X, y, qid), (X_test, y_test, qid_test) = letor
    if objective == "rank:map":
        y, y_test = (y > 0).astype(float), (y_test > 0).astype(float)
    params = dict(n_estimators=30, max_depth=6, learning_rate=0.1,
                  tree_method="hist", objective=objective)
    ours = BoostRanker(**params, score_k=10).fit(X, y, qid=qid)
    theirs = xgb.XGBRanker(**params, base_score=0.0).fit(X, y, qid=qid)
    ptr = np.r_[0, np.cumsum(np.bincount(qid_test))]
    ndcg = get_metric("ndcg@10")
    ours_ndcg = ndcg(y_test, ours.predict(X_test), np.ones(len(y_test)), ptr)
    theirs_ndcg = ndcg(y_test, theirs.predict(X_test), np.ones(len(y_test)),
                       ptr)
    assert ours_ndcg == pytest.approx(theirs_ndcg, abs=1e-3)
    assert ours.score(X_test, y_test, qid=qid_test) == ours_ndcg
