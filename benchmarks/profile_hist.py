"""Where the time of a dense ``tree_method="hist"`` fit goes, phase by phase.

    python benchmarks/profile_hist.py                 # 1,000,000 x 28, 100 trees of depth 8, 2 threads
    python benchmarks/profile_hist.py --n-rows 200000 --n-rounds 20 --json profile.json
    python benchmarks/profile_hist.py --task regression --skip-xgboost

The fit of ``bench_hist.py``'s classification case (``BoostClassifier``;
``--task regression``: its regression case, ``BoostRegressor``; hist, 256
bins, depth 8, learning rate 0.1, L2 regularisation 1) runs once with
timers around the parts of a boosting round; each phase gets its
*exclusive* wall time (time in a nested phase is charged to that phase,
not to its caller):

- ``binning``: input checks, bin edges and the binned matrix (``fit``
  outside ``train``, and ``make_grower``);
- ``gradients``: the objective's gradient pass and its finiteness check;
- ``gradient quantisation``: the fixed-point gradients of every tree
  (``FixedPointGradients``);
- ``histogram build``: the ``build_histograms`` kernel (the root's and the
  smaller children's);
- ``histogram subtraction``: the larger children's histograms;
- ``partition``: moving each split node's rows into its children's
  slices (``split_nodes``);
- ``split scan``: the ``find_best_splits_hist`` kernel;
- ``pipelined levels``: the levels built, subtracted and scanned pair by
  pair (``build_subtract_scan``: the three phases above, in one kernel);
- ``finder Python``: the Python of the finder's calls around those
  kernels (node tables, pools, records);
- ``driver Python``: the growth loop, the tree builder, column sampling,
  policies (the rest of ``GrowthDriver.grow``);
- ``margin update``: adding each tree's leaf values to the margins;
- ``round rest``: the rest of ``train``: the first margins, the round
  loop's thread tuning, callbacks and evaluation.

Alongside, the same fit of XGBoost (one run) for the ratio, and the floor
of the design (DESIGN.md: about 4.5 n rows per depth-8 tree with
subtraction, 0.5 ns per row-feature update for the root's rows read in
order and 0.65 ns through a node's row index, on two cores: about 3.9 s).
"""

import argparse
import json
import sys
import time
from contextlib import contextmanager

import numpy as np

from _common import environment, format_table, make_data


class PhaseTimer:
    """Exclusive wall time per phase: a nested phase's time is taken off
    its caller's."""

    def __init__(self):
        self.seconds = {}
        self.calls = {}
        self._stack = []

    @contextmanager
    def phase(self, name):
        start = time.perf_counter()
        self._stack.append(0.0)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            nested = self._stack.pop()
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - nested
            self.calls[name] = self.calls.get(name, 0) + 1
            if self._stack:
                self._stack[-1] += elapsed

    def wrap(self, owner, attribute, name):
        """Replace ``owner.attribute`` (a function or method) by a timed
        call of it."""
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            with self.phase(name):
                return original(*args, **kwargs)
        setattr(owner, attribute, timed)


def instrument(timer):
    """Timers around skboost's phases (module globals and methods)."""
    import skboost._model.train as train
    import skboost._estimators.base as estimators
    from skboost import objectives
    from skboost.tree import driver
    from skboost.tree.finders import hist

    timer.wrap(train, "check_gradients", "gradients")
    for name in dir(objectives):
        cls = getattr(objectives, name)
        if isinstance(cls, type) and "gradient" in vars(cls):
            timer.wrap(cls, "gradient", "gradients")
    timer.wrap(train, "update_margins", "margin update")
    timer.wrap(driver.GrowthDriver, "grow", "driver Python")
    for method in ("start_tree", "apply_splits", "find_splits",
                   "finish_tree", "retire", "build_histograms", "_subtract",
                   "_left_sums", "_left_sets"):
        timer.wrap(hist.HistFinder, method, "finder Python")
    timer.wrap(hist.HistFinder, "_split_rows", "partition")
    timer.wrap(hist, "FixedPointGradients", "gradient quantisation")
    timer.wrap(hist, "build_histograms", "histogram build")
    timer.wrap(hist, "subtract_histograms", "histogram subtraction")
    timer.wrap(hist, "find_best_splits_hist", "split scan")
    if hasattr(hist, "build_subtract_scan"):   # (not in older checkouts)
        timer.wrap(hist, "build_subtract_scan", "pipelined levels")
    timer.wrap(estimators, "train", "round rest")
    timer.wrap(train, "make_grower", "binning")


def profile_skboost(args, data):
    from skboost import BoostClassifier, BoostRegressor
    estimator = (BoostClassifier if args.task == "classification"
                 else BoostRegressor)

    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, tree_method="hist", max_bin=256,
                  reg_lambda=1.0, n_jobs=args.n_jobs)
    # warm up (imports, thread pools) before instrumenting
    estimator(**dict(params, n_estimators=2)).fit(
        data["X_train"][:1000], data["y_train"][:1000])
    timer = PhaseTimer()
    instrument(timer)
    start = time.perf_counter()
    with timer.phase("binning"):
        estimator(**params).fit(data["X_train"], data["y_train"])
    return time.perf_counter() - start, timer


def time_xgboost(args, data):
    import xgboost

    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, tree_method="hist", max_bin=256,
                  reg_lambda=1.0, n_jobs=args.n_jobs)
    estimator = (xgboost.XGBClassifier if args.task == "classification"
                 else xgboost.XGBRegressor)
    estimator(**dict(params, n_estimators=2)).fit(
        data["X_train"][:1000], data["y_train"][:1000])
    start = time.perf_counter()
    estimator(**params).fit(data["X_train"], data["y_train"])
    return time.perf_counter() - start


ORDER = ["binning", "gradients", "gradient quantisation", "histogram build",
         "histogram subtraction", "partition", "split scan",
         "pipelined levels", "finder Python",
         "driver Python", "margin update", "round rest"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=1_000_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-rounds", type=int, default=100)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--task", choices=["classification", "regression"],
                        default="classification")
    parser.add_argument("--skip-xgboost", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    print("  ".join(f"{k} {v}" for k, v in environment().items()))
    data = make_data(args.task, args.n_rows, args.n_features, n_test=1000)
    total, timer = profile_skboost(args, data)
    xgb = None if args.skip_xgboost else time_xgboost(args, data)
    # DESIGN.md's floor: about 4.5 n rows visited per depth-8 tree with
    # subtraction, the root's in order (0.5 ns per row-feature update on
    # one core), the others through the node's row index (0.65 ns), on
    # two cores
    updates = args.n_rows * args.n_features * args.n_rounds
    floor = (0.5e-9 + 3.5 * 0.65e-9) * updates / 2
    rows = [[name, timer.seconds.get(name, 0.0), timer.calls.get(name, 0),
             100 * timer.seconds.get(name, 0.0) / total] for name in ORDER]
    rows.append(["total fit", total, 1, 100.0])
    print(f"\nskboost hist {args.task} fit, {args.n_rows} x {args.n_features}, "
          f"{args.n_rounds} trees of depth {args.max_depth}, n_jobs "
          f"{args.n_jobs}\n")
    print(format_table(["phase", "seconds", "calls", "% of fit"], rows))
    print(f"\nhistogram floor (DESIGN.md): {floor:.2f} s"
          + (f"; XGBoost fit {xgb:.2f} s, skboost / XGBoost "
             f"{total / xgb:.2f}x" if xgb else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "environment": environment(),
                       "results": [{"case": name, "library": "skboost",
                                    "seconds": s, "calls": c}
                                   for name, s, c, _ in rows]
                       + ([{"case": "total fit", "library": "xgboost",
                            "seconds": xgb, "ratio": total / xgb}]
                          if xgb else []),
                       "floor_s": floor}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
