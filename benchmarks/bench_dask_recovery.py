"""What a lost worker costs a Dask fit (``skboost/_model/recovery.py``).

On a ``distributed.LocalCluster`` of 2 worker processes with 1 thread
each (a new cluster per case), 400,000 x 28 rows in 4 partitions, 30
rounds of depth 8 (``bench_dask.py``'s sizes), every case is fitted once
to warm up and then twice on the same partitions: uninterrupted,
and with one of the two workers killed (SIGKILL, by a training callback on
the client) right after round ``--kill-at`` of ``--n-rounds``. Both fits
carry a callback, so both grow one round per client call. The killed fit
must give the uninterrupted model bit for bit (checked: every tree array).

Measured per case, from the recovery's own record (``_dask_recoveries``)
and the two fit times:

* ``lost_s``: from the last completed round to the loss noticed (the
  killed worker's share of the round in flight, and the detection);
* ``setup_s``: re-forming the shards (the lost partitions recomputed by
  Dask, new shards loaded, prepared and binned, margins recomputed from
  the trees so far, links opened);
* ``round_s``: the mean round of the uninterrupted fit: the time of the
  one round grown again;
* ``recovery_s = lost_s + setup_s``, against the bound of the issue
  (rounds redone plus 2 s: ``round_s + 2``);
* ``fit_s`` and ``killed_fit_s``: whole fits; the difference also holds
  the rounds after the recovery, which run on the workers left (the
  killed worker's nanny starts a new one, which gets shards only if
  Dask recomputed partitions on it).

Cases: hist and approx regression, LambdaMART ranking (hist). Run it
alone (``flock -x /work/heavy.lock python
benchmarks/bench_dask_recovery.py``); ``--json PATH`` writes the figures
(the Dask page's recovery table reads
``benchmarks/results/recovery/dask_recovery.json``).
"""

import argparse
import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import environment, write_records  # noqa: E402


def _parse():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=400_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-rounds", type=int, default=30)
    parser.add_argument("--kill-at", type=int, default=10)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--json", help="write the figures to this file")
    return parser.parse_args()


class _Watch:
    """A callback timing the rounds; with ``victim``, kills that worker's
    process after round ``kill_at``."""

    def __init__(self, client=None, victim=None, kill_at=None):
        self.client, self.victim, self.kill_at = client, victim, kill_at
        self.times = []

    def after_iteration(self, booster, iteration, evals_log):
        self.times.append(time.perf_counter())
        if self.victim is not None and iteration + 1 == self.kill_at:
            pid = self.client.run(os.getpid, workers=[self.victim])
            os.kill(pid[self.victim], signal.SIGKILL)
        return False


def _data(args):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n_rows, args.n_features)).astype(np.float32)
    score = X[:, :4] @ np.array([1.0, -0.7, 0.5, 0.3]) + rng.normal(
        scale=0.5, size=args.n_rows)
    relevance = np.digitize(score, np.quantile(score, [0.5, 0.8, 0.95]))
    qid = np.arange(args.n_rows) // 50     # queries of 50 rows, in order
    return X, score, relevance, qid


def _same_trees(a, b):
    return len(a.trees) == len(b.trees) and all(
        np.array_equal(getattr(ta, name), getattr(tb, name), equal_nan=True)
        for ta, tb in zip(a.trees, b.trees)
        for name in ("feature", "threshold", "left_child", "right_child",
                     "default_left", "value"))


def _case(client, name, make, fit):
    """Uninterrupted and killed fits of one case: its record."""
    fit(make([_Watch()]))   # warm-up: both timed fits start alike
    watch = _Watch()
    start = time.perf_counter()
    reference = fit(make([watch]))
    fit_s = time.perf_counter() - start
    rounds = np.diff([start] + watch.times)
    victim = sorted(client.nthreads())[1]
    killer = _Watch(client, victim, ARGS.kill_at)
    start = time.perf_counter()
    killed = fit(make([killer]))
    killed_fit_s = time.perf_counter() - start
    (record,) = killed._dask_recoveries
    round_s = float(np.mean(rounds[1:]))   # the first holds the set-up
    recovery_s = record.lost_seconds + record.setup_seconds
    row = {"case": name, "fit_s": round(fit_s, 3),
           "killed_fit_s": round(killed_fit_s, 3),
           "lost_s": round(record.lost_seconds, 3),
           "setup_s": round(record.setup_seconds, 3),
           "round_s": round(round_s, 3),
           "recovery_s": round(recovery_s, 3),
           "bound_s": round(round_s + 2.0, 3),
           "within_bound": bool(recovery_s <= round_s + 2.0),
           "resumed_at": record.resumed_at,
           "identical": _same_trees(killed.booster_, reference.booster_),
           "shards_after": len(killed._dask_stats)}
    print("  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    return row


def main():
    global ARGS
    ARGS = args = _parse()
    import dask.array as da
    import distributed

    from skboost.dask import DaskBoostRanker, DaskBoostRegressor

    print("  ".join(f"{k} {v}" for k, v in environment().items()))
    X, y, relevance, qid = _data(args)
    chunk = -(-args.n_rows // args.partitions)
    chunk += -chunk % 50   # whole queries in every partition
    dX = da.from_array(X, chunks=(chunk, X.shape[1]))
    dy, dr, dq = (da.from_array(a, chunks=chunk) for a in (y, relevance,
                                                           qid))
    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, n_jobs=1, random_state=0)
    cases = [(f"regression {method}",
              lambda cbs, m=method: DaskBoostRegressor(
                  **params, tree_method=m, callbacks=cbs),
              lambda model: model.fit(dX, dy))
             for method in ("hist", "approx")]
    cases.append(("ranking hist (rank:ndcg)",
                  lambda cbs: DaskBoostRanker(**params, objective="rank:ndcg",
                                              callbacks=cbs),
                  lambda model: model.fit(dX, dr, qid=dq)))
    records = []
    for name, make, fit in cases:   # a new cluster for every case
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True,
                                           dashboard_address=None)
        with distributed.Client(cluster) as client:
            records.append(_case(client, name, make, fit))
        cluster.close()
    if args.json:
        write_records(args.json, args, records)


if __name__ == "__main__":
    main()
