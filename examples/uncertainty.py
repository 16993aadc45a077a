"""
Predictions with their uncertainty
==================================

Intervals and predictive distributions on a real regression data set
(scikit-learn's diabetes data: disease progression one year after
baseline, 442 patients). Run it from the project root with ``python
examples/uncertainty.py``; it takes a few seconds and writes nothing.

1. Distributional regression: :class:`~skboost.BoostDistributionRegressor`
   fits a normal distribution per patient (mean and standard deviation
   both depend on the features), with early stopping on the held-out NLL.
2. Conformal intervals at 90%: split conformal around a mean model, and
   conformalised quantile regression (CQR) of a 5%/95% quantile model,
   calibrated on held-out rows (``conformalize`` then
   ``predict_interval``), with their coverage of test rows.
3. A plot of the intervals of the test patients, and of the predicted
   distributions of four of them.

See :doc:`/user_guide/uncertainty` for what each method guarantees.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from skboost import BoostDistributionRegressor, BoostRegressor

X, y = load_diabetes(return_X_y=True)
X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.4,
                                                    random_state=0)
X_cal, X_test, y_cal, y_test = train_test_split(X_rest, y_rest,
                                                test_size=0.5, random_state=0)

# %%
# A normal distribution per patient
# ---------------------------------
dist = BoostDistributionRegressor(
    distribution="normal", n_estimators=500, learning_rate=0.05,
    max_depth=2, min_child_weight=5, early_stopping_rounds=20,
    random_state=0)
dist.fit(X_train, y_train, eval_set=[(X_cal, y_cal)])
params = dist.predict_params(X_test)
print(f"rounds kept: {dist.best_iteration + 1}; held-out mean "
      f"log-likelihood {dist.score(X_test, y_test):.3f}")
print(f"predicted standard deviations: {params['scale'].min():.1f} to "
      f"{params['scale'].max():.1f}")
low, high = dist.predict_quantiles(X_test, [0.05, 0.95]).T
print(f"central 90% of the distributions covers "
      f"{np.mean((low <= y_test) & (y_test <= high)):.1%} of the test rows "
      "(no guarantee)")

# %%
# Conformal intervals at 90%
# --------------------------
alpha = 0.1
mean_model = BoostRegressor(n_estimators=200, learning_rate=0.05,
                            max_depth=2).fit(X_train, y_train)
mean_model.conformalize(X_cal, y_cal, method="split")
quantiles = BoostRegressor(objective="reg:quantileerror",
                           quantile_alpha=[alpha / 2, 1 - alpha / 2],
                           n_estimators=200, learning_rate=0.05,
                           max_depth=2).fit(X_train, y_train)
quantiles.conformalize(X_cal, y_cal, method="cqr")
intervals = {"split": mean_model.predict_interval(X_test, alpha),
             "CQR": quantiles.predict_interval(X_test, alpha)}
for name, (lower, upper) in intervals.items():
    covered = np.mean((lower <= y_test) & (y_test <= upper))
    print(f"{name:5s}: coverage {covered:.1%}, mean width "
          f"{np.mean(upper - lower):.1f}")
print(f"guarantee: coverage >= {1 - alpha:.0%} and, on average over "
      f"calibration sets, <= {1 - alpha + 1 / (len(y_cal) + 1):.1%}")

# %%
# The intervals, and four predicted distributions
# -----------------------------------------------
order = np.argsort(dist.predict(X_test))
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
rank = np.arange(len(order))
for (name, (lower, upper)), color in zip(intervals.items(),
                                         ("#9ecae1", "#1f77b4")):
    left.fill_between(rank, lower[order], upper[order], step="mid",
                      alpha=0.45, color=color, label=f"{name} 90%")
left.scatter(rank, y_test[order], s=8, color="black", label="observed")
left.set_xlabel("test patients, by predicted mean")
left.set_ylabel("disease progression")
left.legend(fontsize=8)
left.set_title("conformal intervals")

grid = np.linspace(0, 350, 400)
frozen = dist.predict_distribution(X_test)
for position in (len(order) * np.array([0.05, 0.35, 0.65, 0.95])).astype(int):
    row = order[position]
    density = frozen.pdf(grid[:, None])[:, row]
    line, = right.plot(grid, density)
    right.axvline(y_test[row], color=line.get_color(), linestyle=":")
right.set_xlabel("disease progression")
right.set_ylabel("predicted density")
right.set_title("predicted distributions (dotted: observed)")
fig.tight_layout()
plt.show()
