"""Python access to the regularised arithmetic of ``_gain.pxd``.

The grower computes node weights through :func:`leaf_weights`; tests check the
closed forms through the scalar wrappers. The formulas themselves live only in
``_gain.pxd``.
"""

import numpy as np

cimport cython
from libc.stdlib cimport malloc

from ._context cimport SplitContext, reg_params
from ._gain cimport (NodeBounds, RegParams, bounded_leaf_score,
                     bounded_split_loss_reduction, leaf_score, leaf_weight,
                     make_reg_params, split_loss_reduction)


# The paper's equations (Chen & Guestrin 2016, section 2.2), with G and H
# the sums of the first and second derivatives of the loss over a leaf's
# rows, and what _gain.pxd adds to them:
#
#   eq. 5   w* = -G / (H + lambda)                       (leaf_weight)
#           with L1: -T_alpha(G) / (H + lambda), T_alpha the soft
#           threshold sign(G) max(|G| - alpha, 0); then clipped to
#           [-max_delta_step, max_delta_step] when that is > 0
#   eq. 6   objective of a tree = -1/2 sum_leaves G^2 / (H + lambda)
#                                 + gamma T              (leaf_score is
#           twice a leaf's reduction: G^2 / (H + lambda) unclipped)
#   eq. 7   gain = 1/2 [G_L^2/(H_L + lambda) + G_R^2/(H_R + lambda)
#                       - (G_L + G_R)^2/(H_L + H_R + lambda)] - gamma
#           (split_loss_reduction: without the - gamma, which the growth
#           driver applies, and with each score from leaf_score)
#
# A node lighter than min_child_weight (H below it) scores 0 and gets
# weight 0, as in XGBoost. The wrappers below only move numbers between
# Python and those inline functions: there is no arithmetic here.


def py_leaf_weight(double G, double H, double reg_lambda=1.0,
                   double reg_alpha=0.0, double max_delta_step=0.0,
                   double min_child_weight=0.0):
    """Optimal leaf weight for gradient sum ``G`` and hessian sum ``H``."""
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    return leaf_weight(G, H, &p)


def py_leaf_score(double G, double H, double reg_lambda=1.0,
                  double reg_alpha=0.0, double max_delta_step=0.0,
                  double min_child_weight=0.0):
    """Twice the objective reduction of the optimal leaf."""
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    return leaf_score(G, H, &p)


def py_split_loss_reduction(double G_left, double H_left, double G_right,
                            double H_right, double reg_lambda=1.0,
                            double reg_alpha=0.0, double max_delta_step=0.0,
                            double min_child_weight=0.0):
    """Loss reduction of splitting (G_left+G_right, H_left+H_right), before gamma."""
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    # the parent's score from the children's sums: the finders pass it in
    # precomputed, once per node, since it is the same for every candidate
    cdef double parent = leaf_score(G_left + G_right, H_left + H_right, &p)
    return split_loss_reduction(G_left, H_left, G_right, H_right, parent, &p)


def leaf_weights(const double[::1] G not None,          # IN
                 const double[::1] H not None,          # IN
                 SplitContext context not None):
    """Vectorised :func:`py_leaf_weight` over node statistics, with the
    regularisation of ``context`` (a sequential loop: its thread count is
    not used)."""
    cdef RegParams p = reg_params(context)
    cdef Py_ssize_t i, n = G.shape[0]
    if H.shape[0] != n:
        raise ValueError("G and H must have the same length")
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] out_view = out
    # eq. 5 per node (unshrunk: the learning rate is applied by the caller)
    with nogil:
        for i in range(n):
            out_view[i] = leaf_weight(G[i], H[i], &p)
    return out


def leaf_scores(const double[::1] G not None, const double[::1] H not None,
                SplitContext context not None):
    """Vectorised :func:`py_leaf_score` over node statistics, with the
    regularisation of ``context`` (a sequential loop: its thread count is
    not used)."""
    cdef RegParams p = reg_params(context)
    cdef Py_ssize_t i, n = G.shape[0]
    if H.shape[0] != n:
        raise ValueError("G and H must have the same length")
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] out_view = out
    with nogil:
        for i in range(n):
            out_view[i] = leaf_score(G[i], H[i], &p)
    return out


def py_bounded_split_loss_reduction(double G_left, double H_left,
                                    double G_right, double H_right,
                                    double lower, double upper,
                                    int direction, double reg_lambda=1.0,
                                    double reg_alpha=0.0,
                                    double max_delta_step=0.0,
                                    double min_child_weight=0.0):
    """Loss reduction of a split of a node with monotone bounds
    ``[lower, upper]`` on a feature constrained ``direction`` (-1, 0, 1);
    -inf when the split breaks the constraint."""
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    # monotone constraints (XGBoost's method): the weights of eq. 5 clipped
    # into the node's bounds, and the scores computed from the clipped
    # weights; -inf when the children's order breaks the constraint
    cdef NodeBounds b
    b.lower = lower
    b.upper = upper
    b.direction = direction
    cdef double parent = bounded_leaf_score(G_left + G_right,
                                            H_left + H_right, &b, &p)
    return bounded_split_loss_reduction(G_left, H_left, G_right, H_right,
                                        parent, &b, &p)


cdef NodeBounds* node_bounds_array(bounds, Py_ssize_t n_nodes) except? NULL:
    """The nodes' ``bounds`` (n_nodes, 2) as C structs (direction 0) that
    the caller frees; NULL for None (no monotone constraint)."""
    if bounds is None:
        return NULL
    cdef const double[:, ::1] values = _checked_bounds(bounds, n_nodes)
    # C structs for the nogil scans; direction is set per feature by the
    # scan itself (with_direction), 0 here
    cdef NodeBounds* out = <NodeBounds*> malloc(
        max(n_nodes, 1) * sizeof(NodeBounds))
    if out == NULL:
        raise MemoryError()
    cdef Py_ssize_t k
    for k in range(n_nodes):
        out[k].lower = values[k, 0]
        out[k].upper = values[k, 1]
        out[k].direction = 0
    return out


@cython.boundscheck(True)
@cython.wraparound(True)
def _checked_bounds(bounds, n_nodes):
    values = np.ascontiguousarray(bounds, dtype=np.float64)
    if values.shape != (n_nodes, 2) or not np.all(values[:, 0] <= values[:, 1]):
        raise ValueError("bounds must be (n_nodes, 2) with lower <= upper")
    return values


@cython.boundscheck(True)
@cython.wraparound(True)
cdef signed char[::1] feature_directions(monotone, Py_ssize_t n_features):
    """The features' monotone constraints as int8 (zeros for None)."""
    if monotone is None:
        return np.zeros(max(n_features, 1), dtype=np.int8)
    values = np.ascontiguousarray(monotone, dtype=np.int8)
    if values.shape != (n_features,) or np.any(np.abs(values) > 1):
        raise ValueError("monotone must hold -1, 0 or 1 for each feature")
    return values
