"""Training objectives: gradients, link functions and base-score estimates.

An objective turns raw margins (the sum of the trees plus the base margin)
into per-row gradient pairs for the next round, and into predictions. The
per-row arithmetic runs in the Cython kernels of ``_objectives.pyx``.

=====================  =================  ====================================
name                   outputs per row    base score estimated from the data
=====================  =================  ====================================
``reg:squarederror``   1 (identity)       weighted mean of y
``binary:logistic``    1 (probability)    log-odds of the weighted mean of y
``multi:softprob``     K (probabilities)  centred log weighted class priors
=====================  =================  ====================================
"""

from abc import ABC, abstractmethod

import numpy as np
from scipy.special import expit, log_softmax, logit, softmax

from . import _objectives

# Class frequencies are clipped to [PRIOR_FLOOR, 1 - PRIOR_FLOOR] before
# taking logs, so a class with (weighted) frequency 0 or 1 gives a finite
# base margin.
PRIOR_FLOOR = 1e-7


class Objective(ABC):
    """Interface of a training objective (see the module docstring)."""

    name = None

    def n_outputs(self, n_classes):
        """Number of raw margins per row (trees per boosting round)."""
        return 1

    def prepare_labels(self, y):
        """Labels as the gradient kernel wants them; raise on invalid ones."""
        return np.ascontiguousarray(y, dtype=np.float64)

    @abstractmethod
    def estimate_base_margin(self, y, weight, n_outputs):
        """Margin that minimises the weighted loss of a constant model."""

    def base_score_to_margin(self, base_score, n_outputs):
        """User's ``base_score`` (in prediction space) as a margin vector."""
        return np.full(n_outputs, float(base_score))

    @abstractmethod
    def gradient(self, y, raw, weight, gpair, n_threads):
        """Fill ``gpair`` of shape (n_outputs, n_rows, 2) at margins ``raw``."""

    def transform(self, raw):
        """Predictions (n_rows, n_outputs) from margins."""
        return raw

    @abstractmethod
    def loss(self, y, raw, weight):
        """Weighted mean loss, the quantity boosting decreases."""


class SquaredError(Objective):
    """``reg:squarederror``: ``l = 1/2 (y - m)^2``."""

    name = "reg:squarederror"

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.array([np.average(y, weights=weight)])

    def gradient(self, y, raw, weight, gpair, n_threads):
        _objectives.squared_error_gradient(y, raw[:, 0], weight, gpair[0],
                                           n_threads)

    def loss(self, y, raw, weight):
        return float(np.average(0.5 * (raw[:, 0] - y) ** 2, weights=weight))


class BinaryLogistic(Objective):
    """``binary:logistic``: log loss of ``p = sigmoid(m)``."""

    name = "binary:logistic"

    def prepare_labels(self, y):
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.size and (y.min() < 0 or y.max() > 1):
            raise ValueError("binary:logistic needs labels in [0, 1]")
        return y

    def estimate_base_margin(self, y, weight, n_outputs):
        mean = np.clip(np.average(y, weights=weight), PRIOR_FLOOR,
                       1 - PRIOR_FLOOR)
        return np.array([logit(mean)])

    def base_score_to_margin(self, base_score, n_outputs):
        if not 0.0 < base_score < 1.0:
            raise ValueError(
                "base_score must be in (0, 1) for binary:logistic, got "
                f"{base_score}")
        return np.array([logit(base_score)])

    def gradient(self, y, raw, weight, gpair, n_threads):
        _objectives.logistic_gradient(y, raw[:, 0], weight, gpair[0], n_threads)

    def transform(self, raw):
        return expit(raw)

    def loss(self, y, raw, weight):
        m = raw[:, 0]
        # log(1 + exp(m)) - y m, written to avoid overflow
        return float(np.average(np.logaddexp(0.0, m) - y * m, weights=weight))


class MultiSoftprob(Objective):
    """``multi:softprob``: cross-entropy of ``p = softmax(m)`` over K classes."""

    name = "multi:softprob"

    def n_outputs(self, n_classes):
        return n_classes

    def prepare_labels(self, y):
        y = np.asarray(y)
        if y.size and (y.min() < 0 or np.any(y != np.round(y))):
            raise ValueError("multi:softprob needs class indices 0..K-1")
        return np.ascontiguousarray(y, dtype=np.int32)

    def estimate_base_margin(self, y, weight, n_outputs):
        priors = np.bincount(y, weights=weight, minlength=n_outputs)
        log_priors = np.log(np.clip(priors / priors.sum(), PRIOR_FLOOR, 1.0))
        # softmax is invariant to a common shift: centre the margins (as
        # XGBoost does) so that decision_function values are comparable
        return log_priors - log_priors.mean()

    def gradient(self, y, raw, weight, gpair, n_threads):
        _objectives.softmax_gradient(y, raw, weight, gpair, n_threads)

    def transform(self, raw):
        return softmax(raw, axis=1)

    def loss(self, y, raw, weight):
        log_p = log_softmax(raw, axis=1)
        return float(np.average(-log_p[np.arange(y.shape[0]), y],
                                weights=weight))


OBJECTIVES = {cls.name: cls for cls in (SquaredError, BinaryLogistic,
                                        MultiSoftprob)}


def get_objective(name):
    """The objective registered under ``name``."""
    try:
        return OBJECTIVES[name]()
    except KeyError:
        raise ValueError(
            f"Unknown objective {name!r}; expected one of "
            f"{sorted(OBJECTIVES)}") from None
