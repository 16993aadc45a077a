# The categorical scan of one feature in one node (see _categorical_scan.pyx),
# called by the histogram finder (_hist_split.find_best_splits_hist).

from ._common cimport int32_t, int64_t
from ._gain cimport NodeBounds, RegParams
from ._hist_split cimport HistCandidate


ctypedef struct CatEntry:
    # one non-empty category of a node, for the sorted (Fisher) scan
    double key              # the category's leaf weight
    int32_t code


ctypedef struct CategoryList:
    # what the sorted scan of one feature in one node visits and leaves
    # for the node's children (NodeCategoryLists)
    const int32_t* codes    # a superset of the non-empty categories; NULL: all
    Py_ssize_t n_codes
    int32_t* present        # OUT the non-empty ones (room for the visited)
    int64_t* n_present      # OUT how many (stays -1 when not scanned)
    int32_t* order          # OUT the sorted order's codes (whole, or both
                            # ends: ordered_categories); NULL: not kept
    Py_ssize_t order_room
    int64_t* n_order        # OUT how many (stays -1 when not kept)


cdef class NodeCategoryLists:
    cdef CategoryList* entries      # (n_nodes, n_features), row-major
    cdef readonly Py_ssize_t n_nodes, n_features
    cdef object bin_ptr             # the layout the rooms were sized for
    cdef object present_codes       # int32: every entry's present codes
    cdef object present_start       # int64 (n_nodes, n_features)
    cdef object present_count       # int64 (n_nodes, n_features), -1: none
    cdef object parents             # the parents' lists, kept alive
    cdef readonly object keep       # max_cat_threshold of the kept orders
    cdef object order_codes         # int32: every entry's order codes
    cdef object order_start         # int64 (n_nodes, n_features)
    cdef object order_room          # int64 (n_nodes, n_features)
    cdef object order_count         # int64 (n_nodes, n_features), -1: none


ctypedef struct SubtractSpan:
    # the bins of one (node, feature) that a level's listed subtraction and
    # the clearing of its built children touch (ListedSpans): the listed
    # categories and the missing bin, or (codes NULL) the feature's every bin
    const int32_t* codes
    Py_ssize_t n_codes


cdef class ListedSpans:
    cdef SubtractSpan* spans        # (n_nodes, n_features), row-major
    cdef readonly Py_ssize_t n_nodes, n_features
    cdef readonly int64_t n_values  # int64 values the spans cover
    cdef readonly object bin_ptr    # the layout the spans are of
    cdef object parent_lists        # the lists the codes point into


cdef void clear_spans(int64_t* hist, const int64_t* bin_ptr,
                      Py_ssize_t n_features,
                      const SubtractSpan* spans) noexcept nogil


cdef void scan_categorical(const int64_t[:, ::1] hist,  # (n_bins, 2) one node
                           int32_t feature, int64_t first_bin,
                           int64_t n_categories, int64_t Gq, int64_t Hq,
                           double parent_score, double scale_g,
                           double scale_h, const RegParams* p,
                           int max_cat_to_onehot, int max_cat_threshold,
                           CatEntry* scratch,       # room for 2 n_categories
                           const NodeBounds* bounds,  # NULL: unconstrained
                           const CategoryList* visit,   # NULL: all categories
                           HistCandidate* best) noexcept nogil
