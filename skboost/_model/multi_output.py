"""Several targets in one model: multi-output regression and multi-label
classification.

A 2-D ``y`` of shape (n_rows, n_targets) trains one output (one margin
column) per target, as XGBoost does:

- ``multi_strategy="one_output_per_tree"`` (the default): every round
  grows one tree per target, each on its target's gradients, through the
  same growth loop as a single-output model. The targets share nothing but
  the rounds (and the random streams of sampling), so without row or column
  sampling the model of each target is the one a single-target fit would
  give: ``MultiOutputRegressor`` of single-target models, bit for bit.
- ``multi_strategy="multi_output_tree"``: every round grows one tree whose
  leaves hold one value per target (a vector leaf); a split is chosen by
  its gain summed over the targets (``tree/vector_leaf.py``).

:class:`MultiTargetObjective` applies a single-target objective to each
column of ``y``: the squared error and the other pointwise regression
objectives, and ``binary:logistic`` for multi-label classification (one
binary logistic output per label).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import column_or_1d

from ..objectives import Objective

MULTI_STRATEGIES = ("one_output_per_tree", "multi_output_tree")


class MultiTargetObjective(Objective):
    """A pointwise single-target objective applied to each column of a 2-D y.

    Labels are kept as an (n_rows, n_targets) Fortran-ordered array, so that
    the column of target t is contiguous for the gradient kernel. Margins,
    gradients and predictions have one column (output) per target.

    Parameters
    ----------
    base : Objective
        A single-output objective (``n_outputs(None) == 1``).
    n_targets : int
        Number of targets (columns of y), at least 2.
    """

    def __init__(self, base, n_targets):
        super().__init__(base.params)
        self.base = base
        self.n_targets = int(n_targets)
        self.name = base.name
        self.default_metric = base.default_metric
        self.constant_hessian = base.constant_hessian
        self.applies_weights = base.applies_weights

    def n_outputs(self, n_classes):
        return self.n_targets

    def prepare_labels(self, y):
        y = np.asarray(y)
        if y.ndim != 2 or y.shape[1] != self.n_targets:
            raise ValueError(f"y must have shape (n_samples, "
                             f"{self.n_targets}), got {y.shape}")
        columns = [self.base.prepare_labels(y[:, t])
                   for t in range(self.n_targets)]
        return np.asfortranarray(np.column_stack(columns))

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.array([self.base.estimate_base_margin(y[:, t], weight, 1)[0]
                         for t in range(self.n_targets)])

    def base_score_to_margin(self, base_score, n_outputs):
        margin = self.base.base_score_to_margin(base_score, 1)
        return np.repeat(margin, self.n_targets)

    def gradient(self, y, raw, weight, gpair, n_threads):
        for t in range(self.n_targets):
            # the kernels read a target's margins as one contiguous column
            self.base.gradient(y[:, t], np.ascontiguousarray(raw[:, t:t + 1]),
                               weight, gpair[t:t + 1], n_threads)

    def transform(self, raw):
        return self.base.transform(raw)

    def eval_transform(self, raw):
        return self.base.eval_transform(raw)

    def refit_leaves(self):
        return self.base.refit_leaves()

    def leaf_target(self, residual, weight, output):
        return self.base.leaf_target(residual, weight, 0)

    def loss(self, y, raw, weight):
        """Mean over the targets of the base objective's loss."""
        return float(np.mean([self.base.loss(y[:, t], raw[:, t:t + 1], weight)
                              for t in range(self.n_targets)]))


def check_targets(y):
    """A validated y (``check_X_y(multi_output=True)``) as training reads
    it: 1-D for one target (a column vector (n, 1) is raveled with
    scikit-learn's DataConversionWarning), a dense (n, n_targets) matrix
    for several."""
    if sp.issparse(y):
        y = y.toarray()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 0:
        raise ValueError("y has no target column: its shape is "
                         f"{y.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        return column_or_1d(y, warn=True)
    return y


def check_multilabel(y):
    """A 2-D classification target must be a 0/1 indicator matrix
    (scikit-learn's ``multilabel-indicator``)."""
    kind = type_of_target(y)
    if kind != "multilabel-indicator":
        raise ValueError(
            "BoostClassifier with a 2-D y supports multi-label "
            "classification only: y must hold 0/1 labels, one column per "
            f"label (scikit-learn's multilabel-indicator); got {kind!r} "
            "targets (multiclass-multioutput is not supported)")


def flatten_targets(y, prediction, weight):
    """The arguments of an evaluation metric for a multi-target model: every
    (row, target) pair is one observation with its row's weight, as XGBoost
    evaluates multi-target models."""
    n_targets = y.shape[1]
    return (np.ascontiguousarray(y).ravel(),
            np.ascontiguousarray(prediction).ravel(),
            np.repeat(weight, n_targets))
