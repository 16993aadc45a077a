"""
pandas workflow: pipeline, search, early stopping, importances
==============================================================

The first hour of a project with skboost, pandas and scikit-learn: a
DataFrame with mixed dtypes and missing values (scikit-learn's bundled
breast-cancer data plus a nullable integer, a boolean and a text column),
a :class:`~sklearn.pipeline.Pipeline` that encodes the text column,
:class:`~sklearn.model_selection.GridSearchCV` with early stopping on an
internal hold-out (no ``eval_set`` needed, no leakage from the test folds),
a saved and reloaded model, the feature importances and the learning curve
of the chosen model.

Run it with ``python examples/pandas_workflow.py [output directory]``; it
takes a few seconds and writes ``model.json`` and ``importance.png`` (the
plots need matplotlib: ``pip install skboost[plot]``) to the output
directory: the one given, else a new temporary directory (never the
current one), whose path it prints. It needs pandas (``pip install
pandas``), which skboost itself does not require.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder

from skboost import BoostClassifier

if len(sys.argv) > 1:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
else:  # files of an example do not belong in the caller's directory
    out_dir = Path(tempfile.mkdtemp(prefix="skboost-example-"))
print(f"output directory: {out_dir}")
rng = np.random.default_rng(0)

# %%
# A DataFrame with mixed dtypes and missing values
# ------------------------------------------------
# A nullable integer with ``pd.NA``, a boolean, a text column, NaN in a
# float column.
data = load_breast_cancer(as_frame=True)
frame = data.frame.drop(columns="target").iloc[:, :10]  # 10 float columns
frame.columns = [c.replace(" ", "_") for c in frame.columns]
n = len(frame)
frame["n_biopsies"] = pd.array(rng.integers(0, 4, n), dtype="Int64")
frame.loc[rng.random(n) < 0.1, "n_biopsies"] = pd.NA
frame["follow_up"] = rng.random(n) < 0.3
frame["clinic"] = pd.Series(rng.choice(["north", "south", "east"], n),
                            dtype="string")
frame.loc[rng.random(n) < 0.05, "mean_texture"] = np.nan
y = pd.Series(np.where(data.target == 1, "benign", "malignant"),
              name="diagnosis")
print("column dtypes:", sorted(set(frame.dtypes.astype(str))))

X_train, X_test, y_train, y_test = train_test_split(
    frame, y, test_size=0.25, stratify=y, random_state=0)

# %%
# A pipeline: encode the text column, pass the rest through
# ---------------------------------------------------------
# skboost takes numeric, bool and nullable columns directly (missing values
# stay missing); only the text column needs encoding. set_output keeps a
# DataFrame, so the model sees (and remembers) the column names.
encode = ColumnTransformer(
    [("clinic", OrdinalEncoder(), ["clinic"])], remainder="passthrough",
    verbose_feature_names_out=False).set_output(transform="pandas")
model = BoostClassifier(
    n_estimators=500,             # an upper bound: early stopping decides
    early_stopping_rounds=10,     # watch a hold-out of each training set ...
    validation_fraction=0.15,     # ... of this size, stratified by class
    random_state=0)
pipe = Pipeline([("encode", encode), ("boost", model)])

# %%
# Model selection: each fit early-stops on its own training folds
# ---------------------------------------------------------------
search = GridSearchCV(
    pipe, {"boost__max_depth": [2, 4], "boost__learning_rate": [0.1, 0.3]},
    cv=3, scoring="roc_auc", n_jobs=1)
search.fit(X_train, y_train)
best = search.best_estimator_
booster = best.named_steps["boost"]
print("best parameters:", search.best_params_)
print(f"best CV ROC AUC: {search.best_score_:.4f}")
print(f"early stopping kept {booster.best_iteration + 1} of "
      f"{booster.get_booster().n_rounds} rounds")

malignant = list(booster.classes_).index("malignant")
proba = best.predict_proba(X_test)[:, malignant]
accuracy = accuracy_score(y_test, best.predict(X_test))
print(f"test accuracy: {accuracy:.4f}")
print(f"test ROC AUC: {roc_auc_score(y_test == 'malignant', proba):.4f}")

# %%
# Columns are matched by name: another order predicts the same
# ------------------------------------------------------------
shuffled = X_test[list(X_test.columns[::-1])]
assert np.array_equal(best.predict_proba(shuffled), best.predict_proba(X_test))

# %%
# Save the fitted model, load it back: the same predictions
# ---------------------------------------------------------
path = out_dir / "model.json"
booster.save_model(path)
loaded = BoostClassifier.load(path)
encoded_test = best.named_steps["encode"].transform(X_test)
same = np.array_equal(loaded.predict_proba(encoded_test),
                      booster.predict_proba(encoded_test))
print(f"saved model: {path} ({path.stat().st_size} bytes), "
      f"identical predictions after loading: {same}")

# %%
# Feature importances and the learning curve
# ------------------------------------------
# The importance of a feature is the average gain of its splits. The
# learning curve is the log loss on the internal hold-out, round by round;
# the dashed line marks the best round, where early stopping cut the model.
importances = pd.Series(booster.feature_importances_,
                        index=booster.feature_names_in_).sort_values()
print("top features (gain):", list(importances.index[::-1][:3]))
try:
    import matplotlib.pyplot as plt
except ImportError:
    print("importance plot skipped: matplotlib is not installed")
else:
    from skboost.plotting import plot_importance, plot_metric

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    plot_importance(booster, max_num_features=8, ax=left)
    plot_metric(booster, ax=right, title="Log loss on the internal hold-out")
    fig.tight_layout()
    fig.savefig(out_dir / "importance.png")
    print(f"importance plot: {out_dir / 'importance.png'}")
