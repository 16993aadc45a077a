"""
Several targets and random forests
==================================

skboost with several targets, and random forests. Run it from the project
root with ``python examples/multi_output.py``; it takes a few seconds and
writes nothing.

1. Multi-output regression: a 2-D ``y`` trains one output per target, with
   one tree per target and round (the default, the same model as
   scikit-learn's :class:`~sklearn.multioutput.MultiOutputRegressor` of
   single-target models), or with vector-leaf trees
   (``multi_strategy="multi_output_tree"``: one tree per round for all
   targets).
2. Multi-label classification: a 0/1 matrix ``y``, one binary output per
   label.
3. A random forest (:class:`~skboost.BoostRFRegressor`) beside the boosted
   model.
"""

import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.metrics import f1_score, mean_squared_error
from sklearn.model_selection import train_test_split
from sklearn.multioutput import MultiOutputRegressor

from skboost import BoostClassifier, BoostRegressor, BoostRFRegressor


def regression_data(seed=0, n=4000):
    """Three targets driven by overlapping features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    Y = np.column_stack([
        np.sin(2 * X[:, 0]) + X[:, 1],
        X[:, 0] * X[:, 2] + 0.1 * rng.normal(size=n),
        X[:, 0] + np.abs(X[:, 3])])
    return train_test_split(X, Y, random_state=0)


def rmse(Y, prediction):
    return np.sqrt(mean_squared_error(Y, prediction))


def multi_output_regression():
    X_train, X_test, Y_train, Y_test = regression_data()
    params = dict(n_estimators=200, learning_rate=0.1, max_depth=4)
    per_target = BoostRegressor(**params).fit(X_train, Y_train)
    print("one tree per target:   predict shape",
          per_target.predict(X_test).shape,
          f"trees {len(per_target.get_booster().trees)}",
          f"test RMSE {rmse(Y_test, per_target.predict(X_test)):.4f}")
    oracle = MultiOutputRegressor(BoostRegressor(**params)).fit(X_train,
                                                                Y_train)
    same = np.array_equal(oracle.predict(X_test), per_target.predict(X_test))
    print(f"  the same predictions as MultiOutputRegressor: {same}")
    vector = BoostRegressor(multi_strategy="multi_output_tree",
                            **params).fit(X_train, Y_train)
    print("vector-leaf trees:     leaf values per tree",
          vector.get_booster().trees[0].value.shape[1],
          f"trees {len(vector.get_booster().trees)}",
          f"test RMSE {rmse(Y_test, vector.predict(X_test)):.4f}")
    return per_target, vector, X_test, Y_test


def multi_label_classification():
    X, Y = make_multilabel_classification(n_samples=2000, n_features=20,
                                          n_classes=5, random_state=0)
    X_train, X_test, Y_train, Y_test = train_test_split(X, Y, random_state=0)
    clf = BoostClassifier(n_estimators=100, learning_rate=0.1,
                          max_depth=4).fit(X_train, Y_train)
    proba = clf.predict_proba(X_test)
    print(f"multi-label: classes_ {clf.classes_}, predict_proba shape "
          f"{proba.shape}, test micro-F1 "
          f"{f1_score(Y_test, clf.predict(X_test), average='micro'):.3f}")


def random_forest():
    X_train, X_test, Y_train, Y_test = regression_data(seed=1)
    y_train, y_test = Y_train[:, 0], Y_test[:, 0]
    forest = BoostRFRegressor(n_estimators=100, max_depth=8,
                              random_state=0).fit(X_train, y_train)
    boosted = BoostRegressor(n_estimators=200, learning_rate=0.1,
                             max_depth=4).fit(X_train, y_train)
    print(f"random forest: {forest.get_booster().n_rounds} round of "
          f"{len(forest.get_booster().trees)} trees, test RMSE "
          f"{rmse(y_test, forest.predict(X_test)):.4f}; boosted: test RMSE "
          f"{rmse(y_test, boosted.predict(X_test)):.4f}")


# %%
# Multi-output regression
# -----------------------
# Three targets driven by overlapping features, fitted with one tree per
# target and round, then with vector-leaf trees.
per_target, vector, X_test, Y_test = multi_output_regression()

# %%
# The test error of each target under the two strategies (the plot needs
# matplotlib: ``pip install skboost[plot]``).
try:
    import matplotlib.pyplot as plt
except ImportError:
    print("plot skipped: matplotlib is not installed")
else:
    errors = {name: np.sqrt(((model.predict(X_test) - Y_test) ** 2)
                            .mean(axis=0))
              for name, model in (("one tree per target", per_target),
                                  ("vector-leaf trees", vector))}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    targets = np.arange(Y_test.shape[1])
    for shift, (name, values) in zip((-0.2, 0.2), errors.items()):
        ax.bar(targets + shift, values, width=0.4, label=name)
    ax.set_xticks(targets, [f"target {t}" for t in targets])
    ax.set_ylabel("test RMSE")
    ax.set_title("Multi-output regression: error per target")
    ax.legend()
    fig.tight_layout()

# %%
# Multi-label classification
# --------------------------
multi_label_classification()

# %%
# A random forest beside the boosted model
# ----------------------------------------
random_forest()
