"""
Training on data larger than memory
===================================

:class:`skboost.ExternalData` trains the usual estimators on data read in
chunks: the chunks are read twice (once for the quantile sketch, once to
bin them into pages on disk) and training streams the pages, so the float
matrix is never in memory. Here the chunks are ``.npy`` files; a callable
yielding ``(X, y)`` tuples from a database or Parquet files works the same
way.

The model is the one ``fit`` would train on the concatenated chunks, bit
for bit: the sketch streams over the rows in the blocks the in-core sketch
uses.
"""

import os
import shutil
import tempfile
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score

from skboost import BoostClassifier, ExternalData

# %%
# Write the training data as four chunk files (a stand-in for data that
# does not fit in memory) and keep a test set.
X, y = make_classification(n_samples=220_000, n_features=20,
                           n_informative=10, random_state=0)
X = X.astype(np.float32)
X_test, y_test = X[200_000:], y[200_000:]
directory = tempfile.mkdtemp(prefix="skboost-example-")
x_files, y_files = [], []
for k, rows in enumerate(np.array_split(np.arange(200_000), 4)):
    x_files.append(os.path.join(directory, f"X{k}.npy"))
    y_files.append(os.path.join(directory, f"y{k}.npy"))
    np.save(x_files[-1], X[rows])
    np.save(y_files[-1], y[rows])

# %%
# Train out of core: the files are memory-mapped one at a time, the pages
# of bin codes go to ``cache_dir`` and are removed when the data is closed.
params = dict(n_estimators=50, max_depth=6, learning_rate=0.1, n_jobs=2)
with ExternalData.from_npy(x_files, y_files, cache_dir=directory) as data:
    start = time.perf_counter()
    model = BoostClassifier(**params).fit(data)
    external_seconds = time.perf_counter() - start
    proba = model.predict_proba(X_test)[:, 1]
print(f"out of core: {external_seconds:.2f} s, "
      f"test AUC {roc_auc_score(y_test, proba):.4f}")

# %%
# The same model in core, on the concatenated chunks.
start = time.perf_counter()
in_core = BoostClassifier(**params).fit(X[:200_000], y[:200_000])
print(f"in core:     {time.perf_counter() - start:.2f} s, same predictions: "
      f"{np.array_equal(in_core.predict_proba(X_test)[:, 1], proba)}")
shutil.rmtree(directory)
