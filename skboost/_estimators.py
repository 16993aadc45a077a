"""The scikit-learn estimators: parameter validation and fit/predict wiring.

Numerics live in the booster and the kernels; this layer validates input,
encodes labels and hands plain arrays down.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._booster import BoostParams, train
from ._data import check_weight, check_X
from ._importance import IMPORTANCE_TYPES, feature_importances
from ._openmp_helpers import effective_n_threads
from .tree.grower import TreeParams

_FRACTION = Interval(Real, 0.0, 1.0, closed="right")
_NON_NEGATIVE = Interval(Real, 0.0, None, closed="left")


class _BoostBase(BaseEstimator):
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
        "max_delta_step": [_NON_NEGATIVE],
        "subsample": [_FRACTION],
        "colsample_bytree": [_FRACTION],
        "colsample_bylevel": [_FRACTION],
        "colsample_bynode": [_FRACTION],
        "reg_alpha": [_NON_NEGATIVE],
        "reg_lambda": [_NON_NEGATIVE],
        "base_score": [Interval(Real, None, None, closed="neither"), None],
        "random_state": ["random_state"],
        "missing": [Real],
        "importance_type": [StrOptions(set(IMPORTANCE_TYPES))],
    }

    def __init__(self, *, n_estimators=100, max_depth=6, learning_rate=0.3,
                 objective=None, tree_method="hist", max_bin=256,
                 approx_proposal="global", grow_policy="depthwise",
                 max_leaves=0, n_jobs=None, gamma=0.0,
                 min_child_weight=1.0, max_delta_step=0.0, subsample=1.0,
                 colsample_bytree=1.0, colsample_bylevel=1.0,
                 colsample_bynode=1.0, reg_alpha=0.0, reg_lambda=1.0,
                 base_score=None, random_state=None, missing=np.nan,
                 importance_type="gain"):
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
        self.importance_type = importance_type

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _train(self, X, y, sample_weight, objective, n_classes=None):
        if self.grow_policy == "lossguide" and self.tree_method == "exact":
            raise ValueError(
                "grow_policy='lossguide' needs tree_method='hist' or 'approx'; "
                "the exact method grows level by level "
                "(grow_policy='depthwise')")
        if (self.grow_policy == "lossguide" and self.tree_method == "approx"
                and self.approx_proposal == "local"):
            raise ValueError(
                "grow_policy='lossguide' needs approx_proposal='global': local "
                "proposals grow level by level (grow_policy='depthwise')")
        weight = check_weight(sample_weight, X)
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        self.booster_ = train(
            X, y, weight, objective, n_classes,
            BoostParams(n_estimators=self.n_estimators, subsample=self.subsample,
                        tree_method=self.tree_method, max_bin=self.max_bin,
                        approx_proposal=self.approx_proposal,
                        base_score=self.base_score),
            TreeParams(
                max_depth=self.max_depth, max_leaves=self.max_leaves,
                grow_policy=self.grow_policy, learning_rate=self.learning_rate,
                gamma=self.gamma, min_child_weight=self.min_child_weight,
                reg_lambda=self.reg_lambda, reg_alpha=self.reg_alpha,
                max_delta_step=self.max_delta_step,
                colsample_bytree=self.colsample_bytree,
                colsample_bylevel=self.colsample_bylevel,
                colsample_bynode=self.colsample_bynode),
            effective_n_threads(self.n_jobs), np.random.default_rng(seed))
        names = getattr(self, "feature_names_in_", None)
        self.booster_.feature_names = None if names is None else list(names)
        return self

    def _raw_predict(self, X, iteration_range):
        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        return self.booster_.predict_raw(X, iteration_range,
                                         effective_n_threads(self.n_jobs))

    def apply(self, X, iteration_range=None):
        """Leaf reached by each sample in each tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all.

        Returns
        -------
        leaves : ndarray of shape (n_samples, n_trees), int32
            Tree-local node index of the leaf. For multiclass models the
            trees of a round are consecutive, one per class.
        """
        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        return self.booster_.predict_leaves(X, iteration_range,
                                            effective_n_threads(self.n_jobs))

    def get_booster(self):
        """The trained ensemble.

        Returns
        -------
        booster : Booster
            Base margin and trees of the fitted model.
        """
        check_is_fitted(self)
        return self.booster_

    @property
    def feature_importances_(self):
        """Normalised feature importances of type ``importance_type``.

        Returns
        -------
        importances : ndarray of shape (n_features_in_,)
            Non-negative, summing to 1 (all zeros when no tree has a split).
        """
        check_is_fitted(self)
        return feature_importances(self.booster_, self.importance_type)

    def save_model(self, fname):
        """Save the fitted model to a versioned JSON file.

        The file holds everything needed to predict again: parameters,
        classes, feature names, objective, base margin, trees and best
        iteration; a loaded model's predictions are bit-identical.
        Parameters that are not JSON values (a ``RandomState`` instance,
        callables) are saved as None. The file is written atomically.

        Parameters
        ----------
        fname : str or path-like
            Path of the file to write (replaced if it exists).
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
            Path of a file written by :meth:`save_model`.

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
        tree is deep, two walks over the data per level; depth-wise growth
        only).
    grow_policy : {"depthwise", "lossguide"}, default="depthwise"
        ``"depthwise"`` splits every node of a level before the next level;
        ``"lossguide"`` (``"hist"`` and ``"approx"``) always splits the leaf
        with the highest loss reduction, up to ``max_leaves``.
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
    max_delta_step : float >= 0, default=0
        Leaf weights are clipped to ``[-max_delta_step, max_delta_step]``
        before shrinkage; 0 disables clipping.
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
    random_state : int, RandomState instance or None, default=None
        Seed of row and column subsampling.
    missing : float, default=np.nan
        Value marking a missing entry, in addition to NaN.
    importance_type : {"gain", "weight", "cover", "total_gain", \
"total_cover"}, default="gain"
        Definition of ``feature_importances_`` (XGBoost's): the average
        (``gain``) or total loss reduction of the splits on a feature, their
        number (``weight``), or the average or total cover (hessian sum) of
        those splits.
"""


class BoostClassifier(ClassifierMixin, _BoostBase):
    __doc__ = f"""Gradient-boosted trees classifier (regularised, second order).

    Binary targets use ``binary:logistic``; more than two classes switch to
    ``multi:softprob`` (one tree per class per round), as in XGBoost.

    Parameters
    ----------
    objective : {{"binary:logistic", "multi:softprob"}}, default="binary:logistic"
        Training objective.{_COMMON_PARAMS_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_classes_ : int
        Number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when X had string column names.
    booster_ : Booster
        The trained ensemble.

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
        "objective": [StrOptions({"binary:logistic", "multi:softprob"})],
    }

    def __init__(self, *, objective="binary:logistic", n_estimators=100,
                 max_depth=6, learning_rate=0.3, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0,
                 n_jobs=None, gamma=0.0, min_child_weight=1.0,
                 max_delta_step=0.0, subsample=1.0, colsample_bytree=1.0,
                 colsample_bylevel=1.0, colsample_bynode=1.0, reg_alpha=0.0,
                 reg_lambda=1.0, base_score=None, random_state=None,
                 missing=np.nan, importance_type="gain"):
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
            importance_type=importance_type)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosted trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN (and ``missing``) mark missing values.
        y : array-like of shape (n_samples,)
            Class labels of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; they scale gradients and hessians.

        Returns
        -------
        self : BoostClassifier
        """
        X, y = check_X(self, X, y=y, reset=True)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(
                "BoostClassifier needs samples of at least 2 classes in the "
                f"data, but the data contains only one class: {self.classes_[0]!r}")
        objective = self.objective
        if self.n_classes_ > 2 and objective == "binary:logistic":
            objective = "multi:softprob"
        return self._train(X, encoder.transform(y), sample_weight, objective,
                           n_classes=self.n_classes_)

    def decision_function(self, X, iteration_range=None):
        """Raw margins (log-odds for binary, per-class scores for multiclass).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all.

        Returns
        -------
        margins : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Sum of the base margin and the trees' outputs.
        """
        raw = self._raw_predict(X, iteration_range)
        return raw[:, 0] if self.booster_.objective == "binary:logistic" else raw

    def predict_proba(self, X, iteration_range=None):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        raw = self._raw_predict(X, iteration_range)
        from .objectives import get_objective

        proba = get_objective(self.booster_.objective).transform(raw)
        if proba.shape[1] == 1:
            proba = np.column_stack([1.0 - proba[:, 0], proba[:, 0]])
        return proba

    def predict(self, X, output_margin=False, iteration_range=None):
        """Predicted class labels (or raw margins with ``output_margin``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        output_margin : bool, default=False
            Return :meth:`decision_function` instead of labels.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Class labels (or margins with ``output_margin``).
        """
        if output_margin:
            return self.decision_function(X, iteration_range)
        proba = self.predict_proba(X, iteration_range)
        return self.classes_[np.argmax(proba, axis=1)]


class BoostRegressor(RegressorMixin, _BoostBase):
    __doc__ = f"""Gradient-boosted trees regressor (regularised, second order).

    Parameters
    ----------
    objective : {{"reg:squarederror"}}, default="reg:squarederror"
        Training objective.{_COMMON_PARAMS_DOC}
    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when X had string column names.
    booster_ : Booster
        The trained ensemble.

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
        "objective": [StrOptions({"reg:squarederror"})],
    }

    def __init__(self, *, objective="reg:squarederror", n_estimators=100,
                 max_depth=6, learning_rate=0.3, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0,
                 n_jobs=None, gamma=0.0, min_child_weight=1.0,
                 max_delta_step=0.0, subsample=1.0, colsample_bytree=1.0,
                 colsample_bylevel=1.0, colsample_bynode=1.0, reg_alpha=0.0,
                 reg_lambda=1.0, base_score=None, random_state=None,
                 missing=np.nan, importance_type="gain"):
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
            importance_type=importance_type)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosted trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN (and ``missing``) mark missing values.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; they scale gradients and hessians.

        Returns
        -------
        self : BoostRegressor
        """
        X, y = check_X(self, X, y=y, reset=True, y_numeric=True)
        return self._train(X, y, sample_weight, self.objective)

    def predict(self, X, output_margin=False, iteration_range=None):
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; NaN (and ``missing``) mark missing values.
        output_margin : bool, default=False
            Return the raw margin (identical for ``reg:squarederror``).
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Predicted targets.
        """
        raw = self._raw_predict(X, iteration_range)
        if not output_margin:
            from .objectives import get_objective

            raw = get_objective(self.booster_.objective).transform(raw)
        return raw[:, 0]
