"""skboost's exact greedy method against XGBoost's, side by side.

    python benchmarks/bench_exact.py                      # 200k x 28, 100 trees
    python benchmarks/bench_exact.py --task both --repeat 3
    python benchmarks/bench_exact.py --n-rows 20000 --n-rounds 10   # smoke run

Both libraries get the same data and the same parameters (tree_method="exact",
n_estimators, max_depth, learning_rate=0.1, reg_lambda=1, n_jobs); each is
fitted in its own fresh process. See benchmarks/README.md for what is measured.
"""

import sys

from _common import Contender, base_parser, comparison_table, run_tasks


def contenders(task, args):
    params = dict(tree_method="exact", n_estimators=args.n_rounds,
                  max_depth=args.max_depth, learning_rate=0.1, reg_lambda=1.0,
                  n_jobs=args.n_jobs)
    suffix = "Classifier" if task == "classification" else "Regressor"
    return [
        Contender("skboost", "exact", "skboost", "Boost" + suffix, params),
        Contender("xgboost", "exact", "xgboost", "XGB" + suffix, params),
    ]


def parse_args(argv=None):
    return base_parser(__doc__.splitlines()[0], n_rows=200_000,
                       task="classification").parse_args(argv)


def ratio_table(results, task):
    return ("ratios = library / xgboost\n"
            + comparison_table(results, task))


def main(argv=None):
    args = parse_args(argv)
    run_tasks(args, lambda task, data: contenders(task, args), ratio_table)


if __name__ == "__main__":
    sys.exit(main())
