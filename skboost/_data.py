"""Input conversion for the estimators: every X becomes a float32 C-ordered
matrix with NaN for missing values, every weight vector float64.

pandas DataFrames are converted column by column straight into the float32
matrix (no object-dtype copy): numpy numeric and bool columns, the nullable
``Int*``/``UInt*``/``Float*``/``boolean`` dtypes (``pd.NA`` is missing) and
pyarrow-backed numeric and bool columns. Other columns (object, string,
categorical, datetime) raise a ValueError naming them. Columns are matched
by name: at predict time, the training columns in another order are
reordered.
"""

import sys

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import (_check_sample_weight, check_array,
                                      check_X_y, validate_data)

from ._sparse_input import SPARSE_FORMATS, canonical_csr


def check_X(estimator, X, *, reset, y="no_validation", y_numeric=False):
    """Validate X (and y at fit) the scikit-learn way; apply ``missing``.

    Returns float32 C-ordered X in which NaN marks every missing value
    (NaN itself, and the estimator's ``missing`` marker when it is a number).
    """
    missing = estimator.missing
    # An infinite ``missing`` marker must survive validation to be replaced.
    finite_check = False if np.isinf(missing) else "allow-nan"
    kwargs = dict(dtype=np.float32, order="C", ensure_all_finite=finite_check,
                  accept_sparse=SPARSE_FORMATS)
    fitting = not (isinstance(y, str) and y == "no_validation")
    if _is_dataframe(X):
        X = _frame_to_float32(estimator, X, reset)
        if fitting:
            X, y = check_X_y(X, y, y_numeric=y_numeric, estimator=estimator,
                             **kwargs)
        else:
            X = check_array(X, estimator=estimator, **kwargs)
    elif fitting:
        X, y = validate_data(estimator, X, y, y_numeric=y_numeric,
                             reset=reset, **kwargs)
    else:
        X = validate_data(estimator, X, reset=reset, **kwargs)
    if sp.issparse(X):
        X = canonical_csr(X, missing,
                          getattr(estimator, "sparse_absent", "missing"))
        return (X, y) if fitting else X
    if not np.isnan(missing):
        X = np.where(X == np.float32(missing), np.float32(np.nan), X)
    if finite_check is False and np.isinf(X).any():
        raise ValueError("Input X contains infinity (other than the "
                         f"missing marker {missing}).")
    return (X, y) if fitting else X


def _is_dataframe(X):
    pd = sys.modules.get("pandas")  # a DataFrame means pandas is imported
    return pd is not None and isinstance(X, pd.DataFrame)


def _frame_to_float32(estimator, frame, reset):
    """Check the DataFrame's column names (set or compare
    ``feature_names_in_``) and convert it to a float32 C-ordered matrix
    with NaN for missing values, in the training column order."""
    order = None if reset else _training_order(estimator, frame)
    if order is None:
        validate_data(estimator, frame, reset=reset, skip_check_array=True)
        order = range(frame.shape[1])
    _check_column_dtypes(frame)
    out = np.empty((frame.shape[0], len(order)), dtype=np.float32)
    for j, position in enumerate(order):
        out[:, j] = frame.iloc[:, position].to_numpy(dtype=np.float32,
                                                     na_value=np.nan)
    return out


def _training_order(estimator, frame):
    """Positions of the training columns in ``frame`` when it has exactly
    the training columns in another order; None otherwise (then the usual
    checks apply and name any missing or unexpected column)."""
    names = getattr(estimator, "feature_names_in_", None)
    columns = list(frame.columns)
    if (names is None or not all(isinstance(c, str) for c in columns)
            or len(set(columns)) != len(columns)
            or set(columns) != set(names) or columns == list(names)):
        return None
    position = {name: i for i, name in enumerate(columns)}
    return [position[name] for name in names]


def _supported_dtype(dtype):
    from pandas.api import types

    if types.is_bool_dtype(dtype):
        return True
    return (types.is_numeric_dtype(dtype) and not types.is_complex_dtype(dtype)
            and not types.is_timedelta64_dtype(dtype))


def _check_column_dtypes(frame):
    bad = [f"{name!r} ({dtype})" for name, dtype in frame.dtypes.items()
           if not _supported_dtype(dtype)]
    if bad:
        raise ValueError(
            f"DataFrame column{'s' if len(bad) > 1 else ''} {', '.join(bad)} "
            f"{'are' if len(bad) > 1 else 'is'} not numeric: skboost takes "
            "numeric and bool columns, including the nullable (Int64, "
            "Float64, boolean) and pyarrow-backed ones, with missing values "
            "as NaN or pd.NA. Encode or drop the column first (for example "
            "with a ColumnTransformer and an OrdinalEncoder).")


def check_weight(sample_weight, X):
    """Non-negative float64 weights with a positive sum (ones if None)."""
    weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                  ensure_non_negative=True)
    if not np.all(np.isfinite(weight)):
        raise ValueError("sample_weight contains NaN or infinity")
    if X.shape[0] and weight.sum() <= 0:
        raise ValueError("sample_weight must have a positive sum")
    return np.ascontiguousarray(weight)
