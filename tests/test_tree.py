"""``TreeBuilder`` numbering and statistics, ``Tree`` depth and leaf count."""

import numpy as np
import pytest

from skboost.tree._tree import Tree, TreeBuilder


def weights_of(G, H):
    return -G / (H + 1.0)


def test_level_by_level_numbering_hand_example():
    # Level 0: the root splits into 1, 2. Level 1: only node 2 splits, into
    # 3, 4. Level 2: both 3 and 4 split, into 5, 6 and 7, 8.
    builder = TreeBuilder(10.0, 20.0, capacity=2)  # forces the arrays to grow
    left, right = builder.split([0], [3], [0.5], [1], [7.0], [4.0], [8.0])
    assert left.tolist() == [1] and right.tolist() == [2]
    left, right = builder.split([2], [1], [-1.5], [0], [2.0], [1.0], [5.0])
    assert left.tolist() == [3] and right.tolist() == [4]
    left, right = builder.split([3, 4], [0, 2], [2.5, 0.0], [1, 0],
                                [0.5, 0.25], [-2.0, 2.0], [2.0, 3.0])
    assert left.tolist() == [5, 7] and right.tolist() == [6, 8]
    assert builder.n_nodes == 9
    tree = builder.finish(weights_of, 0.5)

    assert tree.left_child.tolist() == [1, -1, 3, 5, 7, -1, -1, -1, -1]
    assert tree.right_child.tolist() == [2, -1, 4, 6, 8, -1, -1, -1, -1]
    assert tree.feature.tolist() == [3, -1, 1, 0, 2, -1, -1, -1, -1]
    assert tree.threshold.tolist() == [0.5, 0, -1.5, 2.5, 0.0, 0, 0, 0, 0]
    assert tree.default_left.tolist() == [1, 0, 0, 1, 0, 0, 0, 0, 0]
    assert tree.gain.tolist() == [7.0, 0, 2.0, 0.5, 0.25, 0, 0, 0, 0]
    # Node sums: right = parent - left.
    #   0: (10, 20) -> 1: (4, 8), 2: (6, 12)
    #   2: (6, 12)  -> 3: (1, 5), 4: (5, 7)
    #   3: (1, 5)   -> 5: (-2, 2), 6: (3, 3)
    #   4: (5, 7)   -> 7: (2, 3), 8: (3, 4)
    G = [10.0, 4.0, 6.0, 1.0, 5.0, -2.0, 3.0, 2.0, 3.0]
    H = [20.0, 8.0, 12.0, 5.0, 7.0, 2.0, 3.0, 3.0, 4.0]
    assert tree.cover.tolist() == H
    np.testing.assert_allclose(tree.value,
                               [0.5 * -g / (h + 1.0) for g, h in zip(G, H)],
                               rtol=1e-15)
    assert tree.max_depth == 3
    assert tree.n_leaves == 5
    assert tree.n_nodes == 9


def naive_depths(tree):
    depth = {0: 0}
    stack = [0]
    while stack:
        node = stack.pop()
        if tree.left_child[node] != -1:
            for child in (tree.left_child[node], tree.right_child[node]):
                assert child not in depth  # a tree: one parent per node
                depth[child] = depth[node] + 1
                stack.append(child)
    assert sorted(depth) == list(range(tree.n_nodes))  # all reachable
    return np.array([depth[i] for i in range(tree.n_nodes)])


@pytest.mark.parametrize("seed", range(10))
def test_level_by_level_growth_is_breadth_first(seed):
    rng = np.random.default_rng(seed)
    builder = TreeBuilder(rng.normal(), 100.0, capacity=1)
    level = np.array([0])
    expected_leaves = 0
    for depth in range(8):
        do_split = rng.random(level.size) < (0.8 if depth < 7 else 0.0)
        expected_leaves += int((~do_split).sum())
        nodes = level[do_split]
        k = nodes.size
        G, H = builder.node_sums(nodes)
        left, right = builder.split(nodes, rng.integers(0, 5, k),
                                    rng.normal(size=k), rng.integers(0, 2, k),
                                    rng.random(k), G * rng.random(k),
                                    H * rng.random(k))
        level = np.column_stack([left, right]).ravel()
    assert level.size == 0
    tree = builder.finish(weights_of, 1.0)

    depth = naive_depths(tree)
    internal = np.flatnonzero(tree.left_child != -1)
    # Children after their parents, in consecutive pairs.
    assert np.all(tree.left_child[internal] > internal)
    assert np.all(tree.right_child[internal] == tree.left_child[internal] + 1)
    # Breadth first: depth never decreases with the index, and the children
    # of an earlier node come before those of a later one.
    assert np.all(np.diff(depth) >= 0)
    assert np.all(np.diff(tree.left_child[internal]) == 2)
    # Statistics: every parent is the sum of its children.
    np.testing.assert_allclose(
        tree.cover[internal],
        tree.cover[tree.left_child[internal]]
        + tree.cover[tree.right_child[internal]], rtol=1e-12)
    assert tree.max_depth == depth.max()
    assert tree.n_leaves == expected_leaves
    leaves = tree.left_child == -1
    assert np.all(tree.right_child[leaves] == -1)
    assert np.all(tree.feature[leaves] == -1)


def test_children_numbered_after_all_existing_nodes():
    # Splitting one node at a time (best-first order), not a level.
    builder = TreeBuilder(0.0, 10.0)
    left, right = builder.split([0], [0], [0.0], [0], [1.0], [1.0], [5.0])
    assert (left.tolist(), right.tolist()) == ([1], [2])
    left, right = builder.split([2], [0], [0.0], [0], [1.0], [1.0], [2.0])
    assert (left.tolist(), right.tolist()) == ([3], [4])
    left, right = builder.split([1], [0], [0.0], [0], [1.0], [1.0], [2.0])
    assert (left.tolist(), right.tolist()) == ([5], [6])
    tree = builder.finish(weights_of, 1.0)
    assert tree.left_child.tolist() == [1, 5, 3, -1, -1, -1, -1]
    assert tree.max_depth == 2
    assert tree.n_leaves == 4


def hand_tree(left_child, right_child):
    n = len(left_child)
    return Tree(left_child=np.array(left_child, np.int32),
                right_child=np.array(right_child, np.int32),
                feature=np.where(np.array(left_child) >= 0, 0, -1),
                threshold=np.zeros(n), default_left=np.zeros(n, np.uint8),
                value=np.zeros(n), gain=np.zeros(n), cover=np.ones(n))


@pytest.mark.parametrize("left, right, depth, n_leaves", [
    ([-1], [-1], 0, 1),                                    # a single leaf
    ([1, -1, -1], [2, -1, -1], 1, 2),                      # a stump
    # Depth-first numbering: 0 -> (1, 4), 1 -> (2, 3), 4 -> (5, 6),
    # 5 -> (7, 8). Depths 0,1,2,2,1,2,2,3,3; leaves 2, 3, 6, 7, 8.
    ([1, 2, -1, -1, 5, 7, -1, -1, -1], [4, 3, -1, -1, 6, 8, -1, -1, -1], 3, 5),
    # A right-leaning chain: 0 -> (1, 2), 2 -> (3, 4), 4 -> (5, 6),
    # 6 -> (7, 8): depth 4, leaves 1, 3, 5, 7, 8.
    ([1, -1, 3, -1, 5, -1, 7, -1, -1], [2, -1, 4, -1, 6, -1, 8, -1, -1], 4, 5),
])
def test_max_depth_and_n_leaves_of_hand_made_trees(left, right, depth,
                                                   n_leaves):
    tree = hand_tree(left, right)
    assert tree.max_depth == depth
    assert tree.n_leaves == n_leaves
    assert tree.max_depth == naive_depths(tree).max()
