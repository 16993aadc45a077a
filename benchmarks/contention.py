"""skboost, XGBoost and LightGBM on an idle and on a busy machine.

A busy machine is made by the benchmark itself: ``--busy K`` processes
spinning in a tight loop (one per core taken), started before a case and
stopped after it. Every fit runs in a fresh Python process with no OpenMP
environment variable set (what a user has), the libraries' default
``n_jobs`` unless the case says otherwise; the contenders of a case take
turns, ``--repeat`` times (each round starting with the next contender),
and the table gives the median wall time and the ratios.

Cases:

- ``small``: 5,000 x 20 binary classification, 100 trees (default depth
  6, hist), with all cores idle, one core busy and every core busy;
  skboost's default ``n_jobs`` against ``n_jobs=1`` and against XGBoost
  and LightGBM (defaults and ``n_jobs=1``).
- ``medium``: the same at 100,000 x 28, 30 trees of depth 8 (where two
  threads pay off on an idle machine).
- ``grid``: ``GridSearchCV(estimator, grid, cv=3, n_jobs=2)`` over 4
  settings (12 fits of 50 trees on 5,000 x 20), idle.

Run from the repository root::

    python benchmarks/contention.py                 # every case, ~6 minutes
    python benchmarks/contention.py --cases small --repeat 5
    python benchmarks/contention.py --baseline ../before   # and an older skboost
    python benchmarks/contention.py --repeat 5 \
        --json benchmarks/results/contention/contention.json   # the docs' table
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Code run in each child: build the data, fit once (timed), print seconds.
CHILD = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
if spec.get("path"):
    sys.path.insert(0, spec["path"])
import numpy as np
from sklearn.datasets import make_classification
X, y = make_classification(n_samples=spec["n_rows"],
                           n_features=spec["n_features"], random_state=0)
X = X.astype(np.float32)

def make(library, params):
    if library.startswith("skboost"):
        from skboost import BoostClassifier
        return BoostClassifier(**params)
    if library == "xgboost":
        from xgboost import XGBClassifier
        return XGBClassifier(tree_method="hist", **params)
    from lightgbm import LGBMClassifier
    params = dict(params)
    depth = params.pop("max_depth", 6)
    return LGBMClassifier(max_depth=depth, num_leaves=2 ** depth,
                          verbose=-1, **params)

params = {"n_estimators": spec["n_trees"], "max_depth": spec["depth"]}
if spec["n_jobs"] is not None:
    params["n_jobs"] = spec["n_jobs"]
make(spec["library"], dict(params, n_estimators=2)).fit(X[:1000], y[:1000])
start = time.perf_counter()
if spec["grid"]:
    from sklearn.model_selection import GridSearchCV
    grid = {"max_depth": [3, 6], "learning_rate": [0.1, 0.3]}
    GridSearchCV(make(spec["library"], {"n_estimators": spec["n_trees"]}),
                 grid, cv=3, n_jobs=2).fit(X, y)
else:
    make(spec["library"], params).fit(X, y)
print(time.perf_counter() - start)
"""

CASES = {
    "small": {"n_rows": 5_000, "n_features": 20, "n_trees": 100, "depth": 6,
              "grid": False, "loads": ["idle", "one core busy",
                                       "all cores busy"]},
    "medium": {"n_rows": 100_000, "n_features": 28, "n_trees": 30,
               "depth": 8, "grid": False,
               "loads": ["idle", "one core busy", "all cores busy"]},
    "grid": {"n_rows": 5_000, "n_features": 20, "n_trees": 50, "depth": 6,
             "grid": True, "loads": ["idle"]},
}


def _spin():
    while True:
        pass


class BusyCores:
    """``count`` processes spinning on the CPU while the block runs."""

    def __init__(self, count):
        self.count = count
        self.processes = []

    def __enter__(self):
        ctx = multiprocessing.get_context("spawn")
        self.processes = [ctx.Process(target=_spin, daemon=True)
                          for _ in range(self.count)]
        for p in self.processes:
            p.start()
        time.sleep(0.5)  # let them reach the loop
        return self

    def __exit__(self, *exc):
        for p in self.processes:
            p.terminate()
        for p in self.processes:
            p.join()


def contenders(case, baseline):
    """(label, library, n_jobs, path) of a case."""
    rows = [("skboost", "skboost", None, None),
            ("skboost n_jobs=1", "skboost", 1, None)]
    if baseline:
        rows += [("skboost-base", "skboost-base", None, baseline),
                 ("skboost-base n_jobs=1", "skboost-base", 1, baseline)]
    rows += [("xgboost", "xgboost", None, None),
             ("xgboost n_jobs=1", "xgboost", 1, None),
             ("lightgbm", "lightgbm", None, None),
             ("lightgbm n_jobs=1", "lightgbm", 1, None)]
    if case["grid"]:  # the search's n_jobs=2 is the point: defaults only
        rows = [r for r in rows if r[2] is None]
    return rows


def compile_bytecode(baseline):
    """Byte-compile the skboost packages the contenders import, as an
    installed package is: the children then load cached bytecode, like
    XGBoost and LightGBM from their wheels, instead of compiling every
    module a process imports (a fresh process per fit, and a grid search's
    workers, would otherwise pay it in every run)."""
    import compileall
    import importlib.util
    packages = [os.path.dirname(importlib.util.find_spec("skboost").origin)]
    if baseline:
        packages.append(os.path.join(baseline, "skboost"))
    for package in packages:
        compileall.compile_dir(package, quiet=1)


def run_child(case, library, n_jobs, path):
    spec = dict(case, library=library, n_jobs=n_jobs, path=path)
    spec.pop("loads")
    # what a user has: no OpenMP variables, bytecode cached (above)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "GOMP_"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    if path:
        env["PYTHONPATH"] = path
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)],
                         env=env, capture_output=True, text=True, check=True,
                         cwd=HERE)
    return float(out.stdout.strip().splitlines()[-1])


def busy_count(load, n_cpus):
    return {"idle": 0, "one core busy": 1, "all cores busy": n_cpus}[load]


def run_case(name, case, repeat, baseline, log):
    n_cpus = len(os.sched_getaffinity(0))
    results = []
    for load in case["loads"]:
        times = {label: [] for label, *_ in contenders(case, baseline)}
        rows = contenders(case, baseline)
        with BusyCores(busy_count(load, n_cpus)):
            for i in range(repeat):
                # each repeat starts with another contender, so that none
                # is always the first after the busy processes start
                shift = i % len(rows)
                for label, library, n_jobs, path in rows[shift:] + rows[:shift]:
                    times[label].append(run_child(case, library, n_jobs, path))
        medians = {label: statistics.median(t) for label, t in times.items()}
        for label, seconds in medians.items():
            results.append({"case": name, "load": load, "contender": label,
                            "seconds": seconds, "runs": times[label]})
        log(_table(name, load, medians))
    return results


def _table(name, load, medians):
    xgb = medians.get("xgboost")
    lines = [f"\n{name}, {load}:",
             f"  {'contender':24s} {'median s':>9s} {'/ xgboost':>10s} "
             f"{'/ own n_jobs=1':>15s}"]
    for label, seconds in medians.items():
        own = medians.get(label.replace(" n_jobs=1", "") + " n_jobs=1")
        lines.append(f"  {label:24s} {seconds:9.3f} "
                     f"{seconds / xgb if xgb else float('nan'):10.2f} "
                     f"{seconds / own if own else float('nan'):15.2f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES),
                        choices=list(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=None,
                        help="a built checkout of another skboost commit")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    print(f"CPUs available: {len(os.sched_getaffinity(0))}; "
          f"load average before: {os.getloadavg()}")
    compile_bytecode(baseline)
    results = []
    for name in args.cases:
        results += run_case(name, CASES[name], args.repeat, baseline, print)
    if args.json:
        _write_json(args.json, results, argv if argv is not None
                    else sys.argv[1:])


def _write_json(path, results, argv):
    """The results with how they were obtained (the docs' threads page
    draws its table from ``benchmarks/results/contention/``)."""
    import sklearn
    versions = {"python": sys.version.split()[0], "cpus": len(
        os.sched_getaffinity(0)), "sklearn": sklearn.__version__}
    for name in ("xgboost", "lightgbm"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            pass
    meta = {"command": "python benchmarks/contention.py " + " ".join(
                a for a in argv if not a.startswith("--json")
                and not a.endswith(".json")),
            "date": time.strftime("%Y-%m-%d"),
            "load_average_after": os.getloadavg(),
            "environment": versions, "results": results}
    with open(path, "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
