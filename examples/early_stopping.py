"""
Early stopping and the evaluation history
=========================================

Boosting adds trees until ``n_estimators``; past some round, new trees fit
the noise of the training rows and the held-out error rises again. With an
``eval_set`` the estimator records every metric on every evaluation set
after each round (``evals_result_``), and ``early_stopping_rounds`` stops
the fit once the last evaluation set's metric has not improved for that
many rounds; ``predict`` then uses the trees up to ``best_iteration``.

The data: scikit-learn's ``make_hastie_10_2`` (ten standard normal
features, the class decided by a sphere; the classic benchmark of boosting
in *The Elements of Statistical Learning*) with 10% of the labels flipped.
It takes a few seconds.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_hastie_10_2
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from skboost import BoostClassifier
from skboost.plotting import plot_metric

X, y = make_hastie_10_2(n_samples=12_000, random_state=0)
y = (y > 0).astype(int)
flip = np.random.default_rng(0).random(y.size) < 0.1
y[flip] = 1 - y[flip]
X_train, X_rest, y_train, y_rest = train_test_split(X, y, train_size=6000,
                                                    random_state=0)
X_valid, X_test, y_valid, y_test = train_test_split(X_rest, y_rest,
                                                    test_size=0.5,
                                                    random_state=0)

# %%
# The full history, without stopping
# ----------------------------------
# Deep trees and a large step overfit quickly: the training loss keeps
# falling, the validation loss turns up after a few dozen rounds.
params = dict(n_estimators=400, max_depth=6, learning_rate=0.3,
              eval_metric=["auc", "logloss"])
full = BoostClassifier(**params)
full.fit(X_train, y_train, eval_set=[(X_train, y_train), (X_valid, y_valid)])
history = full.evals_result_
print("evals_result_ keys:", {name: list(metrics)
                              for name, metrics in history.items()})
best_round = int(np.argmin(history["validation_1"]["logloss"]))
print(f"validation log loss: round 0 "
      f"{history['validation_1']['logloss'][0]:.4f}, lowest "
      f"{history['validation_1']['logloss'][best_round]:.4f} at round "
      f"{best_round}, last {history['validation_1']['logloss'][-1]:.4f}")

# %%
# Early stopping
# --------------
# The last evaluation set (here the validation rows) and the last metric
# (log loss) decide. The fit stops 20 rounds after the best one; the model
# keeps every tree, and ``predict`` uses those up to ``best_iteration``.
stopped = BoostClassifier(**params, early_stopping_rounds=20)
stopped.fit(X_train, y_train,
            eval_set=[(X_train, y_train), (X_valid, y_valid)], verbose=50)
print(f"stopped after {stopped.get_booster().n_rounds} rounds; "
      f"best_iteration {stopped.best_iteration}, best_score "
      f"{stopped.best_score:.4f}")


def test_loss(model, **predict_params):
    return log_loss(y_test, model.predict_proba(X_test, **predict_params))


cut = (0, stopped.best_iteration + 1)
print(f"test log loss: all 400 rounds {test_loss(full):.4f}; "
      f"early-stopped model {test_loss(stopped):.4f}; "
      f"the full model cut at the same round "
      f"{test_loss(full, iteration_range=cut):.4f}")

# %%
# The learning curves
# -------------------
# ``skboost.plotting.plot_metric`` draws ``evals_result_``; the dashed line
# marks the best iteration of the early-stopped model.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
plot_metric(full, "logloss", ax=left, show_best=False,
            title="Log loss, 400 rounds")
left.axvline(stopped.best_iteration, color="grey", linestyle="--",
             label="early stopping's best round")
left.legend()
plot_metric(stopped, "auc", ax=right, title="AUC, stopped early")
fig.tight_layout()
