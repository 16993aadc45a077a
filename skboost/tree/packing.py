"""Trees packed into one forest for the kernels that walk them.

Prediction (``_predictor.PackedForest``) and explanation
(``_shap.ShapForest``) read every tree's node arrays concatenated, tree
``t``'s nodes at ``starts[t]:starts[t + 1]``, with the output each tree adds
to and the categorical splits' bitsets moved into the forest's numbering.
``pack_trees`` builds both, so the two can never disagree on the layout.
"""

import numpy as np

from ._tree import NODE_FIELDS

# the node arrays each kernel class takes, in NODE_FIELDS order
PREDICT_FIELDS = tuple(name for name in NODE_FIELDS
                       if name not in ("gain", "cover"))
SHAP_FIELDS = tuple(name for name in NODE_FIELDS if name != "gain")


def pack_trees(forest_class, trees, groups, *, n_features, n_outputs,
               fields):
    """``forest_class(*node arrays, starts, groups, n_features, n_outputs,
    *categorical splits)`` over single-output ``trees``.

    Parameters
    ----------
    forest_class : type
        ``PackedForest`` or ``ShapForest`` (each validates what it gets).
    trees : list of Tree
        Single-output trees (vector-leaf trees as their output views).
    groups : list of int
        The output each tree adds to.
    n_features, n_outputs : int
    fields : tuple of str
        The node arrays ``forest_class`` takes (``PREDICT_FIELDS``,
        ``SHAP_FIELDS``).
    """
    starts = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([tree.n_nodes for tree in trees], out=starts[1:])
    arrays = [np.concatenate([getattr(tree, name) for tree in trees])
              if trees else np.empty(0, dtype=NODE_FIELDS[name])
              for name in fields]
    return forest_class(*arrays, starts, np.asarray(groups, np.int32),
                        n_features, n_outputs,
                        *forest_categories(trees, starts))


def forest_categories(trees, starts):
    """The categorical splits of all trees, concatenated: node indices and
    bitset offsets moved into the forest's (empty without any)."""
    if not any(t.has_categorical_splits for t in trees):
        return ()
    words = np.cumsum([0] + [t.cat_bits.shape[0] for t in trees])
    node = np.concatenate([t.cat_node.astype(np.int64) + starts[i]
                           for i, t in enumerate(trees)])
    size = np.concatenate([t.cat_size for t in trees])
    ptr = np.concatenate([[0]] + [t.cat_ptr[1:] + words[i]
                                  for i, t in enumerate(trees)])
    bits = np.concatenate([t.cat_bits for t in trees])
    return node, size, ptr, bits
