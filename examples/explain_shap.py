"""
Explaining predictions with SHAP values
=======================================

SHAP values of a :class:`~skboost.BoostRegressor` on the diabetes data
(disease progression after one year, from age, sex, body mass index, blood
pressure and six blood serum measurements), their interaction values, and
the shap package's plots.

    python examples/explain_shap.py [OUTPUT_DIR]

Prints the contributions of one patient, checks that they add up to its
prediction, names the strongest interaction, and (with matplotlib and shap
installed: ``pip install skboost[shap]``) saves a beeswarm and a waterfall
plot to OUTPUT_DIR (default: a new temporary directory).
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from skboost import BoostRegressor

if len(sys.argv) > 1:
    output = Path(sys.argv[1])
else:  # files of an example do not belong in the caller's directory
    output = Path(tempfile.mkdtemp(prefix="skboost-example-"))

X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
model = BoostRegressor(n_estimators=150, max_depth=2, learning_rate=0.05)
model.fit(X_train, y_train)

# %%
# Contributions
# -------------
# One row per patient, one column per feature, the expected value last; a
# row adds up to the patient's prediction.
contributions = model.predict_contributions(X_test)
patient = X_test.iloc[0]
print(f"patient 0: predicted {model.predict(X_test.iloc[:1])[0]:.3f}, "
      f"average prediction {contributions[0, -1]:.3f}")
order = np.argsort(-np.abs(contributions[0, :-1]))
for f in order[:4]:
    print(f"  {X.columns[f]:>10} = {patient.iloc[f]:8.3f}  "
          f"contributes {contributions[0, f]:+.3f}")
gap = np.abs(contributions.sum(axis=1) - model.predict(X_test)).max()
print(f"contributions add up to the predictions: max gap {gap:.1e}")
print(f"test R^2: {model.score(X_test, y_test):.3f}")

# %%
# Interaction values
# ------------------
# An array of shape (n_samples, n_features + 1, n_features + 1); the
# off-diagonal entries split each contribution between pairs of features.
interactions = model.predict_contributions(X_test, interactions=True)
strength = np.abs(interactions[:, :-1, :-1]).mean(axis=0)
np.fill_diagonal(strength, 0)
i, j = np.unravel_index(np.argmax(strength), strength.shape)
print(f"strongest interaction: {X.columns[i]} x {X.columns[j]}")

# %%
# The shap package's plots
# ------------------------
# ``shap_explanation`` hands the values to shap: a beeswarm of every test
# patient, then the waterfall of patient 0.
try:
    import matplotlib.pyplot as plt
    import shap
except ImportError:
    print("plots skipped: pip install skboost[shap]")
else:
    explanation = model.shap_explanation(X_test)
    plt.figure()
    shap.plots.beeswarm(explanation, show=False)
    plt.savefig(output / "shap_beeswarm.png", bbox_inches="tight", dpi=80)
    plt.figure()
    shap.plots.waterfall(explanation[0], show=False)
    plt.savefig(output / "shap_waterfall.png", bbox_inches="tight", dpi=80)
    print(f"plots saved to {output / 'shap_beeswarm.png'} and "
          f"{output / 'shap_waterfall.png'}")
