"""polars DataFrames and pyarrow Tables as X, without a pandas copy.

Each column goes straight from its own memory into the float32 matrix the
kernels read (``_data.check_X``), as pandas columns do:

- numeric and boolean columns are cast to float32 by polars or
  ``pyarrow.compute``; a null is missing (NaN);
- polars ``Categorical`` and ``Enum`` columns and arrow ``dictionary``
  columns are categorical features. Their categories at fit: an ``Enum``'s
  and a dictionary's own list (like a pandas ``category`` column's, unused
  ones included), a ``Categorical``'s distinct values in sorted order
  (polars 2 keeps no per-column list). At predict a value is coded by
  value against the training categories, so a frame of another library
  or another category order gives the same codes; an unseen value is
  missing;
- any other column (strings, dates, lists, ...) is a ValueError naming it.

Column names are the feature names (scikit-learn reads them through
narwhals); at predict the training columns in another order are
reordered, as for pandas.
"""

import sys

import numpy as np
from sklearn.utils.validation import validate_data

from .categorical import checked_categories


def is_polars_frame(X):
    pl = sys.modules.get("polars")  # a polars frame means polars is imported
    return pl is not None and isinstance(X, pl.DataFrame)


def is_arrow_table(X):
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(X, pa.Table)


def is_other_frame(X):
    """A polars DataFrame or a pyarrow Table."""
    return is_polars_frame(X) or is_arrow_table(X)


def frame_to_float32(estimator, frame, reset):
    """Check the column names (set or compare ``feature_names_in_``) and
    convert a polars or arrow frame to a float32 C-ordered matrix with NaN
    for missing values, in the training column order.

    Returns the matrix and ``{feature: categories}`` of its categorical
    columns (``_data._frame_to_float32``'s contract).
    """
    columns = (_PolarsColumns(frame) if is_polars_frame(frame)
               else _ArrowColumns(frame))
    order = None if reset else _training_order(estimator, columns.names)
    if order is None:
        validate_data(estimator, frame, reset=reset, skip_check_array=True)
        order = range(len(columns.names))
    category_map = None if reset else getattr(estimator, "_category_map_",
                                              None)
    out = np.empty((frame.shape[0], len(order)), dtype=np.float32)
    categories = {}
    for j, position in enumerate(order):
        name = columns.names[position]
        column = columns.column(position)
        training = None
        if not reset:
            training = _training_categories(category_map, j)
            _check_kind(column, name, training is not None)
        if column.is_categorical():
            categories[j] = (checked_categories(column.categories(), name)
                             if reset else training)
            out[:, j] = column.codes(categories[j])
        else:
            out[:, j] = column.values(name)
    return out, categories


def _training_order(estimator, names):
    """Positions of the training columns when the frame has exactly them
    in another order; None otherwise (the usual checks then name any
    missing or unexpected column)."""
    trained = getattr(estimator, "feature_names_in_", None)
    if (trained is None or len(set(names)) != len(names)
            or set(names) != set(trained) or list(names) == list(trained)):
        return None
    position = {name: i for i, name in enumerate(names)}
    return [position[name] for name in trained]


def _training_categories(category_map, feature):
    """The categories of a feature that was a categorical column at fit,
    else None."""
    if category_map is None:
        return None
    i = category_map.index_of(feature)
    if i is None or not category_map.from_dtype[i]:
        return None
    return category_map.categories[i]


def _check_kind(column, name, was_categorical):
    now = column.is_categorical()
    if was_categorical and not now:
        raise ValueError(
            f"column {name!r} was categorical in training, but is "
            f"{column.dtype_name()} now: give it as a categorical column "
            "(polars Categorical/Enum, arrow dictionary, pandas category)")
    if now and not was_categorical:
        raise ValueError(
            f"column {name!r} is categorical ({column.dtype_name()}), but "
            "was not in training (numeric, or a categorical feature named "
            "by categorical_features)")


def _unsupported(name, dtype):
    return ValueError(
        f"column {name!r} ({dtype}) is not numeric: skboost takes numeric "
        "and boolean columns (nulls are missing values) and categorical "
        "ones (polars Categorical or Enum, arrow dictionary). Cast the "
        "column to a categorical type, or encode or drop it first.")


def _codes_by_value(values, categories):
    """float32 code of each value (an ndarray) against ``categories``;
    NaN for a value not among them (or None/NaN)."""
    lookup = {_key(c): i for i, c in enumerate(categories.tolist())}
    return np.array([lookup.get(_key(v), np.nan) for v in values.tolist()],
                    dtype=np.float32)


def _key(value):
    # categories compare by value across libraries: 1 == 1.0, "a" == "a"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class _PolarsColumns:
    def __init__(self, frame):
        self.frame = frame
        self.names = list(frame.columns)

    def column(self, position):
        return _PolarsColumn(self.frame.to_series(position))


class _PolarsColumn:
    def __init__(self, series):
        import polars as pl

        self.pl = pl
        self.series = series

    def dtype_name(self):
        return str(self.series.dtype)

    def is_categorical(self):
        return isinstance(self.series.dtype, (self.pl.Categorical,
                                              self.pl.Enum))

    def categories(self):
        if isinstance(self.series.dtype, self.pl.Enum):
            values = self.series.dtype.categories
        else:
            values = self.series.drop_nulls().unique().sort()
        return np.asarray(values.to_list(), dtype=object)

    def codes(self, categories):
        pl = self.pl
        strings = self.series.cast(pl.String)
        if categories.dtype != object:   # categories of another library
            return _codes_by_value(strings.to_numpy(), categories)
        codes = strings.replace_strict(
            categories.tolist(), np.arange(len(categories), dtype=np.float32),
            default=None, return_dtype=pl.Float32)
        return codes.to_numpy()

    def values(self, name):
        dtype = self.series.dtype
        if not (dtype.is_numeric() or dtype == self.pl.Boolean):
            raise _unsupported(name, dtype)
        return self.series.cast(self.pl.Float32).to_numpy()


class _ArrowColumns:
    def __init__(self, table):
        self.table = table
        self.names = list(table.column_names)

    def column(self, position):
        return _ArrowColumn(self.table.column(position))


class _ArrowColumn:
    def __init__(self, chunked):
        import pyarrow as pa

        self.pa = pa
        self.chunked = chunked

    def dtype_name(self):
        return str(self.chunked.type)

    def is_categorical(self):
        return self.pa.types.is_dictionary(self.chunked.type)

    def categories(self):
        unified = self.chunked.unify_dictionaries()
        if unified.num_chunks == 0:
            return np.asarray([], dtype=object)
        return unified.chunk(0).dictionary.to_numpy(zero_copy_only=False)

    def codes(self, categories):
        import pyarrow.compute as pc

        parts = []
        for chunk in self.chunked.chunks:
            # the chunk's dictionary coded once, then gathered by index
            table = np.append(
                _codes_by_value(chunk.dictionary.to_numpy(zero_copy_only=False),
                                categories), np.float32(np.nan))
            index = pc.fill_null(pc.cast(chunk.indices, self.pa.int64()),
                                 -1).to_numpy(zero_copy_only=False)
            parts.append(table[index])  # -1: the NaN at the end
        if not parts:
            return np.empty(0, dtype=np.float32)
        return np.concatenate(parts)

    def values(self, name):
        import pyarrow.compute as pc

        types = self.pa.types
        kind = self.chunked.type
        if not (types.is_integer(kind) or types.is_floating(kind)
                or types.is_boolean(kind) or types.is_decimal(kind)):
            raise _unsupported(name, kind)
        cast = pc.cast(self.chunked, self.pa.float32())
        return cast.to_numpy(zero_copy_only=False)
