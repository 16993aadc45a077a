"""Column subsampling by tree, by level and by node (XGBoost semantics).

The three fractions multiply: a level samples from the tree's features and a
node from its level's. Each draw keeps ``max(1, floor(fraction * n))``
features. A fraction of 1 draws no random numbers at all.

With ``feature_weights``, each draw picks its features one after another
without replacement, each time with probability proportional to the
weights of the features not yet picked (what XGBoost's weighted sampling
does); a feature of weight 0 is never drawn, so a draw keeps at most as
many features as have a positive weight.
"""

import numpy as np


def _sample(features, fraction, rng, weights=None):
    if fraction >= 1.0:
        return features
    n_keep = max(1, int(np.floor(fraction * features.shape[0] + 1e-9)))
    if weights is None:
        return np.sort(rng.choice(features, size=n_keep, replace=False))
    w = weights[features]
    n_keep = min(n_keep, int(np.count_nonzero(w > 0)))
    return np.sort(rng.choice(features, size=n_keep, replace=False,
                              p=w / w.sum()))


class ColumnSampler:
    """Draws the features a tree, a level and each node may split on.

    Parameters
    ----------
    n_features : int
    bytree, bylevel, bynode : float in (0, 1]
        The sampled fractions.
    rng : numpy.random.Generator
    feature_weights : array-like of shape (n_features,), default=None
        Relative probability of each feature being drawn (>= 0, not all
        0); None: equal.
    """

    def __init__(self, n_features, bytree, bylevel, bynode, rng,
                 feature_weights=None):
        self.n_features = n_features
        self.bytree = bytree
        self.bylevel = bylevel
        self.bynode = bynode
        self.rng = rng
        self.weights = (None if feature_weights is None
                        else np.asarray(feature_weights, dtype=np.float64))
        self._tree_features = np.arange(n_features)
        self._level_features = {}

    def _draw(self, features, fraction):
        return _sample(features, fraction, self.rng, self.weights)

    def start_tree(self):
        self._tree_features = self._draw(np.arange(self.n_features),
                                         self.bytree)
        self._level_features = {}

    def masks(self, depth, n_nodes):
        """Mask of shape (n_nodes, n_features), uint8: the features each of
        ``n_nodes`` nodes at ``depth`` may split on. A depth's level sample
        is drawn once per tree, when first asked for."""
        if depth not in self._level_features:
            self._level_features[depth] = self._draw(self._tree_features,
                                                     self.bylevel)
        level = self._level_features[depth]
        if self.bynode >= 1.0 and level.shape[0] == self.n_features:
            # no column sampling (the default): every feature, every node
            return np.ones((n_nodes, self.n_features), dtype=np.uint8)
        mask = np.zeros((n_nodes, self.n_features), dtype=np.uint8)
        if self.bynode >= 1.0:
            mask[:, level] = 1
            return mask
        for node in range(n_nodes):
            mask[node, self._draw(level, self.bynode)] = 1
        return mask
