"""
Global and local proposals (the XGBoost paper's Figure 3)
=========================================================

The approximate method (``tree_method="approx"``) looks for splits only at
candidate cuts: hessian-weighted quantiles of each feature, about
``max_bin`` of them. It can propose them once per tree from all its rows
(``approx_proposal="global"``) or again at every node from the node's own
rows (``"local"``). Figure 3 of the XGBoost paper (Chen & Guestrin, 2016)
shows, on the HIGGS physics data, that local proposals need fewer
candidates for the same test AUC, and that the global proposal comes as
close to the exact greedy method as the local one once it has enough
candidates.

This example draws that comparison as test AUC against the number of
candidates per feature, with the exact method as the reference. It uses the
7,500-row sample of HIGGS in the project's ``data`` folder (``binary.train``
and ``binary.test``, from LightGBM's examples; ``SKBOOST_DATA`` names
another folder) when it is there, else a synthetic problem of the same
shape; it takes about ten seconds.
"""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score

from skboost import BoostClassifier

# The project's folder (sphinx-gallery runs an example from its own folder,
# without __file__) and its data folder.
PROJECT = Path(globals().get("__file__", "approx_proposals.py")).resolve()
PROJECT = PROJECT.parents[1]
DATA = Path(os.environ.get("SKBOOST_DATA", PROJECT / "data"))


def data_file(name):
    """``name`` in DATA, gzipped or not; None when it is not there."""
    for path in (DATA / name, DATA / f"{name}.gz"):
        if path.exists():
            return path
    return None

if data_file("binary.train") and data_file("binary.test"):
    rows = np.vstack([np.loadtxt(data_file("binary.train")),
                      np.loadtxt(data_file("binary.test"))])
    X, y = rows[:, 1:], rows[:, 0]
    data_name = "HIGGS sample"
else:
    print(f"HIGGS sample not found in {DATA}: a synthetic problem instead")
    X, y = make_classification(n_samples=7500, n_features=28,
                               n_informative=8, flip_y=0.25, random_state=0)
    data_name = "synthetic"
X_train, y_train, X_test, y_test = X[:5000], y[:5000], X[5000:], y[5000:]
print(f"{data_name}: {X_train.shape[0]} training rows, {X_test.shape[0]} "
      f"test rows, {X.shape[1]} features")

# %%
# The same boosting settings for every model; only the split finding
# changes.
params = dict(n_estimators=60, max_depth=6, learning_rate=0.1)


def test_auc(**split_finding):
    model = BoostClassifier(**params, **split_finding).fit(X_train, y_train)
    return roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])


exact_auc = test_auc(tree_method="exact")
print(f"exact greedy: test AUC {exact_auc:.4f}")

candidates = [2, 4, 8, 16, 64, 256]
auc = {proposal: [] for proposal in ("global", "local")}
for max_bin in candidates:
    for proposal in auc:
        auc[proposal].append(test_auc(tree_method="approx", max_bin=max_bin,
                                      approx_proposal=proposal))
    print(f"max_bin {max_bin:>3}: global {auc['global'][-1]:.4f}, "
          f"local {auc['local'][-1]:.4f}")

# %%
# Test AUC against the number of candidates
# -----------------------------------------
# With a handful of candidates, proposing them again in every node (local)
# keeps the model close to the exact method; one proposal per tree (global)
# needs many more candidates to get there.
fig, ax = plt.subplots(figsize=(6.4, 4.2))
ax.plot(candidates, auc["global"], "o-", label='approx, "global" proposal')
ax.plot(candidates, auc["local"], "s-", label='approx, "local" proposal')
ax.axhline(exact_auc, color="black", linestyle="--", linewidth=1,
           label="exact greedy")
ax.set_xscale("log", base=2)
ax.set_xticks(candidates, [str(c) for c in candidates])
ax.set_xlabel("candidate cuts per feature (max_bin)")
ax.set_ylabel("test AUC")
ax.set_title(f"Global vs local proposals ({data_name})")
ax.legend(loc="lower right")
ax.grid(alpha=0.3)
fig.tight_layout()
