"""The one tree format every split finder produces.

A tree is a set of flat node arrays (structure of arrays). Node 0 is the
root; an internal node's children always have larger indices than the node
itself (the predictor relies on it to terminate); a leaf has
``left_child == right_child == -1``. A row goes left when its value is
``< threshold``, and a missing value follows ``default_left``.
"""

from dataclasses import dataclass

import numpy as np

NO_CHILD = -1

NODE_FIELDS = {
    # name: dtype
    "left_child": np.int32,
    "right_child": np.int32,
    "feature": np.int32,  # -1 on leaves
    "threshold": np.float64,
    "default_left": np.uint8,
    "value": np.float64,  # leaf output (learning_rate * weight); also set on inner nodes
    "gain": np.float64,  # loss reduction of the split (0 on leaves)
    "cover": np.float64,  # sum of hessians of the training rows in the node
}


@dataclass
class Tree:
    """A regression tree as flat arrays, one entry per node (see module doc)."""

    left_child: np.ndarray
    right_child: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray

    @property
    def n_nodes(self):
        return self.left_child.shape[0]

    @property
    def is_leaf(self):
        return self.left_child == NO_CHILD

    @property
    def n_leaves(self):
        return int(np.count_nonzero(self.is_leaf))

    @property
    def max_depth(self):
        """Length of the longest root-to-leaf path."""
        depth = np.zeros(self.n_nodes, dtype=np.int64)
        for node in range(self.n_nodes):  # children come after parents
            if self.left_child[node] != NO_CHILD:
                depth[self.left_child[node]] = depth[node] + 1
                depth[self.right_child[node]] = depth[node] + 1
        return int(depth.max())


class TreeBuilder:
    """Collects the nodes of a tree level by level (breadth first), so that
    children are always numbered after their parents."""

    def __init__(self, G_root, H_root):
        self._levels = []  # per level: dict of arrays for its nodes
        self._pending = {
            "G": np.array([G_root], dtype=np.float64),
            "H": np.array([H_root], dtype=np.float64),
        }
        self._n_nodes = 1

    @property
    def n_nodes(self):
        return self._n_nodes

    def close_level(self, split_mask, feature, threshold, default_left, gain,
                    G_left, H_left):
        """Decide the pending level: nodes in ``split_mask`` become internal
        with the given splits, the others become leaves. Returns the
        statistics ``(G, H)`` of the new level's nodes, ordered as
        (left, right) pairs of the split nodes in order."""
        G, H = self._pending["G"], self._pending["H"]
        n = G.shape[0]
        n_split = int(np.count_nonzero(split_mask))
        left = np.full(n, NO_CHILD, dtype=np.int32)
        first_child = self._n_nodes  # after every node numbered so far
        left[split_mask] = first_child + 2 * np.arange(n_split, dtype=np.int32)
        right = np.where(split_mask, left + 1, NO_CHILD).astype(np.int32)
        self._levels.append({
            "left_child": left,
            "right_child": right,
            "feature": np.where(split_mask, feature, -1).astype(np.int32),
            "threshold": np.where(split_mask, threshold, 0.0),
            "default_left": np.where(split_mask, default_left, 0).astype(np.uint8),
            "gain": np.where(split_mask, gain, 0.0),
            "G": G,
            "H": H,
        })
        G_l, H_l = G_left[split_mask], H_left[split_mask]
        G_children = np.column_stack([G_l, G[split_mask] - G_l]).ravel()
        H_children = np.column_stack([H_l, H[split_mask] - H_l]).ravel()
        self._pending = {"G": G_children, "H": H_children}
        self._n_nodes += 2 * n_split
        return G_children, H_children

    def finish(self, weights_of, learning_rate):
        """Close the last level as leaves and return the :class:`Tree`.

        ``weights_of(G, H)`` gives the optimal weight of each node.
        """
        n = self._pending["G"].shape[0]
        if n:
            self.close_level(np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n),
                             np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n))
        cat = {key: np.concatenate([lvl[key] for lvl in self._levels])
               for key in self._levels[0]}
        value = learning_rate * weights_of(cat["G"], cat["H"])
        return Tree(
            left_child=cat["left_child"],
            right_child=cat["right_child"],
            feature=cat["feature"],
            threshold=cat["threshold"],
            default_left=cat["default_left"],
            value=value,
            gain=cat["gain"],
            cover=cat["H"],
        )
