# The candidates of the histogram finders (_hist_split.pyx, and the
# categorical and column-wise scans that share them: _categorical_scan.pyx,
# _column_scan.pyx), and how a candidate is offered.

from ._bounded_offer cimport offer_bounded
from ._common cimport int32_t, int64_t, uint8_t
from ._gain cimport (NodeBounds, RegParams, children_heavy_enough,
                     children_score_floor, may_reach, split_loss_reduction,
                     split_loss_reduction_l2)
from ._hist_candidate cimport (HistCandidate, NUMERIC_SPLIT, ONE_HOT_SPLIT,
                               SORTED_SPLIT, offer)


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
    if bounds != NULL:
        # out of line, so that this function stays small enough to be
        # inlined into the scan loops
        return offer_bounded(best, feature, threshold, split_bin, Gq_left,
                             Hq_left, Gq, Hq, parent_score, scale_g, scale_h,
                             p, l2_only, default_left, bounds)
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
    if l2_only:
        if not may_reach(children_score_floor(best.split.gain, parent_score),
                         G_left, H_left, G_right, H_right, p.reg_lambda):
            return False
        gain = split_loss_reduction_l2(G_left, H_left, G_right, H_right,
                                       parent_score, p.reg_lambda)
    else:
        gain = split_loss_reduction(G_left, H_left, G_right, H_right,
                                    parent_score, p)
    return offer(best, gain, feature, threshold, split_bin, Gq_left, Hq_left,
                 scale_g, scale_h, default_left)


# What the L2 scan of one feature of one node holds fixed (the scales,
# reciprocals, the node's totals and score, lambda, min_child_weight) and
# the pre-test's floor, which moves with the best candidate.
ctypedef struct L2Scan:
    double to_g
    double to_h
    double scale_g
    double scale_h
    int64_t Gq
    int64_t Hq
    double parent_score
    double reg_lambda
    double min_child_weight
    double floor


cdef inline void offer_l2_candidate(L2Scan* scan, HistCandidate* best,
                                    int32_t feature, double threshold,
                                    int32_t split_bin, int64_t Gq_left,
                                    int64_t Hq_left,
                                    bint default_left) noexcept nogil:
    """``offer_boundary`` without bounds when ``is_l2_only`` holds: the same
    arithmetic, bit for bit, and the same decision; the floor of
    ``may_reach`` is recomputed only when the best changes."""
    cdef double H_left = Hq_left * scan.to_h
    cdef double H_right = (scan.Hq - Hq_left) * scan.to_h
    if not (H_left >= scan.min_child_weight
            and H_right >= scan.min_child_weight):
        return
    cdef double G_left = Gq_left * scan.to_g
    cdef double G_right = (scan.Gq - Gq_left) * scan.to_g
    if not may_reach(scan.floor, G_left, H_left, G_right, H_right,
                     scan.reg_lambda):
        return
    cdef double gain = split_loss_reduction_l2(G_left, H_left, G_right,
                                               H_right, scan.parent_score,
                                               scan.reg_lambda)
    if offer(best, gain, feature, threshold, split_bin, Gq_left, Hq_left,
             scan.scale_g, scan.scale_h, default_left):
        scan.floor = children_score_floor(best.split.gain, scan.parent_score)


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


cdef enum:
    # a bin costs about 4 ns to scan, and a unit of MIN_WORK_PER_THREAD
    # about 1 ns: a level's scan goes to two threads from ~130 us of work
    # (about 6 nodes of 20 features and 256 bins). With 16, the scans of
    # 2 to 6 small nodes were split and paid a thread wake-up each (~25
    # us), which made the default n_jobs of a 5,000-row fit 1.1x its
    # n_jobs=1 on an idle machine; the 1,000,000-row benchmark's levels
    # are large enough either way (0.98x its fit time with 16)
    SCAN_WORK_PER_BIN = 4


cdef void scan_numeric_node(const int64_t[:, ::1] hist,
                            const int64_t[::1] bin_ptr,
                            const double[::1] thresholds,
                            const uint8_t* allowed,
                            int64_t Gq, int64_t Hq, double parent_score,
                            double scale_g, double scale_h,
                            const RegParams* p,
                            HistCandidate* best) noexcept nogil
cdef double[::1] _parent_scores(const int64_t[:, ::1] node_sums,
                                double scale_g, double scale_h,
                                const RegParams* p, bounds)
cdef HistCandidate* _fresh_bests(Py_ssize_t count) except NULL
cdef object _merged_to_records(HistCandidate* best, int n_threads,
                               Py_ssize_t n_nodes)
