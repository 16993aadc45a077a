"""Serving: the time of one prediction call for 1 to 10,000 rows, and of a
batch of 1,000,000 rows, skboost side by side with the other libraries.

    python benchmarks/bench_latency.py --json benchmarks/results/serving/serving.json
    python benchmarks/bench_latency.py --baseline /work/main    # before/after
    python benchmarks/bench_latency.py --case latency --calls 200   # smoke run

Cases (binary classification, ``_common.make_data``, 28 features, hist,
256 bins, learning rate 0.1, ``n_jobs`` 2):

- ``latency``: 200 trees of depth 6 fitted on 20,000 rows; every contender
  predicts the first 1, 10, 100 and 10,000 rows of the test set (float32,
  C order) ``--calls`` times (a tenth of them for 10,000 rows) after a
  warm-up; the result is the median call. Contenders: skboost's estimator
  (``predict_proba``) and booster (``inplace_predict``), XGBoost's
  ``predict_proba`` and ``Booster.inplace_predict``, LightGBM's
  ``predict_proba``, hessboost's ``predict_proba``, onnxruntime on skboost's
  ONNX export (``skboost.onnx.to_onnx``, ``zipmap`` off, ``n_jobs`` intra-op
  threads) and the Treelite model of skboost's export compiled to a shared
  library by TL2cgen (where TL2cgen and a C compiler are there; its
  predictor on one thread, as its pool of two costs about 8 ms a call).
- ``batch``: 100 trees of depth 8 fitted on 200,000 rows, ``predict_proba``
  on 1,000,000 rows (best of ``--batch-calls``), with XGBoost's
  ``inplace_predict`` too.

Every library runs in its own fresh process (multiprocessing "spawn"), one
after the other on the same data. With ``--baseline PATH`` the skboost
contenders get a twin importing skboost from PATH (library
``skboost-base``; a build without ``inplace_predict`` times
``Booster.predict``); the batch case then compares the two builds'
probabilities bit for bit ("identical").
"""

import multiprocessing
import statistics
import sys
import tempfile
import time

import numpy as np

from _common import (BASELINE, _import_first_from, base_parser, environment,
                     format_table, load_data, make_data, save_data,
                     write_records)

ROWS = (1, 10, 100, 10_000)
LIBRARIES = ("skboost", "xgboost", "lightgbm", "hessboost", "onnxruntime",
             "treelite")


def _params(args, case):
    trees, depth = ((args.latency_trees, 6) if case == "latency"
                    else (args.n_rounds, args.max_depth))
    return dict(n_estimators=trees, max_depth=depth, learning_rate=0.1,
                n_jobs=args.n_jobs)


def _fit_skboost(params, X, y):
    from skboost import BoostClassifier

    return BoostClassifier(tree_method="hist", max_bin=256, **params).fit(X, y)


def _skboost_calls(params, X, y):
    model = _fit_skboost(params, X, y)
    booster = model.get_booster()
    if not hasattr(booster, "inplace_predict"):   # a build before it
        return {"predict_proba": model.predict_proba,
                "Booster.predict": booster.predict}
    return {"predict_proba": model.predict_proba,
            "inplace_predict": booster.inplace_predict}


def _xgboost_calls(params, X, y):
    import xgboost

    model = xgboost.XGBClassifier(tree_method="hist", max_bin=256,
                                  **params).fit(X, y)
    return {"predict_proba": model.predict_proba,
            "inplace_predict": model.get_booster().inplace_predict}


def _lightgbm_calls(params, X, y):
    import lightgbm

    model = lightgbm.LGBMClassifier(
        num_leaves=2 ** params["max_depth"] - 1, max_bin=256, reg_lambda=1.0,
        min_child_weight=1.0, min_child_samples=0, verbose=-1,
        **params).fit(X, y)
    return {"predict_proba": model.predict_proba}


def _hessboost_calls(params, X, y):
    from hessboost.sklearn import HessboostClassifier

    model = HessboostClassifier(tree_method="hist", max_bin=256,
                                **params).fit(X, y)
    return {"predict_proba": model.predict_proba}


def _onnxruntime_calls(params, X, y):
    import onnxruntime as ort

    from skboost.onnx import to_onnx

    onnx_model = to_onnx(_fit_skboost(params, X, y), X[:1],
                         options={"zipmap": False})
    options = ort.SessionOptions()
    options.intra_op_num_threads = params["n_jobs"]
    session = ort.InferenceSession(onnx_model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    name, proba = session.get_inputs()[0].name, session.get_outputs()[1].name
    return {"onnx export":
            lambda rows: session.run([proba], {name: rows})[0]}


def _treelite_calls(params, X, y):
    import os

    import tl2cgen

    from skboost.treelite import to_treelite

    model = to_treelite(_fit_skboost(params, X, y))
    directory = tempfile.mkdtemp(prefix="skboost-tl2cgen-")
    library = os.path.join(directory, "model.so")
    tl2cgen.export_lib(model, toolchain="gcc", libpath=library,
                       params={"parallel_comp": params["n_jobs"]})
    # one thread: the library's thread pool costs milliseconds per call
    predictor = tl2cgen.Predictor(library, nthread=1)
    return {"tl2cgen compiled export":
            lambda rows: predictor.predict(tl2cgen.DMatrix(rows))}


CALLS = {"skboost": _skboost_calls, BASELINE: _skboost_calls,
         "xgboost": _xgboost_calls, "lightgbm": _lightgbm_calls,
         "hessboost": _hessboost_calls, "onnxruntime": _onnxruntime_calls,
         "treelite": _treelite_calls}


def _median_call(function, rows, calls):
    function(rows)   # warm-up: lazy set-up of the first call
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function(rows)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _latency_child(library, sys_path, data_dir, args):
    if sys_path:
        _import_first_from(sys_path)
    data = load_data(data_dir)
    calls = CALLS[library](_params(args, "latency"), data["X_train"],
                           data["y_train"])
    records = []
    for method, function in calls.items():
        for n in ROWS:
            rows = np.ascontiguousarray(data["X_test"][:n])
            n_calls = args.calls if n <= 100 else max(5, args.calls // 10)
            records.append({"library": library, "method": method,
                            "rows": n, "seconds": _median_call(
                                function, rows, n_calls)})
    return records


def _batch_child(library, sys_path, data_dir, args):
    if sys_path:
        _import_first_from(sys_path)
    data = load_data(data_dir)
    calls = CALLS[library](_params(args, "batch"), data["X_train"],
                           data["y_train"])
    X = data["X_test"]
    records = []
    for method, function in calls.items():
        if method not in ("predict_proba", "inplace_predict",
                          "Booster.predict"):
            continue
        function(X[:1000])
        best, prediction = np.inf, None
        for _ in range(args.batch_calls):
            start = time.perf_counter()
            prediction = function(X)
            best = min(best, time.perf_counter() - start)
        prediction = np.asarray(prediction, dtype=np.float64)
        records.append({"library": library, "method": method, "seconds": best,
                        "rows": X.shape[0], "prediction": prediction.reshape(
                            X.shape[0], -1)[:, -1]})
    return records


def _run(case, args, libraries):
    n_train, n_test = ((20_000, max(ROWS)) if case == "latency"
                       else (200_000, args.batch_rows))
    data = make_data("classification", n_train, 28, n_test=n_test)
    child = _latency_child if case == "latency" else _batch_child
    ctx = multiprocessing.get_context("spawn")
    records = []
    with tempfile.TemporaryDirectory(prefix="skboost-bench-") as data_dir:
        save_data(data, data_dir)
        for library in libraries:
            sys_path = args.baseline if library == BASELINE else None
            try:
                with ctx.Pool(1) as pool:
                    found = pool.apply(child, (library, sys_path, data_dir,
                                               args))
            except Exception as error:  # noqa: BLE001 - reported, not hidden
                print(f"  {case} {library}: failed: {error!r}", flush=True)
                continue
            print(f"  {case} {library}: done", flush=True)
            records += found
    return records


def _libraries(args):
    chosen = [lib for lib in LIBRARIES if not args.only or lib in args.only]
    if args.baseline and "skboost" in chosen:
        chosen.insert(chosen.index("skboost") + 1, BASELINE)
    return chosen


def latency_table(records):
    header = ["library", "method"] + [f"{n:,} row{'s' * (n > 1)} (us)"
                                      for n in ROWS]
    keys = sorted({(r["library"], r["method"]) for r in records},
                  key=lambda k: (LIBRARIES + (BASELINE,)).index(k[0])
                  if k[0] in LIBRARIES + (BASELINE,) else 99)
    by = {(r["library"], r["method"], r["rows"]): r["seconds"]
          for r in records}
    rows = [[lib, method] + [by.get((lib, method, n), np.nan) * 1e6
                             for n in ROWS] for lib, method in keys]
    return format_table(header, rows)


def batch_table(records):
    xgb = next((r["seconds"] for r in records if r["library"] == "xgboost"
                and r["method"] == "predict_proba"), None)
    rows = [[r["library"], r["method"], r["seconds"],
             r["seconds"] / xgb if xgb else None, r.get("identical")]
            for r in records]
    return format_table(["library", "method", "seconds", "/ xgboost "
                         "predict_proba", "identical to base"], rows)


def _mark_identical(records):
    """Whether skboost's batch probabilities equal the baseline build's,
    bit for bit (the same trees, the same sums)."""
    base = {r["method"]: r["prediction"] for r in records
            if r["library"] == BASELINE}
    for r in records:
        if r["library"] == "skboost" and r["method"] in base:
            r["identical"] = bool(np.array_equal(r["prediction"],
                                                 base[r["method"]]))


def json_records(latency, batch):
    out = [{"library": r["library"], "method": r["method"],
            "task": "latency", "rows": r["rows"], "predict_s": r["seconds"]}
           for r in latency]
    out += [{"library": r["library"], "method": r["method"], "task": "batch",
             "n_rows": r["rows"], "predict_s": r["seconds"],
             **({"identical": r["identical"]} if "identical" in r else {})}
            for r in batch]
    return out


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=200_000,
                         task="classification")
    parser.add_argument("--case", nargs="*", choices=["latency", "batch"],
                        default=["latency", "batch"])
    parser.add_argument("--calls", type=int, default=2000,
                        help="timed calls per row count (a tenth for 10,000 "
                             "rows); the median is kept")
    parser.add_argument("--batch-calls", type=int, default=3)
    parser.add_argument("--batch-rows", type=int, default=1_000_000)
    parser.add_argument("--latency-trees", type=int, default=200)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    print("  ".join(f"{k} {v}" for k, v in environment(args.baseline).items()))
    libraries = _libraries(args)
    latency = _run("latency", args, libraries) if "latency" in args.case \
        else []
    batch_libs = [lib for lib in libraries
                  if lib not in ("onnxruntime", "treelite")]
    batch = _run("batch", args, batch_libs) if "batch" in args.case else []
    _mark_identical(batch)
    if latency:
        print(f"\nlatency: median call, {args.latency_trees} trees of depth "
              "6, 28 features\n" + latency_table(latency))
    if batch:
        print(f"\nbatch: {args.batch_rows:,} rows, {args.n_rounds} trees of "
              f"depth {args.max_depth}\n" + batch_table(batch))
    if args.json:
        write_records(args.json, args, json_records(latency, batch),
                      chart="latency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
