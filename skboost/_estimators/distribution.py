"""BoostDistributionRegressor: a predictive distribution per row, its
parameters boosted by their negative log-likelihood
(``skboost/distributions.py``)."""

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..distributions import FAMILIES, family_of
from .._input.arrays import check_weight, check_X, reject_external_weight
from .._model.multi_output import check_targets
from .params import store_params
from .base import (_BoostBase, _COMMON_ATTRIBUTES_DOC, _COMMON_PARAMS_DOC,
                   _EVAL_FIT_DOC, _evaluation_kwargs)

# metrics that read a distribution from the margins of its parameters
DISTRIBUTION_METRICS = ("nll", "crps")


class BoostDistributionRegressor(RegressorMixin, _BoostBase):
    __doc__ = f"""Gradient-boosted distributional regression.

    Fits, for every row, the parameters of a predictive distribution by
    boosting their negative log-likelihood: one margin (output) per
    parameter, each on its natural link (the log of scales, shapes, means
    of positive variables and dispersions); ``multi_strategy`` grows one
    tree per parameter and round (the default) or one vector-leaf tree for
    all of them. The hessians are the Fisher information of each
    parameter (a Fisher scoring step, positive by construction); see
    :doc:`/user_guide/uncertainty` and :mod:`skboost.distributions`.

    Parameters
    ----------
    distribution : {{"normal", "lognormal", "gamma", "poisson", "negbinomial", "studentt"}}, default="normal"
        The family: normal (mean, log sd), log-normal (of ``ln y``), gamma
        (log mean, log shape), Poisson (log mean), negative binomial (log
        mean, log size) and Student's t (location, log scale; the degrees
        of freedom fixed by ``student_df``).
    natural_gradient : bool, default=False
        Fit each tree to the natural gradient (each row's gradient divided
        by its Fisher information, unit hessians: NGBoost's scaling)
        instead of the gradient with Fisher hessians.
    student_df : float > 0, default=3
        Degrees of freedom of ``"studentt"`` (``crps`` needs more than 1).{_COMMON_PARAMS_DOC}
    Attributes
    ----------
{_COMMON_ATTRIBUTES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skboost import BoostDistributionRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = BoostDistributionRegressor(n_estimators=20, max_depth=3,
    ...                                  learning_rate=0.1).fit(X, y)
    >>> sorted(reg.predict_params(X[:2]))
    ['loc', 'scale']
    >>> reg.predict_quantiles(X[:2], [0.05, 0.95]).shape
    (2, 2)
    """

    _parameter_constraints = {
        **_BoostBase._parameter_constraints,
        "distribution": [StrOptions(set(FAMILIES))],
        "natural_gradient": ["boolean"],
        "student_df": [Interval(Real, 0.0, None, closed="neither")],
    }

    def __init__(self, *, distribution="normal", n_estimators=100,
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
                 natural_gradient=False, student_df=3.0,
                 verbosity=None, device="cpu", num_parallel_tree=1,
                 multi_strategy="one_output_per_tree",
                 booster="gbtree", rate_drop=0.0, one_drop=False,
                 skip_drop=0.0, sample_type="uniform", normalize_type="tree",
                 max_recoveries=3):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        family = FAMILIES.get(self.distribution)
        tags.target_tags.positive_only = bool(family and family.positive)
        # vector-leaf trees grow on dense X only (tree/methods.py)
        tags.input_tags.sparse = self.multi_strategy != "multi_output_tree"
        return tags

    def _objective_params(self):
        return {**super()._objective_params(),
                "distribution": self.distribution,
                "natural_gradient": bool(self.natural_gradient),
                "student_df": float(self.student_df)}

    @classmethod
    def _around_objective(cls, objective):
        return cls(distribution=objective[len("dist:"):])

    def _saved_objective(self, params):
        """The booster objective a model file of these parameters holds."""
        return "dist:" + params.get("distribution", self.distribution)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, eval_set=None,
            sample_weight_eval_set=None, verbose=False, *,
            base_margin=None, base_margin_eval_set=None, xgb_model=None,
            init_score=None, eval_init_score=None, init_model=None):
        """Fit the distribution's parameters.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN (and ``missing``) mark missing values.
        y : array-like of shape (n_samples,)
            Targets, in the support of ``distribution`` (positive for
            log-normal and gamma, counts for Poisson and negative binomial).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; they scale gradients and hessians.
        {eval_doc}

        Returns
        -------
        self : BoostDistributionRegressor
        """
        X, y = check_X(self, X, y=y, reset=True, y_numeric=True)
        reject_external_weight(X, sample_weight)
        y = check_targets(y).astype(np.float64, copy=False)
        if y.ndim != 1:
            raise ValueError("BoostDistributionRegressor fits one target: y "
                             f"must be 1-D, got shape {y.shape}")
        self._check_eval_metric()
        family_of(self._objective_params()).check_labels(y)
        return self._train(X, y, sample_weight, "dist:" + self.distribution,
                           **_evaluation_kwargs(
                               eval_set, sample_weight_eval_set, verbose,
                               base_margin, base_margin_eval_set, xgb_model,
                               init_score, eval_init_score, init_model))

    fit.__doc__ = fit.__doc__.format(eval_doc=_EVAL_FIT_DOC)

    def _check_eval_metric(self):
        names = self.eval_metric
        names = [] if names is None else (
            [names] if isinstance(names, str) or callable(names) else names)
        for name in names:
            if isinstance(name, str) and name not in DISTRIBUTION_METRICS:
                raise ValueError(
                    f"eval_metric={name!r} does not score a distribution; use "
                    f"{' or '.join(map(repr, DISTRIBUTION_METRICS))}, or a "
                    "callable (it sees the predicted means)")

    def _margins(self, X, iteration_range=None, base_margin=None):
        return self._raw_predict(X, iteration_range, base_margin)

    def _family(self):
        check_is_fitted(self)
        return family_of(self.booster_.objective_params)

    def predict(self, X, iteration_range=None, base_margin=None):
        """The mean of each row's predicted distribution.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples, n_params), default=None
            Margins the rows start from instead of the fitted intercept.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        raw = self._margins(X, iteration_range, base_margin)
        return self._family().mean(raw)

    def predict_params(self, X, iteration_range=None):
        """The parameters of each row's distribution, as scipy.stats names
        them (``loc``/``scale`` for the normal, ``a``/``scale`` for the
        gamma, ``mu`` for the Poisson, ``n``/``p`` for the negative
        binomial, ``s``/``scale`` for the log-normal, ``df``/``loc``/
        ``scale`` for Student's t).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        params : dict of str to ndarray of shape (n_samples,)
        """
        return self._family().natural(self._margins(X, iteration_range))

    def predict_distribution(self, X, iteration_range=None):
        """Each row's predictive distribution, as one frozen
        ``scipy.stats`` distribution with a parameter per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        distribution : scipy.stats frozen distribution
            ``.pdf``/``.pmf``, ``.cdf``, ``.ppf``, ``.mean()``, ``.std()``,
            ``.rvs()`` work elementwise over the rows.
        """
        return self._family().frozen(self._margins(X, iteration_range))

    def predict_quantiles(self, X, q, iteration_range=None):
        """Quantiles of each row's predictive distribution.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        q : float or array-like of floats in (0, 1)
            Probability levels.
        iteration_range : tuple of (int, int), default=None

        Returns
        -------
        quantiles : ndarray of shape (n_samples, n_levels)
        """
        q = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if q.ndim != 1 or q.size == 0 or np.any(~((q > 0) & (q < 1))):
            raise ValueError(f"q must be levels in (0, 1), got {q.tolist()!r}")
        return self._family().quantiles(self._margins(X, iteration_range), q)

    def score(self, X, y, sample_weight=None):
        """Mean log-likelihood of ``y`` under the predicted distributions
        (higher is better; the negative of the ``nll`` metric).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        family = self._family()
        raw = self._margins(X)
        y = family.check_labels(np.asarray(y, dtype=np.float64).ravel())
        if y.shape[0] != raw.shape[0]:
            raise ValueError(f"y has {y.shape[0]} rows, X {raw.shape[0]}")
        weight = check_weight(sample_weight, raw)
        return -float(np.average(family.nll(y, raw), weights=weight))
