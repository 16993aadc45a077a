"""Sparse vectors, categorical columns and AFT interval bounds on a real
local Spark (``local[2]``).

Oracles: single-node skboost on the same data (the CSR matrix the vectors
hold, the columns declared categorical, the [lower, upper] bounds), bit
for bit where no feature has more than ``max_bin`` distinct values, for
one and two barrier tasks; for "never densified", the conversion of a
vector column of 10**9 features (a dense float32 copy of its 2,000 rows
would take 8 TB) and the type of the matrix a task's shard receives.
"""

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
        model = SparkBoostClassifier(num_workers=workers, **PARAMS).fit(frame)
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
    model = SparkBoostRegressor(num_workers=2, **params).fit(frame)
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).toPandas()
    np.testing.assert_array_equal(out["prediction"], local.predict(X))
    if absent == "zero":   # the dense form's model, and its predictions
        dense = BoostRegressor(**params).fit(X.toarray(), y)
        assert _trees_equal(model.get_booster(), dense.get_booster())
        np.testing.assert_array_equal(model.to_local().predict(X),
                                      dense.predict(X.toarray()))


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


def test_sparse_vectors_of_different_sizes_name_the_column(spark):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.sparse(5 if i < 30 else 6, [1], [1.0]), float(i % 2))
            for i in range(60)]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2),
                                  ["features", "label"])
    for workers in (1, 2):
        with pytest.raises(ValueError, match="featuresCol 'features' holds "
                           "vectors of different sizes"):
            SparkBoostClassifier(num_workers=workers,
                                 n_estimators=2).fit(frame.coalesce(workers))
