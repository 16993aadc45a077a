"""Distributed training on Dask (skboost.dask) on a LocalCluster of two
worker processes started here.

Oracles: the single-node estimators on the concatenated data (the model
must be bit-identical where the cut points cannot depend on the
partitioning), and the same fit with the partitions placed on one worker,
on the other, or spread (bit-identical whatever the placement).
"""

import logging
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from skboost import BoostClassifier, BoostRegressor  # noqa: E402
from skboost.dask.train import row_uniforms  # noqa: E402
from skboost.callback import TrainingCallback  # noqa: E402
from skboost.dask import DaskBoostClassifier, DaskBoostRegressor  # noqa: E402

PARAMS = dict(n_estimators=6, max_depth=4, learning_rate=0.3, random_state=3,
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


def _discrete_data(n=1200, n_features=5, seed=0):
    """Features with at most 40 distinct values (cuts independent of the
    partitioning), some missing, a noisy target."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 40, size=(n, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nansum(X[:, :3] * [1.0, -0.5, 0.25], axis=1) + rng.normal(size=n)
    return X, y


def _trees_equal(a, b):
    """Every tree array of two boosters, bit for bit."""
    assert a.base_margin.tobytes() == b.base_margin.tobytes()
    assert len(a.trees) == len(b.trees)
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


# -- equal to single-node training ------------------------------------------

def test_regressor_equals_single_node_bit_for_bit(client):
    X, y = _discrete_data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=y.shape[0])
    params = dict(PARAMS, colsample_bynode=0.8, reg_alpha=0.1, gamma=0.05)
    dask_model = DaskBoostRegressor(**params).fit(
        da.from_array(X, chunks=(300, 5)), da.from_array(y, chunks=300),
        sample_weight=da.from_array(w, chunks=300))
    local = BoostRegressor(**params).fit(X, y, sample_weight=w)
    assert _trees_equal(dask_model.booster_, local.booster_)
    assert np.array_equal(
        dask_model.predict(da.from_array(X, chunks=(250, 5))).compute(),
        local.predict(X))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_equals_single_node_bit_for_bit(client, n_classes):
    X, y = _discrete_data(seed=n_classes)
    labels = np.array(["a", "b", "c"])[
        np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))]
    dask_model = DaskBoostClassifier(**PARAMS).fit(
        da.from_array(X, chunks=(400, 5)), da.from_array(labels, chunks=400))
    local = BoostClassifier(**PARAMS).fit(X, labels)
    assert list(dask_model.classes_) == list(local.classes_)
    assert _trees_equal(dask_model.booster_, local.booster_)
    dX = da.from_array(X, chunks=(500, 5))
    assert np.array_equal(dask_model.predict_proba(dX).compute(),
                          local.predict_proba(X))
    assert list(dask_model.predict(dX).compute()) == list(local.predict(X))


def test_dataframe_with_categories_equals_single_node(client):
    X, y = _discrete_data(n=900, n_features=3, seed=5)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["colour"] = pd.Categorical(
        np.array(["red", "green", "blue"])[(np.nan_to_num(X[:, 0]) % 3)
                                           .astype(int)],
        categories=["blue", "green", "red"])
    y = y + 3.0 * (frame["colour"] == "red")
    dframe = dd.from_pandas(frame, npartitions=3)
    dy = dd.from_pandas(pd.Series(y), npartitions=3)
    dask_model = DaskBoostRegressor(**PARAMS).fit(dframe, dy)
    local = BoostRegressor(**PARAMS).fit(frame, y)
    assert list(dask_model.feature_names_in_) == ["a", "b", "c", "colour"]
    assert _trees_equal(dask_model.booster_, local.booster_)
    predicted = dask_model.predict(dframe)
    assert isinstance(predicted, dd.Series)
    assert np.array_equal(predicted.compute().to_numpy(), local.predict(frame))


# -- the same model for any number of workers and any placement -------------

def _fit_on_every_placement(client, estimator, params, dX, dy):
    """The boosters of fits with the partitions all on one worker, all on
    the other, and spread over both in two orders (same partitioning)."""
    boosters, keep = [], []
    workers = _workers(client)
    for placement in ([workers[0]], [workers[1]], workers, workers[::-1]):
        pX, fx = _placed(client, dX, placement)
        py, fy = _placed(client, dy, placement)
        keep += fx + fy   # placed partitions live until every fit is done
        boosters.append(estimator(**params).fit(pX, py).booster_)
    return boosters


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_bit_identical_for_one_or_two_workers(client, subsample):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(1600, 4)).astype(np.float32)   # > max_bin values
    y = X[:, 0] - 2 * X[:, 1] ** 2 + rng.normal(size=1600)
    dX = da.from_array(X, chunks=(400, 4))
    dy = da.from_array(y, chunks=400)
    params = dict(PARAMS, max_bin=32, subsample=subsample,
                  colsample_bytree=0.75)
    boosters = _fit_on_every_placement(client, DaskBoostRegressor, params,
                                       dX, dy)
    for other in boosters[1:]:
        assert _trees_equal(boosters[0], other)


def test_row_sample_is_independent_of_partitioning():
    rows = np.arange(10_000)
    whole = row_uniforms(11, 4, 1, rows)
    parts = np.concatenate([row_uniforms(11, 4, 1, rows[a:b])
                            for a, b in ((0, 1234), (1234, 9000),
                                         (9000, 10_000))])
    assert np.array_equal(whole, parts)
    assert 0.0 <= whole.min() and whole.max() < 1.0
    # uniform: the sampled share is the fraction, rounds draw anew
    assert abs(np.mean(whole < 0.3) - 0.3) < 0.02
    assert not np.array_equal(whole, row_uniforms(11, 5, 1, rows))
    assert not np.array_equal(whole, row_uniforms(11, 4, 0, rows))


def test_packed_gather_refuses_values_it_would_not_give_back():
    """Values that are not integers (they would come back as int64, not
    as themselves) raise TypeError instead of being rounded."""
    from skboost.dask.reduce import pack_gathered

    with pytest.raises(TypeError):
        pack_gathered(np.array([1.5, 2.0]), None)
    assert pack_gathered(np.array([3], dtype=np.int32), None) == \
        pack_gathered(np.array([3], dtype=np.int64), None)


@pytest.mark.parametrize("widths", [(1, 1), (3, 0, 4), (0, 2), (5,)])
@pytest.mark.parametrize("n_nodes", [0, 1, 64])
def test_shards_bests_side_by_side_are_numpys_concatenation(widths,
                                                             n_nodes):
    """The shards' per-feature bests of a level put side by side
    (``_side_by_side``, written in place) against ``np.concatenate`` along
    the features (the oracle): the same bytes, dtype and shape, NaN gains
    and -0.0 thresholds included, for shards that own no feature too."""
    from skboost.dask.reduce import _side_by_side
    from skboost.tree.splits import empty_records

    rng = np.random.default_rng(n_nodes + len(widths))
    blocks = []
    for width in widths:
        records = empty_records(n_nodes * width)
        records["feature"] = rng.integers(-1, 28, n_nodes * width)
        records["gain"] = rng.normal(size=n_nodes * width)
        records["gain"][:1] = np.nan
        records["threshold"][1:2] = -0.0
        records["Gq_left"] = rng.integers(-2 ** 62, 2 ** 62, n_nodes * width)
        blocks.append(records.reshape(n_nodes, width))
    expected = np.concatenate(blocks, axis=1)
    got = _side_by_side(blocks)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("case", ["root", "counts", "bests", "no_values",
                                  "categorical", "empty_range", "no_nodes"])
def test_packed_gather_gives_back_what_pickle_does(case):
    """A level's all-gather payload (``pack_gathered``: raw bytes instead
    of a pickle) against pickle's round trip of the same objects: the
    values and records back byte for byte (dtype, shape, NaN gains,
    -0.0), the left sets equal, and arrays that can be written to."""
    import pickle

    from skboost.dask.reduce import pack_gathered, unpack_gathered
    from skboost.tree.splits import empty_records

    rng = np.random.default_rng(3)
    mine, bests = None, None
    if case == "root":
        mine = np.array([-(2 ** 62), 2 ** 61 + 5], dtype=np.int64)
    if case in ("counts", "bests", "categorical", "empty_range"):
        mine = rng.integers(0, 10 ** 12, 7)
    if case in ("bests", "no_values", "categorical", "empty_range",
                "no_nodes"):
        n, width = {"empty_range": (7, 0), "no_nodes": (0, 3)}.get(
            case, (7, 3))
        records = empty_records(n * width)
        records["feature"] = rng.integers(-1, 28, n * width)
        records["gain"] = rng.normal(size=n * width)
        records["gain"][:1] = np.nan
        records["threshold"][1:2] = -0.0
        records["Gq_left"] = rng.integers(-2 ** 62, 2 ** 62, n * width)
        records["cat_kind"] = rng.integers(0, 3, n * width)
        sets = ({(2, 5): rng.random(9) < 0.5, (4, 1): np.array([True])}
                if case == "categorical" else {})
        bests = (records.reshape(n, width), sets)
    expected = pickle.loads(pickle.dumps((mine, bests)))
    packed = pack_gathered(mine, bests)
    assert isinstance(packed, bytes)
    got_mine, got_bests = unpack_gathered(packed)
    if mine is None:
        assert got_mine is None
    else:
        assert got_mine.dtype == np.int64 and got_mine.flags.writeable
        assert got_mine.tobytes() == expected[0].tobytes()
    if bests is None:
        assert got_bests is None
        return
    records, sets = got_bests
    assert records.dtype == expected[1][0].dtype
    assert records.shape == expected[1][0].shape
    assert records.tobytes() == expected[1][0].tobytes()
    assert records.flags.writeable
    assert sets.keys() == expected[1][1].keys()
    for key, value in expected[1][1].items():
        assert np.array_equal(sets[key], value)



@pytest.mark.parametrize("case", ["classes", "grouped", "special", "empty",
                                  "bounds", "weights"])
def test_packed_labels_give_back_every_bit(case):
    """``pack_labels`` (what a shard sends the client for the base score)
    against the arrays themselves: rows, labels and weights back bit for
    bit (dtype, shape, -0.0, NaN, inf), in fewer bytes for class labels
    with unit weights (a byte a row instead of 24)."""
    import pickle

    from skboost.dask.train import pack_labels, unpack_labels

    rng = np.random.default_rng(5)
    n = 50_000
    rows, y, weight = (np.arange(7, 7 + n), rng.integers(0, 3, n) * 1.0,
                       np.ones(n))
    if case == "grouped":   # rows grouped by query: runs out of order
        rows = rng.permutation(n)
        y = rng.normal(size=n)
    elif case == "special":
        y = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e300, 2.5, 255.0,
                      256.0, -1.0])
        rows, weight = np.arange(10) * 2, np.r_[np.ones(9), -0.0]
    elif case == "empty":
        rows, y, weight = np.arange(0), np.zeros(0), np.zeros(0)
    elif case == "bounds":   # survival:aft's [lower, upper]
        y = np.column_stack([rng.random(n), np.full(n, np.inf)])
    elif case == "weights":
        weight = rng.integers(1, 4, n) / 2.0
    packed = pickle.loads(pickle.dumps(pack_labels(rows, y, weight)))
    rows_back, y_back, weight_back = unpack_labels(packed)
    for original, back in ((rows, rows_back), (y, y_back),
                           (weight, weight_back)):
        original = np.ascontiguousarray(original)
        assert back.dtype == original.dtype
        assert back.shape == original.shape
        assert back.tobytes() == original.tobytes()
    size = len(pickle.dumps(packed))
    if case == "classes":
        assert size < 1.1 * n
    elif case == "grouped":   # rows in no order: never more than 8 a row
        assert size < 8 * n + 8 * n + 1000


def test_gradient_check_maxima_are_the_active_maxima_of_every_row():
    """A shard takes a tree's quantisation maxima from the round's gradient
    check when the tree has every row and unit weights
    (``Shard._tree_maxima``): they must be the floats ``active_maxima``
    finds in its own pass (the oracle), per output, for gradients of any
    sign and magnitude (subnormal to 1e30)."""
    from skboost._model.limits import check_gradients
    from skboost.tree._histogram import active_maxima

    rng = np.random.default_rng(8)
    n = 30_011
    gpair = (rng.standard_normal((3, n, 2)) * 10.0 ** rng.integers(
        -40, 30, (3, n, 2))).astype(np.float32)
    gpair[1, rng.integers(0, n, 50), 0] = -3e30   # the largest |g| negative
    gpair[2] = 0.0
    everyone = np.ones(n, dtype=np.uint8)
    for n_threads in (1, 2):
        magnitudes = check_gradients(gpair, 1.0, "test", 0, n_threads)
        for k in range(3):
            g, h, count = active_maxima(gpair[k], None, everyone, n_threads)
            assert (float(magnitudes[k][0]), float(magnitudes[k][1])) == (g, h)
            assert count == n
    assert magnitudes[1][0] == np.float32(3e30)


def test_shards_take_the_gradient_kernels_extremes(client):
    """The logistic and squared-error kernels return the pairs' extremes
    with the gradients; a shard's round hands them to the gradient check,
    as single-node training does (``InProcessRounds._round``), instead of
    the check's own pass over the pairs (``pair_magnitudes``, counted on
    the workers). The fits stay those of one worker, bit for bit."""
    def count_passes():
        from skboost._model import limits

        original = limits.pair_magnitudes

        def counted(*args, **kwargs):
            limits.pair_magnitudes_calls += 1
            return original(*args, **kwargs)

        limits.pair_magnitudes_calls = 0
        limits.pair_magnitudes_original = original
        limits.pair_magnitudes = counted

    def passes_counted():
        from skboost._model import limits

        limits.pair_magnitudes = limits.pair_magnitudes_original
        return limits.pair_magnitudes_calls

    X, y = _discrete_data(n=1600, seed=21)
    dX = da.from_array(X, chunks=(400, 5))
    for model, target in ((DaskBoostRegressor, y),
                          (DaskBoostClassifier, (y > np.median(y)).astype(
                              int))):
        client.run(count_passes)
        try:
            two = model(**PARAMS).fit(dX, da.from_array(target, chunks=400),
                                      client=client)
        finally:
            counts = client.run(passes_counted)
        assert len(counts) == 2 and set(counts.values()) == {0}
        one = model(**PARAMS).fit(
            da.from_array(X, chunks=(1600, 5)),
            da.from_array(target, chunks=1600), client=client)
        assert np.array_equal(two.to_local().predict(X),
                              one.to_local().predict(X))


def test_shards_start_their_trees_with_the_rounds_maxima(client):
    """Every tree of a shard starts with the round's gradient maxima (as
    single-node training's do): its local finder's fixed-point gradients
    then make no pass over the rows for their own (the scales are the
    shards'). Recorded on the workers, each tree's maxima against numpy's
    over the pairs it grew on (the oracle: max |g|, max |h|, least h);
    the model stays that of one worker, bit for bit."""
    def record_starts():
        import numpy

        from skboost.tree.finders import hist

        original = hist.HistFinder.start_tree

        def recorded(self, gpair, active, gradient_maxima=None):
            pairs = numpy.asarray(gpair, dtype=numpy.float64)
            hist.recorded_starts.append((
                None if gradient_maxima is None
                else numpy.asarray(gradient_maxima, dtype=numpy.float64),
                numpy.array([numpy.abs(pairs[:, 0]).max(),
                             numpy.abs(pairs[:, 1]).max(),
                             pairs[:, 1].min()])))
            return original(self, gpair, active, gradient_maxima)

        hist.recorded_starts = []
        hist.original_start_tree = original
        hist.HistFinder.start_tree = recorded

    def recorded_starts():
        from skboost.tree.finders import hist

        hist.HistFinder.start_tree = hist.original_start_tree
        return hist.recorded_starts

    X, y = _discrete_data(n=1600, seed=22)
    labels = np.digitize(y, np.quantile(y, [0.3, 0.7]))   # 3 classes
    params = dict(PARAMS, n_estimators=4)
    client.run(record_starts)
    try:
        two = DaskBoostClassifier(**params).fit(
            da.from_array(X, chunks=(400, 5)),
            da.from_array(labels, chunks=400), client=client)
    finally:
        starts = client.run(recorded_starts)
    for per_worker in starts.values():
        assert len(per_worker) == 4 * 3   # a tree per round and class
        for given, oracle in per_worker:
            assert given is not None and np.array_equal(given, oracle)
    one = DaskBoostClassifier(**params).fit(
        da.from_array(X, chunks=(1600, 5)),
        da.from_array(labels, chunks=1600), client=client)
    assert np.array_equal(two.to_local().predict_proba(X),
                          one.to_local().predict_proba(X))


def test_subsample_matches_single_node_rate(client):
    """With subsample < 1 the rows differ from single-node's draw (which
    depends on the row order), but the fit is as good."""
    X, y = _discrete_data(n=2000, seed=9)
    params = dict(PARAMS, n_estimators=20, subsample=0.5)
    model = DaskBoostRegressor(**params).fit(
        da.from_array(X, chunks=(500, 5)), da.from_array(y, chunks=500))
    local = BoostRegressor(**params).fit(X, y)
    dask_error = np.mean((model.to_local().predict(X) - y) ** 2)
    local_error = np.mean((local.predict(X) - y) ** 2)
    assert dask_error < 1.25 * local_error


# -- predictions, conversion, saving ----------------------------------------

def test_predictions_apply_conversion_and_save(client, tmp_path):
    X, y = _discrete_data(seed=4)
    labels = (y > np.median(y)).astype(int)
    dX = da.from_array(X, chunks=(300, 5))
    model = DaskBoostClassifier(**PARAMS).fit(
        dX, da.from_array(labels, chunks=300))
    local = model.to_local()
    assert type(local) is BoostClassifier
    leaves = model.apply(dX)
    assert isinstance(leaves, da.Array) and leaves.chunks[0] == dX.chunks[0]
    assert np.array_equal(leaves.compute(), local.apply(X))
    proba = model.predict_proba(dX, iteration_range=(0, 3))
    assert np.array_equal(proba.compute(),
                          local.predict_proba(X, iteration_range=(0, 3)))
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = BoostClassifier.load(path)
    assert np.array_equal(loaded.predict_proba(X), local.predict_proba(X))
    again = DaskBoostClassifier().load_model(path)
    assert np.array_equal(again.predict_proba(dX).compute(),
                          local.predict_proba(X))
    back = DaskBoostClassifier.from_local(local)
    assert np.array_equal(back.predict(dX).compute(), local.predict(X))
    with pytest.raises(TypeError, match="BoostClassifier"):
        DaskBoostClassifier.from_local(BoostRegressor())


# -- bad input: clear errors before training --------------------------------

def test_partitions_that_do_not_line_up(client):
    X, y = _discrete_data(n=600)
    dX = da.from_array(X, chunks=(200, 5))
    with pytest.raises(ValueError, match="3 partitions but y has 2"):
        DaskBoostRegressor(**PARAMS).fit(dX, da.from_array(y, chunks=300))
    with pytest.raises(ValueError, match="do not line up"):
        DaskBoostRegressor(**PARAMS).fit(
            dX, da.from_array(y, chunks=((100, 300, 200),)))
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=2)
    series = dd.from_pandas(pd.Series(y), npartitions=3).repartition(
        npartitions=2)
    series = dd.from_pandas(pd.Series(y[:-10]), npartitions=2)
    with pytest.raises(ValueError, match="must line up"):
        DaskBoostRegressor(**PARAMS).fit(frame, series)


def test_bad_weights(client):
    X, y = _discrete_data(n=400)
    dX, dy = da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100)
    w = np.ones(400)
    w[250] = -1.0
    with pytest.raises(ValueError, match="partition 2: sample_weight must "
                                         "be finite and non-negative"):
        DaskBoostRegressor(**PARAMS).fit(dX, dy,
                                         sample_weight=da.from_array(w, 100))
    with pytest.raises(ValueError, match="positive sum"):
        DaskBoostRegressor(**PARAMS).fit(
            dX, dy, sample_weight=da.zeros(400, chunks=100))


def test_unknown_chunks_and_not_dask(client):
    X, y = _discrete_data(n=400)
    dX = da.from_array(X, chunks=(100, 5))
    dy = da.from_array(y, chunks=100)
    keep = dy > 0
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        DaskBoostRegressor(**PARAMS).fit(dX[keep], dy[keep])
    with pytest.raises(TypeError, match="dask array"):
        DaskBoostRegressor(**PARAMS).fit(X, y)


def test_mixed_dtypes_and_categories_across_partitions(client):
    import dask

    X, y = _discrete_data(n=400, n_features=3)
    first = pd.DataFrame({"a": X[:200, 0], "b": X[:200, 1]})
    second = pd.DataFrame({"a": X[200:, 0].astype(np.float64),
                           "b": X[200:, 1]})
    meta = first.iloc[:0]
    frame = dd.from_delayed([dask.delayed(first), dask.delayed(second)],
                            meta=meta)
    dy = dd.from_delayed([dask.delayed(pd.Series(y[:200])),
                          dask.delayed(pd.Series(y[200:]))],
                         meta=pd.Series([], dtype=float))
    with pytest.raises(ValueError, match="partition 1 of X .*'a'.*float64"):
        DaskBoostRegressor(**PARAMS).fit(frame, dy)
    cats = [pd.DataFrame({"a": X[:200, 0], "c": pd.Categorical(["x"] * 200)}),
            pd.DataFrame({"a": X[200:, 0],
                          "c": pd.Categorical(["x", "y"] * 100)})]
    frame = dd.from_delayed([dask.delayed(c) for c in cats], meta=cats[1][:0],
                            verify_meta=False)
    with pytest.raises(ValueError, match="categories"):
        DaskBoostRegressor(**PARAMS).fit(frame, dy)


def test_unsupported_options_are_clear_errors(client):
    X, y = _discrete_data(n=200)
    dX, dy = da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="tree_method='exact'"):
        DaskBoostRegressor(tree_method="exact").fit(dX, dy)
    with pytest.raises(ValueError, match="re-fits its leaves"):
        DaskBoostRegressor(objective="reg:absoluteerror").fit(dX, dy)
    with pytest.raises(ValueError, match="at least 2 classes"):
        DaskBoostClassifier().fit(dX, da.zeros(200, chunks=100))


# -- failures end fit promptly with a clear error ---------------------------

def test_failing_partition_is_named(client):
    X, y = _discrete_data(n=400)

    def explode(block):
        if block[0, 0] == block[0, 0] and block.shape[0] == 100 and \
                block[0, 1] == X[200, 1]:
            raise RuntimeError("disk on fire")
        return block

    dX = da.from_array(X, chunks=(100, 5)).map_blocks(explode)
    with pytest.raises(RuntimeError, match="partition 2 of X failed.*"
                                           "disk on fire"):
        DaskBoostRegressor(**PARAMS).fit(dX, da.from_array(y, chunks=100))


class _KillWorker:
    """A training callback that kills the process of one worker after
    the second round."""

    def __init__(self, client, address):
        self.client, self.address = client, address

    def after_iteration(self, model, epoch, evals_log):
        if epoch == 1:
            pid = self.client.run(os.getpid, workers=[self.address])
            os.kill(pid[self.address], signal.SIGKILL)
        return False


def _fit_in_background(model, X, y, client, outcome):
    """``model.fit`` on a daemon thread (started, returned): its outcome,
    "finished" or the exception, goes to ``outcome["result"]``; a test
    joins with a timeout to tell a hang."""

    def fit():
        try:
            model.fit(X, y, client=client)
            outcome["result"] = "finished"
        except Exception as error:   # noqa: BLE001 - inspected by the test
            outcome["result"] = error

    thread = threading.Thread(target=fit, daemon=True)
    thread.start()
    return thread


def test_killed_worker_ends_fit_with_clear_error():
    """max_recoveries=0 (recovery: tests/test_dask_recovery.py)."""
    X, y = _discrete_data(n=800)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=True,
                                       dashboard_address=None)
    outcome = {}
    with distributed.Client(cluster) as client:
        victim = _workers(client)[1]
        model = DaskBoostRegressor(
            n_estimators=200, max_depth=3, n_jobs=1, max_recoveries=0,
            callbacks=[_KillWorker(client, victim)])

        thread = _fit_in_background(model, da.from_array(X, chunks=(200, 5)),
                                    da.from_array(y, chunks=200), client,
                                    outcome)
        thread.join(timeout=120)
    cluster.close()
    assert "result" in outcome, "fit hung after a worker died"
    error = outcome["result"]
    assert isinstance(error, RuntimeError), error
    assert victim in str(error)


def test_worker_without_rows_of_some_nodes(client):
    """Partitions sorted by the main feature: a worker holds no rows of
    many nodes (empty local slices), and the model is still single-node's."""
    X, y = _discrete_data(n=1200, seed=8)
    order = np.argsort(np.nan_to_num(X[:, 0], nan=-1.0), kind="stable")
    X, y = X[order], y[order]
    workers = _workers(client)
    pX, fx = _placed(client, da.from_array(X, chunks=(400, 5)), workers)
    py, fy = _placed(client, da.from_array(y, chunks=400), workers)
    params = dict(PARAMS, min_child_weight=0.0)
    model = DaskBoostRegressor(**params).fit(pX, py)
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(model.booster_, local.booster_)


def test_eval_set_and_early_stopping_equal_single_node(client):
    X, y = _discrete_data(n=1500, seed=12)
    labels = (y > np.median(y)).astype(int)
    X_val, y_val = X[1000:], labels[1000:]
    w_val = np.random.default_rng(2).uniform(0.5, 1.5, size=500)
    params = dict(PARAMS, n_estimators=40, learning_rate=0.5,
                  eval_metric=["logloss", "auc"], early_stopping_rounds=3)
    model = DaskBoostClassifier(**params).fit(
        da.from_array(X[:1000], chunks=(250, 5)),
        da.from_array(labels[:1000], chunks=250),
        eval_set=[(da.from_array(X_val, chunks=(200, 5)),
                   da.from_array(y_val, chunks=200))],
        sample_weight_eval_set=[da.from_array(w_val, chunks=200)])
    local = BoostClassifier(**params).fit(
        X[:1000], labels[:1000], eval_set=[(X_val, y_val)],
        sample_weight_eval_set=[w_val])
    assert model.evals_result_ == local.evals_result_
    assert model.best_iteration == local.best_iteration < 39
    assert np.array_equal(model.predict_proba(
        da.from_array(X_val, chunks=(100, 5))).compute(),
        local.predict_proba(X_val))


def test_ranker_equals_single_node(client):
    from skboost import BoostRanker
    from skboost.dask import DaskBoostRanker

    rng = np.random.default_rng(21)
    X, _ = _discrete_data(n=1200, seed=21)
    relevance = np.clip(np.nan_to_num(X[:, 0]) // 10 + rng.integers(0, 2, 1200),
                        0, 4)
    qid = np.repeat(np.arange(60), 20)
    shuffle = np.concatenate([rng.permutation(np.arange(a, a + 400))
                              for a in (0, 400, 800)])   # queries mixed
    X, relevance, qid = X[shuffle], relevance[shuffle], qid[shuffle]
    params = dict(PARAMS, objective="rank:ndcg")
    model = DaskBoostRanker(**params).fit(
        da.from_array(X, chunks=(400, 5)),
        da.from_array(relevance, chunks=400), qid=da.from_array(qid, 400))
    local = BoostRanker(**params).fit(X, relevance, qid=qid)
    assert _trees_equal(model.booster_, local.booster_)
    assert np.array_equal(model.predict(da.from_array(X, 300)).compute(),
                          local.predict(X))
    with pytest.raises(ValueError, match="every query must lie inside one"):
        DaskBoostRanker(**params).fit(
            da.from_array(X, chunks=(300, 5)),
            da.from_array(relevance, chunks=300), qid=da.from_array(qid, 300))


# -- the reduction among the workers (skboost/_dask_reduce.py) ---------------

@pytest.mark.parametrize("params", [
    dict(monotone_constraints=(1, -1, 0, 0, 0)),
    dict(interaction_constraints=[[0, 1], [2, 3, 4]], colsample_bylevel=0.8),
    dict(grow_policy="lossguide", max_leaves=9, max_depth=0),
    dict(num_parallel_tree=2, colsample_bytree=0.6),
], ids=["monotone", "interactions", "lossguide", "parallel-trees"])
def test_constraints_and_policies_equal_single_node(client, params):
    """Every way the driver chooses features and nodes, with the scans on
    the workers (monotone bounds: scanned on request) and the choices
    merged from per-feature bests: single-node's trees bit for bit."""
    X, y = _discrete_data(seed=11)
    params = dict(PARAMS, **params)
    dask_model = DaskBoostRegressor(**params).fit(
        da.from_array(X, chunks=(300, 5)), da.from_array(y, chunks=300))
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(dask_model.booster_, local.booster_)


def test_one_feature_leaves_a_worker_without_features(client):
    """More workers than features: a shard owns no feature (it only sends
    its histograms); still single-node's model."""
    X, y = _discrete_data(n_features=1, seed=4)
    dask_model = DaskBoostRegressor(**PARAMS).fit(
        da.from_array(X, chunks=(300, 1)), da.from_array(y, chunks=300))
    assert len(dask_model._dask_stats) == 2
    local = BoostRegressor(**PARAMS).fit(X, y)
    assert _trees_equal(dask_model.booster_, local.booster_)


def test_feature_ranges_cover_every_feature_once():
    from skboost.dask.reduce import feature_ranges

    rng = np.random.default_rng(0)
    for n_shards in (1, 2, 3, 7, 40):
        bin_ptr = np.r_[0, np.cumsum(rng.integers(2, 300, size=28))]
        ranges = feature_ranges(bin_ptr, n_shards)
        assert len(ranges) == n_shards
        assert ranges[0][0] == 0 and ranges[-1][1] == 28
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        bins = [bin_ptr[b] - bin_ptr[a] for a, b in ranges]
        if n_shards <= 3:   # balanced by bins, within one feature's bins
            assert max(bins) - min(bins) <= 2 * 300


def _tied_histograms(n_nodes=40, n_features=9, bins=6, seed=5):
    """Random discrete node histograms (every feature of a node summing to
    the node's totals, features 0-2 identical: their candidates tie), the
    nodes' sums, the bins of each feature, thresholds and a context."""
    from skboost.tree._context import SplitContext
    from skboost.tree.driver import TreeParams

    rng = np.random.default_rng(seed)
    bin_ptr = np.arange(0, (bins + 1) * n_features + 1, bins + 1)
    base = rng.integers(0, 4, size=(n_nodes, bins + 1, 2)) * 2 ** 20
    hist = rng.integers(0, 4, size=(n_nodes, bin_ptr[-1], 2)) * 2 ** 20
    for f in range(3):
        hist[:, bin_ptr[f]:bin_ptr[f + 1]] = base
    hist[:, :, 0] -= 2 ** 21
    # every feature of a node sums to the node's totals: fix the missing bins
    totals = hist[:, :bins + 1].sum(axis=1)
    for f in range(1, n_features):
        part = hist[:, bin_ptr[f]:bin_ptr[f + 1] - 1].sum(axis=1)
        hist[:, bin_ptr[f + 1] - 1] = totals - part
    thresholds = np.arange(bin_ptr[-1], dtype=np.float64)
    context = SplitContext.from_params(TreeParams(min_child_weight=0.0),
                                       1).with_scales(2.0 ** 20, 2.0 ** 20)
    return (np.ascontiguousarray(hist), np.ascontiguousarray(totals),
            bin_ptr, thresholds, context)


def _slice_scans(hist, sums, bin_ptr, thresholds, context, slices,
                 per_feature=True):
    """Each feature slice's scan of every node (as the shards scan)."""
    from skboost.dask.reduce import SliceScanner

    n_nodes = hist.shape[0]
    nodes = np.arange(n_nodes)
    parts = []
    for first, stop in slices:
        scanner = SliceScanner(bin_ptr, thresholds, (first, stop), n_nodes,
                               None, 1)
        scanner.pool.array[:n_nodes] = hist[:, bin_ptr[first]:bin_ptr[stop]]
        scanner.table.reserve(n_nodes)
        scanner.table["hist_row"][:n_nodes] = nodes
        scanner.table["sums"][:n_nodes] = sums
        parts.append(scanner.scan(nodes, context,
                                  per_feature=per_feature)[0])
    return np.concatenate(parts, axis=1)


def _assert_same_splits(merged, expected):
    found = expected["feature"] >= 0
    assert np.array_equal(merged["feature"], expected["feature"])
    assert (expected["feature"][found] == 0).any()   # a tie was decided
    for name in ("gain", "threshold", "split_bin", "default_left",
                 "Gq_left", "Hq_left", "G_left", "H_left"):
        assert np.array_equal(merged[name][found], expected[name][found]), \
            name


def test_merged_feature_bests_equal_the_scan_of_every_feature():
    """Oracle: the split kernel on whole histograms with each node's
    allowed features; merged: the per-(node, feature) bests of feature
    slices (as the shards scan them) under the allowed masks. Discrete
    histograms make equal gains across features (ties to the lower
    feature)."""
    from skboost.dask.reduce import merge_feature_bests
    from skboost.tree._hist_split import find_best_splits_hist

    hist, sums, bin_ptr, thresholds, context = _tied_histograms()
    rng = np.random.default_rng(6)
    allowed = (rng.random((hist.shape[0], 9)) < 0.6).astype(np.uint8)
    expected = find_best_splits_hist(hist, sums, bin_ptr,
                                     thresholds[None, :], allowed,
                                     context=context)
    per_feature = _slice_scans(hist, sums, bin_ptr, thresholds, context,
                               ((0, 2), (2, 5), (5, 9)))
    assert per_feature.shape == (hist.shape[0], 9)
    _assert_same_splits(merge_feature_bests(per_feature, allowed), expected)


def test_merged_slice_bests_equal_the_scan_of_every_feature():
    """Every feature allowed (no column sampling): each slice keeps only
    its best per node (``per_feature=False``), and the merge of those
    equals the split kernel on whole histograms (ties across slices to
    the lower feature; a slice may own no feature)."""
    from skboost.dask.reduce import merge_feature_bests
    from skboost.tree._hist_split import find_best_splits_hist

    hist, sums, bin_ptr, thresholds, context = _tied_histograms()
    allowed = np.ones((hist.shape[0], 9), dtype=np.uint8)
    expected = find_best_splits_hist(hist, sums, bin_ptr,
                                     thresholds[None, :], allowed,
                                     context=context)
    slices = ((0, 1), (1, 1), (1, 5), (5, 9))
    per_slice = _slice_scans(hist, sums, bin_ptr, thresholds, context,
                             slices, per_feature=False)
    assert per_slice.shape == (hist.shape[0], 3)   # the empty slice: none
    merged = merge_feature_bests(per_slice, np.ones(per_slice.shape,
                                                    dtype=np.uint8))
    _assert_same_splits(merged, expected)


class _SignalAfter(TrainingCallback):
    """Sets ``event`` after round ``n`` (the callbacks run on the client)."""

    def __init__(self, n, event):
        self.n, self.event = n, event

    def after_iteration(self, booster, iteration, evals_log):
        if iteration + 1 >= self.n:
            self.event.set()
        return False


def test_worker_killed_during_the_exchange_ends_fit_promptly():
    """A worker dies mid-round, while the other waits for its histograms
    (nearly all of a round is exchanges): a clear error naming it, no
    hang, and the surviving worker is free for the next fit (its shard's
    wait was aborted)."""
    X, y = _discrete_data(n=800)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=True,
                                       dashboard_address=None)
    outcome = {}
    with distributed.Client(cluster) as client:
        survivor, victim = _workers(client)
        pid = client.run(os.getpid, workers=[victim])[victim]
        dX = da.from_array(X, chunks=(200, 5))
        dy = da.from_array(y, chunks=200)
        rounds_under_way = threading.Event()
        model = DaskBoostRegressor(n_estimators=5000, max_depth=6, n_jobs=1,
                                   max_recoveries=0,
                                   callbacks=[_SignalAfter(3, rounds_under_way)])

        thread = _fit_in_background(model, dX, dy, client, outcome)
        # killed once rounds run (the shards in their exchanges), however
        # slow the set-up on a busy machine: a worker killed before its
        # partitions were placed is replaced by Dask, and the fit finishes
        assert rounds_under_way.wait(timeout=120), outcome
        os.kill(pid, signal.SIGKILL)
        thread.join(timeout=60)
        assert "result" in outcome, "fit hung after a worker died"
        error = outcome["result"]
        assert isinstance(error, RuntimeError), error
        assert victim in str(error)
        # the survivor's actor thread is not stuck in the exchange
        again = {}

        def refit():
            small = DaskBoostRegressor(n_estimators=3, max_depth=2, n_jobs=1)
            mine = client.scatter(X[:300], workers=[survivor])
            target = client.scatter(y[:300], workers=[survivor])
            again["model"] = small.fit(
                da.from_delayed(mine, shape=(300, 5), dtype=X.dtype),
                da.from_delayed(target, shape=(300,), dtype=y.dtype),
                client=client)

        retry = threading.Thread(target=refit, daemon=True)
        retry.start()
        retry.join(timeout=60)
        assert "model" in again, "the surviving worker stayed blocked"
    cluster.close()


MARKED_LABEL = -1000.0


def _squared_error_refused_on_marked_rows(y, y_pred):
    """Squared error, whose gradients are NaN on the shard holding a row
    labelled ``MARKED_LABEL``: that shard's round fails (the objective's
    gradients are refused there) while the other waits for its
    histograms in the round's first exchange."""
    grad = y_pred - y
    if np.any(y == MARKED_LABEL):
        grad = grad * np.nan
    return grad, np.ones_like(y)


def _shard_calls_running():
    """The names of this worker's shard threads that are inside a shard's
    call (a frame of skboost/dask/train.py on their stack)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    running = []
    for ident, frame in sys._current_frames().items():
        if not names.get(ident, "").startswith("skboost-shard"):
            continue
        while frame is not None:
            if frame.f_code.co_filename.endswith(
                    os.path.join("dask", "train.py")):
                running.append(names[ident])
                break
            frame = frame.f_back
    return running


class _Records(logging.Handler):
    """The log records of level ERROR and above emitted in this process
    (Dask's loop thread logs a failed call to a released actor there)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []

    def emit(self, record):
        self.records.append(f"{record.name}: {record.getMessage()}")


def test_failed_round_returns_once_every_shard_answered(client):
    """One shard's round fails while the other waits for its histograms:
    the fit raises the failure only once the waiting shard's call has
    ended (the abort answered; its answer is a note on the error), so the
    shards are released with no call under way: no shard thread is still
    in a call when the fit returns,
    and no call reaches a released shard (Dask would log its KeyError
    on the client, formatting a traceback on its loop thread while the
    caller formats the fit's: CPython 3.11.7's ``ast`` is not thread-safe,
    gh-106905, and pytest's report of the failure was lost in CI). A real
    failure, no timing: the waiting shard can only leave its exchange by
    the abort."""
    X, y = _discrete_data(n=800)
    y[700] = MARKED_LABEL
    workers = _workers(client)
    halves = [slice(0, 400), slice(400, 800)]
    dX = da.concatenate([da.from_delayed(client.scatter(X[h], workers=[w]),
                                         shape=(400, 5), dtype=X.dtype)
                         for h, w in zip(halves, workers)])
    dy = da.concatenate([da.from_delayed(client.scatter(y[h], workers=[w]),
                                         shape=(400,), dtype=y.dtype)
                         for h, w in zip(halves, workers)])
    model = DaskBoostRegressor(
        n_estimators=3, max_depth=3, n_jobs=1, max_recoveries=0,
        objective=_squared_error_refused_on_marked_rows)
    records = _Records()
    logging.getLogger().addHandler(records)
    try:
        with pytest.raises(ValueError,
                           match="NaN or infinite gradients") as failure:
            model.fit(dX, dy, client=client)
        running = client.run(_shard_calls_running)
    finally:
        logging.getLogger().removeHandler(records)
    # the waiting shard's answer came before the fit raised: its call
    # ended by the abort, named on the error
    notes = getattr(failure.value, "__notes__", [])
    assert any(workers[0] in note and "training stopped" in note
               for note in notes), notes
    assert not any(running.values()), running
    assert not records.records, records.records


def test_live_workers_are_seen_while_the_client_refreshes_its_info(client):
    """The shards' liveness checks (``cluster_workers``, read by
    ``ShardGroup`` while it waits for the shards) see every live worker
    while the client refreshes its cached scheduler info, which lists no
    worker (``distributed.client.scheduler-info-interval``: every 2 s by
    default, every millisecond here, so that a check that read the cache,
    as ``client.scheduler_info()["workers"]`` does, would see the workers
    gone about once in 20: a spurious WorkerLost). Oracle: the addresses
    of the workers the cluster started."""
    import dask

    from skboost.dask.train import ShardGroup, cluster_workers

    started = {w.worker_address for w in client.cluster.workers.values()}
    assert len(started) == 2
    with dask.config.set(
            {"distributed.client.scheduler-info-interval": "1ms"}):
        refreshing = distributed.Client(client.cluster, set_as_default=False)
    try:
        group = ShardGroup(refreshing, [], sorted(started))
        for _ in range(300):
            assert cluster_workers(refreshing) == started
            assert group._gone(0.0) == []
    finally:
        refreshing.close()


# -- the direct links between the workers (_dask_links) ---------------------

def _linked_exchanges(n_shards, bin_ranges, timeout=600.0):
    """``n_shards`` SocketExchanges in this process, linked by
    ``open_links`` over loopback (one thread per shard, as on workers)."""
    from skboost.dask.links import SocketExchange, new_token, open_links

    import socket

    servers = []
    for _ in range(n_shards):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        servers.append(server)
    endpoints = [("127.0.0.1", s.getsockname()[1]) for s in servers]
    token = new_token()
    links = [None] * n_shards

    def link(k):
        links[k] = open_links(servers[k], k, endpoints, token)

    threads = [threading.Thread(target=link, args=(k,))
               for k in range(n_shards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    names = [f"tcp://127.0.0.1:{1000 + k}" for k in range(n_shards)]
    return [SocketExchange(k, names, bin_ranges, links[k], timeout=timeout)
            for k in range(n_shards)]


def _run_on_shards(exchanges, step):
    """``step(k, exchange)`` on one thread per shard; results (or the
    exception raised) in shard order."""
    out = [None] * len(exchanges)

    def run(k):
        try:
            out[k] = step(k, exchanges[k])
        except Exception as error:   # noqa: BLE001 - returned
            out[k] = error

    threads = [threading.Thread(target=run, args=(k,), daemon=True)
               for k in range(len(exchanges))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "an exchange hung"
    return out


def test_socket_exchange_reduce_scatter_and_allgather():
    """Three shards (one owning no bins): each gets the exact sum over
    the shards of its bins of the chosen pool rows (naive sum as the
    oracle), every step for many steps; all-gathers in shard order."""
    rng = np.random.default_rng(0)
    ranges = [(0, 70), (70, 70), (70, 200)]
    exchanges = _linked_exchanges(3, ranges)
    pools = [rng.integers(-2**60, 2**60, size=(9, 200, 2)) // 4
             for _ in range(3)]
    for n_rows in (1, 3, 7, 2):
        rows = rng.choice(9, size=n_rows, replace=False)
        summed = _run_on_shards(
            exchanges, lambda k, ex: ex.reduce(pools[k], rows).copy())
        total = sum(pool[rows] for pool in pools)
        for k, (first, stop) in enumerate(ranges):
            assert np.array_equal(summed[k], total[:, first:stop])
        # into given rows of a pool (as the scanner's), other rows untouched
        targets = rng.choice(n_rows + 3, size=n_rows, replace=False)
        outs = [np.full((n_rows + 3, stop - first, 2), -7, dtype=np.int64)
                for first, stop in ranges]
        _run_on_shards(exchanges, lambda k, ex: ex.reduce(
            pools[k], rows, out=outs[k], out_rows=targets))
        untouched = np.setdiff1d(np.arange(n_rows + 3), targets)
        for k, (first, stop) in enumerate(ranges):
            assert np.array_equal(outs[k][targets], total[:, first:stop])
            assert (outs[k][untouched] == -7).all()
        # and taken off other rows (the parents') in the same pass
        parents = np.setdiff1d(np.arange(2 * n_rows + 3), targets)[:n_rows]
        outs = [rng.integers(-2**58, 2**58, size=(2 * n_rows + 3,
                                                  stop - first, 2))
                for first, stop in ranges]
        expected = [o.copy() for o in outs]
        for k, (first, stop) in enumerate(ranges):
            expected[k][targets] = total[:, first:stop]
            expected[k][parents] -= total[:, first:stop]
        _run_on_shards(exchanges, lambda k, ex: ex.reduce(
            pools[k], rows, out=outs[k], out_rows=targets,
            subtract_from=parents))
        assert all(np.array_equal(o, e) for o, e in zip(outs, expected))
        gathered = _run_on_shards(
            exchanges, lambda k, ex: ex.allgather({"shard": k, "n": n_rows}))
        assert all(g == [{"shard": j, "n": n_rows} for j in range(3)]
                   for g in gathered)
    for ex in exchanges:
        ex.close()


def _unix_linked_exchanges(n_shards, bin_ranges):
    """``n_shards`` SocketExchanges in this process linked pairwise by
    Unix socket pairs (shards of one machine), tuned as ``open_links``
    tunes its links."""
    import socket

    from skboost.dask.links import SocketExchange, _tune

    links = [[None] * n_shards for _ in range(n_shards)]
    for i in range(n_shards):
        for j in range(i + 1, n_shards):
            links[i][j], links[j][i] = socket.socketpair(socket.AF_UNIX)
            _tune(links[i][j])
            _tune(links[j][i])
    names = [f"tcp://127.0.0.1:{1000 + k}" for k in range(n_shards)]
    return [SocketExchange(k, names, bin_ranges, links[k])
            for k in range(n_shards)]


@pytest.mark.skipif(not hasattr(os, "memfd_create"),
                    reason="shared outboxes need Linux's memfd_create")
def test_socket_exchange_shares_memory_between_unix_linked_shards():
    """Three shards over Unix sockets (one owning no bins) share memory:
    each reduce sums exactly the pieces every shard put in its outbox
    (naive sum as the oracle), for reduces after an all-gather (through
    the outboxes) and right after another reduce (through the sockets:
    a peer may still read the outbox); outboxes too small: the sockets."""
    rng = np.random.default_rng(1)
    ranges = [(0, 70), (70, 70), (70, 200)]
    exchanges = _unix_linked_exchanges(3, ranges)
    shared = _run_on_shards(exchanges,
                            lambda k, ex: ex.share_memory(5 * 200 * 16))
    assert shared == [True] * 3
    assert all(ex.outbox is not None and len(ex.inboxes) == 2
               for ex in exchanges)
    pools = [rng.integers(-2**60, 2**60, size=(9, 200, 2)) // 4
             for _ in range(3)]
    last_shared = False
    for n_rows, gather_first in ((1, True), (3, True), (4, False),
                                 (5, True), (7, True), (2, False),
                                 (3, False)):
        rows = rng.choice(9, size=n_rows, replace=False)
        if gather_first:
            _run_on_shards(exchanges, lambda k, ex: ex.allgather(k))
        before = [ex.sent_bytes for ex in exchanges]
        shared_before = [ex.shared_bytes for ex in exchanges]
        summed = _run_on_shards(
            exchanges, lambda k, ex: ex.reduce(pools[k], rows).copy())
        total = sum(pool[rows] for pool in pools)
        for k, (first, stop) in enumerate(ranges):
            assert np.array_equal(summed[k], total[:, first:stop]), summed[k]
        # the histogram bytes each shard passed on, whichever the path
        assert [ex.sent_bytes - b for ex, b in zip(exchanges, before)] == [
            n_rows * (200 - (stop - first)) * 16 for first, stop in ranges]
        # the outbox when it fits and the step before was no reduce
        # through it
        through_outbox = n_rows <= 5 and (gather_first or not last_shared)
        last_shared = through_outbox
        assert [ex.shared_bytes - b for ex, b in zip(
            exchanges, shared_before)] == [
            ex.sent_bytes - b if through_outbox else 0
            for ex, b in zip(exchanges, before)]
        for pool in pools:   # the next reduce's histograms are new ones
            pool += rng.integers(-2**40, 2**40, size=pool.shape)
    for ex in exchanges:
        ex.close()


def test_socket_exchange_shares_no_memory_over_tcp():
    """Shards linked over TCP (other machines) keep the sockets: no
    outbox, and the reduces still exact."""
    ranges = [(0, 3), (3, 8)]
    exchanges = _linked_exchanges(2, ranges)
    assert _run_on_shards(exchanges, lambda k, ex: ex.share_memory(
        1 << 20)) == [False, False]
    assert all(ex.outbox is None for ex in exchanges)
    pools = [np.full((2, 8, 2), k + 1, dtype=np.int64) for k in range(2)]
    summed = _run_on_shards(
        exchanges, lambda k, ex: ex.reduce(pools[k], [1]).copy())
    assert (summed[0] == 3).all() and summed[0].shape == (1, 3, 2)
    assert (summed[1] == 3).all() and summed[1].shape == (1, 5, 2)
    for ex in exchanges:
        ex.close()


@pytest.mark.skipif(not hasattr(os, "memfd_create"),
                    reason="shared outboxes need Linux's memfd_create")
def test_socket_exchange_reduces_histograms_built_in_the_outbox():
    """Histograms written straight into the outbox (as the shards' local
    finders build them there) reach the reduce without a copy: each shard
    gets the exact sum of its bins over the shards (naive sum of copies
    as the oracle), into a pool's rows too; the outbox is writable only
    once a step followed the last reduce through it."""
    rng = np.random.default_rng(2)
    ranges = [(0, 70), (70, 70), (70, 200)]
    exchanges = _unix_linked_exchanges(3, ranges)
    assert _run_on_shards(exchanges, lambda k, ex: ex.share_memory(
        10 * 200 * 16)) == [True] * 3
    outboxes = [ex.outbox_histograms(200) for ex in exchanges]
    assert all(o.shape == (10, 200, 2) for o in outboxes)
    assert all(ex.outbox_histograms(200) is o
               for ex, o in zip(exchanges, outboxes))
    for n_rows in (1, 4, 10, 3):
        assert all(ex.outbox_writable() for ex in exchanges)
        rows = rng.choice(10, size=n_rows, replace=False)
        written = [rng.integers(-2**60, 2**60, size=(n_rows, 200, 2)) // 4
                   for _ in range(3)]
        for outbox, values in zip(outboxes, written):
            outbox[rows] = values
        before = [ex.shared_bytes for ex in exchanges]
        summed = _run_on_shards(
            exchanges, lambda k, ex: ex.reduce(outboxes[k], rows).copy())
        total = sum(written)
        for k, (first, stop) in enumerate(ranges):
            assert np.array_equal(summed[k], total[:, first:stop])
        assert [ex.shared_bytes - b for ex, b in zip(exchanges, before)] \
            == [n_rows * (200 - (stop - first)) * 16 for first, stop in ranges]
        # the peers may still be reading: not writable until the next step
        assert not any(ex.outbox_writable() for ex in exchanges)
        _run_on_shards(exchanges, lambda k, ex: ex.allgather(k))
    # into given rows of a pool (the scanner's)
    rows = np.array([7, 2])
    for outbox in outboxes:
        outbox[rows] = rng.integers(-2**40, 2**40, size=(2, 200, 2))
    total = sum(o[rows] for o in outboxes)
    outs = [np.zeros((4, stop - first, 2), dtype=np.int64)
            for first, stop in ranges]
    parents = [rng.integers(-2**40, 2**40, size=(2, stop - first, 2))
               for first, stop in ranges]
    for out, parent in zip(outs, parents):
        out[[1, 2]] = parent
    _run_on_shards(exchanges, lambda k, ex: ex.reduce(
        outboxes[k], rows, out=outs[k], out_rows=[3, 0],
        subtract_from=[1, 2]))
    for k, (first, stop) in enumerate(ranges):
        assert np.array_equal(outs[k][[3, 0]], total[:, first:stop])
        # taken off the parents' rows in the same pass
        assert np.array_equal(outs[k][[1, 2]],
                              parents[k] - total[:, first:stop])
    for ex in exchanges:
        ex.close()


def test_socket_exchange_refuses_a_note_outside_the_outbox():
    """A note of histograms built in a peer's outbox that points outside
    it (or at other bins) is an error naming the peer, never a read out
    of bounds."""
    import struct

    from skboost.dask.links import _ROWS_NOTE, _ROWS_NOTE_TAG

    ranges = [(0, 5), (5, 10)]
    exchanges = _unix_linked_exchanges(2, ranges)
    assert _run_on_shards(exchanges, lambda k, ex: ex.share_memory(
        4 * 10 * 16)) == [True, True]
    receiver = exchanges[1]

    def note(rows, n_bins=10, first=5, width=5):
        return (_ROWS_NOTE_TAG + _ROWS_NOTE.pack(n_bins, first, width)
                + np.asarray(rows, dtype="<i8").tobytes())

    # the peer's outbox as histograms (4 rows of 10 bins fit), the rows
    # noted and this shard's first bin
    hists, rows, first = receiver._inbox_piece(0, note([3, 0]), 2, 5)
    assert hists.shape == (4, 10, 2) and list(rows) == [3, 0] and first == 5
    for bad in (note([4]), note([-1]), note([0], first=0),
                note([0], width=4), note([0], n_bins=4, first=5),
                note([0, 1]), note([0])[:-3],
                note([0]) + struct.pack("<q", 1)):
        with pytest.raises(RuntimeError, match="tcp://127.0.0.1:1000"):
            receiver._inbox_piece(0, bad, 1, 5)
    for ex in exchanges:
        ex.close()


def _busy_task(seconds):
    """A plain task that runs Python for ``seconds``."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(1000))
    return True


def test_rounds_run_off_the_profiled_actor_thread(client):
    """The shards' rounds run on a thread of their own, outside the
    worker's active threads whose stacks Dask's profiler walks every
    10 ms (oracle: the workers' profile itself): a fit of ~1 s of rounds
    leaves no sample of the growth driver, while a plain task of half a
    second shows in the same profile (the profiler stays on)."""
    X, y = _discrete_data(n=20000, seed=3)
    start = time.time()
    DaskBoostRegressor(n_estimators=80, max_depth=6).fit(
        da.from_array(X, chunks=(5000, 5)), da.from_array(y, chunks=5000),
        client=client)
    assert client.submit(_busy_task, 0.5, pure=False).result()
    profile = repr(client.profile(start=start))
    assert "_busy_task" in profile
    assert "grow_round" not in profile and "driver.py" not in profile
    # the shards' threads end with their shards (no thread left per fit)
    deadline = time.monotonic() + 10
    while any(client.run(_shard_threads).values()):
        assert time.monotonic() < deadline, client.run(_shard_threads)
        time.sleep(0.1)


def _shard_threads():
    """The names of this worker's shard threads (``ActorShard``), after a
    garbage collection."""
    import gc

    gc.collect()
    return [t.name for t in threading.enumerate()
            if t.name.startswith("skboost-shard")]


def test_socket_exchange_lost_peer_abort_and_silent_peer():
    """A peer whose connection closes: an error naming its worker at once;
    an abort ends the wait; a silent peer: an error after the timeout."""
    ranges = [(0, 5), (5, 10)]
    hists = np.ones((1, 10, 2), dtype=np.int64)
    # the peer closes its end while this shard waits for its histograms
    first, second = _linked_exchanges(2, ranges)
    timer = threading.Timer(0.3, second.close)
    timer.start()
    error = _run_on_shards([first], lambda k, ex: ex.reduce(hists, [0]))[0]
    assert isinstance(error, RuntimeError) and "tcp://127.0.0.1:1001" in \
        str(error) and "lost the worker" in str(error), error
    first.close()
    # an abort from the client
    first, second = _linked_exchanges(2, ranges)
    threading.Timer(0.3, first.abort, args=("a failure elsewhere",)).start()
    error = _run_on_shards([first], lambda k, ex: ex.reduce(hists, [0]))[0]
    assert isinstance(error, RuntimeError) and "a failure elsewhere" in \
        str(error), error
    for ex in (first, second):
        ex.close()
    # a peer that never sends
    first, second = _linked_exchanges(2, ranges, timeout=1.0)
    error = _run_on_shards([first], lambda k, ex: ex.allgather(1))[0]
    assert isinstance(error, RuntimeError) and "within 1 s" in str(error) \
        and "tcp://127.0.0.1:1001" in str(error), error
    for ex in (first, second):
        ex.close()


def test_links_ignore_connections_of_other_fits():
    """A connection with another fit's token (or garbage) is closed, and
    the shards still link with each other."""
    import socket

    from skboost.dask.links import open_links, new_token

    servers = [socket.socket() for _ in range(2)]
    for s in servers:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
    endpoints = [("127.0.0.1", s.getsockname()[1]) for s in servers]
    stray = socket.create_connection(endpoints[1])
    stray.sendall(b"x" * 24)   # a hello of the wrong token
    token = new_token()
    links = [None, None]

    def link(k):
        links[k] = open_links(servers[k], k, endpoints, token, timeout=10)

    threads = [threading.Thread(target=link, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert links[0][1] is not None and links[1][0] is not None
    links[0][1].setblocking(True)
    links[0][1].sendall(b"ping")
    links[1][0].setblocking(True)
    assert links[1][0].recv(4) == b"ping"
    stray.close()
    for pair in links:
        for s in pair:
            if s is not None:
                s.close()


def test_without_tcp_the_exchanges_use_dask_comms():
    """Workers in this process (``inproc://`` addresses): no direct links,
    the exchanges go through Dask's worker RPC; the model is still the
    single-node one, bit for bit."""
    X, y = _discrete_data(n=900, seed=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        model = DaskBoostRegressor(**PARAMS).fit(
            da.from_array(X, chunks=(300, 5)), da.from_array(y, chunks=300),
            client=client)
    assert {s["links"] for s in model._dask_stats} == {"dask"}
    local = BoostRegressor(**PARAMS).fit(X, y)
    assert _trees_equal(model.booster_, local.booster_)


def test_rounds_in_batches_with_eval_set_equal_single_node(client):
    """Without callbacks the shards grow several rounds per call (more
    rounds than one batch here); the eval set's metrics of every round
    and the trees equal single-node training's, over the direct links."""
    from skboost.dask.train import ROUNDS_PER_CALL

    X, y = _discrete_data(n=1200, seed=21)
    n_rounds = ROUNDS_PER_CALL + 5
    params = dict(PARAMS, n_estimators=n_rounds, eval_metric=["rmse", "mae"])
    model = DaskBoostRegressor(**params).fit(
        da.from_array(X[:900], chunks=(300, 5)),
        da.from_array(y[:900], chunks=300),
        eval_set=[(da.from_array(X[900:], chunks=(100, 5)),
                   da.from_array(y[900:], chunks=100))], client=client)
    local = BoostRegressor(**params).fit(X[:900], y[:900],
                                         eval_set=[(X[900:], y[900:])])
    assert {s["links"] for s in model._dask_stats} == {"tcp"}
    # the eval set's margins come back for every round of a call: batches
    # of ROUNDS_PER_CALL
    assert {s["round_calls"] for s in model._dask_stats} == {2}
    assert len(model.evals_result_["validation_0"]["rmse"]) == n_rounds
    assert model.evals_result_ == local.evals_result_
    assert _trees_equal(model.booster_, local.booster_)


def test_fast_rounds_without_eval_set_take_fewer_calls(client):
    """Without eval sets, after a first call of ROUNDS_PER_CALL rounds the
    calls grow the rounds of about CALL_SECONDS at the measured pace:
    fewer calls than batches of ROUNDS_PER_CALL (rounds of a few ms
    here, 256 per call at most), the same trees as single-node training."""
    from skboost.dask.train import CALL_SECONDS, ROUNDS_PER_CALL

    X, y = _discrete_data(n=900, seed=22)
    n_rounds = ROUNDS_PER_CALL * 5
    params = dict(PARAMS, n_estimators=n_rounds, max_depth=3)
    model = DaskBoostRegressor(**params).fit(
        da.from_array(X, chunks=(300, 5)), da.from_array(y, chunks=300),
        client=client)
    calls = [s["round_calls"] for s in model._dask_stats]
    assert len(set(calls)) == 1
    # the rounds after the first call take more than one call only if
    # each took over CALL_SECONDS / (4 * ROUNDS_PER_CALL)
    assert 2 <= calls[0] < 5, (calls, CALL_SECONDS)
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(model.booster_, local.booster_)


# -- tree_method="approx": cuts proposed per tree from the hessians ---------

APPROX = dict(PARAMS, tree_method="approx")


@pytest.mark.parametrize("params", [
    dict(),
    dict(colsample_bytree=0.8, colsample_bynode=0.8),
    dict(weights=True, reg_alpha=0.1),
], ids=["plain", "colsample", "weighted"])
def test_approx_classifier_equals_single_node_bit_for_bit(client, params):
    """Few distinct values (40 < max_bin): the proposal puts a cut at
    every boundary between the distinct values of the tree's rows, on one
    process as on the shards; logistic hessians change every tree, so the
    cuts are proposed again for every tree."""
    params = dict(params)
    X, y = _discrete_data(seed=11)
    labels = (y > np.median(y)).astype(int)
    w = (np.random.default_rng(2).uniform(0.2, 3.0, size=y.shape[0])
         if params.pop("weights", False) else None)
    params = dict(APPROX, **params)
    dask_model = DaskBoostClassifier(**params).fit(
        da.from_array(X, chunks=(300, 5)), da.from_array(labels, chunks=300),
        sample_weight=None if w is None else da.from_array(w, chunks=300))
    local = BoostClassifier(**params).fit(X, labels, sample_weight=w)
    assert _trees_equal(dask_model.booster_, local.booster_)
    assert np.array_equal(
        dask_model.predict_proba(da.from_array(X, chunks=(500, 5))).compute(),
        local.predict_proba(X))


@pytest.mark.parametrize("n_classes", [None, 3])
def test_approx_regressor_and_multiclass_equal_single_node(client, n_classes):
    """Squared error (constant hessians: cuts proposed once, from the
    weights) and softmax (one proposal per class tree), with weights."""
    X, y = _discrete_data(n=1000, seed=4)
    w = np.random.default_rng(5).uniform(0.0, 2.0, size=y.shape[0])
    w[::17] = 0.0   # rows of weight 0 propose no cut
    dX, dw = da.from_array(X, chunks=(250, 5)), da.from_array(w, chunks=250)
    if n_classes is None:
        dask_model = DaskBoostRegressor(**APPROX).fit(
            dX, da.from_array(y, chunks=250), sample_weight=dw)
        local = BoostRegressor(**APPROX).fit(X, y, sample_weight=w)
    else:
        labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        dask_model = DaskBoostClassifier(**APPROX).fit(
            dX, da.from_array(labels, chunks=250), sample_weight=dw)
        local = BoostClassifier(**APPROX).fit(X, labels, sample_weight=w)
    assert _trees_equal(dask_model.booster_, local.booster_)


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_approx_bit_identical_for_one_or_two_workers(client, subsample):
    """Many distinct values (the merged sketch is approximate): still the
    same model for 1 or 2 workers and any placement of the partitions."""
    rng = np.random.default_rng(17)
    X = rng.normal(size=(1600, 4)).astype(np.float32)
    logit = X[:, 0] - 2 * X[:, 1] ** 2 + rng.normal(size=1600)
    y = (logit > np.median(logit)).astype(int)
    dX = da.from_array(X, chunks=(400, 4))
    dy = da.from_array(y, chunks=400)
    params = dict(APPROX, max_bin=16, subsample=subsample,
                  colsample_bytree=0.75)
    boosters = _fit_on_every_placement(client, DaskBoostClassifier, params,
                                       dX, dy)
    for other in boosters[1:]:
        assert _trees_equal(boosters[0], other)
    # the cuts are proposed per tree: thresholds of later trees are not
    # all among the first tree's candidates (hist would keep them)
    thresholds = [set(t.threshold[t.left_child >= 0]) for t in
                  boosters[0].trees]
    assert any(not t <= thresholds[0] for t in thresholds[1:])


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_approx_accuracy_within_noise_of_single_node(client, subsample):
    """Many distinct values: the merged sketch's cuts are not exactly the
    single-node proposal's, but the fit is as good (AUC on held-out
    rows, against single-node approx)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(23)
    X = rng.normal(size=(6000, 6)).astype(np.float32)
    logit = X[:, 0] - X[:, 1] ** 2 + 0.5 * X[:, 2] * X[:, 3]
    y = (logit + rng.logistic(size=6000) > 0).astype(int)
    train, test = slice(0, 4000), slice(4000, None)
    params = dict(APPROX, n_estimators=30, max_bin=32, subsample=subsample)
    model = DaskBoostClassifier(**params).fit(
        da.from_array(X[train], chunks=(1000, 6)),
        da.from_array(y[train], chunks=1000))
    local = BoostClassifier(**params).fit(X[train], y[train])
    dask_auc = roc_auc_score(y[test],
                             model.to_local().predict_proba(X[test])[:, 1])
    local_auc = roc_auc_score(y[test], local.predict_proba(X[test])[:, 1])
    assert dask_auc > local_auc - 0.01


def test_approx_local_proposals_are_a_clear_error(client):
    X, y = _discrete_data(n=200)
    dX, dy = da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="approx_proposal='local'"):
        DaskBoostRegressor(tree_method="approx",
                           approx_proposal="local").fit(dX, dy)


def test_approx_ranker_and_categories_equal_single_node(client):
    """LambdaMART gradients per query (hessians change every tree) and a
    dataframe with a category column (one bin per category, the numeric
    columns proposed per tree), against the single-node estimators."""
    from skboost import BoostRanker
    from skboost.dask import DaskBoostRanker

    rng = np.random.default_rng(31)
    X, y = _discrete_data(n=1200, seed=31)
    relevance = np.clip(np.nan_to_num(X[:, 0]) // 10
                        + rng.integers(0, 2, 1200), 0, 4)
    qid = np.repeat(np.arange(60), 20)
    params = dict(APPROX, objective="rank:ndcg")
    model = DaskBoostRanker(**params).fit(
        da.from_array(X, chunks=(400, 5)),
        da.from_array(relevance, chunks=400), qid=da.from_array(qid, 400))
    local = BoostRanker(**params).fit(X, relevance, qid=qid)
    assert _trees_equal(model.booster_, local.booster_)

    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["colour"] = pd.Categorical(
        np.array(["red", "green", "blue"])[rng.integers(0, 3, 1200)],
        categories=["blue", "green", "red"])
    labels = ((y + 3.0 * (frame["colour"] == "red")) > np.median(y))
    labels = labels.astype(int).to_numpy()
    model = DaskBoostClassifier(**APPROX).fit(
        dd.from_pandas(frame, npartitions=3),
        dd.from_pandas(pd.Series(labels), npartitions=3))
    local = BoostClassifier(**APPROX).fit(frame, labels)
    assert _trees_equal(model.booster_, local.booster_)


class _RecordingCallback(TrainingCallback):
    """Records what the boosting loop shows a callback, and stops training
    after round ``stop_at``."""

    def __init__(self, stop_at):
        self.stop_at = stop_at
        self.calls = []

    def before_training(self, model):
        self.calls.append(("before", model.num_boosted_rounds()))
        return model

    def after_iteration(self, model, epoch, evals_log):
        self.calls.append(("after", epoch, model.num_boosted_rounds(),
                           {name: {m: list(v) for m, v in log.items()}
                            for name, log in evals_log.items()}))
        return epoch >= self.stop_at

    def after_training(self, model):
        self.calls.append(("end", model.num_boosted_rounds()))
        return model


def test_callbacks_and_forests_run_the_same_loop_in_core_and_on_dask(client):
    """One boosting loop (_model.train.run_rounds) for both engines: a
    callback sees the same calls, rounds and logs in core and on Dask, stops
    both at the same round, and the boosted forests (num_parallel_tree)
    are the same trees."""
    X, y = _discrete_data(n=1200, seed=21)
    X_val, y_val = X[900:], y[900:]
    # (row sampling draws differently on Dask: counter-based, see
    # test_row_sample_is_independent_of_partitioning)
    params = dict(PARAMS, n_estimators=12, num_parallel_tree=2,
                  colsample_bynode=0.6, eval_metric=["rmse", "mae"])
    fits = []
    for make, convert in ((DaskBoostRegressor, _dask_pair),
                          (BoostRegressor, lambda a, b: (a, b))):
        recorder = _RecordingCallback(stop_at=6)
        model = make(**params, callbacks=[recorder])
        Xt, yt = convert(X[:900], y[:900])
        model.fit(Xt, yt, eval_set=[convert(X_val, y_val)])
        fits.append((model, recorder))
    (dask_model, dask_calls), (local, local_calls) = fits
    assert dask_calls.calls == local_calls.calls
    assert dask_calls.calls[-1] == ("end", 7)
    assert dask_model.get_booster().get_dump(with_stats=True) == \
        local.get_booster().get_dump(with_stats=True)
    assert dask_model.evals_result_ == local.evals_result_


def _dask_pair(X, y):
    return (da.from_array(X, chunks=(X.shape[0] // 3, X.shape[1])),
            da.from_array(y, chunks=X.shape[0] // 3))


# -- continued training and per-row base margins, as in core -----------------
# Oracle: the single-node estimators on the concatenated data (the cuts
# cannot depend on the partitioning: _discrete_data), and, where it holds
# in core, one longer fit (6 + 6 rounds == 12 without column sampling).

def _dumps(model):
    return model.get_booster().get_dump(with_stats=True)


def _labels3(y):
    return np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))


@pytest.mark.parametrize("kind", ["dask", "local", "booster", "path",
                                  "init_model"])
def test_continued_training_equals_single_node(client, kind, tmp_path):
    """6 rounds, then xgb_model + 6 more on Dask: the single-node
    estimators' continued model bit for bit, column sampling included (the
    continued fit's rng is seeded by (seed, rounds so far) in both), with
    the eval set logged from the continued model's margins."""
    X, y = _discrete_data(n=1200, seed=31)
    params = dict(PARAMS, colsample_bynode=0.7, colsample_bytree=0.8)
    X_val, y_val = X[900:], y[900:]
    dX, dy = _dask_pair(X, y)
    first_local = BoostRegressor(**params).fit(X, y)
    first_dask = DaskBoostRegressor(**params).fit(dX, dy)
    assert _dumps(first_dask) == _dumps(first_local)
    model = {"dask": first_dask, "local": first_local,
             "booster": first_dask.get_booster(),
             "init_model": first_dask}.get(kind)
    if kind == "path":
        model = tmp_path / "first.ubj"
        first_dask.save_model(model)
    name = "init_model" if kind == "init_model" else "xgb_model"
    second = DaskBoostRegressor(**params).fit(
        dX, dy, eval_set=[_dask_pair(X_val, y_val)], **{name: model})
    local = BoostRegressor(**params).fit(X, y, eval_set=[(X_val, y_val)],
                                         xgb_model=first_local)
    assert second.n_estimators_ == local.n_estimators_ == 12
    assert _dumps(second) == _dumps(local)
    assert second.evals_result_ == local.evals_result_
    assert np.array_equal(second.predict(dX).compute(), local.predict(X))
    assert first_dask.n_estimators_ == 6   # left as it was


@pytest.mark.parametrize("n_classes", [None, 3])
def test_six_plus_six_rounds_is_twelve_on_dask(client, n_classes):
    """Without row or column sampling, 6 rounds and 6 more on Dask are the
    12-round model (as in core), and the continued single-node model."""
    X, y = _discrete_data(n=1200, seed=32)
    if n_classes is None:
        Dask, Local, target = DaskBoostRegressor, BoostRegressor, y
    else:
        Dask, Local, target = (DaskBoostClassifier, BoostClassifier,
                               np.array(["a", "b", "c"])[_labels3(y)])
    dX, dy = _dask_pair(X, target)
    first = Dask(**PARAMS).fit(dX, dy)
    second = Dask(**PARAMS).fit(dX, dy, xgb_model=first)
    whole = Dask(**dict(PARAMS, n_estimators=12)).fit(dX, dy)
    local = Local(**PARAMS).fit(
        X, target, xgb_model=Local(**PARAMS).fit(X, target))
    local_whole = Local(**dict(PARAMS, n_estimators=12)).fit(X, target)
    assert _dumps(local) == _dumps(local_whole)   # in core
    assert _dumps(second) == _dumps(whole) == _dumps(local)
    assert _trees_equal(second.booster_, local.booster_)
    method = "predict" if n_classes is None else "predict_proba"
    assert np.array_equal(getattr(second, method)(dX).compute(),
                          getattr(local, method)(X))


@pytest.mark.parametrize("task", ["regressor", "binary", "multiclass"])
def test_base_margin_equals_single_node(client, task):
    """Per-row base margins (and the eval set's): the single-node model,
    eval log and margins bit for bit; the intercept is still estimated."""
    X, y = _discrete_data(n=1200, seed=33)
    rng = np.random.default_rng(33)
    params = dict(PARAMS, colsample_bynode=0.8)
    if task == "regressor":
        Dask, Local, target = DaskBoostRegressor, BoostRegressor, y
        margin = rng.normal(scale=3.0, size=1200)
    elif task == "binary":
        Dask, Local = DaskBoostClassifier, BoostClassifier
        target = (y > np.median(y)).astype(int)
        margin = rng.normal(size=1200)
    else:
        Dask, Local, target = DaskBoostClassifier, BoostClassifier, \
            _labels3(y)
        margin = rng.normal(size=(1200, 3))
    fit_rows, val = slice(0, 900), slice(900, None)
    dX, dy = _dask_pair(X[fit_rows], target[fit_rows])
    d_val = _dask_pair(X[val], target[val])

    def chunked(m):
        return da.from_array(m, chunks=(m.shape[0] // 3,) + m.shape[1:])

    model = Dask(**params).fit(
        dX, dy, base_margin=chunked(margin[fit_rows]), eval_set=[d_val],
        base_margin_eval_set=[chunked(margin[val])])
    local = Local(**params).fit(
        X[fit_rows], target[fit_rows], base_margin=margin[fit_rows],
        eval_set=[(X[val], target[val])],
        base_margin_eval_set=[margin[val]])
    assert _dumps(model) == _dumps(local)
    assert _trees_equal(model.booster_, local.booster_)
    assert model.evals_result_ == local.evals_result_
    assert np.array_equal(model.intercept_, local.intercept_)
    on_margin = model.to_local().predict(X, output_margin=True,
                                         base_margin=margin)
    assert np.array_equal(on_margin, local.predict(X, output_margin=True,
                                                   base_margin=margin))
    # without a margin: the trees on top of the estimated intercept
    assert np.array_equal(
        model.predict(da.from_array(X, chunks=(400, 5)),
                      output_margin=True).compute(),
        local.predict(X, output_margin=True))
    # LightGBM's names; a dask Series (DataFrame X) works the same way
    if task == "regressor":
        frame = dd.from_pandas(pd.DataFrame(X[fit_rows]), npartitions=3)
        series = dd.from_pandas(pd.Series(target[fit_rows]), npartitions=3)
        score = dd.from_pandas(pd.Series(margin[fit_rows]), npartitions=3)
        v_frame = dd.from_pandas(pd.DataFrame(X[val]), npartitions=2)
        v_series = dd.from_pandas(pd.Series(target[val]), npartitions=2)
        v_score = dd.from_pandas(pd.Series(margin[val]), npartitions=2)
        aliased = Dask(**params).fit(frame, series, init_score=score,
                                     eval_set=[(v_frame, v_series)],
                                     eval_init_score=[v_score])
        assert _trees_equal(aliased.booster_, local.booster_)
        assert aliased.evals_result_ == local.evals_result_


def test_continued_training_on_base_margins_equals_single_node(client):
    """Both at once: a model fitted on base margins, continued on them."""
    X, y = _discrete_data(n=900, seed=34)
    margin = np.random.default_rng(34).normal(size=900)
    dX, dy = _dask_pair(X, y)
    dm = da.from_array(margin, chunks=300)
    first = DaskBoostRegressor(**PARAMS).fit(dX, dy, base_margin=dm)
    second = DaskBoostRegressor(**PARAMS).fit(dX, dy, base_margin=dm,
                                              xgb_model=first)
    local = BoostRegressor(**PARAMS).fit(
        X, y, base_margin=margin,
        xgb_model=BoostRegressor(**PARAMS).fit(X, y, base_margin=margin))
    assert _trees_equal(second.booster_, local.booster_)
    whole = BoostRegressor(**dict(PARAMS, n_estimators=12)).fit(
        X, y, base_margin=margin)
    assert _trees_equal(second.booster_, whole.booster_)


def test_ranker_base_margin_and_continued_training(client):
    """The ranker's rows are grouped by query on each worker: the margins
    move with them, as in BoostRanker."""
    from skboost import BoostRanker
    from skboost.dask import DaskBoostRanker

    rng = np.random.default_rng(35)
    X, _ = _discrete_data(n=1200, seed=35)
    relevance = np.clip(np.nan_to_num(X[:, 0]) // 10
                        + rng.integers(0, 2, 1200), 0, 4)
    qid = np.repeat(np.arange(60), 20)
    shuffle = np.concatenate([rng.permutation(np.arange(a, a + 400))
                              for a in (0, 400, 800)])   # queries mixed
    X, relevance, qid = X[shuffle], relevance[shuffle], qid[shuffle]
    margin = rng.normal(size=1200)
    params = dict(PARAMS, objective="rank:ndcg")
    dX = da.from_array(X, chunks=(400, 5))
    fit = dict(qid=da.from_array(qid, 400),
               base_margin=da.from_array(margin, 400))
    first = DaskBoostRanker(**params).fit(
        dX, da.from_array(relevance, 400), **fit)
    model = DaskBoostRanker(**params).fit(
        dX, da.from_array(relevance, 400), init_model=first, **fit)
    local_first = BoostRanker(**params).fit(X, relevance, qid=qid,
                                            base_margin=margin)
    local = BoostRanker(**params).fit(X, relevance, qid=qid,
                                      base_margin=margin,
                                      xgb_model=local_first)
    assert _trees_equal(first.booster_, local_first.booster_)
    assert _trees_equal(model.booster_, local.booster_)


def test_continued_model_and_base_margin_errors(client, tmp_path):
    """Clear errors before training: a continued model of other features
    or classes, base margins of the wrong shape or partitioning."""
    X, y = _discrete_data(n=600, seed=36)
    labels = _labels3(y)
    dX, dy = da.from_array(X, chunks=(200, 5)), da.from_array(y, chunks=200)
    d_labels = da.from_array(labels, chunks=200)
    clf = DaskBoostClassifier(**PARAMS).fit(dX, d_labels)
    with pytest.raises(ValueError, match="features"):
        DaskBoostClassifier(**PARAMS).fit(dX[:, :4], d_labels,
                                          xgb_model=clf)
    with pytest.raises(ValueError, match="classes"):
        DaskBoostClassifier(**PARAMS).fit(dX, d_labels % 2 + 5,
                                          xgb_model=clf)
    with pytest.raises(ValueError, match="objective"):
        DaskBoostClassifier(**dict(PARAMS, objective="multi:softmax")).fit(
            dX, d_labels, xgb_model=clf.to_local())
    path = tmp_path / "clf.json"
    clf.save_model(path)
    with pytest.raises(ValueError, match="BoostClassifier"):
        DaskBoostRegressor(**PARAMS).fit(dX, dy, xgb_model=path)
    with pytest.raises(TypeError, match="xgb_model"):
        DaskBoostRegressor(**PARAMS).fit(dX, dy, xgb_model=3)
    with pytest.raises(TypeError, match="not both"):
        DaskBoostRegressor(**PARAMS).fit(dX, dy, xgb_model=clf,
                                         init_model=clf)
    margin = da.zeros(600, chunks=200)
    # shape: one column per class
    with pytest.raises(ValueError, match=r"base_margin must have shape "
                                         r"\(n_samples, 3\)"):
        DaskBoostClassifier(**PARAMS).fit(dX, d_labels, base_margin=margin)
    with pytest.raises(ValueError, match=r"base_margin must have shape "
                                         r"\(n_samples,\).*\(600, 2\)"):
        DaskBoostRegressor(**PARAMS).fit(
            dX, dy, base_margin=da.zeros((600, 2), chunks=(200, 2)))
    with pytest.raises(ValueError, match=r"base_margin_eval_set\[0\] must "
                                         r"have shape \(n_samples, 3\)"):
        DaskBoostClassifier(**PARAMS).fit(
            dX, d_labels, eval_set=[(dX, d_labels)],
            base_margin_eval_set=[margin])
    # partitioning: the chunks of y
    with pytest.raises(ValueError, match="X and base_margin do not line up"):
        DaskBoostRegressor(**PARAMS).fit(
            dX, dy, base_margin=da.zeros(600, chunks=((100, 300, 200),)))
    with pytest.raises(ValueError, match="but base_margin has 2"):
        DaskBoostRegressor(**PARAMS).fit(dX, dy,
                                         base_margin=da.zeros(600, chunks=300))
    with pytest.raises(ValueError, match=r"base_margin_eval_set\[0\]"):
        DaskBoostRegressor(**PARAMS).fit(
            dX, dy, eval_set=[(dX, dy)],
            base_margin_eval_set=[da.zeros(600, chunks=300)])
    # the flattened (n_samples * n_classes,) form cannot be partitioned
    # like X
    with pytest.raises(ValueError, match="base_margin"):
        DaskBoostClassifier(**PARAMS).fit(
            dX, d_labels, base_margin=da.zeros(1800, chunks=600))
    # a frame's partitions of other lengths than X's
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=2)
    series = dd.from_pandas(pd.Series(y), npartitions=2)
    short = dd.from_pandas(pd.Series(np.zeros(590)), npartitions=2)
    with pytest.raises(ValueError, match=r"partition \d: base_margin has "
                                         "shape"):
        DaskBoostRegressor(**PARAMS).fit(frame, series, base_margin=short)
    with pytest.raises(ValueError, match="base_margin.*NaN|NaN.*base_margin"):
        DaskBoostRegressor(**PARAMS).fit(
            dX, dy, base_margin=da.full(600, np.nan, chunks=200))
    with pytest.raises(ValueError, match="base_margin_eval_set needs an "
                                         "eval_set"):
        DaskBoostRegressor(**PARAMS).fit(dX, dy,
                                         base_margin_eval_set=[margin])


@pytest.fixture(scope="module")
def threads_client():
    """Two workers in this process (``inproc://``: the exchanges go
    through Dask's worker RPC, and objects pass between the client and
    the shards, and among the shards, by reference, not pickled)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=False,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.parametrize("tree_method", ["hist", "approx"])
@pytest.mark.parametrize("sampled", [False, True])
def test_workers_in_one_process_equal_worker_processes(
        client, threads_client, tree_method, sampled):
    """Workers sharing the client's process grow the model that worker
    processes grow, bit for bit (continuous features: the cuts merged
    from sketches; with row and column sampling). The shards must not
    share what they change: in one process the column sampler the client
    hands every shard is one object, and two shards drawing from one
    generator grew different trees (or failed in the exchange)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 12))
    y = (X[:, 0] - X[:, 1] ** 2 + rng.normal(size=3000) > 0).astype(int)
    params = dict(PARAMS, tree_method=tree_method, max_depth=5)
    if sampled:
        params.update(subsample=0.7, colsample_bynode=0.8)
    fits = [DaskBoostClassifier(**params).fit(
        da.from_array(X, chunks=(700, 12)), da.from_array(y, chunks=700),
        client=c) for c in (threads_client, client)]
    assert {s["links"] for s in fits[0]._dask_stats} == {"dask"}
    assert {s["links"] for s in fits[1]._dask_stats} == {"tcp"}
    assert _trees_equal(fits[0].booster_, fits[1].booster_)


def test_workers_in_one_process_equal_single_node_column_sampling(
        threads_client):
    """Discrete features (cuts independent of the partitioning), column
    sampling (the row sample differs from single-node's draw by design),
    workers in the client's process: the single-node model, bit for
    bit."""
    X, y = _discrete_data(n=1500, n_features=8, seed=13)
    params = dict(PARAMS, colsample_bynode=0.6, colsample_bylevel=0.9)
    model = DaskBoostRegressor(**params).fit(
        da.from_array(X, chunks=(400, 8)), da.from_array(y, chunks=400),
        client=threads_client)
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(model.booster_, local.booster_)


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="abstract Unix socket names are Linux's")
def test_shards_on_one_machine_link_over_unix_sockets(client):
    """Worker processes of one machine: the direct links are Unix
    sockets (stats), and the model is still single-node's, bit for bit."""
    X, y = _discrete_data(n=900, seed=8)
    model = DaskBoostRegressor(**PARAMS).fit(
        da.from_array(X, chunks=(300, 5)), da.from_array(y, chunks=300),
        client=client)
    assert {s["transport"] for s in model._dask_stats} == {"unix"}
    assert _trees_equal(model.booster_,
                        BoostRegressor(**PARAMS).fit(X, y).booster_)


def test_links_fall_back_to_tcp_when_the_local_name_does_not_answer():
    """An endpoint whose Unix name answers nowhere (a shard on another
    machine): the link is opened over TCP, and carries data."""
    import socket

    from skboost.dask.links import new_token, open_links

    servers = [socket.socket() for _ in range(2)]
    for s in servers:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
    endpoints = [("127.0.0.1", s.getsockname()[1],
                  b"\0skboost-no-such-name-" + os.urandom(8).hex().encode())
                 for s in servers]
    token = new_token()
    links = [None, None]

    def link(k):
        links[k] = open_links(servers[k], k, endpoints, token, timeout=10)

    threads = [threading.Thread(target=link, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert links[0][1].family == socket.AF_INET
    links[0][1].setblocking(True)
    links[0][1].sendall(b"ping")
    links[1][0].setblocking(True)
    assert links[1][0].recv(4) == b"ping"
    for pair in links:
        for s in pair:
            if s is not None:
                s.close()


@pytest.mark.parametrize("absent", ["missing", "zero"])
def test_sparse_chunks_equal_single_node_on_the_csr_matrix(client, absent):
    """A dask array of scipy CSR chunks: the shards hold CSR partitions
    (never densified; absent entries as ``sparse_absent`` says), and the
    model is single-node skboost's on the whole CSR matrix."""
    import scipy.sparse as sp
    import dask.array as da

    rng = np.random.default_rng(31)
    X = sp.random(900, 20, density=0.2, format="csr", random_state=31)
    X.data = np.round(X.data * 10)   # at most 11 distinct values
    y = X[:, :3].toarray() @ [1.0, -1.0, 0.5] + rng.normal(size=900)
    params = dict(n_estimators=4, max_depth=3, sparse_absent=absent)
    dask_model = DaskBoostRegressor(**params).fit(
        da.from_array(X, chunks=(300, 20), asarray=False),
        da.from_array(y, chunks=300), client=client)
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(dask_model.booster_, local.booster_)
