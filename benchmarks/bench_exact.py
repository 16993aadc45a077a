"""skboost's exact greedy method against XGBoost's, side by side.

    python benchmarks/bench_exact.py                      # 200k x 28, 100 trees
    python benchmarks/bench_exact.py --task both --repeat 3
    python benchmarks/bench_exact.py --n-rows 20000 --n-rounds 10   # smoke run

Both libraries get the same data and the same parameters (tree_method="exact",
n_estimators, max_depth, learning_rate=0.1, reg_lambda=1, n_jobs); each is
fitted in its own fresh process. See benchmarks/README.md for what is measured.
"""

import sys

from _common import (METRIC_NAME, Contender, base_parser, baseline_summary,
                     comparison_table, environment, make_data, run_contenders,
                     select, write_json)


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


def main(argv=None):
    args = parse_args(argv)
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
        results = run_contenders(select(contenders(task, args), args), data,
                                 task, args.repeat)
        all_results += results
        tables.append(f"{task} ({METRIC_NAME[task]} on 50,000 test rows; "
                      "ratios = library / xgboost)\n"
                      + comparison_table(results, task)
                      + baseline_summary(results))
    print("\n" + "\n\n".join(tables))
    if args.json:
        write_json(args.json, args, all_results)


if __name__ == "__main__":
    sys.exit(main())
