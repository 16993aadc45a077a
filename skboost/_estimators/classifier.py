"""BoostClassifier: binary, multi-class and multi-label classification."""

import warnings
from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import (check_classification_targets,
                                      type_of_target)
from sklearn.utils.validation import check_is_fitted

from ..objectives import CLASSIFICATION_OBJECTIVES, CallableObjective
from .._input.arrays import check_X, reject_external_weight
from .._model.multi_output import (check_multilabel,
                            check_targets)
from .conformal import ConformalClassifierMixin
from .params import store_params
from .base import (_BoostBase, _COMMON_ATTRIBUTES_DOC, _COMMON_PARAMS_DOC,
                   _EVAL_FIT_DOC, _evaluation_kwargs, class_weighted,
                   fit_or_restore)


class BoostClassifier(ConformalClassifierMixin, ClassifierMixin, _BoostBase):
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
                 multi_strategy="one_output_per_tree",
                 booster="gbtree", rate_drop=0.0, one_drop=False,
                 skip_drop=0.0, sample_type="uniform", normalize_type="tree",
                 max_recoveries=3):
        store_params(self, locals())

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
        classes, encode = _classes_and_encoder(y, X)
        self._check_warm_start_classes(classes)
        self.classes_ = classes
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
        encoded = encode()
        del y, encode
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
        if "booster_" not in self.__dict__:   # (check_is_fitted is slow)
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
        if proba.shape[1] == 1:   # (column_stack, without its overhead)
            both = np.empty((proba.shape[0], 2))
            both[:, 0] = 1.0 - proba[:, 0]
            both[:, 1] = proba[:, 0]
            proba = both
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




def _classes_and_encoder(y, X):
    """The classes of labels ``y`` (sorted, checked as classification
    targets) and a function giving each row's class index as training
    reads it (``_encode_labels``).

    In core with numeric labels, one ``_unique_labels`` pass gives both (the
    distinct values, sorted, and each row's index among them): the checks
    and a ``LabelEncoder`` each sorted every label again (three passes
    over y, ~40 ms on 1,000,000 rows). Other labels (strings, objects,
    out of core) go through ``LabelEncoder``, whose messages name mixed
    types."""
    if not getattr(X, "out_of_core", False) and y.dtype.kind in "biuf":
        classes, indices = _unique_labels(y)
        _check_class_labels(classes, y.shape[0])
        return classes, lambda: indices.reshape(-1).astype(np.float64)
    labels = _label_values(y, X)
    if labels is y:
        check_classification_targets(y)
    else:   # out of core: the distinct labels
        _check_class_labels(labels, y.shape[0])
    encoder = LabelEncoder().fit(labels)
    return encoder.classes_, lambda: _encode_labels(encoder, y, X)


# Widest range of integer labels counted instead of sorted (a count per
# value in the range: 512 KB of int64 at most)
_COUNTED_LABEL_RANGE = 1 << 16


def _unique_labels(y):
    """``np.unique(y, return_inverse=True)`` (the inverse flat): integer
    labels within a small range by counting (``np.bincount``) instead of a
    sort, ~70 ms -> ~3 ms on 500,000 labels; others by ``np.unique``."""
    if y.dtype.kind not in "iu" or y.size == 0:
        return np.unique(y, return_inverse=True)
    low, high = y.min(), y.max()
    if int(high) - int(low) >= _COUNTED_LABEL_RANGE:
        return np.unique(y, return_inverse=True)
    # each label's offset above the lowest, in 64 bits (a narrower type
    # may not hold it: int8 labels -100 .. 100); a 64-bit difference does
    # not overflow, as it is at most the small range
    wide = y if y.dtype.itemsize == 8 else y.astype(np.int64)
    offset = (wide - wide.dtype.type(low)).astype(np.intp).reshape(-1)
    present = np.bincount(offset) > 0
    # the present offsets back to labels (modular in y's type: exact, as
    # every label fits it)
    classes = np.flatnonzero(present).astype(y.dtype) + low
    # each present value's rank among the present ones: its class index
    rank = np.cumsum(present, dtype=np.intp) - 1
    return classes.astype(y.dtype, copy=False), rank[offset]


def _check_class_labels(values, n_samples):
    """``check_classification_targets`` of labels from their distinct
    ``values``, sorted (a label's kind depends on the values only), its warning
    about more classes than half the samples counted on the ``n_samples``
    labels themselves (not on the distinct values)."""
    kind = type_of_target(values, input_name="y")
    if kind not in ("binary", "multiclass"):
        # check_classification_targets's message
        raise ValueError(
            f"Unknown label type: {kind}. Maybe you are trying to fit a "
            "classifier, which expects discrete classes on a regression "
            "target with continuous values.")
    if (kind == "multiclass" and n_samples > 20
            and values.shape[0] > round(0.5 * n_samples)):
        warnings.warn(
            "The number of unique classes is greater than 50% of the number "
            "of samples. `y` could represent a regression problem, not a "
            "classification problem.", UserWarning, stacklevel=4)


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
