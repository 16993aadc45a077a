"""Where the time of a sparse ``tree_method="hist"`` fit goes, and the
column-scan kernel of this checkout against another build's, side by side.

    python benchmarks/profile_sparse.py                          # bench_sparse.py's case, 2 trees
    python benchmarks/profile_sparse.py --baseline /work/wt-before --repeat 8

The case is ``bench_sparse.py``'s (200,000 x 5,000 CSR, 0.5% stored,
depth 8, 256 bins, 2 threads). One short fit runs with timers around the
set-up (``presort_sparse``, the cuts ``BinMapper.fit_columns``), the
level scans (``find_best_splits_groups``, the scan of the entries
grouped by node, or ``find_best_splits_columns``, the walk of whole
columns) and the rows' moves (``apply_level_splits``); every column
walk's inputs are kept.

With ``--baseline PATH`` (a checkout with its compiled kernels, such as
the session's starting build), the kept levels are then scanned again by
both builds' ``_column_scan`` kernels, interleaved in this one process
(``--repeat`` times each, the fastest kept): on a shared, noisy machine a
kernel change is measured against the same levels under the same load,
and both builds' splits are checked equal (feature, threshold, direction,
gain and sums of every node that splits). The grouped scan changes its
groups as it scans, so its levels are not kept: with absent entries
missing (this case) compare whole fits (``bench_sparse.py --baseline``).
"""

import argparse
import glob
import importlib.machinery
import importlib.util
import os
import sys
import time
from contextlib import contextmanager

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sparse import make_sparse_data  # noqa: E402

_KERNEL = "skboost.tree._column_scan"


def _parse():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=5000)
    parser.add_argument("--density", type=float, default=0.005)
    parser.add_argument("--n-rounds", type=int, default=2)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--baseline", help="a checkout whose compiled "
                        "_column_scan kernel to time beside this one's")
    parser.add_argument("--repeat", type=int, default=4,
                        help="scans of the kept levels per build")
    return parser.parse_args()


class Timers:
    """Total wall time and calls per wrapped function."""

    def __init__(self):
        self.seconds, self.calls = {}, {}

    def wrap(self, owner, name, label, keep=None):
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            if keep is not None:
                keep(args, kwargs)
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[label] = (self.seconds.get(label, 0.0)
                                       + time.perf_counter() - start)
                self.calls[label] = self.calls.get(label, 0) + 1
        setattr(owner, name, timed)


def profiled_fit(args, data):
    """One fit with its phases timed; returns (fit seconds, timers, the
    kept scans' arguments)."""
    from skboost import BoostClassifier
    from skboost.tree import binning, methods
    from skboost.tree.finders import level, local

    kept = []

    def keep(call_args, call_kwargs):
        # row_slot and the sums change after the call: copies
        kept.append(([a.copy() if isinstance(a, np.ndarray) else a
                      for a in call_args], dict(call_kwargs)))

    timers = Timers()
    timers.wrap(methods, "presort_sparse", "set-up: presort")
    timers.wrap(binning.BinMapper, "fit_columns", "set-up: cuts")
    timers.wrap(local, "find_best_splits_columns", "level scans", keep)
    if hasattr(local, "find_best_splits_groups"):   # entries grouped by node
        timers.wrap(local, "find_best_splits_groups", "level scans")
    timers.wrap(level, "apply_level_splits", "row moves")
    model = BoostClassifier(n_estimators=args.n_rounds,
                            max_depth=args.max_depth, learning_rate=0.1,
                            n_jobs=args.n_jobs, reg_lambda=1.0,
                            tree_method="hist", max_bin=256)
    start = time.perf_counter()
    model.fit(data["X_train"], data["y_train"])
    return time.perf_counter() - start, timers, kept


def baseline_kernel(path):
    """The baseline checkout's compiled _column_scan, loaded beside this
    checkout's under the same name (the module table keeps this one's)."""
    found = glob.glob(os.path.join(path, "skboost", "tree",
                                   "_column_scan*.so"))
    if not found:
        raise SystemExit(f"no compiled _column_scan under {path}")
    loader = importlib.machinery.ExtensionFileLoader(_KERNEL, found[0])
    spec = importlib.util.spec_from_file_location(_KERNEL, found[0],
                                                  loader=loader)
    ours = sys.modules.pop(_KERNEL)
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    finally:
        sys.modules[_KERNEL] = ours
    return module


def _scan_all(kernel, kept, binned_of):
    start = time.perf_counter()
    out = [kernel.find_best_splits_columns(binned_of(a[0]), *a[1:], **kw)
           for a, kw in kept]
    return time.perf_counter() - start, out


def _check_equal(ours, theirs):
    """Both builds chose the same split for every node that splits."""
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a["feature"], b["feature"])
        splits = a["feature"] >= 0
        for name in a.dtype.names:
            np.testing.assert_array_equal(a[name][splits], b[name][splits],
                                          err_msg=name)


@contextmanager
def _report(title):
    print(title)
    yield
    print()


def compare_kernels(kept, baseline, repeat):
    """Fastest scan of every kept level by each build, interleaved."""
    from skboost.tree import _column_scan as ours

    theirs = baseline_kernel(baseline)
    converted = {}

    def as_theirs(binned):
        if id(binned) not in converted:
            converted[id(binned)] = theirs.BinnedColumns(
                binned.columns, binned.entry_codes, binned.bin_ptr,
                binned.zero_codes)
        return converted[id(binned)]

    times = {"this checkout": [], "baseline": []}
    for _ in range(repeat):
        ours_s, ours_out = _scan_all(ours, kept, lambda b: b)
        theirs_s, theirs_out = _scan_all(theirs, kept, as_theirs)
        _check_equal(ours_out, theirs_out)
        times["this checkout"].append(ours_s)
        times["baseline"].append(theirs_s)
    return {name: min(s) for name, s in times.items()}


def main():
    args = _parse()
    data = make_sparse_data(args.n_rows, args.n_features, args.density)
    fit_s, timers, kept = profiled_fit(args, data)
    with _report(f"{args.n_rows} x {args.n_features}, density "
                 f"{args.density}, {args.n_rounds} trees of depth "
                 f"{args.max_depth}, {args.n_jobs} threads: fit "
                 f"{fit_s:.2f} s"):
        for label, seconds in timers.seconds.items():
            print(f"  {label:<18} {seconds:7.3f} s  ({timers.calls[label]} "
                  f"calls, {100 * seconds / fit_s:4.1f}% of the fit)")
    if args.baseline and not kept:
        print("no column walk to compare: the grouped scan ran (compare "
              "whole fits: bench_sparse.py --baseline)")
    elif args.baseline:
        best = compare_kernels(kept, args.baseline, args.repeat)
        with _report(f"column scan of the {len(kept)} levels kept, fastest "
                     f"of {args.repeat} (splits equal):"):
            for name, seconds in best.items():
                print(f"  {name:<14} {seconds:7.3f} s")
            print(f"  ratio          {best['this checkout'] / best['baseline']:7.3f}")


if __name__ == "__main__":
    main()
