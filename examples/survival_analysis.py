"""
Survival analysis: Cox and AFT models of breast-cancer recurrence
=================================================================

The German Breast Cancer Study Group 2 data (686 patients, time to
recurrence in days, 56% censored), as scikit-survival ships it, fitted two
ways with :class:`~skboost.BoostRegressor`:

* ``objective="survival:cox"``: proportional hazards; ``predict`` gives
  each patient's relative risk;
* ``objective="survival:aft"``: accelerated failure time; ``predict``
  gives a time, here with censored rows as intervals ``[time, inf)``.

Both are scored by Harrell's concordance index (``score``), tuned with
``GridSearchCV`` (which uses it), and the Cox model is compared with
XGBoost's on the same folds when XGBoost is installed.

Run it from the project root with ``python examples/survival_analysis.py``
(it needs scikit-survival for the data: ``pip install scikit-survival``,
part of the test extra); it takes a few seconds.
"""

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from skboost import BoostRegressor

try:
    from sksurv.datasets import load_gbsg2
except ImportError:   # pragma: no cover - the message says what to do
    raise SystemExit("this example reads scikit-survival's data sets: "
                     "pip install scikit-survival")

# %%
# The data: a structured ``(event, time)`` array as ``y``
# --------------------------------------------------------
# The estimators take scikit-survival's structured arrays as they are
# (XGBoost's convention, times negative when censored, works too).
# Categorical columns are coded as integers here.

X, y = load_gbsg2()
X = X.assign(**{c: X[c].cat.codes for c in X.select_dtypes("category")})
print(f"{len(y)} patients, {np.mean(~y['cens']):.0%} censored")

folds = KFold(5, shuffle=True, random_state=0)

# %%
# Cox proportional hazards
# ------------------------

cox = BoostRegressor(objective="survival:cox", n_estimators=60, max_depth=2,
                     learning_rate=0.05)
cox_scores = cross_val_score(cox, X, y, cv=folds)
print(f"Cox: concordance {cox_scores.mean():.3f} "
      f"(+/- {cox_scores.std():.3f} over 5 folds)")

cox.fit(X, y)
risk = cox.predict(X.iloc[:3])
print("relative risks of the first three patients:", np.round(risk, 2))

# %%
# Accelerated failure time, censored rows as intervals
# ----------------------------------------------------
# ``y`` as (n, 2) bounds: an observed recurrence is ``[t, t]``, a censored
# patient ``[t, inf)``. ``aft_loss_distribution`` picks the noise of the
# log-times.

bounds = np.column_stack([y["time"], np.where(y["cens"], y["time"], np.inf)])
for distribution in ["normal", "logistic", "extreme"]:
    aft = BoostRegressor(objective="survival:aft", n_estimators=60,
                         max_depth=2, learning_rate=0.05,
                         aft_loss_distribution=distribution,
                         aft_loss_distribution_scale=1.0)
    scores = cross_val_score(aft, X, bounds, cv=folds)
    print(f"AFT ({distribution}): concordance {scores.mean():.3f}")

aft = BoostRegressor(objective="survival:aft", n_estimators=60, max_depth=2,
                     learning_rate=0.05).fit(X, bounds)
print("predicted recurrence times (days) of the first three patients:",
      np.round(aft.predict(X.iloc[:3])))

# %%
# Tuning by concordance
# ---------------------
# ``GridSearchCV`` scores with the estimator's ``score``: the concordance
# index for a survival objective.

search = GridSearchCV(
    BoostRegressor(objective="survival:cox", n_estimators=60),
    {"max_depth": [1, 2, 3], "learning_rate": [0.03, 0.1]}, cv=folds)
search.fit(X, y)
print("best parameters:", search.best_params_,
      f"concordance {search.best_score_:.3f}")

# %%
# Beside XGBoost
# --------------
# The same Cox model in XGBoost (``XGBRegressor(objective="survival:cox")``
# takes the signed times), scored on the same folds.

try:
    import xgboost
except ImportError:
    xgboost = None
if xgboost is not None:
    from skboost.metrics import concordance_index

    signed = np.where(y["cens"], y["time"], -y["time"])
    theirs = []
    for train, test in folds.split(X):
        model = xgboost.XGBRegressor(objective="survival:cox", n_estimators=60,
                                     max_depth=2, learning_rate=0.05)
        model.fit(X.iloc[train], signed[train])
        theirs.append(concordance_index(y["cens"][test], y["time"][test],
                                        model.predict(X.iloc[test])))
    print(f"XGBoost Cox: concordance {np.mean(theirs):.3f}")
