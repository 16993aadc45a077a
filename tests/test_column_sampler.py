"""``ColumnSampler``: sample sizes, nesting of tree / level / node samples,
and no random draws when a fraction is 1."""

import copy
import math
from fractions import Fraction

import numpy as np
import pytest

from skboost.tree._column_sampler import ColumnSampler


def expected_count(fraction, n):
    """max(1, floor(fraction * n)) with the fraction as written in decimal
    (so 0.3 * 10 is 3, not floor(2.9999...) or floor(3.0000...4))."""
    return max(1, math.floor(Fraction(str(fraction)) * n))


def features_of(mask_row):
    return set(np.flatnonzero(mask_row).tolist())


def sampler(n_features, bytree, bylevel, bynode, seed):
    return ColumnSampler(n_features, bytree, bylevel, bynode,
                         np.random.default_rng(seed))


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.25, 0.29, 0.3, 0.5, 0.57,
                                      0.7, 0.99, 1.0])
@pytest.mark.parametrize("n_features", [1, 3, 10, 100])
def test_counts(fraction, n_features):
    n_tree = expected_count(fraction, n_features)
    for kind in ("bytree", "bylevel", "bynode"):
        fractions = {"bytree": 1.0, "bylevel": 1.0, "bynode": 1.0,
                     kind: fraction}
        s = sampler(n_features, fractions["bytree"], fractions["bylevel"],
                    fractions["bynode"], seed=0)
        s.start_tree()
        mask = s.masks(0, 4)
        assert mask.shape == (4, n_features)
        assert mask.dtype == np.uint8
        assert set(np.unique(mask).tolist()) <= {0, 1}
        np.testing.assert_array_equal(mask.sum(axis=1), n_tree)


def test_fractions_multiply():
    # 0.5 of 20 = 10 per tree, 0.5 of those = 5 per level, 0.4 of 5 = 2 per
    # node.
    s = sampler(20, 0.5, 0.5, 0.4, seed=1)
    s.start_tree()
    np.testing.assert_array_equal(s.masks(0, 6).sum(axis=1), 2)
    # the floor of each stage: 0.3 of 20 = 6, 0.3 of 6 = 1.8 -> 1 (>= 1)
    s = sampler(20, 0.3, 0.3, 1.0, seed=1)
    s.start_tree()
    np.testing.assert_array_equal(s.masks(0, 3).sum(axis=1), 1)


@pytest.mark.parametrize("seed", range(8))
def test_level_sample_is_subset_of_tree_sample(seed):
    # Two samplers on equal generators draw the same tree sample in
    # start_tree; with bylevel = 1 the first one's masks show it.
    tree_only = sampler(30, 0.6, 1.0, 1.0, seed)
    nested = sampler(30, 0.6, 0.5, 1.0, seed)
    for _ in range(3):  # several trees
        tree_only.start_tree()
        nested.start_tree()
        tree_features = features_of(tree_only.masks(0, 1)[0])
        assert len(tree_features) == 18
        levels = []
        for depth in range(4):
            mask = nested.masks(depth, 3)
            assert (mask == mask[0]).all()  # bynode = 1: the level's sample
            level = features_of(mask[0])
            assert len(level) == 9
            assert level <= tree_features
            levels.append(level)
        # asking again for a depth of this tree gives the same sample
        assert features_of(nested.masks(2, 1)[0]) == levels[2]
        assert len({frozenset(level) for level in levels}) > 1  # random
        # keep the two generators in step for the next tree
        tree_only.rng = copy.deepcopy(nested.rng)


@pytest.mark.parametrize("seed", range(8))
def test_node_sample_is_subset_of_level_sample(seed):
    level_only = sampler(30, 0.8, 0.5, 1.0, seed)
    nested = sampler(30, 0.8, 0.5, 0.5, seed)
    level_only.start_tree()
    nested.start_tree()
    # The level sample is drawn before the node samples: equal generators
    # draw the same level.
    level = features_of(level_only.masks(0, 1)[0])
    assert len(level) == 12
    mask = nested.masks(0, 10)
    nodes = [features_of(row) for row in mask]
    assert all(len(node) == 6 and node <= level for node in nodes)
    assert len({frozenset(node) for node in nodes}) > 1  # drawn per node


def test_fraction_one_draws_no_random_numbers():
    rng = np.random.default_rng(5)
    state = copy.deepcopy(rng.bit_generator.state)
    s = ColumnSampler(12, 1.0, 1.0, 1.0, rng)
    for _ in range(3):
        s.start_tree()
        for depth in range(4):
            mask = s.masks(depth, 5)
            assert mask.all()
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("bytree, bylevel, bynode", [
    (0.5, 1.0, 1.0), (1.0, 0.5, 1.0), (1.0, 1.0, 0.5)])
def test_only_the_sampled_stage_draws(bytree, bylevel, bynode):
    rng = np.random.default_rng(6)
    s = ColumnSampler(12, bytree, bylevel, bynode, rng)
    state = copy.deepcopy(rng.bit_generator.state)
    s.start_tree()
    assert (rng.bit_generator.state != state) == (bytree < 1.0)
    state = copy.deepcopy(rng.bit_generator.state)
    s.masks(0, 3)
    assert (rng.bit_generator.state != state) == (bylevel < 1.0
                                                  or bynode < 1.0)


def test_samples_cover_every_feature():
    # Not a fixed subset: over many trees every feature is drawn, at about
    # the same rate (10 of 20 per tree: each feature in half the trees).
    s = sampler(20, 0.5, 1.0, 1.0, seed=11)
    counts = np.zeros(20)
    for _ in range(400):
        s.start_tree()
        counts += s.masks(0, 1)[0]
    assert counts.sum() == 400 * 10
    assert np.all(np.abs(counts - 200) < 60)  # ~6 standard deviations
