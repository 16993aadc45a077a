"""skboost quick start: a classifier and a regressor on data sets bundled with
scikit-learn (no download). Run it with ``python examples/quickstart.py``;
it takes a few seconds."""

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import (accuracy_score, mean_squared_error, r2_score,
                             roc_auc_score)
from sklearn.model_selection import train_test_split

from skboost import BoostClassifier, BoostRegressor

# --- Classification: breast cancer (569 samples, 30 features, 2 classes) ---
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0)

# Parameter names and defaults follow XGBoost's scikit-learn API.
clf = BoostClassifier(n_estimators=100, max_depth=3, learning_rate=0.1)
clf.fit(X_train, y_train)

proba = clf.predict_proba(X_test)  # shape (n_test, 2); columns follow clf.classes_
print(f"classifier test accuracy: {accuracy_score(y_test, clf.predict(X_test)):.4f}")
print(f"classifier test ROC AUC:  {roc_auc_score(y_test, proba[:, 1]):.4f}")
print("predict_proba of the first 3 test samples:")
print(np.round(proba[:3], 4))

# iteration_range=(start, end) predicts with the trees of rounds [start, end)
# only: here, the model as it was after its first 10 of 100 rounds.
early = clf.predict_proba(X_test, iteration_range=(0, 10))
print(f"classifier ROC AUC after 10 rounds: {roc_auc_score(y_test, early[:, 1]):.4f}")

# apply() gives the leaf each sample reaches in each tree: (n_samples, n_trees).
leaves = clf.apply(X_test)
print(f"apply() shape: {leaves.shape}; leaves of the first test sample in "
      f"trees 0-4: {leaves[0, :5]}")

# --- Regression: diabetes (442 samples, 10 features, continuous target) ---
X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0)

# Shallow trees, small steps, and each tree sees 80% of the rows
# (random_state seeds that subsampling).
reg = BoostRegressor(n_estimators=200, max_depth=2, learning_rate=0.05,
                     subsample=0.8, random_state=0)
reg.fit(X_train, y_train)
y_pred = reg.predict(X_test)
# A small, noisy target: on this split even a linear model reaches only R^2 0.36.
print(f"regressor test RMSE: {np.sqrt(mean_squared_error(y_test, y_pred)):.2f}")
print(f"regressor test R^2:  {r2_score(y_test, y_pred):.4f}")
