from ._common cimport int32_t, int64_t
from ._gain cimport NodeBounds, RegParams
from ._hist_candidate cimport HistCandidate


cdef bint offer_bounded(HistCandidate* best, int32_t feature,
                        double threshold, int32_t split_bin,
                        int64_t Gq_left, int64_t Hq_left, int64_t Gq,
                        int64_t Hq, double parent_score, double scale_g,
                        double scale_h, const RegParams* p, bint l2_only,
                        bint default_left,
                        const NodeBounds* bounds) noexcept nogil
