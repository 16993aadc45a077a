"""Multi-output regression and random forests: skboost against XGBoost,
side by side in one process.

    python benchmarks/bench_multi_output.py                 # 1 thread
    python benchmarks/bench_multi_output.py --n-jobs 2 --rows 100000

Cases (``hist``, depth 6, learning rate 0.1, synthetic data: 20 features,
``--targets`` targets that share some features, a quarter of the rows held
out): one tree per target and round (``one_output_per_tree``, 100 rounds),
vector-leaf trees (``multi_output_tree``, 100 rounds), and a random forest
of 100 trees on the first target (``BoostRFRegressor`` vs
``XGBRFRegressor``). Reported: fit time of each library, the ratio
skboost / XGBoost, and the held-out RMSE of each.
"""

import argparse
import time

import numpy as np


def make_data(n_rows, n_targets, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 20)).astype(np.float32)
    columns = [np.sin(2 * X[:, t % 20]) + X[:, (t + 1) % 20] * X[:, 5]
               + 0.1 * rng.normal(size=n_rows) for t in range(n_targets)]
    return X, np.column_stack(columns)


def timed_fit(model, X, Y):
    start = time.perf_counter()
    model.fit(X, Y)
    return time.perf_counter() - start


def run_case(name, ours, theirs, X, Y, split):
    """Fit both models, print the line of the case and return its two
    records (library, method, task, fit_s, metric = test RMSE)."""
    rmse = []
    times = []
    for model in (ours, theirs):
        times.append(timed_fit(model, X[:split], Y[:split]))
        pred = model.predict(X[split:]).reshape(Y[split:].shape)
        rmse.append(float(np.sqrt(np.mean((pred - Y[split:]) ** 2))))
    print(f"{name:22s} skboost {times[0]:7.2f} s  XGBoost {times[1]:7.2f} s  "
          f"ratio {times[0] / times[1]:5.2f}   RMSE {rmse[0]:.4f} vs "
          f"{rmse[1]:.4f}")
    return [dict(library=library, method=name, task="regression",
                 fit_s=seconds, metric=error)
            for library, seconds, error in zip(("skboost", "xgboost"),
                                               times, rmse)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--targets", type=int, default=4)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--json", metavar="PATH",
                        help="also write the results to this JSON file")
    args = parser.parse_args()
    import xgboost
    from skboost import BoostRegressor, BoostRFRegressor

    X, Y = make_data(args.rows, args.targets)
    split = 3 * args.rows // 4
    common = dict(n_estimators=100, max_depth=6, learning_rate=0.1,
                  tree_method="hist", n_jobs=args.n_jobs)
    records = []
    for strategy in ("one_output_per_tree", "multi_output_tree"):
        records += run_case(strategy,
                 BoostRegressor(multi_strategy=strategy, **common),
                 xgboost.XGBRegressor(multi_strategy=strategy, **common),
                 X, Y, split)
    forest = dict(n_estimators=100, max_depth=6, random_state=0,
                  n_jobs=args.n_jobs)
    records += run_case("random forest", BoostRFRegressor(**forest),
                        xgboost.XGBRFRegressor(**forest), X, Y[:, 0], split)
    if args.json:
        from _common import write_records
        write_records(args.json, args, records)


if __name__ == "__main__":
    main()
