"""Categorical features of a Spark fit.

Which features are categorical is decided on the driver, from two
sources: the ML attributes Spark's ``StringIndexer`` writes (a nominal
attribute on its output column; ``VectorAssembler`` keeps them as the
nominal slots ``ml_attr.attrs.nominal`` of the vector it assembles), and
``categorical_features`` (the single-node estimators' parameter: indices,
names, or a boolean mask). Their values must be category indices: whole
numbers from 0 (below the number of labels the attribute lists, when it
lists them); each task checks its rows (a clear error naming the column).

The categories are those single-node skboost finds on the same rows
(``categorical_features`` of a numeric column: its distinct values in the
training rows): every task collects its own, and the union, gathered
among the tasks, is the fit's ``CategoryMap``, the same on every task.
"""

import numpy as np

from .._input.categorical import (MAX_CATEGORIES, CategoryMap,
                                  resolve_categorical_features)


# -- on the driver ----------------------------------------------------------

def _nominal_size(attribute):
    """Number of labels of a nominal attribute (None when not listed)."""
    values = attribute.get("vals")
    if values is not None:
        return len(values)
    size = attribute.get("num_vals")
    return None if size is None else int(size)


def _column_attributes(dataset, cols):
    """Per feature column: its name, and its label count when a nominal
    attribute marks it (``StringIndexer``'s output)."""
    names, nominal = list(cols), {}
    for k, col in enumerate(cols):
        attribute = dataset.schema[col].metadata.get("ml_attr", {})
        if attribute.get("type") == "nominal":
            nominal[k] = _nominal_size(attribute)
    return names, nominal, len(cols)


def _vector_attributes(dataset, col):
    """Per slot of a vector column: the names and nominal slots its ML
    attributes give (``VectorAssembler``'s), and its size if known."""
    metadata = dataset.schema[col].metadata.get("ml_attr", {})
    n_features = metadata.get("num_attrs")
    names, nominal = {}, {}
    for kind, attributes in (metadata.get("attrs") or {}).items():
        for attribute in attributes:
            index = int(attribute["idx"])
            names[index] = attribute.get("name")
            if kind == "nominal":
                nominal[index] = _nominal_size(attribute)
    if n_features is None and names:
        n_features = max(names) + 1
    listed = (None if n_features is None else
              [names.get(k, f"f{k}") for k in range(int(n_features))])
    return listed, nominal, n_features


def _named(spec, names, n_features, where):
    """``categorical_features`` as feature indices."""
    array = np.asarray(spec)
    if n_features is None:   # a vector column without ML attributes
        if array.dtype.kind not in "iu" or array.ndim != 1 or (
                array.size and array.min() < 0):
            raise ValueError(
                f"categorical_features must hold feature indices for "
                f"{where}, which has no ML attributes (names, size)")
        return np.unique(array.astype(np.int64))
    return resolve_categorical_features(spec, int(n_features), names)


def categorical_plan(estimator, dataset):
    """The categorical features of a fit: ``(features, limits, labels)``
    (sorted indices; for each, its label count or None; its name), or
    ``((), (), ())`` without any."""
    cols = list(estimator.getOrDefault("features_cols") or [])
    if cols:
        names, nominal, n_features = _column_attributes(dataset, cols)
        where = "features_cols"
    else:
        col = estimator.getFeaturesCol()
        names, nominal, n_features = _vector_attributes(dataset, col)
        where = f"featuresCol {col!r}"
    spec = estimator.getOrDefault("categorical_features")
    explicit = ([] if spec is None else
                _named(spec, names, n_features, where).tolist())
    features = sorted(set(nominal) | set(explicit))
    limits = tuple(nominal.get(f) for f in features)
    labels = tuple(_label(f, names, cols) for f in features)
    return tuple(features), limits, labels


def _label(feature, names, cols):
    """How errors name a categorical feature."""
    if cols:
        return f"features_cols {cols[feature]!r}"
    name = None if names is None else names[feature] \
        if feature < len(names) else None
    return f"featuresCol slot {feature}" + (f" ({name!r})" if name else "")


# -- in the tasks -----------------------------------------------------------

def _column_values(X, feature):
    """The present values of one feature of a part (dense, DataFrame or
    CSR: its stored entries), NaN dropped, as float64."""
    import scipy.sparse as sp

    if sp.issparse(X):
        values = X[:, feature].tocsc().data
    elif hasattr(X, "iloc"):
        values = X.iloc[:, feature].to_numpy(dtype=np.float64)
    else:
        values = X[:, feature]
    values = np.asarray(values, dtype=np.float64)
    return values[~np.isnan(values)]


def check_category_values(parts, eval_parts, plan):
    """Every categorical value of the task's rows a category index: a
    whole number in [0, labels) (a ValueError naming the column)."""
    for feature, limit, label in zip(plan.categorical, plan.category_limits,
                                     plan.category_labels):
        top = MAX_CATEGORIES if limit is None else limit
        for part in list(parts) + list(eval_parts):
            values = _column_values(part[-5], feature)
            bad = values[(values < 0) | (values != np.floor(values))
                         | (values >= top)]
            if bad.size:
                raise ValueError(
                    f"{label} is categorical, but holds {float(bad[0])!r}: "
                    "its values must be category indices, whole numbers in "
                    f"[0, {top})" + ("" if limit is None else
                                     f" (its ML attribute lists {limit} "
                                     "labels)"))


def task_categories(parts, plan, absent):
    """The distinct values of each categorical feature in this task's
    training rows (as single-node ``categorical_features`` finds them;
    0.0 for an absent sparse entry when ``sparse_absent="zero"``)."""
    import scipy.sparse as sp

    out = []
    for feature in plan.categorical:
        found = [np.zeros(0)]
        for part in parts:
            X = part[1]
            found.append(_column_values(X, feature))
            if sp.issparse(X) and absent == "zero" and \
                    X[:, feature].nnz < X.shape[0]:
                found.append(np.zeros(1))
        out.append(np.unique(np.concatenate(found)))
    return out


def fit_category_map(gathered, plan, n_features):
    """The fit's ``CategoryMap``: for each categorical feature the union
    of every task's values (``task_categories``, all-gathered)."""
    categories = []
    for k, label in enumerate(plan.category_labels):
        values = np.unique(np.concatenate(
            [task[k] for task in gathered if task is not None]))
        if values.shape[0] == 0:
            raise ValueError(f"{label} is categorical, but every value of "
                             "it is missing")
        categories.append(values.astype(np.float64))
    features = np.asarray(plan.categorical, dtype=np.int64)
    return CategoryMap(features, categories,
                       np.zeros(features.shape[0], dtype=bool), n_features)
