"""SHAP feature contributions and interaction values: skboost against
XGBoost's ``pred_contribs`` / ``pred_interactions``, on the same trees.

    python benchmarks/bench_shap.py                 # the two cases below, 2 threads
    python benchmarks/bench_shap.py --cases depth8 --n-explain 100

Both libraries fit ``tree_method="exact"`` with the same parameters on the
same data, so they grow the same trees (the margins are checked to agree);
then each explains the same rows, timed side by side in this one process
(one run each, after a warm-up call on 10 rows): training rows, so that
both libraries send them the same way at every split. skboost's values are
compared with XGBoost's (classic TreeSHAP in float32).

Cases: ``depth8``: 200 trees of depth 8 on 50 features (regression,
``make_regression``); ``depth12``: the same at depth 12.
"""

import argparse
import sys
import time

import numpy as np

from _common import format_table, make_data

CASES = {
    "depth8": dict(max_depth=8, n_estimators=200),
    "depth12": dict(max_depth=12, n_estimators=200),
}
# XGBoost's interaction values take about a second per row at depth 12:
# that case explains fewer rows for them
INTERACTION_ROWS = {"depth8": None, "depth12": 30}

# Large enough nodes that no two candidate splits have gains equal up to
# rounding (which the libraries could break differently): the same trees.
COMMON = {
    "tree_method": "exact", "learning_rate": 0.1, "reg_lambda": 1.0,
    "min_child_weight": 10.0, "base_score": 0.0,
}


def fit_both(case, args, data):
    import xgboost

    from skboost import BoostRegressor

    params = dict(n_jobs=args.n_jobs, **COMMON, **CASES[case])
    ours = BoostRegressor(**params).fit(data["X_train"], data["y_train"])
    theirs = xgboost.XGBRegressor(**params).fit(data["X_train"],
                                                data["y_train"])
    X = data["X_train"][:args.n_explain]
    gap = np.abs(ours.predict(X) - theirs.predict(X)).max()
    scale = np.abs(theirs.predict(X)).max()
    if gap > 1e-4 * max(scale, 1.0):
        print(f"warning: margins differ by {gap:.3g}: not the same trees")
    return ours, theirs


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def run_case(case, args, data):
    import xgboost

    ours, theirs = fit_both(case, args, data)
    booster, xgb_booster = ours.get_booster(), theirs.get_booster()
    xgb_booster.set_param({"nthread": args.n_jobs})
    X = data["X_train"][:args.n_explain]   # rows whose paths agree
    dmatrix = xgboost.DMatrix(X, nthread=args.n_jobs)
    leaves = np.mean([tree.n_leaves for tree in booster.trees])
    rows = []
    for what, flag in (("contributions", "pred_contribs"),
                       ("interactions", "pred_interactions")):
        if what == "interactions" and INTERACTION_ROWS[case]:
            X = X[:INTERACTION_ROWS[case]]
            dmatrix = xgboost.DMatrix(X, nthread=args.n_jobs)
        # warm-up: lazy initialisation, thread pools
        booster.predict(X[:10], **{flag: True})
        xgb_booster.predict(xgboost.DMatrix(X[:10]), **{flag: True})
        t_xgb, theirs_values = timed(xgb_booster.predict, dmatrix,
                                     **{flag: True})
        t_ours, our_values = timed(booster.predict, X, **{flag: True})
        gap = float(np.abs(our_values - theirs_values).max()
                    / np.abs(theirs_values).max())
        rows.append([case, what, f"{leaves:.0f}", X.shape[0], f"{t_ours:.3f}",
                     f"{t_xgb:.3f}", f"{t_ours / t_xgb:.2f}",
                     f"{1e3 * t_xgb / X.shape[0]:.2f}", f"{gap:.1e}"])
    return rows


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES),
                        choices=list(CASES))
    parser.add_argument("--n-train", type=int, default=20_000)
    parser.add_argument("--n-features", type=int, default=50)
    parser.add_argument("--n-explain", type=int, default=300)
    parser.add_argument("--n-jobs", type=int, default=2)
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
                     n_test=1, random_state=0)
    rows = []
    for case in args.cases:
        rows += run_case(case, args, data)
    print(format_table(["case", "output", "leaves/tree", "rows",
                        "skboost s", "xgboost s", "ratio", "xgboost ms/row",
                        "max |diff| / max |value|"], rows))


if __name__ == "__main__":
    sys.exit(main())
