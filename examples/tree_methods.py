"""
Exact, histogram and approximate methods: time and accuracy against max_bin
===========================================================================

``tree_method`` chooses how splits are found. ``"exact"`` tries every
distinct value of every feature; ``"hist"`` (the default) cuts each feature
once into at most ``max_bin`` bins and finds splits on gradient histograms;
``"approx"`` proposes ``max_bin`` hessian-weighted candidates again for
every tree. Fewer bins mean less work and coarser splits. This example fits
the three on the same regression problem (50,000 rows of scikit-learn's
Friedman #1 function, whose features act smoothly, so coarse cuts cost
accuracy) and plots fit time and test RMSE against ``max_bin``. It takes
about fifteen seconds; the times depend on the machine, their ratios much
less.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.metrics import mean_squared_error

from skboost import BoostRegressor

X, y = make_friedman1(n_samples=60_000, n_features=10, noise=0.5,
                      random_state=0)
X_train, y_train = X[:50_000], y[:50_000]
X_test, y_test = X[50_000:], y[50_000:]
# each tree sees 80% of the rows, so the approximate method proposes new
# candidates for every tree (from that tree's rows)
params = dict(n_estimators=100, max_depth=6, learning_rate=0.1, subsample=0.8,
              random_state=0, n_jobs=2)


def fit_and_score(**split_finding):
    """Fit time in seconds and test RMSE of one model."""
    model = BoostRegressor(**params, **split_finding)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    rmse = np.sqrt(mean_squared_error(y_test, model.predict(X_test)))
    return seconds, rmse


exact_time, exact_rmse = fit_and_score(tree_method="exact")
print(f"exact: fit {exact_time:.2f} s, test RMSE {exact_rmse:.4f}")

bins = [4, 8, 16, 64, 256, 1024]
results = {"hist": [], "approx": []}
for max_bin in bins:
    for method in results:
        results[method].append(fit_and_score(tree_method=method,
                                             max_bin=max_bin))
        seconds, rmse = results[method][-1]
        print(f"{method:>6}, max_bin {max_bin:>4}: fit {seconds:.2f} s, "
              f"test RMSE {rmse:.4f}")

# %%
# The trade-off
# -------------
# Left, the fit time: the histogram method barely depends on ``max_bin``
# (its cost is in building histograms, one pass over the rows per level);
# the approximate method pays for a new proposal every tree; the exact
# method for a walk of every presorted column at every level. Right, the
# accuracy: a few bins are too coarse for a smooth function; from about 64
# bins on, both binned methods are as accurate as the exact one.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for method, marker in (("hist", "o-"), ("approx", "s-")):
    left.plot(bins, [t for t, _ in results[method]], marker, label=method)
    right.plot(bins, [r for _, r in results[method]], marker, label=method)
left.axhline(exact_time, color="black", linestyle="--", linewidth=1,
             label="exact")
right.axhline(exact_rmse, color="black", linestyle="--", linewidth=1,
              label="exact")
for ax, label in ((left, "fit time (s)"), (right, "test RMSE")):
    ax.set_xscale("log", base=2)
    ax.set_xticks(bins, [str(b) for b in bins])
    ax.set_xlabel("max_bin")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
    ax.legend()
left.set_ylim(bottom=0)
left.set_title("Fit time (100 trees of depth 6, 2 threads)")
right.set_title("Accuracy")
fig.tight_layout()
