"""LightGBM's text model files (``Booster.save_model``,
``booster_.save_model``) read as skboost models.

``model_from_lightgbm(text)`` turns the text into the ``"model"`` object of
a skboost model file (``model_file.py``), which the file layer validates as
its own; a damaged or forged file ends in a ValueError. What is read: the
header (``num_class``, ``num_tree_per_iteration``, ``max_feature_idx``,
``objective``, ``feature_names``, ``feature_infos``), every ``Tree=`` block
and the ``pandas_categorical`` line; refused with an error naming what is
missing: linear trees (``is_linear=1``), random-forest mode
(``average_output``), objectives skboost has no equivalent of.

How LightGBM's splits become skboost's:

- LightGBM sends ``x <= threshold`` left, comparing doubles; skboost
  ``x < t`` in float32. For a float32 ``x``, ``x <= threshold`` holds
  exactly when ``x < t`` with ``t`` the float32 just above the largest
  float32 not above ``threshold`` (``np.nextafter``), so each threshold
  becomes that ``t``: rows equal to a threshold go left in both. LightGBM's
  predictor reads any ``|x| <= 1e-35`` as 0.0, which moves the thresholds
  within 1e-35 of 0 (``lightgbm_threshold``).
- ``decision_type``: bit 0 categorical, bit 1 default left, bits 2-3 the
  missing type. ``NaN``: NaN goes the default way, as in skboost. ``None``:
  LightGBM reads NaN as 0.0, so NaN goes where 0.0 goes (skboost's default
  direction is set so). ``Zero`` (``zero_as_missing``): zeros and NaN go
  the default way; skboost can hold it only where 0.0 compares to that side
  already, and refuses the file otherwise.
- A categorical split sends the categories of its bitset
  (``cat_boundaries`` / ``cat_threshold``) left, and NaN, negative values and
  any other category right: skboost's set is the same, missing values go
  right. (A fractional value is truncated to a category by LightGBM and is
  no category for skboost, which sends it right.)
- Leaves carry ``leaf_value`` (shrinkage included); covers are the
  ``internal_count`` / ``leaf_count`` row counts LightGBM's SHAP values
  weigh paths by; gains are ``split_gain / 2`` (skboost's scale).

Categorical features given as integer codes keep their codes as
categories (0 .. the largest seen); pandas ``category`` columns get the
categories of ``pandas_categorical`` and are matched by value.

This module imports no estimator and builds no Booster: it returns plain
JSON values.
"""

import json
import math

import numpy as np

from .._input.categorical import MAX_CATEGORIES
from .validation import MAX_FEATURES
from .validation import ModelFileError as _Invalid

# LightGBM objective -> skboost objective (same link, same predictions)
_OBJECTIVES = {"regression": "reg:squarederror",
               "regression_l2": "reg:squarederror",
               "regression_l1": "reg:absoluteerror",
               "quantile": "reg:quantileerror", "poisson": "count:poisson",
               "gamma": "reg:gamma", "tweedie": "reg:tweedie",
               "cross_entropy": "reg:logistic", "binary": "binary:logistic",
               "multiclass": "multi:softprob", "lambdarank": "rank:ndcg",
               "rank_xendcg": "rank:ndcg"}
_CLASSIFIERS = {"binary", "multiclass"}
_RANKERS = {"lambdarank", "rank_xendcg"}
_MAX_TREES = 1 << 24
_MAX_CLASSES = 1 << 16
# decision_type bits
_CATEGORICAL, _DEFAULT_LEFT = 1, 2
_MISSING_NONE, _MISSING_ZERO, _MISSING_NAN = 0, 1, 2


def is_lightgbm_text(data):
    """Whether a model file's content is LightGBM's text format."""
    head = data[:64] if isinstance(data, (bytes, str)) else b""
    if isinstance(head, str):
        head = head.encode("utf-8", "replace")
    return head.lstrip().startswith((b"tree\n", b"tree\r\n"))


def model_from_lightgbm(data):
    """The skboost ``"model"`` object (JSON values) of LightGBM's model
    text; raises ModelFileError naming what is wrong or missing."""
    text = _text(data)
    header, blocks, tail = _sections(text)
    parameters = _parameters(tail)
    n_features = _count(header, "max_feature_idx", 0, MAX_FEATURES - 1) + 1
    name, objective, objective_params = _objective(header, parameters)
    n_outputs = _count(header, "num_tree_per_iteration", 1, _MAX_CLASSES)
    if _count(header, "num_class", 1, _MAX_CLASSES) != (
            n_outputs if name == "multiclass" else 1) or (
            name != "multiclass" and n_outputs != 1):
        raise _Invalid("num_class and num_tree_per_iteration do not fit the "
                       f"objective {name!r}")
    if "average_output" in header:
        raise _Invalid("it is a random forest (boosting=rf, whose trees are "
                       "averaged): skboost reads boosted models only")
    trees = [_tree(block, index, n_features)
             for index, block in enumerate(blocks)]
    if len(trees) % n_outputs:
        raise _Invalid(f"{len(trees)} trees is not a whole number of rounds "
                       f"of {n_outputs}")
    categories, n_categories = _categories(header, tail, trees, n_features)
    booster = {"objective": objective, "objective_params": objective_params,
               "n_features": n_features, "base_margin": [0.0] * n_outputs,
               "trees": [_to_skboost(tree, n_categories) for tree in trees]}
    return _model(header, booster, name, objective, objective_params,
                  categories, n_outputs)


# ------------------------------------------------------------ parsing


def _text(data):
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Invalid(f"it is not UTF-8 text ({exc.reason})") from None
    return data


def _sections(text):
    """(header {key: value}, [tree block {key: value}], text after the
    trees)."""
    body, marker, tail = text.partition("end of trees")
    if not marker:
        raise _Invalid("it has no 'end of trees' line (truncated?)")
    parts = body.split("\nTree=")
    header = _key_values(parts[0])
    blocks = [_key_values(part.partition("\n")[2]) for part in parts[1:]]
    if len(blocks) > _MAX_TREES:
        raise _Invalid(f"more than {_MAX_TREES} trees")
    return header, blocks, tail


def _key_values(text):
    out = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition("=")
        if key:   # a flag line (average_output) has no value
            if key in out:
                raise _Invalid(f"the entry {key!r} repeats")
            out[key] = value
    return out


def _count(mapping, key, low, high):
    value = mapping.get(key, "")
    if not (value.strip().isdigit() and len(value) < 12
            and low <= int(value) <= high):
        raise _Invalid(f"{key!r} must be an integer in [{low}, {high}], got "
                       f"{value!r:.40}")
    return int(value)


def _numbers(block, key, n, dtype=np.float64, finite=True):
    """``n`` numbers of a space-separated entry."""
    tokens = block.get(key, "").split()
    if len(tokens) != n:
        raise _Invalid(f"{key!r} must hold {n} numbers, it holds "
                       f"{len(tokens)}")
    try:
        values = np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError:
        raise _Invalid(f"{key!r} must hold numbers") from None
    if finite and not np.all(np.isfinite(values)):
        raise _Invalid(f"{key!r} must hold finite numbers")
    if dtype is not np.float64:
        if not np.all(values == np.round(values)) or np.any(
                np.abs(values) >= 2 ** 40):
            raise _Invalid(f"{key!r} must hold integers")
        values = values.astype(dtype)
    return values


def _objective(header, parameters):
    """(LightGBM's name, skboost's objective, its parameters)."""
    tokens = header.get("objective", "").split()
    name = tokens[0] if tokens else ""
    options = dict(t.partition(":")[::2] for t in tokens[1:])
    if name not in _OBJECTIVES:
        raise _Invalid(f"its objective {name!r:.40} has no skboost "
                       f"equivalent (skboost reads {sorted(_OBJECTIVES)})")
    if name == "binary" and options.get("sigmoid", "1") not in ("1", "1.0"):
        raise _Invalid("a binary model with sigmoid != 1 (its probabilities "
                       "are not the logistic of its margins)")
    params = {}
    if name == "tweedie":   # the variance power is in the parameters
        params["tweedie_variance_power"] = _parameter(
            parameters, "tweedie_variance_power", 1.5)
    if name == "quantile":
        params["quantile_alpha"] = _parameter(parameters, "alpha", 0.9)
    return name, _OBJECTIVES[name], params


def _parameters(tail):
    """The ``parameters:`` section's ``[name: value]`` lines."""
    section = tail.partition("\nparameters:")[2].partition(
        "end of parameters")[0]
    out = {}
    for line in section.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            name, _, value = line[1:-1].partition(":")
            out[name.strip()] = value.strip()
    return out


def _parameter(parameters, name, default):
    """A number of the ``parameters:`` section, or ``default``."""
    value = parameters.get(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise _Invalid(f"parameter {name} must be a number") from None
    if not math.isfinite(number):
        raise _Invalid(f"parameter {name} must be finite")
    return number


# ---------------------------------------------------------------- trees


def _tree(block, index, n_features):
    """One ``Tree=`` block's arrays, checked."""
    try:
        return _tree_arrays(block, n_features)
    except _Invalid as exc:
        raise _Invalid(f"tree {index}: {exc}") from None


def _tree_arrays(block, n_features):
    n_leaves = _count(block, "num_leaves", 1, 1 << 30)
    if block.get("is_linear", "0").strip() != "0":
        raise _Invalid("it is a linear tree (linear_tree=True: a linear model "
                       "in each leaf), which skboost does not hold")
    leaves = {"value": _numbers(block, "leaf_value", n_leaves)}
    leaves["count"] = (_numbers(block, "leaf_count", n_leaves)
                       if "leaf_count" in block else np.zeros(n_leaves))
    n_inner = n_leaves - 1
    if not n_inner:
        return {"leaves": leaves, "n_inner": 0}
    inner = {key: _numbers(block, key, n_inner, dtype) for key, dtype in (
        ("split_feature", np.int64), ("decision_type", np.int64),
        ("left_child", np.int64), ("right_child", np.int64),
        ("split_gain", np.float64), ("internal_count", np.float64),
        ("internal_value", np.float64))}
    inner["threshold"] = _numbers(block, "threshold", n_inner, finite=False)
    if np.any(np.isnan(inner["threshold"])):
        raise _Invalid("a threshold is NaN")
    feature = inner["split_feature"]
    if np.any((feature < 0) | (feature >= n_features)):
        raise _Invalid(f"a split feature is outside [0, {n_features})")
    for side in ("left_child", "right_child"):
        child = inner[side]
        if np.any((child >= n_inner) | (child < -n_leaves)):
            raise _Invalid(f"a {side} is outside the tree")
    if np.any((inner["decision_type"] < 0) | (inner["decision_type"] > 15)
              | ((inner["decision_type"] >> 2) & 3 == 3)):
        raise _Invalid("'decision_type' holds an unknown value")
    inner["sets"] = _category_sets(block, inner)
    return {"leaves": leaves, "inner": inner, "n_inner": n_inner}


def _category_sets(block, inner):
    """{inner node: uint32 words of its categorical split's left set}."""
    n_cat = _count(block, "num_cat", 0, 1 << 30)
    nodes = np.flatnonzero(inner["decision_type"] & _CATEGORICAL)
    if not nodes.size:
        return {}
    bounds = _numbers(block, "cat_boundaries", n_cat + 1, np.int64)
    words = block.get("cat_threshold", "").split()
    if bounds[0] != 0 or np.any(np.diff(bounds) < 1) or bounds[-1] != len(
            words) or len(words) > (MAX_CATEGORIES + 31) // 32 * n_cat:
        raise _Invalid("'cat_boundaries' must rise from 0 to the number of "
                       "words of 'cat_threshold'")
    bits = _numbers(block, "cat_threshold", len(words), np.int64)
    if np.any((bits < 0) | (bits >= 2 ** 32)):
        raise _Invalid("'cat_threshold' must hold 32-bit words")
    sets = {}
    for node in nodes:
        k = inner["threshold"][node]
        if not (k == int(k) and 0 <= k < n_cat):
            raise _Invalid(f"node {node}'s categorical set index is invalid")
        chosen = bits[bounds[int(k)]:bounds[int(k) + 1]]
        last = np.flatnonzero(chosen)
        sets[int(node)] = chosen[:(last[-1] + 1 if last.size else 1)]
        if sets[int(node)].shape[0] * 32 > MAX_CATEGORIES + 31:
            raise _Invalid(f"node {node}'s categories exceed "
                           f"{MAX_CATEGORIES}")
    return sets


def _largest_category(words):
    """The highest category of a bitset (-1 if empty)."""
    nonzero = np.flatnonzero(words)
    if not nonzero.size:
        return -1
    word = int(words[nonzero[-1]])
    return int(nonzero[-1]) * 32 + word.bit_length() - 1


# ------------------------------------------------------------ categories


def _categories(header, tail, trees, n_features):
    """The skboost category map (JSON) and {feature: number of categories}
    of the categorical features."""
    infos = header.get("feature_infos", "").split()
    if infos and len(infos) != n_features:
        raise _Invalid(f"'feature_infos' must describe {n_features} features")
    listed = {f: info for f, info in enumerate(infos)
              if not info.startswith("[") and info != "none"}
    largest = {}
    for tree in trees:
        inner = tree.get("inner")
        for node, words in (inner["sets"].items() if inner else ()):
            feature = int(inner["split_feature"][node])
            largest[feature] = max(largest.get(feature, -1),
                                   _largest_category(words))
    if infos and not set(largest) <= set(listed):
        raise _Invalid("a categorical split on a feature whose "
                       "feature_infos are not categorical")
    features = sorted(set(listed) | set(largest))
    if not features:
        return None, {}
    frames = _pandas_categorical(tail, len(features))
    values = []
    for i, feature in enumerate(features):
        if frames is not None:
            known = frames[i]
        else:
            seen = [_info_category(c) for c in listed.get(feature, "").split(
                ":") if c]
            top = max([c for c in seen if c >= 0] + [largest.get(feature, -1)])
            if top >= MAX_CATEGORIES:
                raise _Invalid(f"feature {feature} has a category above "
                               f"{MAX_CATEGORIES - 1}")
            known = list(range(top + 1)) or [0]
        if largest.get(feature, -1) >= len(known):
            raise _Invalid(f"a split on feature {feature} names category "
                           f"{largest[feature]}, of {len(known)}")
        values.append(known)
    category_map = {"features": features,
                    "from_dtype": [frames is not None] * len(features),
                    "kinds": [_kind(v) for v in values], "values": values}
    return category_map, {f: len(v) for f, v in zip(features, values)}


def _info_category(text):
    try:
        return int(text)
    except ValueError:
        raise _Invalid(f"a categorical feature_infos entry {text!r:.20} is "
                       "not an integer") from None


def _pandas_categorical(tail, n_categorical):
    """The categories of the DataFrame's category columns
    (``pandas_categorical``), one list per categorical feature, or None."""
    line = tail.partition("pandas_categorical:")[2].partition("\n")[0]
    if not line.strip() or line.strip() == "null":
        return None
    try:
        frames = json.loads(line)
    except ValueError:
        raise _Invalid("'pandas_categorical' is not JSON") from None
    if not (isinstance(frames, list) and len(frames) == n_categorical
            and all(isinstance(v, list) and 0 < len(v) <= MAX_CATEGORIES
                    for v in frames)):
        raise _Invalid("'pandas_categorical' must hold one list of "
                       "categories per categorical feature")
    for values in frames:
        if _kind(values) is None or len(set(values)) != len(values):
            raise _Invalid("'pandas_categorical' lists must hold distinct "
                           "strings or numbers")
    return frames


def _kind(values):
    if all(isinstance(v, str) for v in values):
        return "str"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool)
           and math.isfinite(v) for v in values):
        return "float"
    return None


# ------------------------------------------------------------ conversion


def float32_at_most(threshold):
    """The float32 ``t`` such that for every float32 ``x``, ``x <=
    threshold`` (in double) exactly when ``x < t``: the float32 just above
    the largest float32 not above ``threshold``."""
    with np.errstate(over="ignore"):
        below = np.float32(threshold)
    if float(below) > threshold:
        below = np.nextafter(below, np.float32(-np.inf))
    return float(np.nextafter(below, np.float32(np.inf)))


# LightGBM's predictor reads every |x| <= kZeroThreshold (1e-35f) as 0.0
_ZERO = float(np.float32(1e-35))


def lightgbm_threshold(threshold):
    """skboost's float32 threshold of LightGBM's ``x <= threshold``, with
    LightGBM's reading of the values within 1e-35 of 0 as 0.0: a threshold
    in [-1e-35, 0) sends exactly the values below -1e-35 left, one in
    [0, 1e-35) the values up to 1e-35."""
    if -_ZERO <= threshold < 0:
        return -_ZERO
    if 0 <= threshold < _ZERO:
        return float32_at_most(_ZERO)
    return float32_at_most(threshold)


def _to_skboost(tree, n_categories):
    """One tree as the ``"trees"`` entry of a skboost model file: nodes
    numbered breadth first from LightGBM's root (inner node 0; a negative
    child ``~i`` is leaf i)."""
    leaves = tree["leaves"]
    if not tree["n_inner"]:
        return _single_leaf(leaves)
    inner = tree["inner"]
    order = _breadth_first(inner, tree["n_inner"], leaves["value"].shape[0])
    new_id = {ref: i for i, ref in enumerate(order)}
    nodes = [_node(ref, inner, leaves, new_id) for ref in order]
    out = {name: [node[name] for node in nodes] for name in nodes[0]}
    cat = [i for i, ref in enumerate(order) if ref >= 0
           and inner["decision_type"][ref] & _CATEGORICAL]
    words = [inner["sets"][order[i]] for i in cat]
    out.update({"cat_node": cat,
                "cat_size": [n_categories[out["feature"][i]] for i in cat],
                "cat_ptr": np.concatenate([[0], np.cumsum(
                    [w.shape[0] for w in words])]).astype(int).tolist(),
                "cat_bits": [int(b) for w in words for b in w]})
    return out


def _single_leaf(leaves):
    return {"left_child": [-1], "right_child": [-1], "feature": [-1],
            "threshold": [0.0], "default_left": [0],
            "value": [float(leaves["value"][0])], "gain": [0.0],
            "cover": [float(leaves["count"][0])]}


def _breadth_first(inner, n_inner, n_leaves):
    """LightGBM's node references (inner i >= 0, leaf ~i) breadth first,
    each reached once."""
    order, seen_inner = [0], np.zeros(n_inner, dtype=bool)
    seen_leaf = np.zeros(n_leaves, dtype=bool)
    seen_inner[0] = True
    for ref in order:
        if ref < 0:
            continue
        for child in (int(inner["left_child"][ref]),
                      int(inner["right_child"][ref])):
            seen = seen_inner if child >= 0 else seen_leaf
            index = child if child >= 0 else ~child
            if seen[index]:
                raise _Invalid("the nodes do not form a tree")
            seen[index] = True
            order.append(child)
    if not (seen_inner.all() and seen_leaf.all()):
        raise _Invalid("some nodes are not reached from the root")
    return order


def _node(ref, inner, leaves, new_id):
    """One node's skboost fields."""
    if ref < 0:
        return {"left_child": -1, "right_child": -1, "feature": -1,
                "threshold": 0.0, "default_left": 0,
                "value": float(leaves["value"][~ref]), "gain": 0.0,
                "cover": float(leaves["count"][~ref])}
    kind = int(inner["decision_type"][ref])
    threshold = float(inner["threshold"][ref])
    categorical = bool(kind & _CATEGORICAL)
    return {"left_child": new_id[int(inner["left_child"][ref])],
            "right_child": new_id[int(inner["right_child"][ref])],
            "feature": int(inner["split_feature"][ref]),
            "threshold": 0.0 if categorical else lightgbm_threshold(threshold),
            "default_left": 0 if categorical else _default_left(kind,
                                                                threshold),
            "value": float(inner["internal_value"][ref]),
            "gain": float(inner["split_gain"][ref]) / 2,
            "cover": float(inner["internal_count"][ref])}


def _default_left(kind, threshold):
    """Where skboost must send NaN for LightGBM's missing type."""
    missing = (kind >> 2) & 3
    default_left = int(bool(kind & _DEFAULT_LEFT))
    zero_goes_left = int(0.0 <= threshold)
    if missing == _MISSING_NAN:
        return default_left
    if missing == _MISSING_NONE:   # NaN is read as 0.0
        return zero_goes_left
    if default_left != zero_goes_left:
        raise _Invalid("a split sends zeros to its missing side, unlike "
                       "their comparison (zero_as_missing=True), which "
                       "skboost can not hold")
    return default_left


# ------------------------------------------------------- estimator section


def _model(header, booster, name, objective, objective_params, categories,
           n_outputs):
    n_rounds = len(booster["trees"]) // n_outputs
    params = {"objective": objective, "n_estimators": n_rounds,
              **objective_params}
    if categories is not None and not categories["from_dtype"][0]:
        params["categorical_features"] = categories["features"]
    classes = None
    if name in _CLASSIFIERS:
        classes = {"dtype": "int64",
                   "values": list(range(max(2, n_outputs)))}
    names = header.get("feature_names", "").split() or None
    if names is not None and (len(names) != booster["n_features"] or all(
            n == f"Column_{i}" for i, n in enumerate(names))):
        names = None   # LightGBM's names for columns that had none
    estimator = ("BoostClassifier" if name in _CLASSIFIERS else
                 "BoostRanker" if name in _RANKERS else "BoostRegressor")
    return {"estimator": estimator, "skboost_version": None,
            "params": params, "unsaved_params": [],
            "n_features_in": booster["n_features"], "feature_names": names,
            "classes": classes, "categories": categories,
            "best_iteration": None, "best_score": None, "booster": booster}
