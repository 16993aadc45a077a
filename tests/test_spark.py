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
import signal
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

    sigint = signal.getsignal(signal.SIGINT)

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
    # SparkContext installed its own SIGINT handler (cancelling its jobs):
    # a later test in this process sends itself SIGINT (test_interrupt)
    signal.signal(signal.SIGINT, sigint)


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


def test_tasks_grow_rounds_in_fixed_batches(spark):
    """Every task runs the boosting loop itself, so the rounds per call
    must agree among the tasks: without eval sets they stay batches of
    ROUNDS_PER_CALL (a pace measured by each task's clock could differ;
    skboost.dask's one client paces its calls), the trees single-node's."""
    from skboost.dask.train import ROUNDS_PER_CALL

    X, y = _discrete_data(n=600, seed=6)
    frame = _frame(spark, X, y, 2)
    params = dict(PARAMS, n_estimators=2 * ROUNDS_PER_CALL + 3, max_depth=2)
    model = SparkBoostRegressor(num_workers=2, **params).fit(frame)
    assert [task["round_calls"] for task in model._task_profile] == [3, 3]
    local = BoostRegressor(**params).fit(X, y)
    assert _trees_equal(model.get_booster(), local.get_booster())


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


# -- features_cols, eval sets and early stopping ----------------------------

def test_features_cols_validation_and_early_stopping_equal_single_node(spark):
    """Numeric columns as features (their names kept), rows marked by
    validationIndicatorCol as the eval set: the single-node fit with that
    eval_set, its metrics and its early stopping."""
    import pandas as pd

    X, y = _discrete_data(n=900, seed=4)
    valid = np.random.default_rng(5).random(len(y)) < 0.3
    names = ["a", "b", "c", "d", "e"]
    pdf = pd.DataFrame(X, columns=names).assign(label=y, valid=valid)
    frame = spark.createDataFrame(pdf).repartition(1).coalesce(1)
    params = dict(PARAMS, n_estimators=60, learning_rate=0.5,
                  early_stopping_rounds=3)
    model = SparkBoostRegressor(features_cols=names, num_workers=1,
                                validationIndicatorCol="valid",
                                **params).fit(frame)
    local = BoostRegressor(**params).fit(
        pdf[names][~valid], y[~valid], eval_set=[(pdf[names][valid],
                                                  y[valid])])
    spark_local = model.to_local()
    assert _trees_equal(model.get_booster(), local.get_booster())
    assert spark_local.best_iteration == local.best_iteration < 59
    np.testing.assert_allclose(
        spark_local.evals_result_["validation_0"]["rmse"],
        local.evals_result_["validation_0"]["rmse"], rtol=1e-12)
    assert list(spark_local.feature_names_in_) == names
    out = model.transform(frame).toPandas()
    np.testing.assert_array_equal(out["prediction"],
                                  local.predict(out[names]))


# -- composition: Pipeline, CrossValidator, evaluators ----------------------

def test_pipeline_cross_validator_and_evaluators(spark):
    """A VectorAssembler + SparkBoostClassifier pipeline tuned by
    CrossValidator over max_depth; Spark's evaluators give scikit-learn's
    metrics of the single-node model's predictions."""
    import pandas as pd
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.evaluation import (BinaryClassificationEvaluator,
                                       MulticlassClassificationEvaluator)
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder
    from sklearn.metrics import accuracy_score, roc_auc_score

    X, y = _discrete_data(n=600, seed=8, n_classes=2)
    X = np.nan_to_num(X)
    names = ["a", "b", "c", "d", "e"]
    frame = spark.createDataFrame(pd.DataFrame(X, columns=names)
                                  .assign(label=y)).repartition(2)
    classifier = SparkBoostClassifier(num_workers=2, n_estimators=4,
                                      learning_rate=0.5, random_state=0)
    pipeline = Pipeline(stages=[
        VectorAssembler(inputCols=names, outputCol="features"), classifier])
    grid = (ParamGridBuilder()
            .addGrid(classifier.getParam("max_depth"), [1, 3]).build())
    auc = BinaryClassificationEvaluator(metricName="areaUnderROC")
    cv = CrossValidator(estimator=pipeline, estimatorParamMaps=grid,
                        evaluator=auc, numFolds=2, seed=1)
    fitted = cv.fit(frame)
    best = fitted.bestModel.stages[-1]
    depths = [m[classifier.getParam("max_depth")] for m in grid]
    assert best.getOrDefault("max_depth") == depths[int(np.argmax(
        fitted.avgMetrics))]
    assert isinstance(fitted.bestModel, PipelineModel)
    out = fitted.transform(frame).toPandas()
    local = best.to_local()
    proba = local.predict_proba(out[names].to_numpy())
    assert auc.evaluate(fitted.transform(frame)) == pytest.approx(
        roc_auc_score(out["label"], proba[:, 1]), abs=1e-12)
    accuracy = MulticlassClassificationEvaluator(metricName="accuracy")
    assert accuracy.evaluate(fitted.transform(frame)) == pytest.approx(
        accuracy_score(out["label"], local.predict(out[names].to_numpy())))


def test_regression_evaluator(spark):
    from pyspark.ml.evaluation import RegressionEvaluator
    from sklearn.metrics import mean_squared_error

    X, y = _discrete_data(n=400, seed=9)
    frame = _frame(spark, X, y, 2)
    model = SparkBoostRegressor(num_workers=2, **PARAMS).fit(frame)
    rmse = RegressionEvaluator(metricName="rmse").evaluate(
        model.transform(frame))
    expected = mean_squared_error(y, model.to_local().predict(X)) ** 0.5
    assert rmse == pytest.approx(expected, rel=1e-12)


# -- save and load ----------------------------------------------------------

def test_write_read_and_the_single_node_model_file(spark, tmp_path):
    from skboost.spark import SparkBoostClassifierModel

    X, y = _discrete_data(n=400, seed=10, n_classes=3)
    frame = _frame(spark, X, y, 2)
    model = SparkBoostClassifier(num_workers=2, probabilityCol="p",
                                 **PARAMS).fit(frame)
    path = str(tmp_path / "model")
    model.write().overwrite().save(path)
    loaded = SparkBoostClassifierModel.load(path)
    assert loaded.uid == model.uid
    assert loaded.getOrDefault("max_depth") == PARAMS["max_depth"]
    assert loaded.getProbabilityCol() == "p"
    expected = model.to_local().predict_proba(X)
    got = loaded.transform(frame).toPandas()["p"]
    np.testing.assert_array_equal(np.stack(got.map(lambda v: v.toArray())),
                                  expected)
    # skboost's own file: the single-node estimator reads it
    local = BoostClassifier.load(tmp_path / "model" / "model.json")
    np.testing.assert_array_equal(local.predict_proba(X), expected)
    again = SparkBoostClassifierModel.from_local(local, probabilityCol="q")
    out = again.transform(frame).toPandas()["q"]
    np.testing.assert_array_equal(np.stack(out.map(lambda v: v.toArray())),
                                  expected)
    # the estimator's parameters round-trip too
    estimator = SparkBoostClassifier(max_depth=2, num_workers=2,
                                     labelCol="y")
    estimator.write().overwrite().save(str(tmp_path / "estimator"))
    read = SparkBoostClassifier.load(str(tmp_path / "estimator"))
    assert (read.getOrDefault("max_depth"), read.getLabelCol(),
            read.getOrDefault("num_workers")) == (2, "y", 2)
    # a damaged model file is a clear error, never a crash
    damaged = tmp_path / "model" / "model.json"
    damaged.write_bytes(damaged.read_bytes()[:200])
    with pytest.raises(ValueError, match="model.json.*Checksum"):
        SparkBoostClassifierModel.load(path)   # Hadoop's checksum saw it
    (tmp_path / "model" / ".model.json.crc").unlink()
    with pytest.raises(ValueError):
        SparkBoostClassifierModel.load(path)   # skboost's reader sees it
    with pytest.raises(TypeError, match="fitted BoostClassifier"):
        SparkBoostClassifierModel.from_local(BoostRegressor())


# -- bad input --------------------------------------------------------------

def test_bad_input_names_the_column(spark):
    import pandas as pd
    from pyspark.ml.linalg import Vectors

    X, y = _discrete_data(n=60, seed=11)
    labels = [None if i == 7 else float(v) for i, v in enumerate(y)]
    frame = spark.createDataFrame(
        [(Vectors.dense(x.tolist()), v) for x, v in zip(X, labels)],
        ["features", "label"]).repartition(2)
    with pytest.raises(ValueError, match="labelCol 'label' has 1 null"):
        SparkBoostRegressor(num_workers=2, n_estimators=2).fit(frame)
    strings = spark.createDataFrame(pd.DataFrame(
        {"a": X[:, 0], "s": ["x"] * 60, "label": y}))
    with pytest.raises(TypeError, match="features_cols 's'.*string"):
        SparkBoostRegressor(features_cols=["a", "s"]).fit(strings)
    with pytest.raises(TypeError, match="featuresCol 's'"):
        SparkBoostRegressor(featuresCol="s").fit(strings)
    with pytest.raises(ValueError, match="featuresCol 'missing' is not a "
                       "column"):
        SparkBoostRegressor(featuresCol="missing").fit(strings)
    mixed = spark.createDataFrame(spark.sparkContext.parallelize(
        [(Vectors.dense([1.0, 2.0, 3.0][:2 + (i >= 30)]), float(i % 2))
         for i in range(60)], 2), ["features", "label"])
    with pytest.raises(ValueError, match="featuresCol 'features' holds "
                       "vectors of different sizes"):
        SparkBoostClassifier(num_workers=2, n_estimators=2).fit(mixed)
    with pytest.raises(ValueError, match="featuresCol 'features' holds "
                       "vectors of different sizes"):
        SparkBoostClassifier(num_workers=1, n_estimators=2).fit(
            mixed.coalesce(1))
    with pytest.raises(TypeError, match="unknown parameter"):
        SparkBoostRegressor(max_dept=3)


def test_empty_partitions(spark):
    """Empty Spark partitions hold no rows of the fit: the model is the
    single-node one; a task left without any row is a clear error."""
    X, y = _discrete_data(n=300, seed=12)
    frame = _frame(spark, X, y, 6).filter("label > -1e9")
    with_empty = spark.createDataFrame(
        frame.rdd.mapPartitionsWithIndex(
            lambda k, rows: rows if k not in (1, 4) else iter(())),
        frame.schema)
    model = SparkBoostRegressor(num_workers=2, **PARAMS).fit(with_empty)
    keep = np.concatenate([np.arange(a, b) for k, (a, b) in enumerate(
        zip(np.r_[0, np.cumsum(_bounds(300, 6))][:-1],
            np.cumsum(_bounds(300, 6)))) if k not in (1, 4)])
    local = BoostRegressor(**PARAMS).fit(X[keep], y[keep])
    assert _trees_equal(model.get_booster(), local.get_booster())
    first_empty = spark.createDataFrame(
        frame.rdd.mapPartitionsWithIndex(
            lambda k, rows: rows if k >= 3 else iter(())), frame.schema)
    with pytest.raises(ValueError, match="task 0 failed: this task "
                       "received no rows"):
        SparkBoostRegressor(num_workers=2, n_estimators=2).fit(first_empty)


# -- SHAP columns, TrainValidationSplit, ranker, approx, base margins -------

def test_contributions_column(spark):
    """``pred_contrib_col``: the single-node model's SHAP values per row,
    which add up to the row's margin (rawPrediction's last entry)."""
    X, y = _discrete_data(n=400, seed=21, n_classes=2)
    frame = _frame(spark, X, y, 2)
    model = SparkBoostClassifier(num_workers=2, pred_contrib_col="shap",
                                 **PARAMS).fit(frame)
    out = model.transform(frame).toPandas()
    shap = np.stack(out["shap"].map(np.asarray))
    local = model.to_local()
    np.testing.assert_array_equal(shap, local.predict_contributions(X))
    raw = np.stack(out["rawPrediction"].map(lambda v: v.toArray()))
    np.testing.assert_allclose(shap.sum(axis=1), raw[:, 1], atol=1e-4)
    assert "shap" not in SparkBoostClassifier(**PARAMS).fit(frame) \
        .transform(frame).columns


def test_train_validation_split(spark):
    """TrainValidationSplit over a grid: each validation metric is
    scikit-learn's AUC of the single-node model fitted on the same
    training rows (the split redrawn here as pyspark draws it)."""
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import ParamGridBuilder, TrainValidationSplit
    from pyspark.sql import functions as F
    from sklearn.metrics import roc_auc_score

    X, y = _discrete_data(n=800, seed=22, n_classes=2)
    frame = _frame(spark, X, y, 2)
    classifier = SparkBoostClassifier(num_workers=2, **PARAMS)
    grid = (ParamGridBuilder()
            .addGrid(classifier.getParam("max_depth"), [1, 4]).build())
    tvs = TrainValidationSplit(estimator=classifier, estimatorParamMaps=grid,
                               evaluator=BinaryClassificationEvaluator(),
                               trainRatio=0.7, seed=5)
    fitted = tvs.fit(frame)
    drawn = frame.select("*", F.rand(5).alias("r")).toPandas()
    train = drawn["r"] < 0.7

    def rows(mask):
        return np.stack(drawn["features"][mask].map(lambda v: v.toArray())), \
            drawn["label"][mask].to_numpy()

    (X_train, y_train), (X_valid, y_valid) = rows(train), rows(~train)
    expected = [roc_auc_score(y_valid, BoostClassifier(
        **dict(PARAMS, max_depth=d)).fit(X_train, y_train)
        .predict_proba(X_valid)[:, 1]) for d in (1, 4)]
    np.testing.assert_allclose(fitted.validationMetrics, expected,
                               rtol=1e-9)
    assert fitted.bestModel.getOrDefault("max_depth") == \
        (1, 4)[int(np.argmax(expected))]


def test_ranker_with_approx_equals_single_node(spark):
    """SparkBoostRanker, qidCol (queries inside partitions), with
    ``tree_method="approx"`` (global proposals): the single-node ranker's
    trees, for one or two tasks."""
    from skboost import BoostRanker
    from skboost.spark import SparkBoostRanker

    X, y = _discrete_data(n=1200, seed=23)
    relevance = np.digitize(y, np.quantile(y, [0.5, 0.8, 0.95])).astype(
        np.float64)
    qid = np.repeat(np.arange(60), 20)   # 300 rows (15 queries) a partition
    frame = _frame(spark, X, relevance, 4, extra=qid[:, None].tolist())
    params = dict(PARAMS, tree_method="approx")
    local = BoostRanker(**params).fit(X, relevance, qid=qid)
    for workers in (1, 2):
        model = SparkBoostRanker(num_workers=workers, qidCol="extra0",
                                 **params).fit(frame)
        assert _trees_equal(model.get_booster(), local.get_booster())
    out = model.transform(frame).toPandas()
    np.testing.assert_array_equal(out["prediction"], local.predict(X))


def test_base_margins_equal_single_node(spark):
    """``baseMarginCol``: each row's starting margin, as single-node
    ``fit(base_margin=...)``."""
    from skboost.spark import SparkBoostRegressor as Regressor

    X, y = _discrete_data(n=600, seed=24)
    margin = np.round(np.random.default_rng(25).normal(size=len(y)), 2)
    frame = _frame(spark, X, y, 3, extra=margin[:, None].tolist())
    model = Regressor(num_workers=2, baseMarginCol="extra0",
                      **PARAMS).fit(frame)
    local = BoostRegressor(**PARAMS).fit(X, y, base_margin=margin)
    assert _trees_equal(model.get_booster(), local.get_booster())
