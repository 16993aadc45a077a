"""Out-of-core training side by side: skboost's ExternalData against
skboost in core and XGBoost's external memory (``DataIter`` +
``ExtMemQuantileDMatrix`` + ``xgboost.train``).

    flock /tmp/skboost-bench.lock python benchmarks/bench_external.py
    python benchmarks/bench_external.py --n-rows 200000 --n-rounds 5   # smoke run

The data (binary classification, ``make_classification``, float32) is saved
once as ``--n-chunks`` ``.npy`` files. Every case runs in a fresh child
process, which imports its library, opens the data, then resets its peak
resident size (``VmHWM``, ``/proc/self/clear_refs``) and reads the resident
size as the baseline; "peak MiB" is the peak during the fit minus that
baseline. In core, X is loaded before the baseline (the data is not
counted); out of core the chunks are memory-mapped and read inside the
fit, so the figure is what the fit costs beyond the process.

Cases (30 rounds, depth 8, learning rate 0.1, 256 bins, 2 threads):

- ``in-core``: ``fit(X, y)`` on the concatenated chunks;
- ``external``: ``fit(ExternalData.from_npy(...))``: the scan, the
  binning pass and training, chunk files in the page cache;
- ``external train warm`` / ``cold``: a second fit on the same
  ExternalData (the pages already built), the pages in the page cache,
  or evicted from it first (``posix_fadvise(DONTNEED)``), and the disk
  throughput of one cold pass over the pages;
- XGBoost ``in-core`` (``QuantileDMatrix``) and ``external``
  (``ExtMemQuantileDMatrix``), each timed from the chunk files to the
  trained booster, and ``external cold`` (chunk files and XGBoost's cache
  evicted first).

``--json PATH`` writes the figures in the format of benchmarks/results/ (a case
is a record's method; seconds, peak memory, AUC, ratios).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------ child

def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status("VmRSS")


def _evict(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _files(directory, n_chunks):
    return ([os.path.join(directory, f"X{k}.npy") for k in range(n_chunks)],
            [os.path.join(directory, f"y{k}.npy") for k in range(n_chunks)])


def _metric(y_true, proba):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y_true, proba))


def child(spec):
    """One case in this (fresh) process; prints a JSON line."""
    X_files, y_files = _files(spec["data"], spec["n_chunks"])
    test = np.load(os.path.join(spec["data"], "X_test.npy"))
    y_test = np.load(os.path.join(spec["data"], "y_test.npy"))
    params = spec["params"]
    result = dict(case=spec["case"], library=spec["library"])
    if spec["library"] == "skboost":
        import skboost

        model = skboost.BoostClassifier(tree_method="hist", **params)
        model.fit(test[:1000], y_test[:1000])   # one-off costs
        if spec["case"] == "in-core":
            X = np.concatenate([np.load(f) for f in X_files])
            y = np.concatenate([np.load(f) for f in y_files])
            base = _reset_peak()
            start = time.perf_counter()
            model.fit(X, y)
        else:
            data = skboost.ExternalData.from_npy(
                X_files, y_files, cache_dir=spec["cache"])
            base = _reset_peak()
            start = time.perf_counter()
            model.fit(data)
            if spec["case"] != "external":   # a second fit on the pages
                result["first_fit_s"] = time.perf_counter() - start
                pages = data._paged[1].pages
                if spec["case"].endswith("cold"):
                    pages.evict()
                io0 = _read_bytes()
                base = _reset_peak()
                start = time.perf_counter()
                model.fit(data)
                result["read_MiB"] = (_read_bytes() - io0) / 2 ** 20
                result["page_file_MiB"] = os.path.getsize(pages.path) / 2 ** 20
        seconds = time.perf_counter() - start
        proba = model.predict_proba(test)[:, 1]
    else:
        seconds, proba, base = _xgboost_case(spec, X_files, y_files, test,
                                             params)
    result["seconds"] = seconds
    result["peak_MiB"] = (_status("VmHWM") - base) / 2 ** 20
    result["auc"] = _metric(y_test, proba)
    if spec["case"].endswith("cold") and spec["library"] == "skboost":
        # the disk throughput of one cold pass over the pages, read ahead
        pages.evict()
        start = time.perf_counter()
        for _ in pages.pages():
            pass
        result["cold_pass_MiB_per_s"] = (os.path.getsize(pages.path) / 2 ** 20
                                         / (time.perf_counter() - start))
    print(json.dumps(result))


def _read_bytes():
    """Bytes this process read from storage so far (/proc/self/io)."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def _xgboost_case(spec, X_files, y_files, test, params):
    import xgboost as xgb

    xgb_params = dict(objective="binary:logistic", tree_method="hist",
                      max_depth=params["max_depth"],
                      learning_rate=params["learning_rate"],
                      max_bin=params["max_bin"], nthread=params["n_jobs"],
                      reg_lambda=1.0)
    rounds = params["n_estimators"]
    warm = xgb.DMatrix(test[:1000], label=np.zeros(1000))
    xgb.train(xgb_params, warm, 2)
    if spec["case"] == "in-core":
        X = np.concatenate([np.load(f) for f in X_files])
        y = np.concatenate([np.load(f) for f in y_files])
        base = _reset_peak()
        start = time.perf_counter()
        matrix = xgb.QuantileDMatrix(X, label=y, max_bin=params["max_bin"])
    else:
        if spec["case"].endswith("cold"):
            _evict(X_files + y_files)

        class Chunks(xgb.DataIter):
            def __init__(self):
                self.k = 0
                super().__init__(cache_prefix=os.path.join(spec["cache"],
                                                           "xgb"))

            def next(self, input_data):
                if self.k == len(X_files):
                    return False
                input_data(data=np.load(X_files[self.k], mmap_mode="r"),
                           label=np.load(y_files[self.k]))
                self.k += 1
                return True

            def reset(self):
                self.k = 0

        base = _reset_peak()
        start = time.perf_counter()
        matrix = xgb.ExtMemQuantileDMatrix(Chunks(),
                                           max_bin=params["max_bin"],
                                           nthread=params["n_jobs"])
    booster = xgb.train(xgb_params, matrix, rounds)
    seconds = time.perf_counter() - start
    proba = booster.predict(xgb.DMatrix(test))
    return seconds, proba, base


# ----------------------------------------------------------------- parent

CASES = [("skboost", "in-core"), ("skboost", "external"),
         ("skboost", "external train warm"),
         ("skboost", "external train cold"),
         ("xgboost", "in-core"), ("xgboost", "external"),
         ("xgboost", "external cold")]


def write_data(directory, n_rows, n_features, n_chunks, n_test=50_000):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows + n_test,
                               n_features=n_features,
                               n_informative=n_features // 2,
                               n_redundant=n_features // 4, random_state=0)
    X = X.astype(np.float32)
    bounds = np.linspace(0, n_rows, n_chunks + 1).astype(int)
    for k in range(n_chunks):
        np.save(os.path.join(directory, f"X{k}.npy"),
                X[bounds[k]:bounds[k + 1]])
        np.save(os.path.join(directory, f"y{k}.npy"),
                y[bounds[k]:bounds[k + 1]].astype(np.float64))
    np.save(os.path.join(directory, "X_test.npy"), X[n_rows:])
    np.save(os.path.join(directory, "y_test.npy"), y[n_rows:])


def run_case(library, case, data, cache, n_chunks, params):
    spec = dict(library=library, case=case, data=data, cache=cache,
                n_chunks=n_chunks, params=params)
    env = dict(os.environ)
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                         capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{library} {case} failed:\n{out.stderr}")
    for path in glob.glob(os.path.join(cache, "*")):
        if os.path.isfile(path):
            os.remove(path)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results, x_bytes):
    by = {(r["library"], r["case"]): r for r in results}
    # ratios to the cases run (--cases may leave in-core out)
    sk_in = by.get(("skboost", "in-core"), {}).get("seconds")
    xgb_ext = by.get(("xgboost", "external"), {}).get("seconds")
    lines = ["| library | case | fit s | / skboost in-core | / xgboost external "
             "| peak MiB | peak / X float32 | AUC |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        ext = f"{r['seconds'] / xgb_ext:.2f}" if xgb_ext else "-"
        own = f"{r['seconds'] / sk_in:.2f}" if sk_in else "-"
        lines.append(
            f"| {r['library']} | {r['case']} | {r['seconds']:.2f} | "
            f"{own} | {ext} | {r['peak_MiB']:.0f} | "
            f"{r['peak_MiB'] * 2 ** 20 / x_bytes:.0%} | {r['auc']:.4f} |")
        if sk_in:
            r["ratio_to_skboost_in_core"] = r["seconds"] / sk_in
        if xgb_ext:
            r["ratio_to_xgboost_external"] = r["seconds"] / xgb_ext
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=2_000_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-chunks", type=int, default=8)
    parser.add_argument("--n-rounds", type=int, default=30)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--cases", nargs="*", default=None,
                        help="library:case pairs to run (default: all)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, max_bin=256, n_jobs=args.n_jobs)
    cases = CASES if not args.cases else [tuple(c.split(":", 1))
                                          for c in args.cases]
    with tempfile.TemporaryDirectory(prefix="bench-external-") as data, \
            tempfile.TemporaryDirectory(prefix="bench-external-cache-") as cache:
        write_data(data, args.n_rows, args.n_features, args.n_chunks)
        results = []
        for library, case in cases:
            result = run_case(library, case, data, cache, args.n_chunks,
                              params)
            print(json.dumps(result), flush=True)
            results.append(result)
    x_bytes = args.n_rows * args.n_features * 4
    print(f"\n{args.n_rows} x {args.n_features} float32 = "
          f"{x_bytes / 2 ** 20:.0f} MiB in {args.n_chunks} chunk files, "
          f"{args.n_rounds} rounds, depth {args.max_depth}\n")
    print(table(results, x_bytes))
    if args.json:
        write_json(args, results, x_bytes)


def write_json(args, results, x_bytes):
    """The results in the format of benchmarks/results/ (``_common``'s
    ``write_records``; the docs draw a table and a chart from it): a case
    is the record's method, its time ``fit_s``, its AUC ``metric``."""
    from _common import write_records

    renamed = {"case": "method", "seconds": "fit_s", "peak_MiB": "peak_mb",
               "auc": "metric"}
    records = [dict({renamed.get(k, k): v for k, v in r.items()},
                    task="classification") for r in results]
    write_records(args.json, args, records,
                  x_float32_MiB=x_bytes / 2 ** 20)


if __name__ == "__main__":
    main()
