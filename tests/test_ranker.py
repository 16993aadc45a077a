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
from skboost._ranking import lambda_gradient, row_keys
from skboost.metrics import get_metric
from _shared_data import shared_data_path



# --------------------------------------------------------------------------
# The kernel against a naive LambdaMART
# --------------------------------------------------------------------------

def ndcg_of(labels_in_rank_order, exp_gain, ideal_k=None):
    """NDCG of the whole list, divided by the ideal DCG of the best
    ``ideal_k`` documents (None: all)."""
    gain = (2.0 ** labels_in_rank_order - 1) if exp_gain else labels_in_rank_order
    discount = 1 / np.log2(np.arange(len(gain)) + 2)
    ideal = np.sum((np.sort(gain)[::-1] * discount)[:ideal_k])
    return np.sum(gain * discount) / ideal if ideal > 0 else 0.0


def average_precision_of(labels_in_rank_order):
    hits, total = 0, 0.0
    for r, relevant in enumerate(labels_in_rank_order):
        if relevant:
            hits += 1
            total += hits / (r + 1)
    return total / hits if hits else 0.0


def naive_lambdas(y, s, query_ptr, objective, k, exp_gain, row_key=None,
                  ideal_k=None, normalise=True):
    """LambdaMART pairs of the top-k method, written from the definition.
    Equal scores are ranked by increasing label, then increasing row key,
    then row order. NDCG's ideal DCG is that of the best ``ideal_k``
    documents (None: all); ``normalise``: the query's log2(1 + S) / S."""
    g = np.zeros(len(y))
    h = np.zeros(len(y))
    row_key = np.zeros(len(y), np.uint64) if row_key is None else row_key
    for begin, end in zip(query_ptr[:-1], query_ptr[1:]):
        yq, sq, kq = y[begin:end], s[begin:end], row_key[begin:end]
        order = sorted(range(end - begin),
                       key=lambda i: (-sq[i], yq[i], int(kq[i]), i))

        def metric(ranking):
            labels = yq[list(ranking)]
            if objective == "rank:ndcg":
                return ndcg_of(labels, exp_gain, ideal_k)
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
        if total > 0 and normalise:
            gq *= np.log2(1 + total) / total
            hq *= np.log2(1 + total) / total
        g[begin:end], h[begin:end] = gq, hq
    return g, h


def kernel(y, s, query_ptr, objective, method="topk", k=32, exp_gain=True,
           iteration=0, n_threads=1, row_key=None, ideal_k=0, normalise=True):
    gpair = np.full((len(y), 2), np.nan, dtype=np.float32)
    lambda_gradient(y.astype(np.float64), s.astype(np.float64),
                    query_ptr.astype(np.int64), gpair, objective=objective,
                    pair_method=method, num_pair=k, exp_gain=exp_gain,
                    score_normalise=True, iteration=iteration,
                    n_threads=n_threads, row_key=row_key, ideal_k=ideal_k,
                    normalise=normalise)
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
    # few distinct keys, so that some ties of score, label and key remain
    row_key = rng.integers(0, 3, len(y)).astype(np.uint64) * (2**63 + 1)
    gpair = kernel(y, s, query_ptr, objective, k=k, exp_gain=exp_gain,
                   row_key=row_key)
    g, h = naive_lambdas(y, s, query_ptr, objective, k, exp_gain, row_key)
    np.testing.assert_allclose(gpair[:, 0], g, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(gpair[:, 1], h, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("k", [1, 3, 32])
@pytest.mark.parametrize("normalise", [True, False])
def test_truncated_ideal_dcg_and_normalisation_match_the_naive_lambdamart(
        k, normalise):
    """``ideal_k``: NDCG divided by the ideal DCG of the best ``ideal_k``
    documents (XGBoost's top-k and LightGBM's truncation level); without
    ``normalise`` the query's pairs are not rescaled."""
    rng = np.random.default_rng(40 + k + normalise)
    y, s, query_ptr = random_queries(rng, n_queries=12)
    gpair = kernel(y, s, query_ptr, "rank:ndcg", k=k, ideal_k=k,
                   normalise=normalise)
    g, h = naive_lambdas(y, s, query_ptr, "rank:ndcg", k, True, ideal_k=k,
                         normalise=normalise)
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
    dict(row_key=np.zeros(5, np.uint64)),
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
    XGBoost's fitted on the rows in skboost's order of equal scores: test
    NDCG@10 within 1e-3 of XGBRanker's.

    XGBoost ranks documents of equal scores (all of them in the first
    round, those sharing every leaf later) in row order; skboost by label,
    then row key. Rows sorted by (query, label, row key) make the two
    tie-breaks one."""
    xgb = pytest.importorskip("xgboost")
    (X, y, qid), (X_test, y_test, qid_test) = letor
    if objective == "rank:map":
        y, y_test = (y > 0).astype(float), (y_test > 0).astype(float)
    params = dict(n_estimators=30, max_depth=6, learning_rate=0.1,
                  tree_method="hist", objective=objective)
    ours = BoostRanker(**params, score_k=10).fit(X, y, qid=qid)
    key = row_keys(X.astype(np.float32), np.ones(len(y)), 0, 1)
    tie_order = np.lexsort((key, y, qid))
    theirs = xgb.XGBRanker(**params, base_score=0.0).fit(
        X[tie_order], y[tie_order], qid=qid[tie_order])
    ptr = np.r_[0, np.cumsum(np.bincount(qid_test))]
    ndcg = get_metric("ndcg@10")
    ours_ndcg = ndcg(y_test, ours.predict(X_test), np.ones(len(y_test)), ptr)
    theirs_ndcg = ndcg(y_test, theirs.predict(X_test), np.ones(len(y_test)),
                       ptr)
    assert ours_ndcg == pytest.approx(theirs_ndcg, abs=1e-3)
    # the same trees: on the training rows the margins agree to float32
    # rounding (a test row can fall between the two libraries' thresholds,
    # placed differently between the same two training values)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-5)
    assert ours.score(X_test, y_test, qid=qid_test) == ours_ndcg


def _queries_of(size, seed, n_queries=12):
    """Queries of ``size`` documents, graded labels 0-4."""
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + 0.7 * rng.normal(size=n) + 1), 0, 4)
    return X, y, np.repeat(np.arange(n_queries), size)


def _margins_of_both(X, y, qid, **params):
    """skboost's and XGBoost's training margins, XGBoost fitted on the rows
    in skboost's order of equal scores (see test_letor_ndcg_matches_xgboost)."""
    xgb = pytest.importorskip("xgboost")
    params = dict(n_estimators=8, max_depth=3, learning_rate=0.3,
                  tree_method="exact", objective="rank:ndcg", **params)
    ours = BoostRanker(**params).fit(X, y, qid=qid)
    key = row_keys(X.astype(np.float32), np.ones(len(y)), 0, 1)
    order = np.lexsort((key, y, qid))
    theirs = xgb.XGBRanker(**params, base_score=0.0).fit(
        X[order], y[order], qid=qid[order])
    return ours.predict(X[order]), theirs.predict(X[order])


@pytest.mark.parametrize("num_pair", [None, 20])
def test_queries_longer_than_the_truncation_match_xgboost(num_pair):
    """Top-k pairs on queries longer than k (45 documents; k = 32, the
    default, and 20): XGBoost divides |delta NDCG| by the ideal DCG of the
    best k documents; with the exact method skboost grows XGBoost's trees
    (margins to float32 rounding). (k is at least the number of irrelevant
    documents of a query: with fewer, some get no pair in the first round,
    and where such rows without gradient fall between two thresholds of
    equal gain, the two libraries pick different thresholds.)"""
    X, y, qid = _queries_of(45, seed=num_pair or 0)
    ours, theirs = _margins_of_both(
        X, y, qid, lambdarank_num_pair_per_sample=num_pair)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)


@pytest.mark.parametrize("flags", [
    dict(lambdarank_normalization=False),
    dict(lambdarank_score_normalization=False),
    dict(lambdarank_normalization=False,
         lambdarank_score_normalization=False)])
def test_normalisation_flags_match_xgboost(flags):
    """XGBoost's lambdarank_normalization (the query's log2(1 + S) / S) and
    lambdarank_score_normalization (|delta| / (score gap + 0.01)) switched
    off: the same model as XGBoost's with the same flags."""
    X, y, qid = _queries_of(30, seed=3)
    ours, theirs = _margins_of_both(X, y, qid, **flags)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)
    default, _ = _margins_of_both(X, y, qid)
    assert np.abs(ours - default).max() > 1e-3   # the flag changed the model


@pytest.mark.parametrize("num_pair", [1, 3])
def test_mean_pairs_of_two_document_queries_match_xgboost(num_pair):
    """Random pairs ("mean") in queries of two documents of different
    labels: the only partner is the other document, so the draws do not
    matter and the model must be XGBoost's (normalised by 1 / num_pair,
    the ideal DCG of the whole query)."""
    X, y, qid = _queries_of(2, seed=10 + num_pair, n_queries=150)
    keep = np.repeat(y[0::2] != y[1::2], 2)
    ours, theirs = _margins_of_both(
        X[keep], y[keep], qid[keep], lambdarank_pair_method="mean",
        lambdarank_num_pair_per_sample=num_pair)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)


# --------------------------------------------------------------------------
# Equal scores: the model does not depend on the order of a query's rows
# --------------------------------------------------------------------------

def same_trees(a, b):
    """Whether two rankers hold the same trees, node array by node array."""
    from skboost.tree._tree import NODE_FIELDS

    trees_a, trees_b = a.booster_.trees, b.booster_.trees
    return len(trees_a) == len(trees_b) and all(
        np.array_equal(getattr(s, name), getattr(t, name))
        for s, t in zip(trees_a, trees_b) for name in NODE_FIELDS)


def shuffled_within_queries(qid, seed=0):
    """A permutation of the rows that keeps every query's rows together
    and shuffles them."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(np.flatnonzero(qid == q))
                           for q in np.unique(qid)])


@pytest.mark.parametrize("params", [
    dict(tree_method="hist"),
    dict(tree_method="exact"),
    dict(tree_method="approx"),
    dict(tree_method="hist", objective="rank:map"),
    dict(tree_method="hist", objective="rank:pairwise"),
    dict(tree_method="hist", lambdarank_pair_method="mean",
         lambdarank_num_pair_per_sample=2),
    dict(tree_method="hist", lambdarank_num_pair_per_sample=3,
         random_state=7),
], ids=lambda p: "-".join(str(v) for v in p.values()))
def test_rows_shuffled_within_queries_give_the_same_model(letor, params):
    """Every round has documents of equal scores (all of them in the first);
    they are ranked by label, then by a key that moves with the row, so the
    trees and predictions are identical bit for bit (with ties by row order
    the LETOR predictions differed by up to 1.7)."""
    (X, y, qid), (X_test, _, _) = letor
    if params.get("objective") == "rank:map":
        y = (y > 0).astype(float)
    perm = shuffled_within_queries(qid)
    assert not np.array_equal(perm, np.arange(len(qid)))
    kwargs = dict(n_estimators=12, max_depth=6, **params)
    a = BoostRanker(**kwargs).fit(X, y, qid=qid)
    b = BoostRanker(**kwargs).fit(X[perm], y[perm], qid=qid[perm])
    assert same_trees(a, b)
    np.testing.assert_array_equal(a.predict(X_test), b.predict(X_test))
    np.testing.assert_array_equal(a.predict(X)[perm], b.predict(X[perm]))


def test_shuffled_rows_with_weights_and_sparse_input_give_the_same_model():
    """Weights move with their rows (and enter the key); sparse input keys
    its stored entries."""
    import scipy.sparse as sp

    X, y, qid = synthetic(seed=3)
    X[X < -0.5] = 0.0            # zeros, stored or not
    X[::7, 2] = np.nan           # missing values
    weight = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    perm = shuffled_within_queries(qid, seed=1)
    for data in (X, sp.csr_matrix(X)):
        a = BoostRanker(n_estimators=8).fit(data, y, qid=qid,
                                            sample_weight=weight)
        b = BoostRanker(n_estimators=8).fit(data[perm], y[perm],
                                            qid=qid[perm],
                                            sample_weight=weight[perm])
        assert same_trees(a, b)
        np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_row_keys_move_with_rows_and_depend_on_data_weight_and_salt():
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.3] = 0.0
    X[rng.random(X.shape) < 0.1] = np.nan
    X[7] = X[3]                  # an identical row
    weight = np.ones(50)
    keys = row_keys(X, weight, 5, 1)
    perm = rng.permutation(50)
    np.testing.assert_array_equal(row_keys(X[perm], weight, 5, 2), keys[perm])
    assert keys[7] == keys[3]
    assert len(np.unique(np.delete(keys, 7))) == 49
    # sparse input keys the same: zeros (stored or not, also -0.0) and
    # missing values (NaN stored) are no entries
    X_neg_zero = np.where(X == 0, np.float32(-0.0), X)
    rows, cols = np.nonzero(np.ones_like(X))
    every_entry = sp.csr_matrix((X.ravel(), (rows, cols)), shape=X.shape)
    assert every_entry.nnz == X.size
    for same in (X_neg_zero, sp.csr_matrix(X), every_entry):
        np.testing.assert_array_equal(row_keys(same, weight, 5, 1), keys)
    assert not np.any(row_keys(X, weight, 6, 1) == keys)
    heavier = weight.copy()
    heavier[4] = 2.0
    changed = row_keys(X, heavier, 5, 1) != keys
    assert changed[4] and changed.sum() == 1
    X[9, 5] = 1.5 if X[9, 5] != 1.5 else 2.5
    changed = row_keys(X, weight, 5, 1) != keys
    assert changed[9] and changed.sum() == 1


def test_random_state_sets_the_order_of_equal_scores(letor):
    """An integer random_state salts the row keys; without one (None or an
    instance) the salt is 0, so repeated fits give the same model."""
    (X, y, qid), (X_test, _, _) = letor
    fit = lambda **kw: BoostRanker(n_estimators=5, **kw).fit(  # noqa: E731
        X, y, qid=qid).predict(X_test)
    default = fit()
    np.testing.assert_array_equal(fit(random_state=0), default)
    np.testing.assert_array_equal(fit(random_state=None), default)
    np.testing.assert_array_equal(
        fit(random_state=np.random.RandomState(3)), default)
    assert not np.array_equal(fit(random_state=1), default)


def test_kernel_ties_are_ranked_by_label_then_key():
    """All scores equal: the lower label ranks first, then the lower key;
    swapping the rows of the query swaps their lambdas."""
    y = np.array([1.0, 0.0, 1.0, 0.0])
    ptr = np.array([0, 4])
    key = np.array([9, 4, 2, 7], dtype=np.uint64)
    g = kernel(y, np.zeros(4), ptr, "rank:ndcg", row_key=key)
    perm = np.array([2, 0, 3, 1])
    g_perm = kernel(y[perm], np.zeros(4), ptr, "rank:ndcg",
                    row_key=key[perm])
    np.testing.assert_array_equal(g_perm, g[perm])
    # ranks: row 1 (label 0, key 4), row 3 (0, key 7), row 2 (1, key 2),
    # row 0 (1, key 9): the naive LambdaMART in that order
    expected, _ = naive_lambdas(y, np.zeros(4), ptr, "rank:ndcg", 32, True,
                                key)
    np.testing.assert_allclose(g[:, 0], expected, rtol=1e-6)
    assert g[2, 0] != g[0, 0] and g[1, 0] != g[3, 0]


# --------------------------------------------------------------------------
# Per-query weights (query_weight): XGBoost's ranking sample_weight
# --------------------------------------------------------------------------

def weighted_queries(seed=0, n_queries=30, per_query=12):
    """Continuous features (no ties), graded labels, queries of one size,
    and one weight per query of a wide spread."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.normal(size=(n, 5)).astype(np.float32)
    qid = np.repeat(np.arange(n_queries), per_query)
    signal = X[:, 0] + 0.5 * X[:, 1] * X[:, 2]
    y = np.clip(np.round(signal + rng.normal(scale=0.5, size=n) + 1), 0, 3)
    query_weight = rng.uniform(0.2, 3.0, size=n_queries)
    return X, y, qid, query_weight


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise"])
def test_query_weight_gives_xgboosts_model(objective):
    """``query_weight`` is XGBRanker's per-query ``sample_weight``: with the
    exact method the two models agree on the training rows to float32
    rounding, the skboost rows given shuffled across queries (weights in
    increasing qid order), XGBoost's sorted by qid (as it requires) and,
    within a query, in skboost's order of equal scores (label, row key of
    the row's normalised weight; see test_letor_ndcg_matches_xgboost)."""
    xgb = pytest.importorskip("xgboost")
    X, y, qid, query_weight = weighted_queries()
    params = dict(n_estimators=10, max_depth=4, learning_rate=0.3,
                  tree_method="exact", objective=objective, n_jobs=1,
                  min_child_weight=2.0)
    shuffled = np.random.default_rng(1).permutation(len(y))
    ours = BoostRanker(**params).fit(X[shuffled], y[shuffled],
                                     qid=qid[shuffled],
                                     query_weight=query_weight)
    row_weight = np.repeat(query_weight / query_weight.mean(),
                           np.bincount(qid))
    tie_order = np.lexsort((row_keys(X, row_weight, 0, 1), y, qid))
    theirs = xgb.XGBRanker(**params, base_score=0.0).fit(
        X[tie_order], y[tie_order], qid=qid[tie_order],
        sample_weight=query_weight)
    ours_scores, theirs_scores = ours.predict(X), theirs.predict(X)
    assert np.std(theirs_scores) > 0.1   # a model to compare
    np.testing.assert_allclose(ours_scores, theirs_scores, rtol=0, atol=1e-5)
    # the weights change the model (the comparison sees them)
    unweighted = BoostRanker(**params).fit(X, y, qid=qid)
    assert np.abs(unweighted.predict(X) - ours_scores).max() > 1e-3


def test_query_weight_is_each_rows_normalised_weight():
    """query_weight (qid or group, any scale) trains on every row's query
    weight normalised to mean 1, times sample_weight when given too. (The
    scale here is a power of 2, so that the normalised weights are the same
    bits: the row keys that order equal scores hash the weights.)"""
    X, y, qid, query_weight = weighted_queries(per_query=8)
    est = BoostRanker(n_estimators=4, max_depth=3, min_child_weight=2.0)
    ours = est.fit(X, y, qid=qid, query_weight=query_weight).predict(X)
    per_row = np.repeat(query_weight / query_weight.mean(), np.bincount(qid))
    np.testing.assert_array_equal(
        BoostRanker(**est.get_params()).fit(
            X, y, qid=qid, sample_weight=per_row).predict(X), ours)
    np.testing.assert_array_equal(
        BoostRanker(**est.get_params()).fit(
            X, y, group=np.bincount(qid),
            query_weight=list(8 * query_weight)).predict(X), ours)
    row_weight = np.random.default_rng(5).uniform(0.5, 2.0, len(y))
    np.testing.assert_array_equal(
        BoostRanker(**est.get_params()).fit(
            X, y, qid=qid, sample_weight=row_weight,
            query_weight=query_weight).predict(X),
        BoostRanker(**est.get_params()).fit(
            X, y, qid=qid, sample_weight=per_row * row_weight).predict(X))


def test_query_weight_follows_increasing_qid_not_first_appearance():
    """Queries appearing in the order 2, 0, 1: the weights are those of
    the queries 0, 1, 2."""
    X, y, qid, query_weight = weighted_queries(n_queries=3, per_query=20)
    rows = np.concatenate([np.flatnonzero(qid == q) for q in (2, 0, 1)])
    est = BoostRanker(n_estimators=3, max_depth=3)
    sorted_fit = est.fit(X, y, qid=qid, query_weight=query_weight).predict(X)
    np.testing.assert_array_equal(
        BoostRanker(**est.get_params()).fit(
            X[rows], y[rows], qid=qid[rows],
            query_weight=query_weight).predict(X), sorted_fit)
    assert not np.array_equal(
        BoostRanker(**est.get_params()).fit(
            X[rows], y[rows], qid=qid[rows],
            query_weight=query_weight[[2, 0, 1]]).predict(X), sorted_fit)


@pytest.mark.parametrize("query_weight, match", [
    ([1.0, 2.0], r"query_weight must be 1-D with one weight per query \(3"),
    ([[1.0, 2.0, 3.0]], "query_weight must be 1-D"),
    (2.0, "query_weight must be an array-like"),
    ([1.0, np.nan, 1.0], "query_weight contains NaN or infinity"),
    ([1.0, np.inf, 1.0], "query_weight contains NaN or infinity"),
    ([1.0, -1.0, 1.0], "query_weight contains negative weights"),
    ([0.0, 0.0, 0.0], "query_weight must have a positive sum"),
    (["a", "b", "c"], "query_weight must hold numbers"),
    ([1e300, 1e300, 1.0], "query_weight sums to"),
])
def test_invalid_query_weight_is_rejected(query_weight, match):
    X, y, qid, _ = weighted_queries(n_queries=3, per_query=4)
    with pytest.raises(ValueError, match=match):
        BoostRanker(n_estimators=2).fit(X, y, qid=qid,
                                        query_weight=query_weight)


def test_per_query_sample_weight_names_query_weight():
    """XGBRanker code passing one sample weight per query gets an error
    that points to query_weight (also for the eval sets)."""
    X, y, qid, query_weight = weighted_queries(n_queries=3, per_query=4)
    with pytest.raises(ValueError, match=r"sample_weight has 3 entries, one "
                       r"per query.*12 rows.*pass query_weight= instead"):
        BoostRanker(n_estimators=2).fit(X, y, qid=qid,
                                        sample_weight=query_weight)
    with pytest.raises(ValueError, match=r"sample_weight_eval_set\[0\] has 3 "
                       r"entries.*pass eval_query_weight= instead"):
        BoostRanker(n_estimators=2).fit(
            X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid],
            sample_weight_eval_set=[query_weight])
    # one row per query: a per-row sample_weight, accepted
    BoostRanker(n_estimators=2).fit(X[:3], y[:3], qid=[0, 1, 2],
                                    sample_weight=[1.0, 2.0, 3.0])


def test_eval_query_weight_weighs_the_queries_of_the_metric():
    X, y, qid, query_weight = weighted_queries(per_query=8)
    X_eval, y_eval, qid_eval, eval_weight = weighted_queries(seed=1,
                                                             per_query=8)
    est = BoostRanker(n_estimators=3, max_depth=3, eval_metric="ndcg@5")
    fit = dict(qid=qid, eval_set=[(X, y), (X_eval, y_eval)],
               eval_qid=[qid, qid_eval])
    weighted = est.fit(X, y, **fit, eval_query_weight=[None, eval_weight])
    result = weighted.evals_result_
    per_row = np.repeat(eval_weight / eval_weight.mean(),
                        np.bincount(qid_eval))
    again = BoostRanker(**est.get_params()).fit(
        X, y, **fit, sample_weight_eval_set=[None, per_row]).evals_result_
    assert result == again
    unweighted = BoostRanker(**est.get_params()).fit(X, y, **fit)
    assert (result["validation_0"]
            == unweighted.evals_result_["validation_0"])
    assert (result["validation_1"]["ndcg@5"]
            != unweighted.evals_result_["validation_1"]["ndcg@5"])
    with pytest.raises(ValueError, match=r"eval_query_weight\[1\] must be "
                       "1-D with one weight per query"):
        BoostRanker(**est.get_params()).fit(
            X, y, **fit, eval_query_weight=[None, eval_weight[:-1]])
    with pytest.raises(ValueError, match="need one entry per eval_set pair"):
        BoostRanker(**est.get_params()).fit(X, y, **fit,
                                            eval_query_weight=[eval_weight])
    with pytest.raises(ValueError, match="eval_query_weight needs an "
                       "eval_set"):
        BoostRanker(**est.get_params()).fit(X, y, qid=qid,
                                            eval_query_weight=[eval_weight])


def test_dask_ranker_rejects_query_weight_clearly():
    pytest.importorskip("distributed")
    from skboost.dask import DaskBoostRanker

    X, y, qid, query_weight = weighted_queries(n_queries=3, per_query=4)
    with pytest.raises(ValueError, match="query_weight is not supported by "
                       "DaskBoostRanker"):
        DaskBoostRanker(n_estimators=2).fit(X, y, qid=qid,
                                            query_weight=query_weight)
