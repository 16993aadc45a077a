"""BoostRegressor: regression, one or several targets."""

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..objectives import (REGRESSION_OBJECTIVES, SURVIVAL_OBJECTIVES,
                          CallableObjective)
from .._survival import (AFT_DISTRIBUTIONS, aft_bounds, concordance_index,
                         cox_labels)
from .._input.arrays import check_X, reject_external_weight
from .._model.multi_output import check_targets
from .conformal import ConformalRegressorMixin
from .params import store_params
from .base import (_BoostBase, _COMMON_ATTRIBUTES_DOC, _COMMON_PARAMS_DOC,
                   _EVAL_FIT_DOC, _evaluation_kwargs, POSITIVE_TARGETS,
                   fit_or_restore)


class BoostRegressor(ConformalRegressorMixin, RegressorMixin, _BoostBase):
    __doc__ = f"""Gradient-boosted trees regressor (regularised, second order).

    Parameters
    ----------
    objective : str or callable, default="reg:squarederror"
        Training objective: ``"reg:squarederror"``, ``"reg:squaredlogerror"``,
        ``"reg:pseudohubererror"``, ``"reg:absoluteerror"``,
        ``"reg:quantileerror"``, ``"reg:logistic"``, ``"count:poisson"``,
        ``"reg:gamma"`` or ``"reg:tweedie"``, the survival objectives
        ``"survival:cox"`` and ``"survival:aft"`` (:doc:`/user_guide/survival`:
        ``y`` holds times, negative when censored, or scikit-survival's
        (event, time) array, or for AFT (n, 2) interval bounds; ``predict``
        gives relative risks for Cox, times for AFT; ``score`` Harrell's
        concordance index), or a function ``obj(y_true,
        y_pred, *, sample_weight) -> (grad, hess)`` of the margins
        (``sample_weight`` optional: when the function takes it, it must
        apply the weights itself). See :doc:`/user_guide/objectives`.
    huber_slope : float > 0, default=1
        Slope ``s`` of ``reg:pseudohubererror`` (and the ``mphe`` metric).
    quantile_alpha : float or array-like of floats in (0, 1), default=0.5
        Quantile(s) of ``reg:quantileerror``; several quantiles give one
        output (one tree per round) each, and ``predict`` a column each.
    tweedie_variance_power : float in [1, 2), default=1.5
        Variance power of ``reg:tweedie``.
    aft_loss_distribution : {{"normal", "logistic", "extreme"}}, default="normal"
        Distribution of the noise of ``survival:aft``'s log-times.
    aft_loss_distribution_scale : float > 0, default=1
        Scale (sigma) of that noise.{_COMMON_PARAMS_DOC}
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
        "objective": [StrOptions(set(REGRESSION_OBJECTIVES)
                                 | set(SURVIVAL_OBJECTIVES)), callable],
        "huber_slope": [Interval(Real, 0.0, None, closed="neither")],
        "quantile_alpha": [Interval(Real, 0.0, 1.0, closed="neither"),
                           "array-like"],
        "tweedie_variance_power": [Interval(Real, 1.0, 2.0,
                                            closed="left")],
        "aft_loss_distribution": [StrOptions(set(AFT_DISTRIBUTIONS))],
        "aft_loss_distribution_scale": [Interval(Real, 0.0, None,
                                                 closed="neither")],
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
                 multi_strategy="one_output_per_tree",
                 aft_loss_distribution="normal",
                 aft_loss_distribution_scale=1.0,
                 booster="gbtree", rate_drop=0.0, one_drop=False,
                 skip_drop=0.0, sample_type="uniform", normalize_type="tree",
                 max_recoveries=3):
        store_params(self, locals())

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
                "tweedie_variance_power": self.tweedie_variance_power,
                **self._aft_params()}

    def _aft_params(self):
        """survival:aft's parameters (none for the other objectives, whose
        model files then keep their form)."""
        if self.objective != "survival:aft":
            return {}
        return {"aft_loss_distribution": self.aft_loss_distribution,
                "aft_loss_distribution_scale": float(
                    self.aft_loss_distribution_scale)}

    @fit_or_restore
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
        if self.objective in SURVIVAL_OBJECTIVES:
            return self._fit_survival(X, y, sample_weight, **_evaluation_kwargs(
                eval_set, sample_weight_eval_set, verbose, base_margin,
                base_margin_eval_set, xgb_model, init_score, eval_init_score,
                init_model))
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

    def _fit_survival(self, X, y, sample_weight, **evaluation):
        """``fit`` with a survival objective: y read as times (Cox, AFT) or
        intervals (AFT), the eval sets' y alike."""
        labels = self._survival_labels(y)
        # X and the row count checked against one finite column of labels
        X, _ = check_X(self, X, y=labels if labels.ndim == 1 else labels[:, 0],
                       reset=True, y_numeric=True)
        reject_external_weight(X, sample_weight)
        return self._train(X, labels, sample_weight, self.objective,
                           eval_labels=self._survival_labels, **evaluation)

    def _survival_labels(self, y):
        """Survival labels as the objective reads them (ValueError on bad
        ones): signed times for Cox, [lower, upper] bounds for AFT."""
        if self.objective == "survival:cox":
            return cox_labels(y)
        return aft_bounds(y)

    def score(self, X, y, sample_weight=None):
        """R² of the predictions, or for a survival objective Harrell's
        concordance index (the share of comparable pairs whose earlier
        event gets the higher risk; 0.5 is chance).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like
            Targets; for a survival objective, labels as ``fit`` takes them.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of R²; the concordance index takes none.

        Returns
        -------
        score : float
        """
        if self.objective not in SURVIVAL_OBJECTIVES:
            return super().score(X, y, sample_weight=sample_weight)
        if sample_weight is not None:
            raise ValueError("the concordance index of a survival model "
                             "takes no sample_weight")
        return survival_concordance(self.objective, self._survival_labels(y),
                                    self.predict(X))

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


def survival_concordance(objective, labels, prediction):
    """Harrell's concordance of a survival model's predictions: relative
    risks (Cox) as they are, predicted times (AFT) negated (a longer time
    is a lower risk). An AFT row counts as an event where its bounds are
    equal, else as censored at its lower bound."""
    if objective == "survival:cox":
        return concordance_index(labels > 0, np.abs(labels), prediction)
    lower, upper = labels[:, 0], labels[:, 1]
    return concordance_index(lower == upper, lower, -prediction)
