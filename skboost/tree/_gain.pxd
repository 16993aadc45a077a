# The regularised arithmetic of the model, in one place (DESIGN.md "The model").
#
# For a node with gradient sum G and hessian sum H the leaf weight minimising
#     G w + 1/2 (H + lambda) w^2 + alpha |w|
# is  w* = -T_alpha(G) / (H + lambda), with T_alpha the soft threshold, then
# clipped to [-max_delta_step, max_delta_step] when max_delta_step > 0.
# Twice the objective reduction of that leaf against w = 0 is its "score"
#     score(G, H) = -(2 G w* + (H + lambda) w*^2 + 2 alpha |w*|)
# which, without clipping, equals T_alpha(G)^2 / (H + lambda).
# The loss reduction of a split (paper eq. 7, before gamma) is
#     1/2 [score(G_L, H_L) + score(G_R, H_R) - score(G, H)].
# A node whose hessian sum is below min_child_weight gets weight and score 0,
# as in the reference implementation.
#
# Every split finder and the grower call these functions; nothing else
# re-derives them.

from libc.math cimport INFINITY, copysign, fabs


ctypedef struct RegParams:
    double reg_lambda
    double reg_alpha
    double max_delta_step     # 0 means no clipping
    double min_child_weight


cdef inline RegParams make_reg_params(double reg_lambda, double reg_alpha,
                                      double max_delta_step,
                                      double min_child_weight) noexcept nogil:
    cdef RegParams p
    p.reg_lambda = reg_lambda
    p.reg_alpha = reg_alpha
    p.max_delta_step = max_delta_step
    p.min_child_weight = min_child_weight
    return p


cdef inline double threshold_l1(double g, double alpha) noexcept nogil:
    """Soft threshold T_alpha(g) = sign(g) max(|g| - alpha, 0), branch-free
    (the sign of a gradient sum is unpredictable in a scan)."""
    cdef double a = fabs(g) - alpha
    a = a if a > 0.0 else 0.0
    return copysign(a, g)


cdef inline double leaf_weight(double G, double H,
                               const RegParams* p) noexcept nogil:
    """Optimal (unshrunk) leaf weight w* for gradient sum G, hessian sum H."""
    cdef double w
    if H < p.min_child_weight or H <= 0.0:
        return 0.0
    w = -threshold_l1(G, p.reg_alpha) / (H + p.reg_lambda)
    if p.max_delta_step > 0.0 and fabs(w) > p.max_delta_step:
        w = copysign(p.max_delta_step, w)
    return w


cdef inline double leaf_score(double G, double H,
                              const RegParams* p) noexcept nogil:
    """Twice the objective reduction of the optimal leaf: see the header."""
    cdef double w, t
    if H < p.min_child_weight or H <= 0.0:
        return 0.0
    if p.max_delta_step == 0.0:
        t = threshold_l1(G, p.reg_alpha)
        return t * t / (H + p.reg_lambda)
    w = leaf_weight(G, H, p)
    return -(2.0 * G * w + (H + p.reg_lambda) * w * w
             + 2.0 * p.reg_alpha * fabs(w))


cdef inline double split_loss_reduction(double G_left, double H_left,
                                        double G_right, double H_right,
                                        double parent_score,
                                        const RegParams* p) noexcept nogil:
    """Loss reduction of a split before gamma (paper eq. 7 without -gamma)."""
    return 0.5 * (leaf_score(G_left, H_left, p)
                  + leaf_score(G_right, H_right, p) - parent_score)


cdef inline bint is_l2_only(const RegParams* p) noexcept nogil:
    """The common case, where leaf_score is G^2 / (H + lambda) for every
    node heavy enough to be a child: no L1 term, no clipping, and
    min_child_weight > 0 (so a child's H is never 0)."""
    return (p.reg_alpha == 0.0 and p.max_delta_step == 0.0
            and p.min_child_weight > 0.0)


cdef inline double split_loss_reduction_l2(double G_left, double H_left,
                                           double G_right, double H_right,
                                           double parent_score,
                                           double reg_lambda) noexcept nogil:
    """split_loss_reduction when is_l2_only holds and both children are
    heavy enough: the same value, bit for bit, without the branches."""
    return 0.5 * (G_left * G_left / (H_left + reg_lambda)
                  + G_right * G_right / (H_right + reg_lambda) - parent_score)


cdef inline bint children_heavy_enough(double H_left, double H_right,
                                       const RegParams* p) noexcept nogil:
    """Both children satisfy min_child_weight."""
    return H_left >= p.min_child_weight and H_right >= p.min_child_weight


# A division-free pre-test for the split finders (when is_l2_only holds).
# A candidate's gain reaches best_gain only if its children's summed scores
#     S = G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda)
# reach 2 best_gain + parent_score. With a = H + lambda > 0 on both sides,
# S >= floor is G_L^2 a_R + G_R^2 a_L >= floor a_L a_R: multiplications only.
# The floor is lowered by a slack far above the rounding error of either
# form (a few ulps), so the test never rejects a candidate whose computed
# gain would reach best_gain; only the candidates passing it need the
# divisions of their gain.


cdef inline double children_score_floor(double best_gain,
                                        double parent_score) noexcept nogil:
    # the slack (relative 1e-12) is written here: a constant declared in a
    # .pxd is not initialised in the modules that cimport it
    return (2.0 * best_gain + parent_score
            - 1e-12 * (fabs(2.0 * best_gain) + fabs(parent_score)))


cdef inline bint may_reach(double floor, double G_left, double H_left,
                           double G_right, double H_right,
                           double reg_lambda) noexcept nogil:
    # symmetric in its two sides to the last bit (a_left * a_right is
    # computed first): a test given either child's sums gives the same
    # answer, which lets _exact_scan's vectorised pre-test use one loop
    cdef double a_left = H_left + reg_lambda
    cdef double a_right = H_right + reg_lambda
    return (G_left * G_left * a_right + G_right * G_right * a_left
            >= floor * (a_left * a_right))


# Monotone constraints (XGBoost's method). A node of a model with monotone
# constraints has bounds [lower, upper] on its weight, inherited from its
# ancestors: every weight is clipped into its node's bounds, and a score is
# computed from the clipped weight. A split on a feature constrained
# increasing (+1) is admissible only when its left child's clipped weight
# is <= its right child's (decreasing, -1: >=); its children's bounds are
# then cut at the mid-point of the two weights (driver.py). Clipping can
# only lower a score (the objective is concave in w), so the bounded
# children's score never exceeds the unbounded one: the division-free
# pre-test (may_reach) stays a valid filter of bounded candidates.

ctypedef struct NodeBounds:
    double lower           # bounds of the node's weight (-inf, inf: none)
    double upper
    int direction          # monotone constraint of the feature being scanned


cdef inline double clip_weight(double w, const NodeBounds* b) noexcept nogil:
    if w < b.lower:
        return b.lower
    if w > b.upper:
        return b.upper
    return w


cdef inline double score_given_weight(double G, double H, double w,
                                      const RegParams* p) noexcept nogil:
    """Twice the objective reduction of a leaf of weight w (see the
    header); 0 for a node lighter than min_child_weight."""
    if H < p.min_child_weight or H <= 0.0:
        return 0.0
    return -(2.0 * G * w + (H + p.reg_lambda) * w * w
             + 2.0 * p.reg_alpha * fabs(w))


cdef inline double bounded_leaf_score(double G, double H,
                                      const NodeBounds* b,
                                      const RegParams* p) noexcept nogil:
    """leaf_score of a node whose weight is clipped into its bounds."""
    return score_given_weight(G, H, clip_weight(leaf_weight(G, H, p), b), p)


cdef inline double bounded_split_loss_reduction(
        double G_left, double H_left, double G_right, double H_right,
        double parent_score, const NodeBounds* b,
        const RegParams* p) noexcept nogil:
    """split_loss_reduction with the children's weights clipped into the
    node's bounds (``parent_score`` from bounded_leaf_score); -inf when the
    split breaks the monotone constraint ``b.direction`` of its feature."""
    cdef double w_left = clip_weight(leaf_weight(G_left, H_left, p), b)
    cdef double w_right = clip_weight(leaf_weight(G_right, H_right, p), b)
    if (b.direction > 0 and w_left > w_right) or (
            b.direction < 0 and w_left < w_right):
        return -INFINITY
    return 0.5 * (score_given_weight(G_left, H_left, w_left, p)
                  + score_given_weight(G_right, H_right, w_right, p)
                  - parent_score)


# The kernels' optional arguments ``bounds`` (n_nodes, 2) and ``monotone``
# (n_features,), validated and converted in _gain.pyx.
cdef NodeBounds* node_bounds_array(bounds, Py_ssize_t n_nodes) except? NULL
cdef signed char[::1] feature_directions(monotone, Py_ssize_t n_features)
