"""
Learning to rank with BoostRanker
=================================

:class:`~skboost.BoostRanker` (LambdaMART) on the LETOR sample data: query
ids per row, early stopping on held-out queries, ``NDCG@10`` round by round, and
a grid search that routes the query ids through scikit-learn's model
selection (metadata routing).

Run it from the project root with ``python examples/ranking.py``; it takes a
few seconds. The data (``rank.train``, ``rank.test`` and their ``.query``
files of group sizes, from LightGBM's examples) are read from the
project's ``data`` folder unless the ``SKBOOST_DATA`` environment variable
names another folder; without them, synthetic queries of the same shape
stand in.
"""

import os
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.metrics import ndcg_score
from sklearn.model_selection import GridSearchCV, GroupKFold

from skboost import BoostRanker

# The project's folder (sphinx-gallery runs an example from its own folder,
# without __file__) and its data folder.
PROJECT = Path(globals().get("__file__", "ranking.py")).resolve().parents[1]
DATA = Path(os.environ.get("SKBOOST_DATA", PROJECT / "data"))


def data_file(name):
    """``name`` in DATA, gzipped or not; None when it is not there."""
    for path in (DATA / name, DATA / f"{name}.gz"):
        if path.exists():
            return path
    return None


def load(name):
    """Features, relevance labels (0-4) and the query id of every row."""
    X, y = load_svmlight_file(str(data_file(name)), zero_based=True,
                              n_features=301)
    sizes = np.loadtxt(data_file(f"{name}.query"), dtype=np.int64)
    return X.toarray(), y, np.repeat(np.arange(len(sizes)), sizes)


def synthetic(n_queries, seed):
    """Queries of 10-60 documents with 20 features; relevance 0-4 grows
    with a hidden linear score."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(10, 60, n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.normal(size=(qid.size, 20))
    latent = X[:, :5] @ rng.normal(size=5) + rng.normal(scale=1.0,
                                                        size=qid.size)
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.75, 0.9, 0.97]))
    return X, y.astype(float), qid


def mean_ndcg(y, scores, qid, k=10):
    """Mean NDCG@k over the queries (the ranker's ``score``)."""
    return np.mean([ndcg_score([y[qid == q]], [scores[qid == q]], k=k)
                    for q in np.unique(qid)])


# %%
# The queries
# -----------
# Each row is a document of a query, with a graded relevance 0-4.
if all(data_file(name) for name in ("rank.train", "rank.train.query",
                                    "rank.test", "rank.test.query")):
    X, y, qid = load("rank.train")
    X_test, y_test, qid_test = load("rank.test")
else:
    print(f"LETOR sample not found in {DATA}: synthetic queries instead")
    X, y, qid = synthetic(250, seed=0)
    test = qid >= 200
    X_test, y_test, qid_test = X[test], y[test], qid[test] - 200
    X, y, qid = X[~test], y[~test], qid[~test]

# %%
# The baseline: the test queries ranked at random (mean of 20 draws).
rng = np.random.default_rng(0)
random_ndcg = np.mean([mean_ndcg(y_test, rng.random(len(y_test)), qid_test)
                       for _ in range(20)])
print(f"random-score test NDCG@10: {random_ndcg:.4f}")

# %%
# LambdaMART with early stopping on held-out queries
# --------------------------------------------------
valid = qid >= 0.8 * qid.max()  # the last queries of the training file
ranker = BoostRanker(n_estimators=500, learning_rate=0.1, max_depth=6,
                     eval_metric="ndcg@10", early_stopping_rounds=20,
                     score_k=10)
ranker.fit(X[~valid], y[~valid], qid=qid[~valid],
           eval_set=[(X[valid], y[valid])], eval_qid=[qid[valid]])
print(f"best round: {ranker.best_iteration} "
      f"(validation NDCG@10 {ranker.best_score:.4f})")
print(f"ranker test NDCG@10: {ranker.score(X_test, y_test, qid=qid_test):.4f}")

# %%
# Scores are per row; sorting a query's rows by score ranks its documents.
first_query = qid_test == 0
order = np.argsort(-ranker.predict(X_test[first_query]))
print("labels of the first test query, best-ranked first:",
      y_test[first_query][order].astype(int))

# %%
# ``NDCG@10`` of the held-out queries, round by round: it rises quickly, then
# stalls; early stopping keeps the model of the best round.
try:
    import matplotlib  # noqa: F401  (optional: pip install skboost[plot])
except ImportError:
    print("plot skipped: matplotlib is not installed")
else:
    from skboost.plotting import plot_metric

    ax = plot_metric(ranker, title="NDCG@10 of the held-out queries")
    ax.axhline(random_ndcg, color="grey", linestyle=":", label="random order")
    ax.legend()
    ax.figure.tight_layout()

# %%
# Model selection: qid routed to fit and score as metadata
# --------------------------------------------------------
# ``GroupKFold`` keeps each query's rows in one fold.
with sklearn.config_context(enable_metadata_routing=True):
    search_ranker = BoostRanker(n_estimators=50, learning_rate=0.1,
                                score_k=10)
    search_ranker.set_fit_request(qid=True).set_score_request(qid=True)
    search = GridSearchCV(search_ranker, {"max_depth": [3, 6]},
                          cv=GroupKFold(n_splits=3))
    search.fit(X, y, groups=qid, qid=qid)
    print(f"grid search best max_depth: {search.best_params_['max_depth']} "
          f"(cross-validated NDCG@10 {search.best_score_:.4f})")
    print(f"grid search test NDCG@10: "
          f"{search.score(X_test, y_test, qid=qid_test):.4f}")
