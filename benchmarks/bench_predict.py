"""Batch prediction speed: skboost's ``predict_proba`` side by side with
XGBoost's and LightGBM's on wide and narrow data.

    python benchmarks/bench_predict.py                    # both cases
    python benchmarks/bench_predict.py --case wide --repeat 3
    python benchmarks/bench_predict.py --baseline ../before --only skboost xgboost
    python benchmarks/bench_predict.py --row-fraction 0.05 --predict-calls 2   # smoke run

Cases (binary classification, ``_common.make_data``; 50 trees of depth 8,
hist, 256 bins, learning rate 0.1, 2 threads):

- ``wide``: 500 features, 20,000 training rows, ``predict_proba`` on
  240,000 rows;
- ``narrow``: 28 features, 100,000 training rows, ``predict_proba`` on
  500,000 rows.

Each library runs in its own fresh process (see ``_common``): it fits on
the training rows, predicts a few rows once (warm-up), then times
``--predict-calls`` calls of ``predict_proba`` on the prediction rows and
keeps the fastest. Repeats (``--repeat``) run every library again in new
processes, interleaved; the table gives the best of all calls. Ratios are
to XGBoost; "max |dpred|" compares each library's probabilities with the
first skboost contender's (0 between two skboost builds: the same trees,
the same sums).
"""

import sys

import numpy as np

from _common import (BASELINE, Contender, Timer, base_parser, environment,
                     format_table, load_data, make_data, save_data, select,
                     write_records)

CASES = {"wide": dict(n_features=500, n_train=20_000, n_predict=240_000),
         "narrow": dict(n_features=28, n_train=100_000, n_predict=500_000)}


def contenders(args):
    common = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, n_jobs=args.n_jobs)
    hist = dict(common, tree_method="hist", max_bin=256, reg_lambda=1.0)
    return [
        Contender("skboost", "hist", "skboost", "BoostClassifier", hist),
        Contender("xgboost", "hist", "xgboost", "XGBClassifier", hist),
        Contender("lightgbm", "hist", "lightgbm", "LGBMClassifier",
                  dict(common, num_leaves=2 ** args.max_depth - 1,
                       max_bin=256, reg_lambda=1.0, min_child_weight=1.0,
                       min_child_samples=0, verbose=-1)),
    ]


def _predict_in_child(contender, data_dir, calls):
    """Body of the spawned child: fit, warm up, time ``calls`` predictions."""
    data = load_data(data_dir)
    estimator = contender.build()
    estimator.fit(data["X_train"], data["y_train"])
    X = data["X_test"]
    estimator.predict_proba(X[:1000])
    times = []
    for _ in range(calls):
        with Timer() as timer:
            proba = estimator.predict_proba(X)
        times.append(timer.wall)
    return {"times": times, "others": timer.other_cores,
            "prediction": np.asarray(proba[:, 1], dtype=np.float64)}


def run_case(name, args, log=print):
    import multiprocessing
    import tempfile

    case = {k: v if k == "n_features" else max(1000, int(v * args.row_fraction))
            for k, v in CASES[name].items()}
    data = make_data("classification", case["n_train"], case["n_features"],
                     n_test=case["n_predict"])
    chosen = select(contenders(args), args)
    runs = [[] for _ in chosen]
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="skboost-bench-") as data_dir:
        save_data(data, data_dir)
        for i in range(args.repeat):
            for c, c_runs in zip(chosen, runs):
                with ctx.Pool(1) as pool:
                    r = pool.apply(_predict_in_child,
                                   (c, data_dir, args.predict_calls))
                log(f"  {name} {c.library} run {i + 1}/{args.repeat}: "
                    + " ".join(f"{t:.3f}" for t in r["times"])
                    + f" s (others {r['others']:.2f} cores)", flush=True)
                c_runs.append(r)
    return [_result(name, case, c, rs) for c, rs in zip(chosen, runs)]


def _result(name, case, contender, runs):
    times = [t for r in runs for t in r["times"]]
    return {"case": name, "library": contender.library,
            "n_features": case["n_features"], "n_rows": case["n_predict"],
            "seconds": min(times), "seconds_all": times,
            "prediction": runs[0]["prediction"]}


def table(results):
    header = ["case", "library", "rows", "features", "predict s",
              "/ xgboost", "/ lightgbm", "max |dpred|"]
    rows = []
    for r in results:
        same = [s for s in results if s["case"] == r["case"]]
        by = {s["library"]: s for s in same}
        first = next((s for s in same if s["library"] == "skboost"), None)
        xgb, lgb = by.get("xgboost"), by.get("lightgbm")
        r["ratio_xgboost"] = r["seconds"] / xgb["seconds"] if xgb else None
        r["ratio_lightgbm"] = r["seconds"] / lgb["seconds"] if lgb else None
        rows.append([
            r["case"], r["library"], r["n_rows"], r["n_features"],
            r["seconds"], r["ratio_xgboost"], r["ratio_lightgbm"],
            float(np.max(np.abs(r["prediction"] - first["prediction"])))
            if first else None])
    return format_table(header, rows)


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=0,
                         task="classification")
    parser.set_defaults(n_rounds=50)
    parser.add_argument("--case", nargs="*", choices=sorted(CASES),
                        default=["wide", "narrow"])
    parser.add_argument("--predict-calls", type=int, default=5,
                        help="timed predict_proba calls per process")
    parser.add_argument("--row-fraction", type=float, default=1.0,
                        help="scale the training and prediction rows of "
                             "every case (e.g. 0.05 for a smoke run)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    print("  ".join(f"{k} {v}" for k, v in environment(args.baseline).items()))
    print(f"{args.n_rounds} trees of depth {args.max_depth}, n_jobs "
          f"{args.n_jobs}, repeat {args.repeat}", flush=True)
    results = []
    for name in args.case:
        results += run_case(name, args)
    print("\n" + table(results))
    base = {r["case"]: r for r in results if r["library"] == BASELINE}
    for r in results:
        if r["library"] == "skboost" and r["case"] in base:
            print(f"skboost {r['case']}: predict "
                  f"{r['seconds'] / base[r['case']]['seconds']:.2f}x baseline")
    if args.json:
        write_json_results(args, results)
    return 0


def write_json_results(args, results):
    """The results in the format of benchmarks/results/ (``write_records``;
    the docs draw a table and a chart from it): the case is the record's
    method, its best time ``predict_s``; no fit is timed."""
    renamed = {"case": "method", "seconds": "predict_s",
               "seconds_all": "predict_s_all"}
    records = [dict({renamed.get(k, k): v for k, v in r.items()
                     if k != "prediction"}, task="classification")
               for r in results]
    write_records(args.json, args, records)


if __name__ == "__main__":
    sys.exit(main())
