"""Categorical splits: the scan of a categorical feature's histogram, the
left set of the chosen split, and histograms over category codes.

A categorical feature has one value bin per category code. Its splits send a
set of categories left: with at most ``max_cat_to_onehot`` categories, one
category goes right and the rest left (the split a one-hot encoding would
make); otherwise the node's non-empty categories are sorted by their own
optimal leaf weight ``-G / (H + lambda)`` (through ``_gain.leaf_weight``:
L1, max_delta_step, and weight 0 for a category lighter than
min_child_weight, which keeps rare categories from the ends of the order, as
XGBoost does) and every prefix of that order is a candidate left set
(Fisher's result: without regularisation the best partition is one of them),
of which one side holds at most ``max_cat_threshold`` categories. Both
directions of missing values are scanned as for numeric features. Only
both ends of the order can be cut, so a node with more than ``2
max_cat_threshold + 1`` non-empty categories has just its ``max_cat_threshold``
least and greatest selected (two bounded heaps, linear in the categories)
and sorted, not the whole order: the same candidates, the same sums, for a
fraction of the sort (``ordered_categories``).

``scan_categorical`` (``_categorical_scan.pxd``) is called by the histogram
finder (``_hist_split.find_best_splits_hist``) for the features flagged
categorical, under the same total order as the numeric candidates;
``categorical_left_set`` turns the chosen candidate into its set.
``category_histograms`` builds the histograms over category codes that the
level-wise finders scan (``finders/categorical.py``).
"""

import numpy as np

cimport cython

from cython.parallel cimport prange
from libc.math cimport frexp
from libc.stdint cimport int8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from .._parallel cimport capped, threads_for_work
from ._checks cimport distinct_in_range
from ._common cimport (fixed_point, int32_t, int64_t, prefetch, uint8_t,
                      weight_pointer)
from ._context cimport SplitContext, reg_params
from ._gain cimport NodeBounds, RegParams, is_l2_only, leaf_weight
from ._hist_split cimport (HistCandidate, ONE_HOT_SPLIT, SORTED_SPLIT,
                           offer_boundary)
from ._presorted cimport SortedColumns


@cython.boundscheck(True)
@cython.wraparound(True)
def _categorical_flags(categorical, Py_ssize_t n_features):
    """One uint8 flag per feature (all 0 for None), validated."""
    if categorical is None:
        return np.zeros(n_features, dtype=np.uint8)
    flags = np.ascontiguousarray(categorical, dtype=np.uint8)
    if flags.shape != (n_features,):
        raise ValueError("categorical must have one flag per feature")
    return flags


@cython.boundscheck(True)
def _widest_categorical(const int64_t[::1] bin_ptr not None,
                        const uint8_t[::1] is_cat not None):
    """Most value bins of a categorical feature (0 without one): one pass
    in C, as the histogram scan asks it on every call (numpy's diff and
    mask took ~8 us of a scan's ~14 us fixed cost)."""
    # the scan sizes each thread's CatEntry scratch from this: it must
    # cover the widest categorical feature (2 entries a category)
    if bin_ptr.shape[0] != is_cat.shape[0] + 1:
        raise ValueError("one categorical flag per feature of bin_ptr")
    cdef Py_ssize_t f
    cdef int64_t widest = 0
    for f in range(is_cat.shape[0]):
        if is_cat[f]:
            widest = max(widest, bin_ptr[f + 1] - bin_ptr[f] - 1)
    return widest


# where an empty list of codes points (a list is NULL only for "every
# category")
cdef int32_t _NO_CODE = 0


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
    # a stable merge sort written out (no qsort): qsort is not stable and
    # takes a comparison callback; under a total order the result is one
    # permutation whatever the algorithm, which the left set relies on
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
    # bottom-up merges of runs of width, 2 width, ...: src and dst swap
    # roles each round, so no copy back until the end
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


ctypedef struct KeyCounts:
    # how many of a node's non-empty categories have each sign of key
    Py_ssize_t negative, zero, positive


# How many listed codes ahead the walks over a list (_walk_categories,
# _subtract_feature) prefetch their bins: enough to cover a miss to memory
# at a few nanoseconds an entry (a deep node's 64-node level of a
# 30,000-category feature: its scan 3.8 -> 3.0 ms on one thread).
cdef enum:
    WALK_AHEAD = 16


cdef inline Py_ssize_t _visit_room(const int32_t* codes, Py_ssize_t n_codes,
                                   int64_t n_categories) noexcept nogil:
    """How many categories a walk visits at most: the listed codes (no more
    than n_categories), or every category without a list."""
    return min(n_codes, n_categories) if codes != NULL else n_categories


cdef inline double _unscale(int64_t q, double scale, double inverse,
                           bint exact_inverse) noexcept nogil:
    """``q / scale`` (a fixed-point sum as a float), as a product when the
    scale is a power of two: ``inverse`` (1 / scale) is then exact, and
    ``q * inverse`` is the same exact quotient rounded once, bit for bit,
    without a division's latency."""
    if exact_inverse:
        return q * inverse
    return q / scale


cdef inline bint _is_power_of_two(double scale) noexcept nogil:
    """Whether ``scale`` is a positive power of two (``FixedPointGradients``'
    scales are; scales given by distributed training need not be)."""
    cdef int exponent
    return scale > 0.0 and frexp(scale, &exponent) == 0.5


cdef void _walk_categories(const int64_t[:, ::1] hist,
                           int64_t first_bin, int64_t n_categories,
                           const int32_t* codes, Py_ssize_t n_codes,
                           double scale_g, double scale_h,
                           const RegParams* p, CatEntry* out,
                           int64_t* totals, int32_t* present,
                           KeyCounts* counts) noexcept nogil:
    """The node's non-empty categories, each keyed by its own optimal leaf
    weight: those of a non-zero key at ``out[0:nz]`` in visiting order,
    those of key 0 (±0.0) at the back of the room, ``out[room - z:room]``
    in reverse visiting order (``room``: ``_visit_room``), so that the
    ends' selection can pass over them (``ordered_categories``).
    ``totals``, ``present``: as ``node_categories``; ``counts`` receives
    the numbers of each sign."""
    cdef Py_ssize_t i, n = _visit_room(codes, n_codes, n_categories)
    cdef Py_ssize_t nz = 0, z = 0, negative = 0
    cdef int64_t c, g, h, G = 0, H = 0
    cdef double key
    cdef CatEntry* slot
    cdef bint exact_g = _is_power_of_two(scale_g)
    cdef bint exact_h = _is_power_of_two(scale_h)
    cdef double to_g = 1.0 / scale_g, to_h = 1.0 / scale_h
    # empty categories of the node are left out: they would sit anywhere
    # in the order and add no candidate (absent categories follow "the
    # rest" at prediction, see categorical_left_set)
    for i in range(n):
        c = codes[i] if codes != NULL else i
        if codes != NULL and i + WALK_AHEAD < n:
            # a listed walk reads scattered bins of a histogram too large
            # for the cache: ask for the bin WALK_AHEAD codes on early
            # (a hint only: an out-of-range code faults nothing)
            prefetch(&hist[0, 0] + 2 * (first_bin + codes[i + WALK_AHEAD]))
        if codes != NULL and not 0 <= c < n_categories:
            continue
        g = hist[first_bin + c, 0]
        h = hist[first_bin + c, 1]
        if g == 0 and h == 0:
            continue
        G += g
        H += h
        key = leaf_weight(_unscale(g, scale_g, to_g, exact_g),
                          _unscale(h, scale_h, to_h, exact_h), p)
        if key == 0.0 or key != key:   # NaN only if H < 0: key 0
            slot = &out[n - 1 - z]
            slot.key = 0.0 if key != key else key
            z += 1
        else:
            slot = &out[nz]
            slot.key = key
            negative += key < 0.0
            nz += 1
        slot.code = <int32_t> c
        if present != NULL:
            present[nz + z - 1] = <int32_t> c
    totals[0] = G
    totals[1] = H
    counts.negative, counts.zero = negative, z
    counts.positive = nz - negative


cdef void _gather_zeros(CatEntry* out, Py_ssize_t room,
                        const KeyCounts* counts) noexcept nogil:
    """Move the key-0 entries of ``_walk_categories`` from the back of
    the room to just after the others, back in visiting order."""
    cdef Py_ssize_t nz = counts.negative + counts.positive, j
    cdef CatEntry x
    # the block out[room - z:room] reversed into out[nz:nz + z]; the two
    # overlap when the room is nearly full, so swap from both ends in place
    # first, then move the (now ordered) block down
    cdef Py_ssize_t lo = room - counts.zero, hi = room - 1
    while lo < hi:
        x = out[lo]
        out[lo] = out[hi]
        out[hi] = x
        lo += 1
        hi -= 1
    if nz != room - counts.zero:
        for j in range(counts.zero):
            out[nz + j] = out[room - counts.zero + j]


cdef Py_ssize_t node_categories(const int64_t[:, ::1] hist,
                                int64_t first_bin, int64_t n_categories,
                                const int32_t* codes, Py_ssize_t n_codes,
                                double scale_g, double scale_h,
                                const RegParams* p, CatEntry* out,
                                int64_t* totals,
                                int32_t* present) noexcept nogil:
    """The node's non-empty categories in ``out``, each keyed by its own
    optimal leaf weight (``leaf_weight``: -G / (H + lambda) with L1,
    max_delta_step, and 0 for a category lighter than min_child_weight,
    as XGBoost orders them); returns how many there are. ``totals[0:2]``
    receives the categories' summed (G, H) in fixed point.

    The categories visited are ``codes[0:n_codes]`` (a superset of the
    node's non-empty categories, ``NodeCategoryLists``), or every code
    ``0 .. n_categories - 1`` when ``codes`` is NULL; a listed code
    outside that range is skipped (never read out of bounds). ``out`` has
    room for ``_visit_room`` entries. Everything after is the same
    whichever superset is visited and in whatever order: the sums are
    integers, and the ends and sort below follow a strict total order.
    ``present`` (unless NULL) receives the non-empty codes in visiting
    order: the list the node's children may visit."""
    cdef KeyCounts counts
    _walk_categories(hist, first_bin, n_categories, codes, n_codes, scale_g,
                     scale_h, p, out, totals, present, &counts)
    _gather_zeros(out, _visit_room(codes, n_codes, n_categories), &counts)
    return counts.negative + counts.zero + counts.positive


cdef inline void sift_down(CatEntry* heap, Py_ssize_t n, bint max_heap,
                           Py_ssize_t i) noexcept nogil:
    """Restore the heap below ``heap[i]``: the greatest entry (in the order
    of ``entry_before``) on top of a max-heap, the least on a min-heap."""
    cdef Py_ssize_t child
    cdef CatEntry x = heap[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        # the child to rise: the greater one (max-heap) or the lesser
        if child + 1 < n and (
                entry_before(&heap[child], &heap[child + 1]) == max_heap):
            child += 1
        if entry_before(&x, &heap[child]) != max_heap:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = x


cdef void select_ends(const CatEntry* entries, Py_ssize_t m,
                      Py_ssize_t keep, CatEntry* low,
                      CatEntry* high) noexcept nogil:
    """The ``keep`` least entries of ``entries[0:m]`` into ``low`` and the
    ``keep`` greatest into ``high`` (``1 <= keep <= m``; neither sorted).
    A bounded heap each: under the strict total order of ``entry_before``
    the selected sets are exactly a full sort's ends, whatever order the
    entries are visited in."""
    _select_least(entries, m, keep, low)
    _select_greatest(entries, m, keep, high)


cdef void _select_least(const CatEntry* entries, Py_ssize_t m,
                        Py_ssize_t keep, CatEntry* low) noexcept nogil:
    """The ``keep`` least entries into the max-heap ``low`` (its top the
    greatest of the least so far), visiting the entries first to last."""
    cdef Py_ssize_t i
    memcpy(low, entries, keep * sizeof(CatEntry))
    for i in range(keep // 2 - 1, -1, -1):
        sift_down(low, keep, True, i)
    for i in range(keep, m):
        # most entries have a greater key than the top: one comparison
        if entries[i].key > low[0].key:
            continue
        if entry_before(&entries[i], &low[0]):
            low[0] = entries[i]
            sift_down(low, keep, True, 0)


cdef void _select_greatest(const CatEntry* entries, Py_ssize_t m,
                           Py_ssize_t keep, CatEntry* high) noexcept nogil:
    """The ``keep`` greatest entries into the min-heap ``high``, visiting
    the entries last to first. A node's entries come in rising codes (the
    codes of a scan, and the lists handed down, are in rising order), and
    many share one key (0: the categories lighter than min_child_weight).
    Visited first to last, each such entry was greater than the top it
    tied and replaced it (a sift per entry); last to first, it is less
    and stays out on two comparisons."""
    cdef Py_ssize_t i
    memcpy(high, entries + m - keep, keep * sizeof(CatEntry))
    for i in range(keep // 2 - 1, -1, -1):
        sift_down(high, keep, False, i)
    for i in range(m - keep - 1, -1, -1):
        if entries[i].key < high[0].key:
            continue
        if entry_before(&high[0], &entries[i]):
            high[0] = entries[i]
            sift_down(high, keep, False, 0)


cdef Py_ssize_t ordered_categories(const int64_t[:, ::1] hist,
                                   int64_t first_bin, int64_t n_categories,
                                   const int32_t* codes, Py_ssize_t n_codes,
                                   double scale_g, double scale_h,
                                   const RegParams* p, Py_ssize_t keep,
                                   CatEntry* out, CatEntry* tmp,
                                   int64_t* totals,
                                   int32_t* present) noexcept nogil:
    """The node's non-empty categories sorted by their own optimal leaf
    weight then by code (the strict total order of ``entry_before``),
    wholly or at both ends; returns m, how many there are (``codes``,
    ``n_codes``, ``totals``, ``present``: as ``node_categories``).

    With ``m <= 2 keep + 1`` (or ``keep < 1``), ``out[0:m]`` holds the
    whole order. Else ``out[0:keep]`` holds its first ``keep`` positions
    and ``out[keep:2 keep]`` its last ``keep`` (positions ``m - keep .. m -
    1``): a sorted split keeps at most ``keep`` (``max_cat_threshold``)
    categories on one side, so the middle of the order is never cut and
    need not be sorted (a selection in O(m) instead of a sort in O(m log
    m)). ``out`` and ``tmp`` have room for the entries visited each
    (``n_codes``, or ``n_categories`` without a list).
    """
    cdef KeyCounts counts
    _walk_categories(hist, first_bin, n_categories, codes, n_codes, scale_g,
                     scale_h, p, out, totals, present, &counts)
    cdef Py_ssize_t nz = counts.negative + counts.positive
    cdef Py_ssize_t m = nz + counts.zero
    if keep >= 1 and m > 2 * keep + 1 and counts.negative >= keep and (
            counts.positive >= keep):
        # both ends hold keys of one sign each: the key-0 entries (most
        # of a deep node's, its light categories) sit in the middle of the
        # order and are never selected, so the selection skips them
        select_ends(out, nz, keep, tmp, tmp + keep)
    else:
        _gather_zeros(out, _visit_room(codes, n_codes, n_categories),
                      &counts)
        if keep < 1 or m <= 2 * keep + 1:
            sort_entries(out, tmp, m)
            return m
        select_ends(out, m, keep, tmp, tmp + keep)
    # m >= 2 keep + 2: both ends into tmp, each sorted through the (now
    # free) front of out, then copied to the front of out
    sort_entries(tmp, out, keep)
    sort_entries(tmp + keep, out, keep)
    memcpy(out, tmp, 2 * keep * sizeof(CatEntry))
    return m


cdef inline void offer_category_split(HistCandidate* best, int32_t feature,
                                      uint8_t kind, int32_t position,
                                      int64_t Gq_left, int64_t Hq_left,
                                      int64_t Gq, int64_t Hq,
                                      double parent_score, double scale_g,
                                      double scale_h, const RegParams* p,
                                      bint l2_only, bint default_left,
                                      const NodeBounds* bounds) noexcept nogil:
    """A categorical candidate; ties within the feature go to the lower
    ``position`` (the category, or the prefix's last index)."""
    if offer_boundary(best, feature, <double> position, position, Gq_left,
                      Hq_left, Gq, Hq, parent_score, scale_g, scale_h, p,
                      l2_only, default_left, bounds):
        best.cat_kind = kind


ctypedef struct SortedCuts:
    # what every candidate of one categorical scan (one feature, one
    # node) shares
    const int64_t* hist         # the node's (n_bins, 2) histogram
    Py_ssize_t row_stride       # its rows' stride, in int64s
    int64_t first_bin
    Py_ssize_t m, keep          # non-empty categories, max_cat_threshold
    bint has_missing
    int64_t Gq_miss, Hq_miss, Gq, Hq
    double parent_score, scale_g, scale_h
    const RegParams* p
    bint l2_only
    const NodeBounds* bounds
    int32_t feature


cdef inline int64_t _bin_g(const SortedCuts* c, int32_t code) noexcept nogil:
    return c.hist[c.row_stride * (c.first_bin + code)]


cdef inline int64_t _bin_h(const SortedCuts* c, int32_t code) noexcept nogil:
    return c.hist[c.row_stride * (c.first_bin + code) + 1]


cdef void scan_categorical(const int64_t[:, ::1] hist,  # (n_bins, 2) one node
                           int32_t feature, int64_t first_bin,
                           int64_t n_categories, int64_t Gq, int64_t Hq,
                           double parent_score, double scale_g,
                           double scale_h, const RegParams* p,
                           int max_cat_to_onehot, int max_cat_threshold,
                           CatEntry* scratch,       # room for 2 n_categories
                           const NodeBounds* bounds,  # NULL: unconstrained
                           const CategoryList* visit,   # NULL: every category
                           HistCandidate* best) noexcept nogil:
    """The categorical candidates of one feature in one node (see the
    module docstring), in both directions of missing values. ``visit``
    (unless NULL) lists a superset of the node's non-empty categories to
    visit instead of all of them, and receives the node's own non-empty
    ones (``NodeCategoryLists``) from the sorted scan."""
    cdef int64_t missing = first_bin + n_categories
    cdef SortedCuts cuts
    cuts.hist = &hist[0, 0] if hist.shape[0] else NULL
    cuts.row_stride = hist.strides[0] // sizeof(int64_t)
    cuts.first_bin = first_bin
    cuts.m = 0
    cuts.keep = max(max_cat_threshold, 0)
    cuts.Gq_miss, cuts.Hq_miss = hist[missing, 0], hist[missing, 1]
    cuts.has_missing = cuts.Gq_miss != 0 or cuts.Hq_miss != 0
    cuts.Gq, cuts.Hq = Gq, Hq
    cuts.parent_score = parent_score
    cuts.scale_g, cuts.scale_h = scale_g, scale_h
    cuts.p = p
    cuts.l2_only = is_l2_only(p)
    cuts.bounds = bounds
    cuts.feature = feature
    if n_categories <= max_cat_to_onehot:
        _scan_one_hot(&cuts, n_categories, best)
    else:
        _scan_sorted(&cuts, hist, n_categories, scratch, visit, best)


cdef void _scan_one_hot(const SortedCuts* c, int64_t n_categories,
                        HistCandidate* best) noexcept nogil:
    """Few categories: one candidate per non-empty category against the
    rest (what a one-hot encoding would allow), linear in the categories."""
    cdef int64_t code, g, h
    for code in range(n_categories):
        g = _bin_g(c, <int32_t> code)
        h = _bin_h(c, <int32_t> code)
        if g == 0 and h == 0:
            continue
        # category code right, every other category left; missing right
        offer_category_split(best, c.feature, ONE_HOT_SPLIT, <int32_t> code,
                             c.Gq - g - c.Gq_miss, c.Hq - h - c.Hq_miss,
                             c.Gq, c.Hq, c.parent_score, c.scale_g,
                             c.scale_h, c.p, c.l2_only, not c.has_missing,
                             c.bounds)
        if c.has_missing:
            offer_category_split(best, c.feature, ONE_HOT_SPLIT,
                                 <int32_t> code, c.Gq - g, c.Hq - h, c.Gq,
                                 c.Hq, c.parent_score, c.scale_g, c.scale_h,
                                 c.p, c.l2_only, True, c.bounds)


cdef void _scan_sorted(SortedCuts* c, const int64_t[:, ::1] hist,
                       int64_t n_categories, CatEntry* scratch,
                       const CategoryList* visit,
                       HistCandidate* best) noexcept nogil:
    """Many categories: the prefixes of the node's categories sorted by
    leaf weight, walked as a numeric feature's bins (``scratch`` holds the
    ordered entries and the sort's buffer); sets ``c.m``, and the node's
    non-empty categories in ``visit`` (unless NULL)."""
    cdef int64_t totals[2]
    cdef const int32_t* codes = NULL
    cdef Py_ssize_t n_codes = 0
    cdef int32_t* present = NULL
    if visit != NULL:
        codes, n_codes = visit.codes, visit.n_codes
        present = visit.present
    c.m = ordered_categories(hist, c.first_bin, n_categories, codes, n_codes,
                             c.scale_g, c.scale_h, c.p, c.keep, scratch,
                             scratch + n_categories, totals, present)
    if visit != NULL and present != NULL:
        visit.n_present[0] = c.m
    if visit != NULL and visit.order != NULL:
        _keep_order(c, scratch, visit)
    _offer_sorted_order(c, scratch, totals, best)


cdef void _keep_order(const SortedCuts* c, const CatEntry* order,
                      const CategoryList* visit) noexcept nogil:
    """The codes of ``ordered_categories``' result (the whole order, or
    its first and last ``keep``) into ``visit.order``: the left set of the
    node's split is read off them (``NodeCategoryLists.left_set``) instead
    of walking and ordering the node's categories again."""
    cdef Py_ssize_t i, n = c.m
    if c.keep >= 1 and c.m > 2 * c.keep + 1:
        n = 2 * c.keep
    if n > visit.order_room:   # not sized for it (never, by the rooms)
        return
    for i in range(n):
        visit.order[i] = order[i].code
    visit.n_order[0] = n


cdef void _offer_sorted_order(const SortedCuts* c, const CatEntry* order,
                              const int64_t* totals,
                              HistCandidate* best) noexcept nogil:
    """The sorted candidates of ``order`` (``ordered_categories``: the
    whole order, or both ends of it); ``totals``: the categories' sums."""
    cdef Py_ssize_t i, m = c.m, keep = c.keep
    cdef Py_ssize_t last = m if c.has_missing else m - 1
    cdef int64_t Gq_left, Hq_left
    if keep < 1 or m <= 2 * keep + 1:
        # the whole order: position i is order[i]
        if last > 0:
            _offer_sorted_cuts(c, order, 0, 0, last,
                               _bin_g(c, order[0].code),
                               _bin_h(c, order[0].code), best)
        return
    # both ends: the first keep positions, then the last ones from m - 1 -
    # keep, whose prefix is the categories' total minus the last keep
    # (integer sums: the same bits as adding the prefix up)
    _offer_sorted_cuts(c, order, 0, 0, keep, _bin_g(c, order[0].code),
                       _bin_h(c, order[0].code), best)
    Gq_left, Hq_left = totals[0], totals[1]
    for i in range(keep, 2 * keep):
        Gq_left -= _bin_g(c, order[i].code)
        Hq_left -= _bin_h(c, order[i].code)
    # position j (> m - 1 - keep) is order[j - (m - 2 keep)]
    _offer_sorted_cuts(c, order, m - 2 * keep, m - 1 - keep, last,
                       Gq_left, Hq_left, best)


cdef void _offer_sorted_cuts(const SortedCuts* c, const CatEntry* entries,
                             Py_ssize_t shift, Py_ssize_t lo, Py_ssize_t hi,
                             int64_t Gq_left, int64_t Hq_left,
                             HistCandidate* best) noexcept nogil:
    """The sorted candidates at positions ``lo .. hi - 1`` in order:
    position i left (with or without missing values) once its category
    ``entries[i - shift]`` is added; ``Gq_left, Hq_left`` are the sums of
    the positions up to ``lo`` included."""
    cdef Py_ssize_t i
    for i in range(lo, hi):
        if i > lo:
            Gq_left += _bin_g(c, entries[i - shift].code)
            Hq_left += _bin_h(c, entries[i - shift].code)
        # one side must hold at most max_cat_threshold categories
        if i + 1 > c.keep and c.m - i - 1 > c.keep:
            continue
        # the first i + 1 categories left, missing right
        offer_category_split(best, c.feature, SORTED_SPLIT, <int32_t> i,
                             Gq_left, Hq_left, c.Gq, c.Hq, c.parent_score,
                             c.scale_g, c.scale_h, c.p, c.l2_only,
                             not c.has_missing, c.bounds)
        if not c.has_missing or i == c.m - 1:
            continue
        offer_category_split(best, c.feature, SORTED_SPLIT, <int32_t> i,
                             Gq_left + c.Gq_miss, Hq_left + c.Hq_miss, c.Gq,
                             c.Hq, c.parent_score, c.scale_g, c.scale_h, c.p,
                             c.l2_only, True, c.bounds)


def categorical_left_set(const int64_t[:, ::1] node_hist not None,  # IN (n_bins, 2)
                         *, int64_t first_bin, int64_t n_categories,
                         int cat_kind, int32_t split_bin,
                         SplitContext context not None, codes=None):
    """The categories a categorical split sends left.

    Parameters
    ----------
    node_hist : ndarray of shape (n_bins, 2), int64
        The node's histogram the split was found on.
    first_bin, n_categories : int
        The feature's first bin and its number of categories (value bins).
    cat_kind, split_bin : int
        The split's ``cat_kind`` and ``split_bin`` (``find_best_splits_hist``).
    context : SplitContext
        As given to ``find_best_splits_hist`` (regularisation and scales).
    codes : ndarray of shape (n_codes,), int32, default=None
        A superset of the node's non-empty categories, read instead of
        every category (``NodeCategoryLists.node_list``: the same set at a
        fraction of the cost in a deep node); None: every category.

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
    # one-hot: category split_bin right, every other one (absent from the
    # node or not) left, as the scan's candidate counted them
    if cat_kind == ONE_HOT_SPLIT:
        if not 0 <= split_bin < n_categories:
            raise ValueError("split_bin is not a category")
        left = np.ones(n_categories, dtype=bool)
        left[split_bin] = False
        return left, True
    if cat_kind != SORTED_SPLIT:
        raise ValueError("cat_kind is not a categorical split")
    cdef const int32_t[::1] listed = None
    if codes is not None:
        listed = np.ascontiguousarray(codes, dtype=np.int32)
    return _sorted_left_set(node_hist, first_bin, n_categories, split_bin,
                            context, listed)


cdef object _sorted_left_set(const int64_t[:, ::1] node_hist,
                             int64_t first_bin, int64_t n_categories,
                             int32_t split_bin, SplitContext context,
                             const int32_t[::1] listed):
    """``categorical_left_set`` of a sorted (Fisher) split: the node's
    categories ordered again exactly as the scan ordered them (same keys,
    same total order, the same ends of it), then cut after position
    ``split_bin``."""
    # the listed codes (out-of-range ones skipped by node_categories)
    cdef const int32_t* codes = NULL
    cdef Py_ssize_t n_codes = 0, room = n_categories
    if listed is not None:
        n_codes = listed.shape[0]
        codes = &listed[0] if n_codes else &_NO_CODE
        room = min(n_codes, n_categories)
    # room for the entries visited, twice (the order and the sort's
    # buffer): a deep node's few, not every category
    cdef CatEntry* entries = <CatEntry*> malloc(
        2 * max(room, 1) * sizeof(CatEntry))
    if entries == NULL:
        raise MemoryError()
    cdef Py_ssize_t m = 0, shift
    try:
        shift = _order_for_cut(node_hist, first_bin, n_categories, codes,
                               n_codes, room, split_bin, context, entries,
                               &m)
        return _cut_left_set(entries, m, shift, split_bin, n_categories)
    finally:
        free(entries)


cdef Py_ssize_t _order_for_cut(const int64_t[:, ::1] node_hist,
                               int64_t first_bin, int64_t n_categories,
                               const int32_t* codes, Py_ssize_t n_codes,
                               Py_ssize_t room, int32_t split_bin,
                               SplitContext context, CatEntry* entries,
                               Py_ssize_t* m) except -1:
    """The node's categories into ``entries`` (room for ``2 room``) in the
    scan's order, their number into ``m``; returns the shift: 0 when
    ``entries[0:m]`` is the whole order, else ``m - 2 keep`` (only both
    ends ordered: position j of the last keep is ``entries[j - shift]``)."""
    cdef RegParams p = reg_params(context)
    cdef double scale_g = context.scale_g, scale_h = context.scale_h
    cdef Py_ssize_t keep = context.max_cat_threshold, smaller
    cdef int64_t totals[2]
    with nogil:
        m[0] = ordered_categories(node_hist, first_bin, n_categories, codes,
                                  n_codes, scale_g, scale_h, &p, keep,
                                  entries, entries + room, totals, NULL)
    if not 0 <= split_bin < m[0]:
        raise ValueError("split_bin is beyond the node's categories")
    if keep < 1 or m[0] <= 2 * keep + 1:
        return 0
    smaller = min(split_bin + 1, m[0] - split_bin - 1)
    if smaller <= keep:
        return m[0] - 2 * keep
    # a cut the scan cannot have offered (a smaller side beyond keep)
    # gets the whole order
    with nogil:
        m[0] = node_categories(node_hist, first_bin, n_categories, codes,
                               n_codes, scale_g, scale_h, &p, entries,
                               totals, NULL)
        sort_entries(entries, entries + room, m[0])
    return 0


cdef object _cut_left_set(const CatEntry* entries, Py_ssize_t m,
                          Py_ssize_t shift, int32_t split_bin,
                          int64_t n_categories):
    """The left set of the cut after position ``split_bin`` of the order
    in ``entries`` (``_order_for_cut``), and whether "the rest" goes left.
    The smaller side of the partition is its set; every other category
    (those absent from the node too) goes the other way, with "the rest",
    as the one-hot splits send them."""
    cdef Py_ssize_t i
    cdef uint8_t[::1] flags
    if split_bin + 1 <= m - split_bin - 1:
        left = np.zeros(n_categories, dtype=bool)
        flags = left.view(np.uint8)
        for i in range(split_bin + 1):
            flags[entries[i].code] = True
        return left, False
    left = np.ones(n_categories, dtype=bool)
    flags = left.view(np.uint8)
    for i in range(split_bin + 1, m):
        flags[entries[i - shift].code] = False
    return left, True


def batch_left_sets(hist, hist_rows, feature, cat_kind, split_bin, bin_ptr,
                    SplitContext context not None, lists=None):
    """The left sets of a batch's categorical best splits, in one call:
    what ``NodeCategoryLists.left_set`` (read off the order a node's
    sorted scan kept) or else ``categorical_left_set`` (ordered anew from
    the node's histogram) gives each, without a Python call per split.

    Parameters
    ----------
    hist : ndarray of shape (n_hist, n_bins, 2), int64
        The histogram pool (``HistogramPool.array``).
    hist_rows : ndarray of shape (n_nodes,), int64
        Each node's row of ``hist``.
    feature, cat_kind, split_bin : ndarray of shape (n_nodes,)
        The nodes' best splits (``find_best_splits_hist`` records); a
        split is categorical where ``feature >= 0`` and ``cat_kind > 0``.
    bin_ptr : ndarray of shape (n_features + 1,), int64
        The histogram layout.
    context : SplitContext
        As given to the scan.
    lists : NodeCategoryLists, default=None
        The batch's scan lists (one node each), or None.

    Returns
    -------
    left_sets : list of (ndarray of shape (n_categories,), bool) or None
        Per node, the categories its split sends left; None for a numeric
        split or none.
    missing_left : ndarray of shape (n_nodes,), int8
        For a categorical split whose node holds no missing value of the
        feature, whether "the rest" (which missing values then join) goes
        left (0 or 1); -1 elsewhere (the record's ``default_left`` stands).
    """
    rows, features, kinds, bins, ptr = _checked_batch(
        hist, hist_rows, feature, cat_kind, split_bin, bin_ptr, lists)
    cdef const int64_t[:, :, ::1] h = hist
    cdef const int64_t[::1] row = rows, first = ptr
    cdef const int32_t[::1] f_of = features, bin_of = bins
    cdef const uint8_t[::1] kind_of = kinds
    cdef Py_ssize_t n = rows.shape[0], k, f, stop
    missing_left = np.full(n, -1, dtype=np.int8)
    cdef int8_t[::1] rest = missing_left
    left_sets = [None] * n
    # the sets read off kept orders are slices of one bool buffer: one
    # allocation a batch, not a zeroed (or filled) array a split
    sets = _SetBuffer(_categories_of_splits(f_of, kind_of, first))
    for k in range(n):
        f = f_of[k]
        if f < 0 or kind_of[k] == 0:
            continue
        stop = first[f + 1]
        left = _left_set_of(hist, row[k], lists, k, f, kind_of[k], bin_of[k],
                            first[f], stop, context, sets)
        left_sets[k] = left[0]
        if h[row[k], stop - 1, 0] == 0 and h[row[k], stop - 1, 1] == 0:
            rest[k] = left[1]   # the missing bin is empty
    return left_sets, missing_left


cdef Py_ssize_t _categories_of_splits(const int32_t[::1] f_of,
                                      const uint8_t[::1] kind_of,
                                      const int64_t[::1] first):
    """The categories of a batch's categorical splits' features, summed."""
    cdef Py_ssize_t k, total = 0
    for k in range(f_of.shape[0]):
        if f_of[k] >= 0 and kind_of[k] != 0:
            total += first[f_of[k] + 1] - first[f_of[k]] - 1
    return total


cdef class _SetBuffer:
    """A batch's left sets back to back in one bool array, handed out in
    order (``take``): the sets are views of it (``array``), written through
    ``flags``."""
    cdef object array
    cdef uint8_t[::1] flags
    cdef Py_ssize_t used

    def __init__(self, Py_ssize_t total):
        self.array = np.empty(total, dtype=bool)
        self.flags = self.array.view(np.uint8)
        self.used = 0

    cdef Py_ssize_t take(self, Py_ssize_t n) except -1:
        """The start of the next ``n`` (>= 1) flags."""
        if n < 1 or self.used + n > self.flags.shape[0]:
            raise ValueError("the left sets' buffer is too small")
        self.used += n
        return self.used - n


cdef object _left_set_of(hist, int64_t row, lists, Py_ssize_t k,
                         Py_ssize_t f, uint8_t cat_kind, int32_t split_bin,
                         int64_t first_bin, int64_t stop, context,
                         _SetBuffer sets):
    """Node k's categorical split on feature f (bins ``first_bin`` to
    ``stop``, the missing bin last): (left set, "the rest" goes left), read
    off the order its sorted scan kept (``lists``; the set in ``sets``),
    else ordered anew from its histogram ``hist[row]``."""
    cdef Py_ssize_t n_categories = stop - first_bin - 1
    if lists is not None:
        left = _kept_left_set(lists, k, f, cat_kind, split_bin, n_categories,
                              sets)
        if left is not None:
            return left
    return categorical_left_set(
        hist[row], first_bin=first_bin, n_categories=n_categories,
        cat_kind=cat_kind, split_bin=split_bin, context=context,
        codes=None if lists is None else lists.node_list(k, f))


def _checked_batch(hist, hist_rows, feature, cat_kind, split_bin, bin_ptr,
                   lists):
    """``batch_left_sets``' inputs as contiguous arrays, checked: the rows
    in ``hist``, the layout ``hist``'s, the categorical splits' features
    in it with at least one category, and ``lists`` of the batch. (Typed
    loops, not numpy calls: this runs once a batch, on a few values.)"""
    if not isinstance(hist, np.ndarray) or hist.dtype != np.int64 or (
            hist.ndim != 3) or hist.shape[2] != 2 or (
            not hist.flags.c_contiguous):
        raise ValueError("hist must be a C-contiguous int64 array of shape "
                         "(n_hist, n_bins, 2)")
    rows = np.ascontiguousarray(hist_rows, dtype=np.int64).reshape(-1)
    features = np.ascontiguousarray(feature, dtype=np.int32).reshape(-1)
    kinds = np.ascontiguousarray(cat_kind, dtype=np.uint8).reshape(-1)
    bins = np.ascontiguousarray(split_bin, dtype=np.int32).reshape(-1)
    if not features.shape[0] == kinds.shape[0] == bins.shape[0] == (
            rows.shape[0]):
        raise ValueError("hist_rows, feature, cat_kind and split_bin must "
                         "have one entry per node")
    ptr = np.ascontiguousarray(bin_ptr, dtype=np.int64)
    if ptr.ndim != 1 or not _rises_to(ptr, hist.shape[1]):
        raise ValueError("bin_ptr must rise from 0 to hist's n_bins")
    cdef const int64_t[::1] row = rows
    cdef const int32_t[::1] f_of = features
    cdef const uint8_t[::1] kind_of = kinds
    cdef const int64_t[::1] first = ptr
    cdef Py_ssize_t k, f, n_hist = hist.shape[0]
    for k in range(row.shape[0]):
        if not 0 <= row[k] < n_hist:
            raise ValueError("hist_rows must be rows of hist")
        f = f_of[k]
        if f < 0 or kind_of[k] == 0:
            continue
        if f >= first.shape[0] - 1:
            raise ValueError("feature is outside bin_ptr's features")
        if first[f + 1] - first[f] < 2:
            raise ValueError("a categorical split's feature has no category")
    if lists is not None and not (isinstance(lists, NodeCategoryLists) and (
            lists.n_nodes == row.shape[0]) and _same_values(
                (<NodeCategoryLists> lists).bin_ptr, ptr)):
        raise ValueError("lists must be NodeCategoryLists of the batch's "
                         "nodes and histogram layout")
    return rows, features, kinds, bins, ptr


cdef bint _rises_to(const int64_t[::1] ptr, Py_ssize_t n_bins):
    """Whether ``ptr`` rises (by at least 1) from 0 to ``n_bins``."""
    return _rises_from_zero(ptr) and ptr[ptr.shape[0] - 1] == n_bins


cdef bint _rises_from_zero(const int64_t[::1] ptr):
    """Whether ``ptr`` rises (by at least 1) from 0."""
    cdef Py_ssize_t i
    if ptr.shape[0] < 1 or ptr[0] != 0:
        return False
    for i in range(ptr.shape[0] - 1):
        if ptr[i + 1] - ptr[i] < 1:
            return False
    return True


cdef bint _same_values(const int64_t[::1] a, const int64_t[::1] b):
    cdef Py_ssize_t i
    if a.shape[0] != b.shape[0]:
        return False
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


cdef object _kept_left_set(NodeCategoryLists lists, Py_ssize_t k,
                           Py_ssize_t f, int cat_kind, int32_t split_bin,
                           int64_t n_categories, _SetBuffer sets):
    """``lists.left_set(k, f, ...)`` (the same set, the same None and the
    same errors) read through the lists' entries into the next
    ``n_categories`` flags of ``sets``, with no numpy call: the batch's hot
    path (``batch_left_sets``)."""
    if cat_kind != SORTED_SPLIT or lists.order_codes is None:
        return None
    cdef CategoryList* e = &lists.entries[k * lists.n_features + f]
    cdef Py_ssize_t n = e.n_order[0], m = e.n_present[0], i, start
    if n < 0:
        return None
    if not 0 <= split_bin < m:
        raise ValueError("split_bin is beyond the node's categories")
    if n < m and min(split_bin + 1, m - split_bin - 1) > lists.keep:
        return None
    for i in range(n):
        if not 0 <= e.order[i] < n_categories:
            raise ValueError("the kept order is not of n_categories")
    cdef Py_ssize_t at = sets.take(n_categories)
    cdef uint8_t* flags = &sets.flags[at]
    left = sets.array[at:at + n_categories]
    # position i of the order is order[i - (m - n)] (as left_set slices)
    if split_bin + 1 <= m - split_bin - 1:   # the left side is smaller
        memset(flags, 0, n_categories)
        for i in range(min(split_bin + 1, n)):
            flags[e.order[i]] = True
        return left, False
    start = split_bin + 1 - (m - n)
    if start < 0:   # Python's slice of a negative start
        start = max(start + n, 0)
    memset(flags, 1, n_categories)
    for i in range(start, n):
        flags[e.order[i]] = False
    return left, True


# A parent's list of categories serves its larger child's subtraction
# (subtract_listed_histograms) code by code only while it holds fewer than
# 1 / DENSE_LIST of the feature's categories: a listed bin is a scattered
# access (a few ns each, prefetched), while the feature's every bin
# streams in order (vectorised) at a fraction of that, so a longer list
# (the top levels of a tree) is subtracted faster whole. The bins off the
# list are 0 in parent and child alike: the same histogram either way.
# (The scan's walk keeps its list however long: visiting every category
# in order was slower, its empty bins a branch each.)
cdef enum:
    DENSE_LIST = 4


cdef inline bint subtract_listed(int64_t n_listed,
                                 int64_t n_categories) noexcept nogil:
    """Whether a list of ``n_listed`` codes (-1: none) of a feature of
    ``n_categories`` is subtracted code by code (else the whole feature)."""
    return n_listed >= 0 and n_listed * DENSE_LIST < n_categories


cdef int _fill_rooms(int64_t[:, ::1] rooms, list parent_of, bin_ptr,
                     const uint8_t[::1] is_cat) except -1:
    """``NodeCategoryLists._rooms``: node k's room of a categorical
    feature f is the count of its parent's non-empty categories when its
    parent's scan listed them, else every category of f; 0 for a numeric
    feature. Each parent is checked: (NodeCategoryLists, node index) of
    the same layout. (A typed loop: a level's Python loop over its nodes
    and its numpy calls cost more than the scan of a deep level's lists.)"""
    cdef const int64_t[::1] ptr = bin_ptr
    cdef const int64_t[:, ::1] parent_count
    cdef NodeCategoryLists lists, viewed = None
    cdef Py_ssize_t k, kp, f, n_features = rooms.shape[1]
    cdef int64_t count
    for k in range(rooms.shape[0]):
        parent = parent_of[k]
        if parent is not None:
            candidate, index = parent
            if not isinstance(candidate, NodeCategoryLists):
                raise ValueError("a parent must be (NodeCategoryLists, "
                                 "node index) or None")
            lists = candidate
            if lists is not viewed:
                # a level's parents share their batch's lists: its layout
                # checked and its counts viewed once, not once a node
                if not lists.same_layout(bin_ptr):
                    raise ValueError("a parent must be a node of lists of "
                                     "the same histogram layout")
                parent_count = lists.present_count
                viewed = lists
            kp = index
            if not 0 <= kp < lists.n_nodes:
                raise ValueError("a parent must be a node of lists of the "
                                 "same histogram layout")
        for f in range(n_features):
            count = -1 if parent is None else parent_count[kp, f]
            if not is_cat[f]:
                rooms[k, f] = 0
            elif count >= 0:
                rooms[k, f] = count
            else:
                rooms[k, f] = ptr[f + 1] - ptr[f] - 1
    return 0


cdef class NodeCategoryLists:
    """Per node of a batch and categorical feature, the categories its
    sorted scan visits, and (filled by the scan) the node's non-empty
    categories, which its children's scans may visit in turn.

    A child's rows are some of its parent's, so its non-empty categories
    are among the parent's whenever a category with rows is non-empty:
    when every row of the tree has a positive fixed-point hessian (the
    caller's guarantee, ``positive_hessians``; then a category's H is
    positive exactly when it holds a row). A deep node's scan then visits
    the few categories its parent had instead of all of them (tens of
    thousands for a high-cardinality feature), and finds the same split:
    ``node_categories`` gives the same entries whatever superset it visits.

    Parameters
    ----------
    parents : list of (NodeCategoryLists, int) or None
        For each node, its parent's lists and the parent's index in their
        batch, or None: every category is visited.
    bin_ptr : ndarray of shape (n_features + 1,), int64
        The histogram layout of the scan (``find_best_splits_hist``).
    categorical : ndarray of shape (n_features,), uint8
        Flags of the categorical features.
    """

    def __cinit__(self):
        self.entries = NULL

    def __init__(self, parents, bin_ptr, categorical, *,
                 max_cat_threshold=None):
        bin_ptr = np.array(bin_ptr, dtype=np.int64)
        flags = _categorical_flags(categorical, bin_ptr.shape[0] - 1)
        self.n_nodes, self.n_features = len(parents), flags.shape[0]
        self.bin_ptr, self.parents = bin_ptr, list(parents)
        # room for each (node, feature): its visited codes; none for the
        # numeric features
        rooms, parent_of = self._rooms(flags)
        # each room starts where the ones before it end
        self.present_start = np.cumsum(rooms, axis=None).reshape(
            rooms.shape) - rooms
        self.present_codes = np.empty(max(int(rooms.sum()), 1),
                                      dtype=np.int32)
        self.present_count = np.full(rooms.shape, -1, dtype=np.int64)
        self._order_rooms(rooms, max_cat_threshold)
        self.entries = <CategoryList*> malloc(
            max(self.n_nodes * self.n_features, 1) * sizeof(CategoryList))
        if self.entries == NULL:
            raise MemoryError()
        self._point_entries(flags, parent_of)

    def _rooms(self, flags):
        """Each (node, feature)'s room (int64 (n_nodes, n_features): the
        codes it visits, none for a numeric feature) and each node's
        parent lists (or None)."""
        parent_of = list(self.parents)
        rooms = np.empty((self.n_nodes, self.n_features), dtype=np.int64)
        _fill_rooms(rooms, parent_of, self.bin_ptr, flags)
        return rooms, parent_of

    def _order_rooms(self, rooms, max_cat_threshold):
        """Room for each (node, feature)'s sorted order (all its visited
        codes, or both ends: ``2 max_cat_threshold``), when the scans are
        to keep their orders (``max_cat_threshold`` not None)."""
        self.keep = None
        self.order_count = np.full(rooms.shape, -1, dtype=np.int64)
        if max_cat_threshold is None:
            self.order_start = self.order_room = self.order_codes = None
            return
        self.keep = int(max_cat_threshold)
        if self.keep >= 1:
            rooms = np.minimum(rooms, 2 * self.keep)
        self.order_room = rooms
        self.order_start = np.cumsum(rooms, axis=None).reshape(
            rooms.shape) - rooms
        self.order_codes = np.empty(max(int(rooms.sum()), 1), dtype=np.int32)

    def _point_entries(self, flags, parent_of):
        """Each entry's visited codes (in its parent's present codes, or
        NULL) and its room."""
        cdef const uint8_t[::1] is_cat = flags
        cdef int32_t[::1] codes = self.present_codes
        cdef const int64_t[:, ::1] start = self.present_start
        cdef int64_t[:, ::1] count = self.present_count
        cdef int64_t[:, ::1] order_count = self.order_count
        cdef int32_t[::1] order_codes = self.order_codes
        cdef const int64_t[:, ::1] order_start = self.order_start
        cdef const int64_t[:, ::1] order_room = self.order_room
        cdef const int32_t[::1] parent_codes
        cdef const int64_t[:, ::1] parent_start, parent_count
        cdef NodeCategoryLists lists, viewed = None
        cdef Py_ssize_t k, f, kp
        cdef CategoryList* e
        for k in range(self.n_nodes):
            if parent_of[k] is not None:
                lists, kp = parent_of[k]
                if lists is not viewed:
                    # a batch's parents share their batch's lists: their
                    # arrays are viewed once, not once a node
                    parent_codes = lists.present_codes
                    parent_start = lists.present_start
                    parent_count = lists.present_count
                    viewed = lists
            for f in range(self.n_features):
                e = &self.entries[k * self.n_features + f]
                e.codes, e.n_codes = NULL, 0
                e.present = &codes[start[k, f]]
                e.n_present = &count[k, f]
                e.order, e.order_room = NULL, 0
                e.n_order = &order_count[k, f]
                if order_codes is not None and order_room[k, f] > 0:
                    e.order = &order_codes[order_start[k, f]]
                    e.order_room = order_room[k, f]
                if not is_cat[f] or parent_of[k] is None or (
                        parent_count[kp, f] < 0):
                    continue
                e.n_codes = parent_count[kp, f]
                e.codes = (&parent_codes[parent_start[kp, f]]
                           if e.n_codes else &_NO_CODE)

    def __dealloc__(self):
        free(self.entries)

    def present_counts(self):
        """int64 (n_nodes, n_features): each node's non-empty categories of
        each feature found by its sorted scan, -1 where none ran."""
        return self.present_count.copy()

    def visited_counts(self):
        """int64 (n_nodes, n_features): the categories each (node,
        feature)'s sorted scan visits (0 for numeric features)."""
        return np.diff(np.r_[self.present_start.reshape(-1),
                             self.present_codes.shape[0]]).reshape(
            self.present_start.shape) if self.n_nodes * self.n_features else (
            np.zeros((self.n_nodes, self.n_features), dtype=np.int64))

    def node_list(self, Py_ssize_t k, Py_ssize_t f):
        """Node k's non-empty categories of feature f found by its scan
        (int32, in the order visited), or None where no sorted scan of
        that feature ran."""
        if not (0 <= k < self.n_nodes and 0 <= f < self.n_features):
            raise IndexError("node or feature outside the lists")
        count = self.present_count[k, f]
        if count < 0:
            return None
        start = self.present_start[k, f]
        return self.present_codes[start:start + count]

    def left_set(self, Py_ssize_t k, Py_ssize_t f, *, int cat_kind,
                 int32_t split_bin, int64_t n_categories):
        """``categorical_left_set`` of node k's split of feature f, read
        off the order its sorted scan kept (``max_cat_threshold`` given):
        the same set, without walking and ordering the node's categories
        again. None where that is not possible: not a sorted split
        (``cat_kind``), no order kept, or a cut the scan cannot have
        offered (a smaller side beyond ``max_cat_threshold``); the caller
        then orders anew (``categorical_left_set``)."""
        if not (0 <= k < self.n_nodes and 0 <= f < self.n_features):
            raise IndexError("node or feature outside the lists")
        if cat_kind != SORTED_SPLIT or self.order_codes is None or (
                self.order_count[k, f] < 0):
            return None
        cdef Py_ssize_t m = self.present_count[k, f]
        cdef Py_ssize_t n = self.order_count[k, f]
        cdef Py_ssize_t smaller = min(split_bin + 1, m - split_bin - 1)
        if not 0 <= split_bin < m:
            raise ValueError("split_bin is beyond the node's categories")
        if n < m and smaller > self.keep:
            return None
        start = self.order_start[k, f]
        order = self.order_codes[start:start + n]
        if order.size and (order.min() < 0 or order.max() >= n_categories):
            raise ValueError("the kept order is not of n_categories")
        # position i of the order is order[i - shift] (0: the whole order;
        # else the last keep positions follow the first keep)
        shift = m - n
        if split_bin + 1 <= m - split_bin - 1:   # the left side is smaller
            left = np.zeros(n_categories, dtype=bool)
            left[order[:split_bin + 1]] = True
            return left, False
        left = np.ones(n_categories, dtype=bool)
        left[order[split_bin + 1 - shift:]] = False
        return left, True

    def same_layout(self, bin_ptr):
        """Whether the rooms were sized for this histogram layout."""
        return np.array_equal(np.asarray(bin_ptr), self.bin_ptr)

    def pass_on_unscanned(self):
        """The list each (node, feature) with one to visit but no sorted
        scan of its own (column sampling left the feature out) passes on
        as its non-empty categories: the visited list itself, a superset
        of them. Then a node's children always read a listed feature's
        histogram on its parent's list or a sublist of it, the bins a
        built child's histogram is zeroed on (``ListedSpans``); with no
        list they would read every bin of the feature, some never zeroed."""
        cdef Py_ssize_t k
        cdef CategoryList* e
        for k in range(self.n_nodes * self.n_features):
            e = &self.entries[k]
            if e.codes != NULL and e.n_present[0] < 0:
                # the room of present is the visited list's length
                memcpy(e.present, e.codes, e.n_codes * sizeof(int32_t))
                e.n_present[0] = e.n_codes



cdef class ListedSpans:
    """Per node of a level's splits and feature, the bins its children's
    histograms are read on: the categories the node's sorted scan listed
    (and the missing bin), or the feature's every bin (``SubtractSpan``).

    The parents' lists nest (``NodeCategoryLists``): a child's non-empty
    categories of a listed feature are among its parent's, and the
    children's scans, left sets and own children read no other bin of it.
    So the larger child's histogram is subtracted on these bins only
    (``subtract_listed_spans``), and the smaller child's is zeroed on them
    only before it is built (``_histogram.build_histograms(listed=)``):
    the other bins of a listed feature are never read, whatever they hold.
    A list of at least 1 / DENSE_LIST of its feature's categories spans
    the whole feature (streamed, cheaper than its scattered bins).

    Parameters
    ----------
    parent_lists : list of (NodeCategoryLists, int) or None
        Per node, its scan lists and its index in them
        (``CategoryListKeeper.split``), or None: every bin.
    bin_ptr : ndarray of shape (n_features + 1,), int64
        The histogram layout.
    categorical : ndarray of shape (n_features,), uint8
    """

    def __cinit__(self):
        self.spans = NULL

    def __init__(self, parent_lists, bin_ptr, categorical):
        bins = _checked_layout(bin_ptr)
        flags = _categorical_flags(categorical, bins.shape[0] - 1)
        _check_parent_lists(parent_lists, bins)
        self.n_nodes, self.n_features = len(parent_lists), flags.shape[0]
        self.bin_ptr, self.parent_lists = bins, list(parent_lists)
        self.spans = <SubtractSpan*> malloc(
            max(self.n_nodes * self.n_features, 1) * sizeof(SubtractSpan))
        if self.spans == NULL:
            raise MemoryError()
        self.n_values = _fill_spans(self.spans, self.parent_lists, bins,
                                    flags)

    def __dealloc__(self):
        free(self.spans)

    def listed_counts(self):
        """int64 (n_nodes, n_features): the listed codes of each span, -1
        where it is the feature's every bin."""
        counts = np.full((self.n_nodes, self.n_features), -1, dtype=np.int64)
        cdef Py_ssize_t k, f
        for k in range(self.n_nodes):
            for f in range(self.n_features):
                if self.spans[k * self.n_features + f].codes != NULL:
                    counts[k, f] = self.spans[k * self.n_features + f].n_codes
        return counts


@cython.boundscheck(True)
@cython.wraparound(True)
def _checked_layout(bin_ptr):
    """bin_ptr as int64, checked: rising by at least 1 from 0."""
    bins = np.ascontiguousarray(bin_ptr, dtype=np.int64)
    # (a typed loop: np.diff and np.any cost ~10 us, once a level)
    if bins.ndim != 1 or not _rises_from_zero(bins):
        raise ValueError("bin_ptr must rise from 0 by at least 1 a feature")
    return bins


def _check_parent_lists(parent_lists, bins):
    """Each parent: None or (NodeCategoryLists of the layout, a node)."""
    # the layout compared once per run of parents of one lists object (a
    # level's parents share their batch's: a comparison of bin_ptr each
    # cost more than the subtraction of a deep level)
    cdef object checked = None
    for parent in parent_lists:
        if parent is None:
            continue
        lists, kp = parent
        if not isinstance(lists, NodeCategoryLists) or not (
                lists is checked or lists.same_layout(bins)) or not (
                0 <= kp < (<NodeCategoryLists> lists).n_nodes):
            raise ValueError("a parent's lists must be (NodeCategoryLists, "
                             "node index) of the same histogram layout")
        checked = lists


cdef int64_t _fill_spans(SubtractSpan* spans, list parent_lists,
                         const int64_t[::1] bin_ptr,
                         const uint8_t[::1] is_cat) except -1:
    """Each node's spans from its parent's lists; returns how many int64
    values they cover in all."""
    cdef Py_ssize_t n_features = is_cat.shape[0], k, kp
    cdef int64_t n_values = 0
    cdef NodeCategoryLists lists, viewed = None
    cdef PresentLists view
    for k in range(len(parent_lists)):
        if parent_lists[k] is None:
            n_values += _node_spans(&spans[k * n_features], NULL, 0,
                                    bin_ptr, is_cat)
            continue
        lists, kp = parent_lists[k]
        if lists is not viewed:
            # a level's parents share their batch's lists: their arrays
            # are taken once, not once a node
            view, viewed = _present_lists(lists), lists
        n_values += _node_spans(&spans[k * n_features], &view, kp, bin_ptr,
                                is_cat)
    return n_values


def subtract_listed_histograms(
        int64_t[:, :, ::1] hist not None,   # IN/OUT (n_hist, n_bins, 2)
        parent_rows, child_rows, parent_lists, bin_ptr, categorical,
        int n_threads):
    """``hist[parent_rows[k]] -= hist[child_rows[k]]`` for every k (as
    ``_histogram.subtract_histograms``), where a categorical feature the
    parent's sorted scan listed is subtracted on its listed categories and
    its missing bin only.

    The parent's other categories are empty (0 in its histogram; the lists
    nest, ``NodeCategoryLists``), hence empty in its child, and 0 - 0 is
    already in place: the same histogram, without streaming a
    high-cardinality feature's every bin for a deep node's few categories.

    Parameters
    ----------
    hist : ndarray of shape (n_hist, n_bins, 2), int64
    parent_rows, child_rows : ndarray of shape (n_nodes,), int64
        Distinct rows of ``hist``.
    parent_lists : list of (NodeCategoryLists, int) or None
        Per node, its parent's scan lists and the parent's index in them
        (``CategoryListKeeper.split``), or None: every bin subtracted.
    bin_ptr : ndarray of shape (n_features + 1,), int64
        The histogram layout.
    categorical : ndarray of shape (n_features,), uint8
    n_threads : int
    """
    if len(parent_lists) != len(parent_rows):
        raise ValueError("parent_lists must have one entry per node")
    subtract_listed_spans(hist, parent_rows, child_rows,
                          ListedSpans(parent_lists, bin_ptr, categorical),
                          n_threads)


def subtract_listed_spans(int64_t[:, :, ::1] hist not None,  # IN/OUT
                          parent_rows, child_rows,
                          ListedSpans spans not None, int n_threads):
    """``subtract_listed_histograms`` on spans made once for a level (which
    its built children's clearing shares): ``hist[parent_rows[k]] -=
    hist[child_rows[k]]`` on node k's spans."""
    rows = _checked_rows(hist, parent_rows, child_rows)
    # spans.bin_ptr rises from 0 (checked when the spans were made)
    if spans.n_nodes != rows.shape[0] // 2 or (
            spans.bin_ptr[spans.bin_ptr.shape[0] - 1] != hist.shape[1]) or (
            hist.shape[2] != 2):
        raise ValueError("spans must be one per node, of hist's layout "
                         "(bin_ptr must rise from 0 to hist's n_bins)")
    _subtract_spans(hist, rows, spans.bin_ptr, spans.spans,
                    spans.n_features, spans.n_values, capped(n_threads))


def _checked_rows(hist, parent_rows, child_rows):
    """The parent then child rows (int64), checked distinct rows of hist."""
    cdef Py_ssize_t n_nodes = len(parent_rows)
    rows = np.concatenate([
        np.ascontiguousarray(parent_rows, dtype=np.int64).reshape(-1),
        np.ascontiguousarray(child_rows, dtype=np.int64).reshape(-1)])
    if rows.shape[0] != 2 * n_nodes or distinct_in_range(
            rows, hist.shape[0]) != 1:
        raise ValueError("parent_rows and child_rows must be one each per "
                         "node, distinct rows of hist")
    return rows


ctypedef struct PresentLists:
    # a NodeCategoryLists' present codes, as _node_spans reads them
    const int32_t* codes
    const int64_t* start        # (n_nodes, n_features), row-major
    const int64_t* count        # (n_nodes, n_features), -1: none


cdef PresentLists _present_lists(NodeCategoryLists lists):
    """Pointers into ``lists``' present codes (``lists``, which the caller
    holds, keeps them alive)."""
    cdef PresentLists view
    cdef const int32_t[::1] codes = lists.present_codes
    cdef const int64_t[:, ::1] start = lists.present_start
    cdef const int64_t[:, ::1] count = lists.present_count
    view.codes = &codes[0]
    view.start = &start[0, 0] if start.shape[0] * start.shape[1] else NULL
    view.count = &count[0, 0] if count.shape[0] * count.shape[1] else NULL
    return view


cdef void _subtract_spans(int64_t[:, :, ::1] hist,
                          const int64_t[::1] rows,
                          const int64_t[::1] bin_ptr,
                          const SubtractSpan* spans, Py_ssize_t n_features,
                          int64_t n_values, int n_threads):
    """The subtractions on each node's spans, in parallel over the (node,
    feature) pairs (distinct rows, and a feature's own bins: disjoint
    writes). Dynamic: a high-cardinality feature streamed whole costs
    thousands of times a listed one of a deep node, and one level's nodes
    hold both."""
    cdef Py_ssize_t n_nodes = rows.shape[0] // 2, task, k, f
    cdef int64_t* base = &hist[0, 0, 0] if hist.shape[0] else NULL
    cdef Py_ssize_t row_values = hist.shape[1] * 2
    for task in prange(n_nodes * n_features, nogil=True, schedule="dynamic",
                       num_threads=threads_for_work(n_threads, n_values)):
        k = task // n_features
        f = task % n_features
        _subtract_feature(base + rows[k] * row_values,
                          base + rows[n_nodes + k] * row_values, bin_ptr, f,
                          &spans[task])


cdef int64_t _node_spans(SubtractSpan* spans, const PresentLists* parent,
                         Py_ssize_t kp, const int64_t[::1] bin_ptr,
                         const uint8_t[::1] is_cat) noexcept:
    """One node's spans (its parent's present codes, node ``kp`` of
    ``parent`` (NULL: none), for the listed categorical features); returns
    how many values they subtract."""
    cdef Py_ssize_t f, n_features = is_cat.shape[0]
    cdef int64_t n_values = 0, count
    for f in range(n_features):
        spans[f].codes, spans[f].n_codes = NULL, 0
        count = parent.count[kp * n_features + f] if (
            parent != NULL and is_cat[f]) else -1
        if subtract_listed(count, bin_ptr[f + 1] - bin_ptr[f] - 1):
            spans[f].n_codes = count
            spans[f].codes = (parent.codes + parent.start[kp * n_features + f]
                              if count else &_NO_CODE)
            n_values += 2 * (count + 1)
        else:
            n_values += 2 * (bin_ptr[f + 1] - bin_ptr[f])
    return n_values


cdef void _subtract_feature(int64_t* parent, const int64_t* child,
                            const int64_t[::1] bin_ptr, Py_ssize_t f,
                            const SubtractSpan* span) noexcept nogil:
    """``parent -= child`` on one node's span of feature f: a whole
    feature streams (vectorised by the compiler), a listed one goes
    category by category (a code outside the feature is skipped: never a
    bin of another)."""
    cdef Py_ssize_t i, b
    cdef int64_t c, n_categories
    if span.codes == NULL:
        for i in range(2 * bin_ptr[f], 2 * bin_ptr[f + 1]):
            parent[i] = parent[i] - child[i]
        return
    n_categories = bin_ptr[f + 1] - bin_ptr[f] - 1
    for i in range(span.n_codes):
        c = span.codes[i]
        if i + WALK_AHEAD < span.n_codes:
            # scattered bins, as in _walk_categories: both rows' bin
            # WALK_AHEAD codes on asked for early (hints only)
            b = 2 * (bin_ptr[f] + span.codes[i + WALK_AHEAD])
            prefetch(parent + b)
            prefetch(child + b)
        if 0 <= c < n_categories:
            b = 2 * (bin_ptr[f] + c)
            parent[b] = parent[b] - child[b]
            parent[b + 1] = parent[b + 1] - child[b + 1]
    b = 2 * (bin_ptr[f + 1] - 1)     # the missing bin
    parent[b] = parent[b] - child[b]
    parent[b + 1] = parent[b + 1] - child[b + 1]


cdef void clear_spans(int64_t* hist, const int64_t* bin_ptr,
                      Py_ssize_t n_features,
                      const SubtractSpan* spans) noexcept nogil:
    """Zero one node's histogram (``n_bins`` pairs) on its spans
    (``ListedSpans``): a whole feature is one memset, a listed one its
    listed categories (a code outside the feature is skipped) and its
    missing bin. The bins left alone are never read (``ListedSpans``)."""
    cdef Py_ssize_t f, i
    cdef int64_t c, b, n_categories
    for f in range(n_features):
        if spans[f].codes == NULL:
            memset(hist + 2 * bin_ptr[f], 0,
                   2 * (bin_ptr[f + 1] - bin_ptr[f]) * sizeof(int64_t))
            continue
        n_categories = bin_ptr[f + 1] - bin_ptr[f] - 1
        for i in range(spans[f].n_codes):
            c = spans[f].codes[i]
            if 0 <= c < n_categories:
                b = 2 * (bin_ptr[f] + c)
                hist[b] = 0
                hist[b + 1] = 0
        b = 2 * (bin_ptr[f + 1] - 1)     # the missing bin
        hist[b] = 0
        hist[b + 1] = 0


@cython.boundscheck(True)
def positive_hessians(const float[:, ::1] gpair not None, weight, active,
                      double scale_h, int n_threads):
    """Whether every active row's fixed-point hessian (``round(h w
    scale_h)``, the histograms' own rounding) is positive: the condition
    under which a node's non-empty categories hold its children's
    (``NodeCategoryLists``).

    Parameters
    ----------
    gpair : ndarray of shape (n_rows, 2), float32
    weight : ndarray of shape (n_rows,), float64, or None
    active : ndarray of shape (n_rows,), bool or uint8
    scale_h : float
        The tree's hessian scale (``FixedPointGradients.scales[1]``).
    n_threads : int
    """
    cdef Py_ssize_t i, n = gpair.shape[0]
    cdef const uint8_t[::1] act = np.ascontiguousarray(active).view(np.uint8)
    if act.shape[0] != n or gpair.shape[1] != 2:
        raise ValueError("gpair (n_rows, 2) and active (n_rows,)")
    if weight is not None:
        weight = np.ascontiguousarray(weight, dtype=np.float64)
        if weight.shape != (n,):
            raise ValueError("weight must have one entry per row")
    cdef const double* w = weight_pointer(weight)
    cdef int64_t non_positive = 0
    for i in prange(n, nogil=True, schedule="static",
                    num_threads=max(1, min(n_threads, 1 + n // 65536))):
        if act[i] and fixed_point(gpair[i, 1], w, i, scale_h) <= 0:
            non_positive += 1
    return non_positive == 0


def category_histograms(
        SortedColumns columns not None,
        const int32_t[::1] features not None,        # IN (n_cat_features,)
        const int64_t[::1] bin_ptr not None,         # IN (n_cat_features + 1,)
        const int32_t[::1] row_slot not None,        # IN (n_rows,) slot or -1
        const int64_t[:, ::1] quantized not None,    # IN (n_rows, 2)
        *, Py_ssize_t n_slots, int n_threads):
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
    n_threads = capped(n_threads)
    cdef Py_ssize_t n_cat = features.shape[0]
    cdef Py_ssize_t n_bins = bin_ptr[n_cat]
    hist_array = np.zeros((n_slots, n_bins, 2), dtype=np.int64)
    sums_array = np.zeros((n_slots, 2), dtype=np.int64)
    cdef int64_t[:, :, ::1] hist = hist_array
    cdef int64_t[:, ::1] sums = sums_array
    cdef CategoryColumns cols = _category_columns(columns)
    cdef Py_ssize_t j
    if n_slots == 0 or n_cat == 0:
        return hist_array, sums_array
    with nogil:
        _slot_totals(row_slot, quantized, sums)
    # one feature per task: a feature owns its bins in every slot's
    # histogram, so no two threads add to one bin
    for j in prange(n_cat, nogil=True, schedule="dynamic",
                    num_threads=max(1, min(n_threads, n_cat))):
        _category_feature(&cols, features[j], bin_ptr[j], bin_ptr[j + 1] - 1,
                          row_slot, quantized, sums, hist)
    return hist_array, sums_array


ctypedef struct CategoryColumns:
    # the presorted columns as category_histograms reads them
    const int64_t* col_ptr
    const float* values
    const int32_t* rows
    const int64_t* missing_ptr
    const int32_t* missing_rows
    bint zero_absent


cdef CategoryColumns _category_columns(SortedColumns columns):
    """Pointers into the columns' arrays (``columns``, which the caller
    holds, keeps them alive)."""
    cdef CategoryColumns cols
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const float[::1] values = columns.values
    cdef const int32_t[::1] rows = columns.rows
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    cdef const int32_t[::1] missing_rows = columns.missing_rows
    cols.col_ptr = &col_ptr[0]
    cols.values = &values[0] if values.shape[0] else NULL
    cols.rows = &rows[0] if rows.shape[0] else NULL
    cols.missing_ptr = &missing_ptr[0]
    cols.missing_rows = &missing_rows[0] if missing_rows.shape[0] else NULL
    cols.zero_absent = columns.zero_absent
    return cols


cdef void _slot_totals(const int32_t[::1] row_slot,
                       const int64_t[:, ::1] quantized,
                       int64_t[:, ::1] sums) noexcept nogil:
    """Each slot's exact totals over its rows (sequential: one pass)."""
    cdef Py_ssize_t r
    cdef int32_t slot
    for r in range(row_slot.shape[0]):
        slot = row_slot[r]
        if slot >= 0:
            sums[slot, 0] += quantized[r, 0]
            sums[slot, 1] += quantized[r, 1]


cdef void _category_feature(const CategoryColumns* cols, int32_t f,
                            int64_t first, int64_t missing,
                            const int32_t[::1] row_slot,
                            const int64_t[:, ::1] quantized,
                            const int64_t[:, ::1] sums,
                            int64_t[:, :, ::1] hist) noexcept nogil:
    """Feature f's bins ``first .. missing`` of every slot's histogram:
    its stored entries by category code, then the rows without an entry
    (the slot's totals minus the entries')."""
    cdef int64_t k, b, g, h
    cdef int32_t row, slot
    cdef Py_ssize_t s
    cdef float v
    for k in range(cols.col_ptr[f], cols.col_ptr[f + 1]):
        row = cols.rows[k]
        slot = row_slot[row]
        if slot < 0:
            continue
        v = cols.values[k]
        # a code outside [0, n_categories) counts as missing: never an
        # index outside the feature's bins, whatever the data holds
        if v >= 0 and v < missing - first:
            b = first + <int64_t> v
        else:
            b = missing
        hist[slot, b, 0] += quantized[row, 0]
        hist[slot, b, 1] += quantized[row, 1]
    if cols.zero_absent:
        for k in range(cols.missing_ptr[f], cols.missing_ptr[f + 1]):
            row = cols.missing_rows[k]
            slot = row_slot[row]
            if slot < 0:
                continue
            hist[slot, missing, 0] += quantized[row, 0]
            hist[slot, missing, 1] += quantized[row, 1]
    # the rows without an entry: the node's totals minus the entries'
    # (category 0 when absent entries read as 0.0, else missing)
    for s in range(hist.shape[0]):
        g = sums[s, 0]
        h = sums[s, 1]
        for b in range(first, missing + 1):
            g = g - hist[s, b, 0]
            h = h - hist[s, b, 1]
        b = first if cols.zero_absent else missing
        hist[s, b, 0] += g
        hist[s, b, 1] += h


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
