"""Input conversion for the estimators: every X becomes a float32 C-ordered
matrix with NaN for missing values, every weight vector float64."""

import numpy as np
from sklearn.utils.validation import _check_sample_weight, validate_data


def check_X(estimator, X, *, reset, y="no_validation", y_numeric=False):
    """Validate X (and y at fit) the scikit-learn way; apply ``missing``.

    Returns float32 C-ordered X in which NaN marks every missing value
    (NaN itself, and the estimator's ``missing`` marker when it is a number).
    """
    missing = estimator.missing
    # An infinite ``missing`` marker must survive validation to be replaced.
    finite_check = False if np.isinf(missing) else "allow-nan"
    kwargs = dict(dtype=np.float32, order="C", ensure_all_finite=finite_check,
                  accept_sparse=False, reset=reset)
    fitting = not (isinstance(y, str) and y == "no_validation")
    if fitting:
        X, y = validate_data(estimator, X, y, y_numeric=y_numeric, **kwargs)
    else:
        X = validate_data(estimator, X, **kwargs)
    if not np.isnan(missing):
        X = np.where(X == np.float32(missing), np.float32(np.nan), X)
    if finite_check is False and np.isinf(X).any():
        raise ValueError("Input X contains infinity (other than the "
                         f"missing marker {missing}).")
    return (X, y) if fitting else X


def check_weight(sample_weight, X):
    """Non-negative float64 weights with a positive sum (ones if None)."""
    weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                  ensure_non_negative=True)
    if not np.all(np.isfinite(weight)):
        raise ValueError("sample_weight contains NaN or infinity")
    if X.shape[0] and weight.sum() <= 0:
        raise ValueError("sample_weight must have a positive sum")
    return np.ascontiguousarray(weight)
