"""What a distributed fit does with its shards, whatever drives them: the
engine-neutral part of a fit on ``Shard``s (``train.py``), shared by
``skboost.dask`` (a client calls the shards, Dask actors) and
``skboost.spark`` (every barrier task holds one shard and runs the same
loop: ``call`` runs the method on its own shard and all-gathers the
results).

A *shard group* is anything with ``call(method, *args, per_shard=None)``
returning every shard's result in shard order, ``len()``, and for
``connect_shards`` ``addresses`` and ``actors`` (each with a ``key``);
``one_caller`` True when one caller decides every call (Dask's client:
the rounds per call may then follow the pace it measures; Spark's tasks
each run the loop, without it, and keep fixed batches).
``ShardTraining`` is mixed into an estimator (before the single-node
class whose parameters and fitted attributes it keeps): its ``_train_on``
runs the boosting loop (``run_rounds``) over a loaded group.
"""

from dataclasses import dataclass, replace
import functools

import numpy as np

from .._estimators.base import keep_interrupted_rounds, metric_list, tie_salt
from .._estimators.continued import continued_booster, draw_seed
from .._estimators.params import tree_params as build_tree_params
from .._model.dart import Dropout, dart_params
from .._model.recovery import ResumingRounds, TrainingInterrupted, WorkerLost
from .._model.train import (BoostParams, resolve_objective, run_rounds,
                            start_booster)
from ..callback import check_callbacks
from ..objectives import SURVIVAL_OBJECTIVES
from ..tree._column_sampler import ColumnSampler
from .train import (ShardEvaluator, ShardSpec, connect_shards,
                    merged_bin_mapper, ordered_summaries, unpack_labels)

__all__ = ["FitState", "ShardTraining", "ShardRegression",
           "ShardClassification", "ShardRanking", "check_signatures",
           "check_queries_in_partitions", "shard_stats"]


def shard_stats(shards):
    """Where the time went on each worker (benchmarks/bench_dask.py); a
    worker lost after the last round leaves none (the model is whole)."""
    try:
        return shards.call("stats")
    except WorkerLost:
        return []


@dataclass
class FitState:
    """What a fit fixes before its rounds, and a recovery reuses: the
    shards' spec, the cuts, the training weights' sum, the seed of the
    column samples, the continued model, the booster the rounds add to
    and the eval sets' metrics."""

    spec: object
    mapper: object
    weight_sum: float
    seed: int
    init: object
    booster: object
    evaluator: object


def check_signatures(described):
    """Every partition of X with the same dtypes (and categories) as the
    first; returns the global first row of each partition, per shard, and
    the number of rows."""
    parts = sorted(p for shard in described for p in shard)
    first_index, _, first_signature = parts[0]
    for index, _, signature in parts[1:]:
        if signature != first_signature:
            raise ValueError(
                f"partition {index} of X does not match partition "
                f"{first_index}: {_signature_difference(first_signature, signature)}"
                "; every partition must have the same columns, dtypes and "
                "categories (for categories: dask's categorize(), or "
                "astype with one pandas CategoricalDtype)")
    starts = np.cumsum([0] + [n for _, n, _ in parts])
    first_row = {index: int(starts[k]) for k, (index, _, _) in
                 enumerate(parts)}
    per_shard = [[first_row[index] for index, _, _ in sorted(shard)]
                 for shard in described]
    return per_shard, int(starts[-1])


def _signature_difference(a, b):
    """Which column (or the dtype) differs between two signatures."""
    if a[0] != b[0] or a[0] == "array":
        return f"dtype {b[1:]} instead of {a[1:]}"
    if len(a[1]) != len(b[1]):
        return f"{len(b[1])} columns instead of {len(a[1])}"
    for (name, dtype, cats), (name_b, dtype_b, cats_b) in zip(a[1], b[1]):
        if (name, dtype) != (name_b, dtype_b):
            return (f"column {name_b!r} of dtype {dtype_b} instead of "
                    f"{name!r} of dtype {dtype}")
        if cats != cats_b:
            return (f"column {name!r} has the categories {list(cats_b)} "
                    f"instead of {list(cats)}")
    return "different columns"


def check_queries_in_partitions(query_ids):
    """Every query inside one partition (LambdaMART's gradients of a query
    need all of its rows on one worker)."""
    parts = sorted(p for shard in query_ids for p in shard)
    seen = {}
    for index, ids in parts:
        for q in ids.tolist():
            if q in seen:
                raise ValueError(
                    f"query {q} has rows in partitions {seen[q]} and "
                    f"{index}: every query must lie inside one partition "
                    "(repartition by qid, e.g. set_index('qid'))")
            seen[q] = index


class ShardTraining:
    """The engine-neutral part of a distributed estimator's fit (see the
    module's docstring). ``_engine``: named in errors and logs."""

    _engine = "skboost.dask"

    def _draw_seed(self):
        """The seed of the fit's samples (an engine whose every task runs
        the fit draws it once, before)."""
        return draw_seed(self.random_state)

    def _check_margin_shapes(self, margins, n_outputs):
        """The engine's check of the base margins' columns (before the
        shards check every row): none here."""

    def _check_shard_params(self):
        """What distributed training does not support yet, as clear errors."""
        self._validate_params()
        unsupported = [what for what, present in (
            ("tree_method='exact' (use 'hist' or 'approx')",
             self.tree_method == "exact"),
            ("approx_proposal='local' (use 'global')",
             self.tree_method == "approx"
             and self.approx_proposal != "global"),
            ("multi_strategy='multi_output_tree'",
             self.multi_strategy == "multi_output_tree"),
            ("warm_start=True", self.warm_start),
            ("categorical_features (use pandas category columns)",
             self.categorical_features is not None),
            ("class_weight (pass sample_weight)",
             getattr(self, "class_weight", None) is not None))
            if present]
        if unsupported:
            raise ValueError(f"{type(self).__name__} does not support "
                             + ", ".join(unsupported) + " yet")

    def _template(self):
        """A single-node estimator holding what ``check_X`` reads, for the
        shards to convert their partitions with."""
        template = self._local_class(missing=self.missing,
                                     sparse_absent=self.sparse_absent)
        for name in ("n_features_in_", "feature_names_in_",
                     "_category_map_"):
            if hasattr(self, name):
                setattr(template, name, getattr(self, name))
        return template

    def _train_on(self, shards, objective, n_classes, n_rows, *, n_evals,
                  verbose, margins=(None,), init_model=None,
                  placement=None):
        """Train on the loaded shards. ``margins``: the base margins of the
        training rows and of each eval set (dask collections or None),
        checked here against the model's outputs; ``init_model``: the
        model continued (``xgb_model``), checked as the single-node
        estimators check it; ``placement``: where the shards come from
        (``_ShardPlacement``), to re-form them after a lost worker."""
        resolved = resolve_objective(objective, self._objective_params(),
                                      None)
        if resolved.refit_leaves():
            raise ValueError(
                f"objective {resolved.name!r} re-fits its leaves to "
                f"quantiles of residuals, which {self._engine} does not do "
                "yet: use another objective or the single-node estimator")
        n_outputs = resolved.n_outputs(n_classes)
        self._check_margin_shapes(margins, n_outputs)
        init = (None if init_model is None else
                continued_booster(self, init_model, objective, n_classes))
        fit = self._set_up(shards, resolved, objective, n_outputs, init,
                           n_evals)
        callbacks = self._training_callbacks(
            fit.evaluator.names, verbose,
            fit.spec.first_round + self.n_estimators)
        check_callbacks(callbacks)
        rounds = ResumingRounds(
            functools.partial(self._resume, placement, fit),
            connect_shards(shards, fit.mapper, fit.spec, fit.booster,
                           self._column_sampler(fit), fit.evaluator,
                           dropout=self._dropout(fit)),
            self.max_recoveries, self._engine)
        category_map = getattr(self, "_category_map_", None)
        try:
            booster = run_rounds(fit.booster, rounds,
                                 first_round=fit.spec.first_round,
                                 n_rounds=self.n_estimators,
                                 callbacks=callbacks)
        except TrainingInterrupted as interrupt:
            keep_interrupted_rounds(self, interrupt, category_map)
            raise
        finally:
            # each recovery: cause, round resumed at, its cost
            self._dask_recoveries = rounds.recoveries
        self._dask_stats = shard_stats(rounds.executor.shards)
        self._keep_objective_state(booster, rounds.executor.shards)
        return self._install_booster(booster, category_map)

    def _keep_objective_state(self, booster, shards):
        """What the objective estimated during the fit, kept on the
        booster (the ranker's position biases)."""

    def _set_up(self, shards, resolved, objective, n_outputs, init, n_evals):
        """The shards prepared (labels, weights), the cuts merged from
        their summaries and the rows binned on them; the booster the
        rounds add to: a ``FitState``. Two calls of the shards (their
        labels, when the base score is estimated from them, and their
        summaries come with ``start_fit``; the eval sets' labels with
        ``setup``): every call is a round trip."""
        seed = self._draw_seed()
        spec = self._shard_spec(objective, n_outputs, seed, init)
        with_labels = self.base_score is None and init is None
        started = shards.call("start_fit", spec, self.max_bin, with_labels)
        weight_sum = float(sum(prepared[0] for prepared, _, _ in started))
        if not weight_sum > 0:
            raise ValueError("sample_weight must have a positive sum")
        booster = self._first_booster(
            [labels for _, labels, _ in started] if with_labels else None,
            resolved, n_outputs, init)
        mapper = merged_bin_mapper(
            ordered_summaries([summaries for _, _, summaries in started]),
            self.max_bin, spec.n_categories)
        eval_labels = shards.call("setup", mapper, booster.base_margin,
                                  weight_sum)
        evaluator = ShardEvaluator(booster, resolved, eval_labels, n_evals,
                                   metric_list(self.eval_metric))
        return FitState(spec=spec, mapper=mapper, weight_sum=weight_sum,
                         seed=seed, init=init, booster=booster,
                         evaluator=evaluator)

    def _column_sampler(self, fit, state=None):
        """The column sampler of single-node training (``_train``): a
        continued fit draws from (seed, rounds of the continued model);
        ``state``: its generator's state after the last completed round
        (a resumed fit)."""
        tp = fit.spec.tree_params
        sampler = ColumnSampler(self.n_features_in_, tp.colsample_bytree,
                                tp.colsample_bylevel, tp.colsample_bynode,
                                np.random.default_rng(
                                    fit.seed if fit.init is None
                                    else [fit.seed, fit.init.n_rounds]),
                                feature_weights=tp.feature_weights)
        if state is not None:
            sampler.rng.bit_generator.state = state
        return sampler

    def _dropout(self, fit):
        """DART's drops (None for gbtree): the stream single-node training
        spawns from the fit's generator (``_model.train``)."""
        dart = dart_params(self)
        if dart is None:
            return None
        rng = np.random.default_rng(fit.seed if fit.init is None
                                    else [fit.seed, fit.init.n_rounds])
        return Dropout(dart, rng.bit_generator.seed_seq.spawn(1)[0])

    def _resume(self, placement, fit, next_round, state):
        """After a lost worker: shards re-formed on the workers left, set
        up as the fit's (the same cuts, weights and labels), their margins
        the booster's predictions (its trees: rounds before
        ``next_round``), the column sampler at ``state``: the
        ``ShardRounds`` that go on from round ``next_round``."""
        if dart_params(self) is not None:
            raise RuntimeError(
                f"{self._engine}: a worker was lost, and a fit with "
                "booster='dart' does not resume on the workers left (its "
                "margins hold rescaled trees that predictions from the "
                "model would not give bit for bit): fit again")
        if fit.booster.n_rounds != next_round:
            raise RuntimeError(
                f"{self._engine}: resuming at round {next_round} with "
                f"{fit.booster.n_rounds} rounds grown (a bug: please "
                "report it)")
        shards = placement.start_again()
        self._prepare_labels(shards)
        shards.call("prepare", fit.spec)
        shards.call("setup", fit.mapper, fit.booster.base_margin,
                    fit.weight_sum, fit.booster)
        return connect_shards(shards, fit.mapper, fit.spec, fit.booster,
                              self._column_sampler(fit, state),
                              fit.evaluator)

    def _boost_params(self):
        return BoostParams(n_estimators=self.n_estimators,
                           subsample=self.subsample,
                           base_score=self.base_score,
                           sparse_absent=self.sparse_absent,
                           num_parallel_tree=self.num_parallel_tree)

    def _shard_spec(self, objective, n_outputs, seed, init=None):
        """The ShardSpec of this fit (tree parameters as ``_train`` makes
        them); ``init``: the booster continued (its rounds numbered on,
        the shards' margins start from its predictions)."""
        n_parallel = self.num_parallel_tree
        category_map = getattr(self, "_category_map_", None)
        # the boosting loop's rule: the round's learning rate shared among
        # its parallel trees (train.py does the same in process)
        tree_params = replace(
            build_tree_params(self,
                              max_delta_step=self._max_delta_step(objective),
                              n_features=self.n_features_in_),
            learning_rate=self.learning_rate / n_parallel)
        resolved = resolve_objective(objective, self._objective_params(),
                                     None)
        return ShardSpec(
            objective=objective, objective_params=self._objective_params(),
            tree_params=tree_params, n_outputs=n_outputs,
            n_parallel=n_parallel, trees_per_round=n_outputs * n_parallel,
            first_round=0 if init is None else init.n_rounds, seed=seed,
            subsample=self.subsample,
            tie_salt=tie_salt(self.random_state),
            approx=self.tree_method == "approx",
            approx_once=(resolved.constant_hessian
                         and self.subsample >= 1.0),
            n_categories=(None if category_map is None
                          else category_map.n_categories()),
            # a copy of the continued model as the new booster starts
            # (its base margin and trees; no best_iteration): the margins
            # the shards start from are its predictions, as in core
            init_booster=(None if init is None else start_booster(
                resolved, None, None, n_outputs, self.n_features_in_,
                self._boost_params(), init)))

    def _first_booster(self, labels, objective, n_outputs, init=None):
        """The Booster the rounds add to: ``init``'s base margin and trees
        when continuing it; else estimating ``base_score`` reads the labels
        and training weights of every row (``labels``: every shard's
        ``Shard.labels``, None when not needed), in row order."""
        y = weight = None
        if labels is not None:
            labels = [unpack_labels(packed) for packed in labels]
            rows = np.concatenate([r for r, _, _ in labels])
            order = np.argsort(rows, kind="stable")
            y = np.concatenate([v for _, v, _ in labels])[order]
            weight = np.concatenate([w for _, _, w in labels])[order]
        return start_booster(objective, y, weight, n_outputs,
                              self.n_features_in_, self._boost_params(), init)



class ShardRegression(ShardTraining):
    """Regression labels: float64 (a callable objective, identity link)."""

    def _prepare_labels(self, shards):
        objective = self.objective
        if objective in SURVIVAL_OBJECTIVES:   # times or bounds, not floats
            shards.call("objective_labels", objective,
                        self._objective_params())
            return objective, None
        shards.call("float_labels")
        if callable(objective):
            from ..objectives import CallableObjective

            objective = CallableObjective(objective, {"link": "identity"})
        return objective, None


class ShardClassification(ShardTraining):
    """Class labels: the classes of every shard, encoded as indices."""

    def _prepare_labels(self, shards):
        classes = np.unique(np.concatenate(shards.call("label_values")))
        self.classes_ = classes
        self.n_classes_ = len(classes)
        if self.n_classes_ < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in "
                f"the data, but the data contains only one class: "
                f"{classes[0]!r}")
        shards.call("encode_labels", classes)
        return self._objective_for(self.n_classes_), self.n_classes_


class ShardRanking(ShardTraining):
    """Relevance labels: float64."""

    def _prepare_labels(self, shards):
        shards.call("float_labels")
        # where each query lies among all of them: xendcg's draws and the
        # random pairs are those of one process, wherever a query lies
        self._query_starts = query_starts(shards.call("query_counts"))
        return self.objective, None

    def _shard_spec(self, objective, n_outputs, seed, init=None):
        return replace(super()._shard_spec(objective, n_outputs, seed, init),
                       query_starts=self._query_starts)

    def _keep_objective_state(self, booster, shards):
        if self.lambdarank_unbiased:
            booster.position_bias = shards.call("objective_state")[0]

    def _resume(self, placement, fit, next_round, state):
        if self.lambdarank_unbiased:
            raise RuntimeError(
                f"{self._engine}: a worker was lost, and a fit with "
                "lambdarank_unbiased=True does not resume on the workers "
                "left (its position-bias estimates were on the lost "
                "worker): fit again")
        return super()._resume(placement, fit, next_round, state)


def query_starts(counts):
    """``ShardSpec.query_starts`` from every shard's ``query_counts``:
    the first row of each query among all rows grouped by query id."""
    ids = np.concatenate([i for i, _ in counts])
    sizes = np.concatenate([c for _, c in counts])
    order = np.argsort(ids, kind="stable")
    starts = np.zeros(ids.shape[0], dtype=np.int64)
    starts[1:] = np.cumsum(sizes[order])[:-1]
    return ids[order], starts, int(sizes.sum())
