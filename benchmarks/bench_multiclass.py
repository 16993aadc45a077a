"""Many classes side by side: skboost ``multi:softprob`` against XGBoost,
LightGBM and hessboost, and the cost of a class's tree against one binary tree.

    python benchmarks/bench_multiclass.py                     # 10 classes, 200,000 x 28, 30 rounds
    python benchmarks/bench_multiclass.py --repeat 3 --json benchmarks/results/multiclass.json
    python benchmarks/bench_multiclass.py --n-rows 20000 --n-rounds 5   # smoke run
    python benchmarks/bench_multiclass.py --baseline ../before --only skboost xgboost

Data: ``make_classification`` with ``--n-classes`` classes (half the
features informative, a quarter redundant, ``random_state=0``), float32;
``--n-rows`` training rows and 50,000 test rows. Every library: 30 rounds
(one tree per class and round), ``max_depth=6``, learning rate 0.3, 256
bins, L2 regularisation 1, 2 threads; LightGBM ``num_leaves=63``,
``min_child_weight=1``, ``min_child_samples=0``. The metric is the test
log loss.

The "binary" rows fit the same features on a two-class target (class 0
against the rest) for ``n_classes x rounds`` rounds: as many trees, of the
same depth, on the same rows as the multiclass model. Their fit time is
what the trees cost without anything the classes of a round could share;
``multiclass / binary`` above 1 is the overhead of many classes (softmax
gradients, K margins), below 1 is what the classes already share.
"""

import argparse
import os
import sys

import numpy as np
from _common import (Contender, PeakRSS, Timer, environment, format_table,
                     run_contenders, select, write_records)


# the libraries skboost is compared with
PEERS = ("xgboost", "lightgbm", "hessboost")


def make_data(n_rows, n_features, n_classes, n_test=50_000):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n_rows + n_test, n_features=n_features,
        n_informative=n_features // 2, n_redundant=n_features // 4,
        n_classes=n_classes, random_state=0)
    X = np.ascontiguousarray(X, dtype=np.float32)
    return {"X_train": X[:n_rows], "y_train": y[:n_rows],
            "X_test": X[n_rows:], "y_test": y[n_rows:]}


def _load(data_dir):
    return {name[:-4]: np.load(os.path.join(data_dir, name))
            for name in os.listdir(data_dir) if name.endswith(".npy")}


def run_multiclass_child(contender, data_dir, task):
    """Body of the spawned child (``_common.run_once``): warm up, then time
    ``fit`` and ``predict_proba`` and score the test log loss. ``task``
    "binary" fits class 0 against the rest."""
    from sklearn.metrics import log_loss

    data = _load(data_dir)
    y, y_test = data["y_train"], data["y_test"]
    if contender.method.startswith("binary"):
        y, y_test = (y == 0).astype(np.int64), (y_test == 0).astype(np.int64)
    warm = contender.build().set_params(n_estimators=2)
    warm.fit(data["X_train"][:2000], y[:2000])
    warm.predict_proba(data["X_test"][:2000])
    estimator = contender.build()
    with PeakRSS() as fit_mem, Timer() as fit_time:
        estimator.fit(data["X_train"], y)
    with Timer() as predict_time:
        proba = np.asarray(estimator.predict_proba(data["X_test"]),
                           dtype=np.float64)
    return {
        "fit_s": fit_time.wall, "fit_cores": fit_time.cores,
        "fit_steal_s": fit_time.steal,
        "fit_other_cores": fit_time.other_cores,
        "predict_s": predict_time.wall, "fit_peak_mb": fit_mem.growth_mb,
        "predict_peak_mb": 0.0,
        "metric": log_loss(y_test, proba, labels=np.arange(proba.shape[1])),
        "prediction": proba[:, :1],
    }


def contenders(args):
    common = dict(max_depth=args.max_depth, learning_rate=0.3,
                  reg_lambda=1.0, n_jobs=args.n_jobs)
    multi = dict(common, n_estimators=args.n_rounds)
    binary = dict(common, n_estimators=args.n_rounds * args.n_classes)
    label = f"binary x{args.n_classes} rounds"
    lightgbm = dict(num_leaves=2 ** args.max_depth - 1, max_bin=255,
                    min_child_weight=1.0, min_child_samples=0, verbose=-1)
    out = []
    for method, params in (("multiclass", multi), (label, binary)):
        out += [
            Contender("skboost", method, "skboost", "BoostClassifier",
                      dict(params, tree_method="hist", max_bin=256)),
            Contender("xgboost", method, "xgboost", "XGBClassifier",
                      dict(params, tree_method="hist", max_bin=256)),
            Contender("lightgbm", method, "lightgbm", "LGBMClassifier",
                      dict(params, **lightgbm)),
            Contender("hessboost", method, "hessboost.sklearn",
                      "HessboostClassifier",
                      dict(params, tree_method="hist", max_bin=256)),
        ]
    return out


def multiclass_table(results):
    """Fit time, log loss, the ratio to the fastest peer of the same
    method, and each library's multiclass / binary fit time."""
    fastest = {}
    for r in results:
        if r.library in PEERS:
            best = fastest.get(r.method)
            fastest[r.method] = r if best is None or r.fit_s < best.fit_s \
                else best
    binary = {r.library: r for r in results if r.method.startswith("binary")}
    header = ["library", "case", "fit s", "fit CPU", "others", "predict s",
              "peak MB", "log loss", "/ fastest peer", "peer",
              "multiclass / binary"]
    rows = []
    for r in results:
        peer = fastest.get(r.method)
        b = binary.get(r.library)
        rows.append([r.library, r.method, r.fit_s, r.fit_cores,
                     r.fit_other_cores, r.predict_s, r.peak_mb,
                     f"{r.metric:.5f}", r.fit_s / peer.fit_s if peer else None,
                     peer.library if peer else "-",
                     r.fit_s / b.fit_s if b and r.method == "multiclass"
                     else None])
    return format_table(header, rows)


def json_records(results):
    """The records of the result file (``--json``), the binary fits under
    a task of their own ("binary"): the docs draw a table and a chart per
    task, and a binary fit is no reference for another library's
    multiclass fit (multiclass / binary is each library's own ratio)."""
    records = []
    for r in results:
        record = r.to_json()
        if r.method.startswith("binary"):
            record["task"] = "binary"
        records.append(record)
    return records


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-classes", type=int, default=10)
    parser.add_argument("--n-rounds", type=int, default=30)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-binary", action="store_true",
                        help="leave out the binary reference fits")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--only", nargs="*", metavar="LIBRARY")
    parser.add_argument("--baseline", metavar="PATH")
    args = parser.parse_args(argv)
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    return args


def main(argv=None):
    args = parse_args(argv)
    data = make_data(args.n_rows, args.n_features, args.n_classes)
    print("  ".join(f"{k} {v}" for k, v in environment(args.baseline).items()))
    print(f"{args.n_rows} train rows x {args.n_features} features, "
          f"{args.n_classes} classes, {args.n_rounds} rounds, max_depth "
          f"{args.max_depth}, n_jobs {args.n_jobs}, repeat {args.repeat}",
          flush=True)
    chosen = [c for c in select(contenders(args), args)
              if not (args.skip_binary and c.method.startswith("binary"))]
    results = run_contenders(chosen, data, "multiclass", args.repeat,
                             child=run_multiclass_child,
                             metric_name="log loss")
    print("\nmulticlass (log loss on 50,000 test rows)\n"
          + multiclass_table(results))
    base = {r.method: r for r in results if r.library == "skboost-base"}
    for r in results:
        if r.library == "skboost" and r.method in base:
            print(f"skboost {r.method}: fit "
                  f"{r.fit_s / base[r.method].fit_s:.2f}x baseline")
    if args.json:
        write_records(args.json, args, json_records(results),
                      metric_name="log loss")
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
