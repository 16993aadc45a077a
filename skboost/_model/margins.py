"""Base margins given per row (XGBoost's ``base_margin``, LightGBM's
``init_score``) and the fitted intercept.

A row's margin is where boosting starts for that row instead of the
model's fitted base margin (the intercept): the trees are grown on the
gradients at ``base_margin + trees so far``, and a prediction made with a
base margin is ``base_margin + trees``, without the intercept, as in
XGBoost. Prediction without a base margin uses the intercept.
"""

import numpy as np

from .limits import check_margin_limits


def pick_alias(name, value, alias, alias_value):
    """The value of ``name`` or of its alias (another library's name); both
    given is an error."""
    if alias_value is None:
        return value
    if value is not None:
        raise TypeError(f"give {name} or {alias} (LightGBM's name for it), "
                        "not both")
    return alias_value


def check_base_margin(base_margin, n_rows, n_outputs, what="base_margin"):
    """``base_margin`` as a float64 C-ordered (n_rows, n_outputs) array.

    Accepted: shape (n_rows,) or (n_rows, 1) for a model with one output,
    (n_rows, n_outputs) for several (one column per class), and the
    flattened row-major (n_rows * n_outputs,) form XGBoost also reads.
    """
    if base_margin is None:
        return None
    try:
        margin = np.asarray(base_margin, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numeric, got "
                         f"{type(base_margin).__name__}") from None
    if margin.ndim == 1 and margin.shape[0] == n_rows * n_outputs:
        margin = margin.reshape(n_rows, n_outputs)
    elif margin.ndim == 2 and margin.shape == (n_rows, n_outputs):
        pass
    else:
        expected = (f"({n_rows},)" if n_outputs == 1
                    else f"({n_rows}, {n_outputs}) (one column per output)")
        raise ValueError(f"{what} must have shape {expected} for this model "
                         f"and data, got {margin.shape}")
    check_margin_limits(margin, what)  # finite, and within the label limit
    return np.ascontiguousarray(margin)


def rows_of(base_margin, rows, n_rows, what="base_margin"):
    """The base margin's rows ``rows`` (indices into its ``n_rows`` rows),
    for a fit that reorders (ranking) or splits (hold-out) its rows. The
    flattened (n_rows * n_outputs,) form is reshaped to rows first."""
    if base_margin is None:
        return None
    margin = np.asarray(base_margin, dtype=np.float64)
    if margin.ndim == 1 and n_rows and margin.shape[0] != n_rows \
            and margin.shape[0] % n_rows == 0:
        margin = margin.reshape(n_rows, -1)
    if margin.ndim not in (1, 2) or margin.shape[0] != n_rows:
        raise ValueError(f"{what} must have one row per sample ({n_rows}), "
                         f"got shape {margin.shape}")
    return margin[rows]


def eval_base_margins(base_margin_eval_set, n_sets):
    """One base margin (or None) per eval_set pair."""
    if base_margin_eval_set is None:
        return [None] * n_sets
    margins = list(base_margin_eval_set)
    if len(margins) != n_sets:
        raise ValueError(f"base_margin_eval_set has {len(margins)} entries "
                         f"for {n_sets} eval_set pairs")
    return margins


def intercept(booster):
    """The fitted base score as XGBoost's ``intercept_`` reports it: in
    prediction space for a model with one output (a probability for
    ``binary:logistic``, a mean for ``count:poisson``), the margins of a
    model with several (softmax has no inverse: one margin per class)."""
    from ..objectives import BinaryLogitRaw, _LogisticBase, _LogLink, get_objective

    margin = np.asarray(booster.base_margin, dtype=np.float64)
    if margin.shape[0] != 1:
        return margin.copy()
    try:
        objective = get_objective(booster.objective,
                                  getattr(booster, "objective_params", None))
    except ValueError:  # a callable objective: no known link
        return margin.copy()
    if isinstance(objective, (_LogisticBase, _LogLink)) and not isinstance(
            objective, BinaryLogitRaw):
        return objective.transform(margin[np.newaxis, :])[0]
    return margin.copy()
