"""The scikit-learn estimators: parameter validation and fit/predict wiring.

Numerics live in the booster and the kernels; this layer validates input,
encodes labels and hands plain arrays down.
"""

import inspect
import functools
from numbers import Integral

import numpy as np
from sklearn.base import (BaseEstimator, is_classifier)
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._model.dart import dart_params
from .._model.recovery import TrainingInterrupted
from .._model.train import BoostParams, EvalSet, train
from ..callback import EarlyStopping, EvaluationMonitor
from ..objectives import (DEFAULT_PARAMS, CallableObjective,
                         get_objective)
from .._input.arrays import check_weight, check_X, serving_rows
from .explain import ExplainMixin
from .._io.booster_files import register_estimator_class
from .._io.model_file import invalid_file
from .model_section import (checked_section, estimator_section,
                            install_section, load_estimator, save_estimator)
from .holdout import hold_out, objective_for_rows
from .._model.multi_output import MultiTargetObjective
from .._model.limits import (check_base_score_limit, check_label_limits,
                      check_poisson_delta_step)
from .._model.importance import feature_importances
from .._model.margins import eval_base_margins, intercept, pick_alias, rows_of
from .continued import (adopt_model_categories, continuation_problems,
                        continued_booster, draw_seed, legacy_random_state)
from .compat_params import (check_device_and_verbosity,
                             reject_unknown_keywords, unknown_keyword_advice)
from .._threads import effective_n_threads
from .params import constraints, params_doc, tree_params



# Regression objectives whose labels must be positive (or > -1); scikit-learn
# reads it from the positive_only target tag.
POSITIVE_TARGETS = frozenset({"count:poisson", "reg:gamma", "reg:tweedie",
                              "reg:squaredlogerror"})


def fit_or_restore(fit):
    """``fit`` that never leaves the estimator half-written.

    If it raises, the estimator's attributes are put back as they were
    before the call (unfitted, for an estimator never fitted), except
    after a ``KeyboardInterrupt`` during the boosting rounds once some
    rounds were completed: the estimator then holds those rounds, a whole
    fitted model (``install_booster``), and the interrupt goes on up as a
    ``TrainingInterrupted`` (a ``KeyboardInterrupt``).
    """
    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except TrainingInterrupted as interrupt:
            if not getattr(interrupt, "installed", False):
                _restore(self, before)
            raise
        except BaseException:
            _restore(self, before)
            raise
    return guarded


def keep_interrupted_rounds(estimator, interrupt, category_map):
    """A ``TrainingInterrupted`` after some rounds of this fit: the
    estimator takes them as its model (marked on the interrupt, for
    ``fit_or_restore``)."""
    if interrupt.rounds_completed > 0:
        estimator._install_booster(interrupt.booster, category_map)
        interrupt.installed = True


def _restore(estimator, attributes):
    estimator.__dict__.clear()
    estimator.__dict__.update(attributes)


def metric_list(eval_metric):
    """``eval_metric`` as a list of names and callables (None: default)."""
    if eval_metric is None:
        return None
    if isinstance(eval_metric, str) or callable(eval_metric):
        return [eval_metric]
    return list(eval_metric)


def eval_set_weights(sample_weight_eval_set, n_pairs):
    """``sample_weight_eval_set`` as a list with one entry (None: unit
    weights) per ``eval_set`` pair."""
    if sample_weight_eval_set is None:
        return [None] * n_pairs
    weights = list(sample_weight_eval_set)
    if len(weights) != n_pairs:
        raise ValueError(
            f"sample_weight_eval_set has {len(weights)} entries for "
            f"{n_pairs} eval_set pairs")
    return weights


def eval_set_entries(eval_set, sample_weight_eval_set, base_margin_eval_set):
    """The ``(pair, weight, margin)`` of every ``eval_set`` pair, checked
    (each pair an ``(X, y)``; weights and margins one entry per pair, and
    none without an eval_set): every engine's eval-set arguments."""
    if eval_set is None:
        for name, value in (("sample_weight_eval_set", sample_weight_eval_set),
                            ("base_margin_eval_set", base_margin_eval_set)):
            if value is not None:
                raise ValueError(f"{name} needs an eval_set")
        return []
    eval_set = list(eval_set)
    weights = eval_set_weights(sample_weight_eval_set, len(eval_set))
    margins = eval_base_margins(base_margin_eval_set, len(eval_set))
    for pair in eval_set:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError("eval_set must be a list of (X, y) pairs")
    return list(zip(eval_set, weights, margins))


def _check_eval_targets(y, n_rows, n_targets, index):
    """An eval_set's y of a model of several targets: (n_rows, n_targets)."""
    if y.shape != (n_rows, n_targets):
        raise ValueError(
            f"eval_set[{index}]: y must have shape ({n_rows}, {n_targets}) "
            f"(one row per row of X, a column per target), got {y.shape}")


class EstimatorBinding:
    """What ``get_booster`` binds to its booster (``Booster.bind_input``):
    the estimator's conversion of X, its ``n_jobs``, and the estimator
    itself (its model file, continued training)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def check_input(self, X):
        return check_X(self.estimator, X, reset=False)

    def serving_rows(self, X):
        """X the predictor reads in place (``serving_rows``), or None."""
        return serving_rows(self.estimator, X)

    @property
    def n_jobs(self):
        return self.estimator.n_jobs


# class -> its constructor's parameter names (_BoostBase._get_param_names)
_PARAM_NAMES = {}


def _accepted_keywords(cls):
    """The keywords ``cls(...)`` takes: its signature's, and, when its
    ``__init__`` passes ``**kwargs`` on (scikit-learn's subclass pattern,
    ``def __init__(self, *, extra=1, **kw): super().__init__(**kw)``), those
    of the class it passes them to."""
    names = set(cls._get_param_names())
    parameters = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        parent = next((base for base in cls.__mro__[1:]
                       if "__init__" in vars(base)), None)
        if parent is not None and hasattr(parent, "_get_param_names"):
            names |= _accepted_keywords(parent)
    return names


class _BoostBase(ExplainMixin, BaseEstimator):
    """Shared parameters, fit wiring and prediction of the estimators."""

    # the common parameters' constraints come from the one table
    # (params.py); each estimator adds its own (objective, ...)
    _parameter_constraints = constraints()

    def __setstate__(self, state):
        super().__setstate__(state)
        # a pickle of an earlier version lacks the parameters added since:
        # they take their defaults (what the old model was trained with)
        defaults = {name: p.default for name, p in inspect.signature(
            type(self).__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}
        for name in self._get_param_names():
            if name not in self.__dict__ and name in defaults:
                setattr(self, name, defaults[name])

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_estimator_class(cls)   # model files name it

    def __new__(cls, *args, **kwargs):
        # XGBoost's and LightGBM's names get a TypeError that says what to
        # use; __init__ keeps its explicit signature (scikit-learn's rule)
        known = _accepted_keywords(cls)
        reject_unknown_keywords(cls, {
            name: value for name, value in kwargs.items()
            if name not in known})
        return super().__new__(cls)

    @classmethod
    def _get_param_names(cls):
        """The constructor's parameter names, read off its signature once
        per class: ``clone`` (so every grid-search candidate) builds the
        estimator from ~40 keywords, and reading the signature costs about
        50 us each time."""
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = tuple(super()._get_param_names())
        return list(names)

    def set_params(self, **params):
        """Set parameters (scikit-learn's ``set_params``); an XGBoost or
        LightGBM name gets a ValueError that says which parameter to use.

        Parameters
        ----------
        **params : dict
            Estimator parameters.

        Returns
        -------
        self : estimator instance
        """
        unknown = [name for name in params
                   if "__" not in name and name not in self._get_param_names()]
        if unknown:
            raise ValueError(f"Invalid parameter for {type(self).__name__}: "
                             + unknown_keyword_advice(type(self), unknown))
        return super().set_params(**params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags

    def _objective_params(self):
        """Parameters of the objective (``objectives.DEFAULT_PARAMS``)."""
        params = {}
        if self.max_delta_step is not None:
            params["poisson_max_delta_step"] = float(self.max_delta_step)
        return params

    def _max_delta_step(self, objective):
        """The leaf clipping: the parameter, else XGBoost's default (0.7 for
        ``count:poisson``, no clipping otherwise)."""
        if self.max_delta_step is not None:
            return float(self.max_delta_step)
        if getattr(objective, "name", objective) == "count:poisson":
            return DEFAULT_PARAMS["poisson_max_delta_step"]
        return 0.0

    def _train(self, X, y, sample_weight, objective, n_classes=None, *,
               eval_set=None, sample_weight_eval_set=None, verbose=False,
               query_ptr=None, eval_query_ptrs=None, encode_labels=None,
               base_margin=None, base_margin_eval_set=None, init_model=None,
               eval_labels=None):
        check_device_and_verbosity(self)
        self.__dict__.pop("conformal_", None)   # calibrated the old model
        if init_model is not None:
            X = adopt_model_categories(self, X, init_model)
        weight = check_weight(sample_weight, X)
        if eval_labels is None:   # (survival labels are checked by it)
            self._check_value_limits(y, objective)
        evals = self._eval_sets(eval_set, sample_weight_eval_set,
                                eval_query_ptrs, encode_labels,
                                base_margin_eval_set,
                                n_targets=getattr(objective, "n_targets", 1),
                                eval_labels=eval_labels)
        if self.early_stopping_rounds is not None and not evals:
            if getattr(X, "out_of_core", False):
                raise ValueError(
                    "early_stopping_rounds with ExternalData needs an "
                    "eval_set (no hold-out is split off the chunks)")
            X, y, weight, query_ptr, objective, base_margin, holdout = (
                self._hold_out(X, y, weight, query_ptr, objective,
                               base_margin))
            evals = [holdout]
        init, n_rounds = self._initial_booster(objective, n_classes,
                                               init_model)
        n_parallel = self._round_layout()[1]
        if n_rounds == 0:
            return self  # warm start: the model has its rounds already
        callbacks = self._training_callbacks(
            evals, verbose, (0 if init is None else init.n_rounds) + n_rounds)
        seed = draw_seed(self.random_state)
        category_map = getattr(self, "_category_map_", None)
        try:
            booster = self._train_booster(
                X, y, weight, objective, n_classes, n_rounds, n_parallel,
                seed, init, category_map, query_ptr=query_ptr, evals=evals,
                callbacks=callbacks, base_margin=base_margin)
        except TrainingInterrupted as interrupt:
            keep_interrupted_rounds(self, interrupt, category_map)
            raise
        return self._install_booster(booster, category_map)

    def _train_booster(self, X, y, weight, objective, n_classes, n_rounds,
                       n_parallel, seed, init, category_map, *, query_ptr,
                       evals, callbacks, base_margin):
        """The booster of this fit: ``train`` with the parameters."""
        return train(
            X, y, weight, objective, n_classes,
            BoostParams(n_estimators=n_rounds, subsample=self.subsample,
                        base_score=self.base_score,
                        sparse_absent=self.sparse_absent,
                        num_parallel_tree=n_parallel,
                        multi_strategy=self.multi_strategy,
                        dart=dart_params(self)),
            tree_params(self, max_delta_step=self._max_delta_step(objective),
                        n_features=X.shape[1]),
            effective_n_threads(self.n_jobs),
            np.random.default_rng(seed if init is None else [seed, init.n_rounds]),
            objective_params=self._objective_params(), query_ptr=query_ptr,
            evals=evals, eval_metrics=metric_list(self.eval_metric),
            callbacks=callbacks, init_booster=init,
            n_categories=(None if category_map is None
                          else category_map.n_categories()),
            base_margin=base_margin,
            tie_salt=tie_salt(self.random_state))

    def _install_booster(self, booster, category_map):
        """Make ``booster`` (trained on this fit's data) the fitted model:
        ``booster_``, ``evals_result_``, the features' names and
        categories on the booster. Every engine ends its fit here."""
        booster.category_map = category_map
        self.booster_ = booster
        self.evals_result_ = booster.evals_result
        names = getattr(self, "feature_names_in_", None)
        booster.feature_names = None if names is None else list(names)
        return self

    def _hold_out(self, X, y, weight, query_ptr, objective, base_margin):
        """The training rows kept and the hold-out of early stopping
        without an eval_set (``holdout.py``), base margins split alike."""
        n_rows = X.shape[0]
        rows, query_ptr, holdout = hold_out(
            X, y, weight, query_ptr, self.validation_fraction,
            stratify=is_classifier(self) and y.ndim == 1,
            random_state=legacy_random_state(self.random_state))
        if base_margin is not None:
            holdout.base_margin = rows_of(
                base_margin, np.delete(np.arange(n_rows), rows), n_rows)
            base_margin = rows_of(base_margin, rows, n_rows)
        return (X[rows], y[rows], weight[rows], query_ptr,
                objective_for_rows(objective, rows), base_margin, holdout)

    def _initial_booster(self, objective, n_classes, init_model):
        """The model the fit continues (``xgb_model`` or ``warm_start``; None
        for a fresh fit) and the number of rounds to add."""
        n_rounds = self._round_layout()[0]
        if init_model is not None:
            init = continued_booster(self, init_model, objective, n_classes)
            return init, n_rounds  # rounds added to the given model
        init = self._warm_start_booster(objective, n_classes)
        return init, n_rounds - (0 if init is None else init.n_rounds)

    def _round_layout(self):
        """(boosting rounds, trees per output and round) of a fit."""
        return self.n_estimators, self.num_parallel_tree

    def _targets_objective(self, objective, y):
        """The objective of ``y``: a 2-D y (several targets) trains one
        output per target (``_multi_output``)."""
        if y.ndim == 1:
            return objective
        n_targets = y.shape[1]
        if isinstance(objective, CallableObjective):
            # the function sees (n, n_targets) labels and margins
            wrapped = CallableObjective(objective.function, objective.params,
                                        n_outputs=n_targets)
            wrapped.n_targets = n_targets
            return wrapped
        base = get_objective(objective, self._objective_params())
        if base.n_outputs(None) != 1:
            raise ValueError(
                f"objective={objective!r} with quantile_alpha="
                f"{getattr(self, 'quantile_alpha', None)!r} has several "
                "outputs per target: a 2-D y needs one quantile")
        return MultiTargetObjective(base, n_targets)
    def _check_value_limits(self, y, objective):
        """Labels, ``base_score`` and ``max_delta_step`` within the limits
        that keep gradients and gains finite (``_model/limits.py``)."""
        if not is_classifier(self):   # a classifier's labels are indices
            check_label_limits(y)
        check_base_score_limit(self.base_score)
        check_poisson_delta_step(getattr(objective, "name", objective),
                                 self.max_delta_step)

    def _warm_start_booster(self, objective, n_classes):
        """The fitted booster to continue (``warm_start``), else None."""
        booster = getattr(self, "booster_", None)
        if not self.warm_start or booster is None:
            return None
        problems = []
        n_rounds, n_parallel = self._round_layout()
        if n_rounds < booster.n_rounds:
            problems.append(f"n_estimators={self.n_estimators} is below the "
                            f"{booster.n_rounds} rounds already fitted")
        problems += continuation_problems(self, booster, objective,
                                          "the first fit")
        if problems:
            raise ValueError("warm_start=True can not add rounds: "
                             + "; ".join(problems))
        return booster

    def _eval_sets(self, eval_set, sample_weight_eval_set, query_ptrs,
                   encode_labels, base_margin_eval_set=None, n_targets=1,
                   eval_labels=None):
        """The ``eval_set`` pairs as validated :class:`EvalSet` objects
        (``eval_labels``: reads a pair's y in its own form, survival)."""
        evals = []
        for i, (pair, weight, margin) in enumerate(eval_set_entries(
                eval_set, sample_weight_eval_set, base_margin_eval_set)):
            X_eval = check_X(self, pair[0], reset=False)
            if eval_labels is not None:
                evals.append(_labelled_eval_set(
                    i, X_eval, eval_labels(pair[1]),
                    check_weight(weight, X_eval,
                                 f"sample_weight_eval_set[{i}]"), margin))
                continue
            if n_targets > 1:
                y_eval = np.asarray(pair[1])
                _check_eval_targets(y_eval, X_eval.shape[0], n_targets, i)
            else:
                y_eval = _eval_target(pair[1], X_eval.shape[0], i)
            y_eval = (encode_labels(y_eval) if encode_labels is not None
                      else y_eval.astype(np.float64))
            if encode_labels is None:
                check_label_limits(y_eval, f"eval_set[{i}]'s y")
            evals.append(EvalSet(
                f"validation_{i}", X_eval, y_eval,
                check_weight(weight, X_eval,
                             f"sample_weight_eval_set[{i}]"),
                None if query_ptrs is None else query_ptrs[i], margin))
        return evals

    def _training_callbacks(self, evals, verbose, total_rounds=None):
        callbacks = list(self.callbacks or [])
        if self.early_stopping_rounds is not None:
            if not evals:
                raise ValueError("early_stopping_rounds needs an eval_set: "
                                 "the metric of its last pair decides when "
                                 "to stop")
            callbacks.append(EarlyStopping(self.early_stopping_rounds))
        if verbose:
            period = 1 if verbose is True else int(verbose)
            callbacks.append(EvaluationMonitor(period,
                                               total_rounds=total_rounds))
        return callbacks

    def _iteration_range(self, iteration_range):
        """After early stopping, None means the rounds up to the best."""
        best = getattr(self.booster_, "best_iteration", None)
        if iteration_range is None and best is not None:
            return (0, best + 1)
        return iteration_range

    def _raw_predict(self, X, iteration_range, base_margin=None):
        raw = self._serving_margins(X, iteration_range, base_margin)
        if raw is not None:
            return raw
        check_is_fitted(self)
        if hasattr(X, "_predict_chunks"):   # ExternalData: chunk by chunk
            if base_margin is not None:
                raise ValueError("base_margin is not supported with "
                                 "ExternalData: predict on arrays instead")
            parts = [self._raw_predict(chunk, iteration_range)
                     for chunk in X._predict_chunks()]
            return np.concatenate(parts)
        X = check_X(self, X, reset=False)
        return self.booster_.predict_raw(X,
                                         self._iteration_range(iteration_range),
                                         effective_n_threads(self.n_jobs),
                                         base_margin=base_margin)

    def _serving_margins(self, X, iteration_range, base_margin):
        """The margins of the serving fast path (a float ndarray or a
        DataFrame of the training float columns, read in place; see
        ``serving_rows``), or None: then the full path converts X and
        raises its errors."""
        booster = self.__dict__.get("booster_")
        if booster is None or base_margin is not None:
            return None
        rows = serving_rows(self, X)
        if rows is None:
            return None
        return booster.serving_margins(
            rows, self._iteration_range(iteration_range), self.n_jobs)

    @property
    def categories_(self):
        """Training categories of the categorical features.

        Returns
        -------
        categories : dict
            ``{feature name (or index): ndarray of its categories}``, in
            code order; empty when no feature is categorical.
        """
        check_is_fitted(self)
        category_map = getattr(self, "_category_map_", None)
        if category_map is None:
            return {}
        names = getattr(self, "feature_names_in_", None)
        return {(names[f] if names is not None else int(f)): c.copy()
                for f, c in zip(category_map.features,
                                category_map.categories)}

    def _prediction_objective(self):
        """The fitted objective, for its link function."""
        return get_objective(self.booster_.objective,
                             getattr(self.booster_, "objective_params", None))

    @property
    def best_iteration(self):
        """Best boosting round (from 0) found by early stopping.

        Predictions use the rounds up to it unless ``iteration_range`` says
        otherwise. Only set after a fit with ``early_stopping_rounds``.
        """
        check_is_fitted(self)
        best = getattr(self.booster_, "best_iteration", None)
        if best is None:
            raise AttributeError("best_iteration is only defined after a fit "
                                 "with early_stopping_rounds")
        return best

    @property
    def n_estimators_(self):
        """Number of boosting rounds in the fitted model.

        ``n_estimators`` for a plain fit, the rounds of the continued model
        plus ``n_estimators`` after ``fit(..., xgb_model=...)``, and
        the rounds actually run after early stopping (which keeps the
        rounds after the best one: ``best_iteration < n_estimators_``).
        """
        check_is_fitted(self)
        return self.booster_.n_rounds

    @property
    def intercept_(self):
        """The fitted base score (XGBoost's ``intercept_``).

        Returns
        -------
        intercept : ndarray of shape (n_outputs,)
            In prediction space for a model with one output (the
            probability of ``classes_[1]`` for ``binary:logistic``, the
            mean for ``count:poisson``), the per-class margins for a
            multiclass model. Predictions with a ``base_margin`` do not
            use it.
        """
        check_is_fitted(self)
        return intercept(self.booster_)

    @property
    def best_score(self):
        """Score of the early-stopping metric at :attr:`best_iteration`."""
        check_is_fitted(self)
        best = getattr(self.booster_, "best_score", None)
        if best is None:
            raise AttributeError("best_score is only defined after a fit "
                                 "with early_stopping_rounds")
        return best

    def evals_result(self):
        """The evaluation log of the last fit (XGBoost's method).

        Returns
        -------
        evals_result : dict
            ``{"validation_i": {metric: [value per round]}}``, the same as
            ``evals_result_``.
        """
        check_is_fitted(self)
        return self.evals_result_

    def apply(self, X, iteration_range=None):
        """Leaf reached by each sample in each tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).

        Returns
        -------
        leaves : ndarray of shape (n_samples, n_trees), int32
            Tree-local node index of the leaf. For multiclass models the
            trees of a round are consecutive, one per class.
        """
        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        return self.booster_.predict_leaves(
            X, self._iteration_range(iteration_range),
            effective_n_threads(self.n_jobs))

    def get_booster(self):
        """The trained ensemble.

        Returns
        -------
        booster : Booster
            Base margin and trees of the fitted model.
        """
        check_is_fitted(self)
        self.booster_.bind_input(EstimatorBinding(self))   # reads X like us
        return self.booster_

    def model_section(self):
        """What a model file records of this estimator around its booster
        (``_estimators/model_section.py``)."""
        return estimator_section(self)

    @classmethod
    def from_model_section(cls, booster, section, *, source, saved_as=None):
        """A fitted estimator of this class from a model file's booster and
        section (checked against the class; ValueError naming ``source``)."""
        estimator = cls()
        with invalid_file(source):
            params = checked_section(estimator, booster, section, saved_as)
        install_section(estimator, booster, section, params)
        return estimator

    def _saved_objective(self, params):
        """The booster objective a model file of these parameters holds
        (the ``objective`` parameter; a classifier's may turn multiclass)."""
        return params.get("objective", self.get_params()["objective"])

    @classmethod
    def _around_objective(cls, objective):
        """An unfitted estimator of this class training ``objective``."""
        return cls(objective=objective)

    @classmethod
    def around_booster(cls, booster):
        """A fitted estimator of this class around a booster that has none
        (one unpickled on its own, or built by ``train``): classes
        ``0 .. K-1``, its feature names and categories, objective
        parameters as estimator parameters. Model files use it to save such
        a booster."""
        if booster.objective == CallableObjective.name:
            raise ValueError(
                "this booster was trained with a custom objective and has "
                "lost its estimator: save the estimator "
                "(estimator.save_model), whose file records the link of the "
                "objective")
        estimator = cls._around_objective(booster.objective)
        if is_classifier(estimator):
            n_classes = 2 if booster.n_outputs == 1 else booster.n_outputs
            estimator.classes_ = np.arange(n_classes)
            estimator.n_classes_ = n_classes
        params = estimator.get_params()
        estimator.set_params(**{
            name: value for name, value in (booster.objective_params or {}).items()
            if name in params and value is not None})
        if booster.absent_value == 0.0:
            estimator.set_params(sparse_absent="zero")
        estimator.n_features_in_ = booster.n_features
        if booster.feature_names is not None:
            estimator.feature_names_in_ = np.asarray(booster.feature_names,
                                                     dtype=object)
        estimator._category_map_ = booster.category_map
        estimator.booster_ = booster
        return estimator

    @property
    def feature_importances_(self):
        """Normalised feature importances of type ``importance_type``.

        Returns
        -------
        importances : ndarray of shape (`n_features_in_`,)
            Non-negative, summing to 1 (all zeros when no tree has a split).
        """
        check_is_fitted(self)
        return feature_importances(self.booster_, self.importance_type)

    def save_model(self, fname, format="skboost"):
        """Save the fitted model to a versioned JSON or UBJSON file.

        The file holds everything needed to predict again: parameters,
        classes, feature names, objective, base margin, trees and best
        iteration; a loaded model's predictions are bit-identical.
        Parameters that are not JSON values (a ``RandomState`` instance,
        callables) are saved as None. The file is written atomically.

        Parameters
        ----------
        fname : str or path-like
            Path of the file to write (replaced if it exists). Its suffix
            chooses the format, as in XGBoost: ``.json`` for JSON, ``.ubj``
            for Universal Binary JSON (the same document in binary); any
            other suffix is a ValueError.
        format : {"skboost", "xgboost"}, default="skboost"
            ``"xgboost"`` writes XGBoost's ``save_model`` schema (3.x, JSON or
            UBJSON by the suffix), which ``xgboost.Booster(model_file=...)``
            and ``XGBClassifier().load_model`` load and predict with as
            skboost does (to float32 rounding of leaf values and base
            margins). What XGBoost's format can not hold is a ValueError:
            a custom objective, ``sparse_absent="zero"``, and categorical
            features named by ``categorical_features`` whose categories are
            not the codes 0 .. k-1 (XGBoost reads those values as codes).
            A category value unseen in training goes where missing values
            go in skboost, left in XGBoost; class labels other than
            0 .. K-1 are XGBoost's class indices.
        """
        check_is_fitted(self)
        save_estimator(self, fname, format)

    def load_model(self, fname):
        """Load a model saved by :meth:`save_model` into this estimator.

        The saved parameters and fitted state replace this estimator's.
        The file is validated; nothing in it is executed.

        Parameters
        ----------
        fname : str or path-like
            Path of a file written by :meth:`save_model` (UBJSON when the
            name ends in ``.ubj``, else JSON).

        Returns
        -------
        self : object
            The estimator, fitted.

        Raises
        ------
        ValueError
            If the file is not a valid model of this estimator class
            (truncated, corrupted, another format version, an inconsistent
            tree, ...).
        """
        self.__dict__.pop("_fitted_on_queries", None)  # unknown from a file
        return load_estimator(self, fname)

    @classmethod
    def load(cls, fname):
        """A new fitted estimator from a file written by :meth:`save_model`.

        Parameters
        ----------
        fname : str or path-like
            Path of the model file.

        Returns
        -------
        estimator : object
            A new instance of this class.
        """
        return cls().load_model(fname)


_COMMON_PARAMS_DOC = params_doc()


# The fitted attributes every estimator has (after its own, if any).
_COMMON_ATTRIBUTES_DOC = """    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when X had string column names.
    booster_ : Booster
        The trained ensemble.
    feature_importances_ : ndarray of shape (`n_features_in_`,)
        Importances of type ``importance_type``, normalised to sum to 1.
    evals_result_ : dict
        Metrics of the ``eval_set`` pairs (or of the internal hold-out of
        early stopping, ``"validation"``) per round; empty without them.
    categories_ : dict
        Training categories of each categorical feature, by feature name
        (or index), in code order; empty without categorical features.
    best_iteration, best_score
        Best round and its score, after early stopping.
"""

_EVAL_FIT_DOC = """eval_set : list of (X, y) pairs, default=None
            Data evaluated after every round with ``eval_metric``, named
            ``validation_0``, ``validation_1``, ... in ``evals_result_``;
            early stopping watches the last pair.
        sample_weight_eval_set : list of array-like, default=None
            Weights of the ``eval_set`` pairs (None entries: unit weights).
        verbose : bool or int, default=False
            Print the metrics every round (True) or every ``verbose`` rounds,
            with the elapsed time and, on long fits, an estimate of the time
            left; the same lines go to the ``"skboost"`` logger
            (:class:`skboost.callback.EvaluationMonitor`).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Margin each row starts from instead of the fitted intercept
            (XGBoost's ``base_margin``): one per row, one per row and class
            (column) for a multiclass model. The trees are grown on the
            gradients at ``base_margin + trees``; give the same margins to
            ``predict`` (``base_margin=``) to predict on top of them. The
            intercept (``intercept_``) is still fitted, for predictions
            without a base margin (XGBoost's behaviour).
        base_margin_eval_set : list of array-like, default=None
            Base margins of the ``eval_set`` pairs (None entries: the
            intercept).
        xgb_model : skboost estimator, Booster, str or path-like, default=None
            Continue training this model: a fitted estimator of this class,
            its ``get_booster()``, or the path of a model it saved. Its
            trees are kept and ``n_estimators`` rounds are added (XGBoost's
            meaning; ``warm_start`` counts ``n_estimators`` in total
            instead). Without row or column sampling, 8 rounds and then 8
            more give the 16-round model bit for bit. The data must have the
            model's features (and names, categories), classes and objective:
            otherwise a ValueError.
        init_score : array-like, default=None
            LightGBM's name of ``base_margin`` (give one of them).
        eval_init_score : list of array-like, default=None
            LightGBM's name of ``base_margin_eval_set``.
        init_model : skboost estimator, Booster, str or path-like, default=None
            LightGBM's name of ``xgb_model``."""


def _labelled_eval_set(index, X_eval, labels, weight, margin):
    """An eval set whose labels are already read (survival times or
    intervals), their rows checked against X's."""
    if labels.shape[0] != X_eval.shape[0]:
        raise ValueError(f"eval_set[{index}]: y has {labels.shape[0]} rows, "
                         f"X has {X_eval.shape[0]}")
    return EvalSet(f"validation_{index}", X_eval, labels, weight, None,
                   margin)


def _eval_target(y, n_rows, index):
    """An eval_set pair's targets, 1-D (a column vector is raveled with a
    DataConversionWarning, as the training ``y`` is)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(
            f"eval_set[{index}]: y must be 1-D (or a column vector) with one "
            f"label per row of X ({n_rows}), got shape {y.shape}")
    return y


def _evaluation_kwargs(eval_set, sample_weight_eval_set, verbose,
                       base_margin=None, base_margin_eval_set=None,
                       xgb_model=None, init_score=None, eval_init_score=None,
                       init_model=None):
    """``_train``'s keywords from ``fit``'s, LightGBM's names resolved."""
    return dict(
        eval_set=eval_set, sample_weight_eval_set=sample_weight_eval_set,
        verbose=verbose, **margin_kwargs(
            base_margin, base_margin_eval_set, xgb_model, init_score,
            eval_init_score, init_model))


def margin_kwargs(base_margin, base_margin_eval_set, xgb_model, init_score,
                  eval_init_score, init_model):
    """The base margins and the model to continue, LightGBM's names
    (``init_score``, ``eval_init_score``, ``init_model``) resolved: every
    engine's ``fit``."""
    return dict(
        base_margin=pick_alias("base_margin", base_margin, "init_score",
                               init_score),
        base_margin_eval_set=pick_alias(
            "base_margin_eval_set", base_margin_eval_set, "eval_init_score",
            eval_init_score),
        init_model=pick_alias("xgb_model", xgb_model, "init_model",
                              init_model))


def class_weighted(class_weight, y, sample_weight, X):
    """``sample_weight`` times the weight of each row's class
    (scikit-learn's ``class_weight``: "balanced" is
    ``n_samples / (n_classes * count of the class)``, counted without the
    sample weights)."""
    if class_weight is None:
        return sample_weight
    try:
        per_row = compute_sample_weight(class_weight, y)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"class_weight={class_weight!r}: {exc}") from None
    return check_weight(sample_weight, X) * per_row


def tie_salt(random_state):
    """The salt of the ranker's per-row tie-break keys: an integer
    ``random_state`` itself, else 0. The keys thus stay the same from fit
    to fit (no other randomness is involved without sampling)."""
    if isinstance(random_state, Integral):
        return int(random_state)
    return 0
