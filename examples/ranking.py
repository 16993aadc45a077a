"""skboost learning to rank: BoostRanker on the LETOR sample data, with early
stopping on a validation set and a grid search that routes the query ids
through scikit-learn's model selection. Run it from the project root with
``python examples/ranking.py``; it takes a few seconds.

The data (``rank.train``, ``rank.test`` and their ``.query`` files of group
sizes, from LightGBM's examples) are read from ``../shared/data`` unless the
``SKBOOST_DATA`` environment variable names another folder."""

import os
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import GridSearchCV, GroupKFold

from skboost import BoostRanker

DATA = Path(os.environ.get(
    "SKBOOST_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def load(name):
    """Features, relevance labels (0-4) and the query id of every row."""
    X, y = load_svmlight_file(str(DATA / name), zero_based=True,
                              n_features=301)
    sizes = np.loadtxt(DATA / f"{name}.query", dtype=np.int64)
    return X.toarray(), y, np.repeat(np.arange(len(sizes)), sizes)


X, y, qid = load("rank.train")
X_test, y_test, qid_test = load("rank.test")

# --- LambdaMART with early stopping on held-out queries ---
valid = qid >= 160  # the last queries of the training file
ranker = BoostRanker(n_estimators=500, learning_rate=0.1, max_depth=6,
                     eval_metric="ndcg@10", early_stopping_rounds=20,
                     score_k=10)
ranker.fit(X[~valid], y[~valid], qid=qid[~valid],
           eval_set=[(X[valid], y[valid])], eval_qid=[qid[valid]])
print(f"best round: {ranker.best_iteration} "
      f"(validation NDCG@10 {ranker.best_score:.4f})")
print(f"ranker test NDCG@10: {ranker.score(X_test, y_test, qid=qid_test):.4f}")

# Scores are per row; sorting a query's rows by score ranks its documents.
first_query = qid_test == 0
order = np.argsort(-ranker.predict(X_test[first_query]))
print("labels of the first test query, best-ranked first:",
      y_test[first_query][order].astype(int))

# --- Model selection: qid routed to fit and score as metadata ---
sklearn.set_config(enable_metadata_routing=True)
search_ranker = BoostRanker(n_estimators=50, learning_rate=0.1, score_k=10)
search_ranker.set_fit_request(qid=True).set_score_request(qid=True)
search = GridSearchCV(search_ranker, {"max_depth": [3, 6]},
                      cv=GroupKFold(n_splits=3))
search.fit(X, y, groups=qid, qid=qid)
print(f"grid search best max_depth: {search.best_params_['max_depth']} "
      f"(cross-validated NDCG@10 {search.best_score_:.4f})")
print(f"grid search test NDCG@10: "
      f"{search.score(X_test, y_test, qid=qid_test):.4f}")
