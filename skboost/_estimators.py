"""The scikit-learn estimators: parameter validation and fit/predict wiring.

Numerics live in the booster and the kernels; this layer validates input,
encodes labels and hands plain arrays down.
"""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (BaseEstimator, ClassifierMixin, RegressorMixin,
                          _fit_context, is_classifier)
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._booster import BoostParams, EvalSet, train
from .callback import EarlyStopping, EvaluationMonitor
from .metrics import get_metric
from .objectives import (CLASSIFICATION_OBJECTIVES, RANKING_OBJECTIVES,
                         REGRESSION_OBJECTIVES, DEFAULT_PARAMS,
                         CallableObjective, get_objective)
from ._data import check_weight, check_X, reject_external_weight
from ._explain import ExplainMixin
from ._holdout import hold_out, objective_for_rows
from ._query_weights import check_per_query_sample_weight, per_row_weight
from ._multi_output import (MULTI_STRATEGIES, MultiTargetObjective,
                            check_multilabel, check_targets)
from ._limits import (check_base_score_limit, check_label_limits,
                      check_poisson_delta_step)
from ._importance import IMPORTANCE_TYPES, feature_importances
from ._margins import eval_base_margins, intercept, pick_alias, rows_of
from ._continue import (continuation_problems, continued_booster,
                        draw_seed, legacy_random_state)
from ._compat_params import (check_device_and_verbosity,
                             reject_unknown_keywords, unknown_keyword_advice)
from ._threads import effective_n_threads
from .tree.constraints import (parse_feature_weights, parse_interactions,
                               parse_monotone)
from .tree.driver import TreeParams

_FRACTION = Interval(Real, 0.0, 1.0, closed="right")
_NON_NEGATIVE = Interval(Real, 0.0, None, closed="left")


# Regression objectives whose labels must be positive (or > -1); scikit-learn
# reads it from the positive_only target tag.
POSITIVE_TARGETS = frozenset({"count:poisson", "reg:gamma", "reg:tweedie",
                              "reg:squaredlogerror"})


def _metric_list(eval_metric):
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


def _check_eval_targets(y, n_rows, n_targets, index):
    """An eval_set's y of a model of several targets: (n_rows, n_targets)."""
    if y.shape != (n_rows, n_targets):
        raise ValueError(
            f"eval_set[{index}]: y must have shape ({n_rows}, {n_targets}) "
            f"(one row per row of X, a column per target), got {y.shape}")


# class -> its constructor's parameter names (_BoostBase._get_param_names)
_PARAM_NAMES = {}


class _BoostBase(ExplainMixin, BaseEstimator):
    """Shared parameters, fit wiring and prediction of the estimators."""

    _parameter_constraints = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0.0, 1.0, closed="right")],
        "tree_method": [StrOptions({"exact", "approx", "hist"})],
        "max_bin": [Interval(Integral, 2, 65535, closed="both")],
        "approx_proposal": [StrOptions({"global", "local"})],
        "grow_policy": [StrOptions({"depthwise", "lossguide"})],
        "max_leaves": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": [Integral, None],
        "gamma": [_NON_NEGATIVE],
        "min_child_weight": [_NON_NEGATIVE],
        "max_delta_step": [_NON_NEGATIVE, None],
        "subsample": [_FRACTION],
        "colsample_bytree": [_FRACTION],
        "colsample_bylevel": [_FRACTION],
        "colsample_bynode": [_FRACTION],
        "reg_alpha": [_NON_NEGATIVE],
        "reg_lambda": [_NON_NEGATIVE],
        "base_score": [Interval(Real, None, None, closed="neither"), None],
        "random_state": ["random_state", np.random.Generator],
        "missing": [Real],
        "sparse_absent": [StrOptions({"missing", "zero"})],
        "categorical_features": ["array-like", None],
        "max_cat_to_onehot": [Interval(Integral, 1, None, closed="left")],
        "max_cat_threshold": [Interval(Integral, 1, None, closed="left")],
        # checked against X at fit (tree/constraints.py: parse_*)
        "monotone_constraints": [str, dict, "array-like", None],
        "interaction_constraints": [str, "array-like", None],
        "feature_weights": ["array-like", None],
        "importance_type": [StrOptions(set(IMPORTANCE_TYPES))],
        "eval_metric": [str, list, callable, None],
        "early_stopping_rounds": [Interval(Integral, 1, None, closed="left"),
                                  None],
        "callbacks": [list, None],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "warm_start": ["boolean"],
        "num_parallel_tree": [Interval(Integral, 1, None, closed="left")],
        "multi_strategy": [StrOptions(set(MULTI_STRATEGIES))],
        "verbosity": [Interval(Integral, 0, 3, closed="both"), None],
        "device": [str, None],
    }

    def __init__(self, *, n_estimators=100, max_depth=6, learning_rate=0.3,
                 objective=None, tree_method="hist", max_bin=256,
                 approx_proposal="global", grow_policy="depthwise",
                 max_leaves=0, n_jobs=None, gamma=0.0,
                 min_child_weight=1.0, max_delta_step=None, subsample=1.0,
                 colsample_bytree=1.0, colsample_bylevel=1.0,
                 colsample_bynode=1.0, reg_alpha=0.0, reg_lambda=1.0,
                 base_score=None, random_state=None, missing=np.nan,
                 sparse_absent="missing", categorical_features=None,
                 max_cat_to_onehot=4, max_cat_threshold=64,
                 monotone_constraints=None, interaction_constraints=None,
                 feature_weights=None,
                 importance_type="gain", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None,
                 validation_fraction=0.1, warm_start=False, verbosity=None,
                 device="cpu", num_parallel_tree=1,
                 multi_strategy="one_output_per_tree"):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.objective = objective
        self.tree_method = tree_method
        self.max_bin = max_bin
        self.approx_proposal = approx_proposal
        self.grow_policy = grow_policy
        self.max_leaves = max_leaves
        self.n_jobs = n_jobs
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.max_delta_step = max_delta_step
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.colsample_bylevel = colsample_bylevel
        self.colsample_bynode = colsample_bynode
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.base_score = base_score
        self.random_state = random_state
        self.missing = missing
        self.sparse_absent = sparse_absent
        self.categorical_features = categorical_features
        self.max_cat_to_onehot = max_cat_to_onehot
        self.max_cat_threshold = max_cat_threshold
        self.monotone_constraints = monotone_constraints
        self.interaction_constraints = interaction_constraints
        self.feature_weights = feature_weights
        self.importance_type = importance_type
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.warm_start = warm_start
        self.num_parallel_tree = num_parallel_tree
        self.multi_strategy = multi_strategy
        self.verbosity = verbosity
        self.device = device

    def __new__(cls, *args, **kwargs):
        # XGBoost's and LightGBM's names get a TypeError that says what to
        # use; __init__ keeps its explicit signature (scikit-learn's rule)
        known = cls._get_param_names()
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
               base_margin=None, base_margin_eval_set=None, init_model=None):
        check_device_and_verbosity(self)
        weight = check_weight(sample_weight, X)
        self._check_value_limits(y, objective)
        evals = self._eval_sets(eval_set, sample_weight_eval_set,
                                eval_query_ptrs, encode_labels,
                                base_margin_eval_set,
                                n_targets=getattr(objective, "n_targets", 1))
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
        self.booster_ = train(
            X, y, weight, objective, n_classes,
            BoostParams(n_estimators=n_rounds, subsample=self.subsample,
                        base_score=self.base_score,
                        sparse_absent=self.sparse_absent,
                        num_parallel_tree=n_parallel,
                        multi_strategy=self.multi_strategy),
            TreeParams(
                tree_method=self.tree_method, max_bin=self.max_bin,
                approx_proposal=self.approx_proposal,
                max_depth=self.max_depth, max_leaves=self.max_leaves,
                grow_policy=self.grow_policy, learning_rate=self.learning_rate,
                gamma=self.gamma, min_child_weight=self.min_child_weight,
                reg_lambda=self.reg_lambda, reg_alpha=self.reg_alpha,
                max_delta_step=self._max_delta_step(objective),
                colsample_bytree=self.colsample_bytree,
                colsample_bylevel=self.colsample_bylevel,
                colsample_bynode=self.colsample_bynode,
                max_cat_to_onehot=self.max_cat_to_onehot,
                max_cat_threshold=self.max_cat_threshold,
                **self._constraint_params(X.shape[1])),
            effective_n_threads(self.n_jobs),
            np.random.default_rng(seed if init is None else [seed, init.n_rounds]),
            objective_params=self._objective_params(), query_ptr=query_ptr,
            evals=evals, eval_metrics=_metric_list(self.eval_metric),
            callbacks=callbacks, init_booster=init,
            n_categories=(None if category_map is None
                          else category_map.n_categories()),
            base_margin=base_margin,
            tie_salt=_tie_salt(self.random_state))
        self.booster_.category_map = category_map
        self.evals_result_ = self.booster_.evals_result
        names = getattr(self, "feature_names_in_", None)
        self.booster_.feature_names = None if names is None else list(names)
        return self

    def _hold_out(self, X, y, weight, query_ptr, objective, base_margin):
        """The training rows kept and the hold-out of early stopping
        without an eval_set (``_holdout.py``), base margins split alike."""
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
        that keep gradients and gains finite (``_limits.py``)."""
        if not is_classifier(self):   # a classifier's labels are indices
            check_label_limits(y)
        check_base_score_limit(self.base_score)
        check_poisson_delta_step(getattr(objective, "name", objective),
                                 self.max_delta_step)

    def _constraint_params(self, n_features):
        """The constraints and feature weights as ``TreeParams`` fields,
        checked against the training features."""
        names = getattr(self, "feature_names_in_", None)
        category_map = getattr(self, "_category_map_", None)
        categorical = np.zeros(n_features, dtype=bool)
        if category_map is not None:
            categorical[category_map.features] = True
        monotone = parse_monotone(self.monotone_constraints, n_features,
                                  names, categorical)
        weights = parse_feature_weights(self.feature_weights, n_features)
        return dict(
            monotone=None if monotone is None else tuple(monotone.tolist()),
            interaction_sets=parse_interactions(
                self.interaction_constraints, n_features, names),
            feature_weights=None if weights is None else tuple(weights))

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
                   encode_labels, base_margin_eval_set=None, n_targets=1):
        """The ``eval_set`` pairs as validated :class:`EvalSet` objects."""
        if eval_set is None:
            for name, value in (("sample_weight_eval_set",
                                 sample_weight_eval_set),
                                ("base_margin_eval_set", base_margin_eval_set)):
                if value is not None:
                    raise ValueError(f"{name} needs an eval_set")
            return []
        eval_set = list(eval_set)
        margins = eval_base_margins(base_margin_eval_set, len(eval_set))
        weights = eval_set_weights(sample_weight_eval_set, len(eval_set))
        evals = []
        for i, (pair, weight, margin) in enumerate(zip(eval_set, weights,
                                                       margins)):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("eval_set must be a list of (X, y) pairs")
            X_eval = check_X(self, pair[0], reset=False)
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
        self.booster_._input_estimator = self   # predict() reads X like us
        return self.booster_

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

    def save_model(self, fname):
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
        """
        check_is_fitted(self)
        from ._serialization import save_estimator

        save_estimator(self, fname)

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
        from ._serialization import load_estimator

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


_COMMON_PARAMS_DOC = """
    n_estimators : int, default=100
        Number of boosting rounds.
    max_depth : int, default=6
        Maximum depth of a tree; 0 means no limit.
    learning_rate : float in (0, 1], default=0.3
        Shrinkage: each leaf value is multiplied by it (``eta``).
    tree_method : {"hist", "approx", "exact"}, default="hist"
        Split finding algorithm. ``"hist"`` bins every feature once into at
        most ``max_bin`` bins at cut points from the weighted quantile sketch
        and finds splits on gradient histograms. ``"approx"`` is the paper's
        approximate algorithm: for every tree, candidate cuts are re-proposed
        as hessian-weighted quantiles (at most ``max_bin`` bins) and the tree
        is grown on histograms of those bins. ``"exact"`` is the
        sparsity-aware exact greedy algorithm over presorted columns (paper
        Algorithms 1 and 3).
    max_bin : int in [2, 65535], default=256
        Maximum number of value bins (candidate cuts + 1) per feature, for
        ``"hist"`` and ``"approx"``. Missing values have a bin of their own;
        with ``max_bin=256`` a feature that has missing values keeps at most
        255 value bins so that its codes fit a byte.
    approx_proposal : {"global", "local"}, default="global"
        When ``tree_method="approx"`` re-proposes candidate cuts (paper
        section 3.2): ``"global"`` once per tree from all its rows, ``"local"``
        for every node from the node's own rows (finer candidates where the
        tree is deep, two walks over the data per level).
    grow_policy : {"depthwise", "lossguide"}, default="depthwise"
        ``"depthwise"`` splits every node of a level before the next level;
        ``"lossguide"`` always splits the leaf with the highest loss
        reduction, up to ``max_leaves``. Both work with every
        ``tree_method``, on dense and sparse input.
    max_leaves : int >= 0, default=0
        Maximum number of leaves per tree; 0 means no limit.
    n_jobs : int, default=None
        Number of OpenMP threads. None or -1 use the threads OpenMP allows
        (``OMP_NUM_THREADS``, threadpoolctl limits). Results do not depend on
        it.
    gamma : float >= 0, default=0
        Minimum loss reduction a split must bring (``min_split_loss``). skboost
        compares it with the loss reduction ``1/2 [score_L + score_R -
        score_parent]`` of the paper when a split is made, and never makes a
        split below it. XGBoost compares ``gamma`` with twice that reduction,
        and only after growing the tree, pruning bottom-up (a weak split
        survives when a split below it passes). XGBoost's ``gamma=g`` is
        therefore close to, not identical with, ``gamma=g/2`` here.
    min_child_weight : float >= 0, default=1
        Minimum sum of hessians (weighted) in each child.
    max_delta_step : float >= 0, default=None
        Leaf weights are clipped to ``[-max_delta_step, max_delta_step]``
        before shrinkage; 0 disables clipping. None is 0, except for
        ``count:poisson``: 0.7, XGBoost's default, which it also uses in its
        hessian safeguard ``exp(m + max_delta_step)``.
    subsample : float in (0, 1], default=1
        Each tree uses each row with this probability.
    colsample_bytree, colsample_bylevel, colsample_bynode : float in (0, 1], default=1
        Fractions of the features sampled per tree, then per level from the
        tree's, then per node from the level's (each keeps at least one).
    reg_alpha : float >= 0, default=0
        L1 regularisation of the leaf weights.
    reg_lambda : float >= 0, default=1
        L2 regularisation of the leaf weights.
    base_score : float, default=None
        Initial prediction of every sample, in prediction space (a probability
        for ``binary:logistic``). None estimates it from the training data.
    random_state : int, RandomState or Generator instance, or None, default=None
        Seed of row and column subsampling (and of the hold-out of early
        stopping). An int gives the same model every fit; a
        ``numpy.random.RandomState`` or ``numpy.random.Generator``
        instance draws a new seed from it at every fit.
    missing : float, default=np.nan
        Value marking a missing entry, in addition to NaN.
    sparse_absent : {"missing", "zero"}, default="missing"
        What an entry *not stored* in a scipy.sparse X means. ``"missing"``
        (as in XGBoost): a missing value, which follows the learned default
        direction; a stored 0.0 is a value. ``"zero"``: the value 0.0, so
        that the sparse and the dense form of a matrix give the same model.
        Dense input is unaffected. See :doc:`/user_guide/sparse`.
    categorical_features : array-like of int, str or bool, default=None
        Features to treat as categorical beyond the pandas ``category``
        columns (which always are): indices, column names or a boolean mask.
        Their distinct values at fit are the categories (re-coded by value at
        predict; unseen values follow the missing-value direction). Numeric
        features never become categorical otherwise. Every tree_method
        splits them, on dense or sparse X (a sparse column's absent entries
        are missing, or the category 0.0 with ``sparse_absent="zero"``).
        See :doc:`/user_guide/categorical`.
    max_cat_to_onehot : int >= 1, default=4
        A categorical feature with at most this many categories is split
        one category against the rest (the splits of its one-hot encoding);
        one with more is split by the best partition of its categories
        sorted by gradient over hessian.
    max_cat_threshold : int >= 1, default=64
        A partition split sends at most this many categories to one of its
        sides (a guard against over-fitting on many categories).
    monotone_constraints : str, sequence or dict, default=None
        Force predictions to be non-decreasing (1) or non-increasing (-1)
        in a feature, whatever the other features' values (0: free).
        XGBoost's formats: ``"(1,-1,0)"``, a sequence with one entry per
        feature, or ``{column name: direction}`` for a DataFrame (unlisted
        columns free). Categorical features can not be constrained. Every
        tree_method and grow_policy; XGBoost's method (leaf weights
        clipped into bounds their ancestors' splits set). See
        :doc:`/user_guide/constraints`.
    interaction_constraints : str or list of lists, default=None
        Sets of features (indices or column names) allowed to interact: a
        node splits on a feature only if that feature and those already
        on its path lie in one set. The sets must not overlap; a feature in
        no set forms a set of its own (XGBoost's rule). ``"[[0, 1], [2]]"``
        is accepted too.
    feature_weights : array-like of shape (n_features,), default=None
        Relative probability of each feature being drawn by
        ``colsample_bytree``, ``colsample_bylevel`` and
        ``colsample_bynode`` (>= 0, not all 0; a 0 is never drawn); no
        effect when they are all 1.
    importance_type : {"gain", "weight", "cover", "total_gain", \
"total_cover"}, default="gain"
        Definition of ``feature_importances_`` (XGBoost's): the average
        (``gain``) or total loss reduction of the splits on a feature, their
        number (``weight``), or the average or total cover (hessian sum) of
        those splits.
    eval_metric : str, list or callable, default=None
        Metrics of the ``eval_set`` pairs of :meth:`fit`, logged every round
        in ``evals_result_``: names from :mod:`skboost.metrics` (``"rmse"``,
        ``"logloss"``, ``"auc"``, ``"ndcg@10"``, ...), a list of them, or a
        callable ``metric(y_true, y_pred, *, sample_weight=None) -> float``
        (minimised). A callable gets what XGBoost gives it: the encoded
        labels (class indices) and the objective's predictions as
        ``predict`` makes them from the margins: probabilities (one column
        for two classes), the predicted class indices under
        ``multi:softmax``, margins under ``binary:logitraw``. None uses the
        objective's default metric.
    early_stopping_rounds : int, default=None
        Stop when the last metric on the last ``eval_set`` pair has not
        improved for this many rounds; ``best_iteration`` and ``best_score``
        record the best round, which predictions then use by default.
        Without ``eval_set``, a ``validation_fraction`` of the training data
        is held out and watched instead.
    callbacks : list, default=None
        Objects called during training (:mod:`skboost.callback`): after each
        round with the evaluation log; one returning True stops training.
    validation_fraction : float in (0, 1), default=0.1
        With ``early_stopping_rounds`` and no ``eval_set``, the fraction of
        the training rows held out (stratified by class for the classifier,
        whole queries for the ranker, drawn from ``random_state``) to decide
        when to stop; it is logged as ``"validation"`` in
        ``evals_result_``. Inside a ``Pipeline`` and ``GridSearchCV`` this
        early-stops on the training folds only, without leaking the test
        fold.
    warm_start : bool, default=False
        When fitted already, ``fit`` keeps the trees and adds rounds until
        there are ``n_estimators`` (scikit-learn's convention; the data must
        have the same features and, for a classifier, the same classes).
        ``evals_result_`` then logs the new rounds only. To continue
        another model, pass it to ``fit`` as ``xgb_model``.
    verbosity : int in [0, 3], default=None
        XGBoost's parameter, accepted so that its configurations carry
        over; it changes nothing. skboost writes no messages of its own
        besides the progress lines of ``fit(..., verbose=...)``, which go
        through the ``"skboost"`` logger as well (:mod:`logging`), where
        an application sets their level.
    device : {"cpu"}, default="cpu"
        XGBoost's parameter: skboost runs on the CPU only; ``"cuda"`` or
        any other device is a ValueError at ``fit`` (None means
        ``"cpu"``).
    num_parallel_tree : int >= 1, default=1
        Trees grown per output in every round, each on its own row sample
        (``subsample``) and column samples, all from the round's gradients;
        the round adds ``learning_rate`` times their mean (XGBoost's
        boosted random forests). :class:`BoostRFClassifier` and
        :class:`BoostRFRegressor` are one round of such a forest. See
        :doc:`/user_guide/random_forests`.
    multi_strategy : {"one_output_per_tree", "multi_output_tree"}, \
default="one_output_per_tree"
        How a model of several outputs (a 2-D ``y`` of several targets or
        labels, classes of ``multi:*``, several quantiles) grows its trees:
        one tree per output and round, or one tree per round whose leaves
        hold a value per output, its splits chosen by the gain summed over
        the outputs (XGBoost's vector-leaf trees; ``tree_method="hist"``
        on dense numeric data). See :doc:`/user_guide/multi_output`.
"""


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
        verbose=verbose,
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


class BoostClassifier(ClassifierMixin, _BoostBase):
    __doc__ = f"""Gradient-boosted trees classifier (regularised, second order).

    Binary targets use ``binary:logistic``; more than two classes switch to
    ``multi:softprob`` (one tree per class per round), as in XGBoost.

    Parameters
    ----------
    objective : str or callable, default="binary:logistic"
        Training objective: ``"binary:logistic"``, ``"binary:logitraw"``,
        ``"binary:hinge"`` (two classes), ``"multi:softprob"`` or
        ``"multi:softmax"``, or a function ``obj(y_true, y_pred, *,
        sample_weight) -> (grad, hess)`` of the encoded labels and the
        margins (``sample_weight`` optional: when the function takes it, it
        must apply the weights itself). Probabilities are the sigmoid (two
        classes) or softmax of the margins, except ``binary:hinge``'s, which
        are 0 or 1. See :doc:`/user_guide/objectives`.
    scale_pos_weight : float > 0, default=1
        Weight multiplier of the positive class (binary logistic
        objectives), e.g. ``n_negative / n_positive`` for unbalanced data.
    class_weight : "balanced" or dict, default=None
        Weights of the classes, multiplying ``sample_weight``
        (scikit-learn's meaning, LightGBM's parameter): ``{{label:
        weight}}`` (classes not listed weigh 1), or ``"balanced"``,
        ``n_samples / (n_classes * count of the class)`` counted in the
        training labels. The model is the one fitted with those weights
        given as ``sample_weight``. Eval sets are not re-weighted.{_COMMON_PARAMS_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes.
{_COMMON_ATTRIBUTES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skboost import BoostClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = BoostClassifier(n_estimators=20, max_depth=3).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints = {
        **_BoostBase._parameter_constraints,
        "objective": [StrOptions(set(CLASSIFICATION_OBJECTIVES)), callable],
        "scale_pos_weight": [Interval(Real, 0.0, None, closed="neither")],
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }

    def __init__(self, *, objective="binary:logistic", n_estimators=100,
                 max_depth=6, learning_rate=0.3, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0,
                 n_jobs=None, gamma=0.0, min_child_weight=1.0,
                 max_delta_step=None, subsample=1.0, colsample_bytree=1.0,
                 colsample_bylevel=1.0, colsample_bynode=1.0, reg_alpha=0.0,
                 reg_lambda=1.0, base_score=None, random_state=None,
                 missing=np.nan, sparse_absent="missing",
                 categorical_features=None, max_cat_to_onehot=4,
                 max_cat_threshold=64, monotone_constraints=None,
                 interaction_constraints=None, feature_weights=None,
                 importance_type="gain", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None,
                 validation_fraction=0.1, warm_start=False,
                 scale_pos_weight=1.0, class_weight=None, verbosity=None,
                 device="cpu", num_parallel_tree=1,
                 multi_strategy="one_output_per_tree"):
        super().__init__(
            objective=objective, n_estimators=n_estimators, max_depth=max_depth,
            learning_rate=learning_rate, tree_method=tree_method,
            max_bin=max_bin, approx_proposal=approx_proposal,
            grow_policy=grow_policy, max_leaves=max_leaves,
            n_jobs=n_jobs,
            gamma=gamma, min_child_weight=min_child_weight,
            max_delta_step=max_delta_step, subsample=subsample,
            colsample_bytree=colsample_bytree,
            colsample_bylevel=colsample_bylevel,
            colsample_bynode=colsample_bynode, reg_alpha=reg_alpha,
            reg_lambda=reg_lambda, base_score=base_score,
            random_state=random_state, missing=missing,
            sparse_absent=sparse_absent,
            categorical_features=categorical_features,
            max_cat_to_onehot=max_cat_to_onehot,
            max_cat_threshold=max_cat_threshold,
            monotone_constraints=monotone_constraints,
            interaction_constraints=interaction_constraints,
            feature_weights=feature_weights,
            importance_type=importance_type, eval_metric=eval_metric,
            early_stopping_rounds=early_stopping_rounds, callbacks=callbacks,
            validation_fraction=validation_fraction, warm_start=warm_start,
            verbosity=verbosity, device=device,
            num_parallel_tree=num_parallel_tree,
            multi_strategy=multi_strategy)
        self.scale_pos_weight = scale_pos_weight
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a 2-D 0/1 y: one binary output per label (binary objectives)
        multi_label = not (isinstance(self.objective, str)
                           and self.objective.startswith("multi:"))
        tags.target_tags.multi_output = multi_label
        tags.classifier_tags.multi_label = multi_label
        return tags

    def _objective_params(self):
        return {**super()._objective_params(),
                "scale_pos_weight": self.scale_pos_weight}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, eval_set=None,
            sample_weight_eval_set=None, verbose=False, *,
            base_margin=None, base_margin_eval_set=None, xgb_model=None,
            init_score=None, eval_init_score=None, init_model=None):
        """Fit the boosted trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or ExternalData
            Training data; NaN (and ``missing``) mark missing values.
            :class:`~skboost.ExternalData` trains out of core, with y and
            the sample weights from its chunks.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels of any type (None with ExternalData); or a 0/1 indicator matrix, one column
            per label (multi-label: one binary output per label,
            ``classes_`` the label indices, see
            :doc:`/user_guide/multi_output`).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; they scale gradients and hessians.
        {eval_doc}

        Returns
        -------
        self : BoostClassifier
        """
        X, y = check_X(self, X, y=y, reset=True, multi_output=True)
        reject_external_weight(X, sample_weight)
        y = check_targets(y)
        evaluation = _evaluation_kwargs(
            eval_set, sample_weight_eval_set, verbose, base_margin,
            base_margin_eval_set, xgb_model, init_score, eval_init_score,
            init_model)
        if y.ndim == 2:
            return self._fit_multilabel(X, y, sample_weight, evaluation)
        labels = _label_values(y, X)
        check_classification_targets(labels)
        encoder = LabelEncoder().fit(labels)
        del labels
        self._check_warm_start_classes(encoder.classes_)
        self.classes_ = encoder.classes_
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(
                "BoostClassifier needs samples of at least 2 classes in the "
                f"data, but the data contains only one class: {self.classes_[0]!r}")
        sample_weight = class_weighted(self.class_weight, y, sample_weight, X)
        # class indices as float64, the labels' dtype in training: one array,
        # not an int64 one and a float64 copy of it (out of core uint8 or
        # float32, exact for class indices: 7 or 4 bytes a row less); the
        # labels themselves are dropped (out of core, this fit held the
        # only copy)
        encoded = _encode_labels(encoder, y, X)
        del y
        return self._train(X, encoded, sample_weight,
                           self._objective_for(self.n_classes_),
                           n_classes=self.n_classes_,
                           encode_labels=self._encode_eval_labels,
                           **evaluation)

    fit.__doc__ = fit.__doc__.format(eval_doc=_EVAL_FIT_DOC)

    def _fit_multilabel(self, X, y, sample_weight, evaluation):
        """Multi-label classification: one binary output per label
        (column of the 0/1 matrix ``y``), as XGBoost trains it."""
        check_multilabel(y)
        n_labels = y.shape[1]
        objective = self.objective
        if callable(objective):
            objective = CallableObjective(objective, {"link": "logistic"})
        elif not objective.startswith("binary:"):
            raise ValueError(
                f"objective={objective!r} is for one multiclass target; a "
                "2-D y (multi-label) trains a binary objective per label, "
                "such as 'binary:logistic'")
        for name in ("scale_pos_weight", "class_weight"):
            if getattr(self, name) not in (1.0, None):
                raise ValueError(
                    f"{name} is not supported with a 2-D y (multi-label): "
                    "pass sample_weight instead")
        self._check_warm_start_classes(np.arange(n_labels))
        # XGBoost's (and MLPClassifier's) classes_ of a multi-label model:
        # the label indices
        self.classes_ = np.arange(n_labels)
        self.n_classes_ = n_labels
        return self._train(X, y.astype(np.float64), sample_weight,
                           self._targets_objective(objective, y),
                           encode_labels=_multilabel_eval_labels,
                           **evaluation)

    def _is_multilabel(self):
        """Whether the fitted model has one binary output per label."""
        check_is_fitted(self)
        return self.booster_.n_targets > 1

    def _check_warm_start_classes(self, classes):
        if (self.warm_start and hasattr(self, "booster_")
                and not np.array_equal(classes, self.classes_)):
            raise ValueError(
                "warm_start=True can not add rounds: y has the classes "
                f"{list(classes)}, the fitted model {list(self.classes_)}")

    def _objective_for(self, n_classes):
        """The objective to train (a name or a wrapped callable)."""
        objective = self.objective
        if callable(objective):
            return CallableObjective(
                objective, {"link": "logistic" if n_classes == 2
                            else "softmax"},
                n_outputs=1 if n_classes == 2 else n_classes)
        if n_classes > 2 and objective.startswith("binary:"):
            if objective != "binary:logistic":
                raise ValueError(
                    f"objective={objective!r} is for two classes; the data "
                    f"has {n_classes}: use 'multi:softprob' or "
                    "'multi:softmax'")
            objective = "multi:softprob"
        return objective

    def _encode_eval_labels(self, y):
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(f"eval_set labels {np.unique(y[unknown])!r} are "
                             "not among the training classes")
        return np.searchsorted(self.classes_, y)

    def decision_function(self, X, iteration_range=None, base_margin=None):
        """Raw margins (log-odds for binary, per-class scores for multiclass).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
            Margins the rows start from instead of the fitted intercept
            (``intercept_``), as given to ``fit``: one per row, one per row
            and class for a multiclass model.

        Returns
        -------
        margins : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Sum of the base margin and the trees' outputs. With two classes
            the result is 1-D (scikit-learn's convention): the margin of
            ``classes_[1]``, or under a ``multi:`` objective the difference
            of the two classes' margins (the log-odds of ``classes_[1]``).
            A multi-label model gives (n_samples, n_labels): each label's
            log-odds.
        """
        raw = self._raw_predict(X, iteration_range, base_margin)
        if raw.shape[1] == 1:
            return raw[:, 0]
        if self._is_multilabel():
            return raw
        if raw.shape[1] == 2:
            return raw[:, 1] - raw[:, 0]
        return raw

    def predict_proba(self, X, iteration_range=None, base_margin=None):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
            Margins the rows start from instead of the fitted intercept
            (``intercept_``), as given to ``fit``: one per row, one per row
            and class for a multiclass model.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``. For a multi-label model
            (n_samples, n_labels): the probability of each label, the
            layout of XGBoost and of scikit-learn's ``MLPClassifier``.
        """
        raw = self._raw_predict(X, iteration_range, base_margin)
        proba = self._prediction_objective().eval_transform(raw)
        if self._is_multilabel():
            return proba
        if proba.shape[1] == 1:
            proba = np.column_stack([1.0 - proba[:, 0], proba[:, 0]])
        return proba

    def predict(self, X, output_margin=False, iteration_range=None,
                base_margin=None):
        """Predicted class labels (or raw margins with ``output_margin``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        output_margin : bool, default=False
            Return :meth:`decision_function` instead of labels.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
            Margins the rows start from instead of the fitted intercept
            (``intercept_``), as given to ``fit``: one per row, one per row
            and class for a multiclass model.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_labels)
            Class labels (or margins with ``output_margin``); for a
            multi-label model the 0/1 indicator matrix (int64) of the
            labels whose probability is above 1/2.
        """
        if output_margin:
            return self.decision_function(X, iteration_range, base_margin)
        if self._is_multilabel():
            # a label is predicted where its margin is positive (its
            # probability above 1/2)
            margins = self.decision_function(X, iteration_range, base_margin)
            return (margins > 0).astype(np.int64)
        proba = self.predict_proba(X, iteration_range, base_margin)
        return self.classes_[np.argmax(proba, axis=1)]


def _multilabel_eval_labels(y):
    """An eval_set's multi-label targets: 0/1 labels, as float64."""
    check_multilabel(y)
    return y.astype(np.float64)


class BoostRegressor(RegressorMixin, _BoostBase):
    __doc__ = f"""Gradient-boosted trees regressor (regularised, second order).

    Parameters
    ----------
    objective : str or callable, default="reg:squarederror"
        Training objective: ``"reg:squarederror"``, ``"reg:squaredlogerror"``,
        ``"reg:pseudohubererror"``, ``"reg:absoluteerror"``,
        ``"reg:quantileerror"``, ``"reg:logistic"``, ``"count:poisson"``,
        ``"reg:gamma"`` or ``"reg:tweedie"``, or a function ``obj(y_true,
        y_pred, *, sample_weight) -> (grad, hess)`` of the margins
        (``sample_weight`` optional: when the function takes it, it must
        apply the weights itself). See :doc:`/user_guide/objectives`.
    huber_slope : float > 0, default=1
        Slope ``s`` of ``reg:pseudohubererror`` (and the ``mphe`` metric).
    quantile_alpha : float or array-like of floats in (0, 1), default=0.5
        Quantile(s) of ``reg:quantileerror``; several quantiles give one
        output (one tree per round) each, and ``predict`` a column each.
    tweedie_variance_power : float in [1, 2), default=1.5
        Variance power of ``reg:tweedie``.{_COMMON_PARAMS_DOC}
    Attributes
    ----------
{_COMMON_ATTRIBUTES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skboost import BoostRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = BoostRegressor(n_estimators=20, max_depth=3).fit(X, y)
    >>> reg.predict(X[:2]).shape
    (2,)
    """

    _parameter_constraints = {
        **_BoostBase._parameter_constraints,
        "objective": [StrOptions(set(REGRESSION_OBJECTIVES)), callable],
        "huber_slope": [Interval(Real, 0.0, None, closed="neither")],
        "quantile_alpha": [Interval(Real, 0.0, 1.0, closed="neither"),
                           "array-like"],
        "tweedie_variance_power": [Interval(Real, 1.0, 2.0,
                                            closed="left")],
    }

    def __init__(self, *, objective="reg:squarederror", n_estimators=100,
                 max_depth=6, learning_rate=0.3, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0,
                 n_jobs=None, gamma=0.0, min_child_weight=1.0,
                 max_delta_step=None, subsample=1.0, colsample_bytree=1.0,
                 colsample_bylevel=1.0, colsample_bynode=1.0, reg_alpha=0.0,
                 reg_lambda=1.0, base_score=None, random_state=None,
                 missing=np.nan, sparse_absent="missing",
                 categorical_features=None, max_cat_to_onehot=4,
                 max_cat_threshold=64, monotone_constraints=None,
                 interaction_constraints=None, feature_weights=None,
                 importance_type="gain", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None,
                 validation_fraction=0.1, warm_start=False, huber_slope=1.0,
                 quantile_alpha=0.5, tweedie_variance_power=1.5,
                 verbosity=None, device="cpu", num_parallel_tree=1,
                 multi_strategy="one_output_per_tree"):
        super().__init__(
            objective=objective, n_estimators=n_estimators, max_depth=max_depth,
            learning_rate=learning_rate, tree_method=tree_method,
            max_bin=max_bin, approx_proposal=approx_proposal,
            grow_policy=grow_policy, max_leaves=max_leaves,
            n_jobs=n_jobs,
            gamma=gamma, min_child_weight=min_child_weight,
            max_delta_step=max_delta_step, subsample=subsample,
            colsample_bytree=colsample_bytree,
            colsample_bylevel=colsample_bylevel,
            colsample_bynode=colsample_bynode, reg_alpha=reg_alpha,
            reg_lambda=reg_lambda, base_score=base_score,
            random_state=random_state, missing=missing,
            sparse_absent=sparse_absent,
            categorical_features=categorical_features,
            max_cat_to_onehot=max_cat_to_onehot,
            max_cat_threshold=max_cat_threshold,
            monotone_constraints=monotone_constraints,
            interaction_constraints=interaction_constraints,
            feature_weights=feature_weights,
            importance_type=importance_type, eval_metric=eval_metric,
            early_stopping_rounds=early_stopping_rounds, callbacks=callbacks,
            validation_fraction=validation_fraction, warm_start=warm_start,
            verbosity=verbosity, device=device,
            num_parallel_tree=num_parallel_tree,
            multi_strategy=multi_strategy)
        self.huber_slope = huber_slope
        self.quantile_alpha = quantile_alpha
        self.tweedie_variance_power = tweedie_variance_power

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # objectives whose labels must be positive (or > -1)
        tags.target_tags.positive_only = self.objective in POSITIVE_TARGETS
        tags.target_tags.multi_output = True   # a 2-D y: one output per target
        return tags

    def _objective_params(self):
        return {**super()._objective_params(),
                "huber_slope": self.huber_slope,
                "quantile_alpha": self.quantile_alpha,
                "tweedie_variance_power": self.tweedie_variance_power}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, eval_set=None,
            sample_weight_eval_set=None, verbose=False, *,
            base_margin=None, base_margin_eval_set=None, xgb_model=None,
            init_score=None, eval_init_score=None, init_model=None):
        """Fit the boosted trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or ExternalData
            Training data; NaN (and ``missing``) mark missing values.
            :class:`~skboost.ExternalData` trains out of core, with y and
            the sample weights from its chunks.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets (None with ExternalData); a 2-D y trains one output per target (see
            ``multi_strategy`` and :doc:`/user_guide/multi_output`).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; they scale gradients and hessians.
        {eval_doc}

        Returns
        -------
        self : BoostRegressor
        """
        X, y = check_X(self, X, y=y, reset=True, y_numeric=True,
                       multi_output=True)
        reject_external_weight(X, sample_weight)
        y = check_targets(y).astype(np.float64, copy=False)
        objective = self.objective
        if callable(objective):
            objective = CallableObjective(objective, {"link": "identity"})
        objective = self._targets_objective(objective, y)
        return self._train(X, y, sample_weight, objective,
                           **_evaluation_kwargs(
                               eval_set, sample_weight_eval_set, verbose,
                               base_margin, base_margin_eval_set, xgb_model,
                               init_score, eval_init_score, init_model))

    fit.__doc__ = fit.__doc__.format(eval_doc=_EVAL_FIT_DOC)

    def predict(self, X, output_margin=False, iteration_range=None,
                base_margin=None):
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        output_margin : bool, default=False
            Return the raw margin (before the objective's link, e.g. the log
            of the mean for ``count:poisson``).
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
            Margins the rows start from instead of the fitted intercept
            (``intercept_``), as given to ``fit``: one per row, one per row
            and class for a multiclass model.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predicted targets: a column per target of a model fitted on a
            2-D y, or per quantile of a ``reg:quantileerror`` model with
            several ``quantile_alpha``.
        """
        raw = self._raw_predict(X, iteration_range, base_margin)
        if not output_margin:
            raw = self._prediction_objective().transform(raw)
        return raw[:, 0] if raw.shape[1] == 1 else raw


def _label_values(y, X, block=1 << 16):
    """What a classifier checks and learns its classes from: y itself in
    core; out of core (ExternalData) its distinct values, gathered block
    by block (the checks and the classes are the same for one-column y,
    without copies of every label)."""
    if not getattr(X, "out_of_core", False):
        return y
    return np.unique(np.concatenate(
        [np.unique(y[start:start + block])
         for start in range(0, y.shape[0], block)] or [y[:0]]))


def _encode_labels(encoder, y, X, block=1 << 16):
    """A classifier's class indices in training: float64 in core; out of
    core (ExternalData) the narrowest exact dtype, encoded block by block
    (no int64 array of every row's index beside the labels)."""
    if not getattr(X, "out_of_core", False):
        return encoder.transform(y).astype(np.float64)
    dtype = np.uint8 if len(encoder.classes_) <= 256 else np.float32
    encoded = np.empty(y.shape[0], dtype=dtype)
    for start in range(0, y.shape[0], block):
        encoded[start:start + block] = encoder.transform(
            y[start:start + block])
    return encoded


def _external_queries(X, qid, group):
    """The query ids of ExternalData's chunks, which must come sorted (the
    rows of a query together, queries in increasing id order)."""
    if qid is not None or group is not None:
        raise ValueError("with ExternalData, qid comes from the chunks: "
                         "yield (X, y, sample_weight, qid) tuples")
    qid = X.qid
    if qid is not None and np.any(np.diff(qid) < 0):
        raise ValueError(
            "ExternalData's qid must be sorted across the chunks (each "
            "query's rows together, in increasing query id): out of core "
            "the rows cannot be reordered")
    return qid


def _tie_salt(random_state):
    """The salt of the ranker's per-row tie-break keys: an integer
    ``random_state`` itself, else 0. The keys thus stay the same from fit
    to fit (no other randomness is involved without sampling)."""
    if isinstance(random_state, Integral):
        return int(random_state)
    return 0


def _check_queries(qid, group, n_rows, what="qid"):
    """Stable order that groups the rows by query, and the query boundaries.

    Parameters
    ----------
    qid : array-like of shape (n_rows,) or None
        Query id of every row (any order).
    group : array-like of shape (n_queries,) or None
        Sizes of consecutive queries (rows already grouped).
    n_rows : int

    Returns
    -------
    order : ndarray of shape (n_rows,)
        Rows in query order (``qid`` sorted stably).
    query_ptr : ndarray of shape (n_queries + 1,), int64
    sorted_qid : ndarray of shape (n_rows,)
    """
    if qid is not None and group is not None:
        raise ValueError(f"give either {what} or group sizes, not both")
    if group is not None:
        sizes = _query_sizes(group, n_rows)
        qid = np.repeat(np.arange(sizes.shape[0]), sizes)
    elif qid is None:
        qid = np.zeros(n_rows, dtype=np.int64)  # the whole input is one query
    qid = np.asarray(qid)
    if qid.ndim != 1 or qid.shape[0] != n_rows:
        raise ValueError(f"{what} must be 1-D with one query id per row "
                         f"({n_rows}), got shape {qid.shape}")
    if qid.dtype.kind not in "iub":
        raise TypeError(f"{what} must hold integer query ids, got dtype "
                        f"{qid.dtype}")
    order = np.argsort(qid, kind="stable")
    sorted_qid = qid[order]
    starts = np.flatnonzero(np.r_[True, sorted_qid[1:] != sorted_qid[:-1]])
    query_ptr = np.r_[starts, n_rows].astype(np.int64) if n_rows else (
        np.zeros(1, dtype=np.int64))
    return order, query_ptr, sorted_qid


def _query_sizes(group, n_rows):
    """Query sizes as int64: integers, or floats that are whole numbers
    (sizes read with ``np.loadtxt``, ``np.ones(n)``), summing to n_rows."""
    sizes = np.asarray(group)
    message = ("group must be non-negative whole-number query sizes summing "
               f"to the number of rows ({n_rows})")
    if sizes.ndim != 1 or sizes.dtype.kind not in "iuf":
        raise ValueError(f"{message}; got an array of shape {sizes.shape} "
                         f"and dtype {sizes.dtype}")
    if sizes.dtype.kind == "f":
        whole = (np.isfinite(sizes) & (sizes == np.round(sizes))
                 & (np.abs(sizes) <= max(n_rows, 1)))
        if not whole.all():
            raise ValueError(f"{message}; group[{int(np.argmin(whole))}] = "
                             f"{sizes[np.argmin(whole)]!r} is not a whole "
                             "number")
        sizes = sizes.astype(np.int64)
    if np.any(sizes < 0) or sizes.sum() != n_rows:
        raise ValueError(f"{message}; they sum to {int(sizes.sum())}")
    return sizes.astype(np.int64)


class BoostRanker(_BoostBase):
    __doc__ = f"""Gradient-boosted trees for learning to rank (LambdaMART).

    Rows are documents, grouped into queries by ``qid`` (or ``group``
    sizes); the model scores documents so that, within each query, better
    documents score higher. Unlike XGBoost's and LightGBM's rankers it is a
    complete scikit-learn estimator: without ``qid`` the whole input is one
    query, and ``qid`` can be routed through model selection as metadata
    (see :doc:`/user_guide/ranking`).

    Parameters
    ----------
    objective : str or callable, default="rank:ndcg"
        ``"rank:ndcg"`` (LambdaMART with NDCG), ``"rank:map"`` (with MAP,
        binary labels), ``"rank:pairwise"`` (RankNet pairs), or a function
        ``obj(y_true, y_pred, *, sample_weight, qid) -> (grad, hess)`` of the
        margins (keyword arguments optional; rows grouped by query).
    lambdarank_pair_method : {{"topk", "mean"}}, default="topk"
        ``"topk"``: pairs of each of the ``lambdarank_num_pair_per_sample``
        best-ranked documents with every document below it; ``"mean"``:
        ``lambdarank_num_pair_per_sample`` random pairs per document.
    lambdarank_num_pair_per_sample : int >= 1, default=None
        Truncation level (``topk``) or pairs per document (``mean``); None is
        32 for ``topk`` and 1 for ``mean``, as XGBoost.
    ndcg_exp_gain : bool, default=True
        NDCG gains ``2^y - 1`` (labels up to 31) instead of ``y``.
    score_k : int >= 1, default=None
        :meth:`score` returns the mean NDCG@``score_k`` over queries; None
        ranks the whole list.{_COMMON_PARAMS_DOC}
    Attributes
    ----------
{_COMMON_ATTRIBUTES_DOC}
    Examples
    --------
    >>> import numpy as np
    >>> from skboost import BoostRanker
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3))
    >>> y = np.clip(np.round(X[:, 0] + 1), 0, 3)
    >>> qid = np.repeat(np.arange(6), 10)
    >>> ranker = BoostRanker(n_estimators=10).fit(X, y, qid=qid)
    >>> ranker.predict(X[:2]).shape
    (2,)
    """

    _parameter_constraints = {
        **_BoostBase._parameter_constraints,
        "objective": [StrOptions(set(RANKING_OBJECTIVES)), callable],
        "lambdarank_pair_method": [StrOptions({"topk", "mean"})],
        "lambdarank_num_pair_per_sample": [
            Interval(Integral, 1, None, closed="left"), None],
        "ndcg_exp_gain": ["boolean"],
        "score_k": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, objective="rank:ndcg", n_estimators=100,
                 max_depth=6, learning_rate=0.3, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0,
                 n_jobs=None, gamma=0.0, min_child_weight=1.0,
                 max_delta_step=None, subsample=1.0, colsample_bytree=1.0,
                 colsample_bylevel=1.0, colsample_bynode=1.0, reg_alpha=0.0,
                 reg_lambda=1.0, base_score=None, random_state=None,
                 missing=np.nan, sparse_absent="missing",
                 categorical_features=None, max_cat_to_onehot=4,
                 max_cat_threshold=64, monotone_constraints=None,
                 interaction_constraints=None, feature_weights=None,
                 importance_type="gain", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None,
                 validation_fraction=0.1, warm_start=False,
                 num_parallel_tree=1,
                 multi_strategy="one_output_per_tree",
                 lambdarank_pair_method="topk",
                 lambdarank_num_pair_per_sample=None, ndcg_exp_gain=True,
                 score_k=None, verbosity=None, device="cpu"):
        super().__init__(
            objective=objective, n_estimators=n_estimators, max_depth=max_depth,
            learning_rate=learning_rate, tree_method=tree_method,
            max_bin=max_bin, approx_proposal=approx_proposal,
            grow_policy=grow_policy, max_leaves=max_leaves,
            n_jobs=n_jobs,
            gamma=gamma, min_child_weight=min_child_weight,
            max_delta_step=max_delta_step, subsample=subsample,
            colsample_bytree=colsample_bytree,
            colsample_bylevel=colsample_bylevel,
            colsample_bynode=colsample_bynode, reg_alpha=reg_alpha,
            reg_lambda=reg_lambda, base_score=base_score,
            random_state=random_state, missing=missing,
            sparse_absent=sparse_absent,
            categorical_features=categorical_features,
            max_cat_to_onehot=max_cat_to_onehot,
            max_cat_threshold=max_cat_threshold,
            monotone_constraints=monotone_constraints,
            interaction_constraints=interaction_constraints,
            feature_weights=feature_weights,
            importance_type=importance_type, eval_metric=eval_metric,
            early_stopping_rounds=early_stopping_rounds, callbacks=callbacks,
            validation_fraction=validation_fraction, warm_start=warm_start,
            verbosity=verbosity, device=device,
            num_parallel_tree=num_parallel_tree,
            multi_strategy=multi_strategy)
        self.lambdarank_pair_method = lambdarank_pair_method
        self.lambdarank_num_pair_per_sample = lambdarank_num_pair_per_sample
        self.ndcg_exp_gain = ndcg_exp_gain
        self.score_k = score_k

    def _objective_params(self):
        return {**super()._objective_params(),
                "lambdarank_pair_method": self.lambdarank_pair_method,
                "lambdarank_num_pair_per_sample":
                    self.lambdarank_num_pair_per_sample,
                "ndcg_exp_gain": bool(self.ndcg_exp_gain)}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, qid=None, group=None, sample_weight=None,
            eval_set=None, eval_qid=None, eval_group=None,
            sample_weight_eval_set=None, verbose=False,
            base_margin=None, base_margin_eval_set=None, xgb_model=None,
            init_score=None, eval_init_score=None, init_model=None,
            query_weight=None, eval_query_weight=None):
        """Fit the ranker.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or ExternalData
            Documents; NaN (and ``missing``) mark missing values.
            :class:`~skboost.ExternalData` trains out of core: y, the
            sample weights and the query ids come from its chunks
            (``(X, y, sample_weight, qid)``, rows sorted by query id).
        y : array-like of shape (n_samples,)
            Relevance labels, non-negative integers (0 or 1 for
            ``rank:map``); None with ExternalData.
        qid : array-like of shape (n_samples,), default=None
            Integer query id of every row, in any order (rows are grouped
            by a stable sort inside). None, with ``group`` None, makes the
            whole input one query.
        group : array-like of shape (n_queries,), default=None
            Sizes of consecutive queries, instead of ``qid``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows (scikit-learn's convention);
            they scale each row's lambda gradients and hessians. For
            XGBoost's one weight per query, use ``query_weight``: a
            ``sample_weight`` with one entry per query is a ValueError
            that says so.
        {_EVAL_FIT_DOC}
        eval_qid : list of array-like, default=None
            Query ids of the rows of each ``eval_set`` pair.
        eval_group : list of array-like, default=None
            Query sizes of each ``eval_set`` pair, instead of ``eval_qid``.
        query_weight : array-like of shape (n_queries,), default=None
            One non-negative weight per query, XGBoost's ``sample_weight``
            of :class:`xgboost.XGBRanker` (same model with the exact
            method): the k-th weight is that of the k-th query in
            increasing ``qid`` order (the order of ``np.unique(qid)``; for
            rows sorted by ``qid``, as XGBoost requires, the order of the
            queries' first appearance), or of the k-th ``group``. As in
            XGBoost, the weights are normalised to a mean of 1 over the
            queries (only their ratios matter, up to the order of equal
            scores: see :doc:`/user_guide/ranking`), and every row of a query
            takes its query's weight; with ``sample_weight`` too, a row's
            weight is the product of the two.
        eval_query_weight : list of array-like, default=None
            Per-query weights of each ``eval_set`` pair (None entries: unit
            weights), ordered as ``query_weight`` by ``eval_qid`` or
            ``eval_group``; they weigh the queries in the mean of a ranking
            metric, combined with ``sample_weight_eval_set`` as
            ``query_weight`` with ``sample_weight``.

        Returns
        -------
        self : BoostRanker
        """
        X, y = check_X(self, X, y=y, reset=True, y_numeric=True)
        if getattr(X, "out_of_core", False):
            reject_external_weight(X, sample_weight)
            if query_weight is not None:
                raise ValueError(
                    "query_weight is not supported with ExternalData: "
                    "give every row its query's weight in the chunks' "
                    "sample weights")
            qid = _external_queries(X, qid, group)
        order, query_ptr, sorted_qid = _check_queries(qid, group, X.shape[0])
        # score() needs qid exactly when fit had queries
        self._fitted_on_queries = qid is not None or group is not None
        if self._fitted_on_queries:
            check_per_query_sample_weight(sample_weight, X.shape[0],
                                          query_ptr)
        if sample_weight is not None:
            sample_weight = check_weight(sample_weight, X)[order]
        sample_weight = per_row_weight(query_weight, query_ptr, sample_weight)
        objective = self.objective
        if callable(objective):
            objective = CallableObjective(objective, {"link": "identity"},
                                          qid=sorted_qid)
        kwargs = _evaluation_kwargs(
            eval_set, sample_weight_eval_set, verbose, base_margin,
            base_margin_eval_set, xgb_model, init_score, eval_init_score,
            init_model)
        (kwargs["eval_set"], kwargs["sample_weight_eval_set"], eval_ptrs,
         kwargs["base_margin_eval_set"]) = self._sorted_eval_sets(
            eval_set, eval_qid, eval_group, sample_weight_eval_set,
            kwargs["base_margin_eval_set"], eval_query_weight)
        kwargs["base_margin"] = rows_of(kwargs["base_margin"], order,
                                        X.shape[0])
        if getattr(X, "out_of_core", False):   # rows already by query
            return self._train(X, np.asarray(y), sample_weight, objective,
                               query_ptr=query_ptr, eval_query_ptrs=eval_ptrs,
                               **kwargs)
        X = X[order] if sp.issparse(X) else np.ascontiguousarray(X[order])
        return self._train(
            X, np.asarray(y)[order],
            sample_weight, objective, query_ptr=query_ptr,
            eval_query_ptrs=eval_ptrs, **kwargs)

    fit.__doc__ = fit.__doc__.format(_EVAL_FIT_DOC=_EVAL_FIT_DOC)

    def _sorted_eval_sets(self, eval_set, eval_qid, eval_group,
                          sample_weight_eval_set, base_margin_eval_set=None,
                          eval_query_weight=None):
        """Each eval set's rows grouped by query, its boundaries, its rows'
        weights (``eval_query_weight`` folded in) and its base margin's
        rows in that order."""
        if eval_set is None:
            if eval_query_weight is not None:
                raise ValueError("eval_query_weight needs an eval_set")
            return (None, sample_weight_eval_set, None,
                    base_margin_eval_set)
        eval_set = list(eval_set)
        n_sets = len(eval_set)
        margins = eval_base_margins(base_margin_eval_set, n_sets)
        qids = [None] * n_sets if eval_qid is None else list(eval_qid)
        groups = [None] * n_sets if eval_group is None else list(eval_group)
        weights = ([None] * n_sets if sample_weight_eval_set is None
                   else list(sample_weight_eval_set))
        query_weights = ([None] * n_sets if eval_query_weight is None
                         else list(eval_query_weight))
        if not (len(qids) == len(groups) == len(weights)
                == len(query_weights) == n_sets):
            raise ValueError("eval_qid, eval_group, sample_weight_eval_set "
                             "and eval_query_weight need one entry per "
                             "eval_set pair")
        pairs, sorted_weights, ptrs = [], [], []
        for i, pair in enumerate(eval_set):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("eval_set must be a list of (X, y) pairs")
            X_eval = check_X(self, pair[0], reset=False)
            if qids[i] is None and groups[i] is None:
                raise ValueError(
                    f"eval_set[{i}] has no queries: give eval_qid (or "
                    "eval_group) with one entry per eval_set pair, as for "
                    "XGBoost's and LightGBM's rankers (a ranking metric is "
                    "computed per query)")
            order, ptr, _ = _check_queries(qids[i], groups[i],
                                           X_eval.shape[0], "eval_qid")
            y_eval = _eval_target(pair[1], X_eval.shape[0], i)
            check_per_query_sample_weight(
                weights[i], X_eval.shape[0], ptr,
                f"sample_weight_eval_set[{i}]", "eval_query_weight")
            weight = (None if weights[i] is None
                      else check_weight(weights[i], X_eval)[order])
            weight = per_row_weight(query_weights[i], ptr, weight,
                                    f"eval_query_weight[{i}]")
            pairs.append((X_eval[order], y_eval[order]))
            sorted_weights.append(weight)
            ptrs.append(ptr)
            margins[i] = rows_of(margins[i], order, X_eval.shape[0],
                                 f"base_margin_eval_set[{i}]")
        return pairs, sorted_weights, ptrs, margins

    def predict(self, X, output_margin=False, iteration_range=None,
                base_margin=None):
        """Ranking scores: within a query, higher means ranked higher.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Documents; NaN (and ``missing``) mark missing values.
        output_margin : bool, default=False
            Accepted for symmetry with the other estimators; the scores are
            the margins.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
            Margins the rows start from instead of the fitted intercept
            (``intercept_``), as given to ``fit``: one per row, one per row
            and class for a multiclass model.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            One score per row, in the order of ``X``.
        """
        return self._raw_predict(X, iteration_range, base_margin)[:, 0]

    def score(self, X, y, qid=None):
        """Mean NDCG@``score_k`` over the queries (1 for a query without
        relevant documents).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Documents.
        y : array-like of shape (n_samples,)
            Relevance labels.
        qid : array-like of shape (n_samples,), default=None
            Query id of every row (routed as metadata like ``fit``'s:
            ``set_score_request(qid=True)``). Required when the ranker was
            fitted with ``qid`` or ``group``: without it a ValueError is
            raised, as a single-query NDCG of many queries means nothing.
            Only a ranker fitted without queries (the whole input one
            query) scores without it, the input then being one query.

        Returns
        -------
        score : float
            In [0, 1]; gains follow ``ndcg_exp_gain``.
        """
        check_is_fitted(self)
        if qid is None and getattr(self, "_fitted_on_queries", True):
            raise ValueError(
                "BoostRanker.score needs qid (the query id of every row) "
                "for a ranker fitted with queries: NDCG is a mean over "
                "queries. In model selection, route it with "
                "set_score_request(qid=True) under "
                "sklearn.set_config(enable_metadata_routing=True).")
        scores = self.predict(X)
        y = np.asarray(y, dtype=np.float64)
        order, query_ptr, _ = _check_queries(qid, None, scores.shape[0])
        name = "ndcg" if self.score_k is None else f"ndcg@{self.score_k}"
        metric = get_metric(name, {"ndcg_exp_gain": bool(self.ndcg_exp_gain)})
        return metric(y[order], scores[order], np.ones(y.shape[0]), query_ptr)
