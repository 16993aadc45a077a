"""Input conversion for the estimators: every X becomes a float32 C-ordered
matrix with NaN for missing values, every weight vector float64.

pandas DataFrames are converted column by column straight into the float32
matrix (no object-dtype copy): numpy numeric and bool columns, the nullable
``Int*``/``UInt*``/``Float*``/``boolean`` dtypes (``pd.NA`` is missing) and
pyarrow-backed numeric and bool columns, and ``category`` columns, which
become categorical features (``categorical.py``: their category codes,
re-coded by value at predict). Other columns (object, string, datetime)
raise a ValueError naming them. Columns are matched by name: at predict
time, the training columns in another order are reordered. polars
DataFrames and pyarrow Tables are read the same way, column by column
(``frames.py``).
"""

import sys

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import (_check_sample_weight, check_array,
                                      check_X_y, validate_data)

from .categorical import (CategoryMap, code_sparse, dtype_categories,
                           dtype_codes, is_category_dtype,
                           resolve_categorical_features,
                           sparse_value_categories, value_categories,
                           value_codes)
from .frames import frame_to_float32, is_other_frame
from .._model.limits import check_weight_limits
from .sparse import (SPARSE_FORMATS, canonical_csr,
                            check_sparse_structure)


def check_X(estimator, X, *, reset, y="no_validation", y_numeric=False,
            multi_output=False):
    """Validate X (and y at fit) the scikit-learn way; apply ``missing``.

    Returns float32 C-ordered X in which NaN marks every missing value
    (NaN itself, and the estimator's ``missing`` marker when it is a number)
    and categorical features hold category codes; ``multi_output`` allows
    a 2-D y (several targets). At fit (``reset``) the
    categorical features and their categories are recorded in
    ``estimator._category_map_`` (None without any).
    """
    if hasattr(X, "_check_for_estimator"):   # skboost.ExternalData
        return X._check_for_estimator(estimator, y=None if isinstance(
            y, str) else y, reset=reset, y_numeric=y_numeric,
            multi_output=multi_output)
    missing = estimator.missing
    # An infinite ``missing`` marker must survive validation to be replaced.
    finite_check = False if np.isinf(missing) else "allow-nan"
    kwargs = dict(dtype=np.float32, order="C", ensure_all_finite=finite_check,
                  accept_sparse=SPARSE_FORMATS)
    fitting = not (isinstance(y, str) and y == "no_validation")
    check_sparse_structure(X)
    dtype_categories = {}
    if _is_dataframe(X) or is_other_frame(X):
        to_float32 = (_frame_to_float32 if _is_dataframe(X)
                      else frame_to_float32)  # polars, pyarrow: frames.py
        X, dtype_categories = to_float32(estimator, X, reset)
        if fitting:
            X, y = check_X_y(X, y, y_numeric=y_numeric, estimator=estimator,
                             multi_output=multi_output, **kwargs)
        else:
            X = check_array(X, estimator=estimator, **kwargs)
    elif fitting:
        X, y = validate_data(estimator, X, y, y_numeric=y_numeric,
                             reset=reset, multi_output=multi_output, **kwargs)
    else:
        X = validate_data(estimator, X, reset=reset, **kwargs)
    if sp.issparse(X):
        absent = getattr(estimator, "sparse_absent", "missing")
        X = _code_sparse_categories(estimator, canonical_csr(X, missing,
                                                             absent),
                                    reset, absent)
        return (X, y) if fitting else X
    if not np.isnan(missing):
        # category codes are not values: the marker applies to the others
        marked = X == np.float32(missing)
        marked[:, list(dtype_categories)] = False
        X = np.where(marked, np.float32(np.nan), X)
    if finite_check is False and np.isinf(X).any():
        raise ValueError("Input X contains infinity (other than the "
                         f"missing marker {missing}).")
    X = _code_categories(estimator, X, reset, dtype_categories)
    return (X, y) if fitting else X


# The dtypes the predictor reads in place (native byte order only).
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def serving_rows(estimator, X):
    """``check_X`` at predict for the common serving inputs, or None.

    A C-contiguous 2-D float32 or float64 ndarray, or a pandas DataFrame of
    float columns named and ordered as in training, whose rows the
    predictor can read in place (float64 rounded to float32 as read: the
    values ``check_X`` gives). Anything else, and anything ``check_X``
    would refuse, warn about or convert (a ``missing`` marker other than
    NaN, a wrong number of features or names, categorical columns, no
    rows), gives None: the caller then runs ``check_X``, with its errors.
    Infinite values are the predictor's to find (``predict_raw_small``
    returns None). Categorical features named by value are coded here, on
    a copy, as ``check_X`` codes them.
    """
    if type(X) is np.ndarray:
        if getattr(estimator, "feature_names_in_", None) is not None:
            return None   # scikit-learn warns: no feature names
        rows = X
    elif _is_dataframe(X):
        rows = _frame_rows(estimator, X)
    else:
        return None
    if (rows is None or rows.ndim != 2 or rows.dtype not in _FLOAT_DTYPES
            or not rows.flags.c_contiguous or rows.shape[0] == 0
            or rows.shape[1] != getattr(estimator, "n_features_in_", -1)):
        return None
    missing = estimator.missing
    if not (isinstance(missing, float) and missing != missing):
        return None   # a marker to replace: check_X does it
    category_map = getattr(estimator, "_category_map_", None)
    if category_map is None:
        return rows
    if np.any(category_map.from_dtype):
        return None
    with np.errstate(over="ignore"):   # beyond float32: inf, refused below
        rows = rows.astype(np.float32)
    # infinity is refused before the coding (which would hide it in a
    # categorical column), as check_X refuses it
    if np.isinf(rows).any():
        return None
    return _code_categories(estimator, rows, False, {})


def _frame_rows(estimator, frame):
    """The values of a DataFrame of float columns with exactly the training
    names in the training order, else None."""
    names = getattr(estimator, "feature_names_in_", None)
    if (names is None or frame.shape[1] != names.shape[0]
            or frame.columns.tolist() != names.tolist()
            or getattr(estimator, "_category_map_", None) is not None):
        return None
    # only float columns: they become float64 or float32 values exactly
    # (int, bool, nullable, pyarrow and category columns are read column by
    # column by check_X, which checks them)
    if not set(_column_dtypes(frame)).issubset(_FLOAT_DTYPES):
        return None
    rows = frame.to_numpy()
    return rows if rows.dtype in _FLOAT_DTYPES else None


def _column_dtypes(frame):
    """The dtype of every column: pandas' block manager has them as an
    array (``frame.dtypes`` builds a Series, 13 us for 28 columns, more
    than the whole prediction of one row)."""
    get_dtypes = getattr(getattr(frame, "_mgr", None), "get_dtypes", None)
    return get_dtypes() if get_dtypes is not None else frame.dtypes.to_numpy()


def _code_sparse_categories(estimator, X, reset, absent):
    """Canonical sparse X with its categorical columns (named by
    ``categorical_features``) coded; at fit, records the CategoryMap."""
    if reset:
        named = resolve_categorical_features(
            getattr(estimator, "categorical_features", None), X.shape[1],
            getattr(estimator, "feature_names_in_", None))
        estimator._category_map_ = None if not named.size else CategoryMap(
            named, sparse_value_categories(
                X, named, _feature_labels(estimator, X.shape[1]), absent),
            np.zeros(named.shape[0], dtype=bool), X.shape[1])
    category_map = getattr(estimator, "_category_map_", None)
    if category_map is None:
        return X
    if np.any(category_map.from_dtype):
        raise ValueError(
            "this model was trained on a DataFrame with categorical (category "
            "dtype) columns "
            f"{_labels(estimator, category_map.features[category_map.from_dtype])}"
            ": X must be a DataFrame with those columns as category dtype, "
            "not sparse")
    return code_sparse(X, category_map, absent)


def _code_categories(estimator, X, reset, dtype_categories):
    """X with the categorical features named by value (not by dtype) coded;
    at fit, records the CategoryMap on the estimator."""
    # the columns coded by value, each read out of the row-major matrix
    # once (a strided read touches every cache line of X), then searched
    # and coded contiguous
    columns = {}
    if reset:
        named = resolve_categorical_features(
            getattr(estimator, "categorical_features", None), X.shape[1],
            getattr(estimator, "feature_names_in_", None))
        features = np.union1d(named, list(dtype_categories)).astype(np.int64)
        names = _feature_labels(estimator, X.shape[1])
        columns = {f: np.ascontiguousarray(X[:, f]) for f in features
                   if f not in dtype_categories}
        categories = [dtype_categories[f] if f in dtype_categories
                      else value_categories(columns[f], names[f])
                      for f in features]
        estimator._category_map_ = None if not features.size else CategoryMap(
            features, categories,
            np.array([f in dtype_categories for f in features], dtype=bool),
            X.shape[1])
    category_map = getattr(estimator, "_category_map_", None)
    if category_map is None:
        return X
    by_value = [(f, c) for f, c, d in zip(category_map.features,
                                          category_map.categories,
                                          category_map.from_dtype) if not d]
    if len(dtype_categories) != int(np.count_nonzero(category_map.from_dtype)):
        raise ValueError(
            "this model was trained on a DataFrame with categorical (category "
            "dtype) columns "
            f"{_labels(estimator, category_map.features[category_map.from_dtype])}"
            ": X must be a DataFrame with those columns as category dtype")
    if by_value:
        X = X.copy()   # never the caller's array
        for f, categories in by_value:
            column = columns.get(f)
            if column is None:
                column = np.ascontiguousarray(X[:, f])
            X[:, f] = value_codes(column, categories)
    return X


def _feature_labels(estimator, n_features):
    names = getattr(estimator, "feature_names_in_", None)
    return list(names) if names is not None else list(range(n_features))


def _labels(estimator, features):
    labels = _feature_labels(estimator, estimator.n_features_in_)
    return [labels[f] for f in features]


def _is_dataframe(X):
    pd = sys.modules.get("pandas")  # a DataFrame means pandas is imported
    return pd is not None and isinstance(X, pd.DataFrame)


def _frame_to_float32(estimator, frame, reset):
    """Check the DataFrame's column names (set or compare
    ``feature_names_in_``) and convert it to a float32 C-ordered matrix
    with NaN for missing values, in the training column order.

    ``category`` columns become their codes (at predict, against the
    training categories). Returns the matrix and ``{feature: categories}``
    of those columns.
    """
    order = None if reset else _training_order(estimator, frame)
    if order is None:
        validate_data(estimator, frame, reset=reset, skip_check_array=True)
        order = range(frame.shape[1])
    category_map = None if reset else getattr(estimator, "_category_map_",
                                              None)
    _check_column_dtypes(frame, None if reset else order, category_map)
    out = np.empty((frame.shape[0], len(order)), dtype=np.float32)
    categories = {}
    for j, position in enumerate(order):
        column = frame.iloc[:, position]
        if is_category_dtype(column):
            if reset:
                categories[j] = dtype_categories(column, frame.columns[position])
                out[:, j] = dtype_codes(column, None)
            else:
                categories[j] = category_map.categories[
                    category_map.index_of(j)]
                out[:, j] = dtype_codes(column, categories[j])
            continue
        out[:, j] = column.to_numpy(dtype=np.float32, na_value=np.nan)
    return out, categories


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


def _check_column_dtypes(frame, order=None, category_map=None):
    """Every column numeric or ``category``; at predict (``order``: the
    positions of the training columns; ``category_map`` None for a model
    without categorical features) a column is ``category`` exactly when it
    was in training."""
    from pandas.api import types

    if order is not None:
        _check_category_columns(frame, order, category_map)
    bad = [f"{name!r} ({dtype})" for name, dtype in frame.dtypes.items()
           if not (_supported_dtype(dtype)
                   or isinstance(dtype, types.CategoricalDtype))]
    if bad:
        raise ValueError(
            f"DataFrame column{'s' if len(bad) > 1 else ''} {', '.join(bad)} "
            f"{'are' if len(bad) > 1 else 'is'} not numeric: skboost takes "
            "numeric and bool columns, including the nullable (Int64, "
            "Float64, boolean) and pyarrow-backed ones, with missing values "
            "as NaN or pd.NA, and category columns (categorical features). "
            "Convert the column with .astype('category'), or encode or drop "
            "it first (for example with a ColumnTransformer and an "
            "OrdinalEncoder).")


def _check_category_columns(frame, order, category_map):
    """At predict: the columns of category dtype are those that had it in
    training (the others are numeric)."""
    for j, position in enumerate(order):
        column = frame.iloc[:, position]
        name = frame.columns[position]
        was = category_map is not None and (
            category_map.index_of(j) is not None
            and category_map.from_dtype[category_map.index_of(j)])
        now = is_category_dtype(column)
        if was and not now:
            raise ValueError(
                f"column {name!r} was categorical (category dtype) in "
                f"training, but is {column.dtype} now: convert it with "
                ".astype('category')")
        if now and not was:
            raise ValueError(
                f"column {name!r} is categorical (category dtype), but was "
                "not in training (numeric, or a categorical feature named by "
                "categorical_features)")


def reject_external_weight(X, sample_weight):
    """With ExternalData the sample weights come from the chunks."""
    if getattr(X, "out_of_core", False) and sample_weight is not None:
        raise ValueError("with ExternalData, sample_weight comes from the "
                         "chunks: yield (X, y, sample_weight) tuples")


def check_weight(sample_weight, X, name="sample_weight"):
    """Non-negative float64 weights with a positive sum (ones if None),
    within ``_limits.MAX_WEIGHT_SUM``."""
    if getattr(X, "out_of_core", False) and sample_weight is None:
        sample_weight = X.sample_weight    # from ExternalData's chunks
        if sample_weight is None:
            # unit weights as a read-only view of one 1.0: out of core,
            # no array of ones (8 bytes a row) beside the per-row state
            return np.broadcast_to(np.float64(1.0), (X.shape[0],))
    weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                  ensure_non_negative=True)
    if not np.all(np.isfinite(weight)):
        raise ValueError(f"{name} contains NaN or infinity")
    if X.shape[0] and weight.sum() <= 0:
        raise ValueError(f"{name} must have a positive sum")
    check_weight_limits(weight, name)
    return np.ascontiguousarray(weight)
