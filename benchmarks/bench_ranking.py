"""LambdaMART ranking side by side: skboost ``rank:ndcg`` against XGBoost's
``XGBRanker`` (``rank:ndcg``), hessboost's ``HessboostRanker``
(``rank:ndcg``, XGBoost's parameters) and LightGBM's ``LGBMRanker``
(``lambdarank``).

    python benchmarks/bench_ranking.py                        # 8,000 queries, 60 trees of depth 6
    python benchmarks/bench_ranking.py --repeat 3 --json benchmarks/results/ranking.json
    python benchmarks/bench_ranking.py --n-queries 1000 --n-rounds 10   # smoke run
    python benchmarks/bench_ranking.py --baseline ../before --only skboost lightgbm

Data: ``--n-queries`` training queries and a quarter as many test queries,
each of 10 to 50 documents (uniform), 50 standard-normal float32 features.
A document's relevance (0-4) is its latent score (a linear part of ten
features, a sine, a product of two features and Gaussian noise) cut at the
50th, 75th, 90th and 97th percentiles, so most documents are irrelevant and
few are perfect, as in LETOR data.

Every library: 60 rounds, ``max_depth=6``, 256 bins, L2 regularisation 1,
2 threads, its default pairs (skboost and XGBoost: the top 32 ranks against
every lower one; LightGBM: the top 30); LightGBM ``num_leaves=63``,
``min_child_weight=1``, ``min_child_samples=0`` so that depth binds as for
the others. Learning rates: 0.6 for skboost, XGBoost and hessboost
(``--learning-rate``), 0.3 for LightGBM (``--lightgbm-learning-rate``).
XGBoost's LambdaMART hessian is ``2 sigma (1 - sigma) |delta|``,
LightGBM's ``sigma (1 - sigma) |delta|``, so at one learning rate XGBoost's
and skboost's leaf values are about half of LightGBM's; with twice the rate
the three reach the same test NDCG@10 in 60 rounds (0.955 on two data
seeds; at 0.3 for all, skboost and XGBoost reach about 0.942 and LightGBM
0.954). The fit time hardly depends on the rate. Each fit runs in a fresh process (see
``_common.py``); the metric is NDCG@10 on the test queries (gains
``2^y - 1``, a query without a relevant document counts 1, as in XGBoost).
"""

import argparse
import os
import sys

import numpy as np
from _common import (Contender, PeakRSS, Timer, environment, format_table,
                     run_contenders, select, write_json)

N_FEATURES = 50
MIN_DOCS, MAX_DOCS = 10, 50
CUTS = (50, 75, 90, 97)   # percentiles of the latent score: labels 1..4


def make_queries(n_queries, rng):
    """Rows grouped by query: X (float32), labels 0-4, query id per row."""
    sizes = rng.integers(MIN_DOCS, MAX_DOCS + 1, size=n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.standard_normal((qid.shape[0], N_FEATURES)).astype(np.float32)
    weights = np.linspace(1.0, 0.1, 10)
    latent = (X[:, :10] @ weights + np.sin(2.0 * X[:, 10])
              + X[:, 11] * X[:, 12] + 0.5 * rng.standard_normal(qid.shape[0]))
    return X, latent, qid


def make_data(n_queries, seed=0):
    """Training and test queries drawn together (labels cut at the same
    percentiles of the latent score)."""
    rng = np.random.default_rng(seed)
    X, latent, qid = make_queries(n_queries + max(n_queries // 4, 1), rng)
    y = np.digitize(latent, np.percentile(latent, CUTS)).astype(np.float64)
    split = np.searchsorted(qid, n_queries)
    return {"X_train": X[:split], "y_train": y[:split],
            "qid_train": qid[:split], "X_test": X[split:],
            "y_test": y[split:], "qid_test": qid[split:] - n_queries}


def ndcg_at(y, score, qid, k=10):
    """Mean NDCG@k over queries, gains 2^y - 1, discount 1/log2(2 + rank);
    a query without a relevant document counts 1. Ties in ``score`` are
    ranked pessimistically (the lower label first), so that a model cannot
    gain from the order of equal scores."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    ends = np.r_[starts[1:], qid.shape[0]]
    discount = 1.0 / np.log2(2.0 + np.arange(k))
    total = 0.0
    for begin, end in zip(starts, ends):
        labels, scores = y[begin:end], score[begin:end]
        order = np.lexsort((labels, -scores))
        gains = 2.0 ** labels - 1.0
        ideal = np.sort(gains)[::-1][:k] @ discount[:min(k, end - begin)]
        top = gains[order][:k] @ discount[:min(k, end - begin)]
        total += top / ideal if ideal > 0 else 1.0
    return total / starts.shape[0]


def _sizes(qid):
    return np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))


def _fit(estimator, library, X, y, qid):
    if library == "lightgbm":   # group sizes, not query ids
        return estimator.fit(X, y, group=_sizes(qid))
    return estimator.fit(X, y, qid=qid)


def _load(data_dir):
    return {name[:-4]: np.load(os.path.join(data_dir, name))
            for name in os.listdir(data_dir) if name.endswith(".npy")}


def run_ranking_child(contender, data_dir, task):
    """Body of the spawned child (``_common.run_once``): warm up on the
    first queries, then time ``fit`` and ``predict`` and score NDCG@10."""
    data = _load(data_dir)
    n_warm = int(np.searchsorted(data["qid_train"], 30))
    warm = contender.build().set_params(n_estimators=2)
    _fit(warm, contender.library, data["X_train"][:n_warm],
         data["y_train"][:n_warm], data["qid_train"][:n_warm])
    warm.predict(data["X_test"][:n_warm])
    estimator = contender.build()
    with PeakRSS() as fit_mem, Timer() as fit_time:
        _fit(estimator, contender.library, data["X_train"], data["y_train"],
             data["qid_train"])
    with Timer() as predict_time:
        prediction = np.asarray(estimator.predict(data["X_test"]),
                                dtype=np.float64)
    return {
        "fit_s": fit_time.wall, "fit_cores": fit_time.cores,
        "fit_steal_s": fit_time.steal,
        "fit_other_cores": fit_time.other_cores,
        "predict_s": predict_time.wall, "fit_peak_mb": fit_mem.growth_mb,
        "predict_peak_mb": 0.0,
        "metric": ndcg_at(data["y_test"], prediction, data["qid_test"]),
        "prediction": prediction,
    }


def contenders(args):
    common = dict(n_estimators=args.n_rounds, max_depth=args.max_depth,
                  learning_rate=args.learning_rate, reg_lambda=1.0,
                  n_jobs=args.n_jobs)
    lightgbm_rate = dict(learning_rate=args.lightgbm_learning_rate)
    return [
        Contender("skboost", "rank:ndcg", "skboost", "BoostRanker",
                  dict(common, objective="rank:ndcg", tree_method="hist",
                       max_bin=256)),
        Contender("xgboost", "rank:ndcg", "xgboost", "XGBRanker",
                  dict(common, objective="rank:ndcg", tree_method="hist",
                       max_bin=256)),
        Contender("hessboost", "rank:ndcg", "hessboost.sklearn",
                  "HessboostRanker",
                  dict(common, objective="rank:ndcg", tree_method="hist",
                       max_bin=256)),
        Contender("lightgbm", "lambdarank", "lightgbm", "LGBMRanker",
                  dict(common, **lightgbm_rate, objective="lambdarank",
                       num_leaves=2 ** args.max_depth - 1, max_bin=255,
                       min_child_weight=1.0, min_child_samples=0,
                       verbose=-1)),
    ]


def ranking_table(results):
    """Fit time, NDCG@10, and the fit time as a ratio to each peer and to
    the fastest peer."""
    peers = [r for r in results
             if r.library in ("xgboost", "lightgbm", "hessboost")]
    fastest = min(peers, key=lambda r: r.fit_s) if peers else None
    by = {r.library: r for r in peers}
    header = ["library", "objective", "fit s", "fit CPU", "others",
              "predict s", "peak MB", "NDCG@10", "/ xgboost", "/ lightgbm",
              "/ hessboost", "/ fastest peer"]
    rows = [[r.library, r.method, r.fit_s, r.fit_cores, r.fit_other_cores,
             r.predict_s, r.peak_mb, f"{r.metric:.5f}"]
            + [r.fit_s / by[name].fit_s if name in by else None
               for name in ("xgboost", "lightgbm", "hessboost")]
            + [r.fit_s / fastest.fit_s if fastest else None]
            for r in results]
    return format_table(header, rows)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-queries", type=int, default=8000)
    parser.add_argument("--n-rounds", type=int, default=60)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--learning-rate", type=float, default=0.6,
                        help="of skboost and XGBoost")
    parser.add_argument("--lightgbm-learning-rate", type=float, default=0.3)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--only", nargs="*", metavar="LIBRARY")
    parser.add_argument("--baseline", metavar="PATH")
    args = parser.parse_args(argv)
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    return args


def main(argv=None):
    args = parse_args(argv)
    data = make_data(args.n_queries, args.seed)
    print("  ".join(f"{k} {v}" for k, v in environment(args.baseline).items()))
    print(f"{args.n_queries} training queries ({data['X_train'].shape[0]} "
          f"rows) x {N_FEATURES} features, {args.n_rounds} rounds, "
          f"max_depth {args.max_depth}, learning rate {args.learning_rate} "
          f"(LightGBM {args.lightgbm_learning_rate}), "
          f"n_jobs {args.n_jobs}, repeat {args.repeat}", flush=True)
    results = run_contenders(select(contenders(args), args), data, "ranking",
                             args.repeat, child=run_ranking_child,
                             metric_name="NDCG@10")
    print("\nranking (NDCG@10 on the test queries)\n" + ranking_table(results))
    base = {r.method: r for r in results if r.library == "skboost-base"}
    for r in results:
        if r.library == "skboost" and r.method in base:
            print(f"skboost {r.method}: fit "
                  f"{r.fit_s / base[r.method].fit_s:.2f}x baseline")
    if args.json:
        write_json(args.json, args, results, metric_name="NDCG@10")
    return results


if __name__ == "__main__":
    sys.exit(main() and 0)
