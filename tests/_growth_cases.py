"""The training cases of the growth fixtures: one table, shared by
``fixtures/growth/make_fixtures.py`` (which wrote the fixtures once) and
``test_growth_fixtures.py`` (which refits every case and checks that the same
model comes out, bit for bit), so the two can not drift apart.

A case is ``name -> GrowthCase(estimator class, params, data builder)``. A
builder takes nothing and returns ``(X, y, fit_kwargs, X_pred)``: the training
data, the extra keyword arguments of ``fit`` (``sample_weight``, ``qid``) and
the fixed prediction set whose raw margins are saved. Every builder draws from
its own fixed seed with numpy, so a case's data never depends on which other
cases run. ``n_jobs`` is not in the params: the test sets it (1 and 2), the
script fitted with 1.

Combinations that raise ValueError today, hence absent from the table:

* ``tree_method="approx", approx_proposal="local"`` with sparse input and
  ``sparse_absent="zero"`` ("does not support sparse_absent='zero' yet");
* ``grow_policy="lossguide"`` with ``tree_method="exact"``, and with
  ``tree_method="approx", approx_proposal="local"`` (both grow level by
  level only).
"""

from collections import namedtuple

import numpy as np
import scipy.sparse as sp

from skboost import BoostClassifier, BoostRanker, BoostRegressor

GrowthCase = namedtuple("GrowthCase", "estimator params data")

N_TRAIN, N_PRED, N_FEATURES = 600, 150, 8

# tree_method + approx_proposal of every method
METHODS = {
    "exact": dict(tree_method="exact"),
    "hist": dict(tree_method="hist"),
    "approx_global": dict(tree_method="approx", approx_proposal="global"),
    "approx_local": dict(tree_method="approx", approx_proposal="local"),
}

BASE = dict(n_estimators=8, max_depth=4, learning_rate=0.3)


# ------------------------------------------------------------------ data


def _features(rng, n, nan_fraction=0.0, zero_fraction=0.0):
    """Dense features of a few distinct values per column (so hist/approx
    cuts and exact splits both see ties), optionally with NaN or zeros."""
    X = np.round(rng.normal(size=(n, N_FEATURES)), 2)
    X[:, 1] = rng.integers(0, 12, n)                  # few distinct values
    X[:, 2] = rng.exponential(size=n).round(3)
    if zero_fraction:
        X[rng.random(X.shape) < zero_fraction] = 0.0
    if nan_fraction:
        X[rng.random(X.shape) < nan_fraction] = np.nan
    return X


def _signal(X, rng):
    Z = np.nan_to_num(X)
    return (Z[:, 0] - 0.5 * Z[:, 1] / 6 + np.sin(2 * Z[:, 2])
            + 0.7 * Z[:, 3] * (Z[:, 4] > 0) + 0.2 * rng.normal(size=len(X)))


def regression_data(seed, nan_fraction=0.0, weights=False):
    def build():
        rng = np.random.default_rng(seed)
        n = N_TRAIN + N_PRED
        X = _features(rng, n, nan_fraction=nan_fraction)
        y = _signal(X, rng)
        fit_kwargs = {}
        if weights:
            fit_kwargs["sample_weight"] = rng.uniform(0.1, 4.0, N_TRAIN)
        return X[:N_TRAIN], y[:N_TRAIN], fit_kwargs, X[N_TRAIN:]
    return build


def sparse_data(seed, categorical=False):
    """CSR with ~60% of the entries absent (zeros not stored); with
    ``categorical``, column 5 holds small non-negative integer categories
    (0 included, hence partly absent)."""
    def build():
        rng = np.random.default_rng(seed)
        n = N_TRAIN + N_PRED
        X = _features(rng, n, zero_fraction=0.6)
        y = _signal(X, rng)
        if categorical:
            codes = rng.integers(0, 7, n)
            X[:, 5] = codes
            y = y + rng.normal(size=7)[codes]
        S = sp.csr_matrix(X)
        return S[:N_TRAIN], y[:N_TRAIN], {}, S[N_TRAIN:]
    return build


def categorical_data(seed, pandas=False, nan_fraction=0.05):
    """Numeric columns and two categorical ones: 5 with 9 categories (so a
    partition split, beyond max_cat_to_onehot) and 6 with 3 (one-hot).
    With ``pandas``, a DataFrame whose categorical columns are pandas
    ``category`` columns; else float codes given by
    ``categorical_features=[5, 6]`` in the case's params."""
    def build():
        rng = np.random.default_rng(seed)
        n = N_TRAIN + N_PRED
        X = _features(rng, n, nan_fraction=nan_fraction)
        many = rng.integers(0, 9, n)
        few = rng.integers(0, 3, n)
        y = (_signal(X, rng) + 1.5 * rng.normal(size=9)[many]
             + np.array([0.0, 1.0, -1.0])[few])
        X[:, 5] = many
        X[:, 6] = few
        X[rng.random(n) < nan_fraction, 5] = np.nan
        if pandas:
            import pandas as pd

            df = pd.DataFrame(X, columns=[f"f{i}" for i in range(N_FEATURES)])
            labels = np.array(list("abcdefghi"))
            for col, k in (("f5", 9), ("f6", 3)):
                values = df[col].to_numpy()
                cat = np.where(np.isnan(values), None,
                               labels[np.nan_to_num(values).astype(int)])
                df[col] = pd.Categorical(cat, categories=list(labels[:k]))
            return df.iloc[:N_TRAIN], y[:N_TRAIN], {}, df.iloc[N_TRAIN:]
        return X[:N_TRAIN], y[:N_TRAIN], {}, X[N_TRAIN:]
    return build


def binary_data(seed, nan_fraction=0.1):
    def build():
        rng = np.random.default_rng(seed)
        n = N_TRAIN + N_PRED
        X = _features(rng, n, nan_fraction=nan_fraction)
        y = (_signal(X, rng) + 0.5 * rng.normal(size=n) > 0.3).astype(int)
        return X[:N_TRAIN], y[:N_TRAIN], {}, X[N_TRAIN:]
    return build


def multiclass_data(seed, nan_fraction=0.1):
    def build():
        rng = np.random.default_rng(seed)
        n = N_TRAIN + N_PRED
        X = _features(rng, n, nan_fraction=nan_fraction)
        s = _signal(X, rng) + 0.5 * rng.normal(size=n)
        y = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3]))
        return X[:N_TRAIN], y[:N_TRAIN], {}, X[N_TRAIN:]
    return build


def ranking_data(seed, nan_fraction=0.1):
    """30 queries of 20 documents, rows in shuffled query order (the
    estimator groups them); relevance 0..3."""
    def build():
        rng = np.random.default_rng(seed)
        n = N_TRAIN + N_PRED
        X = _features(rng, n, nan_fraction=nan_fraction)
        s = _signal(X, rng) + 0.3 * rng.normal(size=n)
        y = np.digitize(s, np.quantile(s, [0.5, 0.75, 0.9]))
        qid = rng.permutation(np.repeat(np.arange(N_TRAIN // 20), 20))
        return X[:N_TRAIN], y[:N_TRAIN], {"qid": qid}, X[N_TRAIN:]
    return build


# ----------------------------------------------------------------- cases


def _cases():
    cases = {}

    def add(name, estimator, data, **params):
        assert name not in cases, name
        cases[name] = GrowthCase(estimator, {**BASE, **params}, data)

    for i, (m, method) in enumerate(METHODS.items()):
        add(f"dense_{m}", BoostRegressor, regression_data(100 + i),
            objective="reg:squarederror", **method)
        add(f"dense_nan_{m}", BoostRegressor,
            regression_data(110 + i, nan_fraction=0.1), **method)
        add(f"sparse_missing_{m}", BoostRegressor, sparse_data(120 + i),
            sparse_absent="missing", **method)
        if m != "approx_local":        # raises ValueError today
            add(f"sparse_zero_{m}", BoostRegressor, sparse_data(130 + i),
                sparse_absent="zero", **method)

    # categorical: float codes via categorical_features, pandas category
    add("cat_hist", BoostRegressor, categorical_data(200),
        categorical_features=[5, 6], **METHODS["hist"])
    add("cat_exact", BoostRegressor, categorical_data(201),
        categorical_features=[5, 6], **METHODS["exact"])
    add("cat_approx_local", BoostRegressor, categorical_data(202),
        categorical_features=[5, 6], **METHODS["approx_local"])
    add("cat_pandas_hist", BoostRegressor, categorical_data(203, pandas=True),
        **METHODS["hist"])
    add("cat_pandas_approx_global", BoostRegressor,
        categorical_data(204, pandas=True), **METHODS["approx_global"])
    add("cat_sparse_missing_hist", BoostRegressor,
        sparse_data(205, categorical=True), categorical_features=[5],
        sparse_absent="missing", **METHODS["hist"])
    add("cat_sparse_zero_exact", BoostRegressor,
        sparse_data(206, categorical=True), categorical_features=[5],
        sparse_absent="zero", **METHODS["exact"])

    # non-uniform sample weights
    for i, m in enumerate(("hist", "exact")):
        add(f"weights_{m}", BoostRegressor,
            regression_data(300 + i, nan_fraction=0.05, weights=True),
            min_child_weight=2.0, **METHODS[m])

    # row and column sampling
    for i, m in enumerate(METHODS):
        add(f"sampling_{m}", BoostRegressor,
            regression_data(400 + i, nan_fraction=0.05), subsample=0.7,
            colsample_bytree=0.8, colsample_bylevel=0.8, colsample_bynode=0.7,
            random_state=1234 + i, **METHODS[m])

    # leaf-wise growth (hist and global approx only)
    add("lossguide_hist", BoostRegressor,
        regression_data(500, nan_fraction=0.05), grow_policy="lossguide",
        max_leaves=12, max_depth=0, **METHODS["hist"])
    add("lossguide_approx_global", BoostRegressor,
        regression_data(501, nan_fraction=0.05), grow_policy="lossguide",
        max_leaves=12, max_depth=5, **METHODS["approx_global"])

    # max_leaves with depthwise growth
    for i, m in enumerate(("hist", "exact")):
        add(f"depthwise_max_leaves_{m}", BoostRegressor,
            regression_data(600 + i, nan_fraction=0.05), max_depth=5,
            max_leaves=12, **METHODS[m])

    # regularisation
    add("gamma_hist", BoostRegressor, regression_data(700), gamma=1.0,
        max_depth=5, **METHODS["hist"])
    add("min_child_weight_exact", BoostRegressor,
        regression_data(701, nan_fraction=0.05), min_child_weight=15.0,
        max_depth=5, **METHODS["exact"])
    add("reg_alpha_approx_global", BoostRegressor, regression_data(702),
        reg_alpha=2.0, reg_lambda=0.5, **METHODS["approx_global"])
    add("max_delta_step_binary_hist", BoostClassifier, binary_data(703),
        objective="binary:logistic", max_delta_step=0.5, **METHODS["hist"])

    # binary classification
    for i, m in enumerate(("exact", "approx_local")):
        add(f"binary_{m}", BoostClassifier, binary_data(800 + i),
            objective="binary:logistic", **METHODS[m])

    # multiclass
    for i, m in enumerate(("hist", "exact")):
        add(f"multiclass_{m}", BoostClassifier, multiclass_data(900 + i),
            objective="multi:softprob", n_estimators=6, **METHODS[m])

    # ranking
    for i, m in enumerate(("hist", "exact")):
        add(f"ranker_ndcg_{m}", BoostRanker, ranking_data(1000 + i),
            objective="rank:ndcg", **METHODS[m])
    return cases


CASES = _cases()


def fit_case(name, n_jobs):
    """The case's estimator fitted with ``n_jobs``, and its prediction set."""
    case = CASES[name]
    X, y, fit_kwargs, X_pred = case.data()
    est = case.estimator(**case.params, n_jobs=n_jobs)
    est.fit(X, y, **fit_kwargs)
    return est, X_pred


def margins(est, X):
    """Raw margins as float64: ``decision_function`` of the classifier,
    ``predict(output_margin=True)`` of the regressor, ``predict`` of the
    ranker (its scores are the margins)."""
    if isinstance(est, BoostClassifier):
        out = est.decision_function(X)
    elif isinstance(est, BoostRanker):
        out = est.predict(X)
    else:
        out = est.predict(X, output_margin=True)
    return np.asarray(out, dtype=np.float64)
