"""Distributed training on Dask: the shards (one Dask actor per worker)
and the boosting loop the client runs over them.

One ``Shard`` per worker holds that worker's partitions, binned with the
global cut points, and everything per row: labels, weights, margins,
gradients, the row sample and the row partition of the tree being grown
(a ``HistFinder`` over the local rows; for CSR partitions a
``SparseHistFinder``: only the stored entries are binned, never a code
per row and feature). Every shard runs its own copy of
the one growth driver (``tree.driver.GrowthDriver``) over a
``reduce.ShardFinder``, in step with the other shards: histograms
are reduce-scattered among the shards by feature range and the
per-feature best splits all-gathered, worker to worker, so every shard
makes the same choices. The client calls the shards once per boosting
round (once per batch of rounds when no callback needs to see each)::

    client                                 shard (one per worker)
    -----------------------------          --------------------------------
    grow_rounds(iteration, n)    ---->     gradients; all-gather maxima ->
                                           global scales; per tree: the
                                           driver, levels exchanged with
                                           the other shards; margins
    trees (checked equal), eval  <----
    margins; metrics, callbacks

Every worker quantises with the same scales (from the maxima of |g w|,
|h w| and the row count over all workers), so the summed histograms are
bit for bit those one process builds on the concatenated rows, whatever
the number of workers and wherever the partitions sit.
"""

import copy
from dataclasses import dataclass, replace
import time

import numpy as np
import scipy.sparse as sp

from .._input.sparse import sparse_rows
from .._model.recovery import WorkerLost
from .._model.train import (RoundWeights, add_tree_output, resolve_objective,
                            log_metrics, tree_outputs, update_margins)
from .links import (LinkError, SocketExchange, close_links,
                          listen_on_worker, new_token, open_links)
from .memory import keeps_freed_memory
from .reduce import (PeerExchange, ShardFinder, SliceScanner,
                           bin_range, feature_ranges, tree_digest)
from ..tree.driver import GrowthDriver
from .._input.arrays import check_X
from .._model.limits import check_gradients, check_label_limits
from .._model.margins import check_base_margin
from ..tree._approx import codes_from_sorted
from ..tree._binning import BinnedData
from ..tree._histogram import active_maxima, quantization_scale
from ..tree._presort import presort_dense
from ..tree._sketch import (WeightedQuantileSummary, chunk_orders,
                           default_summary_size, sketch_column,
                           sketch_columns)
from ..tree.binning import BinMapper, category_cuts, value_bin_caps
from ..tree.finders import (HistFinder, LeafRows, SparseHistFinder,
                            SplitLeafRows)
from ..tree.finders.hist import weighted_hessians



# -- row sampling independent of the partitioning ---------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(x):
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    x = x.copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def row_uniforms(seed, iteration, slot, rows):
    """A uniform draw in [0, 1) for each global row index of ``rows``, a
    function of (seed, boosting round, tree of the round, row) only: the
    same rows are sampled however the rows are partitioned."""
    with np.errstate(over="ignore"):
        key = _mix64(np.array([seed, iteration, slot], dtype=np.uint64)
                     * _GOLDEN + np.uint64(1))
        key = np.bitwise_xor.reduce(key * np.array([1, 3, 5], np.uint64))
        x = _mix64(np.asarray(rows, dtype=np.uint64) * _GOLDEN + key)
    return (x >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def row_sample(seed, iteration, slot, rows, subsample):
    """Rows of one tree: each kept with probability ``subsample``."""
    if subsample >= 1.0:
        return np.ones(np.shape(rows)[0], dtype=bool)
    return row_uniforms(seed, iteration, slot, rows) < subsample


# -- the cut points: partition summaries merged in partition order ----------

def partition_summaries(X, weight, max_bin, n_categories=None,
                        orders=None, absent="missing"):
    """Per feature of one partition (float32 X, NaN = missing): whether it
    has a missing value, and the weighted quantile summary of its values
    (rows of weight 0 left out, as the single-node sketch does; None for
    a categorical feature, whose bins are its categories). ``orders``:
    ``chunk_orders`` of each feature's values, kept by a caller that
    summarises them again with other weights (None: sorted here). X may
    be canonical CSR (``check_X``'s): ``absent`` says what its entries
    that are not stored are (``sparse_absent``)."""
    size = default_summary_size(max_bin)
    if sp.issparse(X):
        return _sparse_summaries(X, weight, max_bin, n_categories, absent)
    has_missing = np.isnan(X).any(axis=0)
    numeric = [f for f in range(X.shape[1])
               if n_categories is None or n_categories[f] <= 0]
    summaries = [None] * X.shape[1]
    if orders is None and X.dtype == np.float32 and X.flags.c_contiguous:
        # every feature in one pass over the rows, a chunk at a time (no
        # column copied out): the summaries of sketch_column, bit for bit
        for f, summary in zip(numeric, sketch_columns(
                X, numeric, [max_bin] * len(numeric), weight)):
            summaries[f] = summary
        return has_missing, summaries
    for f in numeric:
        summaries[f] = sketch_column(
            np.ascontiguousarray(X[:, f]), weight, max_bin=max_bin,
            summary_size=size, orders=None if orders is None else orders[f])
    return has_missing, summaries


def _sparse_summaries(X, weight, max_bin, n_categories, absent):
    """``partition_summaries`` of a canonical CSR partition, column by
    column of its CSC form (never densified). Absent entries are missing
    (``absent="missing"``: only the stored values are summarised, and a
    column with an absent entry has a missing value) or 0.0 (``"zero"``:
    one 0.0 of the absent rows' weight joins the stored values; the
    stored NaN are the missing ones), as the single-node sparse finders
    see the column."""
    size = default_summary_size(max_bin)
    columns = sp.csc_matrix(X)
    columns.sort_indices()
    n_rows = X.shape[0]
    row_weight = (np.ones(n_rows) if weight is None
                  else np.asarray(weight, dtype=np.float64))
    has_missing = np.zeros(X.shape[1], dtype=bool)
    summaries = []
    for f in range(X.shape[1]):
        first, stop = columns.indptr[f], columns.indptr[f + 1]
        values = np.asarray(columns.data[first:stop], dtype=np.float32)
        rows = columns.indices[first:stop]
        stored_nan = np.isnan(values)
        has_missing[f] = bool(stored_nan.any()) or (
            absent == "missing" and stop - first < n_rows)
        absent_weight = row_weight.sum() - row_weight[rows].sum()
        values, rows = values[~stored_nan], rows[~stored_nan]
        if n_categories is not None and n_categories[f] > 0:
            summaries.append(None)
            continue
        w = row_weight[rows]
        if absent == "zero" and stop - first < n_rows:
            values = np.r_[values, np.float32(0.0)]
            w = np.r_[w, absent_weight]
        summaries.append(sketch_column(
            np.ascontiguousarray(values), None if weight is None and
            absent == "missing" else np.ascontiguousarray(w),
            max_bin=max_bin, summary_size=size))
    return has_missing, summaries


def column_orders(X, n_categories=None):
    """``chunk_orders`` of every numeric feature of one partition (None for
    a categorical one): what ``partition_summaries`` sorts, kept for the
    summaries of every tree of the approximate method."""
    return [None if n_categories is not None and n_categories[f] > 0
            else chunk_orders(np.ascontiguousarray(X[:, f]))
            for f in range(X.shape[1])]


def merged_bin_mapper(parts, max_bin, n_categories=None):
    """A BinMapper holding the cuts of the merged summaries.

    ``parts``: (has_missing, summaries) of every partition, in partition
    order. Merging is exact while the summaries are (every feature with at
    most its cap of distinct values): the cuts are then the midpoints of
    the distinct values, as single-node training gives them.
    """
    has_missing = np.logical_or.reduce([m for m, _ in parts])
    caps = value_bin_caps(max_bin, has_missing)
    size = default_summary_size(max_bin)
    cuts = []
    for f in range(has_missing.shape[0]):
        if n_categories is not None and n_categories[f] > 0:
            cuts.append(category_cuts(n_categories[f]))
            continue
        merged = WeightedQuantileSummary.empty()
        for _, summaries in parts:
            merged = merged.merge(summaries[f]).prune(size)
        cuts.append(np.asarray(merged.cut_points(int(caps[f])),
                               dtype=np.float64))
    mapper = BinMapper(max_bin)
    mapper.has_missing_ = has_missing
    mapper._set_cuts(cuts)
    return mapper


def ordered_summaries(summaries_per_shard):
    """The ``(index, summaries)`` pairs of every shard's partitions as the
    summaries alone, in partition order (the order ``merged_bin_mapper``
    merges in, whatever the shards and the placement)."""
    parts = sorted((p for shard in summaries_per_shard for p in shard),
                   key=lambda p: p[0])
    return [summary for _, summary in parts]


# -- the labels the client estimates the base score from -------------------

# narrower dtypes a shard's float64 labels or weights travel in when every
# value survives the round trip bit for bit (class indices: one byte)
_NARROW_DTYPES = (np.uint8, np.int16, np.int32, np.float32)


def pack_labels(rows, y, weight):
    """A shard's global row indices, labels and training weights in few
    bytes, exactly (``unpack_labels`` gives the very arrays back): the
    rows as runs of consecutive indices, each run's first row and length
    (the rows of a partition are one run; rows in no order, a ranker's
    grouped by query, as they are); labels and weights in the
    narrowest dtype of ``_NARROW_DTYPES`` that gives back every value bit
    for bit; weights that are all 1.0 as None. Saves the client most of
    a fit's set-up transfer (24 bytes a row unpacked)."""
    rows = np.asarray(rows, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if 2 * breaks.shape[0] >= rows.shape[0]:   # runs would not save bytes
        runs = rows
    else:
        starts = np.r_[0, breaks]
        lengths = np.diff(np.r_[starts, rows.shape[0]])
        runs = (rows[starts[lengths > 0]], lengths[lengths > 0])
    if weight is not None:
        weight = np.asarray(weight)
        if weight.dtype == np.float64 and np.all(
                weight.view(np.uint64) == np.float64(1.0).view(np.uint64)):
            weight = None
    return runs, _narrowed(y), None if weight is None else _narrowed(weight)


def _narrowed(values):
    """``values`` as (narrow array, original dtype): the first dtype of
    ``_NARROW_DTYPES`` whose values convert back to ``values`` bit for bit
    (same bytes: -0.0 and NaN payloads kept), or ``values`` themselves."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.float64:
        bits = values.view(np.uint64)
        for dtype in _NARROW_DTYPES:
            with np.errstate(invalid="ignore", over="ignore"):
                narrow = values.astype(dtype)
            if np.array_equal(narrow.astype(np.float64).view(np.uint64),
                              bits):
                return narrow, values.dtype
    return values, values.dtype


def unpack_labels(packed):
    """The (rows, labels, weights) ``pack_labels`` packed: the same
    values, dtypes and shapes (weights all 1.0 where they were)."""
    runs, (y, y_dtype), weight = packed
    if isinstance(runs, tuple):   # each run's first row and length
        firsts, lengths = runs
        n = int(lengths.sum())
        offsets = np.repeat(firsts - np.r_[0, np.cumsum(lengths)[:-1]],
                            lengths)
        rows = np.arange(n, dtype=np.int64) + offsets
    else:
        rows, n = runs, runs.shape[0]
    y = y.astype(y_dtype)
    weight = (np.ones(n) if weight is None else weight[0].astype(weight[1]))
    return rows, y, weight


# -- the worker side --------------------------------------------------------

@dataclass(frozen=True)
class ShardSpec:
    """What every shard needs to know about the fit."""

    objective: object           # a name or an Objective
    objective_params: dict
    tree_params: object         # TreeParams
    n_outputs: int
    n_parallel: int             # trees per output and round
    trees_per_round: int
    first_round: int
    seed: int                   # of the row samples
    subsample: float
    n_categories: object = None  # ndarray per feature, or None
    init_booster: object = None  # the model a fit continues
    n_threads: int = None       # None: the worker's threads
    tie_salt: int = 0           # the ranker's tie-break salt (row_keys)
    # tree_method="approx" (global proposals): cuts proposed again for
    # every tree from its hessians; once only when they never change
    # (constant-hessian objective, no row sampling), as single-node
    approx: bool = False
    approx_once: bool = False
    # rank:xendcg: (sorted query ids, the first row of each in the rows
    # grouped by query, all rows): each shard's rows draw their gammas
    # where one process draws them (``Shard.prepare``)
    query_starts: object = None


def _features_restricted(params):
    """Whether the driver may keep a node from splitting on some feature
    (column sampling, interaction constraints): the shards then keep the
    best split of every (node, feature) pair."""
    return (min(params.colsample_bytree, params.colsample_bylevel,
                params.colsample_bynode) < 1.0
            or params.interaction_sets is not None)


def _level_capacity(params):
    """The histograms a level of a tree keeps at most (as ``HistFinder``'s
    pool): the capacity of the scanner's pool and of the outbox."""
    depth_bound = 2 ** (params.max_depth - 1) if params.max_depth else 64
    return min(depth_bound, params.max_leaves or depth_bound, 1024)


def _worker_threads():
    """Threads of the worker this runs on (1 outside a worker)."""
    try:
        from distributed import get_worker

        return int(get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return 1


class Shard:
    """One worker's partitions and their training state (a Dask actor).

    Parameters
    ----------
    parts : list of tuple
        ``(index, X, y, weight, qid, base_margin)`` of each partition this
        worker holds (weight None: 1 each; qid, base_margin None: none), in
        increasing ``index``.
    """

    def __init__(self, parts, eval_parts=()):
        # eval_parts: (set, index, X, y, weight, qid, base_margin) of the
        # eval_set partitions given to this shard
        self.eval_parts = sorted(eval_parts, key=lambda p: p[:2])
        self.parts = sorted(parts, key=lambda p: p[0])
        self.indices = [p[0] for p in self.parts]
        self._stats = {"round_seconds": 0.0, "build_seconds": 0.0,
                       "exchange_seconds": 0.0, "scan_seconds": 0.0,
                       "propose_seconds": 0.0, "propose_sketch_seconds": 0.0,
                       "propose_exchange_seconds": 0.0,
                       "propose_merge_seconds": 0.0,
                       "propose_rebin_seconds": 0.0, "round_calls": 0}
        self.exchange = None
        self._servers, self._links = [], None   # the direct links
        self._magnitudes = None   # the round's gradient maxima (or None)

    def describe(self):
        """Per partition: index, rows, and the signatures the client
        compares across partitions (``partition_signature``)."""
        return [(index, X.shape[0], partition_signature(X))
                for index, X, *_ in self.parts]

    @keeps_freed_memory
    def load(self, template, first_rows):
        """Convert the partitions as the single-node estimator converts X
        (``check_X`` with ``template``'s fitted attributes: feature names,
        categories, ``missing``) and concatenate them; ``first_rows``: the
        global index of each partition's first row."""
        Xs, ys, ws, rows, qids, margins = [], [], [], [], [], []
        for (index, X, y, w, qid, margin), first in zip(self.parts,
                                                        first_rows):
            X = check_X(template, X, reset=False)
            y = _labels(y, X.shape[0], "y", index)
            w = (np.ones(X.shape[0]) if w is None
                 else _weights(w, X.shape[0], "sample_weight", index))
            margin = _margin_rows(margin, X.shape[0], "base_margin", index)
            row = np.arange(first, first + X.shape[0])
            if qid is not None:
                # rows grouped by query, stably (as BoostRanker groups them);
                # the base margins move with their rows
                qid = _query_ids(qid, X.shape[0], index)
                order = np.argsort(qid, kind="stable")
                X, y, w, row, qid = X[order], y[order], w[order], \
                    row[order], qid[order]
                margin = None if margin is None else margin[order]
                qids.append(qid)
            Xs.append(X if sp.issparse(X) else np.ascontiguousarray(X))
            ys.append(y)
            ws.append(w)
            rows.append(row)
            margins.append(margin)
        self.parts = None   # the converted copies replace them
        # sparse X: what its absent entries are (the predictor's view
        # of the rows, ``_predictor_rows``, reads them so)
        self.absent = getattr(template, "sparse_absent", "missing")
        self._rows_view = None
        self.evals = [_EvalPart(template, *p) for p in self.eval_parts]
        self.eval_parts = None
        self.X = _stacked_rows(Xs)
        self.y = np.concatenate(ys)
        self.weight = np.concatenate(ws)
        self.rows = np.concatenate(rows)
        self.base_margin = (None if margins[0] is None
                            else np.concatenate(margins))
        self._part_rows = np.cumsum([0] + [x.shape[0] for x in Xs])
        self.qids = qids
        self.query_ptr = None
        if qids:
            q = np.concatenate(qids)
            starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
            self.query_ptr = np.r_[starts, q.shape[0]].astype(np.int64)

    def _absent_value(self):
        return 0.0 if self.absent == "zero" else np.nan

    def _predictor_rows(self):
        """The rows as the predictor and the objectives read them: X, or
        for sparse X its ``SparseRows`` view (absent entries read as
        ``sparse_absent`` says)."""
        if not sp.issparse(self.X):
            return self.X
        if self._rows_view is None:
            self._rows_view = sparse_rows(self.X, self._absent_value())
        return self._rows_view

    def query_counts(self):
        """The query ids of this shard's rows and their row counts."""
        return np.unique(np.concatenate(self.qids), return_counts=True)

    def _grouped_rows(self, query_starts):
        """Where each of this shard's rows is among all rows grouped by
        query (``np.argsort(qid, kind="stable")`` of one process): its
        query's first row there, plus its place in the query (a query's
        rows keep their order, and lie in one partition)."""
        ids, starts, _ = query_starts
        qid = np.concatenate(self.qids)
        first = self.query_ptr[:-1]
        sizes = np.diff(self.query_ptr)
        place = np.arange(qid.shape[0]) - np.repeat(first, sizes)
        return starts[np.searchsorted(ids, qid)] + place

    def objective_state(self):
        """The objective's estimates after the last round (a debiased
        ranker's position biases; None without)."""
        position_bias = getattr(self.objective, "position_bias", None)
        return None if position_bias is None else position_bias()

    def query_ids(self):
        """The distinct query ids of each partition."""
        return [(index, np.unique(q)) for index, q in zip(self.indices,
                                                          self.qids)]

    # ---- before training
    def label_values(self):
        """The distinct labels of this worker's rows (classes)."""
        return np.unique(self.y)

    def encode_labels(self, classes):
        """Labels as class indices (float64), as the estimators train
        (eval_set labels too: one not among ``classes`` is an error)."""
        self.y = np.searchsorted(classes, self.y).astype(np.float64)
        for part in self.evals:
            unknown = ~np.isin(part.y, classes)
            if unknown.any():
                raise ValueError(
                    f"eval_set labels {np.unique(part.y[unknown])!r} are "
                    "not among the training classes")
            part.y = np.searchsorted(classes, part.y).astype(np.float64)

    def float_labels(self):
        """Labels as float64 (regression and ranking)."""
        try:
            self.y = self.y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("y must be numeric for regression: got "
                             f"{self.y.dtype} labels") from None
        check_label_limits(self.y)
        for part in self.evals:
            part.y = np.asarray(part.y, dtype=np.float64)
            check_label_limits(part.y, f"eval_set[{part.set}]'s y")

    def objective_labels(self, objective, params):
        """Labels of the rows and of the eval sets as ``objective`` reads
        them (survival:aft: [lower, upper] bounds from times or bounds;
        a ValueError names bad ones), as the single-node regressor
        converts them before training."""
        prepare = resolve_objective(objective, params, None).prepare_labels
        self.y = prepare(self.y)
        for part in self.evals:
            part.y = prepare(part.y)

    def labels(self):
        """Global row indices, labels and training weights (for the base
        score, estimated on the client), packed (``pack_labels``: what
        reaches the client is bit for bit what the shard holds, in a
        fraction of the bytes)."""
        return pack_labels(self.rows, self.y, self.train_weight)

    @keeps_freed_memory
    def prepare(self, spec):
        """The objective's labels and training weights of these rows:
        returns their weight sum and whether every weight is 1."""
        if spec.n_threads is None:
            spec = replace(spec, n_threads=_worker_threads())
        self.spec = spec
        objective = resolve_objective(spec.objective, spec.objective_params,
                                       self.query_ptr)
        self.objective = objective
        self.y = objective.prepare_labels(self.y)
        self.train_weight = objective.training_weight(self.y, self.weight)
        if hasattr(objective, "set_row_keys"):   # ranking: ties move with rows
            objective.set_row_keys(self._predictor_rows(), self.train_weight,
                                   spec.tie_salt, spec.n_threads)
        if hasattr(objective, "set_global_rows"):   # survival:cox
            objective.set_global_rows(self.rows)
        if spec.query_starts is not None and hasattr(objective,
                                                     "set_draw_rows"):
            objective.set_draw_rows(self._grouped_rows(spec.query_starts),
                                    spec.query_starts[2])
        if spec.query_starts is not None and hasattr(objective,
                                                     "set_query_numbers"):
            ids = spec.query_starts[0]
            first_rows = self.query_ptr[:-1]
            objective.set_query_numbers(
                np.searchsorted(ids, np.concatenate(self.qids)[first_rows]),
                ids.shape[0])
        self.weights = RoundWeights(self.train_weight, objective)
        # the base margins: finite, within the limits (as in core)
        self.base_margin = check_base_margin(
            self.base_margin, self.X.shape[0], spec.n_outputs)
        for part in self.evals:
            part.base_margin = check_base_margin(
                part.base_margin, part.X.shape[0], spec.n_outputs,
                f"base_margin_eval_set[{part.set}]")
        return float(np.sum(self.train_weight)), self.weights.in_sums is None

    def start_fit(self, spec, max_bin, with_labels):
        """The first call of a fit (one round trip for three): ``prepare``
        with ``spec``, this shard's ``labels`` (when the client estimates
        the base score from them: ``with_labels``, else None) and its
        ``summaries``."""
        prepared = self.prepare(spec)
        labels = self.labels() if with_labels else None
        return prepared, labels, self.summaries(max_bin, spec.n_categories)

    @keeps_freed_memory
    def summaries(self, max_bin, n_categories):
        """``partition_summaries`` of every partition, with its index (the
        weights the histograms sum: the training weights, or none)."""
        return self._summaries(self.weights.in_sums, max_bin, n_categories)

    def _summaries(self, weight, max_bin, n_categories, orders=None):
        """``partition_summaries`` of every partition, with its index, with
        ``weight`` (one per row of this shard, or None); ``orders``: each
        partition's ``column_orders``, or None."""
        out = []
        for k, index in enumerate(self.indices):
            rows = slice(self._part_rows[k], self._part_rows[k + 1])
            out.append((index, partition_summaries(
                self.X[rows], None if weight is None else weight[rows],
                max_bin, n_categories,
                orders=None if orders is None else orders[k],
                absent=self.absent)))
        return out

    @keeps_freed_memory
    def setup(self, mapper, base_margin, weight_sum, resume=None):
        """Bin the rows on the global cuts and start the margins (as
        ``InProcessRounds.start`` and the in-process evaluator do): the
        rows' base margins (``base_margin``: the model's, for rows without
        one) plus the trees of the model continued, or of ``resume`` (a
        fit resumed after a lost worker: the trees so far, the model
        continued's included), added in the order the rounds added them,
        so the margins are bit for bit those of the uninterrupted fit.
        Returns ``eval_labels()`` (the client's evaluator reads them)."""
        spec = self.spec
        trees = spec.init_booster if resume is None else resume
        self._start_trees = trees   # DART's forest starts from them
        self.weight_sum = weight_sum
        categorical = (None if spec.n_categories is None
                       else spec.n_categories > 0)
        # sparse rows: only the stored entries are binned (a dense code
        # matrix would be a byte per row and feature)
        # dense rows: the last level's rows go straight to their leaves'
        # margins, unpartitioned (``SplitLeafRows``), as on one process
        finder_class, deferred = (
            (SparseHistFinder, {}) if sp.issparse(self.X)
            else (HistFinder, {"defer_last_partition": True}))
        self.finder = finder_class(self._binned(mapper),
                                   mapper.split_thresholds_,
                                   spec.tree_params, spec.n_threads,
                                   weight=self.weights.in_sums,
                                   categorical=categorical, **deferred)
        self.raw = _start_margins(trees, self._predictor_rows(),
                                  self.base_margin, base_margin,
                                  spec.n_threads)
        self.base_margin = None   # in ``raw`` now
        if resume is not None and hasattr(self.objective, "iteration"):
            # the rounds' random streams go on where the fit was
            self.objective.iteration = resume.n_rounds - spec.first_round
        self.gpair = np.empty((spec.n_outputs, self.X.shape[0], 2),
                              dtype=np.float32)
        for part in self.evals:
            part.margin = _start_margins(trees, part.X, part.base_margin,
                                         base_margin, spec.n_threads)
            part.base_margin = None
        return self.eval_labels()

    def _binned(self, mapper):
        """The rows binned on ``mapper``'s cuts: dense codes, or for
        sparse X the codes of its stored entries (``BinnedRows``)."""
        if sp.issparse(self.X):
            return mapper.transform_sparse(self._predictor_rows(),
                                           self.spec.n_threads)
        return mapper.binned(self.X, self.spec.n_threads)

    def binned_bytes(self):
        """Bytes of the binned rows the shard trains on, and what dense
        codes of its rows would take (``BinnedData``: one code per row and
        feature, in two layouts)."""
        binned = self.finder.binned
        n_rows, n_features = self.X.shape
        dense = 2 * n_rows * n_features * np.dtype(
            binned.codes.dtype).itemsize
        if isinstance(binned, BinnedData):
            return binned.codes.nbytes + binned.codes_by_feature.nbytes, dense
        return binned.nbytes, dense

    def eval_labels(self):
        """(set, partition, labels, weights) of the eval_set partitions."""
        return [(p.set, p.index, p.y, p.weight) for p in self.evals]

    # ---- growing the trees (``reduce.py``)
    def listen(self):
        """Open this shard's end of the direct links (``links.py``):
        the endpoint the other shards connect to, or None where the
        exchanges go through Dask's comms."""
        self._servers, endpoint = listen_on_worker()
        return endpoint

    def link(self, index, endpoints, token):
        """Connect to every other shard (``links.open_links``);
        False if that failed (then every shard exchanges through Dask)."""
        servers, self._servers = self._servers, []
        try:
            self._links = open_links(servers, index, endpoints, token)
        except LinkError:
            self._links = None
        return self._links is not None

    def unlink(self):
        """Close the links (some shard could not open its own)."""
        for server in self._servers:
            server.close()
        if self._links is not None:
            close_links(self._links)
        self._servers, self._links = [], None

    def connect(self, index, peers, ranges, sampler):
        """Join the other shards: this shard is ``index`` of the shards
        whose (worker address, actor key) are ``peers`` and owns the
        features ``ranges[index]``; every shard grows the same trees with
        its own copy of the growth driver and of ``sampler`` (the column
        sampler, drawn from the same seed) over a ``ShardFinder``. The
        exchanges go over the direct links when every shard opened them
        (``link``), else through Dask's worker RPC."""
        spec, local = self.spec, self.finder
        # a copy of its own: workers in the client's process get the very
        # object the client passed (no pickling), which the other shards
        # draw from too
        sampler = copy.deepcopy(sampler)
        bin_ptr = local.binned.bin_ptr
        bin_ranges = [bin_range(bin_ptr, r) for r in ranges]
        self.exchange = self._open_exchange(index, peers, bin_ranges)
        self._share_memory(bin_ptr)
        self._index, self._n_shards = index, len(peers)
        self._cuts_proposed = False
        self._orders = self._sorted = None
        p = spec.tree_params
        scanner = self._scanner(bin_ptr, local.thresholds, ranges[index])
        # monotone bounds are known at scan time only: scanned on request
        self.shard_finder = ShardFinder(
            local, scanner, self.exchange, speculate=p.monotone is None,
            stats=self._stats, per_feature=_features_restricted(p))
        self.driver = GrowthDriver(self.shard_finder, p, sampler)
        # sums over every row (the distributions' scales, the position
        # biases): gathered from every shard
        self.objective.gather_parts = self.exchange.allgather

    def _open_exchange(self, index, peers, bin_ranges):
        """The exchange with the other shards: over the direct links when
        every shard opened them, else through Dask's worker RPC."""
        if self._links is not None:
            return SocketExchange(index, [address for address, _ in peers],
                                  bin_ranges, self._links,
                                  n_threads=self.spec.n_threads)
        return PeerExchange(index, peers, bin_ranges)

    def _share_memory(self, bin_ptr):
        """Shards of one machine pass their histograms through shared
        memory (``SocketExchange.share_memory``): an outbox of the largest
        reduce of a level (every node's histograms over every bin, the
        bins of ``tree_method="approx"``'s cuts included; larger reduces
        go by the sockets), whose pages are only allocated when written."""
        share = getattr(self.exchange, "share_memory", None)
        if share is None:   # Dask's comms
            return
        p = self.spec.tree_params
        n_bins = max(int(bin_ptr[-1]), (bin_ptr.shape[0] - 1) * (
            p.max_bin + 1))
        share(_level_capacity(p) * n_bins * 2 * 8)

    def _scanner(self, bin_ptr, thresholds, features):
        """The SliceScanner of this shard's ``features``."""
        spec = self.spec
        categorical = (None if spec.n_categories is None
                       else spec.n_categories > 0)
        return SliceScanner(
            bin_ptr, thresholds, features,
            _level_capacity(spec.tree_params), categorical, spec.n_threads)

    def _propose_cuts(self, slot):
        """tree_method="approx": the cuts of the tree of ``slot``, proposed
        from its hessians as single-node ``GlobalApproxFinder`` does, on
        every shard's rows. Each shard sketches its partitions' values
        weighted by hessian x weight (0 off the tree's rows), the summaries
        are all-gathered among the shards and merged in partition order,
        so every shard derives the same cuts; then the rows are re-binned
        and the features shared out again by bins."""
        spec = self.spec
        if spec.approx_once and self._cuts_proposed:
            return   # constant hessians, no row sampling: the same cuts
        start = time.perf_counter()
        hess = weighted_hessians(self.gpair[self._group(slot)],
                                 self.weights.in_sums, self.active[slot])
        max_bin = spec.tree_params.max_bin
        sparse = sp.issparse(self.X)
        if self._orders is None and not sparse:   # sorted once per fit
            self._sorted = presort_dense(self.X, spec.n_threads)
            self._orders = [column_orders(
                self.X[self._part_rows[k]:self._part_rows[k + 1]],
                spec.n_categories) for k in range(len(self.indices))]
        mine = self._summaries(hess, max_bin, spec.n_categories,
                               self._orders)
        sketched = time.perf_counter()
        gathered = self.exchange.allgather(mine)
        exchanged = time.perf_counter()
        mapper = merged_bin_mapper(ordered_summaries(gathered), max_bin,
                                   spec.n_categories)
        merged = time.perf_counter()
        local = self.finder
        local.binned = None   # the old codes go before the new arrive
        if sparse:   # the stored entries' codes only
            local.binned = self._binned(mapper)
        else:
            # by walking the presorted columns (no search per value),
            # feature by feature, as single-node GlobalApproxFinder
            codes = np.empty((self.X.shape[1], self.X.shape[0]),
                             dtype=mapper.code_dtype_)
            codes_from_sorted(self._sorted, mapper.cuts_, codes,
                              spec.n_threads)
            local.binned = BinnedData(codes.T, mapper.bin_ptr_)
        local.thresholds = mapper.split_thresholds_
        ranges = feature_ranges(mapper.bin_ptr_, self._n_shards)
        self.exchange.bin_ranges = [bin_range(mapper.bin_ptr_, r)
                                    for r in ranges]
        self.shard_finder.scanner = self._scanner(
            mapper.bin_ptr_, mapper.split_thresholds_, ranges[self._index])
        self._cuts_proposed = True
        end = time.perf_counter()
        stats = self._stats
        stats["propose_seconds"] += end - start
        stats["propose_sketch_seconds"] += sketched - start
        stats["propose_exchange_seconds"] += exchanged - sketched
        stats["propose_merge_seconds"] += merged - exchanged
        stats["propose_rebin_seconds"] += end - merged

    async def receive(self, seq, sender, piece):
        """A peer's histograms or bests (on the event loop, while the
        level's call waits for them on the actor thread)."""
        self.exchange.deliver(seq, sender, piece)

    async def abort(self, reason):
        """Stop waiting for peers (the client saw a failure elsewhere)."""
        if self.exchange is not None:
            self.exchange.abort(reason)

    def set_learning_rate(self, learning_rate):
        """The learning rate of each tree of the following rounds."""
        self.driver.params = replace(self.driver.params,
                                     learning_rate=learning_rate)

    # the rounds allocate per level (row partition, histogram scratch,
    # gradients): under Dask's malloc settings each such block would be
    # mapped afresh and fault its pages in again (``memory.py``)
    @keeps_freed_memory
    def grow_rounds(self, first, n_rounds=1):
        """Boosting rounds ``first, ..., first + n_rounds - 1`` (``grow_round``
        each); their results in a list. The client asks for several rounds
        at once when it needs nothing between them (no callbacks): one
        client round trip for them all."""
        self._stats["round_calls"] += 1
        return [self.grow_round(first + k) for k in range(n_rounds)]

    def grow_round(self, iteration):
        """One boosting round: its gradients, the global scales and row
        counts of each of its trees (gathered from every shard), the trees
        grown in step with the other shards and added to the margins.
        Returns the trees, a digest of them (the client checks that every
        shard grew the same), the eval sets' margins (copies: later
        rounds of a batch add to the shard's) and the column sampler's
        state after the round (None when it draws nothing), from which a
        fit that loses a worker resumes."""
        start = time.perf_counter()
        spec = self.spec
        maxima = np.stack(self.exchange.allgather(
            self._begin_round(iteration)), axis=1)   # (slot, shard, 3)
        trees = []
        for slot in range(spec.trees_per_round):
            if spec.approx:
                self._propose_cuts(slot)
            self.shard_finder.set_tree(global_scales(maxima[slot]),
                                       int(maxima[slot, :, 2].sum()))
            group = self._group(slot)
            tree, leaf_rows = self.driver.grow(
                self.gpair[group], self.active[slot],
                gradient_maxima=(None if self._magnitudes is None
                                 else self._magnitudes[group]))
            self._add_tree(tree, leaf_rows, slot)
            trees.append(tree)
        self.exchange.flush()
        self._stats["round_seconds"] += time.perf_counter() - start
        return (trees, tree_digest(trees),
                [(p.set, p.index, p.margin.copy()) for p in self.evals],
                sampler_state(self.driver.sampler))

    # ---- DART (``DartShardRounds``)
    @keeps_freed_memory
    def grow_dart_rounds(self, first, plans):
        """DART rounds ``first, ...``, one per plan ``(dropped, their
        weights, factor, new weight)`` (the client's ``Dropout``); the
        results of ``grow_round``."""
        self._stats["round_calls"] += 1
        return [self._dart_round(first + k, *plan)
                for k, plan in enumerate(plans)]

    def _dart_round(self, iteration, dropped, old, factor, new_weight):
        """One DART round as ``InProcessRounds._dart_round`` runs it: the
        gradients at the margins without the dropped trees, the new trees
        at their weight and the dropped ones rescaled, in the rows' and
        the eval sets' margins (the same operations, in the same order)."""
        forest, n_threads = self._dart_forest(), self.spec.n_threads
        if len(dropped) == 0:   # as gbtree: the new trees at weight 1
            result = self.grow_round(iteration)
            forest.add(result[0], self.spec.n_parallel)
            return result
        rows = self._predictor_rows()
        removed = tree_outputs(forest, dropped, old, rows, n_threads)
        raw, evals = self.raw, self.evals
        self.raw, self.evals = raw - removed, []   # the round's own margins
        try:
            trees, digest, _, state = self.grow_round(iteration)
        finally:
            self.raw, self.evals = raw, evals
        new = forest.add(trees, self.spec.n_parallel)
        added = tree_outputs(forest, new, [new_weight] * len(new), rows,
                             n_threads)
        self.raw += added - (1.0 - factor) * removed
        for part in self.evals:
            part.margin += tree_outputs(forest, dropped,
                                        [-(1.0 - factor) * w for w in old],
                                        part.X, n_threads)
            for k in new:
                if new_weight == 1.0:
                    add_tree_output(forest.trees[k], part.X, part.margin,
                                    forest.tree_group[k], n_threads)
                else:
                    part.margin += tree_outputs(forest, [k], [new_weight],
                                                part.X, n_threads)
        return (trees, digest,
                [(p.set, p.index, p.margin.copy()) for p in self.evals],
                state)

    def _dart_forest(self):
        if getattr(self, "_forest", None) is None:
            self._forest = _Forest(self._start_trees, self.spec.n_outputs)
        return self._forest

    def stats(self):
        """Seconds this shard spent growing trees (``round_seconds``) and
        in its parts (building its histograms, the exchanges with the
        other shards, the scans of its features), the client calls that
        grew them (``round_calls``), and the bytes of histograms it sent
        to the other shards: where the time of a fit goes
        (``benchmarks/bench_dask.py``)."""
        binned, dense = self.binned_bytes()
        return dict(self._stats, sent_bytes=self.exchange.sent_bytes,
                    binned_bytes=binned, dense_code_bytes=dense,
                    shared_bytes=getattr(self.exchange, "shared_bytes", 0),
                    links=self.exchange.kind,
                    transport=getattr(self.exchange, "transport",
                                      self.exchange.kind))

    def _add_tree(self, tree, leaf_rows, slot):
        """The tree's outputs added to the margins of the rows and of the
        eval sets."""
        spec, group = self.spec, self._group(slot)
        leaf_rows = _without_empty_slices(leaf_rows)
        update_margins(tree, leaf_rows, self.active[slot],
                        self._predictor_rows(), self.weights.positive,
                        self.raw, group,
                        spec.n_threads)
        for part in self.evals:
            add_tree_output(tree, part.X, part.margin, group,
                             spec.n_threads)

    def _group(self, slot):
        return slot // self.spec.n_parallel

    def _begin_round(self, iteration):
        """Gradients of the round, each tree's row sample, and per tree the
        maxima of |g w|, |h w| over its rows and their number."""
        spec = self.spec
        # the pairs' extremes when the objective's kernel took them (as
        # single-node ``InProcessRounds._round``): no second pass here
        extremes = self.objective.gradient(
            self.y, self.raw, self.weights.in_gradients, self.gpair,
            spec.n_threads)
        # max |g|, max |h| of every row, per output (or None)
        magnitudes = check_gradients(self.gpair, self.weight_sum,
                                     self.objective.name, iteration,
                                     spec.n_threads, extremes=extremes)
        self._magnitudes = magnitudes   # the trees' start (``grow_round``)
        self.active = []
        maxima = np.zeros((spec.trees_per_round, 3))
        for slot in range(spec.trees_per_round):
            active = self.weights.positive & row_sample(
                spec.seed, iteration, slot, self.rows, spec.subsample)
            self.active.append(active)
            maxima[slot] = self._tree_maxima(slot, active, magnitudes)
        return maxima

    def _tree_maxima(self, slot, active, magnitudes):
        """max |g w|, max |h w| over the rows of the tree of ``slot``
        (``active``) and their number. Unit weights, every row in the
        tree: the round's gradient check found the maxima already
        (``magnitudes``: the same floats, |g| of a float32 exact in
        float64), no second pass over the rows."""
        group = self._group(slot)
        if (magnitudes is not None and self.weights.in_sums is None
                and active.all()):
            g, h = magnitudes[group, :2]   # (its third: the least h)
            return g, h, active.shape[0]
        return active_maxima(
            self.gpair[group], self.weights.in_sums,
            np.ascontiguousarray(active).view(np.uint8), self.spec.n_threads)

    # ---- prediction on the training rows
    def margins(self):
        return self.raw


def _without_empty_slices(leaf_rows):
    """``leaf_rows`` (``LeafRows``, or ``SplitLeafRows``: the last level
    unpartitioned) without the leaves, or last-level splits, that hold
    none of this worker's rows (never on one process): their empty
    slices may share a begin."""
    if isinstance(leaf_rows, SplitLeafRows):
        last = leaf_rows.last
        kept = last.end > last.begin
        return replace(
            leaf_rows, sliced=_without_empty_slices(leaf_rows.sliced),
            last=replace(last, **{name: getattr(last, name)[kept]
                                  for name in ("begin", "end", "feature",
                                               "split_bin", "default_left",
                                               "left", "right")}))
    kept = leaf_rows.end > leaf_rows.begin
    return LeafRows(leaf_rows.partition, leaf_rows.begin[kept],
                    leaf_rows.end[kept], leaf_rows.node[kept])


class _Forest:
    """Every tree of a DART fit on a shard (the continued model's, then
    each round's), as ``tree_outputs`` reads a booster's."""

    def __init__(self, booster, n_outputs):
        self.trees = [] if booster is None else list(booster.trees)
        self.tree_group = [] if booster is None else list(booster.tree_group)
        self.n_outputs = n_outputs

    def add(self, trees, n_parallel):
        """Add a round's trees (in slot order); their indices."""
        first = len(self.trees)
        self.trees += trees
        self.tree_group += [slot // n_parallel for slot in range(len(trees))]
        return range(first, len(self.trees))


class _EvalPart:
    """One eval_set partition on a shard: converted X, labels, weights and
    the margins kept up to date tree by tree."""

    def __init__(self, template, eval_set, index, X, y, weight, qid=None,
                 base_margin=None):
        self.set, self.index = eval_set, index
        self.X = check_X(template, X, reset=False)
        if sp.issparse(self.X):   # the predictor's view: absent entries
            self.X = sparse_rows(self.X, 0.0 if getattr(
                template, "sparse_absent", "missing") == "zero" else np.nan)
        n = self.X.shape[0]
        what = f"eval_set[{eval_set}]"
        self.y = _labels(y, n, f"{what}'s y", index)
        self.weight = (np.ones(n) if weight is None else
                       _weights(weight, n,
                                f"sample_weight_eval_set[{eval_set}]", index))
        self.base_margin = _margin_rows(
            base_margin, n, f"base_margin_eval_set[{eval_set}]", index)
        self.margin = None


def _start_margins(booster, X, row_margins, base_margin, n_threads):
    """The margins rows start from: ``row_margins`` (checked, (n_rows,
    n_outputs)) or the model's ``base_margin``, plus the trees of
    ``booster`` (the model continued, or None): what ``predict_raw`` of
    the starting booster gives in core."""
    if booster is not None:
        return booster.predict_raw(X, n_threads=n_threads,
                                   base_margin=row_margins)
    if row_margins is not None:
        return row_margins.copy()
    return np.tile(base_margin, (X.shape[0], 1))


def _margin_rows(values, n_rows, name, index):
    """A partition's base margins as float64, one row (of one value or
    one per output) per row of X; the columns are checked later, against
    the model's outputs."""
    if values is None:
        return None
    try:
        margin = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"partition {index}: {name} must be numeric, got "
                         f"{type(values).__name__}") from None
    if margin.ndim not in (1, 2) or margin.shape[0] != n_rows:
        raise ValueError(
            f"partition {index}: {name} has shape {margin.shape}, but X has "
            f"{n_rows} rows: {name} must be partitioned like X, one row "
            "per row of X")
    return margin


def _stacked_rows(parts):
    """The rows of a shard's converted partitions, one matrix: canonical
    CSR when any partition is sparse (a dense one's entries all stored,
    its zeros values, as its rows mean), else a dense array."""
    if not any(sp.issparse(X) for X in parts):
        return np.concatenate(parts)
    blocks = []
    for X in parts:
        if not sp.issparse(X):
            n_rows, n_features = X.shape
            X = sp.csr_matrix(
                (X.ravel(), np.tile(np.arange(n_features, dtype=np.int32),
                                    n_rows),
                 np.arange(0, n_rows * n_features + 1, max(n_features, 1),
                           dtype=np.int64)[:n_rows + 1]),
                shape=(n_rows, n_features))
        blocks.append(X)
    return sp.vstack(blocks, format="csr")


def partition_signature(X):
    """What must agree across the partitions of X: the dtype of an array;
    the columns, dtypes and categories of a DataFrame."""
    dtypes = getattr(X, "dtypes", None)
    if sp.issparse(X):   # trains as its dense form would: the same kind
        return ("array", str(X.dtype), X.shape[1:])
    if dtypes is None:
        return ("array", str(np.asarray(X).dtype), np.shape(X)[1:])
    columns = []
    for name, dtype in dtypes.items():
        categories = getattr(dtype, "categories", None)
        columns.append((str(name), str(dtype) if categories is None
                        else "category",
                        None if categories is None else tuple(categories)))
    return ("frame", tuple(columns))


def global_scales(maxima):
    """The fixed-point scales of a tree from every worker's maxima rows
    (max |g w|, max |h w|, number of rows): those one process would choose
    on all the rows."""
    maxima = np.asarray(maxima)
    n_rows = int(maxima[:, 2].sum())
    return (quantization_scale(float(maxima[:, 0].max()), n_rows),
            quantization_scale(float(maxima[:, 1].max()), n_rows))


def _query_ids(values, n_rows, index):
    """A partition's query ids: integers, one per row."""
    qid = np.asarray(values)
    if qid.ndim == 2 and qid.shape[1] == 1:
        qid = qid[:, 0]
    if qid.shape != (n_rows,):
        raise ValueError(f"partition {index}: qid has shape {qid.shape}, but "
                         f"X has {n_rows} rows")
    if qid.dtype.kind not in "iub":
        raise TypeError(f"qid must hold integer query ids, got dtype "
                        f"{qid.dtype}")
    return qid


def _labels(values, n_rows, name, index):
    """A partition's labels: one per row, or two (survival:aft's [lower,
    upper] bounds of each time, ``objective_labels`` checks them)."""
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 2:
        if values.shape[0] != n_rows:
            raise ValueError(
                f"partition {index}: {name} has shape {values.shape}, but X "
                f"has {n_rows} rows: the partitions of X and {name} must "
                "line up")
        return values
    return _column(values, n_rows, name, index, dtype=None)


def _weights(values, n_rows, name, index):
    """A partition's sample weights: finite and non-negative."""
    weight = _column(values, n_rows, name, index)
    if not np.all(np.isfinite(weight)) or np.any(weight < 0):
        raise ValueError(f"partition {index}: {name} must be finite and "
                         "non-negative")
    return weight


def _column(values, n_rows, name, index, dtype=np.float64):
    """A partition's labels or weights as a 1-D array of n_rows (float64
    unless ``dtype`` is None: labels of a classifier keep theirs)."""
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or values.shape[0] != n_rows:
        raise ValueError(
            f"partition {index}: {name} has shape {values.shape}, but X has "
            f"{n_rows} rows: the partitions of X and {name} must line up")
    if dtype is None:
        return values
    return values.astype(dtype, copy=False)


# -- the client side --------------------------------------------------------

# seconds a failed call waits for the scheduler to notice that a shard's
# worker is gone (a survivor sees its peer's sockets close first)
LOSS_GRACE_SECONDS = 5.0
# seconds a failed call waits at most for the answers of the calls it made
# (the other shards' calls, ended by the abort, and the aborts) before it
# raises; only a worker that is there but does not answer makes it wait
# that long
SETTLE_SECONDS = 5.0


def cluster_workers(client):
    """The addresses of the workers the scheduler has now, asked of it
    (``Client.nthreads``). Not ``Client.scheduler_info()["workers"]``:
    that returns the client's cached identity, which the client's own
    refresh (every ``distributed.client.scheduler-info-interval``, 2 s)
    replaces with one that lists no worker, racing with the copy the
    call has just fetched: every live worker then looked gone (a
    spurious ``WorkerLost``, one run in ~25 of
    ``test_dask_wide_sparse_shard_memory_is_bounded_by_the_stored_entries``,
    whose calls are long enough to be checked on many times)."""
    return set(client.nthreads())


class ShardGroup:
    """The shards of a fit, called together: every call goes to every
    shard at once and waits for all of them. A shard whose worker left the
    cluster, or whose call failed because a worker is gone, ends the wait
    with ``WorkerLost`` naming the worker (never a hang: while waiting,
    the cluster is asked every ``poll_seconds`` whether the shards' workers
    are still there); any other failure is re-raised as it is.

    Parameters
    ----------
    client : distributed.Client
    actors : list of distributed.Actor
    addresses : list of str
        The worker of each actor.
    """

    # one caller (the client) decides every call of the shards: the
    # rounds per call may follow the pace it measures (``ShardRounds``)
    one_caller = True

    def __init__(self, client, actors, addresses, poll_seconds=0.5):
        self.client = client
        self.actors = actors
        self.addresses = addresses
        self.poll_seconds = poll_seconds

    def __len__(self):
        return len(self.actors)

    def call(self, method, *args, per_shard=None):
        """``method(*args)`` on every shard (with ``per_shard[k]``'s
        arguments added for shard k); the results, in shard order. A
        failure on one shard ends the call (the others, which may be
        waiting for its histograms, are told to stop), once every shard
        has answered, or its worker is gone (``settle``): the fit releases
        its shards after, and a call still on its way to a released shard
        fails inside Dask (a ``KeyError`` logged on the client, whose
        traceback, formatted on Dask's thread while the fit's error is
        formatted on the caller's, can break the caller's report: CPython
        3.11.7's ``ast`` is not thread-safe, gh-106905)."""
        futures = []
        for k, actor in enumerate(self.actors):
            extra = () if per_shard is None else per_shard[k]
            futures.append(getattr(actor, method)(*args, *extra))
        try:
            return self._results(futures, method)
        except BaseException as error:
            aborts = self.abort(f"{type(error).__name__} during {method!r}")
            if not isinstance(error, KeyboardInterrupt):
                self.settle(list(zip(self.addresses, futures)) + aborts)
                self._note_answers(error, futures, method)
            if isinstance(error, (WorkerLost, ValueError, TypeError,
                                  KeyboardInterrupt)):
                raise   # a data error is not a lost worker
            gone = self._gone(LOSS_GRACE_SECONDS)
            if not gone:
                raise
            root = _root_cause(error)
            raise WorkerLost(
                f"skboost.dask: lost the worker(s) {', '.join(gone)} during "
                f"{method!r} ({type(root).__name__}: {root})") from error

    def _results(self, futures, method):
        from distributed.utils import TimeoutError as DaskTimeout

        results = [None] * len(futures)
        pending = list(range(len(futures)))
        while pending:
            k = pending[0]
            try:
                results[k] = futures[k].result(timeout=self.poll_seconds)
                pending.pop(0)
            except (TimeoutError, DaskTimeout):
                for j in pending[1:]:   # a failure elsewhere ends the wait
                    if futures[j].done():
                        results[j] = futures[j].result()
                        pending.remove(j)
                self._check_alive(method)
        return results

    def abort(self, reason):
        """Tell every shard still there to stop waiting for the others;
        the (worker address, future) of each abort sent, for ``settle``
        (a lost worker's shard does not answer)."""
        sent = []
        for address, actor in zip(self.addresses, self.actors):
            try:
                sent.append((address, actor.abort(reason)))
            except Exception:   # noqa: BLE001 - best effort
                pass
        return sent

    def _note_answers(self, error, futures, method):
        """What every other shard answered to the failed call, as notes
        on ``error`` (the report of a failed fit names each shard's
        outcome: stopped by the abort, failed too, or silent)."""
        frames = error.__traceback__   # raised again below: kept as is
        for k, (address, future) in enumerate(zip(self.addresses, futures)):
            answer = "no answer yet"
            if future.done():
                try:
                    future.result(timeout=self.poll_seconds)
                    continue   # it finished its part
                except BaseException as other:   # noqa: BLE001 - reported
                    if other is error:
                        continue
                    answer = f"{type(other).__name__}: {other}"
                finally:
                    error.__traceback__ = frames
            error.add_note(f"skboost.dask: shard {k} ({address}) answered "
                           f"{method!r} with {answer}")

    def settle(self, calls, timeout=SETTLE_SECONDS):
        """Wait until each of ``calls`` ((worker address, future) pairs)
        is answered, whatever the answer, or its worker has left the
        cluster; ``timeout`` seconds at most. Returns the addresses of
        the workers whose calls are still unanswered."""
        deadline = time.monotonic() + timeout
        while True:
            waiting = [(a, f) for a, f in calls if not f.done()]
            if waiting:
                gone = set(self._gone(0.0))
                waiting = [(a, f) for a, f in waiting if a not in gone]
            if not waiting or time.monotonic() > deadline:
                return sorted({a for a, _ in waiting})
            try:
                waiting[0][1].result(timeout=self.poll_seconds)
            except Exception:   # noqa: BLE001 - the answer does not matter
                pass

    def _gone(self, grace):
        """The shards' workers that left the cluster, asked again for up
        to ``grace`` seconds while none has."""
        deadline = time.monotonic() + grace
        while True:
            try:
                workers = cluster_workers(self.client)
            except OSError:   # the scheduler itself is gone
                return []
            gone = [a for a in self.addresses if a not in workers]
            if gone or time.monotonic() > deadline:
                return gone
            time.sleep(0.1)

    def _check_alive(self, method):
        gone = self._gone(0.0)
        if gone:
            raise WorkerLost(
                f"skboost.dask: the worker(s) {', '.join(gone)} left the "
                f"cluster during {method!r}")


def _root_cause(error):
    """The first exception of ``error``'s chain (what a survivor saw of
    the lost worker: a connection reset, ...)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


# -- the boosting loop ------------------------------------------------------

# rounds the shards grow per client call when no callback needs to see
# every round (the eval sets' margins of each come back with the batch)
ROUNDS_PER_CALL = 16
# without eval sets a call returns only its trees: after the first call,
# one grows the rounds of about CALL_SECONDS at the pace measured so far
# (a call costs a client round trip, a few milliseconds: fast rounds are
# grown in fewer calls), within [ROUNDS_PER_CALL, MAX_ROUNDS_PER_CALL]; a
# worker lost during a call costs that call's rounds (the fit resumes
# after the last call completed)
CALL_SECONDS = 2.0
MAX_ROUNDS_PER_CALL = 256


def sampler_state(sampler):
    """The column sampler's generator state (None when it draws nothing:
    every fraction 1): what a fit resumed after a lost worker draws on
    from."""
    if min(sampler.bytree, sampler.bylevel, sampler.bynode) >= 1.0:
        return None
    return sampler.rng.bit_generator.state


def connect_shards(shards, mapper, spec, booster, sampler, evaluator,
                   dropout=None):
    """The shards (set up) linked to each other and given their copy of
    ``sampler``: a ``ShardRounds`` ready to grow rounds. Every shard runs
    the one growth driver over a ``ShardFinder`` in step with the
    others; the client adds the trees, evaluates and runs the
    callbacks."""
    ranges = feature_ranges(mapper.bin_ptr_, len(shards))
    peers = list(zip(shards.addresses, [a.key for a in shards.actors]))
    _link_shards(shards)
    shards.call("connect", per_shard=[(k, peers, ranges, sampler)
                                      for k in range(len(shards))])
    if dropout is not None:   # booster="dart"
        return DartShardRounds(shards, spec, booster, evaluator,
                               sampler_state(sampler), dropout=dropout)
    return ShardRounds(shards, spec, booster, evaluator,
                       sampler_state(sampler))


class ShardRounds:
    """The round executor of a Dask fit: one client call grows a batch of
    rounds on every shard (one round when callbacks watch each, else up to
    ``max_batch``); each round's trees, checked equal on every
    shard, go into the booster and its eval margins into the metrics.
    ``resume_state()``: the column sampler's state after the last round
    completed (``_model.recovery``)."""

    def __init__(self, shards, spec, booster, evaluator, state=None):
        self.shards, self.spec = shards, spec
        self.booster, self.evaluator = booster, evaluator
        self._state = state
        self._round_seconds = None   # per round, in the last call

    @property
    def max_batch(self):
        """Rounds the next call may grow: ``ROUNDS_PER_CALL``, or without
        eval sets those of about ``CALL_SECONDS`` (see there) when one
        caller decides every call (``one_caller`` of the shard group:
        Dask's client; every Spark task runs this loop itself, and the
        tasks' batches must agree, which their own clocks would not)."""
        if (self._round_seconds is None
                or not getattr(self.shards, "one_caller", False)
                or self.evaluator is not None and self.evaluator.n_sets):
            return ROUNDS_PER_CALL
        paced = int(CALL_SECONDS / max(self._round_seconds, 1e-6))
        return min(MAX_ROUNDS_PER_CALL, max(ROUNDS_PER_CALL, paced))

    def _timed_call(self, method, first, batch):
        """``shards.call(method, first, batch)``, its pace kept."""
        start = time.perf_counter()
        per_shard = self.shards.call(method, first, batch)
        self._round_seconds = (time.perf_counter() - start) / max(
            1, len(batch) if isinstance(batch, list) else batch)
        return per_shard

    def set_learning_rate(self, learning_rate):
        """Every shard grows the following rounds with this learning rate
        (each of a round's parallel trees carries its share)."""
        self.shards.call("set_learning_rate",
                         learning_rate / self.spec.n_parallel)

    def grow(self, first, n_rounds):
        per_shard = self._timed_call("grow_rounds", first, n_rounds)
        for offset, results in enumerate(zip(*per_shard)):
            self._add_round(first + offset, results)
            yield first + offset

    def resume_state(self):
        return self._state

    def _add_round(self, iteration, results):
        if len({digest for _, digest, _, _ in results}) != 1:
            raise RuntimeError(
                "skboost.dask: the workers grew different trees in round "
                f"{iteration} (a bug: please report it)")
        for slot, tree in enumerate(results[0][0]):
            self.booster.add_tree(tree, slot // self.spec.n_parallel)
        if self.evaluator is not None:
            self.evaluator.add_round(iteration, [r[2] for r in results])
        self._state = results[0][3]


class DartShardRounds(ShardRounds):
    """The round executor of a Dask fit with ``booster="dart"``: the
    client draws each round's dropped trees from ``dropout`` (the stream
    one process draws from) and tells the shards, which rescale their
    margins (``Shard.grow_dart_rounds``); the trees' weights are kept in
    the booster as in core."""

    def __init__(self, shards, spec, booster, evaluator, state=None, *,
                 dropout):
        super().__init__(shards, spec, booster, evaluator, state)
        self.dropout = dropout
        self.tree_learning_rate = spec.tree_params.learning_rate

    def set_learning_rate(self, learning_rate):
        super().set_learning_rate(learning_rate)
        self.tree_learning_rate = learning_rate / self.spec.n_parallel

    def grow(self, first, n_rounds):
        plans = self._plans(n_rounds)
        per_shard = self._timed_call("grow_dart_rounds", first, plans)
        for offset, results in enumerate(zip(*per_shard)):
            self._add_round(first + offset, results)
            dropped, _, factor, new_weight = plans[offset]
            self.booster.reweigh_trees(dropped, factor,
                                       self.spec.trees_per_round, new_weight)
            yield first + offset

    def _plans(self, n_rounds):
        """Each round's (dropped trees, their weights, scale of the
        dropped, weight of the new trees), the weights followed from
        round to round as ``Booster.reweigh_trees`` changes them."""
        n_new = self.spec.trees_per_round
        weights = list(self.booster.tree_weights
                       or [1.0] * len(self.booster.trees))
        round_rate = self.tree_learning_rate * self.spec.n_parallel
        plans = []
        for _ in range(n_rounds):
            dropped = self.dropout.choose(weights)
            factor, new_weight = self.dropout.factors(dropped.size, n_new,
                                                      round_rate)
            plans.append((dropped, [weights[k] for k in dropped], factor,
                          new_weight))
            for k in dropped:
                weights[k] *= factor
            weights += [new_weight] * n_new
        return plans


def _link_shards(shards):
    """Open the direct links between the shards (``links.py``) where
    every worker can: each listens, then connects to the others; if any
    cannot, none keeps its links (the exchanges go through Dask)."""
    endpoints = shards.call("listen")
    if any(endpoint is None for endpoint in endpoints):
        shards.call("unlink")
        return False
    token = new_token()
    linked = shards.call("link", per_shard=[(k, endpoints, token)
                                            for k in range(len(shards))])
    if not all(linked):
        shards.call("unlink")
    return all(linked)


class ShardEvaluator:
    """The metrics of the eval sets after every round, from the margins
    the shards keep (gathered each round: n_eval x n_outputs floats) and
    the labels and weights gathered once; as ``_model.train._Evaluator``.

    Parameters
    ----------
    booster : Booster
    objective : Objective
    labels : list
        ``Shard.eval_labels`` of every shard.
    n_sets : int
    metric_names : list or None
    """

    def __init__(self, booster, objective, labels, n_sets, metric_names):
        from ..metrics import get_metric

        self.booster = booster
        self.objective = objective
        self.n_sets = n_sets
        if not metric_names:
            metric_names = [objective.default_metric] if n_sets else []
        self.metrics = [get_metric(name, objective.params)
                        for name in metric_names]
        booster.metric_maximize = {m.name: m.higher_is_better
                                   for m in self.metrics}
        self.names = [f"validation_{i}" for i in range(n_sets)]
        booster.evals_result = {name: {m.name: [] for m in self.metrics}
                                for name in self.names}
        self.y = self._by_set(labels, 2)
        self.weight = self._by_set(labels, 3)

    def _by_set(self, per_shard, field):
        """Concatenate a field of every shard's partitions, per eval set, in
        partition order."""
        parts = sorted((p for shard in per_shard for p in shard),
                       key=lambda p: p[:2])
        return [np.concatenate([p[field] for p in parts if p[0] == k])
                for k in range(self.n_sets)]

    def add_round(self, iteration, margins):
        margins = self._by_set([[(s, i, None, m) for s, i, m in shard]
                                for shard in margins], 3)
        for name, y, weight, margin in zip(self.names, self.y, self.weight,
                                           margins):
            log_metrics(self.booster.evals_result[name], self.metrics,
                        self.objective, margin, y, weight, None)
