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
"""

import json

import numpy as np

from .tree._tree import NO_CHILD

IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")


def feature_stats(booster):
    """Per-feature (weight, total_gain, total_cover) over all trees, each an
    ndarray of shape (n_features,)."""
    n = booster.n_features
    weight, total_gain, total_cover = np.zeros(n), np.zeros(n), np.zeros(n)
    for tree in booster.trees:
        inner = tree.left_child != NO_CHILD
        feature = tree.feature[inner]
        weight += np.bincount(feature, minlength=n)
        total_gain += np.bincount(feature, tree.gain[inner], minlength=n)
        total_cover += np.bincount(feature, tree.cover[inner], minlength=n)
    return weight, total_gain, total_cover


def importance_values(booster, importance_type):
    """Unnormalised importance of every feature, shape (n_features,); 0 for
    features no split uses."""
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(
            f"importance_type must be one of {list(IMPORTANCE_TYPES)}, got "
            f"{importance_type!r}")
    weight, total_gain, total_cover = feature_stats(booster)
    if importance_type == "weight":
        return weight
    if importance_type.startswith("total_"):
        return total_gain if importance_type == "total_gain" else total_cover
    total = total_gain if importance_type == "gain" else total_cover
    return np.divide(total, weight, out=np.zeros_like(total),
                     where=weight > 0)


def feature_importances(booster, importance_type):
    """Importances normalised to sum to 1 (all zeros when no tree splits)."""
    values = importance_values(booster, importance_type)
    total = values.sum()
    return values / total if total > 0 else values


def feature_names(booster):
    """Names of the booster's features: the training column names, else
    ``f0, f1, ...`` (XGBoost's default names)."""
    names = getattr(booster, "feature_names", None)
    if names is None:
        return [f"f{i}" for i in range(booster.n_features)]
    return list(names)


def get_score(booster, importance_type="weight"):
    """``{feature name: importance}`` of the features used in a split."""
    values = importance_values(booster, importance_type)
    weight = feature_stats(booster)[0]
    return {name: float(values[i])
            for i, name in enumerate(feature_names(booster)) if weight[i] > 0}


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


def _node_json(tree, node, depth, names, with_stats):
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
    out["children"] = [
        _node_json(tree, int(child), depth + 1, names, with_stats)
        for child in (tree.left_child[node], tree.right_child[node])]
    return out


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
    names = feature_names(booster)
    if dump_format == "text":
        return [dump_tree_text(t, names, with_stats) for t in booster.trees]
    return [json.dumps(_node_json(t, 0, 0, names, with_stats), indent=2)
            for t in booster.trees]


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
