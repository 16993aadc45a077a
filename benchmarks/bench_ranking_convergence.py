"""LambdaMART at convergence: test NDCG@10 of skboost, XGBoost and LightGBM
rankers trained until early stopping on the NDCG@10 of a validation set.

    python benchmarks/bench_ranking_convergence.py --json \
        benchmarks/results/ranking_convergence/ranking_convergence.json
    python benchmarks/bench_ranking_convergence.py --n-queries 1000 --seeds 0   # smoke run

An accuracy benchmark, not a timed one (run it beside other work). Two
cases:

- ``letor-like``: ``bench_ranking.py``'s generator (50 features, 10 to 50
  documents a query, graded labels 0-4 cut at the 50th, 75th, 90th and 97th
  percentiles of a latent score), ``--n-queries`` training queries and a
  quarter as many validation and test queries each, one data set per
  ``--seeds`` entry;
- ``letor-sample``: the LETOR sample bundled in ``data/`` (LightGBM's
  ``rank.train``/``rank.test``, 300 sparse features): per seed, a fifth of
  the training queries (drawn by the seed, ``--sample-seeds``) is the
  validation set, the test set is ``rank.test``.

Every contender fits up to ``--max-rounds`` rounds with early stopping
after ``--patience`` rounds without a better validation NDCG@10 (each
library's own metric) and is scored on the test queries with one NDCG@10
(``bench_ranking.ndcg_at``: gains ``2^y - 1``, ties ranked pessimistically,
a query without a relevant document counts 1). Contenders: each library's
defaults (skboost's and XGBoost's: depth-wise trees of depth 6, L2 1,
learning rate 0.3; LightGBM's: 31 leaves grown best first, no L2, learning
rate 0.1), the bar the ranking guide compares with; skboost with
LightGBM's trees and truncation level at a learning rate of 0.1 on
skboost's hessian scale (``LIGHTGBM_TREES``: the option the ranking guide
names); and, for the record, LightGBM at the same lower rate. The result
is the mean over the seeds and its standard error.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from bench_ranking import CUTS, _sizes, make_queries, ndcg_at

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# LightGBM's trees for LambdaMART, on skboost's (XGBoost's) hessian scale:
# LightGBM's pair hessian is sigma (1 - sigma) |delta|, XGBoost's twice
# that, so its learning rate, L2 and min_sum_hessian_in_leaf are XGBoost's
# halved. The option keeps LightGBM's 31 leaves grown best first with no
# depth limit, no L2 and its truncation level 30 (skboost's top-k), at a
# learning rate of 0.1 (LightGBM's 0.05) with skboost's default
# min_child_weight 1 (LightGBM's min_sum_hessian_in_leaf 0.5): found one
# variant at a time, the lower rate gains on both cases, and the larger
# minimum hessian keeps the small sample's leaves from overfitting (the role
# of LightGBM's min_data_in_leaf).
LIGHTGBM_TREES = dict(grow_policy="lossguide", max_leaves=31, max_depth=0,
                      learning_rate=0.1, reg_lambda=0.0,
                      lambdarank_num_pair_per_sample=30)

CONTENDERS = [
    # (name shown, library, parameters); the peers' defaults are the bar
    ("skboost (defaults)", "skboost", {}),
    ("skboost (LightGBM's trees, rate 0.1)", "skboost", LIGHTGBM_TREES),
    ("XGBoost (defaults)", "xgboost", {}),
    ("LightGBM (defaults)", "lightgbm", {}),
    # the same lower rate for LightGBM, for the record (not the bar)
    ("LightGBM (learning rate 0.05)", "lightgbm", {"learning_rate": 0.05}),
]


def letor_like(n_queries, seed):
    """Training, validation and test queries of one generated data set
    (labels cut at the same percentiles of the latent score)."""
    rng = np.random.default_rng(seed)
    n_other = max(n_queries // 4, 1)
    X, latent, qid = make_queries(n_queries + 2 * n_other, rng)
    y = np.digitize(latent, np.percentile(latent, CUTS)).astype(np.float64)
    cut = np.searchsorted(qid, [n_queries, n_queries + n_other])
    parts = np.split(np.arange(qid.shape[0]), cut)
    return [(X[rows], y[rows], qid[rows] - qid[rows][0]) for rows in parts]


def _load_letor(name):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(os.path.join(ROOT, "data", f"{name}.gz"),
                              zero_based=True, n_features=301)
    sizes = np.loadtxt(os.path.join(ROOT, "data", f"{name}.query.gz"),
                       dtype=np.int64)
    return (X.toarray().astype(np.float32), y,
            np.repeat(np.arange(sizes.shape[0]), sizes))


def letor_sample(seed):
    """The bundled LETOR sample: a fifth of the training queries (drawn by
    ``seed``) for validation, rank.test for the test."""
    X, y, qid = _load_letor("rank.train")
    n_queries = int(qid.max()) + 1
    valid = np.random.default_rng(seed).permutation(n_queries)[
        :n_queries // 5]
    in_valid = np.isin(qid, valid)
    parts = []
    for rows in (~in_valid, in_valid):
        _, renumbered = np.unique(qid[rows], return_inverse=True)
        parts.append((X[rows], y[rows], renumbered))
    return parts + [_load_letor("rank.test")]


def fit_and_score(library, params, parts, args):
    """Test NDCG@10 and the number of rounds early stopping kept."""
    (X, y, qid), (X_valid, y_valid, qid_valid), (X_test, y_test,
                                                 qid_test) = parts
    common = dict(n_estimators=args.max_rounds, n_jobs=args.n_jobs)
    if library == "lightgbm":
        import lightgbm

        model = lightgbm.LGBMRanker(**common, verbose=-1, **params)
        model.fit(X, y, group=_sizes(qid),
                  eval_set=[(X_valid, y_valid)],
                  eval_group=[_sizes(qid_valid)], eval_at=[10],
                  callbacks=[lightgbm.early_stopping(args.patience,
                                                     verbose=False)])
        rounds = model.best_iteration_   # 1-based: the rounds kept
    else:
        if library == "xgboost":
            from xgboost import XGBRanker as Ranker
            common["tree_method"] = "hist"
        else:
            from skboost import BoostRanker as Ranker
        model = Ranker(**common, eval_metric="ndcg@10",
                       early_stopping_rounds=args.patience, **params)
        model.fit(X, y, qid=qid, eval_set=[(X_valid, y_valid)],
                  eval_qid=[qid_valid], verbose=False)
        rounds = model.best_iteration + 1
    score = np.asarray(model.predict(X_test), dtype=np.float64)
    return ndcg_at(y_test, score, qid_test), int(rounds)


def _standard_error(values):
    """The standard error of the mean of ``values`` (0 for one value)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] < 2:
        return 0.0
    return float(values.std(ddof=1) / np.sqrt(values.shape[0]))


def run_case(case, args):
    """One record per contender: mean test NDCG@10 over the seeds, and
    each seed's figure and best round."""
    records = []
    datasets = ([letor_like(args.n_queries, seed) for seed in args.seeds]
                if case == "letor-like"
                else [letor_sample(seed) for seed in args.sample_seeds])
    for name, library, params in CONTENDERS:
        start = time.perf_counter()
        runs = [fit_and_score(library, params, parts, args)
                for parts in datasets]
        records.append({
            "case": case, "contender": name, "library": library,
            "params": params,
            "ndcg10": float(np.mean([r[0] for r in runs])),
            "ndcg10_per_seed": [float(r[0]) for r in runs],
            "ndcg10_sem": _standard_error([r[0] for r in runs]),
            "best_round_per_seed": [r[1] for r in runs],
            "seconds": round(time.perf_counter() - start, 1)})
        print(f"{case:13s} {name:32s} NDCG@10 {records[-1]['ndcg10']:.5f} "
              f"(seeds {', '.join(f'{r[0]:.5f}' for r in runs)}; best "
              f"rounds {[r[1] for r in runs]})", flush=True)
    return records


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-queries", type=int, default=12000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1],
                        help="data sets of the letor-like case")
    parser.add_argument("--sample-seeds", type=int, nargs="+",
                        default=list(range(40)),
                        help="validation draws of the letor-sample case")
    parser.add_argument("--max-rounds", type=int, default=3000)
    parser.add_argument("--patience", type=int, default=50)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--cases", nargs="+",
                        default=["letor-like", "letor-sample"])
    parser.add_argument("--json", metavar="PATH")
    return parser.parse_args(argv)


def _versions():
    import lightgbm
    import sklearn
    import xgboost

    import skboost
    return {"skboost": skboost.__version__, "xgboost": xgboost.__version__,
            "lightgbm": lightgbm.__version__, "sklearn": sklearn.__version__}


def main(argv=None):
    args = parse_args(argv)
    records = [r for case in args.cases for r in run_case(case, args)]
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)),
                    exist_ok=True)
        meta = {"command": "python benchmarks/bench_ranking_convergence.py",
                "date": time.strftime("%Y-%m-%d"), "args": vars(args),
                "environment": {"cpus": os.cpu_count(), **_versions()},
                "results": records}
        with open(args.json, "w") as f:
            json.dump(meta, f, indent=2)
            f.write("\n")
    return records


if __name__ == "__main__":
    sys.exit(main() and 0)
