"""Monotone and interaction constraints: parsed once per fit, applied per
node by the growth driver.

Two halves:

- ``parse_monotone``, ``parse_interactions`` and ``parse_feature_weights``
  turn the estimators' parameters (XGBoost's formats) into arrays over the
  features, with scikit-learn-style errors naming the parameter;
- ``NodeConstraints`` follows one tree as it grows: the bounds of each
  node's weight (monotone constraints, XGBoost's method) and the features
  each node may still split on (interaction constraints). The driver asks
  it for a batch's bounds and feature mask, tells it about every split,
  and has it clip the leaf weights at the end. The split kernels see only
  the bounds and the per-feature directions (``_gain.pxd``).

Monotone constraints, XGBoost's method: a node's weight is clipped into
bounds ``[lower, upper]`` inherited from its ancestors (the root has none).
A split on a feature constrained increasing is admissible only when the
left child's clipped weight is at most the right child's (decreasing: at
least), and its gain is computed from the clipped weights. The children
then split the parent's bounds at the mid-point ``m`` of the two weights:
the left child's upper bound becomes ``m`` and the right child's lower
bound ``m`` (decreasing: the other way round). Every leaf of the left
subtree is then at most every leaf of the right subtree, so each tree, and
their sum, is monotone in the feature whatever the other features and
wherever a missing value goes.

Interaction constraints, XGBoost's rule: a node may split on a feature
when the features on its path, with that feature, all lie in one of the
listed sets. A feature listed in no set is treated as a set of its own: it
may split a root and then only itself below.
"""

import json
from numbers import Integral, Real

import numpy as np

from ._gain import leaf_weights

_DIRECTIONS = (-1, 0, 1)


# ---------------------------------------------------------------- parsing


def parse_monotone(value, n_features, feature_names=None,
                   categorical=None):
    """``monotone_constraints`` as an int8 array of -1/0/+1 per feature,
    or None when no feature is constrained.

    Parameters
    ----------
    value : None, str, sequence of int, or dict
        XGBoost's formats: ``"(1,-1,0)"``, a list or tuple with one entry
        per feature, or ``{feature name: direction}`` (unlisted features
        unconstrained; names need a DataFrame with string column names).
    n_features : int
    feature_names : sequence of str, default=None
        The training columns' names.
    categorical : array-like of bool, default=None
        Which features are categorical (they can not be constrained: their
        categories have no order).

    Raises
    ------
    ValueError
        Wrong length, a value outside -1/0/1, an unknown or unavailable
        name, or a constrained categorical feature.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = _parse_tuple_string(value)
    if isinstance(value, dict):
        directions = _directions_by_name(value, n_features, feature_names)
    else:
        directions = _directions_by_position(value, n_features)
    if categorical is not None:
        _reject_categorical(directions, np.asarray(categorical, dtype=bool),
                            feature_names)
    return directions if np.any(directions) else None


def _parse_tuple_string(text):
    """``"(1,-1,0)"`` (or with brackets) -> [1, -1, 0]."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] in "([" and stripped[-1] in ")]":
        stripped = stripped[1:-1]
    try:
        return [int(part) for part in stripped.split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"monotone_constraints={text!r} is not a tuple of -1, 0 and 1 "
            "such as '(1,-1,0)'") from None


def _direction(value, where):
    if (isinstance(value, bool) or not isinstance(value, (Integral, Real))
            or value not in _DIRECTIONS):
        raise ValueError(f"monotone_constraints{where} must be -1, 0 or 1, "
                         f"got {value!r}")
    return int(value)


def _directions_by_position(value, n_features):
    try:
        values = list(value)
    except TypeError:
        raise ValueError(
            "monotone_constraints must be a str, a sequence of -1/0/1 or a "
            f"dict by feature name, got {type(value).__name__}") from None
    if len(values) != n_features:
        raise ValueError(
            f"monotone_constraints has {len(values)} entries; X has "
            f"{n_features} features")
    return np.array([_direction(v, f"[{i}]") for i, v in enumerate(values)],
                    dtype=np.int8)


def _directions_by_name(value, n_features, feature_names):
    if feature_names is None:
        raise ValueError(
            "monotone_constraints given by feature name needs X with "
            "string column names (a pandas DataFrame); give a sequence "
            "with one entry per feature instead")
    position = {name: i for i, name in enumerate(feature_names)}
    directions = np.zeros(n_features, dtype=np.int8)
    for name, direction in value.items():
        if name not in position:
            raise ValueError(f"monotone_constraints names feature {name!r}, "
                             "which is not a column of X")
        directions[position[name]] = _direction(direction, f"[{name!r}]")
    return directions


def _reject_categorical(directions, categorical, feature_names):
    for f in np.flatnonzero((directions != 0) & categorical):
        name = feature_names[f] if feature_names is not None else f
        raise ValueError(
            f"monotone_constraints constrains the categorical feature "
            f"{name!r}; its categories have no order")


def parse_interactions(value, n_features, feature_names=None):
    """``interaction_constraints`` as a tuple of sorted feature-index
    tuples, features listed in no set added as sets of their own (the
    rule of the module docstring); None for no constraint.

    Parameters
    ----------
    value : None, str or sequence of sequences
        Feature indices or names, e.g. ``[[0, 1], [2], [3, 4]]``,
        ``[["age", "income"], ["zip"]]`` or the string ``"[[0, 1], [2]]"``.
    n_features : int
    feature_names : sequence of str, default=None

    Raises
    ------
    ValueError
        An empty set, a set listing a feature twice, sets that overlap,
        an index out of range, or an unknown or unavailable name.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(
                f"interaction_constraints={value!r} is not a list of lists "
                "such as '[[0, 1], [2]]'") from None
    if isinstance(value, (str, bytes)) or not _is_sequence(value):
        raise ValueError("interaction_constraints must be a list of lists "
                         "of feature indices or names")
    sets = [_feature_set(group, i, n_features, feature_names)
            for i, group in enumerate(value)]
    _reject_overlaps(sets)
    listed = set().union(*sets) if sets else set()
    alone = [(f,) for f in range(n_features) if f not in listed]
    return tuple(tuple(sorted(s)) for s in sets) + tuple(alone)


def _is_sequence(value):
    return isinstance(value, (list, tuple, np.ndarray))


def _feature_set(group, i, n_features, feature_names):
    if isinstance(group, (str, bytes)) or not _is_sequence(group):
        raise ValueError(f"interaction_constraints[{i}] must be a list of "
                         f"feature indices or names, got {group!r}")
    if len(group) == 0:
        raise ValueError(f"interaction_constraints[{i}] is empty")
    features = [_feature_index(f, i, n_features, feature_names)
                for f in group]
    if len(set(features)) != len(features):
        raise ValueError(f"interaction_constraints[{i}] lists a feature "
                         "twice")
    return set(features)


def _feature_index(feature, i, n_features, feature_names):
    if isinstance(feature, str):
        if feature_names is None:
            raise ValueError(
                f"interaction_constraints[{i}] names feature {feature!r}; "
                "names need X with string column names (a pandas "
                "DataFrame)")
        names = list(feature_names)
        if feature not in names:
            raise ValueError(f"interaction_constraints[{i}] names feature "
                             f"{feature!r}, which is not a column of X")
        return names.index(feature)
    if isinstance(feature, bool) or not isinstance(feature, Integral):
        raise ValueError(f"interaction_constraints[{i}] holds {feature!r}, "
                         "not a feature index or name")
    if not 0 <= feature < n_features:
        raise ValueError(f"interaction_constraints[{i}] holds feature "
                         f"{feature}; X has {n_features} features")
    return int(feature)


def _reject_overlaps(sets):
    """XGBoost accepts overlapping sets; here they are an error (a feature
    in two sets makes the sets' meaning easy to misread)."""
    seen = {}
    for i, features in enumerate(sets):
        for f in sorted(features):
            if f in seen:
                raise ValueError(
                    f"interaction_constraints[{seen[f]}] and [{i}] both "
                    f"hold feature {f}; the sets must not overlap")
            seen[f] = i


def parse_feature_weights(value, n_features):
    """``feature_weights`` as a float64 array over the features (None
    for equal weights).

    Raises
    ------
    ValueError
        Wrong length, a negative or non-finite weight, or all zero.
    """
    if value is None:
        return None
    try:
        weights = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("feature_weights must be an array of numbers, one "
                         "per feature") from None
    if weights.shape != (n_features,):
        raise ValueError(f"feature_weights has shape {weights.shape}; X has "
                         f"{n_features} features")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("feature_weights must be finite and >= 0")
    if not np.any(weights > 0):
        raise ValueError("feature_weights must not all be 0")
    return weights


# --------------------------------------------------------- per tree state


class NodeConstraints:
    """The constraints of one tree's nodes as it grows (module docstring).

    Parameters
    ----------
    monotone : ndarray of shape (n_features,), int8, or None
        From ``parse_monotone``.
    interaction_sets : tuple of tuples, or None
        From ``parse_interactions``.
    n_features : int
    context : SplitContext
        The leaf-weight arithmetic's regularisation.
    """

    def __init__(self, monotone, interaction_sets, n_features, context):
        self.monotone = monotone
        self.n_features = n_features
        self.context = context
        self._set_masks = None
        if interaction_sets is not None:
            self._set_masks = np.zeros((len(interaction_sets), n_features),
                                       dtype=bool)
            for k, features in enumerate(interaction_sets):
                self._set_masks[k, list(features)] = True
        self._allowed_by_path = {}

    @property
    def bounded(self):
        """Whether nodes carry monotone bounds."""
        return self.monotone is not None

    @property
    def active(self):
        """Whether there is any constraint to follow."""
        return self.bounded or self._set_masks is not None

    def start_tree(self):
        self._bounds = np.array([[-np.inf, np.inf]])
        self._paths = [frozenset()]

    def bounds(self, nodes):
        """(n, 2) bounds of the nodes' weights, or None when unbounded."""
        return self._bounds[nodes] if self.bounded else None

    def allowed(self, nodes):
        """(n, n_features) uint8 mask of the features each node may split
        on under the interaction constraints, or None without them."""
        if self._set_masks is None:
            return None
        return np.array([self._allowed_for(self._paths[n]) for n in nodes],
                        dtype=np.uint8).reshape(len(nodes), self.n_features)

    def _allowed_for(self, path):
        mask = self._allowed_by_path.get(path)
        if mask is None:
            # the sets holding every feature of the path
            holds = self._set_masks[:, sorted(path)].all(axis=1)
            mask = self._set_masks[holds].any(axis=0)
            self._allowed_by_path[path] = mask
        return mask

    def split(self, nodes, left, right, feature, categorical, left_sums,
              right_sums):
        """Record the splits of ``nodes`` into children ``left``/``right``
        (arrays of node ids) on ``feature``; ``categorical`` flags the
        categorical splits; ``left_sums``, ``right_sums``: the children's
        (G, H) as the tree records them."""
        n_nodes = int(max(left.max(), right.max())) + 1
        if self._set_masks is not None:
            self._record_paths(nodes, left, right, feature, n_nodes)
        if self.bounded:
            self._record_bounds(nodes, left, right, feature, categorical,
                                left_sums, right_sums, n_nodes)

    def _record_paths(self, nodes, left, right, feature, n_nodes):
        self._paths.extend([None] * (n_nodes - len(self._paths)))
        for k, node in enumerate(nodes):
            path = self._paths[node] | {int(feature[k])}
            self._paths[left[k]] = self._paths[right[k]] = path

    def _record_bounds(self, nodes, left, right, feature, categorical,
                       left_sums, right_sums, n_nodes):
        grown = np.empty((n_nodes, 2))
        grown[: self._bounds.shape[0]] = self._bounds
        self._bounds = grown
        parent = self._bounds[nodes]
        w_left = self._clipped(*left_sums, parent)
        w_right = self._clipped(*right_sums, parent)
        direction = np.where(categorical, 0, self.monotone[feature])
        mid = 0.5 * (w_left + w_right)
        child_left, child_right = parent.copy(), parent.copy()
        child_left[direction > 0, 1] = mid[direction > 0]
        child_right[direction > 0, 0] = mid[direction > 0]
        child_left[direction < 0, 0] = mid[direction < 0]
        child_right[direction < 0, 1] = mid[direction < 0]
        self._bounds[left] = child_left
        self._bounds[right] = child_right

    def _clipped(self, G, H, bounds):
        w = leaf_weights(np.ascontiguousarray(G, dtype=np.float64),
                         np.ascontiguousarray(H, dtype=np.float64),
                         self.context)
        return np.clip(w, bounds[:, 0], bounds[:, 1])

    def leaf_weights(self, G, H):
        """Weights of every node of the finished tree (node order), clipped
        into their bounds."""
        w = leaf_weights(G, H, self.context)
        if not self.bounded:
            return w
        return np.clip(w, self._bounds[: w.shape[0], 0],
                       self._bounds[: w.shape[0], 1])
