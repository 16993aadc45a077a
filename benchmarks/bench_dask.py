"""Distributed training on Dask, side by side in one run.

On a ``distributed.LocalCluster`` of 2 worker processes with 1 thread
each: ``skboost.dask.DaskBoostClassifier`` against ``xgboost.dask``'s
``DaskXGBClassifier`` on the same cluster and the same partitions, and
against single-node skboost (and XGBoost) with 2 threads in this process.
Binary classification, 400,000 x 28 continuous features (``make_data``),
50 rounds, depth 8, learning rate 0.1, 256 bins.

Also measured: how far the predicted probabilities move when the same
partitions train on one worker instead of two (skboost: 0 by design;
XGBoost: its results depend on the workers), and where skboost's fit time
goes on each worker (building its histograms, the exchanges with the other
worker, the scans of its features).

``--tree-method approx`` runs every fit with ``tree_method="approx"``
(cuts proposed again for every tree; skboost.dask's per-worker time of
the proposals is split into sketching, exchanging the summaries, merging
them and re-binning the rows); the default is hist.

Every fit is timed ``--repeat`` times (default 2), the fastest kept.

``--baseline PATH`` measures a build of another commit beside this one
(library "skboost-base", as the other benchmarks' option): the script
runs in child processes, alternately with skboost imported from this
checkout and from PATH (the Dask workers too), ``--repeat`` times each
with one fit per measurement, and keeps each build's fastest; XGBoost
runs in the first child only.

Run it alone (``flock /tmp/skboost-bench.lock python
benchmarks/bench_dask.py``); ``--json PATH`` writes the figures.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (BASELINE, _baseline_dir, environment,  # noqa: E402
                     interleaved_order, make_data, write_records)


def _parse():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=400_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-rounds", type=int, default=50)
    parser.add_argument("--max-depth", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2,
                        help="fits per measurement, the fastest kept")
    parser.add_argument("--tree-method", choices=("hist", "approx"),
                        default="hist",
                        help="every library's tree_method (approx: cuts "
                        "proposed again for every tree)")
    parser.add_argument("--no-xgboost", action="store_true")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--baseline", metavar="PATH", type=_baseline_dir,
                        help="also measure skboost imported from PATH (a "
                        "checkout of another commit, extensions built in "
                        "place), in child processes alternating with this "
                        "build (library skboost-base)")
    return parser.parse_args()


def _timed(fit, repeat=1):
    """The fastest of ``repeat`` fits (the machine is shared: the minimum
    is the least disturbed) and its time."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        model = fit()
        seconds = time.perf_counter() - start
        if best is None or seconds < best[1]:
            best = (model, seconds)
    return best


def _auc(y, p):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p))


def _persisted(client, da, array, chunk, workers):
    """``array`` as a dask array whose partitions are held by ``workers``
    (round robin)."""
    from distributed import wait

    pieces = [array[i:i + chunk] for i in range(0, array.shape[0], chunk)]
    futures = [client.scatter(p, workers=[workers[k % len(workers)]])
               for k, p in enumerate(pieces)]
    wait(futures)
    return da.concatenate([da.from_delayed(f, shape=p.shape, dtype=p.dtype)
                           for f, p in zip(futures, pieces)]), futures


def main():
    args = _parse()
    if args.baseline:
        return side_by_side(args)
    import dask.array as da
    from distributed import Client, LocalCluster

    from skboost import BoostClassifier
    from skboost.dask import DaskBoostClassifier

    data = make_data("classification", args.n_rows, args.n_features)
    X, y = data["X_train"], data["y_train"]
    X_test, y_test = data["X_test"], data["y_test"]
    params = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, max_bin=256, random_state=0,
                  tree_method=args.tree_method)
    import skboost

    print("  ".join(f"{k} {v}" for k, v in environment(None).items()))
    print(f"skboost from {os.path.dirname(skboost.__file__)}")
    print(f"{args.n_rows} x {args.n_features}, {args.n_rounds} rounds, "
          f"depth {args.max_depth}, {args.partitions} partitions, "
          f"tree_method={args.tree_method!r}, "
          "LocalCluster 2 workers x 1 thread", flush=True)
    rows = []

    def record(case, library, seconds, reference, auc, extra=None):
        rows.append(dict(case=case, library=library, seconds=seconds,
                         ratio=seconds / reference if reference else None,
                         auc=auc, **(extra or {})))
        print(f"{case:<34} {library:<16} {seconds:7.2f} s  "
              + (f"x{seconds / reference:5.2f}  " if reference else " " * 8)
              + f"AUC {auc:.4f}", flush=True)

    single, single_s = _timed(lambda: BoostClassifier(**params, n_jobs=2)
                              .fit(X, y), args.repeat)
    record("single node, 2 threads", "skboost", single_s, None,
           _auc(y_test, single.predict_proba(X_test)[:, 1]))
    if not args.no_xgboost:
        import xgboost

        xgb_single, xgb_single_s = _timed(lambda: xgboost.XGBClassifier(
            **params, n_jobs=2).fit(X, y), args.repeat)
        record("single node, 2 threads", "xgboost", xgb_single_s, None,
               _auc(y_test, xgb_single.predict_proba(X_test)[:, 1]))

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    workers = sorted(client.nthreads())
    _check_workers_import(client, skboost.__file__)
    chunk = -(-args.n_rows // args.partitions)
    dX, kx = _persisted(client, da, X, chunk, workers)
    dy, ky = _persisted(client, da, y, chunk, workers)
    dX_test = da.from_array(X_test, chunks=(25_000, X_test.shape[1]))

    _warm_up(client, da, X, y, not args.no_xgboost)
    model, dask_s = _timed(lambda: DaskBoostClassifier(**params)
                           .fit(dX, dy, client=client), args.repeat)
    proba_2 = model.predict_proba(dX_test).compute()[:, 1]
    record("dask, 2 workers", "skboost", dask_s, single_s,
           _auc(y_test, proba_2),
           {"vs_xgboost_dask": None,
            "equal_to_single_node": bool(np.array_equal(
                proba_2, single.predict_proba(X_test)[:, 1]))})
    skboost_row = rows[-1]
    stats = model._dask_stats
    for key in ("round_seconds", "build_seconds", "exchange_seconds",
                "scan_seconds", "propose_seconds", "propose_sketch_seconds",
                "propose_exchange_seconds", "propose_merge_seconds",
                "propose_rebin_seconds"):
        skboost_row[f"shard_{key}"] = [s[key] for s in stats]
    skboost_row["histogram_mb_sent_per_worker"] = [s["sent_bytes"] / 1e6
                                                   for s in stats]
    print("  per worker: rounds "
          + ", ".join(f"{s['round_seconds']:.2f} s" for s in stats)
          + " (building histograms "
          + ", ".join(f"{s['build_seconds']:.2f}" for s in stats)
          + "; exchanges with the other worker "
          + ", ".join(f"{s['exchange_seconds']:.2f}" for s in stats)
          + "; scans " + ", ".join(f"{s['scan_seconds']:.2f}" for s in stats)
          + "; cut proposals "
          + ", ".join(f"{s['propose_seconds']:.2f}" for s in stats)
          + " = sketch " + ", ".join(f"{s['propose_sketch_seconds']:.2f}"
                                     for s in stats)
          + " + exchange " + ", ".join(
              f"{s['propose_exchange_seconds']:.2f}" for s in stats)
          + " + merge " + ", ".join(f"{s['propose_merge_seconds']:.2f}"
                                    for s in stats)
          + " + re-binning " + ", ".join(
              f"{s['propose_rebin_seconds']:.2f}" for s in stats)
          + "); histograms sent to the other worker "
          + ", ".join(f"{s['sent_bytes'] / 1e6:.0f} MB" for s in stats))
    if not args.no_xgboost:
        from xgboost import dask as dxgb

        xgb_model, xgb_s = _timed(lambda: dxgb.DaskXGBClassifier(
            **params).fit(dX, dy), args.repeat)
        xgb_2 = xgb_model.predict_proba(dX_test).compute()[:, 1]
        record("dask, 2 workers", "xgboost.dask", xgb_s, single_s,
               _auc(y_test, xgb_2))
        skboost_row["vs_xgboost_dask"] = dask_s / xgb_s
        xgb_row = rows[-1]
    del dX, dy, kx, ky
    client.close()
    cluster.close()

    # the same partitions on a cluster of one worker
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    workers = sorted(client.nthreads())
    dX, kx = _persisted(client, da, X, chunk, workers)
    dy, ky = _persisted(client, da, y, chunk, workers)
    _warm_up(client, da, X, y, not args.no_xgboost)
    one, one_s = _timed(lambda: DaskBoostClassifier(**params)
                        .fit(dX, dy, client=client), args.repeat)
    proba_1 = one.predict_proba(dX_test).compute()[:, 1]
    record("dask, 1 worker", "skboost", one_s, single_s,
           _auc(y_test, proba_1))
    skboost_row["max_abs_proba_diff_1_vs_2_workers"] = float(
        np.abs(proba_1 - proba_2).max())
    if not args.no_xgboost:
        xgb_one, xgb_one_s = _timed(lambda: dxgb.DaskXGBClassifier(
            **params).fit(dX, dy), args.repeat)
        xgb_1 = xgb_one.predict_proba(dX_test).compute()[:, 1]
        record("dask, 1 worker", "xgboost.dask", xgb_one_s, single_s,
               _auc(y_test, xgb_1))
        xgb_row["max_abs_proba_diff_1_vs_2_workers"] = float(
            np.abs(xgb_1 - xgb_2).max())
    client.close()
    cluster.close()

    print("\nskboost.dask / xgboost.dask (2 workers): "
          + (f"{skboost_row['vs_xgboost_dask']:.2f}"
             if skboost_row["vs_xgboost_dask"] else "not measured"))
    for row in rows:
        if "max_abs_proba_diff_1_vs_2_workers" in row:
            print(f"{row['library']}: max |p(1 worker) - p(2 workers)| = "
                  f"{row['max_abs_proba_diff_1_vs_2_workers']:.3g}")
    print(f"skboost.dask equal to single-node skboost: "
          f"{skboost_row['equal_to_single_node']} (continuous features: "
          "cuts from merged partition summaries)")
    if args.json:
        write_json(args, rows)


def write_json(args, rows):
    """The rows in the format of benchmarks/results/ (``write_records``;
    the docs draw a table and a chart from it): the case is the record's
    method, its time ``fit_s``, its AUC ``metric``."""
    renamed = {"case": "method", "seconds": "fit_s", "auc": "metric"}
    records = [dict({renamed.get(k, k): v for k, v in row.items()},
                    task="classification") for row in rows]
    write_records(args.json, args, records)


def _check_workers_import(client, path):
    """The workers import skboost from where this process does (a
    baseline run sets PYTHONPATH for both)."""
    def where():
        import skboost

        return skboost.__file__

    found = set(client.run(where).values())
    if found != {path}:
        raise RuntimeError(f"the workers import skboost from {found}, this "
                           f"process from {path}")


def side_by_side(args):
    """``--baseline``: this script in child processes, alternately with
    skboost from this checkout and from ``args.baseline`` (which goes
    first alternates too: ``interleaved_order``; PYTHONPATH,
    which the Dask workers inherit), ``args.repeat`` times each with one
    fit per measurement; each build's fastest figures kept, the
    baseline's as library skboost-base. XGBoost runs in the first child
    only."""
    import subprocess
    import tempfile

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    builds = (("skboost", here), (BASELINE, args.baseline))
    runs = {library: [] for library, _ in builds}
    for k in range(args.repeat):
        for b in interleaved_order(len(builds), k):
            library, path = builds[b]
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "run.json")
                command = [sys.executable, os.path.abspath(__file__),
                           "--n-rows", str(args.n_rows),
                           "--n-features", str(args.n_features),
                           "--n-rounds", str(args.n_rounds),
                           "--max-depth", str(args.max_depth),
                           "--partitions", str(args.partitions),
                           "--tree-method", args.tree_method,
                           "--repeat", "1", "--json", out]
                if args.no_xgboost or k or library != "skboost":
                    command.append("--no-xgboost")
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                    [path] + [p for p in os.environ.get(
                        "PYTHONPATH", "").split(os.pathsep) if p]))
                print(f"--- {library} from {path}", flush=True)
                subprocess.run(command, env=env, check=True)
                with open(out) as f:
                    runs[library].append(json.load(f)["results"])
    records = _fastest(runs)
    _print_side_by_side(records)
    if args.json:
        write_records(args.json, args, records)


def _fastest(runs):
    """Per build and method, the record of the fastest run (XGBoost's
    from the run that has them); the ratios to each build's own single
    node, the current build's to xgboost.dask, recomputed."""
    records = []
    for library, results in runs.items():
        best = {}
        for result in results:
            for record in result:
                key = (record["library"], record["method"])
                if key not in best or record["fit_s"] < best[key]["fit_s"]:
                    best[key] = record
        for (name, _), record in best.items():
            if name == "skboost" and library != "skboost":
                record = dict(record, library=library)
            elif name != "skboost" and library != "skboost":
                continue   # XGBoost: from the current build's runs
            records.append(record)
    single = {r["library"]: r["fit_s"] for r in records
              if r["method"] == "single node, 2 threads"}
    dask_xgb = next((r["fit_s"] for r in records
                     if r["library"] == "xgboost.dask"
                     and r["method"] == "dask, 2 workers"), None)
    for record in records:
        reference = single.get(record["library"], single.get("skboost"))
        if record["method"] != "single node, 2 threads" and reference:
            record["ratio"] = record["fit_s"] / reference
        if ("vs_xgboost_dask" in record and dask_xgb
                and record["method"] == "dask, 2 workers"):
            record["vs_xgboost_dask"] = record["fit_s"] / dask_xgb
    return records


def _print_side_by_side(records):
    print("\nside by side (each build's fastest):")
    for r in records:
        ratio = f"x{r['ratio']:5.2f}" if r.get("ratio") else " " * 6
        print(f"{r['method']:<24} {r['library']:<14} {r['fit_s']:6.2f} s "
              f"{ratio}")
    by = {(r["library"], r["method"]): r["fit_s"] for r in records}
    for method in ("single node, 2 threads", "dask, 2 workers",
                   "dask, 1 worker"):
        if ("skboost", method) in by and (BASELINE, method) in by:
            ratio = by["skboost", method] / by[BASELINE, method]
            print(f"skboost {method}: {ratio:.2f}x baseline")


def _warm_up(client, da, X, y, with_xgboost):
    """A small fit of each library on the cluster first: imports and
    start-up on the workers are not charged to the measured fits."""
    from skboost.dask import DaskBoostClassifier

    small_X = da.from_array(X[:2000], chunks=(1000, X.shape[1]))
    small_y = da.from_array(y[:2000], chunks=1000)
    DaskBoostClassifier(n_estimators=2).fit(small_X, small_y, client=client)
    if with_xgboost:
        from xgboost import dask as dxgb

        model = dxgb.DaskXGBClassifier(n_estimators=2, tree_method="hist")
        model.client = client
        model.fit(small_X, small_y)


if __name__ == "__main__":
    main()
