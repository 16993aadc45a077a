"""Prediction speed of exported models: onnxruntime running skboost's ONNX
export against skboost's own predict, and against XGBoost's model exported
the same way (onnxmltools), in one process run.

Both libraries train the same kind of model (binary classification,
``--n-rounds`` trees of ``max_depth``, hist, 256 bins) on the same
synthetic data (``_common.make_data``). Measured, for each of skboost
(``predict_proba``), skboost's ONNX model under onnxruntime
(``ai.onnx.ml`` opset 3: ``TreeEnsembleRegressor``; opset 5:
``TreeEnsemble``), XGBoost (``predict_proba``) and XGBoost's ONNX model
(onnxmltools, ``TreeEnsembleClassifier``):

- single-row latency: the median wall time of ``--calls`` predictions of
  one row (different rows in turn), in microseconds;
- batch throughput: rows per second predicting the ``n_test`` test rows at
  once (best of ``--repeat``).

Every ONNX model outputs a float tensor of probabilities (no ZipMap) and
runs with ``--n-jobs`` intra-op threads. Ratios are against skboost's
predict and against XGBoost's ONNX model.

``--json PATH`` writes the figures in the format of ``_common.py``'s
result files (benchmarks/README.md): one record per model, library
``skboost`` or ``xgboost`` and method ``predict_proba``, ``onnx (ml 3)``,
``onnx (ml 5)`` or ``onnx``, with ``predict_s`` (the batch of ``n_test``
rows, best of ``--repeat``), ``latency_s`` (the median single-row call),
``rows_per_s`` and ``max_abs_diff_skboost`` (the largest difference of its
probabilities from skboost's ``predict_proba``).

Usage::

    python benchmarks/bench_onnx.py                       # 200,000 x 28, 100 trees of depth 8
    python benchmarks/bench_onnx.py --json benchmarks/results/onnx.json
    python benchmarks/bench_onnx.py --n-rows 20000 --n-rounds 20   # smoke run
"""

import argparse
import importlib.metadata
import time

import numpy as np

from _common import make_data, write_records


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-rows", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-test", type=int, default=50_000)
    parser.add_argument("--n-rounds", type=int, default=100)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="PATH",
                        help="write the figures to this result file")
    return parser.parse_args()


def fit_models(args, X, y):
    import xgboost

    from skboost import BoostClassifier

    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, max_bin=256, tree_method="hist",
                  n_jobs=args.n_jobs)
    return (BoostClassifier(**params).fit(X, y),
            xgboost.XGBClassifier(**params).fit(X, y))


def onnx_sessions(args, skboost_model, xgb_model, X):
    """{name: predict function of one float32 matrix} for the ONNX models
    (XGBoost's only when onnxmltools converts it)."""
    import onnxruntime as ort

    from skboost.onnx import to_onnx

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.n_jobs
    models = {
        "skboost onnx (ml 3)": to_onnx(
            skboost_model, X, options={"zipmap": False},
            target_opset={"": 17, "ai.onnx.ml": 3}),
        "skboost onnx (ml 5)": to_onnx(
            skboost_model, X, options={"zipmap": False},
            target_opset={"": 21, "ai.onnx.ml": 5})}
    try:
        models["xgboost onnx"] = _xgboost_onnx(xgb_model, X.shape[1])
    except Exception as error:  # noqa: BLE001 - reported, not hidden
        print(f"XGBoost's ONNX export failed (onnxmltools): {error!r}")
    functions = {}
    for name, model in models.items():
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        input_name = session.get_inputs()[0].name
        proba = session.get_outputs()[1].name
        functions[name] = (lambda s, i, p: lambda rows: s.run(
            [p], {i: rows})[0])(session, input_name, proba)
    return functions


def _xgboost_onnx(model, n_features):
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    return convert_xgboost(model, initial_types=[
        ("X", FloatTensorType([None, n_features]))], target_opset=15)


def single_row_latency(function, X, calls):
    """Median seconds of one single-row prediction."""
    times = np.empty(calls)
    for i in range(calls):
        row = X[i % X.shape[0]:i % X.shape[0] + 1]
        start = time.perf_counter()
        function(row)
        times[i] = time.perf_counter() - start
    return float(np.median(times))


def batch_seconds(function, X, repeat):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function(X)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    args = parse_args()
    data = make_data("classification", args.n_rows, args.n_features,
                     n_test=args.n_test)
    X, y, X_test = data["X_train"], data["y_train"], data["X_test"]
    skboost_model, xgb_model = fit_models(args, X, y)
    contenders = {"skboost predict_proba": skboost_model.predict_proba,
                  "xgboost predict_proba": xgb_model.predict_proba,
                  **onnx_sessions(args, skboost_model, xgb_model, X_test)}
    reference = skboost_model.predict_proba(X_test)
    results = {}
    for name, function in contenders.items():
        error = np.abs(function(X_test) - reference).max()
        function(X_test[:1])    # warm-up
        results[name] = (single_row_latency(function, X_test, args.calls),
                         batch_seconds(function, X_test, args.repeat), error)
    report(args, results)
    if args.json:
        write_records(args.json, args, json_records(args, results),
                      versions=_versions("onnx", "onnxruntime", "onnxmltools"))


def json_records(args, results):
    """The records of the result file: one per model ("skboost onnx (ml
    3)" is library skboost, method "onnx (ml 3)")."""
    records = []
    for name, (latency, batch, error) in results.items():
        library, method = name.split(" ", 1)
        records.append({
            "library": library, "method": method, "task": "classification",
            "predict_s": batch, "latency_s": latency,
            "rows_per_s": args.n_test / batch, "n_rows": args.n_test,
            "max_abs_diff_skboost": float(error)})
    return records


def _versions(*distributions):
    """{distribution: version} of those installed."""
    found = {}
    for name in distributions:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def report(args, results):
    print(f"{args.n_rows:,} x {args.n_features} training rows, "
          f"{args.n_rounds} trees of depth {args.max_depth}, "
          f"{args.n_test:,} test rows, {args.n_jobs} threads")
    base_latency, base_batch, _ = results["skboost predict_proba"]
    xgb = results.get("xgboost onnx")
    print(f"{'':24s} {'1 row (us)':>10s} {'vs skb':>7s} {'vs xgb-onnx':>11s}"
          f" {'rows/s':>12s} {'vs skb':>7s} {'vs xgb-onnx':>11s} "
          f"{'max |p - skboost|':>18s}")
    for name, (latency, batch, error) in results.items():
        throughput = args.n_test / batch
        print(f"{name:24s} {latency * 1e6:10.1f} {latency / base_latency:7.2f}"
              f" {_ratio(latency, xgb and xgb[0]):>11s} {throughput:12,.0f}"
              f" {base_batch / batch:7.2f}"
              f" {_ratio(xgb and xgb[1], batch):>11s} {error:18.2e}")
    print("latency ratios: time / reference (below 1 is faster); throughput "
          "ratios: rows per second / reference (above 1 is faster). The "
          "XGBoost rows compare XGBoost's own predictions with skboost's.")


def _ratio(numerator, denominator):
    if not numerator or not denominator:
        return "-"
    return f"{numerator / denominator:.2f}"


if __name__ == "__main__":
    main()
