"""Helpers shared by the benchmarks: data, isolated runs, timing, memory, tables.

Every library is fitted in its own fresh process (multiprocessing "spawn"), one
after the other, on the same data saved once to ``.npy`` files. A fresh
process per run means that:

- memory is measured on the process alone: the child resets its peak resident
  set size (``VmHWM``, by writing 5 to ``/proc/self/clear_refs``) right before
  ``fit``, and reports the peak minus the resident size at that moment. This
  counts every allocation, C/C++/OpenMP included (tracemalloc only sees
  Python's). The training and test data and the imported library are already
  resident at that point, so they are not counted: "peak MB" is what fitting
  adds on top of the data;
- no library inherits another's heap, thread pools or warm caches.

Timings are wall-clock (``time.perf_counter``) around ``fit(X, y)`` and
``predict``/``predict_proba`` on the test set, so input validation and each
library's own data conversion (XGBoost's DMatrix, skboost's presort) are
included. Before them the child fits and predicts a 2-tree model on 1,000
rows, so one-off costs (lazy imports, shared libraries read from disk, OpenMP
thread start-up) are not charged to the measured run.

"CPU" is the process's user+system CPU time during ``fit`` divided by its wall
time: about 2.0 means two threads were busy all along. "others" is the CPU
time every other process on the machine used meanwhile, per second of the
fit: on a shared machine, a run with others > 0 competed for cores.
"""

import importlib
import importlib.metadata
import json
import multiprocessing
import os
import platform
import resource
import tempfile
import time
from dataclasses import asdict, dataclass, field

import numpy as np

# --------------------------------------------------------------------- data

def make_data(task, n_rows, n_features, n_test=50_000, random_state=0):
    """Synthetic float32 data: ``n_rows`` training rows and ``n_test`` test
    rows drawn together, so both come from the same distribution.

    Classification: ``make_classification`` (binary) with half the features
    informative and a quarter redundant. Regression: ``make_regression`` with
    half the features informative and Gaussian noise.
    Every feature is continuous, so the exact method sees ~n_rows distinct
    values per feature (the worst case for split enumeration).
    """
    from sklearn.datasets import make_classification, make_regression

    n_total = n_rows + n_test
    n_informative = max(2, n_features // 2)
    if task == "classification":
        X, y = make_classification(
            n_samples=n_total, n_features=n_features,
            n_informative=n_informative,
            n_redundant=min(n_features // 4, n_features - n_informative),
            random_state=random_state)
    elif task == "regression":
        X, y = make_regression(n_samples=n_total, n_features=n_features,
                               n_informative=n_informative, noise=10.0,
                               random_state=random_state)
    else:
        raise ValueError(f"unknown task {task!r}")
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = y.astype(np.float32 if task == "regression" else np.int64)
    return {"X_train": X[:n_rows], "y_train": y[:n_rows],
            "X_test": X[n_rows:], "y_test": y[n_rows:]}


def save_data(data, directory):
    """Write the arrays of ``make_data`` to ``directory`` as .npy files
    (scipy.sparse matrices as .npz)."""
    import scipy.sparse as sp

    for name, array in data.items():
        if sp.issparse(array):
            sp.save_npz(os.path.join(directory, name + ".npz"), array)
        else:
            np.save(os.path.join(directory, name + ".npy"),
                    np.ascontiguousarray(array))


def load_data(directory):
    import scipy.sparse as sp

    def load(name):
        path = os.path.join(directory, name)
        if os.path.exists(path + ".npz"):
            return sp.load_npz(path + ".npz")
        return np.load(path + ".npy")
    return {name: load(name)
            for name in ("X_train", "y_train", "X_test", "y_test")}


# --------------------------------------------------------------- contenders

@dataclass(frozen=True)
class Contender:
    """One estimator to benchmark, described by import path so that a spawned
    child can build it: ``module.class_name(**params)``."""

    library: str
    method: str
    module: str
    class_name: str
    params: dict = field(default_factory=dict)

    def build(self):
        cls = getattr(importlib.import_module(self.module), self.class_name)
        return cls(**self.params)


# ------------------------------------------------------------------- memory

def _status_kb(key):
    """A field of /proc/self/status in kB (Linux), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss():
    """Reset VmHWM to the current RSS. Returns False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakRSS:
    """Context manager: ``growth_mb`` = peak RSS inside the block minus RSS on
    entry. Where the peak can not be reset, falls back to ``ru_maxrss``, the
    process's lifetime peak: the growth is then underestimated if an earlier
    peak was higher."""

    def __enter__(self):
        self.exact = _reset_peak_rss()
        self.start_kb = _status_kb("VmRSS") or 0
        return self

    def __exit__(self, *exc):
        peak = _status_kb("VmHWM") if self.exact else None
        if peak is None:  # ru_maxrss is in kB on Linux
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.peak_kb = peak
        self.growth_mb = max(peak - self.start_kb, 0) / 1024.0
        return False


# -------------------------------------------------------------------- timing

class Timer:
    """Wall time and process CPU time (all threads) of a block, and what the
    rest of the machine did meanwhile (from /proc/stat): the CPU time of all
    other processes, and the time the hypervisor stole. On a shared machine
    a run during which others were busy was slowed down by them."""

    def __enter__(self):
        self._machine = _machine_cpu()
        self._wall = time.perf_counter()
        self._cpu = _process_cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._wall
        self.cpu = _process_cpu() - self._cpu
        busy, steal = (b - a for a, b in zip(self._machine, _machine_cpu()))
        self.steal = steal
        self.others = max(busy - self.cpu, 0.0)
        return False

    @property
    def cores(self):
        """Average number of busy cores: CPU time / wall time."""
        return self.cpu / self.wall if self.wall > 0 else float("nan")

    @property
    def other_cores(self):
        """Average number of cores other processes kept busy meanwhile."""
        return self.others / self.wall if self.wall > 0 else float("nan")


def _process_cpu():
    t = os.times()
    return t.user + t.system


def _machine_cpu():
    """Machine-wide (busy, stolen) CPU seconds since boot, from /proc/stat
    (zeros where unavailable). Busy = user + nice + system + irq + softirq."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq) / tick, steal / tick


# ------------------------------------------------------------------ metrics

def score(task, y_true, prediction):
    """ROC AUC (classification, on P(class 1)) or RMSE (regression)."""
    if task == "classification":
        from sklearn.metrics import roc_auc_score
        return roc_auc_score(y_true, prediction)
    return float(np.sqrt(np.mean((np.asarray(prediction, np.float64)
                                  - y_true) ** 2)))


METRIC_NAME = {"classification": "ROC AUC", "regression": "RMSE"}


# ------------------------------------------------------------ isolated runs

def _run_in_child(contender, data_dir, task):
    """Body of the spawned child: load data, fit, predict, measure."""
    data = load_data(data_dir)
    _warm_up(contender, data, task)
    estimator = contender.build()
    with PeakRSS() as fit_mem, Timer() as fit_time:
        estimator.fit(data["X_train"], data["y_train"])
    with PeakRSS() as predict_mem, Timer() as predict_time:
        if task == "classification":
            prediction = estimator.predict_proba(data["X_test"])[:, 1]
        else:
            prediction = estimator.predict(data["X_test"])
    prediction = np.asarray(prediction, dtype=np.float64)
    return {
        "fit_s": fit_time.wall,
        "fit_cores": fit_time.cores,
        "fit_steal_s": fit_time.steal,
        "fit_other_cores": fit_time.other_cores,
        "predict_s": predict_time.wall,
        "fit_peak_mb": fit_mem.growth_mb,
        "predict_peak_mb": predict_mem.growth_mb,
        "rss_before_fit_mb": fit_mem.start_kb / 1024.0,
        "peak_exact": fit_mem.exact,
        "metric": score(task, data["y_test"], prediction),
        "prediction": prediction,
    }


def _warm_up(contender, data, task):
    """Fit and predict a tiny model first, so that lazy imports, shared
    libraries paged in from disk and OpenMP thread pools are not charged to
    the measured fit."""
    n = min(1000, data["X_train"].shape[0])
    estimator = contender.build().set_params(n_estimators=2)
    estimator.fit(data["X_train"][:n], data["y_train"][:n])
    if task == "classification":
        estimator.predict_proba(data["X_test"][:n])
    else:
        estimator.predict(data["X_test"][:n])


@dataclass
class Result:
    """Measurements of one contender on one task (best of the repeats)."""

    library: str
    method: str
    task: str
    fit_s: float
    fit_cores: float
    fit_steal_s: float
    fit_other_cores: float
    predict_s: float
    peak_mb: float
    predict_peak_mb: float
    metric: float
    fit_s_all: list
    predict_s_all: list
    prediction: np.ndarray = field(repr=False, default=None)

    def to_json(self):
        d = asdict(self)
        d.pop("prediction")
        return d


def run_once(contender, data_dir, task):
    """Fit and predict in a fresh spawned process; the child's measurements."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_run_in_child, (contender, data_dir, task))


def summarize(contender, task, runs):
    """One Result from a contender's runs: times are the minimum over the
    repeats (the least disturbed run on a noisy machine) and the load figures
    those of that run, memory the maximum, the metric that of the first run
    (runs are deterministic)."""
    best = min(runs, key=lambda r: r["fit_s"])
    return Result(
        library=contender.library, method=contender.method, task=task,
        fit_s=best["fit_s"], fit_cores=best["fit_cores"],
        fit_steal_s=best["fit_steal_s"],
        fit_other_cores=best["fit_other_cores"],
        predict_s=min(r["predict_s"] for r in runs),
        peak_mb=max(r["fit_peak_mb"] for r in runs),
        predict_peak_mb=max(r["predict_peak_mb"] for r in runs),
        metric=runs[0]["metric"],
        fit_s_all=[r["fit_s"] for r in runs],
        predict_s_all=[r["predict_s"] for r in runs],
        prediction=runs[0]["prediction"])


def run_contenders(contenders, data, task, repeat=1, log=print):
    """Save ``data`` once and run every contender on it, one process at a
    time. Repeats are interleaved (A B A B ...), so that a slow phase of a
    shared machine does not hit one library only."""
    runs = [[] for _ in contenders]
    with tempfile.TemporaryDirectory(prefix="skboost-bench-") as data_dir:
        save_data(data, data_dir)
        for i in range(repeat):
            for c, c_runs in zip(contenders, runs):
                log(f"  {c.library} ({c.method}), run {i + 1}/{repeat} ...",
                    flush=True)
                r = run_once(c, data_dir, task)
                log(f"    fit {r['fit_s']:.2f} s (CPU {r['fit_cores']:.2f} "
                    f"cores; other processes {r['fit_other_cores']:.2f} "
                    f"cores, steal {r['fit_steal_s']:.1f} s), predict "
                    f"{r['predict_s']:.3f} s, peak +{r['fit_peak_mb']:.0f} "
                    f"MB, {METRIC_NAME[task]} {r['metric']:.6f}", flush=True)
                c_runs.append(r)
    return [summarize(c, task, r) for c, r in zip(contenders, runs)]


# ------------------------------------------------------------------- tables

def format_table(header, rows):
    """Plain-text table; numbers right-aligned, text left-aligned."""
    cells = [[str(h) for h in header]] + [[_fmt(v) for v in row]
                                          for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None
                   for row in rows) for i in range(len(header))]

    def line(r):
        return "  ".join(c.rjust(w) if num else c.ljust(w)
                         for c, w, num in zip(r, widths, numeric))

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if v != v:
            return "nan"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.4f}" if v >= 1e-3 or v == 0 else f"{v:.1e}"
    return str(v)


def fit_ratio_table(results, references):
    """Classification table with each fit time as a ratio to the fit time
    of each reference, given as ``{column title: (library, method)}``."""
    by = {(r.library, r.method): r for r in results}
    refs = {title: by.get(key) for title, key in references.items()}
    header = ["library", "method", "fit s", "predict s", "peak MB",
              "ROC AUC"] + list(references)
    rows = [[r.library, r.method, r.fit_s, r.predict_s, r.peak_mb, r.metric]
            + [r.fit_s / ref.fit_s if ref else None for ref in refs.values()]
            for r in results]
    return format_table(header, rows)


def comparison_table(results, task, reference="xgboost"):
    """Results table with ratios to the reference library (skboost/ref)."""
    ref = next((r for r in results if r.library == reference), None)
    header = ["library", "method", "fit s", "fit CPU", "others", "predict s",
              "peak MB", METRIC_NAME[task], "fit ratio", "predict ratio",
              "mem ratio", "max |dpred|"]
    rows = []
    for r in results:
        ratio = ref is not None
        rows.append([
            r.library, r.method, r.fit_s, r.fit_cores, r.fit_other_cores,
            r.predict_s, r.peak_mb,
            _metric_str(r.metric),
            r.fit_s / ref.fit_s if ratio else None,
            r.predict_s / ref.predict_s if ratio else None,
            r.peak_mb / ref.peak_mb if ratio and ref.peak_mb > 0 else None,
            float(np.max(np.abs(r.prediction - ref.prediction)))
            if ratio else None,
        ])
    return format_table(header, rows)


def _metric_str(m):
    return f"{m:.6f}"


def environment():
    """What the numbers were measured on."""
    import sklearn
    info = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "numpy": np.__version__,
            "sklearn": sklearn.__version__}
    # versions without importing the libraries into this (parent) process
    distributions = importlib.metadata.packages_distributions()
    for name in ("skboost", "xgboost", "lightgbm"):
        for dist in distributions.get(name, []):
            info[name] = f"{importlib.metadata.version(dist)}"
            if dist != name:
                info[name] += f" ({dist})"
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(line.split(":", 1)[1].strip() for line in f
                               if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def write_json(path, args, results):
    with open(path, "w") as f:
        json.dump({"args": vars(args), "environment": environment(),
                   "results": [r.to_json() for r in results]}, f, indent=2)


def run_classification_case(args, setup, data, contenders, table):
    """The body of a one-case benchmark script: print the machine and the
    ``setup`` line, run the ``contenders`` (those of ``args.only``, if
    given) on ``data``, print ``table(results)`` and write ``args.json``."""
    print("  ".join(f"{k} {v}" for k, v in environment().items()))
    print(setup, flush=True)
    chosen = [c for c in contenders
              if not args.only or c.library in args.only]
    results = run_contenders(chosen, data, "classification", args.repeat)
    print("\nclassification (ROC AUC on 50,000 test rows)\n"
          + table(results))
    if args.json:
        write_json(args.json, args, results)
    return results


def base_parser(description, n_rows, task):
    """The options every benchmark script shares: data size, model size,
    threads, repeats, task and a JSON output path."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n-rows", type=int, default=n_rows,
                        help="training rows (50,000 more are drawn for test)")
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-rounds", type=int, default=100)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1,
                        help="fits per library, each in a fresh process; "
                             "times are the best, memory the worst")
    parser.add_argument("--task", default=task,
                        choices=["classification", "regression", "both"])
    parser.add_argument("--json", metavar="PATH",
                        help="also write the results to this JSON file")
    return parser
