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
        self._level_features = {}

    def start_tree(self):
        self._tree_features = _sample(np.arange(self.n_features), self.bytree,
                                      self.rng)
        self._level_features = {}

    def masks(self, depth, n_nodes):
        """Mask of shape (n_nodes, n_features), uint8: the features each of
        ``n_nodes`` nodes at ``depth`` may split on. A depth's level sample
        is drawn once per tree, when first asked for."""
        if depth not in self._level_features:
            self._level_features[depth] = _sample(self._tree_features,
                                                  self.bylevel, self.rng)
        level = self._level_features[depth]
        mask = np.zeros((n_nodes, self.n_features), dtype=np.uint8)
        if self.bynode >= 1.0:
            mask[:, level] = 1
            return mask
        for node in range(n_nodes):
            mask[node, _sample(level, self.bynode, self.rng)] = 1
        return mask
