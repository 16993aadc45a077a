"""XGBoost's model files (``Booster.save_model``, JSON or UBJSON, versions
1.7 to 3.x) read as skboost models.

``model_from_xgboost(doc)`` turns XGBoost's document into the ``"model"``
object of a skboost model file (``model_file.py``), which the file layer
then validates as it validates its own: a forged or damaged file ends in a
ValueError, never in a crash or an allocation larger than the file. What
is read:

- ``learner.gradient_booster``: ``gbtree``, or ``dart`` with its trees'
  weights (``weight_drop``, skboost's ``tree_weights``); ``gblinear`` is
  refused, naming what is missing; its trees, ``tree_info`` (the
  output of each tree), ``iteration_indptr`` and ``num_parallel_tree``;
- each tree's ``left_children``, ``right_children``, ``split_indices``,
  ``split_conditions`` (a split's threshold, a leaf's value), ``default_left``,
  ``split_type`` and the categorical sets (``categories``,
  ``categories_nodes``, ``categories_segments``, ``categories_sizes``: the
  categories that go *right*), ``loss_changes`` (gains, on XGBoost's scale:
  twice skboost's), ``sum_hessian`` (covers); a vector-leaf tree
  (``size_leaf_vector`` > 1, ``multi_strategy="multi_output_tree"``) has its
  leaves' rows in ``leaf_weights``, a leaf's ``right_children`` entry
  indexing them;
- ``learner_model_param``: ``num_feature``, ``num_class``, ``num_target``
  and ``base_score``, a number or (3.x) a list ``"[5E-1,...]"`` with one
  value per output, in XGBoost's output space: turned into margins by the
  objective's link (logit for the logistic objectives, log for
  ``count:poisson``, ``reg:gamma``, ``reg:tweedie``);
- ``learner.objective`` (its name, ``huber_slope``, ``quantile_alpha``,
  ``tweedie_variance_power``), ``feature_names``, ``feature_types``
  (``"c"``: categorical), the categories XGBoost 3.x records (``cats``:
  the values of each categorical column, matched by value at prediction),
  and the attributes ``best_iteration`` and ``scikit_learn``.

XGBoost numbers the nodes as it grows them; where that order already has
every child after its parent and no node unreachable (the usual case) the
node ids are kept, so that ``apply`` gives XGBoost's leaf ids; otherwise
(nodes pruned) the reachable nodes are renumbered breadth first.

A categorical split of XGBoost sends the listed categories right and every
other value left; skboost's sends its listed categories left, and a value
that is no training category (unseen, negative, fractional) where missing
values go. The conversion lists the complement (within the feature's
categories) on the left, so that every training category goes where
XGBoost sends it.

This module imports no estimator and builds no Booster: it returns plain
JSON values.
"""

import math
import re

import numpy as np

from .._input.categorical import MAX_CATEGORIES
from ..tree._tree import float32_threshold
from ..objectives import CLASSIFICATION_OBJECTIVES, OBJECTIVES, RANKING_OBJECTIVES
from .validation import MAX_FEATURES
from .validation import ModelFileError as _Invalid

# objectives whose base_score is a probability (margin: its logit) or a
# mean (margin: its log), as XGBoost's ProbToMargin
_LOGIT_BASE = frozenset({"binary:logistic", "reg:logistic"})
_LOG_BASE = frozenset({"count:poisson", "reg:gamma", "reg:tweedie",
                       "survival:cox", "survival:aft"})
# XGBoost objectives skboost has no equivalent of, and what is missing
_UNSUPPORTED = {"reg:linear": "the removed alias reg:linear (resave the "
                              "model with a current XGBoost)",
                "multi:softmax_raw": "this objective"}
# limits on what a file may declare (its sizes are checked against these
# before anything is allocated)
_MAX_OUTPUTS = 1 << 16
_MAX_PARALLEL = 1 << 20
_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def is_xgboost_document(doc):
    """Whether a parsed JSON document is an XGBoost model file."""
    return isinstance(doc, dict) and "learner" in doc and "format" not in doc


def model_from_xgboost(doc):
    """The skboost ``"model"`` object (JSON values) of XGBoost's document
    ``doc``; raises ModelFileError naming what is wrong or missing."""
    learner = _entry(doc, "learner", dict)
    trees_doc, tree_weights = _gbtree_model(learner)
    params = _entry(learner, "learner_model_param", dict)
    n_features = _int_param(params, "num_feature", 1, MAX_FEATURES)
    objective, objective_params = _objective(learner)
    n_outputs, n_targets = _outputs(params, objective, objective_params)
    trees, vector_leaf, per_round, n_parallel = _trees(
        trees_doc, n_outputs, n_features)
    categories, categorical = _categories(learner, trees_doc, n_features,
                                          trees)
    trees = [_tree_to_skboost(tree, categorical, vector_leaf)
             for tree in trees]
    booster = {"objective": objective,
               "objective_params": objective_params,
               "n_features": n_features,
               "base_margin": _base_margin(params, objective, n_outputs),
               "trees": trees, "num_parallel_tree": n_parallel,
               "n_targets": n_targets}
    if vector_leaf:
        booster["multi_strategy"] = "multi_output_tree"
    if tree_weights is not None:   # DART: checked with the trees (one each)
        booster["tree_weights"] = tree_weights
    return _model(learner, booster, objective, objective_params,
                  n_outputs, categories, per_round, vector_leaf)


# ------------------------------------------------------------- reading


def _entry(mapping, key, kind, what=None):
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if not isinstance(value, kind):
        raise _Invalid(f"{what or repr(key)} must be a JSON "
                       f"{'object' if kind is dict else kind.__name__}")
    return value


def _number(text, what):
    """A float written by XGBoost (a string or a number)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    elif isinstance(text, str) and _FLOAT.match(text.strip()):
        value = float(text)
    else:
        raise _Invalid(f"{what} must be a number, got {text!r:.40}")
    if not math.isfinite(value):
        raise _Invalid(f"{what} must be finite, got {text!r:.40}")
    return value


def _int_param(params, key, low, high, default=None):
    value = params.get(key, default)
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,12}", value.strip()):
        value = int(value)
    if not (isinstance(value, int) and not isinstance(value, bool)
            and low <= value <= high):
        raise _Invalid(f"{key!r} must be an integer in [{low}, {high}], got "
                       f"{value!r:.40}")
    return value


def _number_list(text, what):
    """XGBoost's vector parameters: "[5E-1,2E-1]", "5E-1" or a number."""
    if isinstance(text, str) and text.strip().startswith("["):
        inner = text.strip()[1:-1] if text.strip().endswith("]") else None
        if inner is None or len(inner) > 1 << 20:
            raise _Invalid(f"{what} must be a list of numbers")
        return [_number(part, what) for part in inner.split(",")]
    return [_number(text, what)]


def _gbtree_model(learner):
    """``gradient_booster.model`` of a gbtree or DART model, and a DART
    model's tree weights (``weight_drop``; None for gbtree); other
    boosters are refused, naming what skboost lacks."""
    booster = _entry(learner, "gradient_booster", dict)
    name = booster.get("name")
    if name == "gblinear":
        raise _Invalid("it is a linear model (gradient_booster 'gblinear'): "
                       "skboost holds trees only")
    if name == "dart":
        gbtree = _entry(booster, "gbtree", dict, "gradient_booster.gbtree")
        weights = _entry(booster, "weight_drop", list,
                         "gradient_booster.weight_drop")
        if not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                   for w in weights):
            raise _Invalid("gradient_booster.weight_drop must hold numbers")
        return (_entry(gbtree, "model", dict, "gradient_booster.gbtree.model"),
                [float(w) for w in weights])
    if name != "gbtree":
        raise _Invalid(f"unknown gradient_booster {name!r:.40} (skboost reads "
                       "'gbtree' and 'dart')")
    return _entry(booster, "model", dict, "gradient_booster.model"), None


def _objective(learner):
    """The objective's name and the parameters of it skboost records."""
    objective = _entry(learner, "objective", dict)
    name = objective.get("name")
    if name in _UNSUPPORTED:
        raise _Invalid(f"its objective {name!r} is not one skboost has "
                       f"({_UNSUPPORTED[name]} are not supported)")
    if not isinstance(name, str) or name not in OBJECTIVES:
        raise _Invalid(f"unknown objective {name!r:.60}: skboost reads "
                       f"{sorted(OBJECTIVES)}")
    params = {}
    for section in objective.values():
        if not isinstance(section, dict):
            continue
        if "huber_slope" in section:
            params["huber_slope"] = _number(section["huber_slope"],
                                            "huber_slope")
        if "tweedie_variance_power" in section:
            params["tweedie_variance_power"] = _number(
                section["tweedie_variance_power"], "tweedie_variance_power")
        if "quantile_alpha" in section:
            alphas = _number_list(section["quantile_alpha"], "quantile_alpha")
            params["quantile_alpha"] = alphas[0] if len(alphas) == 1 else alphas
        if "aft_loss_distribution" in section:
            params["aft_loss_distribution"] = section["aft_loss_distribution"]
        if "aft_loss_distribution_scale" in section:
            params["aft_loss_distribution_scale"] = _number(
                section["aft_loss_distribution_scale"],
                "aft_loss_distribution_scale")
    return name, _only_used(name, params)


def _only_used(objective, params):
    """The objective parameters that mean something for ``objective``."""
    used = {"reg:pseudohubererror": ("huber_slope",),
            "reg:tweedie": ("tweedie_variance_power",),
            "reg:quantileerror": ("quantile_alpha",),
            "survival:aft": ("aft_loss_distribution",
                             "aft_loss_distribution_scale")}.get(objective, ())
    return {name: params[name] for name in used if name in params}


def _outputs(params, objective, objective_params):
    """(outputs, targets) of the model: classes of a multi-class model,
    quantiles of a quantile model, targets of a multi-target one."""
    n_class = _int_param(params, "num_class", 0, _MAX_OUTPUTS, "0")
    n_target = _int_param(params, "num_target", 1, _MAX_OUTPUTS, "1")
    if objective in ("multi:softprob", "multi:softmax"):
        if n_class < 2 or n_target != 1:
            raise _Invalid(f"{objective} needs num_class >= 2 and one target, "
                           f"got num_class={n_class}, num_target={n_target}")
        return n_class, 1
    if n_class not in (0, 1):
        raise _Invalid(f"num_class={n_class} with the objective {objective!r}")
    alphas = objective_params.get("quantile_alpha")
    if isinstance(alphas, list):
        if n_target != len(alphas):
            raise _Invalid(f"{len(alphas)} quantiles need as many targets, "
                           f"the file has num_target={n_target}")
        return n_target, 1
    if n_target > 1 and objective in RANKING_OBJECTIVES:
        raise _Invalid("a ranking model has one target")
    return n_target, n_target


def _base_margin(params, objective, n_outputs):
    """``base_score`` (one value, or one per output) as margins."""
    scores = _number_list(params.get("base_score", "0.5"), "base_score")
    if len(scores) not in (1, n_outputs):
        raise _Invalid(f"base_score has {len(scores)} values for {n_outputs} "
                       "outputs")
    scores = np.asarray(scores, dtype=np.float32)
    if objective in _LOGIT_BASE:
        if not np.all((scores > 0) & (scores < 1)):
            raise _Invalid(f"base_score of {objective} must be in (0, 1)")
        # as XGBoost computes it, in float32
        margins = -np.log(np.float32(1) / scores - np.float32(1))
    elif objective in _LOG_BASE:
        if not np.all(scores > 0):
            raise _Invalid(f"base_score of {objective} must be positive")
        margins = np.log(scores)
    else:
        margins = scores
    margins = np.broadcast_to(margins.astype(np.float64), (n_outputs,))
    return [float(m) for m in margins]


# ---------------------------------------------------------------- trees


def _trees(model, n_outputs, n_features):
    """The trees' arrays (checked) in skboost's round layout, whether they
    are vector-leaf trees, trees per round and parallel trees per output."""
    trees = _entry(model, "trees", list, "gradient_booster.model.trees")
    tree_param = _entry(model, "gbtree_model_param", dict)
    n_parallel = _int_param(tree_param, "num_parallel_tree", 1, _MAX_PARALLEL,
                            "1")
    if _int_param(tree_param, "num_trees", 0, 1 << 31) != len(trees):
        raise _Invalid(f"num_trees={tree_param['num_trees']!r:.20} but "
                       f"{len(trees)} trees")
    arrays = []
    for index, tree in enumerate(trees):
        try:
            arrays.append(_tree_arrays(tree, n_features))
        except _Invalid as exc:
            raise _Invalid(f"tree {index}: {exc}") from None
    leaf_sizes = {a["leaf_size"] for a in arrays}
    vector_leaf = bool(arrays) and leaf_sizes != {1}
    if vector_leaf and leaf_sizes != {n_outputs}:
        raise _Invalid(f"vector leaves of sizes {sorted(leaf_sizes)} in a "
                       f"model of {n_outputs} outputs")
    per_round = n_parallel * (1 if vector_leaf else n_outputs)
    _check_round_layout(model, len(trees), per_round, n_parallel, vector_leaf)
    return arrays, vector_leaf, per_round, n_parallel


def _check_round_layout(model, n_trees, per_round, n_parallel, vector_leaf):
    """Trees come round by round, in each round output by output
    (``n_parallel`` trees each), as skboost stores them."""
    if n_trees % per_round:
        raise _Invalid(f"{n_trees} trees is not a whole number of rounds of "
                       f"{per_round}")
    info = _ints(model, "tree_info", n_trees, "gradient_booster.model")
    expected = (np.zeros(n_trees, dtype=np.int64) if vector_leaf else
                (np.arange(n_trees) % per_round) // n_parallel)
    if not np.array_equal(info, expected):
        raise _Invalid("tree_info does not give the trees of each round "
                       "output by output")
    if "iteration_indptr" in model:
        indptr = _ints(model, "iteration_indptr", n_trees // per_round + 1,
                       "gradient_booster.model")
        if not np.array_equal(indptr, np.arange(0, n_trees + 1, per_round)):
            raise _Invalid(f"iteration_indptr does not hold rounds of "
                           f"{per_round} trees")


def _ints(tree, key, n, where="tree"):
    """A list of ``n`` int32 integers (bools refused)."""
    values = tree.get(key)
    if not isinstance(values, list) or len(values) != n:
        raise _Invalid(f"{where}'s {key!r} must be a list of {n} integers")
    array = _array(values) if values else np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu" or array.ndim != 1:
        raise _Invalid(f"{where}'s {key!r} must hold integers")
    if n and (array.min() < -(1 << 31) or array.max() >= 1 << 31):
        raise _Invalid(f"{where}'s {key!r} holds integers beyond 32 bits")
    return array.astype(np.int64)


def _array(values):
    """A JSON list as an array (a ragged nested list: an object array,
    which the callers refuse by its dtype)."""
    try:
        return np.asarray(values)
    except (ValueError, TypeError, OverflowError):
        return np.zeros(0, dtype=object)


def _floats(tree, key, n):
    """A list of ``n`` finite numbers, as float32 values (XGBoost's)."""
    values = tree.get(key)
    if not isinstance(values, list) or len(values) != n:
        raise _Invalid(f"{key!r} must be a list of {n} numbers")
    array = _array(values) if values else np.zeros(0)
    if array.dtype.kind not in "iuf" or array.ndim != 1:
        raise _Invalid(f"{key!r} must hold numbers")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise _Invalid(f"{key!r} must hold finite numbers")
    with np.errstate(over="ignore"):
        single = array.astype(np.float32)
    if not np.all(np.isfinite(single)):
        raise _Invalid(f"{key!r} holds numbers beyond float32")
    return single.astype(np.float64)


def _tree_arrays(tree, n_features):
    """One tree's node arrays, checked for length and range."""
    if not isinstance(tree, dict):
        raise _Invalid("a tree must be a JSON object")
    left = tree.get("left_children")
    n = len(left) if isinstance(left, list) else 0
    if not 1 <= n <= 1 << 31:
        raise _Invalid("'left_children' must be a list of nodes")
    param = _entry(tree, "tree_param", dict)
    if _int_param(param, "num_nodes", 1, 1 << 31) != n:
        raise _Invalid(f"num_nodes={param['num_nodes']!r:.20} but {n} nodes")
    leaf_size = max(1, _int_param(param, "size_leaf_vector", 0, _MAX_OUTPUTS,
                                  "1"))
    a = {name: _ints(tree, key, n) for name, key in (
        ("left", "left_children"), ("right", "right_children"),
        ("feature", "split_indices"), ("default_left", "default_left"))}
    a["split_type"] = (_ints(tree, "split_type", n) if "split_type" in tree
                       else np.zeros(n, dtype=np.int64))
    a.update(condition=_floats(tree, "split_conditions", n),
             gain=_floats(tree, "loss_changes", n),
             cover=_floats(tree, "sum_hessian", n), leaf_size=leaf_size)
    inner = a["left"] != -1
    if np.any((a["feature"][inner] < 0) | (a["feature"][inner] >= n_features)):
        raise _Invalid(f"a split feature is outside [0, {n_features})")
    if not np.all(np.isin(a["default_left"], (0, 1))
                  & np.isin(a["split_type"], (0, 1))):
        raise _Invalid("'default_left' and 'split_type' must hold 0 or 1")
    if leaf_size > 1:
        a["leaf_weights"] = _leaf_rows(tree, a, leaf_size)
    a["categorical"] = _category_sets(tree, a, n)
    return a


def _leaf_rows(tree, a, leaf_size):
    """The leaves' value rows of a vector-leaf tree: leaf i's row is
    ``leaf_weights[right_children[i]]``."""
    weights = tree.get("leaf_weights")
    n_values = len(weights) if isinstance(weights, list) else -1
    if n_values < 0 or n_values % leaf_size:
        raise _Invalid(f"'leaf_weights' must hold rows of {leaf_size} values")
    rows = _floats(tree, "leaf_weights", n_values).reshape(-1, leaf_size)
    leaves = a["left"] == -1
    index = a["right"][leaves]
    if np.any((index < 0) | (index >= rows.shape[0])):
        raise _Invalid("a leaf's row is outside 'leaf_weights'")
    values = np.zeros((a["left"].shape[0], leaf_size))
    values[leaves] = rows[index]
    a["right"] = np.where(leaves, -1, a["right"])
    return values


def _category_sets(tree, a, n):
    """{node: sorted categories XGBoost sends right} of the categorical
    splits (``split_type`` 1)."""
    nodes = np.flatnonzero((a["split_type"] == 1) & (a["left"] != -1))
    if not nodes.size:
        return {}
    listed = _ints(tree, "categories_nodes", nodes.size)
    if not np.array_equal(np.sort(listed), nodes):
        raise _Invalid("'categories_nodes' must list the categorical splits")
    sizes = _ints(tree, "categories_sizes", nodes.size)
    starts = _ints(tree, "categories_segments", nodes.size)
    categories = tree.get("categories")
    total = len(categories) if isinstance(categories, list) else -1
    values = _ints(tree, "categories", total)
    if np.any((sizes < 0) | (starts < 0) | (starts + sizes > total)):
        raise _Invalid("a categorical split's segment is outside "
                       "'categories'")
    sets = {}
    for node, start, size in zip(listed, starts, sizes):
        chosen = np.unique(values[start:start + size])
        if chosen.size != size or (size and (chosen[0] < 0 or
                                             chosen[-1] >= MAX_CATEGORIES)):
            raise _Invalid(f"node {node}'s categories must be distinct, in "
                           f"[0, {MAX_CATEGORIES})")
        sets[int(node)] = chosen
    return sets


# ------------------------------------------------------------ categories


def _categories(learner, model, n_features, trees):
    """The skboost category map (JSON) and {feature: number of categories}
    of the categorical features: those typed "c", and any feature a
    categorical split uses."""
    types = learner.get("feature_types") or []
    if not isinstance(types, list) or (types and len(types) != n_features):
        raise _Invalid(f"'feature_types' must list {n_features} types")
    typed = {f for f, kind in enumerate(types) if kind == "c"}
    largest = {}
    for tree in trees:
        for node, chosen in tree["categorical"].items():
            feature = int(tree["feature"][node])
            top = int(chosen[-1]) if chosen.size else -1
            largest[feature] = max(largest.get(feature, -1), top)
    if types and not set(largest) <= typed:
        raise _Invalid("a categorical split on a feature not typed 'c'")
    features = sorted(typed | set(largest))
    if not features:
        return None, {}
    recorded = _recorded_categories(model.get("cats"), n_features)
    values, from_dtype = [], []
    for feature in features:
        known = recorded.get(feature)
        if known is None:   # no values recorded: the codes themselves
            known = list(range(largest.get(feature, -1) + 1)) or [0]
        if largest.get(feature, -1) >= len(known):
            raise _Invalid(f"a split on feature {feature} names category "
                           f"{largest[feature]}, of {len(known)}")
        values.append(known)
        from_dtype.append(feature in recorded)
    kinds = [_kind(v) for v in values]
    category_map = {"features": features, "from_dtype": from_dtype,
                    "kinds": kinds, "values": values}
    return category_map, {f: len(v) for f, v in zip(features, values)}


def _kind(values):
    if all(isinstance(v, str) for v in values):
        return "str"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    return "float"


def _recorded_categories(cats, n_features):
    """{feature: its categories in code order} that XGBoost 3.x records
    (``cats``: per feature, strings as UTF-8 bytes cut by ``offsets``, or
    numbers), for the features that have some."""
    if cats is None:
        return {}
    encodings = _entry(cats, "enc", list, "cats.enc")
    if not encodings:   # none recorded (numbers typed "c", not a frame)
        return {}
    if len(encodings) != n_features:
        raise _Invalid(f"cats.enc must have {n_features} entries")
    counts = np.diff(_ints(cats, "feature_segments", n_features + 1, "cats"))
    if np.any(counts < 0) or np.any(counts > MAX_CATEGORIES):
        raise _Invalid(f"cats.feature_segments must rise by at most "
                       f"{MAX_CATEGORIES}")
    recorded = {}
    for feature in np.flatnonzero(counts):
        values = _encoded_values(encodings[feature], int(counts[feature]))
        if len(set(values)) != len(values):
            raise _Invalid(f"feature {feature}'s categories repeat")
        recorded[int(feature)] = values
    return recorded


def _encoded_values(encoding, count):
    if not isinstance(encoding, dict):
        raise _Invalid("cats.enc entries must be objects")
    if "offsets" in encoding:   # strings
        offsets = _ints(encoding, "offsets", count + 1, "cats.enc")
        data = encoding.get("values")
        size = len(data) if isinstance(data, list) else -1
        raw = _ints(encoding, "values", size, "cats.enc")
        # bytes, signed (UBJSON files) or not (JSON files)
        if (offsets[0] != 0 or offsets[-1] != size
                or np.any(np.diff(offsets) < 0)
                or np.any((raw < -128) | (raw > 255))):
            raise _Invalid("cats.enc string offsets or bytes are invalid")
        blob = (raw & 0xFF).astype(np.uint8).tobytes()
        try:
            return [blob[a:b].decode("utf-8")
                    for a, b in zip(offsets[:-1], offsets[1:])]
        except UnicodeDecodeError:
            raise _Invalid("a category name is not UTF-8") from None
    numbers = encoding.get("values")
    if not isinstance(numbers, list) or len(numbers) != count or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) for v in numbers):
        raise _Invalid(f"cats.enc values must be {count} finite numbers")
    return list(numbers)


# ------------------------------------------------------------ conversion


def _tree_to_skboost(a, n_categories, vector_leaf):
    """One tree as the ``"trees"`` entry of a skboost model file."""
    tree = _node_arrays(a, vector_leaf)
    sets = dict(a["categorical"])   # node -> categories going left
    order = _node_order(tree["left_child"], tree["right_child"])
    if order is not None:
        tree, new_id = _renumbered(tree, order)
        sets = {int(new_id[node]): chosen for node, chosen in sets.items()
                if new_id[node] >= 0}
    tree["value"] = _inner_means(tree)
    nodes = sorted(sets)
    tree.update(_category_fields(
        nodes, [sets[node] for node in nodes],
        [n_categories[int(tree["feature"][node])] for node in nodes]))
    return {name: (value.tolist() if isinstance(value, np.ndarray)
                   else value) for name, value in tree.items()}


def _node_arrays(a, vector_leaf):
    """skboost's node arrays of XGBoost's: leaves marked as skboost marks
    them, gains halved (skboost's scale), and each categorical split's
    children swapped, so that XGBoost's set (which goes right) goes left,
    missing values still going where they went."""
    left, right = a["left"].copy(), a["right"].copy()
    leaves = left == -1
    right[leaves] = -1
    default_left = a["default_left"].copy()
    cat = np.array(sorted(a["categorical"]), dtype=np.int64)
    left[cat], right[cat] = right[cat].copy(), left[cat].copy()
    default_left[cat] = 1 - default_left[cat]
    numeric = ~leaves & (a["split_type"] == 0)
    return {"left_child": left, "right_child": right,
            "feature": np.where(leaves, -1, a["feature"]),
            "threshold": np.where(numeric, a["condition"], 0.0),
            "default_left": np.where(leaves, 0, default_left),
            "value": (a["leaf_weights"] if vector_leaf
                      else np.where(leaves, a["condition"], 0.0)),
            "gain": np.where(leaves, 0.0, a["gain"] / 2),
            "cover": a["cover"]}


def _node_order(left, right):
    """None when every node is reachable and after its parent (ids kept),
    else the reachable nodes breadth first (their new order)."""
    n = left.shape[0]
    inner = np.flatnonzero(left != -1)
    if np.any((left[inner] < 0) | (left[inner] >= n)
              | (right[inner] < 0) | (right[inner] >= n)):
        raise _Invalid("a child index is outside the tree")
    parents = np.bincount(np.concatenate([left[inner], right[inner]]),
                          minlength=n)
    if (parents[0] == 0 and np.all(parents[1:] == 1)
            and np.all(left[inner] > inner) and np.all(right[inner] > inner)):
        return None
    order, seen = [0], np.zeros(n, dtype=bool)
    seen[0] = True
    for node in order:   # grows as children are met; each node once
        if left[node] == -1:
            continue
        for child in (left[node], right[node]):
            if seen[child]:
                raise _Invalid("the nodes do not form a tree")
            seen[child] = True
            order.append(int(child))
    return np.asarray(order, dtype=np.int64)


def _renumbered(tree, order):
    """The tree's reachable nodes, ``order[i]`` becoming node i, and the
    new id of every old node (-1: unreachable)."""
    new_id = np.full(tree["left_child"].shape[0], -1, dtype=np.int64)
    new_id[order] = np.arange(order.shape[0])
    out = {name: np.asarray(values)[order] for name, values in tree.items()}
    for side in ("left_child", "right_child"):
        child = out[side]
        out[side] = np.where(child == -1, -1, new_id[np.maximum(child, 0)])
    return out, new_id


def _inner_means(tree):
    """Leaf values kept; each inner node the cover-weighted mean of its
    children's (XGBoost's node mean values, read by Saabas explanations)."""
    values = np.array(tree["value"], dtype=np.float64)
    left, right, cover = tree["left_child"], tree["right_child"], tree["cover"]
    for node in range(left.shape[0] - 1, -1, -1):   # children first
        if left[node] == -1:
            continue
        a, b = left[node], right[node]
        total = cover[a] + cover[b]
        values[node] = ((cover[a] * values[a] + cover[b] * values[b]) / total
                        if total > 0 else (values[a] + values[b]) / 2)
    return values


# words of all categorical splits' bitsets together (a forged file naming
# large categories can not make more)
_MAX_CATEGORY_WORDS = 1 << 22


def _category_fields(nodes, sets, sizes):
    """``cat_node`` / ``cat_size`` / ``cat_ptr`` / ``cat_bits`` of the
    categorical splits at ``nodes`` (each set: the categories going left)."""
    words = [int(s[-1]) // 32 + 1 if s.size else 1 for s in sets]
    if sum(words) > _MAX_CATEGORY_WORDS:
        raise _Invalid("the categorical splits' sets are too large")
    bits = np.zeros(sum(words), dtype=np.uint64)
    ptr = np.concatenate([[0], np.cumsum(words)]).astype(np.int64)
    for start, chosen in zip(ptr[:-1], sets):
        np.bitwise_or.at(bits, start + chosen // 32,
                         np.left_shift(np.uint64(1),
                                       (chosen % 32).astype(np.uint64)))
    return {"cat_node": [int(n) for n in nodes], "cat_size": list(sizes),
            "cat_ptr": ptr.tolist(), "cat_bits": [int(b) for b in bits]}


# ------------------------------------------------------- estimator section


def _model(learner, booster, objective, objective_params, n_outputs,
           categories, per_round, vector_leaf):
    """The skboost ``"model"`` object around ``booster``: the estimator the
    objective belongs to, its parameters, classes, features, best round."""
    n_rounds = len(booster["trees"]) // per_round
    n_targets = booster["n_targets"]
    params = {"objective": objective, "n_estimators": n_rounds,
              **objective_params}
    if booster["num_parallel_tree"] > 1:
        params["num_parallel_tree"] = booster["num_parallel_tree"]
    if vector_leaf:
        params["multi_strategy"] = "multi_output_tree"
    if categories is not None:
        by_value = [f for f, dtype in zip(categories["features"],
                                          categories["from_dtype"])
                    if not dtype]
        if by_value:
            params["categorical_features"] = by_value
    classes = None
    if objective in CLASSIFICATION_OBJECTIVES:
        n_classes = (n_targets if n_targets > 1 else
                     n_outputs if n_outputs > 1 else 2)
        classes = {"dtype": "int64", "values": list(range(n_classes))}
    attributes = learner.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise _Invalid("'attributes' must be a JSON object")
    return {"estimator": _estimator_name(objective),
            "skboost_version": None, "params": params,
            "unsaved_params": [],
            "n_features_in": booster["n_features"],
            "feature_names": _feature_names(learner, booster["n_features"]),
            "classes": classes, "categories": categories,
            "best_iteration": _best_iteration(attributes),
            "best_score": _best_score(attributes), "booster": booster}


def _estimator_name(objective):
    if objective in CLASSIFICATION_OBJECTIVES:
        return "BoostClassifier"
    if objective in RANKING_OBJECTIVES:
        return "BoostRanker"
    return "BoostRegressor"


def _feature_names(learner, n_features):
    names = learner.get("feature_names") or None
    if names is not None and not (isinstance(names, list)
                                  and len(names) == n_features):
        raise _Invalid(f"'feature_names' must list {n_features} names")
    return names


def _best_iteration(attributes):
    value = attributes.get("best_iteration")
    if value is None:
        return None
    if not (isinstance(value, str) and value.isdigit() and len(value) < 12):
        raise _Invalid(f"attribute best_iteration must be a count, got "
                       f"{value!r:.40}")
    return int(value)


def _best_score(attributes):
    value = attributes.get("best_score")
    return None if value is None else _number(value, "best_score")



# ================================================================ writing

# each objective's parameter section as XGBoost 3.x writes it (its loader
# reads them); values filled from the booster's objective parameters
_OBJECTIVE_SECTIONS = {
    "reg:squarederror": ("reg_loss_param", {"scale_pos_weight": "1"}),
    "reg:logistic": ("reg_loss_param", {"scale_pos_weight": "1"}),
    "reg:gamma": ("reg_loss_param", {"scale_pos_weight": "1"}),
    "binary:logistic": ("reg_loss_param", {"scale_pos_weight": "1"}),
    "binary:logitraw": ("reg_loss_param", {"scale_pos_weight": "1"}),
    "reg:pseudohubererror": ("pseudo_huber_param", {"huber_slope": "1"}),
    "reg:quantileerror": ("quantile_loss_param", {"quantile_alpha": "[5E-1]"}),
    "count:poisson": ("poisson_regression_param",
                      {"max_delta_step": "0.699999988"}),
    "reg:tweedie": ("tweedie_regression_param",
                    {"tweedie_variance_power": "1.5"}),
    "multi:softprob": ("softmax_multiclass_param", {"num_class": "0"}),
    "multi:softmax": ("softmax_multiclass_param", {"num_class": "0"}),
    "survival:aft": ("aft_loss_param", {"aft_loss_distribution": "normal",
                                        "aft_loss_distribution_scale": "1"}),
    **{name: ("lambdarank_param", {
        "lambdarank_bias_norm": "1", "lambdarank_normalization": "1",
        "lambdarank_num_pair_per_sample": "4294967295",
        "lambdarank_pair_method": "topk",
        "lambdarank_score_normalization": "1", "lambdarank_unbiased": "0",
        "ndcg_exp_gain": "1"})
       for name in ("rank:ndcg", "rank:map", "rank:pairwise")},
}
_ROOT_PARENT = 2147483647   # XGBoost's "no parent"
# how XGBoost's own .ubj types the arrays of these entries (None: a plain
# array); others: float32 or int32
XGBOOST_UBJSON_ARRAYS = {"default_left": "U", "split_type": "U",
                         "tree_info": None, "iteration_indptr": None,
                         "weight_drop": None,   # DART's, read as an Array
                         "version": None, "enc": None,
                         "feature_names": None, "feature_types": None,
                         "categories_segments": "L", "categories_sizes": "L",
                         # category names as signed bytes, numbers int64
                         "values": lambda holder: ("i" if "offsets" in holder
                                                   else "L")}
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def xgboost_document(booster, section):
    """XGBoost 3.x's ``save_model`` document of ``booster`` and its
    estimator ``section`` (JSON values, as ``model_file.dumps_model`` takes
    it); raises ValueError for what XGBoost's format can not hold."""
    _check_writable(booster, section)
    n_outputs = booster.n_outputs
    vector = booster.vector_leaf
    n_class = n_outputs if booster.objective.startswith("multi:") else 0
    n_target = 1 if n_class else n_outputs
    category_words = _category_values(section["categories"],
                                      booster.n_features)
    trees = [_tree_document(tree, index, booster.n_features, vector)
             for index, tree in enumerate(booster.trees)]
    learner = {
        "attributes": _attributes(booster, section),
        "feature_names": list(section["feature_names"] or []),
        "feature_types": _feature_types(booster.n_features,
                                        section["categories"]),
        "gradient_booster": _gradient_booster(booster, {
            "gbtree_model_param": {
                "num_parallel_tree": str(booster.num_parallel_tree),
                "num_trees": str(len(trees))},
            "iteration_indptr": list(range(
                0, len(trees) + 1, booster.trees_per_round)),
            "tree_info": ([0] * len(trees) if vector else
                          [int(g) for g in booster.tree_group]),
            "trees": trees,
            **({"cats": category_words} if category_words else {})}),
        "learner_model_param": {
            "base_score": _base_score(booster),
            "boost_from_average": "1", "num_class": str(n_class),
            "num_feature": str(booster.n_features),
            "num_target": str(n_target)},
        "objective": _objective_document(booster, n_class)}
    return {"learner": learner, "version": [3, 2, 0]}


def _gradient_booster(booster, model):
    """XGBoost's ``gradient_booster``: gbtree, or DART with the trees'
    weights (``weight_drop``) for a model of ``booster="dart"``."""
    if booster.tree_weights is None:
        return {"name": "gbtree", "model": model}
    return {"name": "dart", "gbtree": {"name": "gbtree", "model": model},
            "weight_drop": [float(w) for w in booster.tree_weights]}


def _check_writable(booster, section):
    objective = booster.objective
    if objective not in _OBJECTIVE_SECTIONS and objective not in (
            "reg:squaredlogerror", "reg:absoluteerror", "binary:hinge",
            "survival:cox"):
        raise ValueError(f"XGBoost's format can not hold the objective "
                         f"{objective!r} (a custom objective has no name "
                         "XGBoost knows)")
    if booster.absent_value == 0.0:
        raise ValueError("XGBoost reads absent sparse entries as missing: a "
                         "model of sparse_absent='zero' can not be written "
                         "in its format")
    categories = section["categories"]
    for feature, dtype, values in zip(
            *(categories[k] for k in ("features", "from_dtype", "values"))
    ) if categories else ():
        if not dtype and values != list(range(len(values))):
            raise ValueError(
                f"feature {feature}: XGBoost reads a categorical feature's "
                "values as category codes; this one's categories are "
                f"{values[:5]}..., not 0 .. {len(values) - 1} (write it "
                "from a DataFrame category column, or code the values)")


def _base_score(booster):
    """The base margins in XGBoost's output space ("[v,...]", float32)."""
    margins = booster.base_margin.astype(np.float64)
    if booster.objective in _LOGIT_BASE:
        scores = 1 / (1 + np.exp(-margins))
    elif booster.objective in _LOG_BASE:
        scores = np.exp(margins)
    else:
        scores = margins
    return "[" + ",".join(repr(float(np.float32(s))) for s in scores) + "]"


def _objective_document(booster, n_class):
    name = booster.objective
    if name not in _OBJECTIVE_SECTIONS:
        return {"name": name}
    key, values = _OBJECTIVE_SECTIONS[name]
    values = dict(values)
    params = booster.objective_params or {}
    for param in ("huber_slope", "tweedie_variance_power"):
        if param in values and params.get(param) is not None:
            values[param] = repr(float(params[param]))
    if params.get("aft_loss_distribution") is not None:
        values["aft_loss_distribution"] = params["aft_loss_distribution"]
    if params.get("aft_loss_distribution_scale") is not None:
        values["aft_loss_distribution_scale"] = repr(
            float(params["aft_loss_distribution_scale"]))
    if "quantile_alpha" in values and params.get("quantile_alpha") is not None:
        alphas = np.atleast_1d(params["quantile_alpha"])
        values["quantile_alpha"] = "[" + ",".join(
            repr(float(a)) for a in alphas) + "]"
    for flag in ("lambdarank_normalization",
                 "lambdarank_score_normalization"):
        if flag in values and flag in params:
            values[flag] = "1" if params[flag] else "0"
    if "num_class" in values:
        values["num_class"] = str(n_class)
    return {"name": name, key: values}


def _attributes(booster, section):
    kind = {"BoostClassifier": "classifier", "BoostRanker": "ranker"}.get(
        section["estimator"], "regressor")
    attributes = {"scikit_learn": '{"_estimator_type": "%s"}' % kind}
    if section.get("best_iteration") is not None:
        attributes["best_iteration"] = str(section["best_iteration"])
    return attributes


def _feature_types(n_features, categories):
    types = ["float"] * n_features
    for feature in (categories or {}).get("features", []):
        types[feature] = "c"
    return types


def _category_values(categories, n):
    """XGBoost 3.x's ``cats`` of the DataFrame category columns (strings as
    UTF-8 bytes cut by offsets, integers as they are), or None."""
    if not categories or not any(categories["from_dtype"]):
        return None
    encodings = [{"offsets": [], "values": []} for _ in range(n)]
    counts = [0] * n
    for feature, dtype, kind, values in zip(
            categories["features"], categories["from_dtype"],
            categories["kinds"], categories["values"]):
        if not dtype:
            continue
        counts[feature] = len(values)
        if kind == "str":
            blobs = [v.encode("utf-8") for v in values]
            offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])])
            encodings[feature] = {"offsets": offsets.astype(int).tolist(),
                                  "values": _signed_bytes(b"".join(blobs))}
        elif kind == "int":   # XGBoost's type code of int64 values
            encodings[feature] = {"type": 15, "values": list(values)}
        else:
            raise ValueError(f"feature {feature}: XGBoost's format records "
                             "string or integer categories, not "
                             f"{kind} ones")
    segments = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    sorted_idx = []
    for feature in range(n):
        if counts[feature]:
            sorted_idx += np.argsort(np.asarray(categories["values"][
                categories["features"].index(feature)], dtype=object),
                kind="stable").tolist()
    return {"enc": encodings, "feature_segments": segments.tolist(),
            "sorted_idx": sorted_idx}


def _tree_document(tree, index, n_features, vector):
    """One tree in XGBoost's schema: its categorical splits' children
    swapped back (XGBoost's set goes right), thresholds the float32 values
    skboost compares with (+inf: the largest float32, which every finite
    value is below, as below +inf)."""
    n = tree.n_nodes
    left, right = tree.left_child.astype(np.int64), tree.right_child.astype(
        np.int64)
    default_left = tree.default_left.astype(np.int64)
    leaves = left == -1
    cat = tree.cat_node.astype(np.int64)
    left[cat], right[cat] = right[cat].copy(), left[cat].copy()
    default_left[cat] = 1 - default_left[cat]
    parents = np.full(n, _ROOT_PARENT, dtype=np.int64)
    parents[left[~leaves]] = np.flatnonzero(~leaves)
    parents[right[~leaves]] = np.flatnonzero(~leaves)
    threshold = np.minimum(float32_threshold(tree.threshold), _FLOAT32_MAX)
    threshold[cat] = 0.0
    values = np.asarray(tree.value, dtype=np.float32)
    doc = {"base_weights": values.reshape(-1).tolist(),
           "default_left": np.where(leaves, 0, default_left).tolist(),
           "id": index, "left_children": left.tolist(),
           "loss_changes": (2 * tree.gain).astype(np.float32).tolist(),
           "parents": parents.tolist(), "right_children": right.tolist(),
           "split_indices": np.where(leaves, 0, tree.feature).tolist(),
           "split_type": np.isin(np.arange(n), cat).astype(int).tolist(),
           "sum_hessian": tree.cover.astype(np.float32).tolist(),
           "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                          "num_nodes": str(n),
                          "size_leaf_vector": str(values.shape[1]
                                                  if vector else 1)},
           **_category_document(tree)}
    if vector:
        leaf_ids = np.flatnonzero(leaves)
        right[leaf_ids] = np.arange(leaf_ids.shape[0])
        doc["right_children"] = right.tolist()
        doc["leaf_weights"] = values[leaf_ids].reshape(-1).tolist()
        doc["split_conditions"] = np.where(leaves, 0.0, threshold).astype(
            np.float32).tolist()
    else:
        doc["split_conditions"] = np.where(leaves, values, threshold).astype(
            np.float32).tolist()
    return doc


def _category_document(tree):
    """The categorical splits' sets (skboost's left sets: the categories
    XGBoost sends right once the children are swapped)."""
    nodes, sets = tree.cat_node.tolist(), []
    for node in nodes:
        sets.append(tree.left_categories(node).tolist())
    sizes = [len(s) for s in sets]
    return {"categories": [c for s in sets for c in s],
            "categories_nodes": nodes,
            "categories_segments": np.concatenate(
                [[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
            if sizes else [],
            "categories_sizes": sizes}


def _signed_bytes(blob):
    """Bytes as XGBoost stores category names (signed chars)."""
    return np.frombuffer(blob, dtype=np.int8).astype(int).tolist()
