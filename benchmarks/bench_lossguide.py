"""Best-first (lossguide) growth without a leaf or depth limit, side by side
with XGBoost, LightGBM and hessboost.

    python benchmarks/bench_lossguide.py                  # 30,000 x 20, 10 trees, both tasks
    python benchmarks/bench_lossguide.py --task classification --repeat 3
    python benchmarks/bench_lossguide.py --baseline ../before --only skboost xgboost

Every library grows leaf-wise until no split is worth making: skboost and
XGBoost with ``grow_policy="lossguide"``, ``max_leaves=0``, ``max_depth=0``
(hist, 256 bins, learning rate 0.1, L2 regularisation 1,
``min_child_weight`` 1, 2 threads); hessboost the same but
``max_leaves=4096`` (it refuses lossguide without a bound); LightGBM
(always leaf-wise) with
``num_leaves=4096``, no depth limit, ``min_child_weight`` 1 and
``min_child_samples`` 0 (the trees have about 750 leaves, so 4,096 does not
bind; LightGBM's largest ``num_leaves``, 131,072, makes it reserve
histograms for that many leaves: 4.8 GB). Trees this deep have about 1,500
nodes each on 30,000 rows: the case measures the work per node more than
the histogram passes. Each fit runs in its own fresh process (see
benchmarks/README.md); ratios are to XGBoost.
"""

import sys

from _common import Contender, base_parser, comparison_table, run_tasks


def contenders(task, args):
    common = dict(n_estimators=args.n_rounds, learning_rate=0.1,
                  n_jobs=args.n_jobs)
    suffix = "Classifier" if task == "classification" else "Regressor"
    lossguide = dict(common, tree_method="hist", max_bin=256, reg_lambda=1.0,
                     grow_policy="lossguide", max_leaves=0, max_depth=0,
                     min_child_weight=1.0)
    return [
        Contender("skboost", "lossguide", "skboost", "Boost" + suffix,
                  lossguide),
        Contender("xgboost", "lossguide", "xgboost", "XGB" + suffix,
                  lossguide),
        # hessboost refuses lossguide without a bound: 4,096 leaves, as
        # LightGBM's, which the trees do not reach
        Contender("hessboost", "lossguide", "hessboost.sklearn",
                  "Hessboost" + suffix, dict(lossguide, max_leaves=4096)),
        Contender("lightgbm", "leaf-wise", "lightgbm", "LGBM" + suffix,
                  dict(common, num_leaves=4096, max_depth=-1, max_bin=256,
                       reg_lambda=1.0, min_child_weight=1.0,
                       min_child_samples=0, verbose=-1)),
    ]


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=30_000,
                         task="both")
    parser.set_defaults(n_features=20, n_rounds=10, max_depth=0)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    run_tasks(args, lambda task, data: contenders(task, args),
              comparison_table)


if __name__ == "__main__":
    sys.exit(main())
