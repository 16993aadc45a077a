"""
Distributed training on Dask
============================

Train a classifier on a Dask cluster with
:class:`skboost.dask.DaskBoostClassifier`: the data stays in its
partitions on the workers, each worker bins and trains on its own rows,
and only histograms and splits travel. Here the cluster is a
``LocalCluster`` of two worker processes on this machine; on a real
cluster only the ``Client`` line changes.

The model does not depend on the number of workers, and where no feature
has more than ``max_bin`` distinct values it is the very model single-node
training gives on the concatenated data: the script checks both, and
then that a fit which loses a worker half-way still gives it.
(Needs ``pip install skboost[dask]``.)
"""

import logging
import os
import signal

import numpy as np
import dask.array as da
from distributed import Client, LocalCluster

from skboost import BoostClassifier
from skboost.dask import DaskBoostClassifier


def main():
    rng = np.random.default_rng(0)
    n_rows, n_features = 20_000, 8
    # integer-valued features (at most 100 distinct values each)
    X = rng.integers(0, 100, size=(n_rows, n_features)).astype(np.float32)
    logit = (X[:, 0] - 50) / 15 - (X[:, 1] - 50) / 25 + rng.normal(size=n_rows)
    y = (logit > 0).astype(int)

    # %%
    # Start a cluster and put the data on it as dask arrays (4 partitions).
    cluster = LocalCluster(n_workers=2, threads_per_worker=1,
                           dashboard_address=None)
    client = Client(cluster)
    dX = da.from_array(X, chunks=(5_000, n_features)).persist()
    dy = da.from_array(y, chunks=5_000).persist()

    # %%
    # Fit on the cluster; predictions are dask arrays, computed where the
    # partitions live.
    params = dict(n_estimators=50, max_depth=4, learning_rate=0.2,
                  random_state=0)
    model = DaskBoostClassifier(**params).fit(dX, dy)
    proba = model.predict_proba(dX)
    print("predict_proba:", type(proba).__name__, proba.shape)
    accuracy = float((model.predict(dX) == dy).mean().compute())
    print(f"training accuracy: {accuracy:.3f}")

    # %%
    # The same model as single-node training on all the rows, bit for bit.
    local = BoostClassifier(**params).fit(X, y)
    same = np.array_equal(proba.compute(), local.predict_proba(X))
    print("identical to BoostClassifier:", same)

    # %%
    # The fitted model converts to the single-node estimator (to predict
    # on in-memory data, export, explain) and saves in its format.
    single = model.to_local()
    print("first rows:", single.predict_proba(X[:3])[:, 1].round(3))

    # %%
    # A worker lost during the fit: here a callback kills one worker's
    # process after round 20. The fit re-forms its shards on the worker
    # left (Dask recomputes the lost partitions), restores round 20 and
    # goes on (``max_recoveries`` bounds how often); the recovery is
    # logged with its cost, and the model is the uninterrupted one.
    logging.basicConfig(format="%(name)s: %(message)s")

    class KillAWorker:
        def after_iteration(self, booster, iteration, evals_log):
            if iteration + 1 == 20:
                victim = sorted(client.nthreads())[1]
                pid = client.run(os.getpid, workers=[victim])[victim]
                os.kill(pid, signal.SIGKILL)
            return False

    survivor = DaskBoostClassifier(**params, callbacks=[KillAWorker()])
    survivor.fit(dX, dy)
    print("identical after a lost worker:",
          np.array_equal(survivor.to_local().predict_proba(X),
                         local.predict_proba(X)))

    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
