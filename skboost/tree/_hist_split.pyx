"""Split scan over node histograms, in both missing directions.

For every node of a batch and every allowed feature, the value bins are
scanned in order; after bin b the left child holds bins 0..b (plus the
missing bin when missing values go left). Statistics are the exact integer
sums of ``_histogram.pyx``, turned into float64 by the power-of-two scales
before the gain arithmetic of ``_gain.pxd``. When a node has no missing
value for a feature (its missing bin is empty) one direction is scanned and
missing values go left, as in the exact finder. Candidates are merged with
the total order of ``_common.is_better``, so the result does not depend on
the number of threads.

Categorical features (``categorical`` flags) have one value bin per
category code. Their splits send a set of categories left: with at most
``max_cat_to_onehot`` categories, one category goes right and the rest left
(the split a one-hot encoding would make); otherwise the node's non-empty
categories are sorted by their own optimal leaf weight ``-G / (H + lambda)``
(through ``_gain.leaf_weight``: L1, max_delta_step, and weight 0 for a
category lighter than min_child_weight, which keeps rare categories from the
ends of the order, as XGBoost does) and every prefix of that order is a
candidate left set (Fisher's result: without regularisation the best
partition is one of them), of which one side holds at most
``max_cat_threshold`` categories. Both directions of missing values are scanned as for numeric
features. ``categorical_left_set`` turns the chosen candidate into its set.
"""

import numpy as np

cimport cython

from cython.parallel cimport prange, threadid
from libc.stdlib cimport free, malloc


from libc.string cimport memcpy

from ._exact cimport SortedColumns
from ._common cimport (SplitCandidate, int32_t, int64_t, uint8_t, is_better,
                       reset_candidate)
from ._gain cimport (RegParams, children_heavy_enough, children_score_floor,
                     is_l2_only, leaf_score, leaf_weight, make_reg_params,
                     may_reach, split_loss_reduction, split_loss_reduction_l2)


# Below this many histogram bins per thread, a parallel region costs more
# than it saves.
BINS_PER_THREAD = 4096


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


ctypedef struct CatEntry:
    # one non-empty category of a node, for the sorted (Fisher) scan
    double key              # the category's leaf weight
    int32_t code


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
                                bint default_left) noexcept nogil:
    """Offer the split whose left child has the exact sums (Gq_left,
    Hq_left) of a node with totals (Gq, Hq), if both children are heavy
    enough; returns whether it was taken."""
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


cdef void scan_feature(const int64_t[:, ::1] hist,       # (n_bins, 2) one node
                       int32_t feature,
                       int64_t first_bin, int64_t n_value_bins,
                       int64_t Gq, int64_t Hq, double parent_score,
                       const double[::1] thresholds,
                       double scale_g, double scale_h,
                       const RegParams* p,
                       HistCandidate* best) noexcept nogil:
    cdef int64_t missing = first_bin + n_value_bins
    cdef int64_t Gq_miss = hist[missing, 0], Hq_miss = hist[missing, 1]
    cdef bint has_missing = Gq_miss != 0 or Hq_miss != 0
    cdef int64_t b, Gq_left = 0, Hq_left = 0
    cdef int64_t last = n_value_bins if has_missing else n_value_bins - 1
    cdef bint l2_only = is_l2_only(p)
    for b in range(last):
        Gq_left += hist[first_bin + b, 0]
        Hq_left += hist[first_bin + b, 1]
        # missing values right (bins 0..b left)
        offer_boundary(best, feature, thresholds[first_bin + b], <int32_t> b,
                       Gq_left, Hq_left, Gq, Hq, parent_score, scale_g,
                       scale_h, p, l2_only, not has_missing)
        if not has_missing or b == n_value_bins - 1:
            continue
        # missing values left (bins 0..b and the missing bin left)
        offer_boundary(best, feature, thresholds[first_bin + b], <int32_t> b,
                       Gq_left + Gq_miss, Hq_left + Hq_miss, Gq, Hq,
                       parent_score, scale_g, scale_h, p, l2_only, True)


def find_best_splits_hist(
        const int64_t[:, :, ::1] hist not None,         # IN (n_hist, n_bins, 2)
        const int64_t[:, ::1] node_sums not None,       # IN (n_nodes, 2) exact totals
        const int64_t[::1] bin_ptr not None,            # IN (n_features + 1,)
        const double[:, ::1] thresholds not None,  # IN (1 or n_nodes, n_bins)
        const uint8_t[:, ::1] feature_allowed not None,  # IN (n_nodes, n_features)
        double scale_g, double scale_h,
        double reg_lambda, double reg_alpha, double max_delta_step,
        double min_child_weight, int n_threads, hist_rows=None,
        categorical=None, int max_cat_to_onehot=4, int max_cat_threshold=64):
    """Best split of each node of a batch from its histogram.

    Node k's histogram is ``hist[hist_rows[k]]`` (rows of a pool of
    histograms), or ``hist[k]`` without ``hist_rows``. ``thresholds[k]``
    holds node k's tree threshold of each "split after bin" (see
    binning.py); a single row is shared by every node. ``categorical``
    (uint8, one flag per feature; None: none) marks the features whose
    value bins are categories, split as the module docstring describes.

    Returns
    -------
    splits : dict of ndarray, each of shape (n_nodes,)
        ``gain``, ``feature`` (-1: none admissible), ``threshold``,
        ``split_bin``, ``default_left``, ``G_left``, ``H_left`` (float64),
        ``Gq_left``, ``Hq_left`` (exact int64 sums) and ``cat_kind``
        (0: numeric, 1: one category right, 2: a prefix of the sorted
        categories left; see ``categorical_left_set``).
    """
    cdef Py_ssize_t n_nodes = node_sums.shape[0], n_bins = hist.shape[1]
    cdef Py_ssize_t n_features = bin_ptr.shape[0] - 1
    cdef const int64_t[::1] rows = _check_inputs(
        hist, node_sums, bin_ptr, thresholds, feature_allowed, n_threads,
        hist_rows)
    cdef const uint8_t[::1] is_cat = _categorical_flags(
        categorical, n_features, max_cat_to_onehot, max_cat_threshold)
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    # about BINS_PER_THREAD bins of scanning per thread, at least
    n_threads = max(1, min(n_threads, (n_nodes * n_bins) // BINS_PER_THREAD))
    cdef double[::1] parent_score = _parent_scores(node_sums, scale_g,
                                                   scale_h, &p)
    cdef Py_ssize_t k, task, n_tasks = n_nodes * n_features
    cdef int tid
    cdef int32_t f
    cdef bint per_node_thresholds = thresholds.shape[0] > 1
    # per thread: twice the categories of the widest categorical feature
    cdef Py_ssize_t cat_room = 2 * _widest_categorical(bin_ptr, is_cat)
    cdef CatEntry* scratch = <CatEntry*> malloc(
        n_threads * max(cat_room, 1) * sizeof(CatEntry))   # 2 per category
    if scratch == NULL:
        raise MemoryError()
    cdef HistCandidate* best = NULL
    try:
        best = _fresh_bests(n_threads * n_nodes)
        for task in prange(n_tasks, nogil=True, schedule="dynamic",
                           num_threads=n_threads):
            tid = threadid()
            k = task // n_features
            f = <int32_t> (task % n_features)
            if not feature_allowed[k, f]:
                continue
            if is_cat[f]:
                scan_categorical(hist[rows[k]], f, bin_ptr[f],
                                 bin_ptr[f + 1] - bin_ptr[f] - 1,
                                 node_sums[k, 0], node_sums[k, 1],
                                 parent_score[k], scale_g, scale_h, &p,
                                 max_cat_to_onehot, max_cat_threshold,
                                 &scratch[tid * cat_room],
                                 &best[tid * n_nodes + k])
            else:
                scan_feature(hist[rows[k]], f, bin_ptr[f],
                             bin_ptr[f + 1] - bin_ptr[f] - 1,
                             node_sums[k, 0], node_sums[k, 1],
                             parent_score[k],
                             thresholds[k if per_node_thresholds else 0],
                             scale_g, scale_h,
                             &p, &best[tid * n_nodes + k])
        return _merged_to_arrays(best, n_threads, n_nodes)
    finally:
        free(best)
        free(scratch)


@cython.boundscheck(True)
@cython.wraparound(True)
def _categorical_flags(categorical, Py_ssize_t n_features,
                       int max_cat_to_onehot, int max_cat_threshold):
    """One uint8 flag per feature (all 0 for None), validated."""
    if categorical is None:
        return np.zeros(n_features, dtype=np.uint8)
    flags = np.ascontiguousarray(categorical, dtype=np.uint8)
    if flags.shape != (n_features,):
        raise ValueError("categorical must have one flag per feature")
    if max_cat_to_onehot < 1 or max_cat_threshold < 1:
        raise ValueError("max_cat_to_onehot and max_cat_threshold must be >= 1")
    return flags


@cython.boundscheck(True)
@cython.wraparound(True)
def _widest_categorical(bin_ptr, is_cat):
    """Most value bins of a categorical feature (0 without one)."""
    widths = np.diff(np.asarray(bin_ptr)) - 1
    flags = np.asarray(is_cat).astype(bool)
    return int(widths[flags].max()) if flags.any() else 0


cdef inline bint entry_before(const CatEntry* a,
                             const CatEntry* b) noexcept nogil:
    """Total order of categories: by key (leaf weight), then by code."""
    if a.key != b.key:
        return a.key < b.key
    return a.code < b.code


# Runs of this many entries are insertion-sorted before merging.
cdef enum:
    SORT_RUN = 16


cdef void sort_entries(CatEntry* a, CatEntry* tmp,
                       Py_ssize_t n) noexcept nogil:
    """Sort ``a[0:n]`` in the total order of ``entry_before`` (insertion
    sort of short runs, then bottom-up merges through ``tmp[0:n]``)."""
    cdef Py_ssize_t lo, hi, mid, i, j, k, width
    cdef CatEntry x
    cdef CatEntry* src = a
    cdef CatEntry* dst = tmp
    cdef CatEntry* swap
    lo = 0
    while lo < n:
        hi = min(lo + SORT_RUN, n)
        for i in range(lo + 1, hi):
            x = a[i]
            j = i
            while j > lo and entry_before(&x, &a[j - 1]):
                a[j] = a[j - 1]
                j -= 1
            a[j] = x
        lo = hi
    width = SORT_RUN
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if entry_before(&src[j], &src[i]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
            lo += 2 * width
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != a:
        memcpy(a, src, n * sizeof(CatEntry))


cdef Py_ssize_t sorted_categories(const int64_t[:, ::1] hist,
                                  int64_t first_bin, int64_t n_categories,
                                  double scale_g, double scale_h,
                                  const RegParams* p, CatEntry* out,
                                  CatEntry* tmp) noexcept nogil:
    """The node's non-empty categories in ``out``, sorted by their own
    optimal leaf weight (``leaf_weight``: -G / (H + lambda) with L1,
    max_delta_step, and 0 for a category lighter than min_child_weight, as
    XGBoost orders them) then by code (``tmp``: room for as many); returns
    how many there are."""
    cdef Py_ssize_t m = 0
    cdef int64_t c, g, h
    cdef double key
    for c in range(n_categories):
        g = hist[first_bin + c, 0]
        h = hist[first_bin + c, 1]
        if g == 0 and h == 0:
            continue
        key = leaf_weight(g / scale_g, h / scale_h, p)
        out[m].key = key if key == key else 0.0   # NaN only if H < 0
        out[m].code = <int32_t> c
        m += 1
    sort_entries(out, tmp, m)
    return m


cdef inline void offer_category_split(HistCandidate* best, int32_t feature,
                                      uint8_t kind, int32_t position,
                                      int64_t Gq_left, int64_t Hq_left,
                                      int64_t Gq, int64_t Hq,
                                      double parent_score, double scale_g,
                                      double scale_h, const RegParams* p,
                                      bint l2_only,
                                      bint default_left) noexcept nogil:
    """A categorical candidate; ties within the feature go to the lower
    ``position`` (the category, or the prefix's last index)."""
    if offer_boundary(best, feature, <double> position, position, Gq_left,
                      Hq_left, Gq, Hq, parent_score, scale_g, scale_h, p,
                      l2_only, default_left):
        best.cat_kind = kind


cdef void scan_categorical(const int64_t[:, ::1] hist,  # (n_bins, 2) one node
                           int32_t feature, int64_t first_bin,
                           int64_t n_categories, int64_t Gq, int64_t Hq,
                           double parent_score, double scale_g,
                           double scale_h, const RegParams* p,
                           int max_cat_to_onehot, int max_cat_threshold,
                           CatEntry* scratch,       # room for 2 n_categories
                           HistCandidate* best) noexcept nogil:
    """The categorical candidates of one feature in one node (see the
    module docstring), in both directions of missing values."""
    cdef int64_t missing = first_bin + n_categories
    cdef int64_t Gq_miss = hist[missing, 0], Hq_miss = hist[missing, 1]
    cdef bint has_missing = Gq_miss != 0 or Hq_miss != 0
    cdef bint l2_only = is_l2_only(p)
    cdef int64_t c, g, h, Gq_left = 0, Hq_left = 0
    cdef Py_ssize_t i, m, last
    if n_categories <= max_cat_to_onehot:
        for c in range(n_categories):
            g = hist[first_bin + c, 0]
            h = hist[first_bin + c, 1]
            if g == 0 and h == 0:
                continue
            # category c right, every other category left; missing right
            offer_category_split(best, feature, ONE_HOT_SPLIT, <int32_t> c,
                                 Gq - g - Gq_miss, Hq - h - Hq_miss, Gq, Hq,
                                 parent_score, scale_g, scale_h, p, l2_only,
                                 not has_missing)
            if has_missing:
                offer_category_split(best, feature, ONE_HOT_SPLIT,
                                     <int32_t> c, Gq - g, Hq - h, Gq, Hq,
                                     parent_score, scale_g, scale_h, p,
                                     l2_only, True)
        return
    m = sorted_categories(hist, first_bin, n_categories, scale_g, scale_h,
                          p, scratch, scratch + n_categories)
    last = m if has_missing else m - 1
    for i in range(last):
        Gq_left += hist[first_bin + scratch[i].code, 0]
        Hq_left += hist[first_bin + scratch[i].code, 1]
        if i + 1 > max_cat_threshold and m - i - 1 > max_cat_threshold:
            continue
        # the first i + 1 categories left, missing right
        offer_category_split(best, feature, SORTED_SPLIT, <int32_t> i,
                             Gq_left, Hq_left, Gq, Hq, parent_score, scale_g,
                             scale_h, p, l2_only, not has_missing)
        if not has_missing or i == m - 1:
            continue
        offer_category_split(best, feature, SORTED_SPLIT, <int32_t> i,
                             Gq_left + Gq_miss, Hq_left + Hq_miss, Gq, Hq,
                             parent_score, scale_g, scale_h, p, l2_only, True)


def categorical_left_set(const int64_t[:, ::1] node_hist not None,  # IN (n_bins, 2)
                         int64_t first_bin, int64_t n_categories,
                         int cat_kind, int32_t split_bin,
                         double scale_g, double scale_h, double reg_lambda,
                         double reg_alpha, double max_delta_step,
                         double min_child_weight):
    """The categories a categorical split sends left.

    Parameters
    ----------
    node_hist : ndarray of shape (n_bins, 2), int64
        The node's histogram the split was found on.
    first_bin, n_categories : int
        The feature's first bin and its number of categories (value bins).
    cat_kind, split_bin : int
        The split's ``cat_kind`` and ``split_bin`` (``find_best_splits_hist``).
    scale_g, scale_h, reg_lambda, reg_alpha, max_delta_step, \
min_child_weight : float
        As given to ``find_best_splits_hist``.

    Returns
    -------
    left : ndarray of shape (n_categories,), bool
        True for the categories that go left: the node's categories of the
        chosen side, and the categories absent from the node join the side
        with more of the node's categories ("the rest").
    rest_left : bool
        Whether "the rest" is the left side.
    """
    if n_categories < 1 or first_bin < 0 or (
            first_bin + n_categories >= node_hist.shape[0]):
        raise ValueError("the feature's bins are outside the histogram")
    if node_hist.shape[1] != 2:
        raise ValueError("node_hist must be (n_bins, 2)")
    if cat_kind == ONE_HOT_SPLIT:
        if not 0 <= split_bin < n_categories:
            raise ValueError("split_bin is not a category")
        left = np.ones(n_categories, dtype=bool)
        left[split_bin] = False
        return left, True
    if cat_kind != SORTED_SPLIT:
        raise ValueError("cat_kind is not a categorical split")
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    cdef CatEntry* entries = <CatEntry*> malloc(
        2 * n_categories * sizeof(CatEntry))
    if entries == NULL:
        raise MemoryError()
    cdef Py_ssize_t m, i
    try:
        with nogil:
            m = sorted_categories(node_hist, first_bin, n_categories, scale_g,
                                  scale_h, &p, entries,
                                  entries + n_categories)
        if not 0 <= split_bin < m:
            raise ValueError("split_bin is beyond the node's categories")
        # The smaller side of the partition is its set; every other category
        # (those absent from the node too) goes the other way, with "the
        # rest", as the one-hot splits send them.
        if split_bin + 1 <= m - split_bin - 1:
            left = np.zeros(n_categories, dtype=bool)
            for i in range(split_bin + 1):
                left[entries[i].code] = True
            return left, False
        left = np.ones(n_categories, dtype=bool)
        for i in range(split_bin + 1, m):
            left[entries[i].code] = False
        return left, True
    finally:
        free(entries)


def category_histograms(
        SortedColumns columns not None,
        const int32_t[::1] features not None,        # IN (n_cat_features,)
        const int64_t[::1] bin_ptr not None,         # IN (n_cat_features + 1,)
        const int32_t[::1] row_slot not None,        # IN (n_rows,) slot or -1
        const int64_t[:, ::1] quantized not None,    # IN (n_rows, 2)
        Py_ssize_t n_slots, int n_threads):
    """Histograms over the category codes of categorical features, for
    every open node (slot) of a level, from their presorted columns.

    Categorical feature ``features[j]`` owns the bins ``bin_ptr[j] ..
    bin_ptr[j+1]-1``: one per category code, then its missing bin. An
    entry's value is its category code; a value outside [0, n_categories)
    counts as missing (never read out of bounds; the callers validate the
    codes first). The rows of a node without an entry for the feature are
    missing, or, when the columns' absent entries are 0.0
    (``columns.zero_absent``), category 0 (the code stored as 0.0), while
    their stored missing entries are missing. Categories are discrete, so
    these histograms hold every split a categorical feature has: scanning
    them (``find_best_splits_hist``) is exact.

    Parallel over the features (each owns its bins); the integer sums do not
    depend on the number of threads.

    Returns
    -------
    hist : ndarray of shape (n_slots, n_bins, 2), int64
    node_sums : ndarray of shape (n_slots, 2), int64
        Each slot's totals over its rows.
    """
    _check_category_inputs(columns, features, bin_ptr, row_slot, quantized,
                           n_slots, n_threads)
    cdef Py_ssize_t n_cat = features.shape[0]
    cdef Py_ssize_t n_bins = bin_ptr[n_cat]
    hist_array = np.zeros((n_slots, n_bins, 2), dtype=np.int64)
    sums_array = np.zeros((n_slots, 2), dtype=np.int64)
    cdef int64_t[:, :, ::1] hist = hist_array
    cdef int64_t[:, ::1] sums = sums_array
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const float[::1] values = columns.values
    cdef const int32_t[::1] rows = columns.rows
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    cdef const int32_t[::1] missing_rows = columns.missing_rows
    cdef bint zero_absent = columns.zero_absent
    cdef Py_ssize_t r, j, s, n_rows = row_slot.shape[0]
    cdef int64_t k, b, first, missing, g, h
    cdef int32_t f, row, slot
    cdef float v
    if n_slots == 0 or n_cat == 0:
        return hist_array, sums_array
    with nogil:
        for r in range(n_rows):
            slot = row_slot[r]
            if slot >= 0:
                sums[slot, 0] += quantized[r, 0]
                sums[slot, 1] += quantized[r, 1]
    for j in prange(n_cat, nogil=True, schedule="dynamic",
                    num_threads=max(1, min(n_threads, n_cat))):
        f = features[j]
        first = bin_ptr[j]
        missing = bin_ptr[j + 1] - 1
        for k in range(col_ptr[f], col_ptr[f + 1]):
            row = rows[k]
            slot = row_slot[row]
            if slot < 0:
                continue
            v = values[k]
            if v >= 0 and v < missing - first:
                b = first + <int64_t> v
            else:
                b = missing
            hist[slot, b, 0] += quantized[row, 0]
            hist[slot, b, 1] += quantized[row, 1]
        if zero_absent:
            for k in range(missing_ptr[f], missing_ptr[f + 1]):
                row = missing_rows[k]
                slot = row_slot[row]
                if slot < 0:
                    continue
                hist[slot, missing, 0] += quantized[row, 0]
                hist[slot, missing, 1] += quantized[row, 1]
        # the rows without an entry: the node's totals minus the entries'
        for s in range(n_slots):
            g = sums[s, 0]
            h = sums[s, 1]
            for b in range(first, missing + 1):
                g = g - hist[s, b, 0]
                h = h - hist[s, b, 1]
            b = first if zero_absent else missing
            hist[s, b, 0] += g
            hist[s, b, 1] += h
    return hist_array, sums_array


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_category_inputs(columns, features, bin_ptr, row_slot, quantized,
                           n_slots, n_threads):
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1")
    feats = np.asarray(features)
    ptr = np.asarray(bin_ptr)
    if ptr.shape != (feats.shape[0] + 1,) or ptr[0] != 0 or np.any(
            np.diff(ptr) < 2):
        raise ValueError("bin_ptr must rise from 0, with at least one "
                         "category and the missing bin per feature")
    if feats.size and (feats.min() < 0 or feats.max() >= columns.n_features):
        raise ValueError("features outside [0, n_features)")
    if row_slot.shape[0] != columns.n_rows or quantized.shape[0] != (
            columns.n_rows) or quantized.shape[1] != 2:
        raise ValueError("row_slot (n_rows,) and quantized (n_rows, 2)")
    if n_slots < 0:
        raise ValueError("n_slots must be >= 0")
    slots = np.asarray(row_slot)
    if slots.size and (slots.min() < -1 or slots.max() >= n_slots):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")


cdef class BinnedColumns:
    """Presorted columns with the value bin of every entry: the histogram
    finder's input for sparse data, where a dense bin matrix is out of the
    question. Validated once: every code is a value bin of its feature.

    Parameters
    ----------
    columns : SortedColumns
    entry_codes : array-like of shape (n_entries,), int32
        Value bin of each presorted entry (nondecreasing within a column).
    bin_ptr : array-like of shape (n_features + 1,), int64
        Feature f owns bins ``bin_ptr[f] .. bin_ptr[f+1]-1``, the last its
        missing bin (as in ``binning.HistogramLayout``).
    zero_codes : array-like of shape (n_features,), int32, optional
        Value bin of 0.0 in each feature: needed when the columns' absent
        entries are 0.0 (``columns.zero_absent``).
    """

    cdef readonly SortedColumns columns
    cdef readonly object entry_codes
    cdef readonly object bin_ptr
    cdef readonly object zero_codes

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, SortedColumns columns not None, entry_codes, bin_ptr,
                 zero_codes=None):
        entry_codes = np.ascontiguousarray(entry_codes, dtype=np.int32)
        bin_ptr = np.ascontiguousarray(bin_ptr, dtype=np.int64)
        col_ptr = np.asarray(columns.col_ptr)
        if bin_ptr.shape != (columns.n_features + 1,) or bin_ptr[0] != 0 or (
                np.any(np.diff(bin_ptr) < 1)):
            raise ValueError("bin_ptr must rise from 0, >= 1 bin per feature")
        if entry_codes.shape != (col_ptr[-1],):
            raise ValueError("one code per presorted entry")
        n_value_bins = np.repeat(np.diff(bin_ptr) - 1, np.diff(col_ptr))
        if entry_codes.size and (entry_codes.min() < 0
                                 or np.any(entry_codes >= n_value_bins)):
            raise ValueError("an entry code is not a value bin of its feature")
        if zero_codes is None:
            if columns.zero_absent:
                raise ValueError("zero_codes needed: absent entries are 0.0")
            zero_codes = np.zeros(columns.n_features, dtype=np.int32)
        zero_codes = np.ascontiguousarray(zero_codes, dtype=np.int32)
        if zero_codes.shape != (columns.n_features,) or (
                zero_codes.size and (zero_codes.min() < 0 or np.any(
                    zero_codes >= np.diff(bin_ptr) - 1))):
            raise ValueError("zero_codes must be a value bin per feature")
        self.zero_codes = zero_codes
        self.columns = columns
        self.entry_codes = entry_codes
        self.bin_ptr = bin_ptr


def find_best_splits_columns(
        BinnedColumns binned not None,
        const double[::1] thresholds not None,          # IN (n_bins,)
        const int32_t[::1] row_slot not None,           # IN (n_rows,) slot or -1
        const int64_t[:, ::1] quantized not None,       # IN (n_rows, 2)
        const int64_t[:, ::1] node_sums not None,       # IN (n_nodes, 2)
        const uint8_t[:, ::1] feature_allowed not None,  # IN (n_nodes, n_features)
        double scale_g, double scale_h,
        double reg_lambda, double reg_alpha, double max_delta_step,
        double min_child_weight, int n_threads):
    """``find_best_splits_hist`` for all open nodes of a level, from the
    presorted columns instead of histograms: cost linear in the stored
    entries, whatever the number of bins and nodes.

    Each feature's entries are walked twice (in parallel over features):
    once for each node's sums of present entries (its missing sums are the
    node totals minus them), once in value order, where a change of bin
    inside a node is a boundary. The boundaries and thresholds offered are
    exactly the classes of equivalent bins the histogram scan distinguishes,
    each at its lowest bin, with the same arithmetic: the result equals
    ``find_best_splits_hist`` on the nodes' histograms (splits with an
    empty child, which never split a node, are not offered).
    """
    cdef SortedColumns columns = binned.columns
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef Py_ssize_t n_features = columns.n_features
    _check_columns_inputs(binned, thresholds, row_slot, quantized, node_sums,
                          feature_allowed, n_threads)
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    cdef bint l2_only = is_l2_only(&p)
    cdef double[::1] parent_score = _parent_scores(node_sums, scale_g,
                                                   scale_h, &p)
    # per thread and node: present sums, running sums, missing sums, zero
    # block pending, last bin seen
    cdef int64_t[:, :, ::1] sums = np.zeros((n_threads, max(n_nodes, 1), 8),
                                            dtype=np.int64)
    cdef int32_t[:, ::1] last_bin = np.full((n_threads, max(n_nodes, 1)), -1,
                                            dtype=np.int32)
    cdef int32_t[:, ::1] touched = np.empty((n_threads, max(n_nodes, 1)),
                                            dtype=np.int32)
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    cdef ColumnScan scan
    scan.col_ptr = &col_ptr[0]
    scan.rows = _int32_pointer(columns.rows)
    scan.codes = _int32_pointer(binned.entry_codes)
    scan.missing_ptr = &missing_ptr[0]
    scan.missing_rows = _int32_pointer(columns.missing_rows)
    scan.zero_absent = columns.zero_absent
    cdef const int32_t[::1] zero_codes = binned.zero_codes
    cdef const int64_t[::1] bin_ptr = binned.bin_ptr
    cdef Py_ssize_t f
    cdef int tid
    cdef HistCandidate* best = _fresh_bests(n_threads * n_nodes)
    try:
        for f in prange(n_features, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            tid = threadid()
            scan_column(&scan, <int32_t> f, bin_ptr[f + 1] - bin_ptr[f] - 1,
                        zero_codes[f], &thresholds[bin_ptr[f]], row_slot,
                        quantized, node_sums, feature_allowed, parent_score,
                        scale_g, scale_h, &p, l2_only, &sums[tid, 0, 0],
                        &last_bin[tid, 0], &touched[tid, 0],
                        &best[tid * n_nodes])
        return _merged_to_arrays(best, n_threads, n_nodes)
    finally:
        free(best)


ctypedef struct ColumnScan:
    # the presorted columns a level's scan walks
    const int64_t* col_ptr
    const int32_t* rows
    const int32_t* codes
    const int64_t* missing_ptr
    const int32_t* missing_rows
    bint zero_absent


cdef const int32_t* _int32_pointer(array):
    """Data pointer of a validated int32 array (NULL when empty)."""
    cdef const int32_t[::1] view = array
    return &view[0] if view.shape[0] else NULL


# Fields of a node's scan state (int64 each).
cdef enum:
    PRESENT_G = 0      # sums of its stored present entries
    PRESENT_H = 1
    LEFT_G = 2         # running sums of the walk so far
    LEFT_H = 3
    MISSING_G = 4      # sums of its stored missing entries (absent = 0.0)
    MISSING_H = 5
    ZERO_PENDING = 6   # its zero block is still to be added to the walk
    STATE_SIZE = 8


cdef inline int64_t* touch(int32_t node, int64_t* sums, int32_t* last_bin,
                           int32_t* touched, Py_ssize_t* n_touched) noexcept nogil:
    """The node's state, zeroed when the feature first meets the node."""
    cdef int64_t* s = &sums[STATE_SIZE * node]
    cdef int i
    if last_bin[node] == -1:
        last_bin[node] = -2
        touched[n_touched[0]] = node
        n_touched[0] += 1
        for i in range(STATE_SIZE):
            s[i] = 0
    return s


cdef inline void walk_step(HistCandidate* best, int32_t f, int32_t node,
                           int64_t* s, int32_t* last_bin, int32_t code,
                           int64_t qg, int64_t qh, int64_t Gq_miss,
                           int64_t Hq_miss, int64_t n_value_bins,
                           const double* thresholds,
                           const int64_t[:, ::1] node_sums,
                           const double[::1] parent_score,
                           double scale_g, double scale_h,
                           const RegParams* p, bint l2_only) noexcept nogil:
    """The node's next entries in value order (bin ``code``, sums qg, qh):
    offer the boundaries the histogram scan would see below them, then
    add them to the left side."""
    cdef bint has_missing = Gq_miss != 0 or Hq_miss != 0
    cdef int32_t b = last_bin[node]
    if b == -2:
        # the node's first entry: bins below it hold no present entry;
        # at bin 0, missing values alone may go left
        if code > 0 and has_missing:
            offer_boundary(best, f, thresholds[0], 0, Gq_miss, Hq_miss,
                           node_sums[node, 0], node_sums[node, 1],
                           parent_score[node], scale_g, scale_h, p, l2_only,
                           True)
    elif code != b:
        offer_boundary(best, f, thresholds[b], b, s[LEFT_G], s[LEFT_H],
                       node_sums[node, 0], node_sums[node, 1],
                       parent_score[node], scale_g, scale_h, p, l2_only,
                       not has_missing)
        if has_missing and b != n_value_bins - 1:
            offer_boundary(best, f, thresholds[b], b, s[LEFT_G] + Gq_miss,
                           s[LEFT_H] + Hq_miss, node_sums[node, 0],
                           node_sums[node, 1], parent_score[node], scale_g,
                           scale_h, p, l2_only, True)
    s[LEFT_G] += qg
    s[LEFT_H] += qh
    last_bin[node] = code


cdef void scan_column(const ColumnScan* scan, int32_t f,
                      int64_t n_value_bins, int32_t zero_code,
                      const double* thresholds,      # feature f's bins
                      const int32_t[::1] row_slot,
                      const int64_t[:, ::1] quantized,
                      const int64_t[:, ::1] node_sums,
                      const uint8_t[:, ::1] feature_allowed,
                      const double[::1] parent_score,
                      double scale_g, double scale_h,
                      const RegParams* p, bint l2_only,
                      int64_t* sums,        # (n_nodes, STATE_SIZE) this thread's
                      int32_t* last_bin,    # (n_nodes,) -1 between calls
                      int32_t* touched,     # (n_nodes,) scratch
                      HistCandidate* best) noexcept nogil:
    """One feature for every node (see find_best_splits_columns)."""
    cdef int64_t k, Gq_miss, Hq_miss
    cdef Py_ssize_t n_touched = 0, i
    cdef int32_t node, code, row
    cdef int64_t* s
    cdef bint zero_absent = scan.zero_absent
    # pass 0 (absent = 0.0): sums of the stored missing entries
    if zero_absent:
        for k in range(scan.missing_ptr[f], scan.missing_ptr[f + 1]):
            row = scan.missing_rows[k]
            node = row_slot[row]
            if node < 0 or not feature_allowed[node, f]:
                continue
            s = touch(node, sums, last_bin, touched, &n_touched)
            s[MISSING_G] += quantized[row, 0]
            s[MISSING_H] += quantized[row, 1]
    # pass 1: sums of the present entries
    for k in range(scan.col_ptr[f], scan.col_ptr[f + 1]):
        row = scan.rows[k]
        node = row_slot[row]
        if node < 0 or not feature_allowed[node, f]:
            continue
        s = touch(node, sums, last_bin, touched, &n_touched)
        s[PRESENT_G] += quantized[row, 0]
        s[PRESENT_H] += quantized[row, 1]
    if zero_absent:
        for i in range(n_touched):
            s = &sums[STATE_SIZE * touched[i]]
            s[ZERO_PENDING] = 1
    # pass 2: boundaries in value order; the zero block (the rows with no
    # stored entry) joins in at the bin of 0.0
    for k in range(scan.col_ptr[f], scan.col_ptr[f + 1]):
        row = scan.rows[k]
        node = row_slot[row]
        if node < 0 or not feature_allowed[node, f]:
            continue
        s = &sums[STATE_SIZE * node]
        code = scan.codes[k]
        _missing_sums(s, node, node_sums, zero_absent, &Gq_miss, &Hq_miss)
        if s[ZERO_PENDING] and code > zero_code:
            _add_zero_block(best, f, node, s, last_bin, zero_code, Gq_miss,
                            Hq_miss, n_value_bins, thresholds, node_sums,
                            parent_score, scale_g, scale_h, p, l2_only)
        walk_step(&best[node], f, node, s, last_bin, code, quantized[row, 0],
                  quantized[row, 1], Gq_miss, Hq_miss, n_value_bins,
                  thresholds, node_sums, parent_score, scale_g, scale_h, p,
                  l2_only)
    # after each node's last entry: every present entry left, missing right
    for i in range(n_touched):
        node = touched[i]
        s = &sums[STATE_SIZE * node]
        _missing_sums(s, node, node_sums, zero_absent, &Gq_miss, &Hq_miss)
        if s[ZERO_PENDING]:
            _add_zero_block(best, f, node, s, last_bin, zero_code, Gq_miss,
                            Hq_miss, n_value_bins, thresholds, node_sums,
                            parent_score, scale_g, scale_h, p, l2_only)
        if (Gq_miss != 0 or Hq_miss != 0) and last_bin[node] >= 0:
            code = last_bin[node]
            offer_boundary(&best[node], f, thresholds[code], code,
                           s[LEFT_G], s[LEFT_H], node_sums[node, 0],
                           node_sums[node, 1], parent_score[node], scale_g,
                           scale_h, p, l2_only, False)
        last_bin[node] = -1


cdef inline void _missing_sums(const int64_t* s, int32_t node,
                               const int64_t[:, ::1] node_sums,
                               bint zero_absent, int64_t* Gq_miss,
                               int64_t* Hq_miss) noexcept nogil:
    """The node's missing sums: its stored missing entries' when absent
    entries are 0.0, else its totals minus its present entries'."""
    if zero_absent:
        Gq_miss[0] = s[MISSING_G]
        Hq_miss[0] = s[MISSING_H]
    else:
        Gq_miss[0] = node_sums[node, 0] - s[PRESENT_G]
        Hq_miss[0] = node_sums[node, 1] - s[PRESENT_H]


cdef inline void _add_zero_block(HistCandidate* best, int32_t f, int32_t node,
                                 int64_t* s, int32_t* last_bin,
                                 int32_t zero_code, int64_t Gq_miss,
                                 int64_t Hq_miss, int64_t n_value_bins,
                                 const double* thresholds,
                                 const int64_t[:, ::1] node_sums,
                                 const double[::1] parent_score,
                                 double scale_g, double scale_h,
                                 const RegParams* p, bint l2_only) noexcept nogil:
    """Walk the node's zero block: its totals minus its stored entries, in
    the bin of 0.0 (skipped when empty, as an empty bin is)."""
    cdef int64_t zero_g = (node_sums[node, 0] - s[PRESENT_G] - s[MISSING_G])
    cdef int64_t zero_h = (node_sums[node, 1] - s[PRESENT_H] - s[MISSING_H])
    s[ZERO_PENDING] = 0
    if zero_g == 0 and zero_h == 0:
        return
    walk_step(&best[node], f, node, s, last_bin, zero_code, zero_g, zero_h,
              Gq_miss, Hq_miss, n_value_bins, thresholds, node_sums,
              parent_score, scale_g, scale_h, p, l2_only)


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_columns_inputs(BinnedColumns binned, thresholds, row_slot,
                          quantized, node_sums, feature_allowed, n_threads):
    columns = binned.columns
    n_nodes = node_sums.shape[0]
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1")
    if thresholds.shape[0] != binned.bin_ptr[-1]:
        raise ValueError("one threshold per bin")
    if row_slot.shape[0] != columns.n_rows or quantized.shape[0] != (
            columns.n_rows) or quantized.shape[1] != 2:
        raise ValueError("row_slot (n_rows,) and quantized (n_rows, 2)")
    slots = np.asarray(row_slot)
    if slots.size and (slots.min() < -1 or slots.max() >= n_nodes):
        raise ValueError("row_slot holds a slot outside [-1, n_nodes)")
    if node_sums.shape[1] != 2:
        raise ValueError("node_sums must be (n_nodes, 2)")
    if feature_allowed.shape[0] != n_nodes or (
            feature_allowed.shape[1] != columns.n_features):
        raise ValueError("feature_allowed must be (n_nodes, n_features)")


cdef double[::1] _parent_scores(const int64_t[:, ::1] node_sums,
                                double scale_g, double scale_h,
                                const RegParams* p):
    """Each node's own score, from its exact sums."""
    cdef Py_ssize_t k, n_nodes = node_sums.shape[0]
    cdef double[::1] scores = np.empty(max(n_nodes, 1))
    for k in range(n_nodes):
        scores[k] = leaf_score(node_sums[k, 0] / scale_g,
                               node_sums[k, 1] / scale_h, p)
    return scores


cdef HistCandidate* _fresh_bests(Py_ssize_t count) except NULL:
    """``count`` candidates (threads x nodes) holding no split yet; the
    caller frees them."""
    cdef HistCandidate* best = <HistCandidate*> malloc(
        max(count, 1) * sizeof(HistCandidate))
    if best == NULL:
        raise MemoryError()
    cdef Py_ssize_t k
    for k in range(count):
        reset_candidate(&best[k].split)
        best[k].split_bin = -1
        best[k].cat_kind = NUMERIC_SPLIT
    return best


cdef dict _merged_to_arrays(HistCandidate* best, int n_threads,
                            Py_ssize_t n_nodes):
    """Merge the threads' bests (``best[t * n_nodes + k]``) into thread 0's
    under the total order, then as arrays."""
    cdef Py_ssize_t t, k
    cdef HistCandidate* c
    for t in range(1, n_threads):
        for k in range(n_nodes):
            c = &best[t * n_nodes + k]
            if c.split.feature >= 0 and is_better(
                    c.split.gain, c.split.feature, c.split.threshold,
                    &best[k].split):
                best[k] = c[0]
    return _to_arrays(best, n_nodes)


cdef dict _to_arrays(const HistCandidate* best, Py_ssize_t n):
    out = {name: np.empty(n, dtype=dtype) for name, dtype in (
        ("gain", np.float64), ("feature", np.int32), ("threshold", np.float64),
        ("split_bin", np.int32), ("default_left", np.uint8),
        ("G_left", np.float64), ("H_left", np.float64),
        ("Gq_left", np.int64), ("Hq_left", np.int64),
        ("cat_kind", np.uint8))}
    cdef Py_ssize_t k
    for k in range(n):
        out["gain"][k] = best[k].split.gain
        out["feature"][k] = best[k].split.feature
        out["threshold"][k] = best[k].split.threshold
        out["split_bin"][k] = best[k].split_bin
        out["default_left"][k] = best[k].split.default_left
        out["G_left"][k] = best[k].split.G_left
        out["H_left"][k] = best[k].split.H_left
        out["Gq_left"][k] = best[k].Gq_left
        out["Hq_left"][k] = best[k].Hq_left
        out["cat_kind"][k] = best[k].cat_kind
    return out


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_inputs(hist, node_sums, bin_ptr, thresholds, feature_allowed,
                  n_threads, hist_rows):
    """Validates the inputs; returns the int64 histogram row of each node."""
    n_nodes, n_bins = node_sums.shape[0], hist.shape[1]
    n_features = bin_ptr.shape[0] - 1
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1")
    if hist.shape[2] != 2 or node_sums.shape[1] != 2:
        raise ValueError("hist must be (n_hist, n_bins, 2), node_sums (n_nodes, 2)")
    if hist_rows is None:
        if hist.shape[0] != n_nodes:
            raise ValueError("hist must have one histogram per node")
        hist_rows = np.arange(n_nodes, dtype=np.int64)
    hist_rows = np.ascontiguousarray(hist_rows, dtype=np.int64)
    if hist_rows.shape != (n_nodes,) or (n_nodes and (
            hist_rows.min() < 0 or hist_rows.max() >= hist.shape[0])):
        raise ValueError("hist_rows must hold a row of hist for each node")
    ptr = np.asarray(bin_ptr)
    if n_features < 0 or ptr[0] != 0 or ptr[-1] != n_bins or np.any(
            np.diff(ptr) < 1):
        raise ValueError("bin_ptr must rise from 0 to n_bins, >= 1 bin each")
    if thresholds.shape[1] != n_bins or thresholds.shape[0] not in (1, n_nodes):
        raise ValueError("thresholds must be (1 or n_nodes, n_bins)")
    if feature_allowed.shape[0] != n_nodes or (
            feature_allowed.shape[1] != n_features):
        raise ValueError("feature_allowed must be (n_nodes, n_features)")
    return hist_rows
