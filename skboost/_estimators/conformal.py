"""Conformal prediction on the boosting estimators: intervals
(``BoostRegressor.conformalize`` / ``predict_interval``) and prediction
sets (``BoostClassifier.conformalize`` / ``predict_set``).

Every method turns a score of how badly the model fits a row into a
threshold: with ``n`` calibration scores exchangeable with the score of a
new row, the ``k = ceil((n + 1)(1 - alpha))``-th smallest of them is at
least the new row's score with probability ``>= 1 - alpha`` (and, for
scores without ties, ``<= 1 - alpha + 1 / (n + 1)``); ``k > n`` gives an
infinite threshold (an interval of the whole line, a set of every class).

- ``"split"``: scores ``|y - predict(X)|`` of held-out rows; the interval
  is ``predict(X) +- threshold``.
- ``"cqr"`` (conformalised quantile regression, Romano et al. 2019): a
  ``reg:quantileerror`` model of a low and a high quantile; scores
  ``max(low - y, y - high)``; the interval ``[low - t, high + t]``.
- ``"cv+"`` (Barber et al. 2021): no held-out rows; ``cv`` models refitted
  without each fold, out-of-fold residuals ``R_i``, and the interval from
  the quantiles of ``mu_{-k(i)}(x) -+ R_i`` over the rows ``i``: coverage
  ``>= 1 - 2 alpha - min(2 (1 - 1/K) / (n/K + 1), (1 - K/n) / (K + 1))``
  for ``K`` folds of ``n`` rows (Barber et al., Theorem 4; ``1 - 2 alpha``
  for the jackknife+, ``K = n``), about ``1 - alpha`` in practice.
- ``"aps"`` (adaptive prediction sets, Romano, Sesia & Candes 2020, without
  randomisation): scores the probability mass of the classes at least as
  likely as the true one; the set holds the classes whose score is within
  the threshold (those in decreasing probability while the mass stays
  within it), and the most probable class, so that it is never empty.
"""

import math

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_is_fitted, column_or_1d

REGRESSION_METHODS = ("split", "cqr", "cv+")
CLASSIFICATION_METHODS = ("aps",)


def conformal_threshold(sorted_scores, alpha):
    """The ``ceil((n + 1)(1 - alpha))``-th smallest of ``n`` sorted scores
    (``inf`` when that rank exceeds ``n``)."""
    n = sorted_scores.shape[0]
    rank = math.ceil((n + 1) * (1.0 - alpha) - 1e-12)
    return np.inf if rank > n else float(sorted_scores[rank - 1])


def check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) \
            or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def _calibration_rows(estimator, X, y):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    if y.ndim != 1:
        raise ValueError("conformalize needs a 1-D y (one target), got shape "
                         f"{y.shape}")
    if y.shape[0] < 1:
        raise ValueError("conformalize needs at least one calibration row")
    if getattr(X, "shape", (len(X),))[0] != y.shape[0]:
        raise ValueError(f"X_cal has {X.shape[0]} rows and y_cal "
                         f"{y.shape[0]}")
    return y


def _require(estimator, methods):
    check_is_fitted(estimator)
    calibration = getattr(estimator, "conformal_", None)
    if calibration is None:
        raise ValueError(f"this {type(estimator).__name__} is not "
                         "conformalized: call conformalize(X_cal, y_cal) "
                         "after fit")
    if calibration["method"] not in methods:
        raise ValueError(f"the model is conformalized by "
                         f"{calibration['method']!r}, not one of {methods}")
    return calibration


class ConformalRegressorMixin:
    """``conformalize`` and ``predict_interval`` of BoostRegressor."""

    def conformalize(self, X_cal, y_cal, method="split", *, cv=5):
        """Calibrate prediction intervals of the fitted model.

        The calibration is saved with the model (pickles and model files:
        for ``"cv+"`` the fold models' trees too) and cleared by the next
        ``fit``.

        Parameters
        ----------
        X_cal : array-like of shape (n_samples, n_features)
            Calibration rows: rows the model was not trained on for
            ``"split"`` and ``"cqr"``; the training rows themselves for
            ``"cv+"`` (which refits on folds of them).
        y_cal : array-like of shape (n_samples,)
            Their targets.
        method : {"split", "cqr", "cv+"}, default="split"
            ``"split"``: absolute residuals of ``predict``. ``"cqr"``:
            conformalised quantile regression of a ``reg:quantileerror``
            model with several ``quantile_alpha`` (the lowest and highest
            quantile bound the interval). ``"cv+"``: cross-conformal, ``cv``
            copies of this estimator refitted without each fold.
        cv : int or cross-validation splitter, default=5
            Folds of ``"cv+"`` (scikit-learn's ``check_cv``).

        Returns
        -------
        self : object

        Notes
        -----
        With calibration rows exchangeable with the new rows (drawn from
        the same distribution, independently of the training rows for
        ``"split"`` and ``"cqr"``), the interval covers the new target with
        probability at least ``1 - alpha`` (``"split"``, ``"cqr"``;
        at most ``1 - alpha + 1 / (n + 1)`` for continuous targets) or at
        least ``1 - 2 alpha - min(2 (1 - 1/K) / (n/K + 1), (1 - K/n) /
        (K + 1))`` for ``K`` folds (``"cv+"``; in practice about
        ``1 - alpha``).
        The guarantee is marginal (on average over rows), not per row.
        """
        check_is_fitted(self)
        if method not in REGRESSION_METHODS:
            raise ValueError(f"method must be one of {REGRESSION_METHODS}, "
                             f"got {method!r}")
        y = _calibration_rows(self, X_cal, y_cal).astype(np.float64)
        if method == "cv+":
            calibration = self._cv_plus_calibration(X_cal, y, cv)
        else:
            scores = (self._cqr_scores(X_cal, y) if method == "cqr"
                      else np.abs(y - self._point_prediction(X_cal)))
            calibration = {"method": method, "scores": np.sort(scores)}
        self.conformal_ = calibration
        return self

    def _point_prediction(self, X):
        prediction = np.asarray(self.predict(X))
        if prediction.ndim != 1:
            raise ValueError(
                "split and cv+ conformal need a model of one output (one "
                "target, one quantile); use method='cqr' for a model of "
                "several quantiles")
        return prediction

    def _quantile_bounds(self, X):
        """The lowest and highest quantile of a multi-quantile model."""
        alphas = np.atleast_1d(np.asarray(self.quantile_alpha, dtype=float))
        if self.objective != "reg:quantileerror" or alphas.size < 2:
            raise ValueError(
                "method='cqr' needs objective='reg:quantileerror' with at "
                "least two quantile_alpha (e.g. [0.05, 0.95])")
        quantiles = np.asarray(self.predict(X))
        low = quantiles[:, int(np.argmin(alphas))]
        high = quantiles[:, int(np.argmax(alphas))]
        return np.minimum(low, high), np.maximum(low, high)

    def _cqr_scores(self, X, y):
        low, high = self._quantile_bounds(X)
        return np.maximum(low - y, y - high)

    def _cv_plus_calibration(self, X, y, cv):
        splitter = check_cv(cv, y, classifier=False)
        fold_of_row = np.full(y.shape[0], -1, dtype=np.intp)
        residuals = np.empty(y.shape[0])
        models = []
        for k, (train, test) in enumerate(splitter.split(X, y)):
            model = clone(self).fit(_safe_indexing(X, train), y[train])
            residuals[test] = np.abs(
                y[test] - model._point_prediction(_safe_indexing(X, test)))
            fold_of_row[test] = k
            models.append(model)
        if np.any(fold_of_row < 0):
            raise ValueError("cv must put every row in one test fold")
        return {"method": "cv+", "scores": residuals,
                "fold_of_row": fold_of_row, "models": models}

    def predict_interval(self, X, alpha=0.1):
        """Prediction intervals of nominal coverage ``1 - alpha``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        alpha : float in (0, 1), default=0.1
            Miscoverage: 0.1 for 90% intervals.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
            Bounds (``-inf``/``inf`` when the calibration set is too small
            for ``alpha``: fewer than ``1 / alpha - 1`` rows).
        """
        calibration = _require(self, REGRESSION_METHODS)
        alpha = check_alpha(alpha)
        if calibration["method"] == "cv+":
            return _cv_plus_interval(calibration, X, alpha)
        threshold = conformal_threshold(calibration["scores"], alpha)
        if calibration["method"] == "cqr":
            low, high = self._quantile_bounds(X)
            return low - threshold, high + threshold
        center = self._point_prediction(X)
        return center - threshold, center + threshold


def _cv_plus_interval(calibration, X, alpha):
    """CV+: the quantiles over calibration rows ``i`` of
    ``mu_{-k(i)}(x) - R_i`` (lower) and ``mu_{-k(i)}(x) + R_i`` (upper)."""
    residuals = calibration["scores"]
    n = residuals.shape[0]
    per_fold = np.stack([m._point_prediction(X)
                         for m in calibration["models"]])   # (K, n_test)
    mu = per_fold[calibration["fold_of_row"]]               # (n, n_test)
    rank_high = math.ceil((1.0 - alpha) * (n + 1) - 1e-12)
    rank_low = math.floor(alpha * (n + 1) + 1e-12)
    n_test = mu.shape[1]
    upper = np.full(n_test, np.inf)
    lower = np.full(n_test, -np.inf)
    if rank_high <= n:
        upper = np.partition(mu + residuals[:, None], rank_high - 1,
                             axis=0)[rank_high - 1]
    if rank_low >= 1:
        lower = np.partition(mu - residuals[:, None], rank_low - 1,
                             axis=0)[rank_low - 1]
    return lower, upper


def _aps_masses(proba, labels):
    """For each row: the probability mass of the classes strictly more
    likely than ``labels`` (``before``) and that plus the label's own
    (``through``)."""
    own = proba[np.arange(proba.shape[0]), labels]
    before = np.sum(np.where(proba > own[:, None], proba, 0.0), axis=1)
    return before, before + own


class ConformalClassifierMixin:
    """``conformalize`` and ``predict_set`` of BoostClassifier."""

    def conformalize(self, X_cal, y_cal, method="aps"):
        """Calibrate adaptive prediction sets of the fitted classifier.

        Parameters
        ----------
        X_cal : array-like of shape (n_samples, n_features)
            Calibration rows the model was not trained on.
        y_cal : array-like of shape (n_samples,)
            Their labels (classes the model knows).
        method : {"aps"}, default="aps"
            Adaptive prediction sets: a row's score is the predicted
            probability of the classes at least as likely as its label.

        Returns
        -------
        self : object

        Notes
        -----
        With calibration rows exchangeable with the new rows, the set
        contains the new label with probability at least ``1 - alpha``
        (marginally, over rows; at most ``1 - alpha + 1 / (n + 1)`` plus the
        rare rows whose most probable class alone exceeds the threshold). The scores are saved with the model
        (pickles and model files) and cleared by the next ``fit``.
        """
        check_is_fitted(self)
        if method not in CLASSIFICATION_METHODS:
            raise ValueError(f"method must be one of "
                             f"{CLASSIFICATION_METHODS}, got {method!r}")
        if getattr(self.booster_, "n_targets", 1) > 1:
            raise ValueError("conformalize supports one label per row, not "
                             "multi-label classifiers")
        y = _calibration_rows(self, X_cal, y_cal)
        labels = np.searchsorted(self.classes_, y)
        labels = np.minimum(labels, len(self.classes_) - 1)
        unknown = self.classes_[labels] != y
        if np.any(unknown):
            raise ValueError(f"y_cal has labels the model does not know: "
                             f"{np.unique(y[unknown])[:5].tolist()}")
        _, through = _aps_masses(self._set_probabilities(X_cal), labels)
        self.conformal_ = {"method": method, "scores": np.sort(through)}
        return self

    def _set_probabilities(self, X):
        proba = np.asarray(self.predict_proba(X))
        return np.column_stack([1.0 - proba[:, 0], proba[:, 0]]) \
            if proba.ndim == 1 else proba

    def predict_set(self, X, alpha=0.1):
        """Adaptive prediction sets of nominal coverage ``1 - alpha``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        alpha : float in (0, 1), default=0.1
            Miscoverage: 0.1 for sets that hold the label 90% of the time.

        Returns
        -------
        sets : ndarray of bool, shape (n_samples, n_classes)
            ``sets[i, j]``: class ``classes_[j]`` is in row ``i``'s set.
            Classes enter in decreasing probability while their cumulative
            probability (through the class) stays within the calibrated
            threshold; the most probable class is always in (never empty).
        """
        calibration = _require(self, CLASSIFICATION_METHODS)
        threshold = conformal_threshold(calibration["scores"],
                                        check_alpha(alpha))
        proba = self._set_probabilities(X)
        sets = np.zeros(proba.shape, dtype=bool)
        for j in range(proba.shape[1]):
            _, through = _aps_masses(
                proba, np.full(proba.shape[0], j, dtype=np.intp))
            # exactly the labels whose score is within the threshold: the
            # event of the guarantee
            sets[:, j] = through <= threshold
        sets[np.arange(proba.shape[0]), np.argmax(proba, axis=1)] = True
        return sets
