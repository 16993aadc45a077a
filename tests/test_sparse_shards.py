"""Distributed training of sparse shards, kept sparse (``skboost.dask``
with CSR chunks; the Spark side is in ``test_spark_data.py``).

Oracles: the dense kernels (``build_histograms``, ``split_nodes``,
``map_to_bins``) on the dense codes of the same rows, for the sparse
kernels; single-node ``BoostClassifier`` / ``BoostRegressor`` on the whole
CSR matrix, bit for bit (every feature with at most ``max_bin`` distinct
values), for the Dask fits on one and two workers; for the memory, the
bound computed from the stored entries (a code and a column index per
entry, a row pointer per row, a few arrays per feature), against what
dense codes of the same rows would take.
"""

import linecache
import traceback

import numpy as np
import pytest
import scipy.sparse as sp

from skboost import BoostClassifier, BoostRegressor
from skboost._input.sparse import sparse_rows
from skboost.tree._binning import BinnedData, map_entries_to_bins, map_to_bins
from skboost.tree._histogram import (FixedPointGradients, build_histograms,
                                     build_sparse_histograms)
from skboost.tree._partition import RowPartition
from skboost.tree._sparse import BinnedRows
from skboost.tree.binning import BinMapper


def _sparse_matrix(n=600, n_features=12, density=0.25, seed=0,
                   n_values=9):
    """CSR float32 with few distinct values, some stored NaN and stored
    zeros (a stored 0.0 is a value, whatever ``sparse_absent``)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, n_features, density=density, format="csr",
                  random_state=seed, dtype=np.float32)
    X.data = rng.integers(-3, n_values - 3, size=X.nnz).astype(np.float32)
    X.data[rng.random(X.nnz) < 0.05] = np.nan
    X.sort_indices()
    return X


def _dense_form(X, absent):
    dense = np.full(X.shape, np.nan if absent == "missing" else 0.0,
                    dtype=np.float32)
    coo = X.tocoo()
    dense[coo.row, coo.col] = coo.data
    return dense


def _mapper(dense, max_bin=16):
    return BinMapper(max_bin).fit(dense)


# -- the kernels, against the dense ones on the dense codes -----------------

@pytest.mark.parametrize("absent", ["missing", "zero"])
def test_entry_codes_are_the_dense_codes_of_the_stored_entries(absent):
    X = _sparse_matrix(seed=1)
    dense = _dense_form(X, absent)
    mapper = _mapper(dense)
    rows = sparse_rows(X, np.nan if absent == "missing" else 0.0)
    binned = mapper.transform_sparse(rows)
    dense_codes = mapper.transform(dense)
    coo = X.tocoo()
    np.testing.assert_array_equal(binned.codes, dense_codes[coo.row, coo.col])
    # an entry not stored has its feature's absent code: the dense code
    # of the rows' absent value (NaN: missing; 0.0: its bin)
    absent_value = np.full((1, X.shape[1]), np.nan if absent == "missing"
                           else 0.0, dtype=np.float32)
    np.testing.assert_array_equal(binned.absent_code,
                                  mapper.transform(absent_value)[0])
    # one code per stored entry: never a row-by-feature array
    assert binned.codes.shape == (X.nnz,)


@pytest.mark.parametrize("absent", ["missing", "zero"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sparse_histograms_equal_the_dense_codes_histograms(absent,
                                                            weighted):
    X = _sparse_matrix(seed=2)
    dense = _dense_form(X, absent)
    mapper = _mapper(dense)
    rows = sparse_rows(X, np.nan if absent == "missing" else 0.0)
    sparse_binned = mapper.transform_sparse(rows)
    dense_binned = BinnedData(mapper.transform(dense), mapper.bin_ptr_)
    rng = np.random.default_rng(3)
    n = X.shape[0]
    gpair = rng.normal(size=(n, 2)).astype(np.float32)
    weight = rng.uniform(0.5, 2.0, size=n) if weighted else None
    active = rng.random(n) < 0.8
    gradients = FixedPointGradients(gpair, weight, active, 2)
    partition = RowPartition(np.flatnonzero(active), n)
    n_active = partition.row_index.shape[0]
    # three nodes: slices of the active rows
    begin = np.array([0, n_active // 3, n_active // 2])
    end = np.array([n_active // 3, n_active // 2, n_active])
    expected = np.zeros((3, dense_binned.n_bins, 2), dtype=np.int64)
    got = np.full((3, sparse_binned.n_bins, 2), 7, dtype=np.int64)
    build_histograms(dense_binned, partition, gradients, begin, end,
                     expected, 2)
    build_sparse_histograms(sparse_binned, partition, gradients, begin, end,
                            got, 2)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("absent", ["missing", "zero"])
def test_sparse_row_split_equals_the_dense_codes_split(absent):
    X = _sparse_matrix(seed=4)
    dense = _dense_form(X, absent)
    mapper = _mapper(dense)
    rows = sparse_rows(X, np.nan if absent == "missing" else 0.0)
    sparse_binned = mapper.transform_sparse(rows)
    dense_binned = BinnedData(mapper.transform(dense), mapper.bin_ptr_)
    n = X.shape[0]
    begin, end = np.array([0, 250]), np.array([250, n])
    feature = np.array([3, 7])
    split_bin = np.array([1, 2])
    # a numeric split, and a categorical one (a left set over the value
    # bins of feature 7)
    n_value_bins = int(mapper.n_value_bins_[7])
    left_set = np.arange(n_value_bins) % 2 == 0
    for default_left in (np.array([0, 1]), np.array([1, 0])):
        for left_sets in (None, [None, left_set]):
            a, b = RowPartition(np.arange(n), n), RowPartition(
                np.arange(n), n)
            n_left = a.split_nodes(dense_binned, begin, end, feature,
                                   split_bin, default_left, n_threads=2,
                                   left_sets=left_sets)
            m_left = b.split_nodes_sparse(sparse_binned, begin, end, feature,
                                          split_bin, default_left,
                                          n_threads=2, left_sets=left_sets)
            np.testing.assert_array_equal(m_left, n_left)
            np.testing.assert_array_equal(b.row_index, a.row_index)


def test_map_entries_to_bins_equals_map_to_bins():
    rng = np.random.default_rng(5)
    values = rng.normal(size=(200, 3)).astype(np.float32)
    values[rng.random(values.shape) < 0.1] = np.nan
    mapper = BinMapper(8).fit(values)
    flat = np.concatenate(mapper.cuts_)
    expected = np.empty(values.shape, dtype=np.uint8)
    map_to_bins(values, flat, mapper.cut_ptr_, expected, 1)
    features = np.tile(np.arange(3, dtype=np.int32), 200)
    got = np.empty(600, dtype=np.uint8)
    map_entries_to_bins(values.ravel(), features, flat, mapper.cut_ptr_,
                        got, 2)
    np.testing.assert_array_equal(got, expected.ravel())


def test_bad_binned_rows_are_clear_errors():
    X = _sparse_matrix(seed=6)
    rows = sparse_rows(X, np.nan)
    mapper = _mapper(_dense_form(X, "missing"))
    good = mapper.transform_sparse(rows)
    codes = good.codes.copy()
    codes[0] = 200   # beyond its feature's bins
    with pytest.raises(ValueError, match="beyond its feature's bins"):
        BinnedRows(rows, codes, good.bin_ptr, good.absent_code)
    with pytest.raises(ValueError, match="one per stored entry"):
        BinnedRows(rows, good.codes[1:], good.bin_ptr, good.absent_code)
    with pytest.raises(ValueError, match="absent_code"):
        BinnedRows(rows, good.codes, good.bin_ptr, good.absent_code + 100)
    with pytest.raises(ValueError, match="bin_ptr"):
        BinnedRows(rows, good.codes, good.bin_ptr[:-1], good.absent_code)
    with pytest.raises(ValueError, match="outside"):
        map_entries_to_bins(np.zeros(2, np.float32),
                            np.array([0, 99], np.int32),
                            np.concatenate(mapper.cuts_), mapper.cut_ptr_,
                            np.empty(2, np.uint8), 1)
    partition = RowPartition(np.arange(X.shape[0]), X.shape[0])
    with pytest.raises(ValueError, match="split feature outside"):
        partition.split_nodes_sparse(good, [0], [10], [X.shape[1]], [0],
                                     [0], n_threads=1)


# -- Dask: one and two workers, equal to single node ------------------------

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from skboost.dask import DaskBoostClassifier, DaskBoostRegressor  # noqa: E402


@pytest.fixture(scope="module", params=[1, 2], ids=["1 worker", "2 workers"])
def client(request):
    cluster = distributed.LocalCluster(n_workers=request.param,
                                       threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _plain_traceback(error):
    """``error``'s chain (causes first), its notes and its frames,
    formatted without ``ast``: Python 3.11's ``traceback`` and pytest
    parse source for their reports, and CPython 3.11.7's ``ast`` is not
    thread-safe (gh-106905: "AST constructor recursion depth mismatch"),
    so a report formatted while Dask's loop thread formats a traceback of
    its own can be lost (it was, in CI, for this module's wide fit)."""
    chain = []
    while error is not None and error not in chain:
        chain.insert(0, error)
        error = error.__cause__ or error.__context__
    lines = []
    for error in chain:
        lines.append("Traceback (most recent call last):")
        for frame, line in traceback.walk_tb(error.__traceback__):
            code = frame.f_code
            lines.append(f'  File "{code.co_filename}", line {line}, in '
                         f"{code.co_name}")
            lines.append("    " + linecache.getline(code.co_filename,
                                                    line).strip())
        lines.append(f"{type(error).__name__}: {error}")
        lines += getattr(error, "__notes__", [])
    return lines


def _worker_logs(client, n=30):
    """The last ``n`` log lines of every worker, oldest first (what the
    shards' workers saw of a failed fit)."""
    try:
        logs = client.get_worker_logs(n=n)
    except Exception as error:   # noqa: BLE001 - reported instead
        return [f"(no worker logs: {type(error).__name__}: {error})"]
    return [f"{address}: {level} {message}"
            for address, entries in sorted(logs.items())
            for level, message in reversed(entries)]


def _fit_or_report(client, estimator, *args, **kwargs):
    """``estimator.fit(*args, client=client, **kwargs)``; if it raises, a
    failure whose report names the cause: the exception (chain, notes,
    frames: ``_plain_traceback``) and the workers' last log lines, as
    plain text (pytest formats no traceback of it)."""
    try:
        return estimator.fit(*args, client=client, **kwargs)
    except Exception as error:   # noqa: BLE001 - reported below
        report = ["the Dask fit failed:"] + _plain_traceback(error)
        report += ["", "the workers' logs:"] + _worker_logs(client)
    pytest.fail("\n".join(report), pytrace=False)


def _stored_bound(X, n_shards):
    """Bytes of the binned rows of X over ``n_shards`` shards at most: per
    stored entry a one-byte code and an int32 column index; per row an
    int64 row pointer (one more per shard); per feature and shard its
    first bin (int64), missing and absent codes (int32 each)."""
    n, width = X.shape
    return (X.nnz * (1 + 4) + (n + n_shards) * 8
            + n_shards * (width * (8 + 4 + 4) + 8))


def _chunks(X, n_chunks):
    step = -(-X.shape[0] // n_chunks)
    return da.from_array(X, chunks=(step, X.shape[1]), asarray=False)


@pytest.mark.parametrize("absent", ["missing", "zero"])
@pytest.mark.parametrize("tree_method", ["hist", "approx"])
def test_dask_sparse_classifier_predicts_as_single_node(client, absent,
                                                        tree_method):
    X = _sparse_matrix(n=1500, n_features=15, density=0.2, seed=7)
    dense = np.nan_to_num(_dense_form(X, "zero"))
    rng = np.random.default_rng(8)
    logit = dense[:, :4] @ [1.0, -1.0, 0.5, 0.7] + rng.normal(size=1500)
    y = (logit > np.median(logit)).astype(int)
    w = rng.uniform(0.5, 2.0, size=1500)
    params = dict(n_estimators=6, max_depth=4, learning_rate=0.3,
                  sparse_absent=absent, tree_method=tree_method,
                  colsample_bytree=0.8, random_state=3,
                  n_jobs=1)
    model = DaskBoostClassifier(**params).fit(
        _chunks(X, 4), da.from_array(y, chunks=375),
        sample_weight=da.from_array(w, chunks=375), client=client)
    n_workers = len(client.nthreads())
    stats = model._dask_stats
    assert len(stats) == n_workers
    local = BoostClassifier(**params).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(model.to_local().predict_proba(X),
                                  local.predict_proba(X))
    trees = local.get_booster().trees
    assert [t.feature.tolist() for t in model.booster_.trees] == \
        [t.feature.tolist() for t in trees]
    # missing values met at training sent somewhere on purpose: some
    # split learnt a default direction to the left, some to the right
    directions = np.concatenate([t.default_left[t.left_child >= 0]
                                 for t in trees])
    assert directions.any() and not directions.all()
    # the shards held the stored entries' codes only (a byte each, and
    # its column index), not a byte per row and feature
    assert sum(s["binned_bytes"] for s in stats) <= _stored_bound(
        X, n_workers)


@pytest.mark.parametrize("sampling", [
    dict(colsample_bynode=0.5), dict(colsample_bylevel=0.6),
    dict(colsample_bynode=0.6, grow_policy="lossguide", max_leaves=9)],
    ids=["bynode", "bylevel", "bynode lossguide"])
def test_dask_sparse_column_sampling_per_node_is_single_nodes(client,
                                                              sampling):
    """Masks drawn per node or level: the shards hand the children to the
    sampler in the order single-node sparse training does (each split's
    left child, then its right), so the same masks, the same model."""
    X = _sparse_matrix(n=1200, n_features=15, density=0.2, seed=11)
    dense = np.nan_to_num(_dense_form(X, "zero"))
    y = (dense[:, :5].sum(axis=1) > 0).astype(int)
    params = dict(n_estimators=5, max_depth=4, learning_rate=0.3,
                  random_state=5, n_jobs=1, **sampling)
    model = DaskBoostClassifier(**params).fit(
        _chunks(X, 3), da.from_array(y, chunks=400), client=client)
    local = BoostClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(model.to_local().predict_proba(X),
                                  local.predict_proba(X))


def test_dask_wide_sparse_shard_memory_is_bounded_by_the_stored_entries(
        client):
    """50,000 x 20,000 at 0.2% stored: each shard's binned rows within the
    bound computed from its stored entries and rows, far below the dense
    codes of the same rows (a byte per row and feature, in two layouts:
    2 GB for the whole matrix), which could not silently come back."""
    n, width = 50_000, 20_000
    rng = np.random.default_rng(9)
    # 40 entries a row (0.2%), values 1, 2, 3 (few bins per feature); a
    # column drawn twice in a row is one entry (summed: still few values)
    rows = np.repeat(np.arange(n), 40)
    X = sp.csr_matrix((rng.integers(1, 4, size=rows.shape[0]).astype(
        np.float32), (rows, rng.integers(0, width, size=rows.shape[0]))),
        shape=(n, width))
    X.sum_duplicates()
    y = np.asarray(X[:, :50].sum(axis=1)).ravel() + rng.normal(size=n)
    n_chunks = 2
    # its calls are long (summaries and cuts of 20,000 features), the
    # workers' liveness checked many times: a fit once failed here with
    # a live worker seen gone (``cluster_workers``)
    model = _fit_or_report(
        client, DaskBoostRegressor(n_estimators=2, max_depth=3, n_jobs=1),
        _chunks(X, n_chunks), da.from_array(y, chunks=-(-n // n_chunks)))
    stats = model._dask_stats
    n_shards = len(stats)
    assert n_shards >= 1, "no shard statistics (a worker lost at the end?)"
    held = sum(s["binned_bytes"] for s in stats)
    assert held <= _stored_bound(X, n_shards), (held, n_shards)
    dense = sum(s["dense_code_bytes"] for s in stats)
    assert dense == 2 * n * width
    assert held * 100 < dense, (held, dense)
    # the model is single node's
    local = BoostRegressor(n_estimators=2, max_depth=3, n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(model.to_local().predict(X[:2000]),
                                  local.predict(X[:2000]))


def test_dask_sparse_chunk_of_another_width_is_a_clear_error(client):
    """A CSR chunk whose rows have fewer features than the array says: a
    ValueError naming the partition (never codes read past a row)."""
    import dask

    X = _sparse_matrix(n=400, n_features=6, seed=11)
    narrow = sp.csr_matrix(X[200:, :5])
    meta = sp.csr_matrix((0, 6), dtype=np.float32)
    parts = [da.from_array(X[:200], chunks=(200, 6), asarray=False),
             da.from_delayed(dask.delayed(lambda: narrow)(), shape=(200, 6),
                             dtype=np.float32, meta=meta)]
    with pytest.raises(ValueError, match="partition 1 of X does not match "
                       "partition 0"):
        DaskBoostRegressor(n_estimators=2).fit(
            da.concatenate(parts), da.from_array(np.zeros(400), chunks=200),
            client=client)
