"""The boosting loop: rounds of gradients, trees and margins.

``train`` runs the rounds of one in-process fit: gradients from the
objective, one tree per output (class) grown by the tree grower, raw
margins updated by the predictor, evaluation sets, metrics and callbacks.
The helpers below it (``RoundWeights``, ``start_booster``,
``update_margins``, ...) are the pieces every engine shares: the Dask shards
(``skboost/dask/train.py``) grow their trees elsewhere and use the same ones.
"""

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from .booster import Booster, is_sparse
from .class_rounds import class_workers, grow_class_trees
from .dart import Dropout
from .limits import check_gradients
from .._parallel import get_thread_cap
from .margins import check_base_margin
from .recovery import TrainingInterrupted, keep_whole_rounds
from .multi_output import flatten_targets
from .._threads import ThreadTuner
from ..callback import call_callback, check_callbacks
from ..metrics import get_metric
from ..objectives import RANKING_OBJECTIVES, Objective, get_objective
from ..tree._predictor import predict_raw
from ..tree.methods import make_grower


@dataclass(frozen=True)
class BoostParams:
    """Parameters of the boosting loop around the tree grower."""

    n_estimators: int = 100
    subsample: float = 1.0
    base_score: float | None = None
    sparse_absent: str = "missing"   # what an absent sparse entry means
    # trees grown per output and round, each on its own row and column
    # sample; the round adds their mean (random forests)
    num_parallel_tree: int = 1
    # "multi_output_tree": one vector-leaf tree for all outputs (when there
    # are several), else one tree per output
    multi_strategy: str = "one_output_per_tree"
    # booster="dart": its DartParams (``dart.py``); None: gbtree
    dart: object = None


@dataclass
class EvalSet:
    """Data evaluated after every round (rows grouped by query for ranking).

    ``X`` is float32 C-ordered with NaN for missing values; ``weight``
    float64; ``query_ptr`` (ranking) the row boundaries of the queries;
    ``base_margin`` the margins its rows start from (None: the model's).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    query_ptr: np.ndarray | None = None
    base_margin: np.ndarray | None = None


def train(X, y, weight, objective_name, n_classes, boost_params, tree_params,
          n_threads, rng, *, objective_params=None, query_ptr=None, evals=(),
          eval_metrics=None, callbacks=(), init_booster=None,
          n_categories=None, base_margin=None, tie_salt=0):
    """Run the boosting rounds of an in-process fit; the trained Booster.

    Parameters
    ----------
    X : float32 C-ordered ndarray (NaN = missing), sparse matrix or paged data
    y, weight : ndarray of shape (n_rows,)
        Labels (class indices for classification); float64 weights >= 0.
    objective_name : str or Objective
        A registered name, or an instance (``CallableObjective``).
    n_classes, n_threads : int or None, int
    boost_params, tree_params, rng : BoostParams, TreeParams, Generator
    objective_params : dict, default=None
        Parameters of the objective (``objectives.DEFAULT_PARAMS``).
    query_ptr : ndarray of shape (n_queries + 1,), default=None
        Ranking: rows of query q are ``query_ptr[q]:query_ptr[q + 1]``.
    evals, eval_metrics : sequence of EvalSet, list, default=(), None
        Evaluated after every round, in order, with these metrics (None:
        the objective's default).
    callbacks : sequence, default=()
        Objects of the protocol of :mod:`skboost.callback`.
    init_booster : Booster, default=None
        Continue this model: its base margin and trees are kept (in a new
        Booster), ``boost_params.n_estimators`` rounds added after its last.
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (codes 0 .. n-1 in X), 0 for
        numeric ones; None: every feature is numeric.
    base_margin : array-like of shape (n_rows,) or (n_rows, n_outputs)
        Margins the rows start from instead of the base margin (which is
        still estimated or set, for predictions without one).
    tie_salt : int, default=0
        Ranking: the salt of the keys that order documents of equal scores
        and labels (the ranker's integer ``random_state``).
    """
    check_callbacks(callbacks)
    objective, y, weight = _prepared_objective(
        objective_name, objective_params, query_ptr, X, y, weight,
        init_booster=init_booster, tie_salt=tie_salt, n_threads=n_threads)
    booster = start_booster(objective, y, weight, objective.n_outputs(n_classes),
                            X.shape[1], boost_params, init_booster)
    if sp.issparse(X):
        X = booster._sparse_rows(X)
    first_round = booster.n_rounds
    rounds = InProcessRounds.start(
        booster=booster, objective=objective, X=X, y=y, weight=weight,
        boost_params=boost_params, tree_params=tree_params,
        n_threads=n_threads, rng=rng, n_categories=n_categories,
        base_margin=base_margin,
        evaluator=_Evaluator(booster, objective, evals, eval_metrics,
                             n_threads))
    return _with_position_bias(objective, run_rounds(
        booster, rounds, first_round=first_round,
        n_rounds=boost_params.n_estimators, callbacks=callbacks))


def _with_position_bias(objective, booster):
    """The trained booster, with a debiased ranker's position-bias
    estimates (``lambdarank_unbiased``) when the objective has them."""
    if hasattr(objective, "position_bias"):
        booster.position_bias = objective.position_bias()
    return booster


def _prepared_objective(objective_name, objective_params, query_ptr, X, y,
                        weight, *, init_booster, tie_salt, n_threads):
    """The objective of a fit and the labels and weights as it trains on
    them (ranking: the tie-break keys of the rows set)."""
    objective = resolve_objective(objective_name, objective_params, query_ptr)
    if getattr(X, "out_of_core", False):
        _check_out_of_core(objective, init_booster)
    y = objective.prepare_labels(y)
    weight = objective.training_weight(y, weight)
    if hasattr(objective, "set_row_keys"):   # ranking: ties move with rows
        objective.set_row_keys(X, weight, tie_salt, n_threads)
    return objective, y, weight


def run_rounds(booster, rounds, *, first_round, n_rounds, callbacks):
    """The boosting loop of every engine: ``n_rounds`` rounds from
    ``first_round``, grown by ``rounds`` (a round executor), with the
    callbacks around them.

    A callback may change the learning rate between rounds
    (``booster.set_param``): the executor's ``set_learning_rate`` applies
    it before the next round grows.

    ``rounds.grow(first, count)`` grows rounds ``first .. first + count -
    1`` where the data lives (in this process, on Dask shards, ...) and
    yields each round's index once its trees are in ``booster`` and its
    metrics in ``booster.evals_result``; ``rounds.max_batch`` is how many
    rounds it may grow per call when no callback watches every round
    (a Dask call costs a round trip). Returns the booster the callbacks'
    ``after_training`` leave.

    A ``KeyboardInterrupt`` (Ctrl-C, or raised by a callback) becomes a
    ``TrainingInterrupted`` carrying the booster cut back to the rounds
    completed (``recovery.keep_whole_rounds``): never a round's trees in
    part.
    """
    for callback in callbacks:
        call_callback(callback, "before_training", booster)
    iteration, last = first_round, first_round + n_rounds
    try:
        while iteration < last:
            if any([call_callback(callback, "before_iteration", booster,
                                  iteration, booster.evals_result)
                    for callback in callbacks]):
                return _after_training(booster, callbacks)
            _apply_pending_params(booster, rounds)
            batch = 1 if callbacks else min(last - iteration,
                                             rounds.max_batch)
            for grown in rounds.grow(iteration, batch):
                iteration = grown + 1
                stops = [call_callback(callback, "after_iteration", booster,
                                       grown, booster.evals_result)
                         for callback in callbacks]
                if any(stops):
                    return _after_training(booster, callbacks)
    except TrainingInterrupted:
        raise
    except KeyboardInterrupt as interrupt:
        completed = iteration - first_round
        keep_whole_rounds(booster, first_round, completed)
        raise TrainingInterrupted(booster, completed) from interrupt
    return _after_training(booster, callbacks)


def _apply_pending_params(booster, rounds):
    """Give the round executor what callbacks changed with
    ``booster.set_param`` since the last round (the learning rate)."""
    pending = booster.take_pending_params()
    if "learning_rate" in pending:
        rounds.set_learning_rate(pending["learning_rate"])


def _after_training(booster, callbacks):
    for callback in callbacks:
        booster = call_callback(callback, "after_training", booster) or booster
    return booster


class InProcessRounds:
    """The round executor of a fit in this process: gradients, the round's
    trees grown by the growth driver (``_boost_round``), margins and the
    evaluation sets updated, under the thread tuner."""

    max_batch = 1
    dropout = None   # DART's Dropout (dart.py), None for gbtree

    def __init__(self, *, grower, booster, objective, X, y, weight, weights,
                 raw, boost_params, rng, n_threads, tuner, evaluator):
        self.grower, self.booster, self.objective = grower, booster, objective
        self.X, self.y, self.weight, self.weights = X, y, weight, weights
        self.raw, self.boost_params, self.rng = raw, boost_params, rng
        self.n_threads, self.tuner, self.evaluator = n_threads, tuner, evaluator
        self.weight_sum = float(np.sum(weight))
        self.gpair = np.empty((booster.n_outputs, X.shape[0], 2),
                              dtype=np.float32)

    @classmethod
    def start(cls, *, booster, objective, X, y, weight, boost_params,
              tree_params, n_threads, rng, n_categories, base_margin,
              evaluator):
        """The grower made for X (under the tuner's set-up, with no more
        threads than the load leaves free) and the margins the rounds
        start from."""
        weights = RoundWeights(weight, objective)
        if boost_params.num_parallel_tree > 1:   # a round adds their mean
            tree_params = replace(tree_params, learning_rate=(
                tree_params.learning_rate / boost_params.num_parallel_tree))
        tuner = ThreadTuner(n_threads)
        with tuner.setup():
            grower = make_grower(
                X, tree_params, n_threads, rng, weight=weights.in_sums,
                fixed_hessians=(objective.constant_hessian
                                and boost_params.subsample >= 1.0),
                n_categories=n_categories,
                vector_outputs=(booster.n_outputs if booster.vector_leaf
                                else 0))
            raw = booster.predict_raw(X, n_threads=n_threads,
                                      base_margin=base_margin)
        rounds = cls(grower=grower, booster=booster, objective=objective,
                     X=X, y=y, weight=weight, weights=weights, raw=raw,
                     boost_params=boost_params, rng=rng, n_threads=n_threads,
                     tuner=tuner, evaluator=evaluator)
        if boost_params.dart is not None:
            rounds.dropout = _dropout(boost_params.dart, booster, X, rng)
        return rounds

    def set_learning_rate(self, learning_rate):
        """Grow the following rounds with this learning rate (each of a
        round's ``num_parallel_tree`` trees carries its share)."""
        per_tree = learning_rate / self.boost_params.num_parallel_tree
        # the class trees' single-threaded growers (class_rounds.py) too
        growers = [self.grower, *getattr(self.grower, "_class_copies", ())]
        for grower in growers:
            grower.params = replace(grower.params, learning_rate=per_tree)

    def grow(self, first, n_rounds):
        for iteration in range(first, first + n_rounds):
            with self.tuner.round():  # as many threads as run fastest now
                if self.dropout is None:
                    self._round(iteration, self.raw)
                else:
                    self._dart_round(iteration)
                self.evaluator.add_round(iteration)
            yield iteration

    def _round(self, iteration, margin):
        """Gradients at ``margin``, the round's trees grown and added to
        the booster and to ``margin``."""
        extremes = self.objective.gradient(
            self.y, margin, self.weights.in_gradients, self.gpair,
            self.n_threads)
        maxima = check_gradients(self.gpair, self.weight_sum,
                                 self.objective.name, iteration,
                                 n_threads=self.n_threads, extremes=extremes)
        _boost_round(self.grower, self.booster, self.objective, self.gpair,
                     margin, self.X, self.y, self.weight, self.weights,
                     self.boost_params, self.rng, self.n_threads,
                     gradient_maxima=maxima)

    def _dart_round(self, iteration):
        """A DART round (``dart.py``): the gradients at the margins
        without the dropped trees, the new trees weighted and the dropped
        ones rescaled, in the booster, the margins and the eval sets'."""
        booster, n_before = self.booster, len(self.booster.trees)
        weights = booster.tree_weights or [1.0] * n_before
        dropped = self.dropout.choose(weights)
        if dropped.size == 0:   # as gbtree: the new trees at weight 1
            self._round(iteration, self.raw)
            booster.reweigh_trees((), 1.0, len(booster.trees) - n_before, 1.0)
            return
        old = [weights[k] for k in dropped]
        removed = tree_outputs(booster, dropped, old, self.X, self.n_threads)
        self._round(iteration, self.raw - removed)
        n_new = len(booster.trees) - n_before
        factor, new_weight = self.dropout.factors(
            dropped.size, n_new,
            self.grower.params.learning_rate
            * self.boost_params.num_parallel_tree)
        added = tree_outputs(booster, range(n_before, n_before + n_new),
                             [new_weight] * n_new, self.X, self.n_threads)
        self.raw += added - (1.0 - factor) * removed
        self.evaluator.add_trees(dropped, [-(1.0 - factor) * w for w in old])
        booster.reweigh_trees(dropped, factor, n_new, new_weight)


def _dropout(dart, booster, X, rng):
    """DART's dropout for a fit: its own random stream, spawned from the
    fit's (the row and column samples stay those of gbtree)."""
    if booster.vector_leaf:
        raise ValueError("booster='dart' does not support multi_strategy="
                         "'multi_output_tree' (nor does XGBoost)")
    if getattr(X, "out_of_core", False):
        raise ValueError("booster='dart' is not supported with ExternalData: "
                         "a round re-reads the dropped trees' outputs on "
                         "every row; train it in core")
    seed_seq = getattr(rng.bit_generator, "seed_seq", None)
    return Dropout(dart, 0 if seed_seq is None else seed_seq.spawn(1)[0])


def tree_outputs(booster, indices, coefficients, X, n_threads):
    """``sum_k coefficients[k] * tree_k(X)`` over the trees ``indices`` of
    ``booster``, each in its output's column: (n_rows, n_outputs)."""
    total = np.zeros((X.shape[0], booster.n_outputs))
    for k, coefficient in zip(indices, coefficients):
        column = np.zeros_like(total)
        add_tree_output(booster.trees[k], X, column, booster.tree_group[k],
                        n_threads)
        total += coefficient * column
    return total


def _check_out_of_core(objective, init_booster):
    """What out-of-core training (ExternalData) cannot do: it never holds
    X, so no prediction pass over the training rows."""
    if objective.refit_leaves():
        raise ValueError(
            f"objective {objective.name!r} re-fits its leaves on the "
            "training rows, which ExternalData does not hold: train it in "
            "core")
    if init_booster is not None and init_booster.trees:
        raise ValueError("continuing a model (xgb_model, init_model, "
                         "warm_start) is not supported with ExternalData")


def _boost_round(grower, booster, objective, gpair, raw, X, y, weight,
                 weights, boost_params, rng, n_threads, gradient_maxima=None):
    """Grow the trees of one round on the gradients ``gpair`` and add them
    to ``booster`` and the margins ``raw``.

    Each output gets ``num_parallel_tree`` trees, each on its own row
    sample (and column sample, drawn by the grower), all from the same
    gradients; their leaf values carry the grower's learning rate,
    ``learning_rate / num_parallel_tree``, so the round adds
    ``learning_rate`` times their mean, as XGBoost does.
    ``gradient_maxima`` (``check_gradients``: max |g|, max |h| and the
    least h of each output's pairs, or None) go to the grower of a tree on every row."""
    n_parallel = boost_params.num_parallel_tree
    learning_rate = grower.params.learning_rate
    if booster.vector_leaf:
        # one tree for every output, on all of their gradients
        for _ in range(n_parallel):
            active = _tree_rows(weights.positive, boost_params.subsample,
                                rng)
            tree, leaf_rows = grower.grow(gpair, active)
            booster.add_tree(tree, 0)
            update_margins(tree, leaf_rows, active, X, weights.positive, raw,
                            0, n_threads)
        return
    workers = class_workers(grower, booster.n_outputs,
                            min(n_threads, get_thread_cap()), n_parallel,
                            objective.refit_leaves())
    if workers > 1:   # the class trees side by side (class_rounds.py)
        _grow_class_trees(grower, booster, gpair, raw, X, weights,
                          boost_params, rng, workers)
        return
    # leaf re-fits see the margins the round started from
    start = raw.copy() if objective.refit_leaves() and n_parallel > 1 else raw
    for group in range(booster.n_outputs):
        labels = y[:, group] if y.ndim == 2 else y
        for _ in range(n_parallel):
            active = _tree_rows(weights.positive, boost_params.subsample,
                                rng)
            tree, leaf_rows = grower.grow(
                gpair[group], active, gradient_maxima=(
                    None if gradient_maxima is None
                    else gradient_maxima[group]))
            if objective.refit_leaves():
                _refit_leaf_values(tree, X, labels, start[:, group], weight,
                                   active, objective, group, learning_rate,
                                   n_threads)
            booster.add_tree(tree, group)
            update_margins(tree, leaf_rows, active, X, weights.positive, raw,
                            group, n_threads)


def _grow_class_trees(grower, booster, gpair, raw, X, weights, boost_params,
                      rng, n_workers):
    """One tree per class, ``n_workers`` at a time, each single-threaded;
    row samples drawn first in class order (the sequential loop's draws)."""
    actives = [_tree_rows(weights.positive, boost_params.subsample, rng)
               for _ in range(booster.n_outputs)]

    def finish(group, tree, leaf_rows):
        update_margins(tree, leaf_rows, actives[group], X, weights.positive,
                        raw, group, 1)

    trees = grow_class_trees(grower, gpair, actives, n_workers, finish)
    for group, tree in enumerate(trees):
        booster.add_tree(tree, group)


def start_booster(objective, y, weight, n_outputs, n_features, boost_params,
                   init_booster):
    """The Booster the rounds add to: the base margin (estimated, given, or
    that of ``init_booster``, whose trees it keeps)."""
    if init_booster is not None:
        base_margin = init_booster.base_margin
    elif boost_params.base_score is None:
        base_margin = objective.estimate_base_margin(y, weight, n_outputs)
    else:
        base_margin = objective.base_score_to_margin(boost_params.base_score,
                                                     n_outputs)
    booster = Booster(objective.name, base_margin, n_features)
    booster.objective_params = dict(objective.params)
    booster.n_targets = getattr(objective, "n_targets", 1)
    booster.num_parallel_tree = boost_params.num_parallel_tree
    if boost_params.multi_strategy == "multi_output_tree" and n_outputs > 1:
        if objective.refit_leaves():
            raise ValueError(
                f"multi_strategy='multi_output_tree' does not support "
                f"{objective.name!r}, whose leaves are re-fitted per output; "
                "use multi_strategy='one_output_per_tree'")
        booster.multi_strategy = "multi_output_tree"
    if boost_params.sparse_absent == "zero":
        booster.absent_value = 0.0
    if init_booster is not None:
        for tree, group in zip(init_booster.trees, init_booster.tree_group):
            booster.add_tree(tree, group)
        if init_booster.tree_weights is not None:   # a DART model's
            booster.tree_weights = list(init_booster.tree_weights)
    return booster


class RoundWeights:
    """Where the sample weights enter a round.

    Gradient pairs are kept unweighted in float32, and the weights are
    applied inside the finders' float64 sums (``in_sums``); a callable
    objective that applies them itself gets them (``sample_weight``) and
    the finders unit weights. Unit weights are None (no array of ones: the
    gradient kernels multiply by nothing, the finders skip the weights).
    A row of weight 0 is the same as no row at all: it never takes part
    (``positive``).
    """

    def __init__(self, weight, objective):
        unweighted = bool(np.all(weight == 1.0))
        self.in_gradients = None
        self.in_sums = None if unweighted else weight
        if objective.applies_weights:
            objective.sample_weight = weight
            self.in_sums = None
        self.positive = weight > 0


def resolve_objective(objective, params, query_ptr):
    if isinstance(objective, Objective):
        return objective
    if objective in RANKING_OBJECTIVES:
        return get_objective(objective, params, query_ptr=query_ptr)
    return get_objective(objective, params)


class _Evaluator:
    """Margins of the evaluation sets, kept up to date tree by tree, and
    their metrics after every round (into ``booster.evals_result``)."""

    def __init__(self, booster, objective, evals, metric_names, n_threads):
        self.booster = booster
        self.objective = objective
        self.evals = list(evals)
        self.n_threads = n_threads
        if not metric_names:
            metric_names = [objective.default_metric] if self.evals else []
        self.metrics = [get_metric(name, objective.params)
                        for name in metric_names]
        booster.metric_maximize = {m.name: m.higher_is_better
                                   for m in self.metrics}
        booster.evals_result = {e.name: {m.name: [] for m in self.metrics}
                                for e in self.evals}
        # sparse eval sets as the kernels read them, converted once
        self.inputs = [booster._sparse_rows(e.X) if sp.issparse(e.X) else e.X
                       for e in self.evals]
        self.margins = [
            booster.predict_raw(X, n_threads=n_threads,
                                base_margin=_eval_margin(e, X, booster))
            for e, X in zip(self.evals, self.inputs)]

    def add_round(self, iteration):
        """Add the trees of round ``iteration`` and log every metric."""
        if not self.evals:
            return
        per_round = self.booster.trees_per_round
        first = iteration * per_round
        weights = self.booster.tree_weights
        for data, X, margin in zip(self.evals, self.inputs, self.margins):
            for k in range(first, first + per_round):
                if weights is None or weights[k] == 1.0:
                    add_tree_output(self.booster.trees[k], X, margin,
                                     self.booster.tree_group[k],
                                     self.n_threads)
                else:   # a DART tree at its weight
                    margin += tree_outputs(self.booster, [k], [weights[k]],
                                           X, self.n_threads)
            log_metrics(self.booster.evals_result[data.name], self.metrics,
                        self.objective, margin, data.y, data.weight,
                        data.query_ptr)

    def add_trees(self, indices, coefficients):
        """Add ``coefficients[k]`` times tree ``indices[k]`` to every eval
        set's margins (DART's rescaled trees)."""
        for X, margin in zip(self.inputs, self.margins):
            margin += tree_outputs(self.booster, indices, coefficients, X,
                                   self.n_threads)


def log_metrics(log, metrics, objective, margin, y, weight, query_ptr):
    """Append each metric of an evaluation set's margins to its ``log``
    (``{metric name: [value per round]}``): every engine's evaluation."""
    probabilities = objective.eval_transform(margin)
    for metric in metrics:
        # a user's function sees what predict returns (labels under
        # multi:softmax), as XGBoost's custom metrics do
        prediction = (objective.transform(margin) if metric.on_predictions
                      else probabilities)
        y_, weight_ = y, weight
        if y.ndim == 2 and objective.label_columns == 1:
            # several targets: every (row, target) pair
            y_, prediction, weight_ = flatten_targets(y, prediction, weight)
        log[metric.name].append(metric(y_, prediction, weight_, query_ptr))


def _eval_margin(data, X, booster):
    """The eval set's base margin, checked against the model's outputs."""
    if data.base_margin is None:
        return None
    what = ("base_margin_eval_set" if data.name.startswith("validation_")
            else "base_margin")
    return check_base_margin(data.base_margin, X.shape[0], booster.n_outputs,
                             f"{what} of {data.name!r}")


def _refit_leaf_values(tree, X, y, margin, weight, active, objective, output,
                       learning_rate, n_threads):
    """Set each leaf to ``learning_rate`` times the objective's target (a
    weighted quantile) of the residuals ``y - margin`` of its training rows,
    as XGBoost does for the quantile and absolute errors."""
    rows = np.flatnonzero(active)
    if rows.size == 0:
        return
    leaves = single_tree_booster(tree, X).predict_leaves(X[rows],
                                                           n_threads=n_threads)[:, 0]
    order = np.argsort(leaves, kind="stable")
    leaves, rows = leaves[order], rows[order]
    starts = np.flatnonzero(np.r_[True, leaves[1:] != leaves[:-1]])
    residual = y[rows] - margin[rows]
    for begin, end in zip(starts, np.r_[starts[1:], rows.size]):
        target = objective.leaf_target(residual[begin:end],
                                       weight[rows[begin:end]], output)
        tree.value[leaves[begin]] = learning_rate * target


def single_tree_booster(tree, X):
    """A Booster of one tree and a zero margin, for X: its predictions are
    the tree's outputs, through the predictor ``predict`` uses."""
    booster = Booster("reg:squarederror", np.zeros(1), X.shape[1])
    booster.absent_value = getattr(X, "absent_value", np.nan)
    booster.add_tree(tree, 0)
    return booster


def _tree_rows(positive, subsample, rng):
    """Rows of one tree: those of positive weight (``positive``), each
    kept with probability ``subsample``; without sampling, ``positive``
    itself (read only: no new array a tree)."""
    if subsample >= 1.0:
        return positive
    return positive & _row_sample(positive.shape[0], subsample, rng)


def _row_sample(n_rows, subsample, rng):
    """Rows used by one tree: each kept with probability ``subsample``."""
    if subsample >= 1.0:
        return np.ones(n_rows, dtype=bool)
    return rng.random(n_rows) < subsample


def update_margins(tree, leaf_rows, active, X, weighted, raw, group,
                    n_threads):
    """raw[:, group] += tree(X) for the rows whose margins matter.

    The active rows, whose leaves the grower knows (``leaf_rows``), take
    their leaf's value directly; the other rows of positive weight go
    through the predictor. Either way a row gets exactly the value
    ``predict`` gives it.
    """
    if tree.is_vector_leaf:   # each output's view adds to its column
        for output in range(tree.value.shape[1]):
            update_margins(tree.output_view(output), leaf_rows, active, X,
                            weighted, raw, output, n_threads)
        return
    if leaf_rows is None:
        add_tree_output(tree, X, raw, group, n_threads)
        return
    leaf_rows.add_values(tree, raw, group, n_threads)
    if getattr(leaf_rows, "covers_every_row", False):
        return    # out of core: every row's leaf is known (PositionLeaves)
    if active is weighted:
        return    # every row of positive weight was in the tree
    rest = np.flatnonzero(~active & weighted)
    if rest.size:
        column = raw[rest, group:group + 1].copy()
        add_tree_output(tree, X[rest], column, 0, n_threads)
        raw[rest, group] = column[:, 0]


def add_tree_output(tree, X, raw, group, n_threads):
    """raw[:, group] += tree(X), through the same predictor as predict
    (a vector-leaf tree: raw[:, k] += its output k, for every k)."""
    if tree.is_vector_leaf:
        for output in range(tree.value.shape[1]):
            add_tree_output(tree.output_view(output), X, raw, output,
                             n_threads)
        return
    if is_sparse(X) or tree.has_categorical_splits:
        column = single_tree_booster(tree, X).predict_raw(
            X, n_threads=n_threads)
    else:
        column = np.zeros((X.shape[0], 1))
        predict_raw(X, tree.left_child, tree.right_child, tree.feature,
                    tree.threshold, tree.default_left, tree.value,
                    np.array([0, tree.n_nodes], dtype=np.int64),
                    np.zeros(1, dtype=np.int32), column, n_threads)
    raw[:, group] += column[:, 0]
