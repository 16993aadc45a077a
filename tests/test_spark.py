"""skboost.spark on a real local Spark (``local[2]``: two barrier tasks).

Oracles: single-node skboost training on the concatenated rows (bit for
bit where no feature has more than ``max_bin`` distinct values), the same
fit with one task (the model must not depend on ``num_workers``),
``skboost.dask`` on a ``LocalCluster`` given the same partitions (bit for
bit with sampling and cuts that depend on the partitioning), scikit-learn's
metrics against Spark's evaluators, and the single-node model's own
predictions against ``transform``'s columns.
"""

import os
import shutil
import sys

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed "
                              "(pip install skboost[spark])")
if shutil.which("java") is None:
    pytest.skip("no java on PATH: PySpark needs a Java runtime (Java 17)",
                allow_module_level=True)

from skboost import BoostClassifier, BoostRegressor  # noqa: E402
from skboost.spark import (SparkBoostClassifier,  # noqa: E402
                           SparkBoostRegressor)

PARAMS = dict(n_estimators=6, max_depth=4, learning_rate=0.3, random_state=3,
              n_jobs=1)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # the Python workers run this interpreter, with this checkout of skboost
    os.environ["PYSPARK_PYTHON"] = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    session = (SparkSession.builder.master("local[2]")
               .appName("skboost-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _discrete_data(n=1200, n_features=5, seed=0, n_classes=None):
    """Features with at most 40 distinct values (cuts independent of the
    partitioning), some missing, a noisy target (or classes)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 40, size=(n, n_features)).astype(np.float64)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nansum(X[:, :3] * [1.0, -0.5, 0.25], axis=1) + rng.normal(
        size=n) * 3
    if n_classes is not None:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)
                                       [1:-1])).astype(np.float64)
    return X, y


def _frame(spark, X, y, n_partitions, weight=None, extra=None):
    """A DataFrame with a dense vector ``features`` column, ``label`` (and
    ``weight``), whose partition k holds the k-th contiguous run of rows
    (``parallelize``'s slices)."""
    from pyspark.ml.linalg import Vectors

    rows = []
    for i in range(X.shape[0]):
        row = [Vectors.dense(X[i].tolist()), float(y[i])]
        if weight is not None:
            row.append(float(weight[i]))
        if extra is not None:
            row += list(extra[i])
        rows.append(tuple(row))
    names = ["features", "label"] + (["weight"] if weight is not None else [])
    if extra is not None:
        names += [f"extra{k}" for k in range(len(extra[0]))]
    return spark.createDataFrame(
        spark.sparkContext.parallelize(rows, n_partitions), names)


def _bounds(n, n_partitions):
    """``parallelize``'s slices of n rows: their row counts."""
    starts = [i * n // n_partitions for i in range(n_partitions + 1)]
    return tuple(b - a for a, b in zip(starts[:-1], starts[1:]))


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


# -- the model: equal to single-node, independent of num_workers ------------

@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_equals_single_node_for_one_or_two_tasks(spark, n_classes):
    X, y = _discrete_data(n_classes=n_classes)
    frame = _frame(spark, X, y, 4)
    models = [SparkBoostClassifier(num_workers=w, **PARAMS).fit(frame)
              for w in (1, 2)]
    local = BoostClassifier(**PARAMS).fit(X, y)
    for model in models:
        assert _trees_equal(model.get_booster(), local.get_booster())
    # transform: the single-node model's probabilities, margins and classes
    out = models[1].transform(frame).toPandas()
    proba = np.stack(out["probability"].map(lambda v: v.toArray()))
    raw = np.stack(out["rawPrediction"].map(lambda v: v.toArray()))
    np.testing.assert_array_equal(proba, local.predict_proba(X))
    margin = local.predict(X, output_margin=True)
    if n_classes == 2:
        margin = np.column_stack([-margin, margin])
    np.testing.assert_array_equal(raw, margin)
    np.testing.assert_array_equal(out["prediction"], local.predict(X))


def test_regressor_with_weights_equals_single_node(spark):
    X, y = _discrete_data(seed=1)
    weight = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y))
    frame = _frame(spark, X, y, 3, weight=weight)
    model = SparkBoostRegressor(num_workers=2, weightCol="weight",
                                **PARAMS).fit(frame)
    local = BoostRegressor(**PARAMS).fit(X, y, sample_weight=weight)
    assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).select("prediction").toPandas()
    np.testing.assert_array_equal(out["prediction"], local.predict(X))


# -- equal to skboost.dask on the same partitions ---------------------------

def test_equals_dask_on_the_same_partitions(spark):
    """Continuous features (cuts that depend on the partitioning), row and
    column sampling: the same model as DaskBoostClassifier given the same
    four partitions, and the same for one or two tasks."""
    distributed = pytest.importorskip("distributed")
    import dask.array as da
    from skboost.dask import DaskBoostClassifier

    rng = np.random.default_rng(7)
    X = rng.normal(size=(1000, 4))
    y = (X[:, 0] + X[:, 1] ** 2 + rng.normal(size=1000) > 1).astype(float)
    params = dict(PARAMS, max_bin=16, subsample=0.7, colsample_bynode=0.8)
    frame = _frame(spark, X, y, 4)
    spark_models = [SparkBoostClassifier(num_workers=w, **params).fit(frame)
                    for w in (1, 2)]
    chunks = _bounds(len(y), 4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask_model = DaskBoostClassifier(**params).fit(
            da.from_array(X, chunks=(chunks, 4)),
            da.from_array(y, chunks=(chunks,)), client=client)
    for model in spark_models:
        assert _trees_equal(model.get_booster(), dask_model.get_booster())
    # and not the single-node model: the cuts depend on the partitioning
    local = BoostClassifier(**params).fit(X, y)
    assert not np.array_equal(local.predict_proba(X),
                              spark_models[1].to_local().predict_proba(X))
