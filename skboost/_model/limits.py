"""Limits on the magnitudes training can hold, checked before and during
training so that an extreme value ends in a ValueError naming it.

Why there are limits at all: gradients and hessians are float32 per row
(finite below about 3.4e38), and a split's gain squares the weighted
gradient sum G (``G**2 / (H + lambda)``), which overflows float64 once
``|G|`` passes about 1e154. The fixed-point histogram sums adapt their
scale to the data and cannot overflow, but the gain computed from them
can. The limits below keep every such quantity finite with room to spare:

- ``sample_weight`` (and the weights of ``eval_set``) sum to at most
  ``MAX_WEIGHT_SUM`` (1e100), so ``|G| <= 1e100 * 3.4e38``;
- regression labels and ``base_score`` are at most ``MAX_ABS_LABEL``
  (1e36) in magnitude, so a residual ``margin - y`` fits a float32
  gradient;
- with ``count:poisson``, ``max_delta_step`` (which enters its hessian as
  ``exp(margin + max_delta_step)``) is at most ``MAX_POISSON_DELTA_STEP``;
- whatever the combination, every round's gradients and hessians are
  checked (``check_gradients``): a non-finite one, or a weighted sum beyond
  ``MAX_GRADIENT_SUM``, stops training with a ValueError naming the
  quantities to change.

The regularisation parameters (``reg_lambda``, ``reg_alpha``, ``gamma``,
``min_child_weight``, ``max_delta_step``) must be finite (their parameter
constraints); any finite value gives finite gains.
"""

import numpy as np

from .._objectives import largest_magnitude, pair_magnitudes

MAX_WEIGHT_SUM = 1e100
MAX_ABS_LABEL = 1e36
# exp(88.7) is the largest float32: leave room for the margin
MAX_POISSON_DELTA_STEP = 40.0
# |sum of weighted gradients| below it: its square stays finite
MAX_GRADIENT_SUM = 1e150


def check_weight_limits(weight, name="sample_weight"):
    """Finite weights summing to at most ``MAX_WEIGHT_SUM``."""
    total = float(np.sum(weight))
    if not np.isfinite(total) or total > MAX_WEIGHT_SUM:
        raise ValueError(
            f"{name} sums to {total:.3g}, beyond the limit of "
            f"{MAX_WEIGHT_SUM:g}: the split gains square weighted gradient "
            f"sums and would overflow; divide {name} by a constant (only "
            "ratios of weights matter, with min_child_weight scaled alike)")


def check_label_limits(y, name="y"):
    """Regression (and ranking) labels within ``MAX_ABS_LABEL``."""
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return    # not numbers: the objective's label check names them
    if y.size == 0:
        return
    largest = float(np.nanmax(np.abs(y), initial=0.0))
    if largest > MAX_ABS_LABEL:
        raise ValueError(
            f"{name} holds a label of magnitude {largest:.3g}, beyond the "
            f"limit of {MAX_ABS_LABEL:g} (gradients are float32); rescale "
            "the target")


def check_base_score_limit(base_score):
    """``base_score`` (in label space) within ``MAX_ABS_LABEL``."""
    if base_score is not None and abs(float(base_score)) > MAX_ABS_LABEL:
        raise ValueError(
            f"base_score={base_score!r} is beyond the limit of "
            f"{MAX_ABS_LABEL:g} in magnitude (gradients are float32)")


def check_poisson_delta_step(objective, max_delta_step):
    """``count:poisson``'s ``max_delta_step`` within its limit."""
    if (objective == "count:poisson" and max_delta_step is not None
            and max_delta_step > MAX_POISSON_DELTA_STEP):
        raise ValueError(
            f"max_delta_step={max_delta_step!r} is beyond the limit of "
            f"{MAX_POISSON_DELTA_STEP:g} for count:poisson, whose hessian "
            "is exp(margin + max_delta_step) in float32")


def _given_extremes(extremes, n_outputs):
    """The (n_outputs, 3) float64 triples an objective's gradient returned,
    or None when it returned anything else (a subclass of ``Objective``
    may return what it likes: only exactly one triple per output is
    trusted, since the fixed-point scales are taken from them)."""
    if extremes is None:
        return None
    try:
        maxima = np.asarray(extremes, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return maxima if maxima.shape == (n_outputs, 3) else None


def check_gradients(gpair, weight_sum, objective_name, iteration,
                    n_threads=1, extremes=None):
    """After a round's gradients: all finite, and the weighted sums bounded
    by ``MAX_GRADIENT_SUM`` (``max |g| * sum of weights``, a bound that
    does not depend on the order of the rows), on up to ``n_threads``.

    Returns the extremes it found, ``(max |g|, max |h|, least h)`` per
    output (an (n_outputs, 3) array) for float32 C-ordered pairs of shape
    (n_outputs, n_rows, 2), else None: the histogram finders' fixed-point
    scales (and their test of positive hessians) take them instead of
    another pass (``GrowthDriver.grow``). ``extremes``: those triples,
    one per output, already taken by the objective's gradient kernel
    (``Objective.gradient``'s return), used instead of a pass here."""
    maxima = None
    # max |g|, max |h| (and the least h) in one parallel pass, no |gpair|
    # temporary (as large as the gradients); NaN when one is NaN
    if (gpair.dtype == np.float32 and gpair.flags.c_contiguous
            and gpair.ndim == 3 and gpair.shape[2] == 2):
        maxima = _given_extremes(extremes, gpair.shape[0])
        if maxima is None:
            maxima = np.array([pair_magnitudes(pairs, n_threads,
                                               least_hessian=True)
                               for pairs in gpair]).reshape(-1, 3)
        largest = (float("nan") if np.isnan(maxima[:, :2]).any()
                   else float(maxima[:, :2].max(initial=0.0)))
    elif gpair.dtype == np.float32 and gpair.flags.c_contiguous:
        largest = largest_magnitude(gpair.reshape(-1), n_threads)
    else:
        largest = (float(max(np.max(gpair), -np.min(gpair))) if gpair.size
                   else 0.0)
    if np.isfinite(largest) and largest * weight_sum <= MAX_GRADIENT_SUM:
        return maxima
    what = ("non-finite gradients or hessians" if not np.isfinite(largest)
            else f"gradients up to {largest:.3g} which, times the sum of "
                 f"sample_weight {weight_sum:.3g}, pass the limit of "
                 f"{MAX_GRADIENT_SUM:g}")
    raise ValueError(
        f"round {iteration}: the objective {objective_name!r} gave {what}. "
        "The labels, base_score or max_delta_step are too large for float32 "
        "gradients (or a custom objective returned such values); rescale "
        "the target or lower them")


def check_margin_limits(margin, name="base_margin"):
    """Per-row starting margins (XGBoost's ``base_margin`` of ``fit`` and
    ``predict``): finite and within ``MAX_ABS_LABEL``, like ``base_score``
    (the margin enters every gradient)."""
    margin = np.asarray(margin, dtype=np.float64)
    if not np.all(np.isfinite(margin)):
        raise ValueError(f"{name} contains NaN or infinity")
    largest = float(np.max(np.abs(margin), initial=0.0))
    if largest > MAX_ABS_LABEL:
        raise ValueError(
            f"{name} holds a margin of magnitude {largest:.3g}, beyond the "
            f"limit of {MAX_ABS_LABEL:g} (gradients are float32)")
