"""The objectives and boosters beyond the squared error on Dask
(skboost.dask): distributional regression, survival:aft, rank:xendcg,
debiased LambdaMART and DART, on a LocalCluster of two worker processes
started here.

Oracles: the single-node estimators on the concatenated data (bit for bit:
the features have fewer distinct values than ``max_bin``, so the cut
points cannot depend on the partitioning), and the same fit with the
partitions all on one worker, or spread over both (bit for bit).
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from skboost import BoostDistributionRegressor  # noqa: E402
from skboost.dask import DaskBoostDistributionRegressor  # noqa: E402

PARAMS = dict(n_estimators=5, max_depth=3, learning_rate=0.3, random_state=3,
              n_jobs=1)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _workers(client):
    # asked of the scheduler (the client's cached info may list none)
    return sorted(client.nthreads())


def _discrete_data(n=900, n_features=4, seed=0):
    """Features of at most 30 distinct values (some missing), a target
    whose noise grows with the first feature."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 30, size=(n, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nansum(X[:, :2] * [0.2, -0.1], axis=1)
    noise = rng.normal(size=n) * (0.5 + np.nan_to_num(X[:, 0]) / 10.0)
    return X, signal + noise


def _trees_equal(a, b):
    """Every tree array (and the tree weights) of two boosters, bit for
    bit."""
    assert a.base_margin.tobytes() == b.base_margin.tobytes()
    assert len(a.trees) == len(b.trees)
    assert a.tree_group == b.tree_group
    assert a.tree_weights == b.tree_weights
    for ta, tb in zip(a.trees, b.trees):
        for name in ("feature", "threshold", "left_child", "right_child",
                     "default_left", "value", "gain", "cover"):
            assert np.array_equal(getattr(ta, name), getattr(tb, name),
                                  equal_nan=True), name
    return True


def _placed(client, array, workers):
    """``array``'s partitions computed on ``workers`` (round robin)."""
    blocks = array.to_delayed().ravel()
    futures = [client.compute(b, workers=[workers[k % len(workers)]])
               for k, b in enumerate(blocks)]
    distributed.wait(futures)
    arrays = [da.from_delayed(f, shape=(c,) + array.shape[1:],
                              dtype=array.dtype)
              for f, c in zip(futures, array.chunks[0])]
    return da.concatenate(arrays), futures


def _on_one_and_two_workers(client, fit, *arrays):
    """``fit(*placed arrays)`` with the partitions all on one worker, then
    spread over both: the two boosters."""
    boosters, keep = [], []
    workers = _workers(client)
    for placement in ([workers[0]], workers):
        placed = []
        for array in arrays:
            p, futures = _placed(client, array, placement)
            placed.append(p)
            keep += futures
        boosters.append(fit(*placed).booster_)
    return boosters


# -- distributional regression ----------------------------------------------

@pytest.mark.parametrize("distribution,natural", [
    ("normal", False), ("gamma", True), ("studentt", False)])
def test_distribution_equals_single_node_bit_for_bit(client, distribution,
                                                     natural):
    X, y = _discrete_data(seed=1)
    if distribution == "gamma":
        y = np.exp(y / 5.0)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=y.shape[0])
    params = dict(PARAMS, distribution=distribution,
                  natural_gradient=natural)
    dX = da.from_array(X, chunks=(300, 4))
    model = DaskBoostDistributionRegressor(**params).fit(
        dX, da.from_array(y, chunks=300),
        sample_weight=da.from_array(w, chunks=300))
    local = BoostDistributionRegressor(**params).fit(X, y, sample_weight=w)
    assert _trees_equal(model.booster_, local.booster_)
    assert model.booster_.n_outputs == local.booster_.n_outputs >= 2
    Xp = da.from_array(X, chunks=(250, 4))
    assert np.array_equal(model.predict(Xp).compute(), local.predict(X))
    levels = [0.1, 0.5, 0.9]
    assert np.array_equal(model.predict_quantiles(Xp, levels).compute(),
                          local.predict_quantiles(X, levels))
    expected = local.predict_params(X)
    got = model.predict_params(Xp)
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert np.array_equal(got[name].compute(),
                              np.broadcast_to(expected[name], y.shape))


def test_distribution_same_model_on_one_or_two_workers(client):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1200, 3)).astype(np.float32)   # > max_bin values
    y = X[:, 0] + rng.normal(size=1200) * np.exp(X[:, 1] / 2)
    params = dict(PARAMS, max_bin=32)
    first, second = _on_one_and_two_workers(
        client, lambda dX, dy: DaskBoostDistributionRegressor(**params).fit(
            dX, dy),
        da.from_array(X, chunks=(300, 3)), da.from_array(y, chunks=300))
    assert _trees_equal(first, second)


def test_distribution_frames_eval_set_and_errors(client):
    X, y = _discrete_data(n=600, seed=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    dframe = dd.from_pandas(frame, npartitions=3)
    dy = dd.from_pandas(pd.Series(y), npartitions=3)
    params = dict(PARAMS, eval_metric=["nll", "crps"])
    model = DaskBoostDistributionRegressor(**params).fit(
        dframe, dy, eval_set=[(dframe, dy)])
    local = BoostDistributionRegressor(**params).fit(
        frame, y, eval_set=[(frame, y)])
    assert _trees_equal(model.booster_, local.booster_)
    assert model.evals_result_ == local.evals_result_
    quantiles = model.predict_quantiles(dframe, [0.25, 0.75])
    assert isinstance(quantiles, dd.DataFrame)
    assert np.array_equal(quantiles.compute().to_numpy(),
                          local.predict_quantiles(frame, [0.25, 0.75]))
    loc = model.predict_params(dframe)["loc"]
    assert isinstance(loc, dd.Series)
    assert np.array_equal(loc.compute().to_numpy(),
                          local.predict_params(frame)["loc"])
    with pytest.raises(ValueError, match="needs labels > 0"):
        DaskBoostDistributionRegressor(distribution="gamma", **PARAMS).fit(
            dframe, dy - 100.0)
    with pytest.raises(ValueError, match="multi_output_tree"):
        DaskBoostDistributionRegressor(
            multi_strategy="multi_output_tree", **PARAMS).fit(dframe, dy)
    with pytest.raises(ValueError, match="does not score a distribution"):
        DaskBoostDistributionRegressor(eval_metric="rmse", **PARAMS).fit(
            dframe, dy)
    with pytest.raises(ValueError, match="q must be levels"):
        model.predict_quantiles(dframe, [0.0, 0.5])
    with pytest.raises(TypeError, match="rows in memory"):
        model.predict_distribution(dframe)
    assert np.array_equal(model.predict_distribution(frame).mean(),
                          local.predict_distribution(frame).mean())


# -- survival:aft -----------------------------------------------------------

def _survival_data(n=900, seed=5):
    """Discrete features, log-linear times, about 30% right-censored, and
    the same times as [lower, upper] bounds with some interval-censored."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 25, size=(n, 4)).astype(np.float32)
    time = np.exp(0.05 * X[:, 0] - 0.03 * X[:, 1] + 0.5 * rng.normal(size=n))
    event = rng.random(n) < 0.7
    signed = np.where(event, time, -time)
    bounds = np.column_stack([time, np.where(event, time, np.inf)])
    interval = rng.random(n) < 0.2
    bounds[interval, 0] *= 0.8
    bounds[interval, 1] = bounds[interval, 0] * 1.5
    return X, signed, bounds


@pytest.mark.parametrize("labels", ["times", "bounds"])
@pytest.mark.parametrize("distribution", ["normal", "logistic", "extreme"])
def test_aft_equals_single_node_bit_for_bit(client, labels, distribution):
    from skboost import BoostRegressor
    from skboost.dask import DaskBoostRegressor

    X, signed, bounds = _survival_data()
    y = signed if labels == "times" else bounds
    params = dict(PARAMS, objective="survival:aft",
                  aft_loss_distribution=distribution,
                  aft_loss_distribution_scale=0.8)
    dX = da.from_array(X, chunks=(300, 4))
    dy = da.from_array(y, chunks=(300,) + y.shape[1:])
    model = DaskBoostRegressor(**params).fit(dX, dy, eval_set=[(dX, dy)])
    local = BoostRegressor(**params).fit(X, y, eval_set=[(X, y)])
    assert _trees_equal(model.booster_, local.booster_)
    assert model.evals_result_ == local.evals_result_
    assert "aft-nloglik" in model.evals_result_["validation_0"]
    assert np.array_equal(model.predict(dX).compute(), local.predict(X))


def test_aft_same_model_on_one_or_two_workers_and_bad_labels(client):
    from skboost.dask import DaskBoostRegressor

    rng = np.random.default_rng(6)
    X = rng.normal(size=(1200, 3)).astype(np.float32)   # > max_bin values
    time = np.exp(X[:, 0] + rng.normal(size=1200))
    bounds = np.column_stack([time, np.where(rng.random(1200) < 0.7, time,
                                             np.inf)])
    params = dict(PARAMS, objective="survival:aft", max_bin=32)
    first, second = _on_one_and_two_workers(
        client, lambda dX, dy: DaskBoostRegressor(**params).fit(dX, dy),
        da.from_array(X, chunks=(300, 3)), da.from_array(bounds, chunks=300))
    assert _trees_equal(first, second)
    bad = np.column_stack([time, time * 0.5])   # upper below lower
    with pytest.raises(ValueError, match="upper bounds"):
        DaskBoostRegressor(**params).fit(da.from_array(X, chunks=(300, 3)),
                                         da.from_array(bad, chunks=300))


# -- rank:xendcg and debiased LambdaMART ------------------------------------

def _ranking_data(n_queries=60, per_query=15, seed=21):
    """Queries of discrete features, their rows shuffled within each third
    of the data (the partitions below), so that the rows of a query are
    neither contiguous nor in query order."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.integers(0, 20, size=(n, 4)).astype(np.float32)
    relevance = np.clip(X[:, 0] // 5 + rng.integers(0, 2, n), 0, 4)
    qid = np.repeat(np.arange(n_queries), per_query)
    third = n // 3
    shuffle = np.concatenate([rng.permutation(np.arange(a, a + third))
                              for a in (0, third, 2 * third)])
    return X[shuffle], relevance[shuffle], qid[shuffle], third


@pytest.mark.parametrize("params", [
    dict(objective="rank:xendcg"),
    dict(objective="rank:ndcg", lambdarank_unbiased=True,
         lambdarank_num_pair_per_sample=8, lambdarank_bias_norm=0.5),
    dict(objective="rank:ndcg", lambdarank_unbiased=True),
    # random pairs: seeded by the query's number among all queries, not
    # among its worker's
    dict(objective="rank:ndcg", lambdarank_pair_method="mean",
         lambdarank_num_pair_per_sample=3),
    dict(objective="rank:pairwise", lambdarank_pair_method="mean")])
def test_ranking_objectives_equal_single_node(client, params):
    from skboost import BoostRanker
    from skboost.dask import DaskBoostRanker

    X, relevance, qid, third = _ranking_data()
    params = dict(PARAMS, **params)
    model = DaskBoostRanker(**params).fit(
        da.from_array(X, chunks=(third, 4)),
        da.from_array(relevance, chunks=third),
        qid=da.from_array(qid, chunks=third))
    local = BoostRanker(**params).fit(X, relevance, qid=qid)
    assert _trees_equal(model.booster_, local.booster_)
    if params.get("lambdarank_unbiased"):
        for ours, theirs in zip(model.position_bias_, local.position_bias_):
            assert np.array_equal(ours, theirs)
        # the estimates moved from 1: there was something to sum
        assert np.abs(model.position_bias_[0][1:] - 1.0).max() > 1e-3
    else:
        assert model.position_bias_ is None


@pytest.mark.parametrize("params", [
    dict(objective="rank:xendcg"),
    dict(objective="rank:ndcg", lambdarank_unbiased=True),
    dict(objective="rank:ndcg", lambdarank_pair_method="mean",
         lambdarank_num_pair_per_sample=3)])
def test_ranking_objectives_same_model_on_one_or_two_workers(client, params):
    from skboost.dask import DaskBoostRanker

    rng = np.random.default_rng(8)
    X, relevance, qid, third = _ranking_data(seed=8)
    X = X + rng.normal(size=X.shape).astype(np.float32)   # > max_bin values
    params = dict(PARAMS, max_bin=32, **params)
    first, second = _on_one_and_two_workers(
        client, lambda dX, dy, dq: DaskBoostRanker(**params).fit(dX, dy,
                                                                 qid=dq),
        da.from_array(X, chunks=(third, 4)),
        da.from_array(relevance, chunks=third),
        da.from_array(qid, chunks=third))
    assert _trees_equal(first, second)


# -- DART -------------------------------------------------------------------

@pytest.mark.parametrize("task,dart", [
    ("regressor", dict(rate_drop=0.3)),
    ("regressor", dict(rate_drop=0.2, sample_type="weighted",
                       normalize_type="forest", one_drop=True,
                       num_parallel_tree=2)),
    ("multiclass", dict(rate_drop=0.25, skip_drop=0.3))])
def test_dart_equals_single_node_bit_for_bit(client, task, dart):
    from skboost import BoostClassifier, BoostRegressor
    from skboost.dask import DaskBoostClassifier, DaskBoostRegressor

    X, y = _discrete_data(seed=9)
    if task == "multiclass":
        y = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    local_class, dask_class = ((BoostRegressor, DaskBoostRegressor)
                               if task == "regressor" else
                               (BoostClassifier, DaskBoostClassifier))
    params = dict(PARAMS, n_estimators=8, booster="dart", **dart)
    dX, dy = da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=300)
    model = dask_class(**params).fit(dX, dy, eval_set=[(dX, dy)])
    local = local_class(**params).fit(X, y, eval_set=[(X, y)])
    assert _trees_equal(model.booster_, local.booster_)
    # trees were dropped and rescaled: the weights are not all 1
    assert len(set(local.booster_.tree_weights)) > 1
    assert model.evals_result_ == local.evals_result_
    method = "predict" if task == "regressor" else "predict_proba"
    assert np.array_equal(getattr(model, method)(dX).compute(),
                          getattr(local, method)(X))


def test_dart_same_model_on_one_or_two_workers_with_early_stopping(client):
    from skboost.dask import DaskBoostRegressor

    rng = np.random.default_rng(10)
    X = rng.normal(size=(1200, 3)).astype(np.float32)   # > max_bin values
    y = X[:, 0] - X[:, 1] ** 2 + rng.normal(size=1200)
    params = dict(PARAMS, n_estimators=12, max_bin=32, booster="dart",
                  rate_drop=0.3, subsample=0.8, early_stopping_rounds=3)
    first, second = _on_one_and_two_workers(
        client, lambda dX, dy: DaskBoostRegressor(**params).fit(
            dX, dy, eval_set=[(dX[:300], dy[:300])]),
        da.from_array(X, chunks=(300, 3)), da.from_array(y, chunks=300))
    assert _trees_equal(first, second)
    assert first.best_iteration == second.best_iteration


# -- survival:cox -----------------------------------------------------------

@pytest.mark.parametrize("ties", [False, True])
def test_cox_equals_single_node_bit_for_bit(client, ties):
    from skboost import BoostRegressor
    from skboost.dask import DaskBoostRegressor

    X, signed, _ = _survival_data(seed=11)
    if ties:   # tied times, across the partitions too
        signed = np.sign(signed) * np.ceil(np.abs(signed) * 4) / 4
    w = np.random.default_rng(12).uniform(0.5, 2.0, size=signed.shape[0])
    params = dict(PARAMS, objective="survival:cox")
    dX = da.from_array(X, chunks=(300, 4))
    dy, dw = da.from_array(signed, chunks=300), da.from_array(w, chunks=300)
    model = DaskBoostRegressor(**params).fit(dX, dy, sample_weight=dw,
                                             eval_set=[(dX, dy)])
    local = BoostRegressor(**params).fit(X, signed, sample_weight=w,
                                         eval_set=[(X, signed)])
    assert _trees_equal(model.booster_, local.booster_)
    assert model.evals_result_ == local.evals_result_
    assert np.array_equal(model.predict(dX).compute(), local.predict(X))


def test_cox_same_model_on_one_or_two_workers(client):
    from skboost.dask import DaskBoostRegressor

    rng = np.random.default_rng(13)
    X = rng.normal(size=(1200, 3)).astype(np.float32)   # > max_bin values
    time = np.round(np.exp(X[:, 0] + rng.normal(size=1200)), 1) + 0.1
    signed = np.where(rng.random(1200) < 0.7, time, -time)
    params = dict(PARAMS, objective="survival:cox", max_bin=32)
    first, second = _on_one_and_two_workers(
        client, lambda dX, dy: DaskBoostRegressor(**params).fit(dX, dy),
        da.from_array(X, chunks=(300, 3)), da.from_array(signed, chunks=300))
    assert _trees_equal(first, second)


# -- tree_method="approx" (cuts proposed per tree from the hessians) --------

@pytest.mark.parametrize("case", ["distribution", "cox", "dart"])
def test_approx_equals_single_node_bit_for_bit(client, case):
    from skboost import BoostRegressor
    from skboost.dask import DaskBoostRegressor

    X, y = _discrete_data(seed=14)
    local_class, dask_class, extra = {
        "distribution": (BoostDistributionRegressor,
                         DaskBoostDistributionRegressor, {}),
        "cox": (BoostRegressor, DaskBoostRegressor,
                dict(objective="survival:cox")),
        "dart": (BoostRegressor, DaskBoostRegressor,
                 dict(booster="dart", rate_drop=0.3))}[case]
    if case == "cox":
        y = np.where(y > np.median(y), 1.0, -1.0) * np.exp(y / 10.0)
    params = dict(PARAMS, tree_method="approx", **extra)
    dX, dy = da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=300)
    model = dask_class(**params).fit(dX, dy)
    local = local_class(**params).fit(X, y)
    assert _trees_equal(model.booster_, local.booster_)
