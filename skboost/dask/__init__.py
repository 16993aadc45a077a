"""Distributed training on Dask: ``DaskBoostRegressor``,
``DaskBoostClassifier`` and ``DaskBoostRanker``.

The estimators take dask arrays and dask DataFrames (labels and weights as
dask collections partitioned like X) and train on a ``distributed``
cluster: each worker keeps and bins its own partitions, and only sketch
summaries, histograms of the nodes being split, node sums and the chosen
splits travel (``train.py`` has the protocol). The model is the one
single-node training gives on the same partitioning whatever the number of
workers, and the single-node model itself when the cut points do not
depend on the partitioning (see ``doc/user_guide/dask.rst``).
``tree_method`` is ``"hist"`` or ``"approx"`` with global proposals (cuts
proposed per tree from hessian-weighted partition sketches merged among
the workers); ``"exact"`` and local proposals are errors.

Install with ``pip install skboost[dask]``.
"""

import time
import uuid

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._model.recovery import WorkerLost
from .._model.margins import eval_base_margins
from .._input.arrays import check_X
from .fit import (ShardClassification, ShardRanking, ShardRegression,
                  ShardTraining, check_queries_in_partitions,
                  check_signatures)
from .actor import ActorShard
from .train import ShardGroup, cluster_workers
from .._estimators import (BoostClassifier, BoostDistributionRegressor,
                           BoostRanker, BoostRegressor)
from .._estimators.base import (eval_set_entries, fit_or_restore,
                                margin_kwargs)

from ..distributions import family_of

__all__ = ["DaskBoostRegressor", "DaskBoostClassifier", "DaskBoostRanker",
           "DaskBoostDistributionRegressor"]


def _dask_modules():
    """dask.array, dask.dataframe and distributed, or an ImportError that
    says how to install them."""
    try:
        import dask.array as da
        import dask.dataframe as dd
        import distributed
    except ImportError as error:   # pragma: no cover - the extra is missing
        raise ImportError("skboost.dask needs dask and distributed: "
                          "pip install skboost[dask]") from error
    return da, dd, distributed


# -- input ------------------------------------------------------------------

def _kind(collection, name, allow_none=False):
    """"array" or "frame" (dask DataFrame or Series), or a TypeError."""
    da, dd, _ = _dask_modules()
    if collection is None and allow_none:
        return None
    if isinstance(collection, da.Array):
        return "array"
    if isinstance(collection, (dd.DataFrame, dd.Series)):
        return "frame"
    raise TypeError(
        f"{name} must be a dask array or a dask DataFrame/Series, got "
        f"{type(collection).__name__}; for data in memory use the "
        "single-node estimators (skboost.BoostRegressor, ...)")


def _row_chunks(collection, name):
    """The row count of each partition (None for a frame, counted later),
    with a clear error for unknown chunk sizes."""
    if _kind(collection, name) == "frame":
        return None
    chunks = collection.chunks[0]
    if any(np.isnan(c) for c in chunks):
        raise ValueError(
            f"{name} has unknown chunk sizes (for example after boolean "
            f"indexing): call {name}.compute_chunk_sizes() first")
    return tuple(int(c) for c in chunks)


def _partitions(collection, name):
    """One delayed object per row partition."""
    if _kind(collection, name) == "frame":
        return list(collection.to_delayed())
    if collection.ndim == 2:
        if collection.numblocks[1] != 1:
            collection = collection.rechunk({1: -1})
        return list(collection.to_delayed()[:, 0])
    if collection.ndim != 1:
        raise ValueError(f"{name} must be 1-D or 2-D, got {collection.ndim} "
                         "dimensions")
    return list(collection.to_delayed())


def _check_alignment(X, others):
    """Every collection partitioned like X (same number of partitions;
    same chunk sizes where both are known)."""
    n_parts = X.npartitions if _kind(X, "X") == "frame" else X.numblocks[0]
    x_chunks = _row_chunks(X, "X")
    for name, other in others.items():
        if other is None:
            continue
        _kind(other, name)
        n_other = (other.npartitions if _kind(other, name) == "frame"
                   else other.numblocks[0])
        if n_other != n_parts:
            raise ValueError(
                f"X has {n_parts} partitions but {name} has {n_other}: "
                f"{name} must be partitioned like X (rows of X and {name} "
                "that belong together in the same partitions)")
        chunks = _row_chunks(other, name)
        if x_chunks is not None and chunks is not None and chunks != x_chunks:
            raise ValueError(
                f"the partitions of X and {name} do not line up: row "
                f"chunks {x_chunks} and {chunks}")


def _compute_partitions(client, X, y, weight, what="", qid=None,
                        margin=None, margin_name="base_margin"):
    """Compute every partition of X, y, weight (and qid, base margin) on
    the cluster; a partition that fails to compute is an error naming it.
    Returns (X, y, weight, qid, margin) per partition (None for a missing
    column)."""
    from distributed import wait

    columns = [_partitions(X, "X"), _partitions(y, "y"),
               None if weight is None else _partitions(weight,
                                                       "sample_weight"),
               None if qid is None else _partitions(qid, "qid"),
               None if margin is None else _partitions(margin, margin_name)]
    flat = [d for part in columns if part is not None for d in part]
    futures = client.compute(flat)
    wait(futures)
    n_parts = len(columns[0])
    names = [n for n, c in zip(("X", "y", "sample_weight", "qid",
                                margin_name), columns)
             if c is not None]
    for k, future in enumerate(futures):
        if future.status == "error":
            which = names[k // n_parts]
            error = future.exception()
            raise RuntimeError(
                f"partition {k % n_parts} of {what}{which} failed to compute: "
                f"{type(error).__name__}: {error}") from error
    computed = iter(futures[i * n_parts:(i + 1) * n_parts]
                    for i in range(len(names)))
    per_column = [[None] * n_parts if c is None else next(computed)
                  for c in columns]
    return list(zip(*per_column))


def _check_margin_shape(margin, n_outputs, name):
    """A base margin's columns: one per output (a 1-D collection, or one
    column, for a model of one output), read off the dask collection."""
    if margin is None:
        return
    if _kind(margin, name) == "frame":
        shape = (("n_samples",) if margin.ndim == 1
                 else ("n_samples", len(margin.columns)))
    else:
        shape = tuple(int(s) for s in margin.shape)
    if (len(shape) == 1 and n_outputs == 1) or (
            len(shape) == 2 and shape[1] == n_outputs):
        return
    expected = ("(n_samples,)" if n_outputs == 1 else
                f"(n_samples, {n_outputs}) (one column per class)")
    raise ValueError(
        f"{name} must have shape {expected} for this model and data, got "
        f"shape {shape}")


def _holders(client, parts):
    """The worker holding each partition (the first, in address order)."""
    who_has = client.who_has([p[0] for p in parts])
    holders = []
    for index, part in enumerate(parts):
        workers = sorted(who_has.get(part[0].key, ()))
        if not workers:
            raise RuntimeError(f"partition {index} of X is on no worker")
        holders.append(workers[0])
    return holders


def _place_shards(client, parts, eval_sets=()):
    """One Shard actor per worker holding partitions, each given the
    partitions in its memory (the first worker holding each), and the
    eval_set partitions (on their worker when it has a shard, else spread
    over the shards)."""
    by_worker = {}
    for index, address in enumerate(_holders(client, parts)):
        by_worker.setdefault(address, []).append(index)
    addresses = sorted(by_worker)
    evals = {address: [] for address in addresses}
    for k, eval_parts in enumerate(eval_sets):
        for index, address in enumerate(_holders(client, eval_parts)):
            if address not in evals:
                address = addresses[index % len(addresses)]
            evals[address].append((k, index, *eval_parts[index]))
    futures = []
    for address in addresses:
        mine = [(index, *parts[index]) for index in by_worker[address]]
        futures.append(client.submit(
            ActorShard, mine, evals[address], actor=True,
            workers=[address],
            allow_other_workers=False, pure=False,
            key=f"skboost-shard-{uuid.uuid4().hex}"))
    actors = _actors(client, futures, addresses)
    return ShardGroup(client, actors, addresses), futures


def _actors(client, futures, addresses, poll_seconds=0.5):
    """The shard actors once created; ``WorkerLost`` if the worker of one
    leaves the cluster first (its creation would wait for it forever)."""
    from distributed.utils import TimeoutError as DaskTimeout

    actors = []
    for future, address in zip(futures, addresses):
        while True:
            try:
                actors.append(future.result(timeout=poll_seconds))
                break
            except (TimeoutError, DaskTimeout):
                if address not in cluster_workers(client):
                    raise WorkerLost(
                        f"skboost.dask: lost the worker {address} while "
                        "placing the shards") from None
    return actors


# seconds a recovery waits for Dask to recompute the lost partitions, and
# for a worker to (re)join a cluster left without any
RECOMPUTE_SECONDS = 300.0
NO_WORKER_SECONDS = 10.0


def _named_futures(parts, eval_parts):
    """(name, future) of every computed partition of a fit."""
    named = []
    for k, part in enumerate(parts):
        named += [(f"partition {k} of the training data", f)
                  for f in part if f is not None]
    for j, pairs in enumerate(eval_parts):
        for k, part in enumerate(pairs):
            named += [(f"partition {k} of eval_set[{j}]", f)
                      for f in part if f is not None]
    return named


def _await_partitions(client, named):
    """Wait until every partition is in some worker's memory again (Dask
    recomputes those of a lost worker from the collection's graph). A
    partition that cannot be recomputed (scattered, or persisted on the
    lost worker alone), one whose recomputation fails, a cluster left
    without workers for ``NO_WORKER_SECONDS``, or ``RECOMPUTE_SECONDS``
    in all: a RuntimeError saying which."""
    timeout, no_worker_seconds = RECOMPUTE_SECONDS, NO_WORKER_SECONDS
    deadline = time.monotonic() + timeout
    alone_since = None
    while True:
        _check_recomputable(named)
        who_has = client.who_has([future for _, future in named])
        missing = [name for name, future in named
                   if not who_has.get(future.key)]
        if not missing:
            return
        now = time.monotonic()
        if cluster_workers(client):
            alone_since = None
        elif alone_since is None:
            alone_since = now
        elif now - alone_since > no_worker_seconds:
            raise RuntimeError(
                "skboost.dask: every worker of the cluster is gone; "
                "training stopped")
        if now > deadline:
            raise RuntimeError(
                f"skboost.dask: {missing[0]} was not recomputed within "
                f"{timeout:.0f} s of a lost worker; training stopped")
        time.sleep(0.05)


def _check_recomputable(named):
    """A RuntimeError naming a partition Dask gave up on: one it forgot
    (cancelled: scattered data, or persisted on the lost worker alone,
    has no graph to recompute it from) or whose recomputation failed. A
    partition being recomputed is "lost" for a while: not an error."""
    for name, future in named:
        if future.status == "cancelled":
            raise RuntimeError(
                f"skboost.dask: {name} was lost with its worker and cannot "
                "be recomputed (it was scattered, or persisted on that "
                "worker alone); training stopped. Give fit collections "
                "Dask can recompute (read from files or arrays) for it to "
                "survive a lost worker")
        if future.status == "error":
            error = future.exception()
            raise RuntimeError(
                f"skboost.dask: {name} failed to compute again after a lost "
                f"worker: {type(error).__name__}: {error}") from error


class _ShardPlacement:
    """A fit's partitions and the shards holding them: placed and loaded
    when the fit starts, and again on the workers left after a lost worker
    (``start_again``); every shard actor it made is cancelled by
    ``close``."""

    def __init__(self, client, parts, eval_parts, template):
        self.client = client
        self.parts, self.eval_parts = parts, eval_parts
        self.template = template
        self.actors = []

    def start(self):
        """Shards on the workers holding the partitions, loaded (the
        partitions checked against each other): (ShardGroup, rows)."""
        shards, actors = _place_shards(self.client, self.parts,
                                       self.eval_parts)
        self.actors += actors
        first_rows, n_rows = check_signatures(shards.call("describe"))
        shards.call("load", self.template,
                    per_shard=[(rows,) for rows in first_rows])
        return shards, n_rows

    def start_again(self):
        """After a lost worker: the old shards gone, the lost partitions
        recomputed by Dask, new shards loaded where the partitions are."""
        self.close()
        _await_partitions(self.client,
                          _named_futures(self.parts, self.eval_parts))
        return self.start()[0]

    def close(self):
        # the shards' memory goes; the partitions are released with
        # ``parts`` (not cancelled: their keys may be shared with other
        # computations of the same collections)
        self.client.cancel(self.actors)
        self.actors = []


def _eval_partitions(client, X, eval_set, sample_weight_eval_set,
                     base_margin_eval_set=None):
    """The computed partitions of each eval_set pair (with its weights and
    base margins): a list per pair of (X, y, weight, qid, margin)
    futures."""
    out = []
    for k, (pair, weight, margin) in enumerate(eval_set_entries(
            eval_set, sample_weight_eval_set, base_margin_eval_set)):
        X_eval, y_eval = pair
        _check_alignment(X_eval, {f"eval_set[{k}]'s y": y_eval,
                                  f"sample_weight_eval_set[{k}]": weight,
                                  f"base_margin_eval_set[{k}]": margin})
        out.append(_compute_partitions(
            client, X_eval, y_eval, weight, what=f"eval_set[{k}]'s ",
            margin=margin, margin_name=f"base_margin_eval_set[{k}]"))
    return out


def _client(client):
    """The given client, else the current one (a clear error without)."""
    if client is not None:
        return client
    _, _, distributed = _dask_modules()
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError("skboost.dask needs a distributed.Client: create "
                         "one (Client(cluster)) or pass client=") from None


def _meta_frame(X):
    """A small pandas frame with X's columns and dtypes (categories
    included), for the feature names and categories of the fit."""
    if _kind(X, "X") == "frame":
        if getattr(X, "ndim", 2) != 2:
            raise ValueError("X must be 2-D: a dask DataFrame, not a Series")
        for name, dtype in X.dtypes.items():
            if str(dtype) == "category" and not X[name].cat.known:
                raise ValueError(
                    f"column {name!r} of X has unknown categories: call "
                    "X.categorize() (or astype with a pandas "
                    "CategoricalDtype) before fit")
        return X._meta_nonempty
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s)")
    return np.zeros((1, X.shape[1]), dtype=X.dtype)


_FIT_DOC = """Fit on dask collections, on the workers holding them.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
            Training data, NaN (and ``missing``) for missing values; a
            DataFrame's pandas category columns are categorical features.
            Every partition must have the same dtypes (and categories).
        y : dask array or dask Series of shape (n_samples,)
            Partitioned like X (the same partitions, the same rows).
        sample_weight : dask array or dask Series, default=None
            Non-negative weights, partitioned like X.
        eval_set : list of (X, y) pairs of dask collections, default=None
            Evaluated after every round (``evals_result_``; the last pair
            and metric decide ``early_stopping_rounds``). Their partitions
            stay on the workers, which keep their margins; each round the
            margins travel to the client for the metrics.
        sample_weight_eval_set : list of dask collections, default=None
            Weights of each eval_set pair, partitioned like its X.
        verbose : bool or int, default=False
            Print the eval metrics every round (an int: every that many).
        base_margin : dask array, Series or DataFrame, default=None
            Margin each row starts from instead of the fitted intercept
            (XGBoost's ``base_margin``), partitioned like X (the same row
            chunks as y): shape (n_samples,) for a model of one output,
            (n_samples, n_classes) for a multiclass one. Each worker starts
            its rows' margins from it; the intercept (``intercept_``) is
            still estimated or set from ``base_score``, as in the
            single-node estimators, for predictions without a base
            margin. Give the same margins to
            ``to_local().predict(X, base_margin=...)`` to predict on top of
            them (the Dask ``predict`` takes no base margin yet).
        base_margin_eval_set : list of dask collections, default=None
            Base margins of the ``eval_set`` pairs (None entries: the
            intercept), each partitioned like its X.
        xgb_model : skboost estimator, Booster, str or path-like, default=None
            Continue this model: a fitted estimator of this class or of its
            single-node class (``BoostRegressor``, ...), its
            ``get_booster()``, or the path of a model it saved. Its base
            margin and trees are kept and ``n_estimators`` rounds are added,
            numbered on from its last; the data must have its features
            (names, categories), classes and objective (else a
            ValueError). Without row sampling the model is the single-node
            estimator's continued on the same data, bit for bit (where the
            cuts do not depend on the partitioning).
        init_score : dask collection, default=None
            LightGBM's name of ``base_margin`` (give one of them).
        eval_init_score : list of dask collections, default=None
            LightGBM's name of ``base_margin_eval_set``.
        init_model : skboost estimator, Booster, str or path-like, default=None
            LightGBM's name of ``xgb_model``.
        client : distributed.Client, default=None
            The cluster to train on; None: the current client.

        Returns
        -------
        self : object
        """


class _DaskBoostMixin(ShardTraining):
    """Distributed fit and dask-collection predictions shared by the Dask
    estimators (mixed in before the single-node class, whose parameters,
    validation and fitted attributes they keep)."""

    def fit(self, X, y, sample_weight=None, eval_set=None,
            sample_weight_eval_set=None, verbose=False, *, base_margin=None,
            base_margin_eval_set=None, xgb_model=None, init_score=None,
            eval_init_score=None, init_model=None, client=None):
        return self._dask_fit(
            X, y, sample_weight, client, eval_set=eval_set,
            sample_weight_eval_set=sample_weight_eval_set, verbose=verbose,
            **margin_kwargs(base_margin, base_margin_eval_set, xgb_model,
                             init_score, eval_init_score, init_model))

    fit.__doc__ = _FIT_DOC  # the ranker has its own (qid)

    @fit_or_restore
    def _dask_fit(self, X, y, sample_weight, client, *, eval_set=None,
                  sample_weight_eval_set=None, verbose=False, qid=None,
                  base_margin=None, base_margin_eval_set=None,
                  init_model=None):
        self._check_shard_params()
        client = _client(client)
        _check_alignment(X, {"y": y, "sample_weight": sample_weight,
                             "qid": qid, "base_margin": base_margin})
        if (len(getattr(y, "shape", ())) == 2 and y.shape[1] != 1
                and not self._interval_labels(y)):
            raise ValueError(
                f"y has {y.shape[1]} columns: a 2-D y (several targets) is "
                "not supported by the Dask estimators yet")
        check_X(self, _meta_frame(X), reset=True)
        parts = _compute_partitions(client, X, y, sample_weight, qid=qid,
                                    margin=base_margin)
        eval_parts = _eval_partitions(client, X, eval_set,
                                      sample_weight_eval_set,
                                      base_margin_eval_set)
        placement = _ShardPlacement(client, parts, eval_parts,
                                    self._template())
        try:
            shards, n_rows = placement.start()
            if qid is not None:
                check_queries_in_partitions(shards.call("query_ids"))
            objective, n_classes = self._prepare_labels(shards)
            margins = [base_margin] + eval_base_margins(
                base_margin_eval_set, len(eval_parts))
            return self._train_on(shards, objective, n_classes, n_rows,
                                  n_evals=len(eval_parts), verbose=verbose,
                                  margins=margins, init_model=init_model,
                                  placement=placement)
        finally:
            placement.close()

    def _interval_labels(self, y):
        """Whether ``y`` holds survival:aft's [lower, upper] bounds."""
        return (getattr(self, "objective", None) == "survival:aft"
                and y.shape[1] == 2)

    def _check_margin_shapes(self, margins, n_outputs):
        for k, margin in enumerate(margins):
            _check_margin_shape(margin, n_outputs, "base_margin" if k == 0
                                else f"base_margin_eval_set[{k - 1}]")

    # ---- predictions as dask collections
    def _map_rows(self, X, method, n_columns, dtype, **kwargs):
        """``method`` of the single-node estimator on every partition of
        X, where it lives: a dask array (rows chunked like X) for a dask
        array, a dask Series or DataFrame for a dask DataFrame."""
        check_is_fitted(self)
        local = self.to_local()
        if _kind(X, "X") == "frame":
            meta = _predict_frame(X._meta_nonempty, local, method, kwargs)
            return X.map_partitions(_predict_frame, local, method, kwargs,
                                    meta=meta.iloc[:0])
        _row_chunks(X, "X")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s)")
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        if n_columns is None:
            return X.map_blocks(_predict_block, local, method, kwargs,
                                dtype=dtype, drop_axis=1)
        return X.map_blocks(_predict_block, local, method, kwargs,
                            dtype=dtype, chunks=(X.chunks[0], (n_columns,)))

    def _n_outputs(self):
        check_is_fitted(self)
        return self.booster_.n_outputs

    def apply(self, X, iteration_range=None):
        """Leaf index of every sample in every tree, computed where the
        partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), default=None
            The trees of boosting rounds ``[start, end)``.

        Returns
        -------
        leaves : dask array or dask DataFrame of shape (n_samples, n_trees)
        """
        first, last = self.booster_._tree_slice(
            self._iteration_range(iteration_range))
        return self._map_rows(X, "apply", last - first, np.int32,
                              iteration_range=iteration_range)

    def to_local(self):
        """The single-node estimator of this fitted model (the same
        parameters and fitted attributes; predictions bit-identical).

        Returns
        -------
        estimator : BoostRegressor or BoostClassifier
        """
        check_is_fitted(self)
        local = self._local_class(**self.get_params())
        local.__dict__.update({k: v for k, v in self.__dict__.items()
                               if k.endswith("_") and not k.startswith("__")})
        return local

    @classmethod
    def from_local(cls, estimator):
        """A Dask estimator holding a fitted single-node estimator's model
        (its parameters and fitted attributes).

        Parameters
        ----------
        estimator : BoostRegressor or BoostClassifier
            Fitted, of this class's single-node class.

        Returns
        -------
        estimator : DaskBoostRegressor or DaskBoostClassifier
        """
        if type(estimator) is not cls._local_class:
            raise TypeError(f"{cls.__name__}.from_local takes a fitted "
                            f"{cls._local_class.__name__}, got "
                            f"{type(estimator).__name__}")
        check_is_fitted(estimator)
        dask_estimator = cls(**estimator.get_params())
        dask_estimator.__dict__.update(
            {k: v for k, v in estimator.__dict__.items()
             if k.endswith("_") and not k.startswith("__")})
        return dask_estimator

    def save_model(self, fname):
        """Save the model in the single-node estimator's format
        (``to_local().save_model``): the file loads into either.

        Parameters
        ----------
        fname : str or path-like
            ``.json`` or ``.ubj``.
        """
        self.to_local().save_model(fname)

    def load_model(self, fname):
        """Load a model saved by ``save_model`` (of this estimator or of
        its single-node class).

        Parameters
        ----------
        fname : str or path-like

        Returns
        -------
        self : object
        """
        local = self._local_class().load_model(fname)
        self.set_params(**local.get_params())
        self.__dict__.update({k: v for k, v in local.__dict__.items()
                              if k.endswith("_") and not k.startswith("__")})
        return self




def _predict_block(block, local, method, kwargs):
    return getattr(local, method)(block, **kwargs)


def _predict_frame(part, local, method, kwargs):
    import pandas as pd

    values = getattr(local, method)(part, **kwargs)
    if values.ndim == 1:
        return pd.Series(values, index=part.index)
    return pd.DataFrame(values, index=part.index)





class DaskBoostRegressor(_DaskBoostMixin, ShardRegression, BoostRegressor):
    """``BoostRegressor`` trained on a Dask cluster.

    The parameters, methods and fitted attributes of
    :class:`skboost.BoostRegressor`; ``fit`` takes dask collections and
    trains where their partitions live, ``predict`` and ``apply`` return
    dask collections. For the same partitioning the model is bit-identical
    whatever the number of workers, and equal to ``BoostRegressor`` on the
    concatenated data when no feature has more than ``max_bin`` distinct
    values (and ``subsample=1``); see :doc:`/user_guide/dask`.
    """

    _local_class = BoostRegressor

    def predict(self, X, output_margin=False, iteration_range=None):
        """Predicted targets, computed where the partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        output_margin : bool, default=False
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        y : dask array (or dask Series for a DataFrame) of shape (n_samples,)
        """
        n_outputs = self._n_outputs()
        return self._map_rows(X, "predict", None if n_outputs == 1
                              else n_outputs, np.float64,
                              output_margin=output_margin,
                              iteration_range=iteration_range)


class DaskBoostClassifier(_DaskBoostMixin, ShardClassification,
                          BoostClassifier):
    """``BoostClassifier`` trained on a Dask cluster.

    The parameters, methods and fitted attributes of
    :class:`skboost.BoostClassifier`; ``fit`` takes dask collections and
    trains where their partitions live, ``predict``, ``predict_proba`` and
    ``apply`` return dask collections. The determinism guarantees of
    :class:`DaskBoostRegressor` hold (:doc:`/user_guide/dask`).
    """

    _local_class = BoostClassifier

    def predict(self, X, output_margin=False, iteration_range=None):
        """Predicted class labels, computed where the partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        output_margin : bool, default=False
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        y : dask array (or dask Series for a DataFrame) of shape (n_samples,)
        """
        check_is_fitted(self)
        n_columns = (self._n_outputs() if output_margin
                     and self._n_outputs() > 1 else None)
        dtype = np.float64 if output_margin else self.classes_.dtype
        return self._map_rows(X, "predict", n_columns, dtype,
                              output_margin=output_margin,
                              iteration_range=iteration_range)

    def predict_proba(self, X, iteration_range=None):
        """Class probabilities, computed where the partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        proba : dask array (or dask DataFrame) of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        return self._map_rows(X, "predict_proba", self.n_classes_,
                              np.float64, iteration_range=iteration_range)


class DaskBoostRanker(_DaskBoostMixin, ShardRanking, BoostRanker):
    """``BoostRanker`` (LambdaMART) trained on a Dask cluster.

    ``qid`` is a dask collection partitioned like X, and every query lies
    inside one partition (its rows are grouped there by a stable sort, as
    ``BoostRanker`` groups them). The model is independent of the workers
    and, where the cut points cannot depend on the partitioning, equal to
    ``BoostRanker`` on the concatenated data (:doc:`/user_guide/dask`).
    """

    _local_class = BoostRanker

    def fit(self, X, y, *, qid, sample_weight=None, eval_set=None,
            verbose=False, client=None, query_weight=None,
            base_margin=None, xgb_model=None, init_score=None,
            init_model=None):
        """Fit the ranker on dask collections, on the workers holding them.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        y : dask array or dask Series of shape (n_samples,)
            Relevance labels, partitioned like X.
        qid : dask array or dask Series of shape (n_samples,)
            Integer query id of every row, partitioned like X; each query
            inside one partition.
        sample_weight : dask array or dask Series, default=None
        eval_set : None
            Not supported yet by the Dask ranker.
        verbose : bool or int, default=False
        client : distributed.Client, default=None
        query_weight : None
            Not supported yet by the Dask ranker (a ValueError): give every
            row its query's weight in ``sample_weight``, the weights
            normalised to a mean of 1 over the queries, which is what
            ``BoostRanker.fit(query_weight=...)`` trains on.
        base_margin : dask array or dask Series, default=None
            Margin each row starts from (``init_score``: LightGBM's name),
            partitioned like X; it moves with its row when the rows are
            grouped by query. As in ``BoostRanker.fit``.
        xgb_model : skboost estimator, Booster, str or path-like, default=None
            Continue this model (``init_model``: LightGBM's name), as in
            ``BoostRanker.fit``: ``n_estimators`` rounds are added to its
            trees.
        init_score : dask array or dask Series, default=None
            LightGBM's name of ``base_margin``.
        init_model : skboost estimator, Booster, str or path-like, default=None
            LightGBM's name of ``xgb_model``.

        Returns
        -------
        self : DaskBoostRanker
        """
        if query_weight is not None:
            raise ValueError(
                "query_weight is not supported by DaskBoostRanker yet: give "
                "every row its query's weight in sample_weight (normalised "
                "to a mean of 1 over the queries: BoostRanker's "
                "query_weight)")
        if eval_set is not None:
            raise ValueError("eval_set is not supported by DaskBoostRanker "
                             "yet")
        if callable(self.objective):
            raise ValueError("a callable objective is not supported by "
                             "DaskBoostRanker yet")
        _kind(qid, "qid")
        return self._dask_fit(X, y, sample_weight, client, verbose=verbose,
                              qid=qid, **margin_kwargs(
                                  base_margin, None, xgb_model, init_score,
                                  None, init_model))

    def predict(self, X, output_margin=False, iteration_range=None):
        """Ranking scores, computed where the partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        output_margin : bool, default=False
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        scores : dask array (or dask Series for a DataFrame)
        """
        return self._map_rows(X, "predict", None, np.float64,
                              output_margin=output_margin,
                              iteration_range=iteration_range)


class DaskBoostDistributionRegressor(_DaskBoostMixin,
                                     BoostDistributionRegressor):
    """``BoostDistributionRegressor`` trained on a Dask cluster.

    The parameters, methods and fitted attributes of
    :class:`skboost.BoostDistributionRegressor`; ``fit`` takes dask
    collections and trains where their partitions live; ``predict``,
    ``predict_params`` and ``predict_quantiles`` return dask collections
    (``to_local().predict_distribution`` gives the frozen ``scipy.stats``
    distributions of rows in memory). One tree per parameter and round
    (``multi_strategy="one_output_per_tree"``); the scale of each
    parameter's gradients (its mean Fisher information over every row) is
    an exact sum over the workers, so the model is bit-identical whatever
    the number of workers and equal to the single-node model where the cut
    points cannot depend on the partitioning (:doc:`/user_guide/dask`).
    """

    _local_class = BoostDistributionRegressor

    def _prepare_labels(self, shards):
        self._check_eval_metric()
        shards.call("float_labels")   # the family checks them (prepare)
        return "dist:" + self.distribution, None

    def predict(self, X, iteration_range=None):
        """The mean of each row's predicted distribution, computed where
        the partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        y : dask array (or dask Series for a DataFrame) of shape (n_samples,)
        """
        check_is_fitted(self)
        return self._map_rows(X, "predict", None, np.float64,
                              iteration_range=iteration_range)

    def predict_quantiles(self, X, q, iteration_range=None):
        """Quantiles of each row's predictive distribution, computed where
        the partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        q : float or array-like of floats in (0, 1)
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        quantiles : dask array (or DataFrame) of shape (n_samples, n_levels)
        """
        check_is_fitted(self)
        levels = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if (levels.ndim != 1 or levels.size == 0
                or np.any(~((levels > 0) & (levels < 1)))):
            raise ValueError(f"q must be levels in (0, 1), got "
                             f"{levels.tolist()!r}")
        return self._map_rows(X, "predict_quantiles", levels.size,
                              np.float64, q=levels,
                              iteration_range=iteration_range)

    def predict_distribution(self, X, iteration_range=None):
        """Each row's predictive distribution (``scipy.stats``, in memory):
        ``to_local().predict_distribution`` of rows in memory; a dask
        collection is a TypeError (compute the rows first, or use
        ``predict_params`` / ``predict_quantiles``, which stay lazy).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), in memory
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        distribution : scipy.stats frozen distribution
        """
        da, dd, _ = _dask_modules()
        if isinstance(X, (da.Array, dd.DataFrame, dd.Series)):
            raise TypeError(
                "predict_distribution returns scipy.stats distributions "
                "holding every row in memory: give rows in memory "
                "(X.compute()), or use predict_params / predict_quantiles, "
                "which return dask collections")
        return self.to_local().predict_distribution(
            X, iteration_range=iteration_range)

    def predict_params(self, X, iteration_range=None):
        """The parameters of each row's distribution (the names of
        ``BoostDistributionRegressor.predict_params``), computed where the
        partitions of X live.

        Parameters
        ----------
        X : dask array or dask DataFrame of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        params : dict of str to dask array (or dask Series)
            One per parameter, of shape (n_samples,).
        """
        check_is_fitted(self)
        local = self.to_local()
        family = family_of(self.booster_.objective_params)
        names = list(family.natural(np.zeros((1, family.n_params))))
        if _kind(X, "X") == "frame":
            return {name: X.map_partitions(
                _param_frame, local, name, iteration_range,
                meta=("params", np.float64)) for name in names}
        _row_chunks(X, "X")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s)")
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        return {name: X.map_blocks(_param_block, local, name,
                                   iteration_range, dtype=np.float64,
                                   drop_axis=1) for name in names}


def _param_block(block, local, name, iteration_range):
    """One parameter of the distributions of a block's rows (float64:
    Student's t's degrees of freedom come as a constant)."""
    values = local.predict_params(block, iteration_range=iteration_range)
    return np.broadcast_to(np.asarray(values[name], dtype=np.float64),
                           (block.shape[0],)).copy()


def _param_frame(part, local, name, iteration_range):
    import pandas as pd

    return pd.Series(_param_block(part, local, name, iteration_range),
                     index=part.index, name="params")
