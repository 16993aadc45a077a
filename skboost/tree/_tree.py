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
    """Collects the nodes of a tree as they are split.

    Children are numbered after every node that exists when their parent is
    split, so a child's index is always larger than its parent's. Splitting a
    whole level at once numbers the tree breadth first.
    """

    _FIELDS = {"left_child": np.int32, "right_child": np.int32,
               "feature": np.int32, "threshold": np.float64,
               "default_left": np.uint8, "gain": np.float64,
               "G": np.float64, "H": np.float64}

    def __init__(self, G_root, H_root, capacity=64):
        self._a = {name: np.zeros(capacity, dtype=dtype)
                   for name, dtype in self._FIELDS.items()}
        self._n = 0
        self._add(np.array([G_root]), np.array([H_root]))

    @property
    def n_nodes(self):
        return self._n

    @property
    def n_leaves(self):
        """Nodes not split (yet)."""
        return int(np.count_nonzero(self._a["left_child"][: self._n] == NO_CHILD))

    def node_sums(self, nodes):
        """(G, H) of the given nodes."""
        return self._a["G"][nodes], self._a["H"][nodes]

    def _add(self, G, H):
        n_new = G.shape[0]
        if self._n + n_new > self._a["G"].shape[0]:
            capacity = max(2 * self._a["G"].shape[0], self._n + n_new)
            for name, array in self._a.items():
                self._a[name] = np.resize(array, capacity)
        ids = np.arange(self._n, self._n + n_new)
        for name in ("left_child", "right_child", "feature"):
            self._a[name][ids] = NO_CHILD
        for name in ("threshold", "default_left", "gain"):
            self._a[name][ids] = 0
        self._a["G"][ids] = G
        self._a["H"][ids] = H
        self._n += n_new
        return ids

    def split(self, nodes, feature, threshold, default_left, gain, G_left,
              H_left):
        """Split ``nodes`` (their children get consecutive ids in order);
        returns the ids of the left and the right children."""
        nodes = np.asarray(nodes, dtype=np.int64)
        G, H = self.node_sums(nodes)
        G_left = np.asarray(G_left, dtype=np.float64)
        H_left = np.asarray(H_left, dtype=np.float64)
        children = self._add(np.column_stack([G_left, G - G_left]).ravel(),
                             np.column_stack([H_left, H - H_left]).ravel())
        left, right = children[0::2], children[1::2]
        a = self._a
        a["left_child"][nodes] = left
        a["right_child"][nodes] = right
        a["feature"][nodes] = feature
        a["threshold"][nodes] = threshold
        a["default_left"][nodes] = default_left
        a["gain"][nodes] = gain
        return left, right

    def finish(self, weights_of, learning_rate):
        """The :class:`Tree`; ``weights_of(G, H)`` gives node weights."""
        a = {name: array[: self._n].copy() for name, array in self._a.items()}
        return Tree(
            left_child=a["left_child"], right_child=a["right_child"],
            feature=a["feature"], threshold=a["threshold"],
            default_left=a["default_left"],
            value=learning_rate * weights_of(a["G"], a["H"]),
            gain=a["gain"], cover=a["H"])
