# The candidate of the histogram scans (_hist_split, _categorical_scan,
# _column_scan) and how it is taken: types and inline code only, so that
# both _hist_split.pxd and _bounded_offer.pyx can cimport it.

from ._common cimport SplitCandidate, int32_t, int64_t, is_better, uint8_t


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


# The vector-leaf scan's candidate (_vector_hist): its left sums are per
# output, kept beside it, so G_left and H_left of ``split`` are unused.
ctypedef struct VectorCandidate:
    SplitCandidate split
    int32_t split_bin         # the last value bin going left


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
