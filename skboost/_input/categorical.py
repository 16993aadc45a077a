"""Categorical features: which columns are categorical, their training
categories, and the category codes the trees split on.

A feature is categorical when its pandas column has the ``category`` dtype,
or when the estimator's ``categorical_features`` names it (indices, column
names or a boolean mask; any input, values of any numeric dtype). Numeric
input never becomes categorical otherwise.

At fit, each categorical feature's categories are recorded in order (a
``category`` column's ``cat.categories``; the sorted distinct values of a
named numeric column), and X holds the category *codes* 0 .. k-1 as float32
(NaN = missing). At predict, values are re-coded **by value** against the
training categories: a ``category`` column whose categories come in another
order, or as a superset, gives the same codes; a value unseen in training
becomes NaN, so it follows the missing-value direction of every split.

A scipy.sparse X can have named categorical columns too (``code_sparse``).
Their stored values are the category values; an entry that is not stored is
missing (``sparse_absent="missing"``), or the value 0.0 (``"zero"``), which
is then a category like any other. The coded matrix stays sparse and means
the same: with ``"missing"``, absent entries stay absent (missing) and
unseen values are dropped (made missing); with ``"zero"``, an absent entry
reads 0.0, which is code 0, so a categorical column keeps its absent
entries as they are when 0.0 is its first category (code 0: no negative
categories), and otherwise stores an entry for every row whose code is not
0 (the code of 0.0, or NaN when 0.0 is not a training category).
"""

from dataclasses import dataclass

import numpy as np

# A feature's codes and its missing bin fit 16 bits.
MAX_CATEGORIES = 65535

# JSON type tags of the category values a model stores.
_KINDS = {"str": object, "int": np.int64, "float": np.float64,
          "bool": np.bool_}


@dataclass
class CategoryMap:
    """The categorical features of a fit and their training categories.

    Attributes
    ----------
    features : ndarray of int64
        Indices of the categorical features, increasing.
    categories : list of ndarray
        The categories of each, in code order (code c is ``categories[i][c]``).
    from_dtype : ndarray of bool
        Whether each was a pandas ``category`` column at fit (it must be
        one at predict), or a named numeric column (it must not be).
    n_features : int
    """

    features: np.ndarray
    categories: list
    from_dtype: np.ndarray
    n_features: int

    def n_categories(self):
        """Categories per feature, 0 for the numeric ones (int64)."""
        out = np.zeros(self.n_features, dtype=np.int64)
        out[self.features] = [len(c) for c in self.categories]
        return out

    def index_of(self, feature):
        """Position of ``feature`` in ``features``, or None."""
        i = int(np.searchsorted(self.features, feature))
        if i < self.features.shape[0] and self.features[i] == feature:
            return i
        return None

    def same_as(self, other):
        """Whether two maps code every feature identically."""
        return (other is not None and self.n_features == other.n_features
                and np.array_equal(self.features, other.features)
                and np.array_equal(self.from_dtype, other.from_dtype)
                and all(_same_values(a, b) for a, b in
                        zip(self.categories, other.categories)))

    def recoding_to(self, other):
        """How codes of this map become codes of ``other`` when both have
        the same features and, for each, the same categories, possibly in
        another order (a category column reordered): ``[(feature, lookup)]``
        with ``lookup[own code] = other's code`` for the features whose
        order differs; None when the maps differ otherwise."""
        if other is None or not (
                self.n_features == other.n_features
                and np.array_equal(self.features, other.features)
                and np.array_equal(self.from_dtype, other.from_dtype)):
            return None
        recoding = []
        for feature, own, theirs in zip(self.features, self.categories,
                                        other.categories):
            if _same_values(own, theirs):
                continue
            lookup = _positions_in(own, theirs)
            if lookup is None:
                return None
            recoding.append((int(feature), lookup))
        return recoding

    def to_json(self):
        """JSON value of the map (see ``_io/model_file.py``)."""
        return {"features": [int(f) for f in self.features],
                "from_dtype": [bool(d) for d in self.from_dtype],
                "kinds": [_kind(c) for c in self.categories],
                "values": [[_json_scalar(v) for v in c]
                           for c in self.categories]}

    @classmethod
    def from_json(cls, value, n_features):
        """The map of a saved model, validated; raises ValueError."""
        keys = {"features", "from_dtype", "kinds", "values"}
        if not isinstance(value, dict) or set(value) != keys:
            raise ValueError(f"'categories' (the categorical features) must "
                             f"be null or an object with the entries "
                             f"{sorted(keys)}")
        features, kinds = value["features"], value["kinds"]
        from_dtype, values = value["from_dtype"], value["values"]
        if not all(isinstance(x, list) for x in
                   (features, kinds, from_dtype, values)):
            raise ValueError("the entries of 'categories' must be lists")
        m = len(features)
        if not (len(kinds) == len(from_dtype) == len(values) == m) or m == 0:
            raise ValueError("'categories' needs one kind, dtype flag and "
                             "list of values per categorical feature")
        if not all(isinstance(f, int) and not isinstance(f, bool)
                   and 0 <= f < n_features for f in features) or any(
                       a >= b for a, b in zip(features, features[1:])):
            raise ValueError("categorical features must be increasing "
                             f"indices in [0, {n_features})")
        if not all(isinstance(d, bool) for d in from_dtype):
            raise ValueError("'from_dtype' must hold booleans")
        categories = [_values_from_json(k, v) for k, v in zip(kinds, values)]
        return cls(np.asarray(features, dtype=np.int64), categories,
                   np.asarray(from_dtype, dtype=bool), int(n_features))


def _positions_in(values, categories):
    """Position of each of ``values`` in ``categories`` (int64), or None
    unless both hold the same distinct values."""
    if values.dtype != categories.dtype or values.shape != categories.shape:
        return None
    order = {value: i for i, value in enumerate(categories.tolist())}
    positions = [order.get(value) for value in values.tolist()]
    if None in positions or len(set(positions)) != len(positions):
        return None
    return np.asarray(positions, dtype=np.int64)


def recode(X, recoding):
    """Dense float32 X with the codes of each ``(feature, lookup)`` column
    replaced by ``lookup[code]`` (NaN stays NaN); a copy."""
    X = X.copy()
    for feature, lookup in recoding:
        column = X[:, feature]
        present = ~np.isnan(column)
        column[present] = lookup[column[present].astype(np.int64)]
    return X


def _same_values(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.all(a == b))


def _kind(values):
    if values.dtype == object:
        return "str"
    return {"i": "int", "u": "int", "f": "float", "b": "bool"}[
        values.dtype.kind]


def _json_scalar(value):
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value)


def _values_from_json(kind, values):
    """Validated categories of one feature from their JSON list."""
    if kind not in _KINDS or not isinstance(values, list):
        raise ValueError(f"unknown category kind {kind!r}")
    checks = {"str": lambda v: isinstance(v, str),
              "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "float": lambda v: (isinstance(v, (int, float))
                                  and not isinstance(v, bool)
                                  and np.isfinite(v)),
              "bool": lambda v: isinstance(v, bool)}
    if not all(checks[kind](v) for v in values):
        raise ValueError(f"category values do not fit the kind {kind!r}")
    if not 1 <= len(values) <= MAX_CATEGORIES:
        raise ValueError(f"a categorical feature needs 1 to {MAX_CATEGORIES} "
                         "categories")
    if len(set(values)) != len(values):
        raise ValueError("the categories of a feature must be unique")
    if kind == "str":
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array
    try:
        return np.asarray(values, dtype=_KINDS[kind])
    except OverflowError:
        raise ValueError("category values beyond 64 bits") from None


# --------------------------------------------------------------- at fit


def resolve_categorical_features(spec, n_features, names):
    """Indices (sorted int64) of the features ``categorical_features``
    names: None, integer indices, column names or a boolean mask."""
    if spec is None:
        return np.zeros(0, dtype=np.int64)
    array = np.asarray(spec)
    if array.ndim != 1:
        raise ValueError("categorical_features must be a 1-d list of "
                         "indices, names or booleans")
    if array.dtype == bool:
        if array.shape[0] != n_features:
            raise ValueError(
                f"categorical_features as a boolean mask needs one entry per "
                f"feature ({n_features}), got {array.shape[0]}")
        return np.flatnonzero(array).astype(np.int64)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind in "iu":
        if array.min() < 0 or array.max() >= n_features:
            raise ValueError(f"categorical_features holds indices outside "
                             f"[0, {n_features})")
        return np.unique(array.astype(np.int64))
    if array.dtype.kind in "UO" and all(isinstance(v, str) for v in array):
        if names is None:
            raise ValueError("categorical_features holds column names, but X "
                             "has none (pass a DataFrame, or indices)")
        position = {str(n): i for i, n in enumerate(names)}
        unknown = [v for v in array if v not in position]
        if unknown:
            raise ValueError(f"categorical_features names columns that X does "
                             f"not have: {unknown}")
        return np.unique(np.array([position[v] for v in array],
                                  dtype=np.int64))
    raise ValueError("categorical_features must hold integer indices, column "
                     f"names or booleans, got dtype {array.dtype}")


def is_category_dtype(column):
    """Whether a pandas column has the ``category`` dtype."""
    from pandas.api import types

    return isinstance(column.dtype, types.CategoricalDtype)


def dtype_categories(column, name):
    """The categories of a ``category`` column, as a checked ndarray."""
    return checked_categories(np.asarray(column.cat.categories), name)


def checked_categories(array, name):
    """The categories of a categorical column (pandas ``category``, polars
    ``Categorical``/``Enum``, arrow dictionary), checked to be storable."""
    if array.dtype == object and not all(isinstance(v, str) for v in array):
        raise ValueError(
            f"categorical column {name!r}: its categories must all be "
            "strings, integers, floats or booleans, to be stored with the "
            f"model; got {sorted({type(v).__name__ for v in array})}")
    if array.dtype != object and array.dtype.kind not in "iufb":
        raise ValueError(
            f"categorical column {name!r}: categories of dtype {array.dtype} "
            "can not be stored with the model (use strings or numbers)")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise ValueError(f"categorical column {name!r}: infinite category")
    _check_count(array.shape[0], name)
    return array


# Columns whose values are all whole numbers below this are counted
# (np.bincount) instead of sorted: the usual categorical column holds codes
# 0 .. k-1, and a sort of 500,000 values cost more than the rest of the
# input check. The count's array (8 bytes a value below the bound) stays
# small.
_COUNTED_BELOW = 1 << 20


def value_categories(column, name):
    """Categories of a numeric column named categorical: its sorted
    distinct non-missing float32 values."""
    values = column[~np.isnan(column)]
    whole = _whole_values(values)
    if whole is not None:
        # the same sorted distinct values as np.unique, by counting
        categories = np.flatnonzero(np.bincount(whole)).astype(np.float64)
    else:
        categories = np.unique(values).astype(np.float64)
    _check_count(categories.shape[0], name)
    return categories


def _whole_values(values):
    """int64 copies of float ``values`` when every one is a whole number in
    [0, _COUNTED_BELOW) and none is -0.0 (np.unique would keep -0.0 as the
    category's value), else None."""
    if values.shape[0] == 0:
        return None
    low, high = values.min(), values.max()
    if not (low >= 0 and high < _COUNTED_BELOW) or np.signbit(values).any():
        return None
    whole = values.astype(np.int64)
    return whole if np.array_equal(whole, values) else None


def _check_count(n, name):
    if n == 0:
        raise ValueError(f"categorical column {name!r} has no categories "
                         "(every value is missing)")
    if n > MAX_CATEGORIES:
        raise ValueError(f"categorical column {name!r} has {n} categories; "
                         f"skboost takes at most {MAX_CATEGORIES} per feature")


# --------------------------------------------------------------- coding


def dtype_codes(column, categories):
    """float32 codes of a ``category`` column against the training
    ``categories`` (by value; unseen categories and missing values: NaN)."""
    import pandas as pd

    if categories is None:
        codes = column.cat.codes.to_numpy()
    else:
        codes = column.cat.set_categories(pd.Index(categories)).cat.codes
        codes = codes.to_numpy()
    out = codes.astype(np.float32)
    out[codes < 0] = np.nan
    return out


def value_codes(column, categories):
    """float32 codes of a float32 column against sorted numeric
    ``categories`` (values not among them, and NaN: NaN)."""
    table = _code_table(categories)
    if table is not None:
        return _table_codes(column, table)
    position = np.searchsorted(categories, column)
    inside = position < categories.shape[0]
    found = np.zeros(column.shape[0], dtype=bool)
    found[inside] = categories[position[inside]] == column[inside]
    return np.where(found, position, np.nan).astype(np.float32)


def _code_table(categories):
    """float32 code of each whole number 0 .. max(categories) (NaN for
    those that are not categories) when the sorted ``categories`` are all
    whole numbers in [0, _COUNTED_BELOW), else None: a lookup instead of a
    binary search per value."""
    categories = np.asarray(categories)
    if categories.shape[0] == 0 or categories.dtype.kind != "f" or not (
            categories[0] >= 0 and categories[-1] < _COUNTED_BELOW):
        return None
    whole = categories.astype(np.int64)
    if not np.array_equal(whole, categories):
        return None
    table = np.full(int(whole[-1]) + 1, np.nan, dtype=np.float32)
    table[whole] = np.arange(whole.shape[0], dtype=np.float32)
    return table


def _table_codes(column, table):
    """``value_codes`` through ``_code_table``'s table: a value is a
    category exactly when it is a whole number inside the table with a
    code there (NaN, other values: NaN). -0.0 reads as 0, as it equals
    the category 0.0 under searchsorted's comparison."""
    inside = (column >= 0) & (column < table.shape[0])   # NaN: outside
    index = np.where(inside, column, 0).astype(np.int64)
    found = inside & (index == column)
    return np.where(found, table[index], np.float32(np.nan))


# --------------------------------------------------------------- sparse


def sparse_value_categories(X, features, names, absent):
    """Categories of the named columns of canonical CSR ``X``: the sorted
    distinct stored values (NaN aside), and 0.0 when ``absent="zero"`` and
    a row has no entry in the column."""
    columns = X.tocsc()
    out = []
    for f in features:
        begin, end = columns.indptr[f], columns.indptr[f + 1]
        values = columns.data[begin:end]
        values = values[~np.isnan(values)].astype(np.float64)
        if absent == "zero" and end - begin < X.shape[0]:
            values = np.append(values, 0.0)
        categories = np.unique(values)
        _check_count(categories.shape[0], names[f])
        out.append(categories)
    return out


def code_sparse(X, category_map, absent):
    """Canonical CSR ``X`` (float32, sorted indices, absent entries as
    ``absent`` says) with the values of its categorical columns replaced by
    their codes against the training categories (see the module docstring);
    never densified, the other columns untouched."""
    import scipy.sparse as sp

    columns = X.tocsc()
    columns.sort_indices()
    indptr = columns.indptr
    col_of = np.repeat(np.arange(X.shape[1]), np.diff(indptr))
    keep = ~np.isin(col_of, category_map.features)
    rows, cols, data = ([columns.indices[keep]], [col_of[keep]],
                        [columns.data[keep]])
    for f, categories in zip(category_map.features, category_map.categories):
        entry_rows = columns.indices[indptr[f]:indptr[f + 1]]
        codes = value_codes(columns.data[indptr[f]:indptr[f + 1]],
                            categories)
        if absent == "zero":
            zero_code = value_codes(np.zeros(1, dtype=np.float32),
                                    categories)[0]
            if zero_code != 0:   # NaN too: every absent row gets its entry
                full = np.full(X.shape[0], zero_code, dtype=np.float32)
                full[entry_rows] = codes
                entry_rows = np.arange(X.shape[0], dtype=entry_rows.dtype)
                codes = full
            stored = codes != 0    # code 0 reads as an absent entry
        else:
            stored = ~np.isnan(codes)   # to be absent is to be missing
        rows.append(entry_rows[stored])
        cols.append(np.full(int(np.count_nonzero(stored)), f))
        data.append(codes[stored])
    coded = sp.csr_matrix((np.concatenate(data).astype(np.float32),
                           (np.concatenate(rows), np.concatenate(cols))),
                          shape=X.shape)
    coded.sort_indices()
    return coded
