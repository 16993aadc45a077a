"""Monotone and interaction constraints side by side with XGBoost, LightGBM
and hessboost: the cost of the constraints in fit time and in accuracy.

    python benchmarks/bench_constraints.py                      # 200,000 x 28, both tasks
    python benchmarks/bench_constraints.py --n-rows 50000 --n-rounds 20   # smoke run

Each library fits the same data three ways with the hist method (and the
exact method for skboost and XGBoost, unless ``--skip-exact``): without
constraints, with monotone constraints on the first eight features (their
directions from the sign of their correlation with the training target, so
the constraints are plausible but not true), and with interaction
constraints (the features in four disjoint sets of seven). 50 rounds,
max_depth 8, learning rate 0.1, 256 bins, 2 threads; LightGBM num_leaves
255 (depth binding), its default ``"basic"`` monotone method; hessboost
(hist only) XGBoost's parameters. Each fit runs
in its own fresh process. Ratios are to XGBoost's fit with the same method
and constraint.
"""

import sys

import numpy as np
from _common import METRIC_NAME, Contender, base_parser, format_table, run_tasks

N_CONSTRAINED = 8
N_SETS = 4


def monotone_directions(data):
    """-1/0/+1 per feature: the sign of the first features' correlation
    with the training target, 0 for the others."""
    X, y = data["X_train"], data["y_train"].astype(np.float64)
    directions = np.zeros(X.shape[1], dtype=int)
    for f in range(min(N_CONSTRAINED, X.shape[1])):
        directions[f] = 1 if np.corrcoef(X[:, f], y)[0, 1] >= 0 else -1
    return tuple(int(d) for d in directions)


def interaction_sets(n_features):
    return [[int(f) for f in s]
            for s in np.array_split(np.arange(n_features), N_SETS)]


def contenders(task, data, args):
    suffix = "Classifier" if task == "classification" else "Regressor"
    monotone = monotone_directions(data)
    sets = interaction_sets(data["X_train"].shape[1])
    variants = {"none": {}, "monotone": dict(monotone_constraints=monotone),
                "interaction": dict(interaction_constraints=sets)}
    common = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, n_jobs=args.n_jobs, reg_lambda=1.0)
    methods = ["hist"] + ([] if args.skip_exact else ["exact"])
    out = []
    for method in methods:
        for name, constraint in variants.items():
            params = dict(common, tree_method=method, **constraint)
            if method == "hist":
                params["max_bin"] = 256
            label = f"{method}/{name}"
            out.append(Contender("skboost", label, "skboost",
                                 "Boost" + suffix, params))
            xgb_params = dict(params)
            if name == "interaction":   # its scikit-learn wrapper: a string
                xgb_params["interaction_constraints"] = str(sets)
            out.append(Contender("xgboost", label, "xgboost", "XGB" + suffix,
                                 xgb_params))
    for name, constraint in variants.items():
        # hessboost (XGBoost's parameter names): hist only
        out.append(Contender(
            "hessboost", f"hist/{name}", "hessboost.sklearn",
            "Hessboost" + suffix,
            dict(common, tree_method="hist", max_bin=256, **constraint)))
        out.append(Contender(
            "lightgbm", f"hist/{name}", "lightgbm", "LGBM" + suffix,
            dict(common, num_leaves=2 ** args.max_depth - 1, max_bin=256,
                 min_child_weight=1.0, min_child_samples=0, verbose=-1,
                 **constraint)))
    return out


def comparison_table(results, task):
    xgb = {r.method: r for r in results if r.library == "xgboost"}
    header = ["library", "method/constraint", "fit s", METRIC_NAME[task],
              "fit / xgb same", "fit / own unconstrained"]
    unconstrained = {(r.library, r.method.split("/")[0]): r for r in results
                     if r.method.endswith("/none")}
    rows = []
    for r in results:
        same = xgb.get(r.method)
        base = unconstrained.get((r.library, r.method.split("/")[0]))
        rows.append([r.library, r.method, r.fit_s, f"{r.metric:.6f}",
                     r.fit_s / same.fit_s if same else None,
                     r.fit_s / base.fit_s if base else None])
    return format_table(header, rows)


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=200_000,
                         task="both")
    parser.add_argument("--skip-exact", action="store_true",
                        help="leave out tree_method='exact'")
    parser.set_defaults(n_rounds=50)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    run_tasks(args, lambda task, data: contenders(task, data, args), comparison_table)


if __name__ == "__main__":
    sys.exit(main())
