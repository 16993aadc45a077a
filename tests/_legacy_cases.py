"""The models of the legacy fixtures (``fixtures/legacy``): one table, shared
by ``fixtures/legacy/make_fixtures.py`` (run once, by the version before the
boosting layer was restructured) and ``test_legacy_fixtures.py`` (which loads
the files those versions wrote and checks the predictions).

Each case builds a fitted estimator and the rows it predicts; ``outputs``
lists what is compared.
"""

import numpy as np


def _numeric(n_rows, n_features, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    return X, rng


def binary_hist_pandas():
    import pandas as pd

    from skboost import BoostClassifier

    X, rng = _numeric(300, 4, 0)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["colour"] = pd.Categorical(rng.choice(["red", "green", "blue"], 300))
    y = ((np.nan_to_num(X[:, 0]) + (frame["colour"] == "red")) > 0.5).astype(int)
    clf = BoostClassifier(n_estimators=8, max_depth=3, tree_method="hist",
                          random_state=0)
    clf.fit(frame.iloc[:250], y[:250])
    return clf, frame.iloc[250:]


def multiclass_exact_early_stopping():
    from skboost import BoostClassifier

    X, rng = _numeric(400, 5, 1)
    y = np.digitize(np.nan_to_num(X[:, 0] + X[:, 1]), [-0.5, 0.5])
    clf = BoostClassifier(n_estimators=40, max_depth=3, tree_method="exact",
                          learning_rate=0.5, early_stopping_rounds=3,
                          subsample=0.8, random_state=1)
    clf.fit(X[:300], y[:300], eval_set=[(X[300:350], y[300:350])],
            verbose=False)
    return clf, X[350:]


def regressor_approx_weights():
    from skboost import BoostRegressor

    X, rng = _numeric(300, 4, 2)
    y = np.nan_to_num(X[:, 0]) * 2 + rng.normal(size=300) * 0.1
    reg = BoostRegressor(n_estimators=10, max_depth=4, tree_method="approx",
                         colsample_bynode=0.7, reg_alpha=0.1, random_state=2)
    reg.fit(X[:250], y[:250], sample_weight=rng.random(250) + 0.5)
    return reg, X[250:]


def regressor_sparse_absent_zero():
    import scipy.sparse as sp

    from skboost import BoostRegressor

    rng = np.random.default_rng(3)
    X = sp.random(300, 6, density=0.3, random_state=3, format="csr")
    y = X[:, 0].toarray().ravel() * 3 + rng.normal(size=300) * 0.1
    reg = BoostRegressor(n_estimators=6, max_depth=3, sparse_absent="zero",
                         objective="reg:pseudohubererror", random_state=3)
    reg.fit(X[:250], y[:250])
    return reg, X[250:].toarray()


def ranker_qid():
    from skboost import BoostRanker

    X, rng = _numeric(300, 4, 4)
    qid = np.repeat(np.arange(30), 10)
    y = rng.integers(0, 4, size=300)
    ranker = BoostRanker(n_estimators=6, max_depth=3, random_state=4)
    ranker.fit(X, y, qid=qid)
    return ranker, X[:40]


def random_forest():
    from skboost import BoostRFClassifier

    X, rng = _numeric(300, 4, 5)
    y = (np.nan_to_num(X[:, 2]) > 0).astype(int)
    forest = BoostRFClassifier(n_estimators=5, max_depth=4, random_state=5)
    forest.fit(X[:250], y[:250])
    return forest, X[250:]


def multi_output_tree():
    from skboost import BoostRegressor

    X, rng = _numeric(300, 4, 6)
    y = np.column_stack([np.nan_to_num(X[:, 0]), np.nan_to_num(X[:, 1]) ** 2])
    reg = BoostRegressor(n_estimators=6, max_depth=3, tree_method="hist",
                         multi_strategy="multi_output_tree", random_state=6)
    reg.fit(X[:250], y[:250])
    return reg, X[250:]


def multi_label_classifier():
    from skboost import BoostClassifier

    X, rng = _numeric(300, 4, 7)
    y = np.column_stack([np.nan_to_num(X[:, 0]) > 0,
                         np.nan_to_num(X[:, 1]) > 0]).astype(int)
    clf = BoostClassifier(n_estimators=6, max_depth=3, random_state=7)
    clf.fit(X[:250], y[:250])
    return clf, X[250:]


def poisson_base_margin_continued():
    from skboost import BoostRegressor

    X, rng = _numeric(300, 4, 8)
    y = rng.poisson(np.exp(np.nan_to_num(X[:, 0]) * 0.5))
    first = BoostRegressor(n_estimators=4, objective="count:poisson",
                           max_depth=3, random_state=8).fit(X[:250], y[:250])
    reg = BoostRegressor(n_estimators=3, objective="count:poisson",
                         max_depth=3, random_state=8)
    reg.fit(X[:250], y[:250], xgb_model=first.get_booster())
    return reg, X[250:]


CASES = {
    "binary_hist_pandas": binary_hist_pandas,
    "multiclass_exact_early_stopping": multiclass_exact_early_stopping,
    "regressor_approx_weights": regressor_approx_weights,
    "regressor_sparse_absent_zero": regressor_sparse_absent_zero,
    "ranker_qid": ranker_qid,
    "random_forest": random_forest,
    "multi_output_tree": multi_output_tree,
    "multi_label_classifier": multi_label_classifier,
    "poisson_base_margin_continued": poisson_base_margin_continued,
}


def outputs(estimator, X):
    """What a loaded model must reproduce: predictions, probabilities,
    margins, leaves and the trees' dump (a Dask estimator's through its
    single-node copy, which needs no cluster)."""
    if hasattr(estimator, "to_local"):
        estimator = estimator.to_local()
    booster = estimator.get_booster()
    arrays = {"predict": np.asarray(estimator.predict(X)),
              "margin": booster_margin(estimator, X),
              "apply": np.asarray(estimator.apply(X))}
    if hasattr(estimator, "predict_proba"):
        arrays["predict_proba"] = estimator.predict_proba(X)
    arrays["dump"] = np.asarray(booster.get_dump(with_stats=True))
    return arrays


def booster_margin(estimator, X):
    return np.asarray(estimator.predict(X, output_margin=True))


def dask_regressor():
    import dask.array as da
    from distributed import Client, LocalCluster

    from skboost.dask import DaskBoostRegressor

    X, rng = _numeric(400, 4, 9)
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 3])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        reg = DaskBoostRegressor(n_estimators=5, max_depth=3, random_state=9)
        reg.fit(da.from_array(X[:300], chunks=150),
                da.from_array(y[:300], chunks=150))
    return reg, X[300:]


CASES["dask_regressor"] = dask_regressor
