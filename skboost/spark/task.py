"""The barrier tasks of a Spark fit (``skboost.spark``).

A fit is one barrier stage (``DataFrame.mapInArrow(..., barrier=True)``):
every task holds the rows of the Spark partitions given to it as one
``Shard`` (the Dask engine's, ``skboost.dask.train``), and every task runs
the same fit (SPMD) over a ``TaskGroup``: where Dask's client calls a
method on every shard and gathers the results, each task calls it on its
own shard and all-gathers the results over the direct links, so every
task sees every shard's answer and takes the same decisions::

    task k (one per barrier task)
    ------------------------------------------------------------------
    rows of its partitions  -> parts (index, X, y, weight, qid, margin)
    listen; allGather endpoints (BarrierTaskContext); open the links
    describe / load / labels / summaries / setup: call + all-gather
    grow_rounds: histograms reduce-scattered over the links (reduce.py)
    task 0 returns the fitted single-node estimator (pickled)

The partitions keep the index Spark gave them before the stage
(``monotonically_increasing_id``: partition << 33 | row), so the cut
points (summaries merged in partition order), the global row numbers (row
sampling by counters) and hence the model are those of ``skboost.dask``
on the same partitions, whatever the number of tasks.
"""

from dataclasses import dataclass, replace
import json
import pickle
import re
import socket
import time
from types import SimpleNamespace

import numpy as np

from ..dask.fit import (ShardClassification, ShardRanking, ShardRegression,
                        check_queries_in_partitions, check_signatures)
from ..dask.links import SocketExchange, close_links, open_links
from ..dask.train import Shard
from .. import BoostClassifier, BoostRanker, BoostRegressor
from .rendezvous import gather
from .categories import (check_category_values, fit_category_map,
                         task_categories)
from .vectors import arrow_vectors, is_vector_struct

# bits of a row id below the Spark partition's index
# (``pyspark.sql.functions.monotonically_increasing_id``)
PARTITION_SHIFT = 33

# the prefix of every error a task raises: the driver finds it in Spark's
# report of the failed stage and raises the task's error again
ERROR_MARK = "[skboost.spark task "


@dataclass(frozen=True)
class TaskPlan:
    """What every task of a fit is given (pickled with the stage)."""

    kind: str                    # "regressor", "classifier", "ranker"
    params: dict                 # the skboost parameters
    seed: int                    # of the samples (drawn once, on the driver)
    token: bytes                 # the fit's links (links.open_links)
    features_col: str = None     # a list column (vector_to_array'ed)
    features_name: str = None    # its name in the user's DataFrame
    features_cols: tuple = None  # or numeric columns
    label_col: str = "label"
    weight_col: str = None
    qid_col: str = None
    margin_col: str = None
    validation_col: str = None
    n_classes: int = None        # base margin columns (from the driver)
    rendezvous: tuple = None     # the driver's (host, port): Rendezvous
    n_tasks: int = 1             # the tasks of the barrier stage
    # categorical features (categories.py): indices, label counts (or
    # None), names for errors
    categorical: tuple = ()
    category_limits: tuple = ()
    bound_cols: tuple = None     # survival:aft's (lower, upper) columns
    category_labels: tuple = ()


# -- reading the rows -------------------------------------------------------

def column_numbers(table, name):
    """A numeric column of ``table`` as float64 (NaN for null)."""
    column = table.column(name)
    if column.null_count == 0:
        return np.asarray(column.to_numpy(), dtype=np.float64)
    return np.asarray(column.to_pandas(), dtype=np.float64)


def list_column_matrix(table, name, what, shown=None, dtype=np.float64):
    """A list column (one array per row) as a (rows, size) ``dtype``
    matrix (null elements NaN); a ValueError naming the column
    (``shown``: its name in the user's DataFrame) for a null row or rows
    of different sizes."""
    import pyarrow.compute as pc

    column = table.column(name).combine_chunks()
    name = name if shown is None else shown
    if column.null_count:
        raise ValueError(f"{what} {name!r} has null rows: every row needs "
                         "its feature vector")
    lengths = np.asarray(pc.list_value_length(column))
    if len(lengths) and np.any(lengths != lengths[0]):
        sizes = np.unique(lengths)
        raise ValueError(f"{what} {name!r} holds vectors of different "
                         f"sizes ({', '.join(map(str, sizes[:5]))}): every "
                         "row needs the same number of features")
    width = int(lengths[0]) if len(lengths) else 0
    values = column.flatten()
    flat = (values.to_numpy() if values.null_count == 0
            else np.asarray(values.to_pandas(), dtype=dtype))
    return np.asarray(flat, dtype=dtype).reshape(len(column), width)


def read_rows(batches, plan):
    """The task's rows (every Arrow batch of its partitions) as a table,
    the order that sorts them by (partition, row), and the partition of
    each row in that order (the table itself is not reordered: its arrays
    are, once read)."""
    import pyarrow as pa

    batches = list(batches)
    if not batches or sum(b.num_rows for b in batches) == 0:
        return None, None, None
    table = pa.Table.from_batches(batches)
    row_id = table.column("__skboost_row").to_numpy()
    order = np.argsort(row_id, kind="stable")
    return table, order, row_id[order] >> PARTITION_SHIFT


def _features(table, plan):
    if plan.features_cols:
        return np.column_stack([column_numbers(table, name)
                                for name in plan.features_cols])
    if is_vector_struct(table.schema.field(plan.features_col).type):
        return arrow_vectors(table.column(plan.features_col), "featuresCol",
                             plan.features_name)
    return list_column_matrix(table, plan.features_col, "featuresCol",
                              plan.features_name, dtype=np.float32)


def _labels(table, plan):
    if plan.bound_cols:   # survival:aft's [lower, upper] of each row
        return np.column_stack([
            _optional(table, name, what) for name, what in zip(
                plan.bound_cols, ("label_lower_bound_col",
                                  "label_upper_bound_col"))])
    column = table.column(plan.label_col)
    if column.null_count:
        raise ValueError(f"labelCol {plan.label_col!r} has "
                         f"{column.null_count} null value(s): every "
                         "training row needs a label")
    return column_numbers(table, plan.label_col)


def _optional(table, name, what):
    if name is None:
        return None
    column = table.column(name)
    if column.null_count:
        raise ValueError(f"{what} {name!r} has {column.null_count} null "
                         "value(s)")
    if what == "baseMarginCol" and str(column.type).startswith("list"):
        return list_column_matrix(table, name, what)
    return column_numbers(table, name)


def partitions_of(table, order, partition, plan):
    """The training and evaluation parts of the task's rows (``order``:
    the rows of ``table`` in (partition, row) order): ``(index, X, y,
    weight, qid, base_margin)`` per Spark partition, and ``(0, index,
    ...)`` per partition of the rows ``validationIndicatorCol`` marks."""
    def ordered(values):
        return None if values is None else values[order]

    X = ordered(_features(table, plan))
    if plan.features_cols:
        import pandas as pd

        X = pd.DataFrame(X, columns=list(plan.features_cols))
    y = ordered(_labels(table, plan))
    weight = ordered(_optional(table, plan.weight_col, "weightCol"))
    margin = ordered(_optional(table, plan.margin_col, "baseMarginCol"))
    qid = None
    if plan.qid_col is not None:
        qid = ordered(table.column(plan.qid_col).to_numpy())
    valid = (np.zeros(len(y), dtype=bool) if plan.validation_col is None
             else ordered(np.asarray(table.column(plan.validation_col)
                                     .to_numpy(zero_copy_only=False),
                                     dtype=bool)))
    train, evals = [], []
    for index in np.unique(partition):
        for is_valid, out in ((False, train), (True, evals)):
            rows = np.flatnonzero((partition == index) & (valid == is_valid))
            if rows.shape[0] == 0:
                continue
            piece = (int(index), _take(X, rows), y[rows],
                     None if weight is None else weight[rows],
                     None if qid is None else qid[rows],
                     None if margin is None else margin[rows])
            out.append(piece if not is_valid else (0,) + piece)
    return train, evals


def _take(X, rows):
    return X.iloc[rows].reset_index(drop=True) if hasattr(X, "iloc") \
        else X[rows]


# -- the tasks, linked ------------------------------------------------------

class TaskExchange(SocketExchange):
    """``SocketExchange`` between barrier tasks (errors name the task)."""

    def _lost(self, j, error):
        return RuntimeError(
            f"skboost.spark: lost {self.addresses[j]} during an exchange "
            f"({type(error).__name__}: {error}); training stopped")


class PartialStage(Exception):
    """Spark ran only some of the barrier stage's tasks: it re-ran a
    failed task's partition while the others' output of the failed
    attempt was kept (a race in its retry of a barrier stage whose tasks
    finished at about the time one died). The task cannot train without
    its peers: it reports this at once (the driver runs the stage again,
    whole) rather than wait for tasks that will not come."""


class PeerFailed(Exception):
    """Another task of the stage failed before the links opened: this task
    stops without an error of its own (the failed task reports)."""


def open_task_links(context, index, plan, failure=None, timeout=30.0):
    """Every task listens on its executor's host, the endpoints go round
    (through the driver's ``rendezvous.Rendezvous``, else
    ``BarrierTaskContext.allGather``) with each task's failure so far
    (``failure``: a message, or None), and every pair of tasks connects
    (``links.open_links``). Returns the sockets in task order and each
    task's name. When any task failed, none connects: ``PeerFailed`` (or
    this task's own ``failure``, raised again) ends every task's fit,
    none waits.

    The number of tasks is the plan's (the driver's count): a stage
    attempt of fewer tasks (``getTaskInfos()``) raises ``PartialStage``
    at once, where a task would otherwise train alone or send to a link
    it does not have, or wait for peers that will not come."""
    running = len(context.getTaskInfos())
    if running < plan.n_tasks:
        raise PartialStage(
            f"Spark ran {running} of the barrier stage's {plan.n_tasks} "
            "tasks (it re-ran a failed task's partition alone)")
    if plan.n_tasks == 1:   # nothing to link, nor to wait for
        if failure is not None:
            raise PeerFailed(failure)
        return [None], [f"task 0 ({task_host(context, index, plan)})"]
    host = task_host(context, index, plan)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.bind((host, 0))
    server.listen(socket.SOMAXCONN)
    gathered = gather(context, plan.rendezvous, plan.token, index,
                      [host, server.getsockname()[1], failure])
    if len(gathered) != plan.n_tasks:
        server.close()
        raise RuntimeError(
            f"skboost.spark: {len(gathered)} of the stage's {plan.n_tasks} "
            "tasks met; training stopped")
    failed = [k for k, (_, _, f) in enumerate(gathered) if f is not None]
    if failed:
        server.close()
        raise PeerFailed(f"task(s) {failed} failed")
    endpoints = [(h, port) for h, port, _ in gathered]
    names = [f"task {k} ({h})" for k, (h, _) in enumerate(endpoints)]
    return open_links(server, index, endpoints, plan.token,
                      timeout=timeout), names


def task_host(context, index, plan):
    """The address this task listens on: its executor's, from the
    barrier stage's task infos when they give it, else the address this host reaches the driver's rendezvous from (a UDP
    socket's route: nothing is sent), else the host name's."""
    infos = context.getTaskInfos()
    if index < len(infos) and infos[index].address:
        return infos[index].address.rsplit(":", 1)[0]
    if plan.rendezvous is not None:
        host = plan.rendezvous[0]
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect(tuple(plan.rendezvous))
                return probe.getsockname()[0]
        except OSError:
            pass
    return socket.gethostbyname(socket.gethostname())


class TaskShard(Shard):
    """A ``Shard`` whose links were opened with the stage (``listen`` and
    ``link`` have nothing left to do) and whose exchange is the task
    group's own (one sequence of steps over the sockets)."""

    def __init__(self, parts, eval_parts, exchange):
        super().__init__(parts, eval_parts)
        self.task_exchange = exchange

    def listen(self):
        return ("linked",)

    def link(self, index, endpoints, token):
        return True

    def unlink(self):
        pass

    def _open_exchange(self, index, peers, bin_ranges):
        self.task_exchange.bin_ranges = bin_ranges
        self.task_exchange.n_threads = self.spec.n_threads
        return self.task_exchange


class TaskGroup:
    """The shards of a Spark fit as every task sees them: ``call`` runs the
    method on this task's shard and all-gathers every task's result (the
    interface of ``skboost.dask.train.ShardGroup``)."""

    def __init__(self, shard, exchange, index, names):
        self.shard, self.exchange, self.index = shard, exchange, index
        self.addresses = names
        self.actors = [SimpleNamespace(key=name) for name in names]

    def __len__(self):
        return len(self.addresses)

    def call(self, method, *args, per_shard=None):
        extra = () if per_shard is None else per_shard[self.index]
        return self.exchange.allgather(
            getattr(self.shard, method)(*args, *extra))


# -- the fit every task runs ------------------------------------------------

class _InTask:
    """What a fit inside a barrier task changes: the seed drawn on the
    driver, the task's CPUs as threads, no recovery (Spark retries the
    stage)."""

    _engine = "skboost.spark"

    def _draw_seed(self):
        return self._spark_seed

    def _shard_spec(self, *args, **kwargs):
        return replace(super()._shard_spec(*args, **kwargs),
                       n_threads=self._spark_threads)


class TaskRegressor(_InTask, ShardRegression, BoostRegressor):
    _local_class = BoostRegressor


class TaskClassifier(_InTask, ShardClassification, BoostClassifier):
    _local_class = BoostClassifier


class TaskRanker(_InTask, ShardRanking, BoostRanker):
    _local_class = BoostRanker


TASK_CLASSES = {"regressor": (TaskRegressor, BoostRegressor),
                "classifier": (TaskClassifier, BoostClassifier),
                "ranker": (TaskRanker, BoostRanker)}


def _check_feature_counts(exchange, X, plan):
    """Every task's rows with as many features (a ValueError naming the
    column otherwise): the number of features."""
    counts = [c for c in exchange.allgather(X.shape[1]) if c is not None]
    if len(set(counts)) > 1:
        what = ("features_cols" if plan.features_cols else
                f"featuresCol {plan.features_name!r}")
        raise ValueError(f"{what} holds vectors of different sizes "
                         f"({', '.join(map(str, sorted(set(counts))))}) in "
                         "different partitions: every row needs the same "
                         "number of features")
    return counts[0]


def fit_group(estimator, group, n_evals, has_qid):
    """The fit on the tasks' shards (every task runs it): the shards
    loaded and checked, the labels prepared, the boosting loop run."""
    first_rows, n_rows = check_signatures(group.call("describe"))
    group.call("load", estimator._template(),
               per_shard=[(rows,) for rows in first_rows])
    if has_qid:
        check_queries_in_partitions(group.call("query_ids"))
    objective, n_classes = estimator._prepare_labels(group)
    estimator._train_on(group, objective, n_classes, n_rows,
                        n_evals=n_evals, verbose=False)
    return estimator


def local_estimator(estimator, local_class):
    """The single-node estimator of a fitted task estimator."""
    local = local_class(**estimator.get_params())
    local.__dict__.update({k: v for k, v in estimator.__dict__.items()
                           if k.endswith("_") and not k.startswith("__")})
    return local


def train_in_task(batches, plan):
    """The body of every barrier task (``mapInArrow``): yields one Arrow
    batch (``model``, ``error``) holding the pickled fitted single-node
    estimator from task 0, nothing from the others. A task whose fit
    raised yields its error instead, marked with the task
    (``ERROR_MARK``): the stage succeeds and the driver raises it, since
    a failed stage would be retried by Spark, which cannot cure bad data
    (a task whose process dies still fails the stage)."""
    import pyarrow as pa
    from pyspark import BarrierTaskContext

    context = BarrierTaskContext.get()
    index = context.partitionId()
    model = error = None
    profile = {"task": index}
    try:
        fitted = _train(context, index, batches, plan, profile)
        if index == 0:
            model = _pickled(fitted)
    except PeerFailed:
        return   # the task that failed reports
    except Exception as failure:   # noqa: BLE001 - reported to the driver
        error = task_message(index, failure)
    yield pa.RecordBatch.from_pydict({
        "model": [model], "error": [error],
        "profile": [json.dumps(profile)]},
        schema=pa.schema([("model", pa.binary()), ("error", pa.string()),
                          ("profile", pa.string())]))


def _pickled(estimator):
    """The fitted estimator's bytes for the driver, by cloudpickle: its
    parameters may hold objects whose classes came by value from the
    driver (callbacks defined in a notebook or a test module), which
    ``pickle`` cannot find on an executor; ``pickle.loads`` reads them."""
    from pyspark import cloudpickle

    return cloudpickle.dumps(estimator, protocol=pickle.HIGHEST_PROTOCOL)


# the shared shard code (skboost.dask.fit, .train, .links) words its errors
# for Dask: the same errors as a Spark task's
_SPARK_WORDS = ((re.compile(r"skboost\.(dask|spark): "), ""),
                (re.compile(r"skboost\.dask"), "skboost.spark"),
                (re.compile(r"the worker(\(s\))? (?=task \d)"), ""),
                (re.compile(r"\bworker"), "task"),
                (re.compile(r"e\.g\. set_index\('qid'\)"),
                 "e.g. repartition(n, qidCol)"),
                (re.compile(r"for categories: dask's categorize\(\), or "
                            r"astype with one pandas CategoricalDtype"),
                 "for categories: one StringIndexer for every partition"),
                (re.compile(r"\bTask(Regressor|Classifier|Ranker)\b"),
                 r"SparkBoost\1"))


def task_message(index, error):
    """``error`` as the driver finds it: marked with the task, worded for
    Spark; an error that is not one of skboost's own checks (ValueError,
    TypeError, RuntimeError) also says where it was raised, since its
    traceback stays on the executor."""
    message = str(error)
    for pattern, words in _SPARK_WORDS:
        message = pattern.sub(words, message)
    if not isinstance(error, (ValueError, TypeError, RuntimeError)):
        message += _raised_at(error)
    return f"{ERROR_MARK}{index}] {type(error).__name__}: {message}"


def _raised_at(error):
    """`` (raised at file:line in function)`` of the innermost frame of
    ``error``'s traceback ("" without one)."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    where = "/".join(frame.filename.replace("\\", "/").split("/")[-2:])
    return f" (raised at {where}:{frame.lineno} in {frame.name})"


def _task_parts(batches, plan, profile):
    table, order, partition = read_rows(batches, plan)
    if table is None:
        raise ValueError(
            "this task received no rows: every task of the barrier "
            "stage needs some (fewer num_workers, or repartition the "
            "DataFrame)")
    profile["vector_rows"] = vector_kinds(table, plan)
    return partitions_of(table, order, partition, plan)


def vector_kinds(table, plan):
    """[sparse, dense] rows of a vector features column (None for other
    features): the driver warns when both meet with
    ``sparse_absent="missing"``."""
    if plan.features_cols or not is_vector_struct(
            table.schema.field(plan.features_col).type):
        return None
    kind = table.column(plan.features_col).combine_chunks().flatten()[0]
    sparse = int(np.count_nonzero(kind.to_numpy(zero_copy_only=False) == 0))
    return [sparse, table.num_rows - sparse]


def _train(context, index, batches, plan, profile):
    """The task's fit: its rows read, the tasks linked (every task says
    whether its rows were read: none waits for a task that failed), the
    fit run over the links. ``profile``: where the task's time went."""
    failure = parts = eval_parts = None
    start = time.perf_counter()
    try:
        parts, eval_parts = _task_parts(batches, plan, profile)
        check_category_values(parts, eval_parts, plan)
    except Exception as error:   # noqa: BLE001 - raised after the gather
        failure = error
    profile["read_seconds"] = time.perf_counter() - start
    try:
        links, names = open_task_links(
            context, index, plan,
            failure=None if failure is None else str(failure))
    except PeerFailed:
        if failure is not None:
            raise failure from None
        raise
    profile["link_seconds"] = time.perf_counter() - start - \
        profile["read_seconds"]
    try:
        exchange = TaskExchange(index, names, [(0, 0)] * len(names), links)
        _check_feature_counts(exchange, (parts or eval_parts)[0][-5], plan)
        return _fit(context, exchange, names, parts, eval_parts, plan,
                    profile)
    finally:
        close_links(links)


def _fit(context, exchange, names, parts, eval_parts, plan, profile):
    from .._input.arrays import check_X

    task_class, local_class = TASK_CLASSES[plan.kind]
    estimator = task_class(**dict(plan.params, max_recoveries=0))
    estimator._spark_seed = plan.seed
    estimator._spark_threads = max(1, int(context.cpus()))
    X = (parts or eval_parts)[0][-5]
    meta = (X.iloc[:1] if hasattr(X, "iloc")
            else np.zeros((1, X.shape[1]), dtype=np.float64))
    # the features' names and number from one row; the categories from
    # every task's rows (categories.py), as one process finds them
    estimator.categorical_features = None
    check_X(estimator, meta, reset=True)
    if plan.categorical:
        estimator.categorical_features = list(plan.categorical)
        estimator._category_map_ = fit_category_map(
            exchange.allgather(task_categories(parts or [], plan,
                                               estimator.sparse_absent)),
            plan, X.shape[1])
    shard = TaskShard(parts, eval_parts, exchange)
    group = TaskGroup(shard, exchange, exchange.index, names)
    start = time.perf_counter()
    fit_group(estimator, group, n_evals=1 if plan.validation_col else 0,
              has_qid=plan.qid_col is not None)
    profile["fit_seconds"] = time.perf_counter() - start
    stats = getattr(estimator, "_dask_stats", None) or []
    if len(stats) > exchange.index:
        profile.update({k: v for k, v in stats[exchange.index].items()
                        if isinstance(v, (int, float))})
    return local_estimator(estimator, local_class)
