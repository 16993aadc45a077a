"""The ``pyspark.ml`` estimators and models of ``skboost.spark``.

The driver checks the parameters and the columns' types, selects the
columns a fit needs (features as float64 arrays, a row id that keeps each
row's Spark partition), shares the partitions out among ``num_workers``
barrier tasks (contiguous runs of partitions: a shuffle keyed so that
task k gets run k, or none when there are as many partitions as tasks)
and runs the stage (``task.train_in_task``); task 0 sends back the fitted
single-node estimator, which the Spark model wraps for ``transform``,
``write()`` and ``to_local()``.
"""

import json
import pickle
import re
import socket
import uuid
import warnings

import numpy as np

from .. import BoostClassifier, BoostRanker, BoostRegressor
from ..dask.fit import ShardClassification, ShardRanking, ShardRegression
from .._estimators.continued import draw_seed
from .categories import categorical_plan
from .rendezvous import Rendezvous
from .vectors import pandas_vectors
from .task import (ERROR_MARK, PARTITION_SHIFT, PartialStage, TaskPlan,
                   train_in_task)

from pyspark.ml import Estimator, Model
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (HasFeaturesCol, HasLabelCol,
                                     HasPredictionCol, HasProbabilityCol,
                                     HasRawPredictionCol,
                                     HasValidationIndicatorCol, HasWeightCol)
from pyspark.ml.util import MLReadable, MLReader, MLWritable, MLWriter

ROW_ID = "__skboost_row"
FEATURES = "__skboost_features"


# -- parameters -------------------------------------------------------------

def _skboost_param_names(local_class):
    return sorted(local_class().get_params())


def _params_mixin(local_class):
    """A ``Params`` class with one ``Param`` per parameter of
    ``local_class`` (skboost's names; defaults set by the estimator)."""
    attributes = {name: Param(Params._dummy(), name,
                              f"skboost parameter {name!r} (as in "
                              f"{local_class.__name__})")
                  for name in _skboost_param_names(local_class)}
    attributes["__doc__"] = f"{local_class.__name__}'s parameters."
    return type(f"{local_class.__name__}Params", (Params,), attributes)


class _SparkColumns(HasFeaturesCol, HasLabelCol, HasWeightCol,
                    HasPredictionCol, HasValidationIndicatorCol):
    """The columns and the number of tasks of a fit."""

    features_cols = Param(
        Params._dummy(), "features_cols",
        "numeric columns holding the features (instead of featuresCol)",
        typeConverter=TypeConverters.toListString)
    num_workers = Param(Params._dummy(), "num_workers",
                        "barrier tasks training the model",
                        typeConverter=TypeConverters.toInt)
    baseMarginCol = Param(Params._dummy(), "baseMarginCol",
                          "margin each row starts from (XGBoost's "
                          "base_margin): a number, or a vector or array "
                          "with one per class", typeConverter=None)
    pred_contrib_col = Param(
        Params._dummy(), "pred_contrib_col",
        "the model's transform adds this column: each row's SHAP values "
        "(predict_contributions: one per feature, then the bias; for "
        "several classes, class after class), as xgboost.spark's "
        "pred_contrib_col", typeConverter=TypeConverters.toString)
    qidCol = Param(Params._dummy(), "qidCol",
                   "integer query id of every row (the ranker)",
                   typeConverter=None)
    enable_sparse_data_optim = Param(
        Params._dummy(), "enable_sparse_data_optim",
        "as xgboost.spark's: read a vector featuresCol as Spark stores it "
        "(sparse vectors never densified: a task holding sparse rows trains "
        "on a CSR matrix, an absent entry meaning what sparse_absent says); "
        "False (default): as dense arrays of float32 (an absent entry is "
        "0.0, as Spark ML reads it), five times faster to transfer for "
        "dense vectors", typeConverter=TypeConverters.toBoolean)


_COLUMN_DEFAULTS = dict(featuresCol="features", labelCol="label",
                        predictionCol="prediction", features_cols=[],
                        num_workers=1, enable_sparse_data_optim=False)

_OUTPUT_COLUMNS = ("predictionCol", "probabilityCol", "rawPredictionCol")


class _SparkBoostParams(_SparkColumns):
    """Shared by the estimators and their models."""

    _local_class = None

    def _init_params(self, kwargs):
        self._setDefault(**_COLUMN_DEFAULTS)
        self._setDefault(**self._local_class().get_params())
        if "probabilityCol" in [p.name for p in self.params]:
            self._setDefault(probabilityCol="probability",
                             rawPredictionCol="rawPrediction")
        self.setParams(**kwargs)

    def setParams(self, **kwargs):
        """Set parameters (skboost's and the columns') by name.

        Returns
        -------
        self
        """
        known = {p.name for p in self.params}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"{type(self).__name__} got unknown parameter(s) "
                            f"{unknown}")
        self._set(**{k: v for k, v in kwargs.items() if v is not None
                     or k in self._skboost_names()})
        return self

    @classmethod
    def _skboost_names(cls):
        return _skboost_param_names(cls._local_class)

    def skboost_params(self):
        """The skboost parameters (for the single-node estimator)."""
        return {name: self.getOrDefault(name)
                for name in self._skboost_names()}

    def _optional_col(self, name):
        if not self.hasParam(name) or not self.isDefined(name):
            return None
        value = self.getOrDefault(name)
        return value or None


# -- the columns of a fit ---------------------------------------------------

def _spark_types():
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import types as T

    return VectorUDT, T


def _column_type(dataset, name, what):
    if name not in dataset.columns:
        raise ValueError(f"{what} {name!r} is not a column of the DataFrame "
                         f"(columns: {dataset.columns})")
    return dataset.schema[name].dataType


def _numeric(dataset, name, what, integral=False):
    """``name`` as a column of a numeric type (TypeError otherwise)."""
    from pyspark.sql import functions as F

    VectorUDT, T = _spark_types()
    data_type = _column_type(dataset, name, what)
    kinds = (T.IntegralType,) if integral else (T.NumericType, T.BooleanType)
    if not isinstance(data_type, kinds):
        raise TypeError(f"{what} {name!r} must be "
                        f"{'an integer' if integral else 'a numeric'} column,"
                        f" got {data_type.simpleString()}")
    return F.col(name)


def _vector_or_array(dataset, name, what, dtype="float64", vectors=False):
    """A vector or numeric array column as an array of ``dtype``
    (``"float32"`` for features: skboost trains on float32, Java's cast
    rounds as numpy's, and half the bytes travel to the tasks); with
    ``vectors``, a vector column as it is (its struct: ``vectors.py``
    reads sparse vectors without densifying them)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    VectorUDT, T = _spark_types()
    data_type = _column_type(dataset, name, what)
    if isinstance(data_type, VectorUDT):
        return (F.col(name) if vectors
                else vector_to_array(F.col(name), dtype))
    if isinstance(data_type, T.ArrayType) and isinstance(
            data_type.elementType, T.NumericType):
        return F.col(name).cast("array<float>" if dtype == "float32"
                                else "array<double>")
    raise TypeError(f"{what} {name!r} must be a vector (VectorUDT) or a "
                    f"numeric array column, got {data_type.simpleString()}")


def _training_columns(estimator, dataset):
    """The columns of the fit's stage, and their names for the tasks."""
    from pyspark.sql import functions as F

    columns = [F.monotonically_increasing_id().alias(ROW_ID)]
    names = {}
    cols = list(estimator.getOrDefault("features_cols") or [])
    if cols:
        columns += [_numeric(dataset, c, "features_cols").cast("double")
                    .alias(c) for c in cols]
    else:
        columns.append(_vector_or_array(
            dataset, estimator.getFeaturesCol(), "featuresCol",
            dtype="float32",
            vectors=estimator.getOrDefault("enable_sparse_data_optim"))
            .alias(FEATURES))
    bounds = _bound_cols(estimator)
    if bounds:
        columns += [_numeric(dataset, name, what).cast("double").alias(name)
                    for name, what in zip(bounds, _BOUND_PARAMS)]
        names["bound_cols"] = bounds
    else:
        label = estimator.getLabelCol()
        columns.append(_numeric(dataset, label, "labelCol").alias(label))
        names["label_col"] = label
    for param, key, what in (("weightCol", "weight_col", "weightCol"),
                             ("validationIndicatorCol", "validation_col",
                              "validationIndicatorCol")):
        name = estimator._optional_col(param)
        if name is not None:
            columns.append(_numeric(dataset, name, what).alias(name))
            names[key] = name
    margin = estimator._optional_col("baseMarginCol")
    if margin is not None:
        VectorUDT, T = _spark_types()
        kind = _column_type(dataset, margin, "baseMarginCol")
        columns.append((_vector_or_array(dataset, margin, "baseMarginCol")
                        if isinstance(kind, (VectorUDT, T.ArrayType))
                        else _numeric(dataset, margin, "baseMarginCol"))
                       .alias(margin))
        names["margin_col"] = margin
    qid = estimator._optional_col("qidCol")
    if qid is not None:
        columns.append(_numeric(dataset, qid, "qidCol", integral=True)
                       .cast("long").alias(qid))
        names["qid_col"] = qid
    if cols:
        names["features_cols"] = tuple(cols)
    else:
        names["features_col"] = FEATURES
        names["features_name"] = estimator.getFeaturesCol()
    return columns, names


_BOUND_PARAMS = ("label_lower_bound_col", "label_upper_bound_col")


def _bound_cols(estimator):
    """survival:aft's (lower, upper) bound columns, or None; a ValueError
    when only one is set, or with another objective."""
    if not estimator.hasParam(_BOUND_PARAMS[0]):
        return None
    cols = tuple(estimator._optional_col(p) for p in _BOUND_PARAMS)
    if cols == (None, None):
        return None
    if None in cols:
        raise ValueError("label_lower_bound_col and label_upper_bound_col "
                         "go together: set both (survival:aft's bounds of "
                         "each time) or neither")
    objective = estimator.getOrDefault("objective")
    if objective != "survival:aft":
        raise ValueError("label_lower_bound_col and label_upper_bound_col "
                         "are survival:aft's label bounds: objective is "
                         f"{objective!r}")
    return cols


def _task_keys(spark, n_tasks):
    """For each task k, a long whose Spark hash sends its rows to shuffle
    partition k of ``repartition(n_tasks, key)`` (Murmur3, seed 42: the
    ``hash`` function's)."""
    from pyspark.sql import functions as F

    found = {}
    start = 0
    while len(found) < n_tasks:
        rows = spark.range(start, start + 64 * n_tasks).select(
            "id", F.pmod(F.hash("id"), F.lit(n_tasks)).alias("task")).collect()
        for row in rows:
            found.setdefault(int(row.task), int(row.id))
        start += 64 * n_tasks
    return [found[k] for k in range(n_tasks)]


def _share_out(spark, frame, n_partitions, n_tasks, shuffle=False):
    """``frame`` (its rows keeping their partition in ``ROW_ID``) in
    ``n_tasks`` partitions: task k gets the k-th contiguous run of the
    original partitions (none moves when there are as many, unless
    ``shuffle``: a barrier stage cannot follow a ``coalesce``)."""
    from pyspark.sql import functions as F

    if n_partitions == n_tasks and not shuffle:
        return frame
    keys = _task_keys(spark, n_tasks)
    per_partition = F.array(*[F.lit(keys[p * n_tasks // n_partitions])
                              .cast("long") for p in range(n_partitions)])
    partition = F.shiftright(F.col(ROW_ID), PARTITION_SHIFT).cast("int")
    key = F.element_at(per_partition, partition + 1)
    return frame.withColumn("__skboost_task", key).repartition(
        n_tasks, "__skboost_task").drop("__skboost_task")


_SPARK_TASK = re.compile(r"barrier task \w+\((\d+), (\d+)\)")
_TASK_ERROR = re.compile(re.escape(ERROR_MARK) + r"(\d+)\] (\w+): (.*)",
                         re.DOTALL)
_PYTHON_CRASH = re.compile(r"(Python worker exited unexpectedly[^\n]*)")


def task_error(error):
    """The error a failed stage ends ``fit`` with: the failing task's own
    (ValueError, TypeError, else RuntimeError), naming the task."""
    text = str(error)
    marked = _TASK_ERROR.search(text)
    if marked:
        task, kind, message = marked.groups()
        cls = {"ValueError": ValueError, "TypeError": TypeError}.get(
            kind, RuntimeError)
        return cls(f"skboost.spark: task {task} failed: "
                   + (message if cls is not RuntimeError
                      else f"{kind}: {message}"))
    task = _SPARK_TASK.search(text)
    crash = _PYTHON_CRASH.search(text)
    java = getattr(error, "java_exception", None)
    first = (str(java) if java is not None else text).strip().splitlines()
    cause = crash.group(1) if crash else (first[0][:500] if first else text)
    return RuntimeError(
        "skboost.spark: training failed"
        + (f" in task {task.group(2)}" if task else "") + f": {cause}")


def _run_stage(frame, plan):
    """The barrier stage of a fit: the fitted single-node estimator task 0
    returns, or the error of the task that failed (raised: a ValueError or
    TypeError of the task as such, the cause first when a task's failure
    made the others lose it). The stage writes its rows to a shuffle (of
    one partition) rather than to the driver: Spark retries a failed
    barrier stage whose output is a shuffle, never one that returns
    results (some of which may be committed already)."""
    def stage(batches):
        return train_in_task(batches, plan)

    rows = (frame.mapInArrow(stage, "model binary, error string, "
                             "profile string", barrier=True)
            .repartition(1).collect())
    return stage_outcome(rows)


def stage_outcome(rows):
    """The fitted estimator and the tasks' profiles from the rows of a
    barrier stage (``model``, ``error``, ``profile``), or its error:
    ``StageError`` with a task's own error (the cause first: an error
    that is a task losing a peer comes after the peer's own), or
    ``PartialStage`` when Spark re-ran only some of the tasks and task 0
    gave no model (the stage must run again, whole). Task 0's model, when
    it finished, is whole even if Spark re-ran a peer that died after
    the last exchange."""
    errors = [row["error"] for row in rows if row["error"]]
    partial = [e for e in errors if _error_kind(e) == "PartialStage"]
    errors = sorted((e for e in errors if e not in partial),
                    key=lambda text: "lost task " in text)
    models = [row["model"] for row in rows if row["model"] is not None]
    if errors:
        raise (StageError if not partial else PartialStage)(errors[0])
    if not models:
        if partial:
            raise PartialStage(partial[0])
        raise RuntimeError("skboost.spark: the barrier stage returned no "
                           "model (task 0 gave no row)")
    local = pickle.loads(models[0])
    profile = sorted((json.loads(row["profile"]) for row in rows),
                     key=lambda task: task["task"])
    return local, profile


def _error_kind(text):
    marked = _TASK_ERROR.search(text)
    return marked.group(2) if marked else None


class StageError(Exception):
    """A task's error, returned by the stage (its text ``ERROR_MARK``ed)."""


# how many times a stage that Spark re-ran in part runs again, whole
WHOLE_STAGE_RERUNS = 1


def _stage_with_retry(spark, frame, n_partitions, n_tasks, plan):
    """``_barrier_stage``, run again whole (``WHOLE_STAGE_RERUNS`` times)
    when Spark re-ran only some of its tasks: they cannot train without
    the others, whose output Spark kept from the failed attempt."""
    for run in range(WHOLE_STAGE_RERUNS + 1):
        try:
            return _barrier_stage(spark, frame, n_partitions, n_tasks, plan)
        except PartialStage as partial:
            last = partial
    raise task_error(last) from None


def _barrier_stage(spark, frame, n_partitions, n_tasks, plan):
    """``_run_stage`` on the frame shared out among the tasks (shuffled
    when a ``coalesce`` before forbids a barrier stage without)."""
    try:
        return _run_stage(_share_out(spark, frame, n_partitions, n_tasks),
                          plan)
    except PartialStage:
        raise
    except Exception as error:   # noqa: BLE001 - Spark's many kinds
        if "BarrierJobUnsupportedRDDChain" not in str(error):
            raise task_error(error) from None
    try:
        return _run_stage(_share_out(spark, frame, n_partitions, n_tasks,
                                     shuffle=True), plan)
    except PartialStage:
        raise
    except Exception as error:   # noqa: BLE001
        raise task_error(error) from None


def _warn_mixed_vectors(profile, params, name):
    """A UserWarning when the features column held sparse and dense
    vectors and absent entries are missing: a 0.0 was then missing in
    the sparse rows and a value in the dense ones (``VectorAssembler``
    stores a row with many zeros as a sparse vector)."""
    counts = [task.get("vector_rows") for task in profile]
    counts = [c for c in counts if c is not None]
    if params.get("sparse_absent") != "missing" or not counts:
        return
    sparse, dense = (sum(c[k] for c in counts) for k in (0, 1))
    if sparse and dense:
        warnings.warn(
            f"featuresCol {name!r} holds {sparse} sparse and {dense} dense "
            "vectors: with sparse_absent='missing' an entry a sparse "
            "vector does not store is missing, while a dense vector's 0.0 "
            "is a value (VectorAssembler stores rows with many zeros as "
            "sparse vectors); set sparse_absent='zero' to read every "
            "absent entry as 0.0, as Spark ML does", UserWarning,
            stacklevel=3)


# -- the estimators -------------------------------------------------------

class _SparkBoostEstimator(Estimator, _SparkBoostParams, MLWritable,
                           MLReadable):
    """Fit as one barrier stage (see the module's docstring)."""

    _kind = None
    _task_mixin = None   # ShardRegression, ...: the checks of the fit

    def _fit(self, dataset):
        params = self.skboost_params()
        # categorical features: from the ML attributes and
        # categorical_features (categories.py), coded by the tasks
        checker = type("Check", (self._task_mixin, self._local_class), {})(
            **dict(params, categorical_features=None))
        checker._check_shard_params()
        spark = dataset.sparkSession
        columns, names = _training_columns(self, dataset)
        categorical, limits, labels = categorical_plan(self, dataset)
        params["categorical_features"] = list(categorical) or None
        names.update(categorical=categorical, category_limits=limits,
                     category_labels=labels)
        frame = dataset.select(*columns)
        n_partitions = frame.rdd.getNumPartitions()
        n_tasks = max(1, min(int(self.getOrDefault("num_workers")),
                             n_partitions))
        token = uuid.uuid4().bytes
        host = spark.sparkContext.getConf().get("spark.driver.host",
                                                socket.gethostname())
        with Rendezvous(host, n_tasks, token) as meeting:
            plan = TaskPlan(kind=self._kind, params=params,
                            seed=draw_seed(params["random_state"]),
                            token=token, rendezvous=meeting.address,
                            n_tasks=n_tasks, **names)
            local, profile = _stage_with_retry(spark, frame, n_partitions,
                                               n_tasks, plan)
        _warn_mixed_vectors(profile, params, self.getFeaturesCol())
        model = self._model_class()._from_fit(local, self)
        # where each task's time went (benchmarks/bench_spark.py)
        model._task_profile = profile
        return model

    def write(self):
        return _ParamsWriter(self)

    @classmethod
    def read(cls):
        return _ParamsReader(cls)


class _SparkBoostModel(Model, _SparkBoostParams, MLWritable, MLReadable):
    """A fitted model: the single-node estimator it wraps predicts."""

    _estimator_class = None

    def __init__(self, **kwargs):
        super().__init__()
        self._init_params(kwargs)
        self._local = None

    @classmethod
    def _from_fit(cls, local, estimator):
        model = cls()
        model._local = local
        estimator._copyValues(model)
        return model

    @classmethod
    def from_local(cls, local, **columns):
        """A Spark model of a fitted single-node estimator (its parameters;
        ``columns``: the Spark column parameters).

        Parameters
        ----------
        local : BoostRegressor, BoostClassifier or BoostRanker
            Fitted, of this model's single-node class.
        **columns
            ``featuresCol``, ``predictionCol``, ...

        Returns
        -------
        model
        """
        from sklearn.utils.validation import check_is_fitted

        if type(local) is not cls._local_class:
            raise TypeError(f"{cls.__name__}.from_local takes a fitted "
                            f"{cls._local_class.__name__}, got "
                            f"{type(local).__name__}")
        check_is_fitted(local)
        model = cls(**columns)
        model._local = local
        model._set(**local.get_params())
        return model

    def to_local(self):
        """The fitted single-node estimator (a copy): its predictions are
        this model's.

        Returns
        -------
        estimator : BoostRegressor, BoostClassifier or BoostRanker
        """
        return pickle.loads(pickle.dumps(self._local))

    def get_booster(self):
        """The fitted ``skboost.Booster``."""
        return self._local.get_booster()

    def save_model(self, fname):
        """Save skboost's model file (``BoostClassifier.load`` reads it).

        Parameters
        ----------
        fname : str or path-like
        """
        self._local.save_model(fname)

    def copy(self, extra=None):
        """A copy of this model (Spark's ``Params.copy``: the same uid, its
        param values updated with ``extra``), sharing the fitted model.

        Parameters
        ----------
        extra : dict, default=None
            Param values to set in the copy.

        Returns
        -------
        model : the same class as this model
        """
        that = super().copy(extra)
        that._local = self._local
        return that

    def _feature_input(self, dataset):
        cols = list(self.getOrDefault("features_cols") or [])
        if cols:
            return [_numeric(dataset, c, "features_cols").cast("double")
                    for c in cols]
        return [_vector_or_array(
            dataset, self.getFeaturesCol(), "featuresCol",
            vectors=self.getOrDefault("enable_sparse_data_optim"))]

    def write(self):
        return _ModelWriter(self)

    @classmethod
    def read(cls):
        return _ModelReader(cls)


def _rows_of(columns, names):
    """The features of a pandas UDF's batch as a float64 matrix (or a
    DataFrame with the names of ``features_cols``; a vector column's rows
    as ``vectors.pandas_vectors`` reads them: CSR when any is sparse)."""
    import pandas as pd

    if names:
        return pd.DataFrame({n: np.asarray(c, dtype=np.float64)
                             for n, c in zip(names, columns)})
    column = columns[0]
    if isinstance(column, pd.DataFrame):   # VectorUDT's struct
        return pandas_vectors(column)
    if len(column) == 0:
        return np.zeros((0, 0))
    return np.stack([np.asarray(v, dtype=np.float64) for v in column])


class _PredictsValues:
    """``transform`` of a regressor or ranker: ``predictionCol``."""

    def _transform(self, dataset):
        from pyspark.sql.functions import pandas_udf

        local, names = self._local, list(
            self.getOrDefault("features_cols") or [])

        @pandas_udf("double")
        def predict(*columns):
            import pandas as pd

            X = _rows_of(columns, names)
            return pd.Series(local.predict(X) if X.shape[0] else [],
                             dtype="float64")

        out = self.getPredictionCol()
        return _with_contributions(self, dataset, dataset.withColumn(
            out, predict(*self._feature_input(dataset))))


class _PredictsClasses:
    """``transform`` of a classifier: Spark's ``rawPredictionCol`` (for two
    classes ``[-margin, margin]``), ``probabilityCol`` and
    ``predictionCol`` (the class label, as a double)."""

    def _transform(self, dataset):
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F
        from pyspark.sql.functions import pandas_udf

        local, names = self._local, list(
            self.getOrDefault("features_cols") or [])
        classes = np.asarray(local.classes_, dtype=np.float64)

        @pandas_udf("raw array<double>, probability array<double>, "
                    "prediction double")
        def predict(*columns):
            import pandas as pd

            X = _rows_of(columns, names)
            if X.shape[0] == 0:
                return pd.DataFrame({"raw": [], "probability": [],
                                     "prediction": []})
            margin = np.asarray(local.predict(X, output_margin=True),
                                dtype=np.float64)
            if margin.ndim == 1:
                margin = np.column_stack([-margin, margin])
            proba = np.asarray(local.predict_proba(X), dtype=np.float64)
            return pd.DataFrame({
                "raw": list(margin), "probability": list(proba),
                "prediction": classes[np.argmax(proba, axis=1)]})

        struct = "__skboost_prediction"
        out = dataset.withColumn(struct, predict(*self._feature_input(dataset)))
        for param, field in (("rawPredictionCol", "raw"),
                             ("probabilityCol", "probability")):
            name = self.getOrDefault(param)
            if name:
                out = out.withColumn(name,
                                     array_to_vector(F.col(f"{struct}.{field}")))
        if self.getPredictionCol():
            out = out.withColumn(self.getPredictionCol(),
                                 F.col(f"{struct}.prediction"))
        return _with_contributions(self, dataset, out.drop(struct))


def _with_contributions(model, dataset, out):
    """``out`` with ``pred_contrib_col`` (if set): the SHAP values of each
    row's margin (``predict_contributions`` of the single-node model),
    flattened class after class, as an array of doubles."""
    name = model._optional_col("pred_contrib_col")
    if name is None:
        return out
    from pyspark.sql.functions import pandas_udf

    local, names = model._local, list(
        model.getOrDefault("features_cols") or [])

    @pandas_udf("array<double>")
    def contributions(*columns):
        import pandas as pd

        X = _rows_of(columns, names)
        if X.shape[0] == 0:
            return pd.Series([], dtype=object)
        values = np.asarray(local.predict_contributions(X),
                            dtype=np.float64).reshape(X.shape[0], -1)
        return pd.Series(list(values))

    return out.withColumn(name, contributions(*model._feature_input(dataset)))


# -- persistence ------------------------------------------------------------

def _jsonable(params):
    out = {}
    for name, value in params.items():
        try:
            json.dumps(value)
        except TypeError:
            continue
        out[name] = value
    return out


def _hadoop_file(spark_context, path):
    jvm = spark_context._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(spark_context._jsc.hadoopConfiguration()), jpath


def _write_bytes(spark_context, path, data, overwrite):
    fs, jpath = _hadoop_file(spark_context, path)
    stream = fs.create(jpath, overwrite)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def _read_bytes(spark_context, path):
    """The bytes of a file on any Hadoop file system; a ValueError naming
    the file when it cannot be read (missing, or damaged: a checksum)."""
    from py4j.protocol import Py4JJavaError

    try:
        fs, jpath = _hadoop_file(spark_context, path)
        stream = fs.open(jpath)
        try:
            return bytes(spark_context._jvm.org.apache.commons.io.IOUtils
                         .toByteArray(stream))
        finally:
            stream.close()
    except Py4JJavaError as error:
        cause = str(error.java_exception).splitlines()[0]
        raise ValueError(f"cannot read {path}: {cause}") from None


class _ParamsWriter(MLWriter):
    """``metadata.json``: the class, uid and JSON-valued parameters."""

    def __init__(self, instance):
        super().__init__()
        self.instance = instance

    def _metadata(self):
        params = {p.name: self.instance.getOrDefault(p)
                  for p in self.instance.params
                  if self.instance.isDefined(p)}
        return {"class": f"{type(self.instance).__module__}."
                         f"{type(self.instance).__qualname__}",
                "uid": self.instance.uid, "params": _jsonable(params),
                "skboost": True}

    def saveImpl(self, path):
        _write_bytes(self.sc, f"{path}/metadata.json",
                     json.dumps(self._metadata()).encode(),
                     self.shouldOverwrite)


class _ModelWriter(_ParamsWriter):
    """Also ``model.json``: skboost's own model file."""

    def saveImpl(self, path):
        import os
        import tempfile

        super().saveImpl(path)
        with tempfile.TemporaryDirectory() as folder:
            fname = os.path.join(folder, "model.json")
            self.instance._local.save_model(fname)
            with open(fname, "rb") as file:
                _write_bytes(self.sc, f"{path}/model.json", file.read(),
                             self.shouldOverwrite)


class _ParamsReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def _metadata(self, path):
        metadata = json.loads(_read_bytes(self.sc, f"{path}/metadata.json"))
        if not isinstance(metadata, dict) or not metadata.get("skboost"):
            raise ValueError(f"{path} does not hold a skboost.spark stage")
        return metadata

    def _instance(self, path, **extra):
        metadata = self._metadata(path)
        known = {p.name for p in self.cls().params}
        params = {k: v for k, v in metadata["params"].items() if k in known}
        instance = self.cls()
        instance._set(**params)
        instance._resetUid(metadata["uid"])
        return instance

    def load(self, path):
        return self._instance(path)


class _ModelReader(_ParamsReader):
    def load(self, path):
        import os
        import tempfile

        model = self._instance(path)
        with tempfile.TemporaryDirectory() as folder:
            fname = os.path.join(folder, "model.json")
            with open(fname, "wb") as file:
                file.write(_read_bytes(self.sc, f"{path}/model.json"))
            model._local = self.cls._local_class.load(fname)
        return model


# -- the public classes -----------------------------------------------------

_FIT_NOTES = """
    Every parameter of :class:`skboost.{local}` (its name and default), and
    Spark's column parameters: ``featuresCol`` (a vector or numeric array
    column) or ``features_cols`` (numeric columns), ``labelCol``,
    ``weightCol``, ``baseMarginCol``, ``validationIndicatorCol`` (rows
    evaluated every round, for ``early_stopping_rounds``), ``num_workers``
    (barrier tasks: at most the DataFrame's partitions){extra}. The model
    is the same for any ``num_workers`` on the same partitions, equal to
    ``skboost.dask`` on them, and to ``{local}`` where no feature has more
    than ``max_bin`` distinct values (see :doc:`/user_guide/spark`).
"""


class _SurvivalBounds(Params):
    """survival:aft's interval labels: two columns of bounds."""

    label_lower_bound_col = Param(
        Params._dummy(), "label_lower_bound_col",
        "survival:aft: the column of each time's lower bound (0: "
        "left-censored); with label_upper_bound_col, in place of labelCol",
        typeConverter=TypeConverters.toString)
    label_upper_bound_col = Param(
        Params._dummy(), "label_upper_bound_col",
        "survival:aft: the column of each time's upper bound (inf: "
        "right-censored)", typeConverter=TypeConverters.toString)


class SparkBoostRegressorModel(_PredictsValues, _SparkBoostModel,
                               _SurvivalBounds,
                               _params_mixin(BoostRegressor)):
    """A fitted :class:`SparkBoostRegressor`: ``transform`` adds
    ``predictionCol``."""

    _local_class = BoostRegressor


class SparkBoostRegressor(_SparkBoostEstimator, _SurvivalBounds,
                          _params_mixin(BoostRegressor)):
    __doc__ = ("``BoostRegressor`` trained on Spark, as one barrier stage.\n"
               + _FIT_NOTES.format(
                   local="BoostRegressor",
                   extra=", ``label_lower_bound_col`` and "
                         "``label_upper_bound_col`` (``survival:aft``'s "
                         "interval labels, in place of ``labelCol``)"))

    _local_class = BoostRegressor
    _kind = "regressor"
    _task_mixin = ShardRegression

    def __init__(self, **kwargs):
        super().__init__()
        self._init_params(kwargs)

    @staticmethod
    def _model_class():
        return SparkBoostRegressorModel


class _ClassifierColumns(HasProbabilityCol, HasRawPredictionCol):
    pass


class SparkBoostClassifierModel(_PredictsClasses, _SparkBoostModel,
                                _ClassifierColumns,
                                _params_mixin(BoostClassifier)):
    """A fitted :class:`SparkBoostClassifier`: ``transform`` adds
    ``rawPredictionCol``, ``probabilityCol`` and ``predictionCol``."""

    _local_class = BoostClassifier


class SparkBoostClassifier(_SparkBoostEstimator, _ClassifierColumns,
                           _params_mixin(BoostClassifier)):
    __doc__ = ("``BoostClassifier`` trained on Spark, as one barrier stage "
               "(binary and multi-class).\n" + _FIT_NOTES.format(
                   local="BoostClassifier",
                   extra="; the model's ``probabilityCol`` and "
                         "``rawPredictionCol``"))

    _local_class = BoostClassifier
    _kind = "classifier"
    _task_mixin = ShardClassification

    def __init__(self, **kwargs):
        super().__init__()
        self._init_params(kwargs)

    @staticmethod
    def _model_class():
        return SparkBoostClassifierModel


class SparkBoostRankerModel(_PredictsValues, _SparkBoostModel,
                            _params_mixin(BoostRanker)):
    """A fitted :class:`SparkBoostRanker`: ``transform`` adds the scores
    in ``predictionCol``."""

    _local_class = BoostRanker


class SparkBoostRanker(_SparkBoostEstimator, _params_mixin(BoostRanker)):
    __doc__ = ("``BoostRanker`` (LambdaMART) trained on Spark, as one "
               "barrier stage; ``qidCol`` holds integer query ids, every "
               "query inside one partition.\n" + _FIT_NOTES.format(
                   local="BoostRanker", extra=", ``qidCol``"))

    _local_class = BoostRanker
    _kind = "ranker"
    _task_mixin = ShardRanking

    def __init__(self, **kwargs):
        super().__init__()
        self._init_params(kwargs)

    def _fit(self, dataset):
        if self._optional_col("qidCol") is None:
            raise ValueError("SparkBoostRanker needs qidCol: the column of "
                             "integer query ids")
        return super()._fit(dataset)

    @staticmethod
    def _model_class():
        return SparkBoostRankerModel
