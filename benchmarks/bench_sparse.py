"""Sparse input side by side: skboost (exact, hist, approx), XGBoost hist,
LightGBM and hessboost hist on a scipy.sparse CSR matrix.

The case of issue 4: 200,000 x 5,000 CSR with 0.5% of the entries stored
(standard normal values), a logistic target drawn from 10% of the columns,
50,000 test rows; 100 rounds, depth 8, learning rate 0.1, 256 bins,
lambda 1, 2 threads. Absent entries are missing for every library.
scikit-learn's HistGradientBoosting does not take sparse input.

``--dask`` measures distributed training of the same kind of data kept
sparse instead: ``skboost.dask.DaskBoostClassifier`` on a
``distributed.LocalCluster`` of 2 worker processes x 1 thread (CSR
chunks, persisted on the workers before the clock starts) against
single-node ``BoostClassifier`` (and XGBoost, the docs' reference) with
2 threads in this process, all ``tree_method="hist"``: fit time, the peak
memory a fit adds (this process for single node, each worker for Dask:
resident memory sampled
every 10 ms, minus its level when the fit starts), the bytes of each
worker's binned rows against what dense bin codes of its rows would take,
and whether the predictions are the single-node model's. The data of
this mode is drawn faster (each row's columns drawn with repetition, a
repeated column stored once): ``sp.random`` takes a minute on 10**9
cells. Run with ``--json benchmarks/results/sparse_dask.json``.
"""

import os
import threading
import time

import sys

import numpy as np

from _common import (Contender, base_parser, fit_ratio_table,
                     run_classification_case)


def make_sparse_data(n_rows, n_features, density=0.005, n_test=50_000,
                     informative=0.1, random_state=0):
    """CSR float32 data and a logistic target from the first
    ``informative`` fraction of the columns (absent entries count 0)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(random_state)
    n_total = n_rows + n_test
    X = sp.random(n_total, n_features, density=density, format="csr",
                  dtype=np.float32, random_state=rng,
                  data_rvs=rng.standard_normal)
    n_informative = max(1, int(informative * n_features))
    beta = rng.normal(size=n_informative)
    logit = X[:, :n_informative] @ beta
    logit = 3.0 * logit / logit.std()
    y = (rng.random(n_total) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return {"X_train": X[:n_rows], "y_train": y[:n_rows],
            "X_test": X[n_rows:], "y_test": y[n_rows:]}


SKBOOST_METHODS = ["exact", "hist", "approx"]


def contenders(args):
    common = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, n_jobs=args.n_jobs, reg_lambda=1.0)
    out = [Contender("skboost", method, "skboost", "BoostClassifier",
                     dict(common, tree_method=method, max_bin=256))
           for method in args.methods]
    out.append(Contender("xgboost", "hist", "xgboost", "XGBClassifier",
                         dict(common, tree_method="hist", max_bin=256)))
    out.append(Contender(
        "lightgbm", "hist", "lightgbm", "LGBMClassifier",
        dict(common, num_leaves=2 ** args.max_depth - 1, max_bin=256,
             min_child_weight=1.0, min_child_samples=0, verbose=-1)))
    # hessboost (Rust; XGBoost's parameter names; the bench extra) reads
    # scipy.sparse with absent entries missing
    out.append(Contender("hessboost", "hist", "hessboost.sklearn",
                         "HessboostClassifier",
                         dict(common, tree_method="hist", max_bin=256)))
    return out


def comparison_table(results):
    return fit_ratio_table(results, {
        "fit / xgb hist": ("xgboost", "hist"),
        "fit / lightgbm": ("lightgbm", "hist"),
        "fit / hessboost": ("hessboost", "hist")})


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=200_000,
                         task="classification")
    parser.set_defaults(n_features=5000)
    parser.add_argument("--density", type=float, default=0.005)
    parser.add_argument("--dask", action="store_true",
                        help="sparse training on Dask (2 workers) against "
                        "single node: time, peak memory, binned bytes")
    parser.add_argument("--methods", nargs="+", metavar="METHOD",
                        choices=SKBOOST_METHODS, default=SKBOOST_METHODS,
                        help="skboost's tree methods to run (default: all; "
                             "e.g. --methods hist with --only skboost "
                             "lightgbm for a short run of the hist case)")
    return parser.parse_args(argv)


def make_fast_sparse_data(n_rows, n_features, density=0.005,
                          n_test=50_000, informative=0.1, random_state=0):
    """``make_sparse_data``'s kind of data, drawn in seconds: each row's
    ``density * n_features`` columns drawn with repetition (a repeated
    column stored once), standard normal values."""
    import scipy.sparse as sp

    rng = np.random.default_rng(random_state)
    n_total = n_rows + n_test
    per_row = max(1, int(round(density * n_features)))
    rows = np.repeat(np.arange(n_total), per_row)
    columns = rng.integers(0, n_features, size=rows.shape[0])
    X = sp.csr_matrix((rng.standard_normal(rows.shape[0]).astype(
        np.float32), (rows, columns)), shape=(n_total, n_features))
    X.sum_duplicates()
    n_informative = max(1, int(informative * n_features))
    logit = X[:, :n_informative] @ rng.normal(size=n_informative)
    logit = 3.0 * logit / logit.std()
    y = (rng.random(n_total) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return {"X_train": X[:n_rows], "y_train": y[:n_rows],
            "X_test": X[n_rows:], "y_test": y[n_rows:]}


class PeakMemory:
    """The highest resident memory of some processes while a block runs,
    sampled every 10 ms, minus each one's at the start (MB, per pid)."""

    def __init__(self, pids):
        import psutil

        self.processes = [psutil.Process(pid) for pid in pids]

    def __enter__(self):
        self.start = [p.memory_info().rss for p in self.processes]
        self.peak = list(self.start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.01):
            for k, p in enumerate(self.processes):
                self.peak[k] = max(self.peak[k], p.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for k, p in enumerate(self.processes):
            self.peak[k] = max(self.peak[k], p.memory_info().rss)

    def added_mb(self):
        return [(peak - start) / 1e6 for peak, start in zip(self.peak,
                                                           self.start)]


def _auc(y, p):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p))


def main_dask(args):
    """Sparse training on Dask (2 workers) against single node."""
    import dask.array as da
    from distributed import Client, LocalCluster

    from _common import environment, write_records
    from skboost import BoostClassifier
    from skboost.dask import DaskBoostClassifier

    data = make_fast_sparse_data(args.n_rows, args.n_features, args.density)
    X, y = data["X_train"], data["y_train"]
    X_test, y_test = data["X_test"], data["y_test"]
    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, max_bin=256, reg_lambda=1.0,
                  tree_method="hist")
    print("  ".join(f"{k} {v}" for k, v in environment(None).items()))
    print(f"{args.n_rows} x {args.n_features} CSR, {X.nnz} stored "
          f"({X.nnz / (X.shape[0] * X.shape[1]):.3%}), {args.n_rounds} "
          f"rounds, depth {args.max_depth}, hist; single node 2 threads, "
          "Dask LocalCluster 2 workers x 1 thread", flush=True)
    records = []
    with PeakMemory([os.getpid()]) as memory:
        start = time.perf_counter()
        single = BoostClassifier(**params, n_jobs=2).fit(X, y)
        single_s = time.perf_counter() - start
    single_p = single.predict_proba(X_test)[:, 1]
    records.append(dict(library="skboost", method="single node, 2 threads",
                        task="classification", fit_s=single_s,
                        peak_mb=memory.added_mb()[0],
                        metric=_auc(y_test, single_p), threads=2))
    import xgboost   # the docs' reference: single node, 2 threads

    with PeakMemory([os.getpid()]) as memory:
        start = time.perf_counter()
        xgb = xgboost.XGBClassifier(**params, n_jobs=2).fit(X, y)
        xgb_s = time.perf_counter() - start
    records.append(dict(library="xgboost", method="single node, 2 threads",
                        task="classification", fit_s=xgb_s,
                        peak_mb=memory.added_mb()[0], metric=_auc(
                            y_test, xgb.predict_proba(X_test)[:, 1]),
                        threads=2))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1,
                           processes=True, dashboard_address=None)
    client = Client(cluster)
    workers = sorted(client.nthreads())
    chunk = -(-args.n_rows // 4)
    dX = da.from_array(X, chunks=(chunk, X.shape[1]), asarray=False)
    dy = da.from_array(y, chunks=chunk)
    dX, dy = client.persist([dX, dy])
    DaskBoostClassifier(n_estimators=2, max_depth=2).fit(dX, dy)  # warm up
    pids = client.run(os.getpid)
    with PeakMemory([pids[w] for w in workers]) as memory:
        start = time.perf_counter()
        model = DaskBoostClassifier(**params).fit(dX, dy)
        dask_s = time.perf_counter() - start
    local = model.to_local()
    dask_p = local.predict_proba(X_test)[:, 1]
    stats = model._dask_stats
    records.append(dict(
        library="skboost", method="dask, 2 workers", task="classification",
        fit_s=dask_s, ratio=dask_s / single_s,
        peak_mb=max(memory.added_mb()),
        peak_mb_per_worker=memory.added_mb(),
        metric=_auc(y_test, dask_p),
        binned_mb_per_worker=[s["binned_bytes"] / 1e6 for s in stats],
        dense_code_mb_per_worker=[s["dense_code_bytes"] / 1e6
                                  for s in stats],
        histogram_mb_sent_per_worker=[s["sent_bytes"] / 1e6 for s in stats],
        equal_to_single_node=bool(np.array_equal(dask_p, single_p))))
    client.close()
    cluster.close()
    for r in records:
        print(f"{r['method']:<24} {r['fit_s']:7.2f} s  peak +"
              f"{r['peak_mb']:7.0f} MB  AUC {r['metric']:.4f}")
    dask = records[-1]
    print("per worker: peak +" + ", ".join(
        f"{m:.0f}" for m in dask["peak_mb_per_worker"]) + " MB; binned rows "
          + ", ".join(f"{m:.1f}" for m in dask["binned_mb_per_worker"])
          + " MB (dense codes would be " + ", ".join(
              f"{m:.0f}" for m in dask["dense_code_mb_per_worker"])
          + " MB); histograms sent " + ", ".join(
              f"{m:.0f}" for m in dask["histogram_mb_sent_per_worker"])
          + f" MB; equal to single node: {dask['equal_to_single_node']}")
    if args.json:
        write_records(args.json, args, records)


def main(argv=None):
    args = parse_args(argv)
    if args.dask:
        return main_dask(args)
    setup = (f"{args.n_rows} train rows x {args.n_features} features, "
             f"density {args.density}, {args.n_rounds} rounds, max_depth "
             f"{args.max_depth}, n_jobs {args.n_jobs}, repeat {args.repeat}")
    data = make_sparse_data(args.n_rows, args.n_features, args.density)
    run_classification_case(args, setup, data, contenders(args),
                            comparison_table)


if __name__ == "__main__":
    sys.exit(main())
