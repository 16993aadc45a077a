"""A histogram candidate under monotone bounds (``_gain.pxd``).

``_hist_split.offer_boundary`` hands its candidate here when the model has
monotone constraints. Out of line, in a module of its own: the unbounded
``offer_boundary`` stays small enough for the compiler to inline it into
every scan loop (the histogram, categorical and column-wise scans), and
this module imports none of them.
"""

from ._common cimport int32_t, int64_t
from ._gain cimport (NodeBounds, RegParams, bounded_split_loss_reduction,
                     children_heavy_enough, children_score_floor, may_reach)
from ._hist_candidate cimport HistCandidate, offer


cdef bint offer_bounded(HistCandidate* best, int32_t feature,
                        double threshold, int32_t split_bin,
                        int64_t Gq_left, int64_t Hq_left, int64_t Gq,
                        int64_t Hq, double parent_score, double scale_g,
                        double scale_h, const RegParams* p, bint l2_only,
                        bint default_left,
                        const NodeBounds* bounds) noexcept nogil:
    """``offer_boundary`` with the gain from the weights clipped into
    ``bounds`` (``parent_score``: the node's bounded score); a candidate
    breaking the constraint has gain -inf and is never taken. The
    division-free pre-test still applies: clipping never raises a score."""
    # the scales are powers of two: the quotients are exact
    cdef double H_left = Hq_left / scale_h, H_right = (Hq - Hq_left) / scale_h
    cdef double G_left = Gq_left / scale_g, G_right = (Gq - Gq_left) / scale_g
    if not children_heavy_enough(H_left, H_right, p):
        return False
    # clipping only lowers scores (_gain.pxd), so the unbounded pre-test
    # may reject, never wrongly: a candidate it rejects cannot win bounded
    if l2_only and not may_reach(
            children_score_floor(best.split.gain, parent_score),
            G_left, H_left, G_right, H_right, p.reg_lambda):
        return False
    return offer(best, bounded_split_loss_reduction(
                     G_left, H_left, G_right, H_right, parent_score, bounds,
                     p),
                 feature, threshold, split_bin, Gq_left, Hq_left, scale_g,
                 scale_h, default_left)
