"""Training on Spark: ``SparkBoostRegressor``, ``SparkBoostClassifier`` and
``SparkBoostRanker``, ``pyspark.ml`` estimators whose fit is one barrier
stage.

Every barrier task holds the rows of its Spark partitions as a shard (the
Dask engine's ``Shard``: binned with global cut points, histograms summed
in exact fixed point among the tasks over direct TCP links) and runs the
same boosting loop; task 0 returns the model. The model does not depend on
``num_workers``, equals ``skboost.dask`` trained on the same partitions,
and single-node training where no feature has more than ``max_bin``
distinct values (``doc/user_guide/spark.rst``). The fitted models
``transform`` with a pandas UDF, save skboost's own model file with
``write()``, and convert to and from the single-node estimators.

Install with ``pip install skboost[spark]`` (PySpark; Java 17).
"""

try:
    import pyspark  # noqa: F401
except ImportError as error:   # pragma: no cover - the extra is missing
    raise ImportError("skboost.spark needs PySpark: pip install "
                      "skboost[spark]") from error

from .estimator import (SparkBoostClassifier, SparkBoostClassifierModel,
                        SparkBoostRanker, SparkBoostRankerModel,
                        SparkBoostRegressor, SparkBoostRegressorModel)

__all__ = ["SparkBoostRegressor", "SparkBoostClassifier", "SparkBoostRanker",
           "SparkBoostRegressorModel", "SparkBoostClassifierModel",
           "SparkBoostRankerModel"]
