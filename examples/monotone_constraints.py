"""
Monotone and interaction constraints
====================================

A pricing model is only accepted when its price never falls as the floor
area grows, and never rises with the distance to the centre, whatever the
other features say. Noise in the data makes an unconstrained model wiggle;
``monotone_constraints`` forbids that, at little cost in accuracy, and
``interaction_constraints`` keeps the age of the building out of every
interaction (its effect is then the same for every flat).

Run it with ``python examples/monotone_constraints.py [output directory]``;
it takes a few seconds and writes ``monotone_pdp.png`` (partial dependence
with and without the constraints; needs matplotlib: ``pip install
skboost[plot]``) to the output directory: the one given, else a new
temporary directory (never the current one).
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.inspection import partial_dependence
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

from skboost import BoostRegressor

FEATURES = ["area", "distance", "age", "floor", "rooms"]

if len(sys.argv) > 1:
    out_dir = Path(sys.argv[1])
else:  # files of an example do not belong in the caller's directory
    out_dir = Path(tempfile.mkdtemp(prefix="skboost-example-"))

# %%
# The data: the price rises with area, falls with distance, plus noise
# --------------------------------------------------------------------
rng = np.random.default_rng(0)
n = 4000
X = np.column_stack([
    rng.uniform(20, 200, n),          # area (m2)
    rng.exponential(5.0, n),          # distance to the centre (km)
    rng.uniform(0, 100, n),           # age of the building (years)
    rng.integers(0, 12, n),           # floor
    rng.integers(1, 7, n),            # rooms
]).astype(float)
price = (3.0 * X[:, 0] * (1 + 0.4 * np.exp(-X[:, 1] / 3))
         - 4.0 * np.log1p(X[:, 1]) * 10 - 0.3 * X[:, 2] + 2.0 * X[:, 3])
y = price + rng.normal(scale=60.0, size=n)      # noisy sales
X[rng.random(X.shape) < 0.05] = np.nan          # some unknown values
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)

# %%
# The same model with and without the constraints
# -----------------------------------------------
params = dict(n_estimators=200, max_depth=5, learning_rate=0.05,
              subsample=0.8, random_state=0)
free = BoostRegressor(**params).fit(X_train, y_train)
constrained = BoostRegressor(
    **params,
    monotone_constraints=(1, -1, 0, 0, 0),  # area up, distance down
    interaction_constraints=[[0, 1, 3, 4], [2]],
).fit(X_train, y_train)

for name, model in (("unconstrained", free), ("constrained", constrained)):
    rmse = mean_squared_error(y_test, model.predict(X_test)) ** 0.5
    print(f"{name:>13} test RMSE: {rmse:.2f}")

# %%
# Is the price monotone in area for every test flat?
# --------------------------------------------------
def falls_in_area(model, rows, grid):
    """Number of rows whose predicted price falls somewhere as the area
    grows along ``grid``."""
    Z = np.repeat(rows, grid.shape[0], axis=0)
    Z[:, 0] = np.tile(grid, rows.shape[0])
    steps = np.diff(model.predict(Z).reshape(rows.shape[0], -1), axis=1)
    return int(np.count_nonzero((steps < 0).any(axis=1)))


grid = np.linspace(20, 200, 91)
rows = X_test[:200]
for name, model in (("unconstrained", free), ("constrained", constrained)):
    print(f"{name:>13}: price falls with area for "
          f"{falls_in_area(model, rows, grid)} of {rows.shape[0]} flats")

# %%
# Age is in no interaction: moving it shifts every price equally.
older = rows.copy()
older[:, 2] = 80.0
younger = rows.copy()
younger[:, 2] = 10.0
shift = constrained.predict(older) - constrained.predict(younger)
print(f"effect of age 10 -> 80 years: {shift.min():.3f} .. {shift.max():.3f} "
      "(the same for every flat)")

# %%
# Partial dependence with and without the constraints
# ---------------------------------------------------
# Thick lines: the average prediction as one feature moves along its range
# (the others as in the data); dashed: one flat's price.
try:
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot")
    sys.exit(0)

X_plot = np.nan_to_num(X_test[:300], nan=np.nanmedian(X_test, axis=0))
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
for ax, feature in zip(axes, (0, 1)):
    for name, model, color in (("unconstrained", free, "tab:red"),
                               ("constrained", constrained, "tab:blue")):
        result = partial_dependence(model, X_plot, [feature], kind="both",
                                    grid_resolution=40)
        grid_values = result["grid_values"][0]
        ax.plot(grid_values, result["average"][0], color=color, lw=2.5,
                label=f"{name}: average")
        # one flat's price along the grid (its other features fixed)
        ax.plot(grid_values, result["individual"][0][3], color=color, lw=1,
                ls="--", label=f"{name}: one flat")
    ax.set_xlabel(FEATURES[feature])
    ax.set_ylabel("predicted price")
axes[0].set_title("price must rise with area (+1)")
axes[1].set_title("price must fall with distance (-1)")
axes[0].legend(fontsize=8)
path = out_dir / "monotone_pdp.png"
fig.savefig(path, dpi=110)
print(f"partial dependence plot written to {path}")
