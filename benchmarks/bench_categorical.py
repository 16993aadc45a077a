"""Native categorical features side by side: skboost, XGBoost
(``enable_categorical``), LightGBM, hessboost and scikit-learn on
high-cardinality categorical columns.

The case of issue 7: 500,000 training rows (50,000 test rows) with four
categorical columns of 100, 1,000, 10,000 and 30,000 categories (Zipf-like
frequencies: a few frequent categories, a long tail of rare ones, 2% of
the values missing) and six standard normal columns; a logistic target from
a random effect per category plus a linear numeric part. 100 rounds, depth
8, learning rate 0.1, lambda 1, 2 threads; every library's default
categorical settings (skboost and XGBoost: ``max_cat_to_onehot=4``,
``max_cat_threshold=64``). Categories reach each library as integer codes
in a float32 matrix, named categorical its own way: skboost
``categorical_features``, XGBoost ``feature_types="c"``, LightGBM
``categorical_feature`` at fit, hessboost (which takes categorical
features from a DataFrame's ``category`` columns only) a pandas DataFrame
built from the codes inside ``fit`` and ``predict_proba``
(``Categorical.from_codes``: a few milliseconds, inside its timed fit).
scikit-learn's HistGradientBoosting takes at
most 255 categories per feature: it gets the 100-category column as
categorical and the others as ordinal numbers ("cat <= 255" in the table).
"""

import sys

import numpy as np

from _common import (Contender, base_parser, fit_ratio_table,
                     run_classification_case)

CARDINALITIES = (100, 1_000, 10_000, 30_000)
N_NUMERIC = 6
MISSING = 0.02


def make_categorical_data(n_rows, n_test=50_000, random_state=0):
    """float32 X (category codes first, NaN = missing, then the numeric
    columns) and a binary target."""
    rng = np.random.default_rng(random_state)
    n_total = n_rows + n_test
    columns, logit = [], np.zeros(n_total)
    for k in CARDINALITIES:
        frequency = 1.0 / (np.arange(k) + 10.0)
        codes = rng.choice(k, size=n_total, p=frequency / frequency.sum())
        effect = rng.normal(scale=0.8, size=k)
        logit += effect[codes]
        codes = codes.astype(np.float32)
        codes[rng.random(n_total) < MISSING] = np.nan
        columns.append(codes)
    numeric = rng.normal(size=(n_total, N_NUMERIC)).astype(np.float32)
    logit += numeric @ rng.normal(scale=0.5, size=N_NUMERIC)
    X = np.ascontiguousarray(np.column_stack(columns + [numeric]),
                             dtype=np.float32)
    y = (rng.random(n_total) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return {"X_train": X[:n_rows], "y_train": y[:n_rows],
            "X_test": X[n_rows:], "y_test": y[n_rows:]}


def _categorical_columns():
    return list(range(len(CARDINALITIES)))


try:
    from lightgbm import LGBMClassifier

    class LGBMCategoricalClassifier(LGBMClassifier):
        """LightGBM told at fit which columns are categorical."""

        def fit(self, X, y, **kwargs):
            return super().fit(X, y, categorical_feature=_categorical_columns(),
                               **kwargs)
except ImportError:   # pragma: no cover - LightGBM is optional
    pass


try:
    import pandas as pd
    from hessboost.sklearn import HessboostClassifier

    def _category_frame(X):
        """X's columns as a DataFrame, the categorical ones as pandas
        ``category`` columns of codes 0 .. k-1 (NaN: missing)."""
        columns = {}
        for j in range(X.shape[1]):
            if j < len(CARDINALITIES):
                codes = np.nan_to_num(X[:, j], nan=-1).astype(np.int32)
                columns[f"c{j}"] = pd.Categorical.from_codes(
                    codes, categories=np.arange(CARDINALITIES[j]))
            else:
                columns[f"x{j}"] = X[:, j]
        return pd.DataFrame(columns)

    class HessboostCategoricalClassifier(HessboostClassifier):
        """hessboost given the categorical columns as ``category``
        columns of a DataFrame."""

        def fit(self, X, y, **kwargs):
            return super().fit(_category_frame(X), y, **kwargs)

        def predict_proba(self, X, *args, **kwargs):
            return super().predict_proba(_category_frame(X), *args, **kwargs)
except ImportError:   # pragma: no cover - hessboost is optional
    pass


def contenders(args):
    n_categorical = len(CARDINALITIES)
    common = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=0.1, n_jobs=args.n_jobs, reg_lambda=1.0)
    out = [Contender("skboost", "hist", "skboost", "BoostClassifier",
                     dict(common, tree_method="hist",
                          categorical_features=_categorical_columns()))]
    out.append(Contender(
        "xgboost", "hist", "xgboost", "XGBClassifier",
        dict(common, tree_method="hist", enable_categorical=True,
             feature_types=["c"] * n_categorical + ["q"] * N_NUMERIC)))
    out.append(Contender(
        "lightgbm", "hist", "bench_categorical", "LGBMCategoricalClassifier",
        dict(common, num_leaves=2 ** args.max_depth - 1, max_bin=256,
             min_child_weight=1.0, min_child_samples=0, verbose=-1)))
    out.append(Contender(
        "hessboost", "hist", "bench_categorical",
        "HessboostCategoricalClassifier",
        dict(common, tree_method="hist", max_bin=256,
             params={"max_cat_to_onehot": 4, "max_cat_threshold": 64})))
    small = [k <= 255 for k in CARDINALITIES] + [False] * N_NUMERIC
    out.append(Contender(
        "sklearn", "hist, cat <= 255", "_adapters", "HGBClassifier",
        dict(max_iter=args.n_rounds, max_depth=args.max_depth,
             learning_rate=0.1, max_bins=255, l2_regularization=1.0,
             max_leaf_nodes=None, early_stopping=False,
             categorical_features=small)))
    return out


def comparison_table(results):
    """Fit ratios to XGBoost's and LightGBM's (one method each here)."""
    methods = {r.library: r.method for r in results}
    return fit_ratio_table(results, {
        "fit / xgb": ("xgboost", methods.get("xgboost")),
        "fit / lightgbm": ("lightgbm", methods.get("lightgbm")),
        "fit / hessboost": ("hessboost", methods.get("hessboost"))})


def parse_args(argv=None):
    parser = base_parser(__doc__.splitlines()[0], n_rows=500_000,
                         task="classification")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    setup = (f"{args.n_rows} train rows, categorical columns of "
             f"{', '.join(map(str, CARDINALITIES))} categories + {N_NUMERIC} "
             f"numeric, {args.n_rounds} rounds, max_depth {args.max_depth}, "
             f"n_jobs {args.n_jobs}, repeat {args.repeat}")
    run_classification_case(args, setup, make_categorical_data(args.n_rows),
                            contenders(args), comparison_table)


if __name__ == "__main__":
    sys.exit(main())
