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

With ``--baseline PATH`` every skboost contender gets a twin, library
"skboost-base", whose child imports skboost from PATH (a built checkout of
another commit) instead of the installed one; the two take turns like any
other contenders, and ``baseline_summary`` gives the current / baseline ratios.
"""

import argparse
import importlib
import importlib.metadata
import json
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace

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

BASELINE = "skboost-base"


@dataclass(frozen=True)
class Contender:
    """One estimator to benchmark, described by import path so that a spawned
    child can build it: ``module.class_name(**params)``, with ``module``
    imported from the directory ``sys_path`` if given (a baseline build)."""

    library: str
    method: str
    module: str
    class_name: str
    params: dict = field(default_factory=dict)
    sys_path: str = None

    def build(self):
        if self.sys_path:
            _import_first_from(self.sys_path)
        module = importlib.import_module(self.module)
        if self.sys_path and not os.path.realpath(module.__file__).startswith(
                os.path.join(os.path.realpath(self.sys_path), "")):
            raise ImportError(f"{self.module} was imported from "
                              f"{module.__file__}, not from {self.sys_path}")
        return getattr(module, self.class_name)(**self.params)


def _import_first_from(path):
    """Make this (child) process import packages from ``path`` before the
    installed ones.

    sys.path alone gets the package itself from ``path``: the finder of an
    editable install (setuptools' ``__editable___*_finder``) sits on
    sys.meta_path after the sys.path finder. But that finder also answers for
    ``skboost.<name>`` when the package at ``path`` has no such module, and
    would load it from the installed tree into the baseline package, mixing
    the two builds. It is removed, so that such a module is an ImportError."""
    if path not in sys.path:
        sys.path.insert(0, path)
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(
        f, "__module__", "").startswith("__editable__")]


def select(contenders, args):
    """The contenders to run: each skboost one followed by its baseline twin
    (same method and parameters, skboost from ``args.baseline``) if a baseline
    is given, then only the libraries of ``args.only`` if given, where
    "skboost" also keeps the twins."""
    out = []
    for c in contenders:
        out.append(c)
        if args.baseline and c.library == "skboost":
            out.append(replace(c, library=BASELINE, sys_path=args.baseline))
    only = set(args.only or ())
    if "skboost" in only:
        only.add(BASELINE)
    return [c for c in out if not only or c.library in only]


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


def run_once(contender, data_dir, task, child=None):
    """Fit and predict in a fresh spawned process; the child's measurements
    (``child(contender, data_dir, task)``, by default ``_run_in_child``;
    a script with its own fit and metric, such as ranking, passes its own
    module-level function returning the same keys)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(child or _run_in_child, (contender, data_dir, task))


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


def interleaved_order(n, repeat_index):
    """The order of ``n`` contenders in repeat ``repeat_index``: as given
    in even repeats, reversed in odd ones. A fixed order charged one
    position's bias to the same library every time: the same build run as
    both "skboost" and "skboost-base" took 1.17x, 1.04x, 1.02x as long in
    the first place of its pairs (categorical benchmark, 2026-11-27)."""
    order = range(n)
    return order if repeat_index % 2 == 0 else order[::-1]


def run_contenders(contenders, data, task, repeat=1, log=print, child=None,
                   metric_name=None):
    """Save ``data`` once and run every contender on it, one process at a
    time. Repeats are interleaved, so that a slow phase of a shared
    machine does not hit one library only, and in alternating order (A B
    C, then C B A, ...: ``interleaved_order``). ``child`` and
    ``metric_name``: a script's own child function (see ``run_once``) and
    the name of its metric."""
    runs = [[] for _ in contenders]
    with tempfile.TemporaryDirectory(prefix="skboost-bench-") as data_dir:
        save_data(data, data_dir)
        for i in range(repeat):
            for k in interleaved_order(len(contenders), i):
                c, c_runs = contenders[k], runs[k]
                log(f"  {c.library} ({c.method}), run {i + 1}/{repeat} ...",
                    flush=True)
                r = run_once(c, data_dir, task, child)
                log(f"    fit {r['fit_s']:.2f} s (CPU {r['fit_cores']:.2f} "
                    f"cores; other processes {r['fit_other_cores']:.2f} "
                    f"cores, steal {r['fit_steal_s']:.1f} s), predict "
                    f"{r['predict_s']:.3f} s, peak +{r['fit_peak_mb']:.0f} "
                    f"MB, {metric_name or METRIC_NAME[task]} "
                    f"{r['metric']:.6f}", flush=True)
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


def baseline_summary(results):
    """After a blank line, for each skboost method run from both builds, a
    line with the ratios current / baseline of the fit time and of the peak
    memory (0.90x = the current build takes 10% less); "" without a baseline.
    """
    base = {r.method: r for r in results if r.library == BASELINE}
    lines = []
    for r in results:
        b = base.get(r.method)
        if r.library == "skboost" and b:
            mem = f"{r.peak_mb / b.peak_mb:.2f}x" if b.peak_mb > 0 else "n/a"
            lines.append(f"skboost {r.method}: fit {r.fit_s / b.fit_s:.2f}x "
                         f"baseline, peak memory {mem} baseline")
    return "\n\n" + "\n".join(lines) if lines else ""


def environment(baseline=None):
    """What the numbers were measured on (and the baseline's commit)."""
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
    info.update(_cpu_identity())
    if baseline:
        info["baseline"] = f"{baseline} ({_git_commit(baseline)})"
    return info


# the vector units the kernels (skboost's and the other libraries') pick
# from at run time: two machines with one model name may differ in them
_VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw",
                 "avx512vl", "avx512_bf16", "amx_tile", "asimd", "sve")


def _cpu_identity():
    """The CPU's model name, family/model/stepping numbers (a generic name
    such as "Intel(R) Xeon(R) Processor" names no generation) and its
    vector units, from the first processor of /proc/cpuinfo (empty where
    there is none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break   # the first processor's block only
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        return {}
    info = {}
    if "model name" in fields:
        info["cpu"] = fields["model name"]
    numbers = [fields.get(k) for k in ("cpu family", "model", "stepping")]
    if all(numbers):
        info["cpu_id"] = "family {} model {} stepping {}".format(*numbers)
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    if flags:
        info["cpu_vector"] = [f for f in _VECTOR_FLAGS if f in flags]
    return info


def _git_commit(path):
    """Short commit of the checkout at ``path``, or "?"."""
    try:
        return subprocess.run(
            ["git", "-C", path, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def write_json(path, args, results, **fields):
    """Write ``results`` (a list of Result) with the run's arguments and
    machine, and any further top-level ``fields`` (such as ``metric_name``),
    to ``path``; ``doc/_scripts/plot_benchmarks.py`` draws the benchmarks
    page's charts from such files (benchmarks/results/)."""
    write_records(path, args, [r.to_json() for r in results], **fields)


def write_records(path, args, records, baseline=None, **fields):
    """Write measurement records (dicts with at least ``library``,
    ``method``, ``task`` and ``fit_s`` or ``predict_s``; ``predict_s``,
    ``peak_mb``, ``metric`` where measured) with the run's command, date,
    arguments and machine, and any further top-level ``fields``. The docs
    build draws a table and a chart per such file in benchmarks/results/
    (doc/_scripts/bench_tables.py, plot_benchmarks.py)."""
    command = " ".join(["python", os.path.relpath(sys.argv[0])]
                       + sys.argv[1:])
    with open(path, "w") as f:
        json.dump({"command": command,
                   "date": time.strftime("%Y-%m-%d"),
                   "args": vars(args),
                   "environment": environment(getattr(args, "baseline",
                                                      baseline)),
                   **fields,
                   "results": records}, f, indent=2)


def run_classification_case(args, setup, data, contenders, table):
    """The body of a one-case benchmark script: print the machine and the
    ``setup`` line, run the ``contenders`` (see ``select``) on ``data``,
    print ``table(results)`` and the baseline ratios, write ``args.json``."""
    print("  ".join(f"{k} {v}" for k, v in environment(args.baseline).items()))
    print(setup, flush=True)
    results = run_contenders(select(contenders, args), data, "classification",
                             args.repeat)
    print("\nclassification (ROC AUC on 50,000 test rows)\n"
          + table(results) + baseline_summary(results))
    if args.json:
        write_json(args.json, args, results)
    return results


def run_tasks(args, contenders_of, table):
    """The body of a benchmark script over ``args.task`` ("both": both
    tasks): print the machine and the setup, and for each task draw its
    data, run ``contenders_of(task, data)`` (see ``select``) and print
    ``table(results, task)`` with the baseline ratios; write ``args.json``."""
    tasks = (["classification", "regression"] if args.task == "both"
             else [args.task])
    print("  ".join(f"{k} {v}" for k, v in environment(args.baseline).items()))
    print(f"{args.n_rows} train rows x {args.n_features} features, "
          f"{args.n_rounds} rounds, max_depth {args.max_depth}, "
          f"n_jobs {args.n_jobs}, repeat {args.repeat}", flush=True)
    all_results, tables = [], []
    for task in tasks:
        print(f"\n{task}:", flush=True)
        data = make_data(task, args.n_rows, args.n_features)
        results = run_contenders(select(contenders_of(task, data), args),
                                 data, task, args.repeat)
        all_results += results
        tables.append(f"{task} ({METRIC_NAME[task]} on 50,000 test rows)\n"
                      + table(results, task) + baseline_summary(results))
    print("\n" + "\n\n".join(tables))
    if args.json:
        write_json(args.json, args, all_results)
    return all_results


def base_parser(description, n_rows, task):
    """The options every benchmark script shares: data size, model size,
    threads, repeats, task, a JSON output path, the libraries to run and a
    baseline build of skboost."""
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
    parser.add_argument("--only", nargs="*", metavar="LIBRARY",
                        help="run only these libraries (e.g. skboost "
                             "xgboost); skboost keeps its baseline twins")
    parser.add_argument("--baseline", metavar="PATH", type=_baseline_dir,
                        help="also run every skboost contender with skboost "
                             "imported from PATH, a checkout of another "
                             "commit with its extensions built in place "
                             "(library skboost-base)")
    return parser


def _baseline_dir(path):
    if not os.path.isfile(os.path.join(path, "skboost", "__init__.py")):
        raise argparse.ArgumentTypeError(f"no skboost package in {path}")
    return os.path.abspath(path)
