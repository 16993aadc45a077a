"""Sparse vectors, categorical columns and AFT interval bounds on a real
local Spark (``local[2]``).

Oracles: single-node skboost on the same data (the CSR matrix the vectors
hold, the columns declared categorical, the [lower, upper] bounds), bit
for bit where no feature has more than ``max_bin`` distinct values, for
one and two barrier tasks; for "never densified", the conversion of a
vector column of 10**9 features (a dense float32 copy of its 2,000 rows
would take 8 TB) and the type of the matrix a task's shard receives.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

# the session fixture, the tree comparison of test_spark (which skips this
# module with the reason when PySpark or java is absent)
from test_spark import _trees_equal, spark  # noqa: F401

from skboost import BoostClassifier, BoostRegressor  # noqa: E402
from skboost.spark import (SparkBoostClassifier,  # noqa: E402
                           SparkBoostRegressor)

PARAMS = dict(n_estimators=6, max_depth=4, learning_rate=0.3, random_state=3,
              n_jobs=1)


# -- sparse vectors ---------------------------------------------------------

def _sparse_rows(n=1000, n_features=30, seed=0):
    """Rows of a VectorUDT column: mostly sparse vectors (10% stored, some
    stored zeros and NaN), every 7th a dense one (its zeros are values);
    the CSR matrix they are (every entry of a dense row stored), and a
    label."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(seed)
    vectors, indptr, indices, data = [], [0], [], []
    for i in range(n):
        if i % 7 == 3:
            row = rng.integers(0, 15, size=n_features).astype(np.float64)
            row[rng.random(n_features) < 0.1] = np.nan
            vectors.append(Vectors.dense(row.tolist()))
            cols = np.arange(n_features)
        else:
            cols = np.sort(rng.choice(n_features, size=3, replace=False))
            row = rng.integers(0, 15, size=3).astype(np.float64)
            row[rng.random(3) < 0.05] = np.nan
            vectors.append(Vectors.sparse(n_features, cols.tolist(),
                                          row.tolist()))
        indices += cols.tolist()
        data += row.tolist()
        indptr.append(len(indices))
    X = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)),
                      shape=(n, n_features))
    dense = X.toarray()   # the oracle's label only: absent read as 0
    y = (np.nansum(dense[:, :4] * [1.0, -1.0, 0.5, 2.0], axis=1)
         + rng.normal(size=n) * 2)
    return vectors, X, y


def _vector_frame(spark, vectors, y, n_partitions):
    return spark.createDataFrame(spark.sparkContext.parallelize(
        [(v, float(t)) for v, t in zip(vectors, y)], n_partitions),
        ["features", "label"])


def test_sparse_classifier_equals_single_node_on_the_csr_matrix(spark):
    """A mixed dense/sparse vector column trains the model single-node
    skboost trains on the CSR matrix (absent entries missing), for one and
    two tasks; transform predicts as single-node on the CSR matrix."""
    vectors, X, y = _sparse_rows()
    labels = (y > np.median(y)).astype(float)
    frame = _vector_frame(spark, vectors, labels, 4)
    local = BoostClassifier(**PARAMS).fit(X, labels)
    for workers in (1, 2):
        # a warning: the dense rows' zeros are values, the sparse rows'
        # absent entries missing
        with pytest.warns(UserWarning, match=r"holds 857 sparse and 143 "
                          r"dense vectors.*sparse_absent='zero'"):
            model = SparkBoostClassifier(num_workers=workers,
                                         enable_sparse_data_optim=True,
                                         **PARAMS).fit(frame)
        assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).toPandas()
    proba = np.stack(out["probability"].map(lambda v: v.toArray()))
    np.testing.assert_array_equal(proba, local.predict_proba(X))
    # absent is not 0.0 here: the dense form (absent read as 0.0) trains
    # another model
    zeros = BoostClassifier(**PARAMS).fit(X.toarray(), labels)
    assert not np.array_equal(zeros.predict_proba(X.toarray()), proba)


@pytest.mark.parametrize("absent", ["missing", "zero"])
def test_sparse_regressor_absent_entries_as_single_node(spark, absent):
    """``sparse_absent``: an absent entry is what it is to single-node
    skboost given the CSR matrix (missing, or 0.0 as Spark ML reads a
    sparse vector); with "zero" the model is also the dense form's."""
    vectors, X, y = _sparse_rows(seed=1)
    frame = _vector_frame(spark, vectors, y, 3)
    params = dict(PARAMS, sparse_absent=absent)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SparkBoostRegressor(num_workers=2,
                                    enable_sparse_data_optim=True,
                                    **params).fit(frame)
    # the warning about zeros read two ways: only where they are
    assert any("sparse_absent='zero'" in str(w.message) for w in caught) \
        == (absent == "missing")
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).toPandas()
    np.testing.assert_array_equal(out["prediction"], local.predict(X))
    if absent == "zero":   # the dense form's model, and its predictions
        dense = BoostRegressor(**params).fit(X.toarray(), y)
        assert _trees_equal(model.get_booster(), dense.get_booster())
        np.testing.assert_array_equal(model.to_local().predict(X),
                                      dense.predict(X.toarray()))


def _sparse_only_rows(n=1200, n_features=40, seed=0):
    """Rows of a VectorUDT column, every one a sparse vector (4 stored
    entries of few distinct values, some stored NaN), their CSR matrix
    and a binary label."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(seed)
    indptr, indices, data = [0], [], []
    for _ in range(n):
        cols = np.sort(rng.choice(n_features, size=4, replace=False))
        row = rng.integers(-2, 6, size=4).astype(np.float64)
        row[rng.random(4) < 0.05] = np.nan
        indices += cols.tolist()
        data += row.tolist()
        indptr.append(len(indices))
    X = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)),
                      shape=(n, n_features))
    vectors = [Vectors.sparse(n_features, X.indices[a:b].tolist(),
                              X.data[a:b].tolist())
               for a, b in zip(X.indptr[:-1], X.indptr[1:])]
    score = np.nan_to_num(X[:, :6].toarray()) @ [1.0, -1.0, 0.5, 2.0, -2.0,
                                                 1.0]
    labels = (score + rng.normal(size=n) > 0).astype(float)
    return vectors, X, labels


@pytest.mark.parametrize("absent", ["missing", "zero"])
@pytest.mark.parametrize("tree_method", ["hist", "approx"])
def test_sparse_shards_predict_as_single_node_on_one_or_two_tasks(
        spark, absent, tree_method):
    """Sparse vectors trained sparse (``enable_sparse_data_optim``): the
    tasks bin the stored entries only, and one or two tasks predict bit
    for bit as single-node skboost on the CSR matrix, for both readings
    of an absent entry, with ``hist`` and with ``approx`` (cuts proposed
    per tree over every task's rows)."""
    vectors, X, labels = _sparse_only_rows(seed=5)
    frame = _vector_frame(spark, vectors, labels, 4)
    params = dict(PARAMS, sparse_absent=absent, tree_method=tree_method)
    local = BoostClassifier(**params).fit(X, labels)
    for workers in (1, 2):
        model = SparkBoostClassifier(num_workers=workers,
                                     enable_sparse_data_optim=True,
                                     **params).fit(frame)
        np.testing.assert_array_equal(model.to_local().predict_proba(X),
                                      local.predict_proba(X))
        profile = model._task_profile
        assert len(profile) == workers
        # a code and a column index per stored entry, a row pointer per
        # row, a few arrays per feature: never a byte per row and feature
        bound = (X.nnz * 5 + (X.shape[0] + workers) * 8
                 + workers * (X.shape[1] * 16 + 8))
        assert sum(task["binned_bytes"] for task in profile) <= bound
    out = model.transform(frame).toPandas()
    proba = np.stack(out["probability"].map(lambda v: v.toArray()))
    np.testing.assert_array_equal(proba, local.predict_proba(X))


def _vector_table(n_rows, width, seed=0):
    """An Arrow table as a barrier task receives it: row ids, VectorUDT's
    struct (sparse rows of ``width`` features, 5 stored each) and labels."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    indices = [np.sort(rng.choice(width, size=5, replace=False)).tolist()
               for _ in range(n_rows)]
    values = [rng.integers(1, 9, size=5).astype(float).tolist()
              for _ in range(n_rows)]
    struct = pa.StructArray.from_arrays(
        [pa.array([0] * n_rows, pa.int8()),
         pa.array([width] * n_rows, pa.int32()),
         pa.array(indices, pa.list_(pa.int32())),
         pa.array(values, pa.list_(pa.float64()))],
        names=["type", "size", "indices", "values"])
    return pa.table({"__skboost_row": pa.array(np.arange(n_rows)),
                     "__skboost_features": struct,
                     "label": pa.array(rng.normal(size=n_rows))}), \
        indices, values


def test_the_task_reads_sparse_vectors_as_csr_never_dense():
    """What a task's shard receives from a sparse vector column of 10**9
    features: a CSR matrix holding exactly the stored entries (a dense
    float32 copy of these 2,000 rows would be 8 TB: the conversion could
    not have made one)."""
    from skboost.spark.task import TaskPlan, partitions_of, read_rows

    width = 10 ** 9
    table, indices, values = _vector_table(2000, width)
    plan = TaskPlan(kind="regressor", params={}, seed=0, token=b"",
                    features_col="__skboost_features",
                    features_name="features")
    table, order, partition = read_rows(table.to_batches(max_chunksize=512),
                                        plan)
    (part,), evals = partitions_of(table, order, partition, plan)
    X = part[1]
    assert sp.isspmatrix_csr(X) and X.shape == (2000, width)
    assert X.nnz == 2000 * 5 and not evals
    np.testing.assert_array_equal(X.indices, np.concatenate(indices))
    np.testing.assert_array_equal(X.data, np.concatenate(values))
    # the shard loads it as CSR, as check_X converts a CSR matrix
    from skboost.dask.train import Shard

    template = BoostRegressor()
    template.n_features_in_ = width
    shard = Shard([part])
    shard.load(template, [0])
    assert sp.isspmatrix_csr(shard.X) and shard.X.nnz == 2000 * 5


def test_sparse_vectors_of_different_sizes_name_the_column(spark):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.sparse(5 if i < 30 else 6, [1], [1.0]), float(i % 2))
            for i in range(60)]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2),
                                  ["features", "label"])
    for workers in (1, 2):
        with pytest.raises(ValueError, match="featuresCol 'features' holds "
                           "vectors of different sizes"):
            SparkBoostClassifier(num_workers=workers, n_estimators=2,
                                 enable_sparse_data_optim=True).fit(
                frame.coalesce(workers))


# -- categorical columns ----------------------------------------------------

def _categorical_frame(spark, n=1200, seed=5, n_partitions=4):
    """Two string columns (12 labels: partition splits; 3: one-hot) and
    two numeric ones, a target that depends on the labels."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    colors = np.array([f"c{k}" for k in range(12)])[rng.integers(0, 12, n)]
    sizes = np.array(["S", "M", "L"])[rng.integers(0, 3, n)]
    x0 = rng.integers(1, 30, n).astype(float)
    x1 = rng.integers(1, 20, n).astype(float)
    effect = {f"c{k}": v for k, v in enumerate(rng.normal(size=12) * 3)}
    y = (np.array([effect[c] for c in colors]) + (sizes == "M") * 2
         + x0 / 10 + rng.normal(size=n))
    pdf = pd.DataFrame({"x0": x0, "color": colors, "x1": x1, "size": sizes,
                        "label": y})
    return spark.createDataFrame(pdf).repartition(n_partitions)


def test_string_indexer_attributes_make_categorical_features(spark):
    """StringIndexer's nominal attributes, through VectorAssembler's
    slots: those features are categorical, and the model is single-node
    skboost's with ``categorical_features`` naming them, for one and two
    tasks (read as dense arrays, the default: an absent entry of the
    sparse vectors the assembler writes is 0.0, category 0)."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import StringIndexer, VectorAssembler

    frame = _categorical_frame(spark)
    prepared = Pipeline(stages=[
        StringIndexer(inputCols=["color", "size"],
                      outputCols=["color_i", "size_i"]),
        VectorAssembler(inputCols=["x0", "color_i", "x1", "size_i"],
                        outputCol="features")]).fit(frame).transform(frame)
    prepared = prepared.select("features", "label").cache()
    rows = prepared.toPandas()
    X = np.stack(rows["features"].map(lambda v: v.toArray()))
    y = rows["label"].to_numpy()
    params = dict(PARAMS)
    local = BoostRegressor(categorical_features=[1, 3], **params).fit(X, y)
    assert any(t.has_categorical_splits for t in local.get_booster().trees)
    for workers in (1, 2):
        model = SparkBoostRegressor(num_workers=workers,
                                    **params).fit(prepared)
        assert _trees_equal(model.get_booster(), local.get_booster())
    assert list(model.to_local().categorical_features) == [1, 3]
    out = model.transform(prepared).toPandas()
    np.testing.assert_array_equal(out["prediction"], local.predict(X))


def test_categorical_columns_and_the_param(spark):
    """``features_cols``: StringIndexer's output columns are categorical
    by their attribute, and ``categorical_features`` names another (a
    numeric column of whole numbers): single-node skboost with the three
    named, for two tasks."""
    from pyspark.ml.feature import StringIndexer

    frame = _categorical_frame(spark, seed=6)
    indexed = StringIndexer(inputCols=["color", "size"],
                            outputCols=["color_i", "size_i"]).fit(frame) \
        .transform(frame).cache()
    names = ["x0", "color_i", "x1", "size_i"]
    rows = indexed.toPandas()
    local = BoostRegressor(categorical_features=["color_i", "size_i", "x1"],
                           **PARAMS).fit(rows[names], rows["label"])
    model = SparkBoostRegressor(num_workers=2, features_cols=names,
                                categorical_features=["x1"],
                                **PARAMS).fit(indexed)
    assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(indexed).toPandas()
    np.testing.assert_array_equal(out["prediction"],
                                  local.predict(out[names]))


def test_bad_categorical_values_name_the_column(spark):
    """Negative, fractional, or beyond the attribute's labels: a clear
    error naming the column (the slot of a vector column)."""
    import pandas as pd
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import functions as F

    rng = np.random.default_rng(7)
    values = rng.integers(0, 3, size=(40, 3)).astype(float)
    y = rng.normal(size=40)
    bad = values.copy()
    bad[17, 2] = -1.0
    vectors = spark.createDataFrame(
        [(Vectors.dense(r.tolist()), float(t)) for r, t in zip(bad, y)],
        ["features", "label"]).repartition(2)
    with pytest.raises(ValueError, match=r"featuresCol slot 2 is "
                       r"categorical, but holds -1\.0"):
        SparkBoostRegressor(num_workers=2, n_estimators=1,
                            categorical_features=[2]).fit(vectors)
    pdf = pd.DataFrame(values, columns=["a", "b", "c"]).assign(label=y)
    pdf.loc[5, "b"] = 1.5
    columns = spark.createDataFrame(pdf)
    with pytest.raises(ValueError, match="features_cols 'b' is categorical,"
                       r" but holds 1\.5"):
        SparkBoostRegressor(features_cols=["a", "b"], n_estimators=1,
                            categorical_features=["b"]).fit(columns)
    # an index beyond the labels the nominal attribute lists
    attribute = {"ml_attr": {"type": "nominal", "vals": ["p", "q"]}}
    marked = spark.createDataFrame(pd.DataFrame(values, columns=[
        "a", "b", "c"]).assign(label=y)).withColumn(
        "c", F.col("c").alias("c", metadata=attribute))
    with pytest.raises(ValueError, match=r"features_cols 'c' is "
                       r"categorical, but holds 2\.0.*lists 2 labels"):
        SparkBoostRegressor(features_cols=["a", "c"],
                            n_estimators=1).fit(marked)


# -- survival:aft interval bounds -------------------------------------------

def test_aft_bound_columns_equal_single_node(spark):
    """label_lower_bound_col / label_upper_bound_col: the [lower, upper]
    bounds single-node ``fit`` takes as a (n, 2) y (exact, right-censored:
    inf, left-censored: 0, interval), for one and two tasks; transform
    predicts as single-node."""
    import pandas as pd

    rng = np.random.default_rng(9)
    n = 800
    X = rng.integers(0, 30, size=(n, 4)).astype(np.float64)
    time = np.round(rng.exponential(np.exp((X[:, 0] - X[:, 1]) / 20)), 2)
    time += 0.01
    kind = rng.integers(0, 4, n)   # exact, right, left, interval
    lower = np.where(kind == 2, 0.0, time)
    upper = np.select([kind == 1, kind == 3], [np.inf, time * 1.5], time)
    names = ["a", "b", "c", "d"]
    pdf = pd.DataFrame(X, columns=names).assign(lo=lower, hi=upper)
    frame = spark.createDataFrame(pdf).repartition(4).cache()
    rows = frame.toPandas()
    params = dict(PARAMS, objective="survival:aft",
                  aft_loss_distribution="logistic")
    local = BoostRegressor(**params).fit(
        rows[names], rows[["lo", "hi"]].to_numpy())
    for workers in (1, 2):
        model = SparkBoostRegressor(
            num_workers=workers, features_cols=names,
            label_lower_bound_col="lo", label_upper_bound_col="hi",
            **params).fit(frame)
        assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).toPandas()
    np.testing.assert_array_equal(out["prediction"],
                                  local.predict(out[names]))
    with pytest.raises(ValueError, match="set both"):
        SparkBoostRegressor(features_cols=names, label_lower_bound_col="lo",
                            **params).fit(frame)
    with pytest.raises(ValueError, match="objective is 'reg:squarederror'"):
        SparkBoostRegressor(features_cols=names, label_lower_bound_col="lo",
                            label_upper_bound_col="hi").fit(frame)
    bad = frame.withColumn("hi", frame["lo"] - 1.0)
    with pytest.raises(ValueError, match="upper bounds"):
        SparkBoostRegressor(features_cols=names, label_lower_bound_col="lo",
                            label_upper_bound_col="hi",
                            **params).fit(bad)


def test_categorical_slots_of_sparse_vectors(spark):
    """``categorical_features`` on sparse vectors (absent entries missing):
    single-node skboost on the CSR matrix with the same slots declared
    categorical, for two tasks."""
    vectors, X, y = _sparse_rows(seed=3)
    frame = _vector_frame(spark, vectors, y, 4)
    params = dict(PARAMS, categorical_features=[0, 2])
    local = BoostRegressor(**params).fit(X, y)
    assert any(t.has_categorical_splits for t in local.get_booster().trees)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # mixed vectors
        model = SparkBoostRegressor(num_workers=2,
                                    enable_sparse_data_optim=True,
                                    **params).fit(frame)
    assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).toPandas()
    np.testing.assert_array_equal(out["prediction"], local.predict(X))
