"""Column subsampling by tree, by level and by node (XGBoost semantics).

The three fractions multiply: a level samples from the tree's features and a
node from its level's. Each draw keeps ``max(1, floor(fraction * n))``
features. A fraction of 1 draws no random numbers at all.
"""

import numpy as np


def _sample(features, fraction, rng):
    if fraction >= 1.0:
        return features
    n_keep = max(1, int(np.floor(fraction * features.shape[0] + 1e-9)))
    return np.sort(rng.choice(features, size=n_keep, replace=False))


class ColumnSampler:
    """Draws the features a tree, a level and each node may split on."""

    def __init__(self, n_features, bytree, bylevel, bynode, rng):
        self.n_features = n_features
        self.bytree = bytree
        self.bylevel = bylevel
        self.bynode = bynode
        self.rng = rng
        self._tree_features = np.arange(n_features)

    def start_tree(self):
        self._tree_features = _sample(np.arange(self.n_features), self.bytree,
                                      self.rng)

    def level_masks(self, n_nodes):
        """Boolean mask of shape (n_nodes, n_features): the features each
        node of the next level may split on."""
        level = _sample(self._tree_features, self.bylevel, self.rng)
        mask = np.zeros((n_nodes, self.n_features), dtype=np.uint8)
        if self.bynode >= 1.0:
            mask[:, level] = 1
            return mask
        for node in range(n_nodes):
            mask[node, _sample(level, self.bynode, self.rng)] = 1
        return mask
