"""Feature importances and readable views of the trees of a Booster.

Importance types follow XGBoost's definitions, over the split (inner) nodes
of all trees:

==============  =========================================================
``weight``      number of splits on the feature
``total_gain``  sum of the loss reductions of those splits
``gain``        ``total_gain / weight``: the average loss reduction
``total_cover`` sum of the covers (hessian sums of the training rows
                reaching the split node) of those splits
``cover``       ``total_cover / weight``: the average cover
==============  =========================================================

A split's gain is the loss reduction of equation 7 of the paper before
``gamma``: ``1/2 [G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) - G^2/(H+lambda)]``.
XGBoost stores this without the factor 1/2, so its ``gain`` and
``total_gain`` of the same trees are twice skboost's; normalised
importances (``feature_importances_``) are identical.

Every walk over a tree here is iterative (an explicit stack), so a tree of
any depth dumps; and nothing but ``feature_importances_`` allocates per
feature of the model (a loaded model's ``n_features`` is only bounded by the
format's int32 indices): scores, dumps and data frames are sized by the
features the trees use.
"""

import json

import numpy as np

from ..tree._tree import NO_CHILD

IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")


def used_feature_stats(booster):
    """The features some split uses (sorted int64 indices) and, for each,
    (weight, total_gain, total_cover) over all trees: arrays of the length
    of ``used``."""
    features, gains, covers = [], [], []
    for tree in booster.trees:
        inner = tree.left_child != NO_CHILD
        features.append(tree.feature[inner].astype(np.int64))
        gains.append(tree.gain[inner])
        covers.append(tree.cover[inner])
    if not features:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    used, position = np.unique(np.concatenate(features), return_inverse=True)
    n = used.shape[0]
    weight = np.bincount(position, minlength=n).astype(np.float64)
    total_gain = np.bincount(position, np.concatenate(gains), minlength=n)
    total_cover = np.bincount(position, np.concatenate(covers), minlength=n)
    return used, weight, total_gain, total_cover


def _check_importance_type(importance_type):
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(
            f"importance_type must be one of {list(IMPORTANCE_TYPES)}, got "
            f"{importance_type!r}")


def used_importance_values(booster, importance_type):
    """The features some split uses and their unnormalised importances."""
    _check_importance_type(importance_type)
    used, weight, total_gain, total_cover = used_feature_stats(booster)
    if importance_type == "weight":
        return used, weight
    if importance_type.startswith("total_"):
        return used, (total_gain if importance_type == "total_gain"
                      else total_cover)
    total = total_gain if importance_type == "gain" else total_cover
    return used, total / weight      # weight >= 1 for a used feature


def importance_values(booster, importance_type):
    """Unnormalised importance of every feature, shape (n_features,); 0 for
    features no split uses."""
    used, values = used_importance_values(booster, importance_type)
    out = np.zeros(booster.n_features)
    out[used] = values
    return out


def feature_importances(booster, importance_type):
    """Importances normalised to sum to 1 (all zeros when no tree splits)."""
    values = importance_values(booster, importance_type)
    total = values.sum()
    return values / total if total > 0 else values


class FeatureNames:
    """Names of the booster's features, by index: the training column
    names, else ``f0, f1, ...`` (XGBoost's default names), made on demand
    (no list of all ``n_features`` names)."""

    def __init__(self, booster):
        self.names = getattr(booster, "feature_names", None)
        self.n_features = booster.n_features

    def __len__(self):
        return self.n_features

    def __getitem__(self, i):
        i = int(i)
        if not 0 <= i < self.n_features:
            raise IndexError(f"feature {i} outside [0, {self.n_features})")
        return f"f{i}" if self.names is None else self.names[i]

    def __iter__(self):
        return (self[i] for i in range(self.n_features))


def feature_names(booster):
    """Names of the booster's features (:class:`FeatureNames`)."""
    return FeatureNames(booster)


def get_score(booster, importance_type="weight"):
    """``{feature name: importance}`` of the features used in a split."""
    used, values = used_importance_values(booster, importance_type)
    names = feature_names(booster)
    return {names[f]: float(v) for f, v in zip(used, values)}


# ------------------------------------------------------------------ dumps


def _fmt(x):
    """A float for reading: 9 significant digits (float32 exact); a
    vector leaf's values as ``[v0,v1,...]`` (XGBoost's dump of them)."""
    if np.ndim(x) == 1:
        return "[" + ",".join(_fmt(v) for v in x) + "]"
    return format(float(x), ".9g")


def _preorder(tree):
    """(node, depth) in depth-first order, left child first."""
    stack = [(0, 0)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        if tree.left_child[node] != NO_CHILD:
            stack.append((int(tree.right_child[node]), depth + 1))
            stack.append((int(tree.left_child[node]), depth + 1))


def _missing_child(tree, node):
    return int(tree.left_child[node] if tree.default_left[node]
               else tree.right_child[node])


def dump_tree_text(tree, names, with_stats):
    """One tree in XGBoost's text dump format."""
    lines = []
    for node, depth in _preorder(tree):
        indent = "\t" * depth
        if tree.left_child[node] == NO_CHILD:
            line = f"{indent}{node}:leaf={_fmt(tree.value[node])}"
            if with_stats:
                line += f",cover={_fmt(tree.cover[node])}"
        else:
            line = (f"{indent}{node}:[{_condition_text(tree, node, names)}] "
                    f"yes={tree.left_child[node]},no={tree.right_child[node]},"
                    f"missing={_missing_child(tree, node)}")
            if with_stats:
                line += (f",gain={_fmt(tree.gain[node])},"
                         f"cover={_fmt(tree.cover[node])}")
        lines.append(line)
    return "\n".join(lines) + "\n"


def _condition_text(tree, node, names):
    """``name<threshold``, or ``name:{c1,c2}`` for a categorical split (the
    category codes going left, to ``yes``)."""
    name = names[tree.feature[node]]
    left = tree.left_categories(node)
    if left is None:
        return f"{name}<{_fmt(tree.threshold[node])}"
    return f"{name}:{{{','.join(str(int(c)) for c in left)}}}"


def _tree_json(tree, names, with_stats):
    """The nested JSON dump of a tree, built with an explicit stack (no
    recursion, whatever the depth)."""
    nodes = {}
    for node, depth in _preorder(tree):
        nodes[node] = _node_json(tree, node, depth, names, with_stats)
    for node, entry in nodes.items():
        if "children" in entry:
            entry["children"] = [nodes[int(tree.left_child[node])],
                                 nodes[int(tree.right_child[node])]]
    return nodes[0]


def _node_json(tree, node, depth, names, with_stats):
    """One node's entry, its ``children`` still to be filled in."""
    if tree.left_child[node] == NO_CHILD:
        value = tree.value[node]
        out = {"nodeid": node, "leaf": (float(value) if np.ndim(value) == 0
                                         else [float(v) for v in value])}
        if with_stats:
            out["cover"] = float(tree.cover[node])
        return out
    out = {"nodeid": node, "depth": depth,
           "split": names[tree.feature[node]],
           "split_condition": _json_float(tree.threshold[node]),
           "yes": int(tree.left_child[node]),
           "no": int(tree.right_child[node]),
           "missing": _missing_child(tree, node)}
    left = tree.left_categories(node)
    if left is not None:
        # category codes going left ("yes")
        out["split_condition"] = [int(c) for c in left]
        out["split_type"] = "categorical"
    if with_stats:
        out["gain"] = float(tree.gain[node])
        out["cover"] = float(tree.cover[node])
    out["children"] = None
    return out


def dumps_indented(value):
    """``json.dumps(value, indent=2)`` without recursion: the same text for
    dicts, lists and JSON scalars nested to any depth (the json module
    recurses, and fails beyond about a thousand levels)."""
    parts = []
    # (value, indent) to write, or a closing string to append
    stack = [(value, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        value, level = item
        if isinstance(value, (dict, list)) and value:
            _push_container(stack, parts, value, level)
        else:
            parts.append(json.dumps(value))
    return "".join(parts)


def _push_container(stack, parts, value, level):
    """Open a non-empty dict or list and push its entries (in reverse, so
    that they come off the stack in order) with their separators."""
    inner = "\n" + "  " * (level + 1)
    is_dict = isinstance(value, dict)
    parts.append("{" if is_dict else "[")
    stack.append("\n" + "  " * level + ("}" if is_dict else "]"))
    entries = list(value.items()) if is_dict else list(enumerate(value))
    for i in range(len(entries) - 1, -1, -1):
        key, item = entries[i]
        stack.append((item, level + 1))
        prefix = inner + (json.dumps(key) + ": " if is_dict else "")
        stack.append(prefix if i == 0 else "," + prefix)


def _json_float(x):
    x = float(x)
    return x if np.isfinite(x) else str(x)  # "inf": JSON has no infinity


def get_dump(booster, with_stats=False, dump_format="text"):
    """One string per tree, in XGBoost's ``text`` or ``json`` format."""
    if dump_format not in ("text", "json"):
        raise ValueError(
            f"dump_format must be 'text' or 'json', got {dump_format!r}")
    if not isinstance(with_stats, (bool, np.bool_)):
        raise TypeError(f"with_stats must be a bool, got {with_stats!r}")
    _check_dump_size(booster, dump_format)
    names = feature_names(booster)
    if dump_format == "text":
        return [dump_tree_text(t, names, with_stats) for t in booster.trees]
    return [dumps_indented(_tree_json(t, names, with_stats))
            for t in booster.trees]


# Largest dump get_dump writes, in characters (indentation grows with the
# depth, so a dump's size is quadratic in it).
MAX_DUMP_CHARS = 2 ** 30


def _depths(tree):
    """Depth of every node (children come after their parent)."""
    depth = np.zeros(tree.n_nodes, dtype=np.int64)
    for node in range(tree.n_nodes):
        if tree.left_child[node] != NO_CHILD:
            depth[tree.left_child[node]] = depth[node] + 1
            depth[tree.right_child[node]] = depth[node] + 1
    return depth


def _check_dump_size(booster, dump_format):
    """Refuse a dump larger than ``MAX_DUMP_CHARS`` before writing it.

    A lower bound of its size: in the text format a node's line is indented
    by its depth in tabs; in the JSON format a node at depth d sits at
    nesting level 2d, its at least 3 lines indented by 2 (2d + 1) spaces.
    """
    total = 0
    for tree in booster.trees:
        depth = _depths(tree)
        if dump_format == "text":
            total += int(depth.sum()) + 8 * tree.n_nodes
        else:
            total += int(3 * (4 * depth + 2).sum()) + 20 * tree.n_nodes
        if total > MAX_DUMP_CHARS:
            raise ValueError(
                f"the {dump_format} dump of this model would take more than "
                f"{MAX_DUMP_CHARS} characters (its trees are {depth.max()} "
                "levels deep, and indentation grows with depth): use "
                "trees_to_dataframe(), whose size is linear in the nodes")


TREE_COLUMNS = ["Tree", "Node", "ID", "Feature", "Split", "Yes", "No",
                "Missing", "Gain", "Cover", "Value"]


def trees_to_dataframe(booster):
    """A pandas DataFrame with one row per node (see ``Booster``)."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is a test dep
        raise ImportError("trees_to_dataframe needs pandas") from exc
    if booster.vector_leaf:
        raise NotImplementedError(
            "trees_to_dataframe has one Value per node; vector-leaf trees "
            "(multi_strategy='multi_output_tree') hold one per output: use "
            "get_dump(dump_format='json')")
    names = feature_names(booster)
    rows = []
    for t, tree in enumerate(booster.trees):
        for node in range(tree.n_nodes):
            rows.append(_node_row(t, tree, node, names))
    return pd.DataFrame(rows, columns=TREE_COLUMNS)


def _node_row(t, tree, node, names):
    value = float(tree.value[node])
    cover = float(tree.cover[node])
    if tree.left_child[node] == NO_CHILD:
        # XGBoost's convention: a leaf's "Gain" holds its value
        return [t, node, f"{t}-{node}", "Leaf", np.nan, None, None, None,
                value, cover, value]
    # a categorical split has no threshold (see get_dump for its set)
    split = (np.nan if tree.left_categories(node) is not None
             else float(tree.threshold[node]))
    return [t, node, f"{t}-{node}", names[tree.feature[node]],
            split, f"{t}-{tree.left_child[node]}",
            f"{t}-{tree.right_child[node]}",
            f"{t}-{_missing_child(tree, node)}", float(tree.gain[node]),
            cover, value]
