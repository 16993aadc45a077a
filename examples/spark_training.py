"""
Training on Spark
=================

Train a classifier where the data already is, in a Spark DataFrame, with
:class:`skboost.spark.SparkBoostClassifier`: a ``pyspark.ml`` estimator
that runs as a stage of a ``Pipeline``. The fit is one barrier stage:
each task holds its partitions' rows, the tasks exchange histograms
directly, and task 0 returns the model. Here Spark runs on this machine
(``local[2]``: two tasks); on a cluster only the session changes.

The model does not depend on the number of tasks, and where no feature
has more than ``max_bin`` distinct values it is the model single-node
training gives on the same rows: the script checks both. Last, a string
column through ``StringIndexer`` becomes a categorical feature.
(Needs ``pip install skboost[spark]`` and Java 17.)
"""

import os
import sys

import numpy as np
import pandas as pd
from pyspark.ml import Pipeline
from pyspark.ml.evaluation import BinaryClassificationEvaluator
from pyspark.ml.feature import VectorAssembler
from pyspark.sql import SparkSession

import skboost
from skboost import BoostClassifier
from skboost.spark import SparkBoostClassifier


def session():
    # the Python workers run this interpreter and find this skboost
    os.environ["PYSPARK_PYTHON"] = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.abspath(skboost.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    spark = (SparkSession.builder.master("local[2]")
             .appName("skboost-example")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main():
    rng = np.random.default_rng(0)
    n_rows = 4_000
    # integer-valued features (at most 50 distinct values each)
    X = rng.integers(0, 50, size=(n_rows, 4)).astype(np.float64)
    y = ((X[:, 0] - X[:, 1]) / 10 + rng.normal(size=n_rows) > 0).astype(
        np.float64)
    names = ["a", "b", "c", "d"]
    pdf = pd.DataFrame(X, columns=names).assign(label=y)

    # %%
    # A DataFrame of 4 partitions, and a pipeline: VectorAssembler puts
    # the columns into one vector column, the classifier trains on it.
    spark = session()
    frame = spark.createDataFrame(pdf).repartition(4).cache()
    params = dict(n_estimators=30, max_depth=4, learning_rate=0.3,
                  random_state=0)
    pipeline = Pipeline(stages=[
        VectorAssembler(inputCols=names, outputCol="features"),
        SparkBoostClassifier(num_workers=2, **params)])
    model = pipeline.fit(frame)
    scored = model.transform(frame)
    scored.select("label", "probability", "prediction").show(3)
    auc = BinaryClassificationEvaluator().evaluate(scored)
    print(f"training AUC (Spark's evaluator): {auc:.4f}")

    # %%
    # The fitted stage converts to the single-node ``BoostClassifier``:
    # it is the model of single-node training on the same rows (in the
    # DataFrame's partition order), and of a fit with one task.
    spark_model = model.stages[-1]
    rows = scored.select(*names, "label").toPandas()
    X_rows = rows[names].to_numpy()
    local = BoostClassifier(**params).fit(X_rows, rows["label"])
    same = np.array_equal(spark_model.to_local().predict_proba(X_rows),
                          local.predict_proba(X_rows))
    print("identical to BoostClassifier:", same)
    one_task = Pipeline(stages=[
        VectorAssembler(inputCols=names, outputCol="features"),
        SparkBoostClassifier(num_workers=1, **params)]).fit(frame)
    print("identical with one task:", np.array_equal(
        one_task.stages[-1].to_local().predict_proba(X_rows),
        local.predict_proba(X_rows)))

    # %%
    # Categorical columns: ``StringIndexer`` marks its output as nominal
    # (an ML attribute that ``VectorAssembler`` keeps for that slot of the
    # vector), and the classifier splits that feature on categories, as
    # single-node ``categorical_features`` does.
    from pyspark.ml.feature import StringIndexer

    cities = np.array(["Lyon", "Oslo", "Pune", "Kyiv", "Lima"])
    pdf["city"] = cities[rng.integers(0, 5, n_rows)]
    pdf["label"] = ((X[:, 0] - X[:, 1]) / 10 + (pdf["city"] == "Oslo") * 2
                    + rng.normal(size=n_rows) > 1).astype(np.float64)
    frame = spark.createDataFrame(pdf).repartition(4).cache()
    categorical = Pipeline(stages=[
        StringIndexer(inputCol="city", outputCol="city_index"),
        VectorAssembler(inputCols=names + ["city_index"],
                        outputCol="features"),
        SparkBoostClassifier(num_workers=2, **params)]).fit(frame)
    stage = categorical.stages[-1]
    print("categorical features:", stage.to_local().categorical_features)
    trees = stage.get_booster().trees
    print("trees with category splits:",
          sum(t.has_categorical_splits for t in trees), "of", len(trees))
    spark.stop()


if __name__ == "__main__":
    main()
