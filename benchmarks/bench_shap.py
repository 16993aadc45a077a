"""SHAP feature contributions and interaction values: skboost against
XGBoost's ``pred_contribs`` / ``pred_interactions``, on the same trees.

    python benchmarks/bench_shap.py                 # the two cases below, 2 threads
    python benchmarks/bench_shap.py --json benchmarks/results/shap.json
    python benchmarks/bench_shap.py --cases depth8 --n-explain 100

skboost fits the model (``hist``, the default method); its trees are then
loaded into an XGBoost booster (through XGBoost's JSON model format), so
that both libraries explain the very same trees (their predictions are
checked to agree). Each explains the same test rows, timed side by side in
this one process (one run each, after a warm-up call on 10 rows), and the
largest difference between their values is reported, relative to the
largest value (XGBoost computes in float32).

Cases: ``depth8``: 200 trees of depth 8 on 50 features (regression,
``make_regression``); ``depth12``: the same at depth 12.

``--json PATH`` writes the figures in the format of ``_common.py``'s result
files (benchmarks/README.md): per case and output, a record of each
library (method e.g. "SHAP values, depth 8") with ``predict_s`` (the
seconds of the one ``predict`` call), ``n_rows`` (the rows explained) and
``leaves_per_tree``; skboost's record also has ``max_rel_diff`` (the
largest difference from XGBoost's values over the largest value).
"""

import argparse
import sys
import time

import numpy as np

from _common import format_table, make_data, write_records

OUTPUTS = {"contributions": "SHAP values",
           "interactions": "interaction values"}
CASES = {
    "depth8": dict(max_depth=8, n_estimators=200),
    "depth12": dict(max_depth=12, n_estimators=200),
}
# XGBoost's interaction values take about a second per row at depth 12:
# that case explains fewer rows for them
INTERACTION_ROWS = {"depth8": None, "depth12": 30}

COMMON = {"learning_rate": 0.1, "reg_lambda": 1.0, "base_score": 0.0}


def fit_models(case, args, data):
    """skboost's model, and the same trees loaded into an XGBoost booster."""
    from skboost import BoostRegressor

    params = dict(n_jobs=args.n_jobs, **COMMON, **CASES[case])
    ours = BoostRegressor(**params).fit(data["X_train"], data["y_train"])
    theirs = xgboost_booster_from(ours.get_booster())
    X = data["X_test"]
    gap = np.abs(ours.predict(X) - theirs.predict(xgboost_matrix(X))).max()
    print(f"{case}: the XGBoost copy's predictions differ by at most "
          f"{gap:.2g} (float32 leaf values)", flush=True)
    return ours, theirs


def xgboost_matrix(X, n_jobs=1):
    import xgboost

    return xgboost.DMatrix(X, nthread=n_jobs)


def xgboost_booster_from(booster):
    """An XGBoost booster holding skboost's trees (regression, numeric
    splits): XGBoost sends ``x < t`` left as skboost does, comparing in
    float32, so each threshold becomes the smallest float32 >= it."""
    import json
    import tempfile

    import xgboost

    trees = []
    for i, tree in enumerate(booster.trees):
        leaf = tree.left_child == -1
        t32 = tree.threshold.astype(np.float32)
        t32 = np.where(t32.astype(np.float64) < tree.threshold,
                       np.nextafter(t32, np.float32(np.inf)), t32)
        parents = np.full(tree.n_nodes, 2147483647)
        inner = np.flatnonzero(~leaf)
        parents[tree.left_child[inner]] = inner
        parents[tree.right_child[inner]] = inner
        n = tree.n_nodes
        trees.append({
            "base_weights": tree.value.tolist(),
            "categories": [], "categories_nodes": [],
            "categories_segments": [], "categories_sizes": [],
            "default_left": tree.default_left.astype(int).tolist(),
            "id": i,
            "left_children": tree.left_child.tolist(),
            "right_children": tree.right_child.tolist(),
            "loss_changes": tree.gain.tolist(),
            "parents": parents.tolist(),
            "split_conditions": np.where(leaf, tree.value,
                                         t32.astype(np.float64)).tolist(),
            "split_indices": np.where(leaf, 0, tree.feature).tolist(),
            "split_type": [0] * n,
            "sum_hessian": tree.cover.tolist(),
            "tree_param": {"num_deleted": "0",
                           "num_feature": str(booster.n_features),
                           "num_nodes": str(n), "size_leaf_vector": "1"},
        })
    margin = float(booster.base_margin[0])
    model = {"learner": {
        "attributes": {}, "feature_names": [], "feature_types": [],
        "gradient_booster": {"model": {
            "cats": {"enc": [], "feature_segments": [], "sorted_idx": []},
            "gbtree_model_param": {"num_parallel_tree": "1",
                                   "num_trees": str(len(trees))},
            "iteration_indptr": list(range(len(trees) + 1)),
            "tree_info": [0] * len(trees), "trees": trees},
            "name": "gbtree"},
        "learner_model_param": {"base_score": f"[{margin!r}]",
                                "boost_from_average": "0", "num_class": "0",
                                "num_feature": str(booster.n_features),
                                "num_target": "1"},
        "objective": {"name": "reg:squarederror",
                      "reg_loss_param": {"scale_pos_weight": "1"}}},
        "version": [3, 2, 0]}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(model, file)
        file.flush()
        return xgboost.Booster(model_file=file.name)


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def run_case(case, args, data):
    """The measurements of one case: a dict per output (contributions,
    interactions) with both libraries' seconds."""
    ours, xgb_booster = fit_models(case, args, data)
    booster = ours.get_booster()
    xgb_booster.set_param({"nthread": args.n_jobs})
    X = data["X_test"]
    dmatrix = xgboost_matrix(X, args.n_jobs)
    leaves = np.mean([tree.n_leaves for tree in booster.trees])
    measured = []
    for what, flag in (("contributions", "pred_contribs"),
                       ("interactions", "pred_interactions")):
        if what == "interactions" and INTERACTION_ROWS[case]:
            X = X[:INTERACTION_ROWS[case]]
            dmatrix = xgboost_matrix(X, args.n_jobs)
        # warm-up: lazy initialisation, thread pools
        booster.predict(X[:10], **{flag: True})
        xgb_booster.predict(xgboost_matrix(X[:10]), **{flag: True})
        t_xgb, theirs_values = timed(xgb_booster.predict, dmatrix,
                                     **{flag: True})
        t_ours, our_values = timed(booster.predict, X, **{flag: True})
        gap = float(np.abs(our_values - theirs_values).max()
                    / np.abs(theirs_values).max())
        measured.append({"case": case, "output": what, "leaves": leaves,
                         "rows": X.shape[0], "skboost_s": t_ours,
                         "xgboost_s": t_xgb, "max_rel_diff": gap})
    return measured


def table_row(m):
    return [m["case"], m["output"], f"{m['leaves']:.0f}", m["rows"],
            f"{m['skboost_s']:.3f}", f"{m['xgboost_s']:.3f}",
            f"{m['skboost_s'] / m['xgboost_s']:.2f}",
            f"{1e3 * m['xgboost_s'] / m['rows']:.2f}",
            f"{m['max_rel_diff']:.1e}"]


def json_records(measured):
    """The records of the result file: skboost's and XGBoost's of each case
    and output (task "regression", the model's)."""
    records = []
    for m in measured:
        method = (f"{OUTPUTS[m['output']]}, depth "
                  f"{CASES[m['case']]['max_depth']}")
        for library in ("skboost", "xgboost"):
            record = {"library": library, "method": method,
                      "task": "regression", "predict_s": m[f"{library}_s"],
                      "n_rows": m["rows"],
                      "leaves_per_tree": round(m["leaves"], 1)}
            if library == "skboost":
                record["max_rel_diff"] = m["max_rel_diff"]
            records.append(record)
    return records


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES),
                        choices=list(CASES))
    parser.add_argument("--n-train", type=int, default=20_000)
    parser.add_argument("--n-features", type=int, default=50)
    parser.add_argument("--n-explain", type=int, default=300)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--json", metavar="PATH",
                        help="write the figures to this result file")
    return parser.parse_args(argv)


def main(argv=None):
    import xgboost

    import skboost

    args = parse_args(argv)
    print(f"skboost {skboost.__version__}, xgboost {xgboost.__version__}; "
          f"{args.n_train} training rows x {args.n_features} features, "
          f"{args.n_explain} rows explained, {args.n_jobs} threads",
          flush=True)
    data = make_data("regression", args.n_train, args.n_features,
                     n_test=args.n_explain, random_state=0)
    measured = []
    for case in args.cases:
        measured += run_case(case, args, data)
    print(format_table(["case", "output", "leaves/tree", "rows",
                        "skboost s", "xgboost s", "ratio", "xgboost ms/row",
                        "max |diff| / max |value|"],
                       [table_row(m) for m in measured]))
    if args.json:
        write_records(args.json, args, json_records(measured))


if __name__ == "__main__":
    sys.exit(main())
