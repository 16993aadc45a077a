"""Defects that XGBoost's and LightGBM's own scikit-learn test suites found
(issue 19), each against an oracle: XGBoost on the same data, the same
fit given in the form skboost always took, or scikit-learn's NDCG.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import DataConversionWarning

from skboost import BoostClassifier, BoostRanker, BoostRegressor


def ranking_data(seed=0, n=300, n_queries=15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=n)), 0, 3)
    qid = np.sort(rng.integers(0, n_queries, n))
    return X, y, qid


def test_ranker_eval_set_without_queries_is_an_error():
    """XGBoost and LightGBM refuse it; scoring the whole eval set as one
    query would log a meaningless NDCG."""
    X, y, qid = ranking_data()
    ranker = BoostRanker(n_estimators=3)
    with pytest.raises(ValueError, match="eval_set\\[0\\] has no queries"):
        ranker.fit(X, y, qid=qid, eval_set=[(X, y)])
    # with the queries it is accepted
    ranker.fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid])
    (log,) = ranker.evals_result_["validation_0"].values()
    assert len(log) == 3


@pytest.mark.parametrize("loader", ["ones", "loadtxt"])
def test_float_query_sizes_that_are_whole_numbers(loader, tmp_path):
    """group=np.ones(n) and sizes read by np.loadtxt (float64) are the same
    input as integer sizes: the same model."""
    X, y, qid = ranking_data()
    sizes = np.bincount(qid)
    sizes = sizes[sizes > 0]
    if loader == "ones":
        # one document per query: every query is a single row
        float_sizes, int_sizes = np.ones(len(y)), np.ones(len(y), dtype=int)
    else:
        path = tmp_path / "train.group"
        np.savetxt(path, sizes, fmt="%d")
        float_sizes, int_sizes = np.loadtxt(path), sizes
        assert float_sizes.dtype == np.float64
    a = BoostRanker(n_estimators=4).fit(X, y, group=float_sizes)
    b = BoostRanker(n_estimators=4).fit(X, y, group=int_sizes)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("bad", [[1.5] * 2, [np.nan, 1.0], [1e30, -1e30]])
def test_fractional_query_sizes_are_rejected(bad):
    X = np.zeros((len(bad), 2))
    y = np.zeros(len(bad))
    with pytest.raises(ValueError, match="group must be non-negative whole"):
        BoostRanker(n_estimators=1).fit(X, y, group=np.array(bad))


@pytest.mark.parametrize("Estimator", [BoostRegressor, BoostClassifier])
def test_column_vector_eval_targets(Estimator):
    """A (n, 1) eval target is raveled as the training y is (scikit-learn's
    DataConversionWarning), giving the 1-D target's evaluation log."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(float)
    est = Estimator(n_estimators=3)
    with pytest.warns(DataConversionWarning):
        est.fit(X, y, eval_set=[(X, y[:, None])])
    column = est.evals_result_
    flat = Estimator(n_estimators=3).fit(X, y, eval_set=[(X, y)]).evals_result_
    assert column == flat


def test_ranker_eval_set_column_vector_target():
    X, y, qid = ranking_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataConversionWarning)
        a = BoostRanker(n_estimators=3).fit(
            X, y, qid=qid, eval_set=[(X, y[:, None])], eval_qid=[qid])
    b = BoostRanker(n_estimators=3).fit(X, y, qid=qid, eval_set=[(X, y)],
                                        eval_qid=[qid])
    assert a.evals_result_ == b.evals_result_


def test_ranker_score_needs_qid_when_fitted_with_queries():
    X, y, qid = ranking_data()
    ranker = BoostRanker(n_estimators=5).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="needs qid"):
        ranker.score(X, y)
    # with qid it is the mean NDCG over the queries (metrics' ndcg)
    from skboost.metrics import get_metric

    ptr = np.r_[np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]), len(qid)]
    expected = get_metric("ndcg")(y, ranker.predict(X), np.ones(len(y)), ptr)
    assert ranker.score(X, y, qid=qid) == expected
    # a ranker fitted without queries (one query) scores without them
    one = BoostRanker(n_estimators=5).fit(X, y)
    assert one.score(X, y) == get_metric("ndcg")(
        y, one.predict(X), np.ones(len(y)), np.array([0, len(y)]))


def test_callable_metric_under_softmax_gets_labels():
    """XGBoost passes the predicted labels to a custom metric under
    multi:softmax (and probabilities under multi:softprob)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=300), [-0.5, 0.5])
    seen = {}

    def error_rate(y_true, y_pred):
        seen.setdefault("shape", np.shape(y_pred))
        return float(np.mean(y_true != y_pred))

    params = dict(n_estimators=4, max_depth=3, tree_method="exact",
                  objective="multi:softmax", base_score=0.5)
    ours = BoostClassifier(**params, eval_metric=error_rate).fit(
        X, y, eval_set=[(X, y)])
    ours_shape = seen.pop("shape")
    theirs = xgb.XGBClassifier(**params, eval_metric=error_rate,
                               n_jobs=1).fit(X, y, eval_set=[(X, y)],
                                             verbose=False)
    assert ours_shape == seen["shape"] == (300,)
    ours_log = ours.evals_result_["validation_0"]["error_rate"]
    theirs_log = theirs.evals_result()["validation_0"]["error_rate"]
    # the labels of each round: the error rates of the predicted labels
    assert ours_log[-1] == pytest.approx(
        np.mean(ours.predict(X) != y), abs=0)
    np.testing.assert_allclose(ours_log, theirs_log, atol=1 / 300 + 1e-12)
