# The candidates of the histogram finders (_hist_split.pyx, and the
# categorical and column-wise scans that share them: _categorical_scan.pyx,
# _column_scan.pyx), and how a candidate is offered.

from ._common cimport SplitCandidate, int32_t, int64_t, is_better, uint8_t
from ._gain cimport (NodeBounds, RegParams, bounded_split_loss_reduction,
                     children_heavy_enough, children_score_floor, may_reach,
                     split_loss_reduction, split_loss_reduction_l2)


# Kinds of split a candidate is (``cat_kind``).
cdef enum:
    NUMERIC_SPLIT = 0       # value bins 0..split_bin go left
    ONE_HOT_SPLIT = 1       # category split_bin goes right, the others left
    SORTED_SPLIT = 2        # the first split_bin + 1 categories by weight go left


ctypedef struct HistCandidate:
    SplitCandidate split
    int32_t split_bin       # see the kinds above
    int64_t Gq_left         # exact left sums, for the children's totals
    int64_t Hq_left
    uint8_t cat_kind


cdef inline bint offer(HistCandidate* best, double gain, int32_t feature,
                       double threshold, int32_t split_bin, int64_t Gq_left,
                       int64_t Hq_left, double scale_g, double scale_h,
                       bint default_left) noexcept nogil:
    """Take the candidate if it beats ``best`` (a numeric split until the
    caller says otherwise); returns whether it did."""
    if is_better(gain, feature, threshold, &best.split):
        best.split.gain = gain
        best.split.feature = feature
        best.split.threshold = threshold
        best.split.G_left = Gq_left / scale_g
        best.split.H_left = Hq_left / scale_h
        best.split.default_left = default_left
        best.split_bin = split_bin
        best.Gq_left = Gq_left
        best.Hq_left = Hq_left
        best.cat_kind = NUMERIC_SPLIT
        return True
    return False


cdef inline bint offer_boundary(HistCandidate* best, int32_t feature,
                                double threshold, int32_t split_bin,
                                int64_t Gq_left, int64_t Hq_left,
                                int64_t Gq, int64_t Hq, double parent_score,
                                double scale_g, double scale_h,
                                const RegParams* p, bint l2_only,
                                bint default_left,
                                const NodeBounds* bounds) noexcept nogil:
    """Offer the split whose left child has the exact sums (Gq_left,
    Hq_left) of a node with totals (Gq, Hq), if both children are heavy
    enough; returns whether it was taken. ``bounds``: the node's monotone
    bounds and the feature's constraint (``_gain.pxd``), NULL when the model
    has no monotone constraint."""
    # the scales are powers of two: multiplying by their exact reciprocals
    # gives the quotients, and the reciprocals leave the scan loops
    cdef double to_g = 1.0 / scale_g, to_h = 1.0 / scale_h
    cdef double H_left = Hq_left * to_h
    cdef double H_right = (Hq - Hq_left) * to_h
    cdef double G_left, G_right, gain
    if not children_heavy_enough(H_left, H_right, p):
        return False
    G_left = Gq_left * to_g
    G_right = (Gq - Gq_left) * to_g
    if l2_only and not may_reach(
            children_score_floor(best.split.gain, parent_score),
            G_left, H_left, G_right, H_right, p.reg_lambda):
        return False
    if bounds != NULL:
        gain = bounded_split_loss_reduction(G_left, H_left, G_right, H_right,
                                            parent_score, bounds, p)
    elif l2_only:
        gain = split_loss_reduction_l2(G_left, H_left, G_right, H_right,
                                       parent_score, p.reg_lambda)
    else:
        gain = split_loss_reduction(G_left, H_left, G_right, H_right,
                                    parent_score, p)
    return offer(best, gain, feature, threshold, split_bin, Gq_left, Hq_left,
                 scale_g, scale_h, default_left)


cdef inline const NodeBounds* _at(const NodeBounds* bounds,
                                  Py_ssize_t k) noexcept nogil:
    """Node k's bounds, NULL without bounds."""
    return NULL if bounds == NULL else &bounds[k]


cdef inline const NodeBounds* with_direction(
        NodeBounds* out, const NodeBounds* node, int direction) noexcept nogil:
    """``node``'s bounds with the constraint of the feature to scan
    (written to ``out``), or NULL when ``node`` is NULL (no constraint)."""
    if node == NULL:
        return NULL
    out[0] = node[0]
    out.direction = direction
    return out


cdef double[::1] _parent_scores(const int64_t[:, ::1] node_sums,
                                double scale_g, double scale_h,
                                const RegParams* p, bounds)
cdef HistCandidate* _fresh_bests(Py_ssize_t count) except NULL
cdef object _merged_to_records(HistCandidate* best, int n_threads,
                               Py_ssize_t n_nodes)
