"""
Bringing models from XGBoost and LightGBM
=========================================

A model XGBoost trained, read by skboost from XGBoost's own file and
explained there; a skboost model written in XGBoost's format and served by
XGBoost; a LightGBM model read from its text file. Each prediction is
checked against the library that made the model.

Needs ``pip install xgboost lightgbm``. Run from the project root:
``python examples/models_from_xgboost.py [OUTPUT_DIR]`` (the model files
are written there, a temporary directory by default).
"""

import sys
import tempfile
from pathlib import Path

import lightgbm
import numpy as np
import xgboost
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from skboost import BoostClassifier

X, y = load_breast_cancer(return_X_y=True)
X = X.astype(np.float32)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
# a few missing values, as production data has them
rng = np.random.default_rng(0)
X_test = X_test.copy()
X_test[rng.random(X_test.shape) < 0.2] = np.nan
out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())

# %%
# An XGBoost model, read from XGBoost's file
# -------------------------------------------
# The estimator loads XGBoost's JSON or UBJSON file (the suffix says
# which); it predicts XGBoost's probabilities and explains them with
# XGBoost's SHAP values.

xgb_model = xgboost.XGBClassifier(n_estimators=100, max_depth=4)
xgb_model.fit(X_train, y_train)
xgb_model.save_model(out / "xgb_model.ubj")

clf = BoostClassifier.load(out / "xgb_model.ubj")
difference = np.abs(clf.predict_proba(X_test)
                    - xgb_model.predict_proba(X_test)).max()
print(f"largest difference from XGBoost's probabilities: {difference:.1e}")
contributions = clf.predict_contributions(X_test)
theirs = xgb_model.get_booster().predict(xgboost.DMatrix(X_test),
                                         pred_contribs=True)
print(f"largest difference from XGBoost's SHAP values: "
      f"{np.abs(contributions - theirs).max():.1e}")

# %%
# A skboost model, served by XGBoost
# ----------------------------------
# ``save_model(..., format="xgboost")`` writes XGBoost's schema, which
# ``xgboost.Booster`` loads.

ours = BoostClassifier(n_estimators=100, max_depth=4, tree_method="exact")
ours.fit(X_train, y_train)
ours.save_model(out / "skboost_model.json", format="xgboost")
served = xgboost.Booster(model_file=out / "skboost_model.json")
served_proba = served.predict(xgboost.DMatrix(X_test))
print(f"XGBoost serving skboost's model, largest difference: "
      f"{np.abs(served_proba - ours.predict_proba(X_test)[:, 1]).max():.1e}")

# %%
# A LightGBM model, read from its text file
# -----------------------------------------
# LightGBM compares float64 values with its thresholds, skboost (like
# XGBoost) float32 values: the models agree exactly on float32 input, while
# a float64 value closer to a threshold than float32 rounding may go the
# other way. The rows are given as float32 here.

lgbm = lightgbm.LGBMClassifier(n_estimators=100, num_leaves=15, verbose=-1)
lgbm.fit(X_train, y_train)
lgbm.booster_.save_model(out / "lightgbm_model.txt")
from_lightgbm = BoostClassifier.load(out / "lightgbm_model.txt")
difference = np.abs(from_lightgbm.predict_proba(X_test)
                    - lgbm.predict_proba(X_test)).max()
print(f"largest difference from LightGBM's probabilities: {difference:.1e}")
print(f"accuracy of the three: XGBoost's {clf.score(X_test, y_test):.3f}, "
      f"skboost's {ours.score(X_test, y_test):.3f}, LightGBM's "
      f"{from_lightgbm.score(X_test, y_test):.3f}")
