"""
Sparse data
===========

scipy.sparse matrices go into ``fit`` and ``predict`` as they are: never
densified, at a cost that grows with the stored entries, not with rows x
columns. This example builds a bag-of-words-like CSR matrix (20,000
documents, 20 stored entries each, a label decided by a few hundred "words"),
fits it with each ``tree_method``, shows the two meanings of an absent entry
(missing, as in XGBoost, or zero), and measures the fit time as the number
of columns grows a thousandfold at the same number of stored entries. It
takes about twenty-five seconds.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from skboost import BoostClassifier


def documents(n_rows, n_columns, per_row=20, seed=0):
    """A CSR matrix with ``per_row`` entries a row (word counts 1-3) and a
    label from a logistic model over the first 300 columns."""
    rng = np.random.default_rng(seed)
    # frequent "words" first, as in text (Zipf-like column frequencies)
    weights = 1.0 / np.arange(1, n_columns + 1)
    columns = rng.choice(n_columns, size=(n_rows, per_row),
                         p=weights / weights.sum())
    counts = rng.integers(1, 4, size=(n_rows, per_row)).astype(np.float32)
    X = sp.csr_matrix((counts.ravel(), columns.ravel(),
                       np.arange(0, n_rows * per_row + 1, per_row)),
                      shape=(n_rows, n_columns))
    X.sum_duplicates()
    effect = np.zeros(n_columns)
    effect[:300] = rng.normal(scale=1.5, size=300)
    logit = X @ effect - np.median(X @ effect)
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


X, y = documents(n_rows=25_000, n_columns=10_000)
X_train, y_train = X[:20_000], y[:20_000]
X_test, y_test = X[20_000:], y[20_000:]
dense_mb = X_train.shape[0] * X_train.shape[1] * 4 / 1e6
sparse_mb = (X_train.data.nbytes + X_train.indices.nbytes
             + X_train.indptr.nbytes) / 1e6
print(f"{X_train.shape[0]} x {X_train.shape[1]} CSR, {X_train.nnz} stored "
      f"entries: {sparse_mb:.1f} MB (dense float32 would be "
      f"{dense_mb:.0f} MB)")

# %%
# Every method takes the CSR matrix
# ---------------------------------
params = dict(n_estimators=50, max_depth=6, learning_rate=0.3)
for method in ("exact", "hist", "approx"):
    start = time.perf_counter()
    model = BoostClassifier(tree_method=method, **params).fit(X_train, y_train)
    seconds = time.perf_counter() - start
    auc = roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])
    print(f"{method:>6}: fit {seconds:.2f} s, test AUC {auc:.4f}")

# %%
# Absent entries: missing or zero
# -------------------------------
# By default an absent entry is a missing value (XGBoost's convention):
# each split learns which side they take. With ``sparse_absent="zero"`` an
# absent entry is the value 0.0, and the model is the one the dense matrix
# would give.
small = X_train[:2000, :500]
as_zero = BoostClassifier(sparse_absent="zero", **params).fit(small,
                                                              y_train[:2000])
dense = BoostClassifier(**params).fit(small.toarray(), y_train[:2000])
same = np.array_equal(as_zero.predict_proba(X_test[:, :500]),
                      dense.predict_proba(X_test[:, :500].toarray()))
print(f'sparse_absent="zero" gives the dense model: {same}')

# %%
# The cost follows the stored entries
# -----------------------------------
# The same 20,000 rows and 20 entries a row, spread over 1,000 to 1,000,000
# columns, five trees each. A dense method's work would grow with the
# columns, a thousandfold; here the time grows far less (what does grow is
# the per-column bookkeeping: cut points, presorted blocks and histogram
# slots for every column, most of them nearly empty).
widths = [1_000, 10_000, 100_000, 1_000_000]
times = {"hist": [], "exact": []}
for width in widths:
    X_wide, y_wide = documents(n_rows=20_000, n_columns=width, seed=1)
    for method in times:
        start = time.perf_counter()
        BoostClassifier(tree_method=method, n_estimators=5,
                        max_depth=6).fit(X_wide, y_wide)
        times[method].append(time.perf_counter() - start)
    print(f"{width:>9} columns: hist {times['hist'][-1]:.2f} s, "
          f"exact {times['exact'][-1]:.2f} s")

fig, ax = plt.subplots(figsize=(6.4, 4))
for method, marker in (("hist", "o-"), ("exact", "s-")):
    ax.plot(widths, times[method], marker, label=method)
ax.set_xscale("log")
ax.set_ylim(bottom=0)
ax.set_xlabel("columns (20 stored entries a row, 20,000 rows)")
ax.set_ylabel("fit time of 5 trees (s)")
ax.set_title("Sparse input: time follows the stored entries")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
