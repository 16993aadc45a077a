"""Sparse input side by side: skboost (exact, hist, approx), XGBoost hist,
LightGBM and hessboost hist on a scipy.sparse CSR matrix.

The case of issue 4: 200,000 x 5,000 CSR with 0.5% of the entries stored
(standard normal values), a logistic target drawn from 10% of the columns,
50,000 test rows; 100 rounds, depth 8, learning rate 0.1, 256 bins,
lambda 1, 2 threads. Absent entries are missing for every library.
scikit-learn's HistGradientBoosting does not take sparse input.
"""

import sys

import numpy as np

from _common import (Contender, base_parser, fit_ratio_table,
                     run_classification_case)


def make_sparse_data(n_rows, n_features, density=0.005, n_test=50_000,
                     informative=0.1, random_state=0):
    """CSR float32 data and a logistic target from the first
    ``informative`` fraction of the columns (absent entries count 0)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(random_state)
    n_total = n_rows + n_test
    X = sp.random(n_total, n_features, density=density, format="csr",
                  dtype=np.float32, random_state=rng,
                  data_rvs=rng.standard_normal)
    n_informative = max(1, int(informative * n_features))
    beta = rng.normal(size=n_informative)
    logit = X[:, :n_informative] @ beta
    logit = 3.0 * logit / logit.std()
    y = (rng.random(n_total) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return {"X_train": X[:n_rows], "y_train": y[:n_rows],
            "X_test": X[n_rows:], "y_test": y[n_rows:]}


SKBOOST_METHODS = ["exact", "hist", "approx"]


def contenders(args):
    common = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, n_jobs=args.n_jobs, reg_lambda=1.0)
    out = [Contender("skboost", method, "skboost", "BoostClassifier",
                     dict(common, tree_method=method, max_bin=256))
           for method in args.methods]
    out.append(Contender("xgboost", "hist", "xgboost", "XGBClassifier",
                         dict(common, tree_method="hist", max_bin=256)))
    out.append(Contender(
        "lightgbm", "hist", "lightgbm", "LGBMClassifier",
        dict(common, num_leaves=2 ** args.max_depth - 1, max_bin=256,
             min_child_weight=1.0, min_child_samples=0, verbose=-1)))
    # hessboost (Rust; XGBoost's parameter names; the bench extra) reads
    # scipy.sparse with absent entries missing
    out.append(Contender("hessboost", "hist", "hessboost.sklearn",
                         "HessboostClassifier",
                         dict(common, tree_method="hist", max_bin=256)))
    return out


def comparison_table(results):
    return fit_ratio_table(results, {
        "fit / xgb hist": ("xgboost", "hist"),
        "fit / lightgbm": ("lightgbm", "hist"),
        "fit / hessboost": ("hessboost", "hist")})


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=200_000,
                         task="classification")
    parser.set_defaults(n_features=5000)
    parser.add_argument("--density", type=float, default=0.005)
    parser.add_argument("--methods", nargs="+", metavar="METHOD",
                        choices=SKBOOST_METHODS, default=SKBOOST_METHODS,
                        help="skboost's tree methods to run (default: all; "
                             "e.g. --methods hist with --only skboost "
                             "lightgbm for a short run of the hist case)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    setup = (f"{args.n_rows} train rows x {args.n_features} features, "
             f"density {args.density}, {args.n_rounds} rounds, max_depth "
             f"{args.max_depth}, n_jobs {args.n_jobs}, repeat {args.repeat}")
    data = make_sparse_data(args.n_rows, args.n_features, args.density)
    run_classification_case(args, setup, data, contenders(args),
                            comparison_table)


if __name__ == "__main__":
    sys.exit(main())
