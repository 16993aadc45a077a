"""Pictures of a fitted model, drawn with matplotlib alone (no graphviz).

matplotlib is an optional dependency: ``pip install skboost[plot]``.

- :func:`plot_importance`: a horizontal bar chart of feature importances;
- :func:`plot_tree`: one tree, nodes as boxes, edges labelled yes/no and
  marked where missing values go;
- :func:`plot_metric`: learning curves from ``evals_result_``.

Each function draws on ``ax`` (a new figure when None) and returns it.
"""

import numpy as np

from ._model.importance import feature_names
from .tree._tree import NO_CHILD


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "skboost.plotting needs matplotlib: pip install skboost[plot] "
            "(or pip install matplotlib)") from exc
    return plt


# A new figure grows with its content up to this size (inches), so that a
# huge tree or thousands of features never ask for a giant canvas.
MAX_FIGSIZE = (30.0, 20.0)


def _new_axes(ax, figsize):
    if ax is not None:
        return ax
    figsize = (min(figsize[0], MAX_FIGSIZE[0]), min(figsize[1], MAX_FIGSIZE[1]))
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def _booster(model):
    """The Booster of a fitted estimator, or the Booster itself."""
    if hasattr(model, "trees") and hasattr(model, "base_margin"):
        return model
    if hasattr(model, "get_booster"):
        return model.get_booster()
    raise TypeError("expected a fitted skboost estimator or Booster, got "
                    f"{type(model).__name__}")


def plot_importance(model, *, importance_type="gain", max_num_features=None,
                    ax=None, title="Feature importance", xlabel=None,
                    show_values=True, values_format="{:.3g}", color=None,
                    grid=True):
    """Bar chart of the features' importances, largest at the top.

    Parameters
    ----------
    model : estimator, Booster or dict
        A fitted skboost estimator or its Booster, or a precomputed
        ``{feature name: importance}`` dict (e.g. from ``get_score``).
    importance_type : {"gain", "weight", "cover", "total_gain", \
"total_cover"}, default="gain"
        Which importance to show (see ``Booster.get_score``); ignored for a
        dict. XGBoost's ``plot_importance`` defaults to ``"weight"``.
    max_num_features : int, default=None
        Show only the most important ones; None shows every feature used.
    ax : matplotlib Axes, default=None
        Where to draw; None makes a new figure.
    title : str, default="Feature importance"
    xlabel : str, default=None
        None names the importance type.
    show_values : bool, default=True
        Write each value beside its bar.
    values_format : str, default="{:.3g}"
        Format of those values.
    color : matplotlib color, default=None
    grid : bool, default=True

    Returns
    -------
    ax : matplotlib Axes
    """
    items = _ranked_scores(model, importance_type, max_num_features)
    labels, values = zip(*items)
    ax = _new_axes(ax, (6.4, 1.4 + 0.35 * len(items)))
    positions = np.arange(len(items))
    ax.barh(positions, values, align="center", color=color)
    ax.set_yticks(positions, labels=labels)
    if show_values:
        for y, v in zip(positions, values):
            ax.text(v, y, " " + values_format.format(v), va="center")
    ax.set_xlim(0, max(values) * 1.15 if max(values) > 0 else 1)
    ax.set_title(title)
    ax.set_xlabel(xlabel if xlabel is not None else
                  (importance_type if not isinstance(model, dict) else "importance"))
    ax.set_ylabel("Feature")
    ax.grid(grid, axis="x")
    return ax


def _ranked_scores(model, importance_type, max_num_features):
    """(feature, importance) pairs, smallest first, the largest
    ``max_num_features`` of them."""
    if isinstance(model, dict):
        scores = {str(k): float(v) for k, v in model.items()}
    else:
        scores = _booster(model).get_score(importance_type)
    if not scores:
        raise ValueError("no feature importance to plot: the model has no "
                         "split (every tree is a single leaf)")
    if max_num_features is not None and (
            not isinstance(max_num_features, (int, np.integer))
            or max_num_features < 1):
        raise ValueError("max_num_features must be a positive integer or "
                         f"None, got {max_num_features!r}")
    items = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]))
    return items if max_num_features is None else items[-max_num_features:]


# -------------------------------------------------------------------- tree


def _layout(tree):
    """(x, depth) of every node: leaves at consecutive x in depth-first
    order (left first), an inner node centred over its children."""
    n = tree.n_nodes
    depth = np.zeros(n, dtype=int)
    x = np.zeros(n)
    stack, next_leaf = [0], 0
    while stack:
        node = stack.pop()
        if tree.left_child[node] == NO_CHILD:
            x[node] = next_leaf
            next_leaf += 1
            continue
        for child in (tree.right_child[node], tree.left_child[node]):
            depth[child] = depth[node] + 1
            stack.append(int(child))
    for node in range(n - 1, -1, -1):  # children come after their parent
        if tree.left_child[node] != NO_CHILD:
            x[node] = (x[tree.left_child[node]] + x[tree.right_child[node]]) / 2
    return x, depth


def _node_label(tree, node, names, precision, show_stats):
    if tree.left_child[node] == NO_CHILD:
        value = np.atleast_1d(tree.value[node])   # a vector leaf: [v0, ...]
        text = ", ".join(f"{v:.{precision}g}" for v in value)
        label = f"leaf = {text if value.size == 1 else '[' + text + ']'}"
        if show_stats:
            label += f"\ncover = {tree.cover[node]:.{precision}g}"
        return label
    left = tree.left_categories(node)
    if left is None:
        label = (f"{names[tree.feature[node]]} < "
                 f"{tree.threshold[node]:.{precision}g}")
    else:
        label = (f"{names[tree.feature[node]]} in "
                 f"{{{', '.join(str(int(c)) for c in left[:8])}"
                 f"{', ...' if left.shape[0] > 8 else ''}}}")
    if show_stats:
        label += (f"\ngain = {tree.gain[node]:.{precision}g}"
                  f"\ncover = {tree.cover[node]:.{precision}g}")
    return label


def plot_tree(model, tree_index=0, *, ax=None, precision=3, show_stats=False,
              fontsize=9):
    """Draw one tree.

    Inner nodes show their split (``feature < threshold``: rows below the
    threshold take the ``yes`` edge); leaves show their value (learning rate
    included). The edge taken by missing values is labelled ``missing``.

    Parameters
    ----------
    model : estimator or Booster
        A fitted skboost estimator or its Booster.
    tree_index : int, default=0
        Index of the tree in boosting order (for multiclass models the
        trees of a round are consecutive, one per class).
    ax : matplotlib Axes, default=None
        Where to draw; None makes a new figure sized to the tree.
    precision : int, default=3
        Significant digits of thresholds and values.
    show_stats : bool, default=False
        Add each split's gain and each node's cover.
    fontsize : float, default=9

    Returns
    -------
    ax : matplotlib Axes
    """
    booster = _booster(model)
    n_trees = len(booster.trees)
    if not isinstance(tree_index, (int, np.integer)) or not 0 <= tree_index < n_trees:
        raise ValueError(f"tree_index must be an integer in [0, {n_trees}), "
                         f"got {tree_index!r}")
    tree = booster.trees[tree_index]
    names = feature_names(booster)
    x, depth = _layout(tree)
    ax = _new_axes(ax, (max(4.0, 1.6 * (x.max() + 1)),
                        max(2.5, 1.3 * (depth.max() + 1))))
    for node in range(tree.n_nodes):
        if tree.left_child[node] != NO_CHILD:
            _draw_edges(ax, tree, node, x, depth, fontsize)
    for node in range(tree.n_nodes):
        leaf = tree.left_child[node] == NO_CHILD
        ax.text(x[node], -depth[node],
                _node_label(tree, node, names, precision, show_stats),
                ha="center", va="center", fontsize=fontsize, zorder=3,
                bbox=dict(boxstyle="round,pad=0.4",
                          fc="#e8f4e8" if leaf else "#e8eef8", ec="0.3"))
    ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
    ax.set_ylim(-depth.max() - 0.6, 0.6)
    ax.set_axis_off()
    ax.set_title(f"Tree {tree_index}")
    return ax


def _draw_edges(ax, tree, node, x, depth, fontsize):
    missing_left = bool(tree.default_left[node])
    for child, word, takes_missing in (
            (tree.left_child[node], "yes", missing_left),
            (tree.right_child[node], "no", not missing_left)):
        ax.plot([x[node], x[child]], [-depth[node], -depth[child]],
                color="0.4", lw=1, zorder=1)
        label = word + (", missing" if takes_missing else "")
        ax.text((x[node] + x[child]) / 2, -(depth[node] + depth[child]) / 2,
                label, ha="center", va="center", fontsize=fontsize * 0.85,
                color="0.25", zorder=2,
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none"))


# ------------------------------------------------------------------ metric


def plot_metric(model, metric=None, *, dataset_names=None, ax=None,
                title=None, xlabel="Boosting round", ylabel=None,
                show_best=True, grid=True):
    """Learning curves: a metric per boosting round on each evaluation set.

    Parameters
    ----------
    model : estimator or dict
        An estimator fitted with ``eval_set`` (its ``evals_result_`` is
        used), or such a dict ``{eval set name: {metric: [value per
        round]}}``.
    metric : str, default=None
        Which metric; None takes the first one logged.
    dataset_names : list of str, default=None
        Which evaluation sets; None draws all.
    ax : matplotlib Axes, default=None
        Where to draw; None makes a new figure.
    title : str, default=None
        None uses the metric's name.
    xlabel : str, default="Boosting round"
    ylabel : str, default=None
        None uses the metric's name.
    show_best : bool, default=True
        Mark the estimator's ``best_iteration`` (after early stopping) with
        a vertical dashed line.
    grid : bool, default=True

    Returns
    -------
    ax : matplotlib Axes
    """
    log = model if isinstance(model, dict) else getattr(model, "evals_result_", None)
    if not log:
        raise ValueError("no evaluation results to plot: fit with eval_set=[(X, y)] "
                         "to log metrics")
    names, metric = _logged(log, dataset_names, metric)
    ax = _new_axes(ax, (6.4, 4.0))
    for name in names:
        values = np.asarray(log[name][metric], dtype=float)
        ax.plot(np.arange(values.shape[0]), values, label=name)
    best = None if isinstance(model, dict) else getattr(model, "best_iteration", None)
    if show_best and best is not None:
        ax.axvline(best, color="0.4", ls="--", lw=1,
                   label=f"best iteration ({best})")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel if ylabel is not None else metric)
    ax.set_title(title if title is not None else metric)
    ax.legend()
    ax.grid(grid)
    return ax


def _logged(log, dataset_names, metric):
    """The evaluation sets and the metric to draw, checked against the
    log (the first metric of the first set by default)."""
    names = list(log) if dataset_names is None else list(dataset_names)
    unknown = [n for n in names if n not in log]
    if unknown:
        raise ValueError(f"evaluation sets {unknown} are not in the results; "
                         f"available: {list(log)}")
    if metric is None:
        metric = next(iter(log[names[0]]))
    missing = [n for n in names if metric not in log[n]]
    if missing:
        available = sorted({m for n in names for m in log[n]})
        raise ValueError(f"metric {metric!r} was not logged for {missing}; "
                         f"available: {available}")
    return names, metric


__all__ = ["plot_importance", "plot_tree", "plot_metric"]
