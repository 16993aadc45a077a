"""The regularised arithmetic of ``_gain.pxd`` against closed forms.

Every expected value below is derived in the test from the leaf objective

    F(w) = G w + 1/2 (H + lambda) w^2 + alpha |w|

(minimised over |w| <= max_delta_step when that is positive): the optimal
weight is ``w* = -T_alpha(G) / (H + lambda)`` clipped to the box, and the leaf
"score" is ``-2 F(w*)``. Hand-worked numbers are spelled out in comments;
the other values come from a brute-force grid over w, which knows nothing of
the closed forms.
"""

import math

import numpy as np
import pytest

from skboost.tree._context import SplitContext
from skboost.tree._gain import (leaf_scores, leaf_weights, py_leaf_score,
                                py_leaf_weight, py_split_loss_reduction)


def leaf_objective(w, G, H, reg_lambda, reg_alpha):
    """F(w), the part of the regularised objective that one leaf controls."""
    return G * w + 0.5 * (H + reg_lambda) * w**2 + reg_alpha * np.abs(w)


def grid_minimum(G, H, reg_lambda, reg_alpha, bound, n=400_001):
    """(argmin, min) of F over an evenly spaced grid of [-bound, bound]."""
    w = np.linspace(-bound, bound, n)
    f = leaf_objective(w, G, H, reg_lambda, reg_alpha)
    k = int(np.argmin(f))
    return w[k], f[k], w[1] - w[0]


# (G, H, lambda): no L1, no clipping: w* = -G / (H + lambda).
@pytest.mark.parametrize("G, H, reg_lambda", [
    (3.0, 2.0, 1.0),      # -3 / 3 = -1
    (-5.0, 1.5, 1.0),     # 5 / 2.5 = 2
    (0.75, 0.25, 0.0),    # -0.75 / 0.25 = -3
    (-1.0, 4.0, 12.0),    # 1 / 16 = 0.0625
    (0.0, 1.0, 1.0),      # 0
])
def test_leaf_weight_is_minus_G_over_H_plus_lambda(G, H, reg_lambda):
    expected = -G / (H + reg_lambda)
    assert py_leaf_weight(G, H, reg_lambda) == pytest.approx(expected,
                                                             rel=1e-15)
    # The score is T(G)^2 / (H + lambda) = G^2 / (H + lambda) without L1.
    assert py_leaf_score(G, H, reg_lambda) == pytest.approx(
        G * G / (H + reg_lambda), rel=1e-15)


def test_leaf_weight_hand_example():
    # G = 6, H = 2, lambda = 1: w* = -6 / (2 + 1) = -2; score 36 / 3 = 12.
    assert py_leaf_weight(6.0, 2.0, 1.0) == -2.0
    assert py_leaf_score(6.0, 2.0, 1.0) == 12.0


@pytest.mark.parametrize("G", [-2.0, -1.999, -1.0, -1e-9, 0.0, 0.5, 1.999,
                               2.0])
def test_l1_gradient_within_alpha_gives_zero(G):
    # alpha = 2: every |G| <= 2 is thresholded to 0 (the boundary included:
    # the subgradient of alpha|w| at 0 covers [-alpha, alpha]).
    assert py_leaf_weight(G, 3.0, 1.0, reg_alpha=2.0) == 0.0
    assert py_leaf_score(G, 3.0, 1.0, reg_alpha=2.0) == 0.0


@pytest.mark.parametrize("G, expected_weight, expected_score", [
    # alpha = 2, H = 3, lambda = 1, so H + lambda = 4:
    (5.0, -(5.0 - 2.0) / 4.0, (5.0 - 2.0) ** 2 / 4.0),    # w = -0.75, 2.25
    (-7.0, -(-7.0 + 2.0) / 4.0, (-7.0 + 2.0) ** 2 / 4.0),  # w = 1.25, 6.25
    (2.5, -(2.5 - 2.0) / 4.0, (2.5 - 2.0) ** 2 / 4.0),    # w = -0.125, 0.0625
])
def test_l1_shrinks_gradient_by_alpha(G, expected_weight, expected_score):
    assert py_leaf_weight(G, 3.0, 1.0, reg_alpha=2.0) == pytest.approx(
        expected_weight, rel=1e-15)
    assert py_leaf_score(G, 3.0, 1.0, reg_alpha=2.0) == pytest.approx(
        expected_score, rel=1e-15)


@pytest.mark.parametrize("G, H, reg_lambda, reg_alpha, mds, expected", [
    # unclipped -G/(H+l) = -(-6)/2 = 3 > 1: clipped to +1
    (-6.0, 1.0, 1.0, 0.0, 1.0, 1.0),
    # unclipped -(10)/(4+1) = -2, |-2| > 0.5: clipped to -0.5
    (10.0, 4.0, 1.0, 0.0, 0.5, -0.5),
    # unclipped -(3)/(2+1) = -1, |-1| <= 1.5: unchanged
    (3.0, 2.0, 1.0, 0.0, 1.5, -1.0),
    # L1 first: T_1(9) = 8, -8/(3+1) = -2, then clipped to -0.7
    (9.0, 3.0, 1.0, 1.0, 0.7, -0.7),
])
def test_max_delta_step_clips_the_weight(G, H, reg_lambda, reg_alpha, mds,
                                         expected):
    assert py_leaf_weight(G, H, reg_lambda, reg_alpha, mds) == pytest.approx(
        expected, rel=1e-15)


@pytest.mark.parametrize("reg_alpha, mds", [(0.0, 0.0), (1.0, 0.0),
                                            (0.0, 0.3), (1.5, 0.4)])
def test_min_child_weight_zeroes_light_nodes(reg_alpha, mds):
    # H = 0.5 below min_child_weight = 1: weight and score are 0, however
    # large G is.
    assert py_leaf_weight(40.0, 0.5, 1.0, reg_alpha, mds, 1.0) == 0.0
    assert py_leaf_score(40.0, 0.5, 1.0, reg_alpha, mds, 1.0) == 0.0
    assert py_leaf_weight(-40.0, 0.999, 1.0, reg_alpha, mds, 1.0) == 0.0
    # H exactly at min_child_weight is heavy enough ("H >= min_child_weight").
    w = py_leaf_weight(-40.0, 1.0, 1.0, reg_alpha, mds, 1.0)
    assert w > 0.0
    expected = (40.0 - reg_alpha) / 2.0  # -T_alpha(-40) / (1 + 1)
    if mds:
        expected = min(expected, mds)
    assert w == pytest.approx(expected, rel=1e-15)


def test_split_loss_reduction_hand_example():
    # G_L = -3, H_L = 2, G_R = 5, H_R = 3, lambda = 1; parent G = 2, H = 5.
    #   G_L^2/(H_L+1) = 9/3  = 3
    #   G_R^2/(H_R+1) = 25/4 = 6.25
    #   G^2/(H+1)     = 4/6  = 2/3
    #   1/2 (3 + 25/4 - 2/3) = 1/2 (36 + 75 - 8)/12 = 103/24
    assert py_split_loss_reduction(-3.0, 2.0, 5.0, 3.0, 1.0) == pytest.approx(
        103.0 / 24.0, rel=1e-14)


def test_split_loss_reduction_hand_example_l1():
    # alpha = 2, lambda = 1. G_L = 5, H_L = 3: T = 3, 9/4.
    # G_R = -1.5, H_R = 1: |G_R| <= alpha, T = 0, score 0.
    # Parent G = 3.5, H = 4: T = 1.5, 2.25/5 = 0.45.
    # 1/2 (9/4 + 0 - 0.45) = 1/2 (1.8) = 0.9
    assert py_split_loss_reduction(5.0, 3.0, -1.5, 1.0, 1.0,
                                   reg_alpha=2.0) == pytest.approx(0.9,
                                                                   rel=1e-14)


def test_split_loss_reduction_light_child_scores_zero():
    # min_child_weight = 1: the left child (H = 0.5) scores 0.
    # Right: G = -2, H = 3: 4/4 = 1. Parent: G = 2, H = 3.5: 4/4.5 = 8/9.
    # 1/2 (0 + 1 - 8/9) = 1/18
    assert py_split_loss_reduction(4.0, 0.5, -2.0, 3.0, 1.0,
                                   min_child_weight=1.0) == pytest.approx(
        1.0 / 18.0, rel=1e-13)


def test_max_delta_step_score_hand_example():
    # G = -6, H = 1, lambda = 1, max_delta_step = 1: w = 3 clipped to 1.
    # score = -(2 G w + (H + lambda) w^2) = -(2(-6)(1) + 2(1)^2) = 10,
    # below the unclipped 36/2 = 18.
    assert py_leaf_score(-6.0, 1.0, 1.0, 0.0, 1.0) == pytest.approx(10.0,
                                                                    rel=1e-15)


CLIPPED_CASES = [
    # (G, H, lambda, alpha, max_delta_step)
    (-6.0, 1.0, 1.0, 0.0, 1.0),
    (10.0, 4.0, 1.0, 0.0, 0.5),
    (3.0, 2.0, 1.0, 0.0, 1.5),     # clipping inactive
    (9.0, 3.0, 1.0, 1.0, 0.7),     # L1 and clipping
    (-2.5, 0.1, 0.0, 0.5, 2.0),    # lambda = 0
    (0.3, 1.0, 1.0, 0.5, 0.2),     # |G| <= alpha: w = 0
    (-50.0, 10.0, 3.0, 7.0, 0.25),
    (1.7, 0.6, 0.2, 0.9, 3.0),     # clipping inactive, L1 active
]


@pytest.mark.parametrize("G, H, reg_lambda, reg_alpha, mds", CLIPPED_CASES)
def test_max_delta_step_score_minimises_the_leaf_objective(
        G, H, reg_lambda, reg_alpha, mds):
    """score = -2 min_{|w| <= mds} F(w), and w* is where the minimum is."""
    w = py_leaf_weight(G, H, reg_lambda, reg_alpha, mds)
    score = py_leaf_score(G, H, reg_lambda, reg_alpha, mds)
    # The closed form at the clipped weight, written from the objective.
    assert score == pytest.approx(
        -(2 * G * w + (H + reg_lambda) * w**2 + 2 * reg_alpha * abs(w)),
        rel=1e-12, abs=1e-15)
    # The brute-force minimum over the box.
    w_grid, f_grid, step = grid_minimum(G, H, reg_lambda, reg_alpha, mds)
    assert abs(w) <= mds
    assert abs(w - w_grid) <= step
    assert score == pytest.approx(-2.0 * f_grid, rel=1e-6, abs=1e-9)
    # No w in the box does better than w* (up to rounding).
    assert leaf_objective(w, G, H, reg_lambda, reg_alpha) <= f_grid + 1e-12


@pytest.mark.parametrize("G, H, reg_lambda, reg_alpha", [
    (-6.0, 1.0, 1.0, 0.0), (9.0, 3.0, 1.0, 1.0), (0.3, 1.0, 1.0, 0.5),
    (-2.5, 0.1, 0.0, 0.5),
])
def test_unclipped_score_minimises_the_leaf_objective(G, H, reg_lambda,
                                                      reg_alpha):
    score = py_leaf_score(G, H, reg_lambda, reg_alpha)
    t = math.copysign(max(abs(G) - reg_alpha, 0.0), G)
    assert score == pytest.approx(t * t / (H + reg_lambda), rel=1e-14)
    # |w*| <= |G| / (H + lambda) bounds the grid.
    bound = abs(G) / (H + reg_lambda) + 1.0
    w_grid, f_grid, step = grid_minimum(G, H, reg_lambda, reg_alpha, bound)
    assert py_leaf_weight(G, H, reg_lambda, reg_alpha) == pytest.approx(
        w_grid, abs=step)
    assert score == pytest.approx(-2.0 * f_grid, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("G, H, reg_lambda, reg_alpha, mds", CLIPPED_CASES)
def test_split_loss_reduction_with_max_delta_step(G, H, reg_lambda,
                                                  reg_alpha, mds):
    """Half the sum of the children's brute-force scores minus the parent's."""
    G_right, H_right = -0.5 * G + 1.0, 2.0 * H + 0.5

    def grid_score(g, h):
        return -2.0 * grid_minimum(g, h, reg_lambda, reg_alpha, mds)[1]

    expected = 0.5 * (grid_score(G, H) + grid_score(G_right, H_right)
                      - grid_score(G + G_right, H + H_right))
    assert py_split_loss_reduction(
        G, H, G_right, H_right, reg_lambda, reg_alpha, mds) == pytest.approx(
        expected, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("params", [
    (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0), (2.0, 0.5, 0.0, 1.0),
    (1.0, 0.0, 0.3, 0.0), (0.5, 1.0, 0.8, 2.0),
])
def test_vectorised_equals_scalar(params):
    rng = np.random.default_rng(0)
    G = rng.normal(scale=5.0, size=300)
    H = rng.exponential(scale=2.0, size=300)
    H[:5] = [0.0, params[3], 1e-3, 100.0, 2.0]
    G[:3] = [0.0, params[1], -params[1]]
    expected_w = np.array([py_leaf_weight(g, h, *params) for g, h in zip(G, H)])
    expected_s = np.array([py_leaf_score(g, h, *params) for g, h in zip(G, H)])
    context = SplitContext(reg_lambda=params[0], reg_alpha=params[1],
                           max_delta_step=params[2],
                           min_child_weight=params[3])
    np.testing.assert_array_equal(leaf_weights(G, H, context), expected_w)
    np.testing.assert_array_equal(leaf_scores(G, H, context), expected_s)
    # and the values are not all trivial
    assert np.count_nonzero(expected_w) > 50


def test_vectorised_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        leaf_weights(np.zeros(3), np.zeros(2), SplitContext())
    with pytest.raises(ValueError):
        leaf_scores(np.zeros(2), np.zeros(3), SplitContext())
