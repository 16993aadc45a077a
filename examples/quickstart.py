"""
Quick start
===========

A classifier and a regressor on data sets bundled with scikit-learn (no
download): fit, metrics, class probabilities, the model after its first
rounds (``iteration_range``) and the leaf each sample reaches (``apply``).

Run it with ``python examples/quickstart.py``; it takes a few seconds.
"""

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import (accuracy_score, mean_squared_error, r2_score,
                             roc_auc_score)
from sklearn.model_selection import train_test_split

from skboost import BoostClassifier, BoostRegressor

# %%
# Classification
# --------------
# Breast cancer: 569 samples, 30 features, 2 classes. Parameter names and
# defaults follow XGBoost's scikit-learn API.
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0)

clf = BoostClassifier(n_estimators=100, max_depth=3, learning_rate=0.1)
clf.fit(X_train, y_train)

# shape (n_test, 2); the columns follow clf.classes_
proba = clf.predict_proba(X_test)
accuracy = accuracy_score(y_test, clf.predict(X_test))
print(f"classifier test accuracy: {accuracy:.4f}")
print(f"classifier test ROC AUC:  {roc_auc_score(y_test, proba[:, 1]):.4f}")
print("predict_proba of the first 3 test samples:")
print(np.round(proba[:3], 4))

# %%
# ``iteration_range=(start, end)`` predicts with the trees of rounds
# ``[start, end)`` only: here, the model as it was after its first 10 of 100
# rounds.
early = clf.predict_proba(X_test, iteration_range=(0, 10))
print(f"classifier ROC AUC after 10 rounds: "
      f"{roc_auc_score(y_test, early[:, 1]):.4f}")

# %%
# ``apply`` gives the leaf each sample reaches in each tree, an array of
# shape (n_samples, n_trees).
leaves = clf.apply(X_test)
print(f"apply() shape: {leaves.shape}; leaves of the first test sample in "
      f"trees 0-4: {leaves[0, :5]}")

# %%
# Regression
# ----------
# Diabetes: 442 samples, 10 features, a continuous target. Shallow trees,
# small steps, and each tree sees 80% of the rows (``random_state`` seeds
# that subsampling).
X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0)

reg = BoostRegressor(n_estimators=200, max_depth=2, learning_rate=0.05,
                     subsample=0.8, random_state=0)
reg.fit(X_train, y_train)
y_pred = reg.predict(X_test)
# A small, noisy target: on this split even a linear model reaches only
# R^2 0.36.
rmse = np.sqrt(mean_squared_error(y_test, y_pred))
print(f"regressor test RMSE: {rmse:.2f}")
print(f"regressor test R^2:  {r2_score(y_test, y_pred):.4f}")

# %%
# Predicted against measured progression of the disease on the test rows:
# points on the diagonal are exact predictions. (The plot needs matplotlib,
# which skboost itself does not: ``pip install skboost[plot]``.)
try:
    import matplotlib.pyplot as plt
except ImportError:
    print("plot skipped: matplotlib is not installed")
else:
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(y_test, y_pred, s=12, alpha=0.7)
    low = min(y_test.min(), y_pred.min())
    high = max(y_test.max(), y_pred.max())
    ax.plot([low, high], [low, high], color="grey", linestyle="--")
    ax.set_xlabel("measured")
    ax.set_ylabel("predicted by BoostRegressor")
    ax.set_title("Diabetes progression, test rows")
    fig.tight_layout()
