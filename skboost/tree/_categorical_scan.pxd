# The categorical scan of one feature in one node (see _categorical_scan.pyx),
# called by the histogram finder (_hist_split.find_best_splits_hist).

from ._common cimport int32_t, int64_t
from ._gain cimport NodeBounds, RegParams
from ._hist_split cimport HistCandidate


ctypedef struct CatEntry:
    # one non-empty category of a node, for the sorted (Fisher) scan
    double key              # the category's leaf weight
    int32_t code


cdef void scan_categorical(const int64_t[:, ::1] hist,  # (n_bins, 2) one node
                           int32_t feature, int64_t first_bin,
                           int64_t n_categories, int64_t Gq, int64_t Hq,
                           double parent_score, double scale_g,
                           double scale_h, const RegParams* p,
                           int max_cat_to_onehot, int max_cat_threshold,
                           CatEntry* scratch,       # room for 2 n_categories
                           const NodeBounds* bounds,  # NULL: unconstrained
                           HistCandidate* best) noexcept nogil
