"""Split scan over node histograms, in both missing directions.

For every node of a batch and every allowed feature, the value bins are
scanned in order; after bin b the left child holds bins 0..b (plus the
missing bin when missing values go left). Statistics are the exact integer
sums of ``_histogram.pyx``, turned into float64 by the power-of-two scales
before the gain arithmetic of ``_gain.pxd``. When a node has no missing
value for a feature (its missing bin is empty) one direction is scanned and
missing values go right, as in XGBoost's ``hist`` and ``approx`` (missing
values at prediction then take the right child, where XGBoost sends them). Candidates are merged with
the total order of ``_common.is_better``, so the result does not depend on
the number of threads.

Categorical features (``categorical`` flags) have one value bin per
category code; their candidates come from the categorical scan
(``_categorical_scan``), in the same parallel loop and under the same order.
The candidates (``HistCandidate``, ``_hist_split.pxd``) and their conversion
to ``splits.SPLIT_RECORD`` rows are shared with the column-wise scan of
sparse input (``_column_scan``).
"""

import numpy as np

cimport cython

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

from ._categorical_scan cimport (CategoryList, CatEntry,
                                NodeCategoryLists, scan_categorical)
from ._common cimport (int32_t, int64_t, is_better, prefetch,
                       reset_candidate, uint8_t)
from ._context cimport SplitContext, reg_params
from ._thread_bests cimport merge_thread_bests
from .._parallel cimport threads_for_work
from ._checks cimport all_in_range, rising_from_zero
from ._gain cimport (NodeBounds, RegParams, bounded_leaf_score,
                     feature_directions, is_l2_only, leaf_score,
                     node_bounds_array)

from ._categorical_scan import _categorical_flags, _widest_categorical
from .splits import SPLIT_RECORD


# SCAN_WORK_PER_BIN: _hist_split.pxd

cdef void scan_feature(const int64_t[:, ::1] hist,       # (n_bins, 2) one node
                       int32_t feature,
                       int64_t first_bin, int64_t n_value_bins,
                       int64_t Gq, int64_t Hq, double parent_score,
                       const double[::1] thresholds,
                       double scale_g, double scale_h,
                       const RegParams* p,
                       const NodeBounds* node_bounds, int direction,
                       HistCandidate* best) noexcept nogil:
    cdef NodeBounds feature_bounds
    cdef const NodeBounds* bounds = with_direction(&feature_bounds,
                                                   node_bounds, direction)
    # two copies of the inlined scan: in the first, bounds is the constant
    # NULL and the compiler drops the bounded branch of every candidate
    if bounds == NULL and is_l2_only(p):
        scan_bins_l2(hist, feature, first_bin, n_value_bins, Gq, Hq,
                     parent_score, thresholds, scale_g, scale_h, p, best)
    elif bounds == NULL:
        scan_bins(hist, feature, first_bin, n_value_bins, Gq, Hq,
                  parent_score, thresholds, scale_g, scale_h, p, NULL, best)
    else:
        scan_bins(hist, feature, first_bin, n_value_bins, Gq, Hq,
                  parent_score, thresholds, scale_g, scale_h, p, bounds, best)


cdef inline void scan_bins(const int64_t[:, ::1] hist, int32_t feature,
                           int64_t first_bin, int64_t n_value_bins,
                           int64_t Gq, int64_t Hq, double parent_score,
                           const double[::1] thresholds, double scale_g,
                           double scale_h, const RegParams* p,
                           const NodeBounds* bounds,
                           HistCandidate* best) noexcept nogil:
    """The candidates of one feature in one node, both missing directions
    (see the module docstring)."""
    cdef int64_t missing = first_bin + n_value_bins
    cdef int64_t Gq_miss = hist[missing, 0], Hq_miss = hist[missing, 1]
    cdef bint has_missing = Gq_miss != 0 or Hq_miss != 0
    cdef int64_t b, Gq_left = 0, Hq_left = 0
    cdef int64_t last = n_value_bins if has_missing else n_value_bins - 1
    cdef bint l2_only = is_l2_only(p)
    if has_missing and bounds != NULL:
        # missing values alone left, every value bin right: the partition
        # of the last candidate below in the other order, for a monotone
        # constraint that admits only this one
        offer_boundary(best, feature, -INFINITY, -1, Gq_miss, Hq_miss, Gq, Hq,
                       parent_score, scale_g, scale_h, p, l2_only, True,
                       bounds)
    for b in range(last):
        Gq_left += hist[first_bin + b, 0]
        Hq_left += hist[first_bin + b, 1]
        # missing values right (bins 0..b left); also when there are none
        offer_boundary(best, feature, thresholds[first_bin + b], <int32_t> b,
                       Gq_left, Hq_left, Gq, Hq, parent_score, scale_g,
                       scale_h, p, l2_only, False, bounds)
        if not has_missing or b == n_value_bins - 1:
            continue
        # missing values left (bins 0..b and the missing bin left)
        offer_boundary(best, feature, thresholds[first_bin + b], <int32_t> b,
                       Gq_left + Gq_miss, Hq_left + Hq_miss, Gq, Hq,
                       parent_score, scale_g, scale_h, p, l2_only, True,
                       bounds)


# The L2 scan's pre-test, a chunk of bins at a time: the running sums of
# the chunk's bins are kept (int64, as the scan adds them), then every
# bin's two candidates are pre-tested at once (min_child_weight and
# _gain.may_reach, written out in C below), with no loop-carried dependency,
# in the widest vectors the CPU has. Only the candidates passing go through
# ``offer_l2_candidate``, which tests them again at the scan's current
# floor. The floor only rises within a scan (the best only improves), and a
# candidate whose gain reaches any best passes the test at that best's
# floor (the slack of ``children_score_floor``): a candidate the chunk's
# test drops could not have been taken, so the splits are those of the
# candidate-by-candidate scan, bit for bit.
cdef enum:
    # bins a chunk: about 1 KB of sums and flags on the stack
    PRETEST_BINS = 64


cdef extern from *:
    """
    /* may_reach and min_child_weight (_gain.pxd) of the candidates whose
       left child holds the sums Gq_left[j] + Gq_add, Hq_left[j] + Hq_add
       (exact int64) of a node with totals Gq, Hq: the arithmetic of
       offer_l2_candidate, operation for operation (no contraction into
       fused multiply-adds: -ffp-contract=off). passes[j] is 1 where the
       candidate passes; returns whether any did. Built once per vector
       unit where the compiler dispatches at load time (as
       _exact_scan.pyx's pre-test), a plain loop elsewhere. */
    #if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
    #if __has_attribute(target_clones)
    #define SKB_HIST_CLONES \\
        __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
    #endif
    #endif
    #ifndef SKB_HIST_CLONES
    #define SKB_HIST_CLONES
    #endif
    SKB_HIST_CLONES
    static int skb_hist_pretest(
            const int64_t* Gq_left, const int64_t* Hq_left, Py_ssize_t n,
            int64_t Gq_add, int64_t Hq_add, int64_t Gq, int64_t Hq,
            double to_g, double to_h, double lam, double mcw, double floor_,
            unsigned char* passes) {
        int any = 0;
        Py_ssize_t j;
        for (j = 0; j < n; j++) {
            int64_t gl = Gq_left[j] + Gq_add, hl = Hq_left[j] + Hq_add;
            double H_left = (double) hl * to_h;
            double H_right = (double) (Hq - hl) * to_h;
            double G_left = (double) gl * to_g;
            double G_right = (double) (Gq - gl) * to_g;
            double a_left = H_left + lam, a_right = H_right + lam;
            int p = (H_left >= mcw) & (H_right >= mcw)
                & (G_left * G_left * a_right + G_right * G_right * a_left
                   >= floor_ * (a_left * a_right));
            passes[j] = (unsigned char) p;
            any |= p;
        }
        return any;
    }
    """
    bint hist_pretest "skb_hist_pretest"(
        const int64_t* Gq_left, const int64_t* Hq_left, Py_ssize_t n,
        int64_t Gq_add, int64_t Hq_add, int64_t Gq, int64_t Hq, double to_g,
        double to_h, double lam, double mcw, double floor,
        uint8_t* passes) noexcept nogil


cdef inline bint chunk_pretest(const L2Scan* scan, const int64_t* Gq_left,
                               const int64_t* Hq_left, Py_ssize_t n,
                               int64_t Gq_add, int64_t Hq_add,
                               uint8_t* passes) noexcept nogil:
    """``hist_pretest`` of a chunk at the scan's current floor."""
    return hist_pretest(Gq_left, Hq_left, n, Gq_add, Hq_add, scan.Gq,
                        scan.Hq, scan.to_g, scan.to_h, scan.reg_lambda,
                        scan.min_child_weight, scan.floor, passes)


cdef inline void offer_chunk(L2Scan* scan, HistCandidate* best,
                             int32_t feature, const double* threshold,
                             int64_t first, Py_ssize_t n,
                             const int64_t* Gq_left, const int64_t* Hq_left,
                             int64_t Gq_miss, int64_t Hq_miss,
                             int64_t no_left_bin) noexcept nogil:
    """The candidates of bins ``first .. first + n - 1`` (running sums
    ``Gq_left``, ``Hq_left``) passing the chunk's pre-test, in the order of
    the candidate-by-candidate scan: each bin's missing-right candidate,
    then (with missing values, and below ``no_left_bin``) its
    missing-left one."""
    cdef uint8_t right[PRETEST_BINS]
    cdef uint8_t left[PRETEST_BINS]
    cdef bint any_right = chunk_pretest(scan, Gq_left, Hq_left, n, 0, 0,
                                        right)
    cdef bint any_left = (Gq_miss != 0 or Hq_miss != 0) and chunk_pretest(
        scan, Gq_left, Hq_left, n, Gq_miss, Hq_miss, left)
    cdef Py_ssize_t j
    if not (any_right or any_left):
        return
    for j in range(n):
        if right[j]:
            offer_l2_candidate(scan, best, feature, threshold[first + j],
                               <int32_t> (first + j), Gq_left[j], Hq_left[j],
                               False)
        if any_left and left[j] and first + j != no_left_bin:
            offer_l2_candidate(scan, best, feature, threshold[first + j],
                               <int32_t> (first + j), Gq_left[j] + Gq_miss,
                               Hq_left[j] + Hq_miss, True)


cdef inline void scan_bins_l2(const int64_t[:, ::1] hist, int32_t feature,
                              int64_t first_bin, int64_t n_value_bins,
                              int64_t Gq, int64_t Hq, double parent_score,
                              const double[::1] thresholds, double scale_g,
                              double scale_h, const RegParams* p,
                              HistCandidate* best) noexcept nogil:
    """``scan_bins`` in the common case (no monotone bounds, ``is_l2_only``):
    the same candidates, offered in the same order through
    ``offer_l2_candidate``, after a vectorised pre-test of a chunk of bins
    at a time (see PRETEST_BINS) that leaves out the candidates that
    cannot be taken; the bins are read through plain pointers."""
    cdef int64_t missing = first_bin + n_value_bins
    cdef int64_t Gq_miss = hist[missing, 0], Hq_miss = hist[missing, 1]
    cdef bint has_missing = Gq_miss != 0 or Hq_miss != 0
    cdef int64_t b, start, Gq_run = 0, Hq_run = 0
    cdef int64_t last = n_value_bins if has_missing else n_value_bins - 1
    # hist rows are C-contiguous pairs; thresholds has a column per bin
    cdef const int64_t* pairs = &hist[first_bin, 0]
    cdef const double* threshold = &thresholds[first_bin]
    cdef int64_t Gq_left[PRETEST_BINS]
    cdef int64_t Hq_left[PRETEST_BINS]
    cdef L2Scan scan
    scan.to_g = 1.0 / scale_g
    scan.to_h = 1.0 / scale_h
    scan.scale_g, scan.scale_h = scale_g, scale_h
    scan.Gq, scan.Hq = Gq, Hq
    scan.parent_score = parent_score
    scan.reg_lambda = p.reg_lambda
    scan.min_child_weight = p.min_child_weight
    scan.floor = children_score_floor(best.split.gain, parent_score)
    start = 0
    prefetch_pairs(pairs, min(PRETEST_BINS, last))
    while start < last:
        # the next chunk's lines, while this one is summed and pre-tested
        if start + PRETEST_BINS < last:
            prefetch_pairs(&pairs[2 * (start + PRETEST_BINS)],
                           min(PRETEST_BINS, last - start - PRETEST_BINS))
        # the running sums of the chunk's bins (missing values right:
        # bins 0..b left), then its candidates
        for b in range(start, min(start + PRETEST_BINS, last)):
            Gq_run += pairs[2 * b]
            Hq_run += pairs[2 * b + 1]
            Gq_left[b - start] = Gq_run
            Hq_left[b - start] = Hq_run
        offer_chunk(&scan, best, feature, threshold, start,
                    min(start + PRETEST_BINS, last) - start, Gq_left,
                    Hq_left, Gq_miss, Hq_miss, n_value_bins - 1)
        start += PRETEST_BINS


cdef inline void prefetch_pairs(const int64_t* pairs,
                                int64_t n_pairs) noexcept nogil:
    """Ask for the cache lines of ``n_pairs`` pairs from ``pairs`` on (a
    chunk of PRETEST_BINS: 16 lines), into L1, ahead of the running sums'
    loads.

    That loop was load-bound (perf: a quarter to a third of a level's scan
    samples on the load of the pair): a feature's bins fill about one 4 KB
    page, where the hardware's stream prefetcher stops and starts over, and
    a level's histograms (115 KB a node at 28 x 257 bins) outgrow L2. Asked
    a chunk ahead, the misses overlap the sums and pre-test of the chunk
    before. Measured in one process on the same levels, alternating the
    two builds: a tenth to a fifth off the scan, hot or cold caches,
    10,000 and 200,000 rows. Into L1, one chunk ahead, within the feature:
    as fast as two chunks ahead, faster than into L2 only."""
    cdef const char* line = <const char*> pairs
    cdef const char* stop = line + n_pairs * 2 * sizeof(int64_t)
    while line < stop:
        prefetch(line)
        line += 64


# (the public entry point, whose docstring is the kernel's contract: it
# checks the inputs (_check_inputs), fixes the scan's constants
# (_scan_setup), allocates its buffers (_allocate_buffers), runs the
# parallel scan (_scan_tasks) and merges the threads' bests)
def find_best_splits_hist(
        const int64_t[:, :, ::1] hist not None,         # IN (n_hist, n_bins, 2)
        const int64_t[:, ::1] node_sums not None,       # IN (n_nodes, 2) exact totals
        const int64_t[::1] bin_ptr not None,            # IN (n_features + 1,)
        const double[:, ::1] thresholds not None,  # IN (1 or n_nodes, n_bins)
        const uint8_t[:, ::1] feature_allowed not None,  # IN (n_nodes, n_features)
        *, SplitContext context not None, hist_rows=None, categorical=None,
        bounds=None, monotone=None, NodeCategoryLists category_lists=None):
    """Best split of each node of a batch from its histogram.

    Parameters
    ----------
    hist : ndarray of shape (n_hist, n_bins, 2), int64
        Node k's histogram is ``hist[hist_rows[k]]`` (rows of a pool of
        histograms), or ``hist[k]`` without ``hist_rows``.
    node_sums : ndarray of shape (n_nodes, 2), int64
        The nodes' exact fixed-point totals.
    bin_ptr : ndarray of shape (n_features + 1,), int64
        Feature f owns bins ``bin_ptr[f] .. bin_ptr[f+1]-1``, the last its
        missing bin.
    thresholds : ndarray of shape (1 or n_nodes, n_bins), float64
        ``thresholds[k]`` holds node k's tree threshold of each "split
        after bin" (see binning.py); a single row is shared by every node.
    feature_allowed : ndarray of shape (n_nodes, n_features), uint8
        The features each node may split on (column sampling).
    context : SplitContext
        Regularisation, the fixed-point scales of the sums, the thread
        count and the categorical limits.
    hist_rows : array-like of shape (n_nodes,), int, default=None
        Row of ``hist`` of each node.
    categorical : array-like of shape (n_features,), uint8, default=None
        Flags of the features whose value bins are categories, split as
        ``_categorical_scan`` describes; None: none.
    bounds : array-like of shape (n_nodes, 2), float64, default=None
        Each node's monotone bounds ``[lower, upper]`` on its weight; None
        when the model has no monotone constraint. With bounds, every
        weight is clipped into them before its score (``_gain.pxd``).
    monotone : array-like of shape (n_features,), int8, default=None
        Monotone constraint of each feature (-1, 0, +1), read with
        ``bounds``; None: 0 for every feature.
    category_lists : NodeCategoryLists, default=None
        For each node, the categories its sorted scans visit (a superset of
        its non-empty ones: the same splits), filled with the node's own
        non-empty ones; None: every category is visited.

    Returns
    -------
    splits : ndarray of shape (n_nodes,), dtype ``splits.SPLIT_RECORD``
        Each node's best split: ``gain``, ``feature`` (-1: none
        admissible), ``threshold``, ``split_bin``, ``default_left``,
        ``G_left``, ``H_left`` (float64), ``Gq_left``, ``Hq_left`` (exact
        int64 sums) and ``cat_kind`` (0: numeric, 1: one category right, 2:
        a prefix of the sorted categories left; see
        ``_categorical_scan.categorical_left_set``).
    """
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef const int64_t[::1] rows = _check_inputs(
        hist, node_sums, bin_ptr, thresholds, feature_allowed, hist_rows,
        category_lists)
    cdef const uint8_t[::1] is_cat = _categorical_flags(
        categorical, bin_ptr.shape[0] - 1)
    cdef ScanSetup setup = _scan_setup(context, n_nodes, hist.shape[1],
                                       bin_ptr, is_cat)
    cdef double[::1] parent_score = _parent_scores(
        node_sums, setup.scale_g, setup.scale_h, &setup.p, bounds)
    cdef const signed char[::1] direction = feature_directions(
        monotone, bin_ptr.shape[0] - 1)
    cdef ScanBuffers buffers = ScanBuffers(NULL, NULL, NULL)
    try:
        # (inside the try: what was allocated is freed on an error too)
        _allocate_buffers(&buffers, &setup, n_nodes, bounds)
        _scan_tasks(hist, rows, node_sums, bin_ptr, thresholds,
                    feature_allowed, is_cat, direction, parent_score,
                    &setup, buffers.node_bounds, buffers.scratch,
                    NULL if category_lists is None else category_lists.entries,
                    buffers.best)
        return _merged_to_records(buffers.best, setup.n_threads, n_nodes)
    finally:
        free(buffers.best)
        free(buffers.scratch)
        free(buffers.node_bounds)


# What a scan call fixes before its parallel loop (``_scan_setup``): the
# regularisation and scales of its context, its thread count and the
# per-thread room of the categorical scratch.
cdef struct ScanSetup:
    RegParams p
    double scale_g
    double scale_h
    int max_cat_to_onehot
    int max_cat_threshold
    int n_threads
    Py_ssize_t cat_room          # CatEntry slots per thread


# The C buffers of a scan call (NULL until allocated; the caller frees them).
cdef struct ScanBuffers:
    HistCandidate* best          # n_threads * n_nodes per-thread bests
    CatEntry* scratch            # n_threads * cat_room categorical entries
    NodeBounds* node_bounds      # NULL without monotone bounds


cdef ScanSetup _scan_setup(SplitContext context, Py_ssize_t n_nodes,
                           Py_ssize_t n_bins, const int64_t[::1] bin_ptr,
                           const uint8_t[::1] is_cat) except *:
    """The constants of a scan of ``n_nodes`` histograms of ``n_bins``."""
    cdef ScanSetup setup
    setup.p = reg_params(context)
    setup.scale_g, setup.scale_h = context.scale_g, context.scale_h
    setup.max_cat_to_onehot = context.max_cat_to_onehot
    setup.max_cat_threshold = context.max_cat_threshold
    # a bin of the scan (both directions, the gains of a full bin) counts
    # as SCAN_WORK_PER_BIN units of work
    setup.n_threads = threads_for_work(context.n_threads,
                                       SCAN_WORK_PER_BIN * n_nodes * n_bins)
    # per thread: twice the categories of the widest categorical feature
    setup.cat_room = 2 * _widest_categorical(bin_ptr, is_cat)
    return setup


cdef int _allocate_buffers(ScanBuffers* buffers, const ScanSetup* setup,
                           Py_ssize_t n_nodes, bounds) except -1:
    """The per-thread bests (holding no split yet), the categorical
    scratch (2 entries a category) and the nodes' bounds."""
    buffers.best = _fresh_bests(setup.n_threads * n_nodes)
    buffers.scratch = <CatEntry*> malloc(
        setup.n_threads * max(setup.cat_room, 1) * sizeof(CatEntry))
    if buffers.scratch == NULL:
        raise MemoryError()
    buffers.node_bounds = node_bounds_array(bounds, n_nodes)
    return 0


cdef void _scan_tasks(const int64_t[:, :, ::1] hist,
                      const int64_t[::1] rows,
                      const int64_t[:, ::1] node_sums,
                      const int64_t[::1] bin_ptr,
                      const double[:, ::1] thresholds,
                      const uint8_t[:, ::1] feature_allowed,
                      const uint8_t[::1] is_cat,
                      const signed char[::1] direction,
                      const double[::1] parent_score,
                      const ScanSetup* setup,
                      const NodeBounds* node_bounds,
                      CatEntry* scratch,
                      CategoryList* lists,   # (n_nodes, n_features) or NULL
                      HistCandidate* best) noexcept nogil:
    """Every (node, feature) task of find_best_splits_hist, in parallel:
    thread t's candidates go to ``best[t * n_nodes + k]``, its categorical
    scratch is ``scratch[t * setup.cat_room:]``; ``lists`` (NULL: none)
    holds the categories each (node, feature)'s sorted scan visits."""
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef Py_ssize_t cat_room = setup.cat_room
    cdef const RegParams* p = &setup.p
    cdef double scale_g = setup.scale_g, scale_h = setup.scale_h
    cdef Py_ssize_t n_features = bin_ptr.shape[0] - 1
    cdef Py_ssize_t k, task, n_tasks = n_nodes * n_features
    cdef int tid
    cdef int32_t f
    cdef bint per_node_thresholds = thresholds.shape[0] > 1
    # one (node, feature) pair per task, node-major: a node's histogram is
    # read feature after feature, each feature's bins contiguous (n_bins x 2
    # int64 per node). Dynamic: categorical features cost a sort, and
    # column sampling leaves some tasks empty
    for task in prange(n_tasks, schedule="dynamic",
                       num_threads=setup.n_threads):
        tid = threadid()
        k = task // n_features
        f = <int32_t> (task % n_features)
        if not feature_allowed[k, f]:
            continue
        if is_cat[f]:
            scan_categorical(hist[rows[k]], f, bin_ptr[f],
                             bin_ptr[f + 1] - bin_ptr[f] - 1,
                             node_sums[k, 0], node_sums[k, 1],
                             parent_score[k], scale_g, scale_h, p,
                             setup.max_cat_to_onehot,
                             setup.max_cat_threshold,
                             &scratch[tid * cat_room], _at(node_bounds, k),
                             NULL if lists == NULL
                             else &lists[k * n_features + f],
                             &best[tid * n_nodes + k])
        else:
            scan_feature(hist[rows[k]], f, bin_ptr[f],
                         bin_ptr[f + 1] - bin_ptr[f] - 1,
                         node_sums[k, 0], node_sums[k, 1], parent_score[k],
                         thresholds[k if per_node_thresholds else 0],
                         scale_g, scale_h, p, _at(node_bounds, k),
                         direction[f], &best[tid * n_nodes + k])


cdef void scan_numeric_node(const int64_t[:, ::1] hist,
                            const int64_t[::1] bin_ptr,
                            const double[::1] thresholds,
                            const uint8_t* allowed,
                            int64_t Gq, int64_t Hq, double parent_score,
                            double scale_g, double scale_h,
                            const RegParams* p,
                            HistCandidate* best) noexcept nogil:
    """Every allowed feature of one node (``hist``: its ``(n_bins, 2)``
    histogram) scanned in feature order into ``best``, on the calling
    thread: ``_scan_tasks``' numeric tasks of the node without monotone
    bounds. Under the total order of ``is_better`` the node's best is the
    one the parallel scan merges, whichever order its features come in
    (the per-node pipeline of ``_histogram.build_subtract_scan``)."""
    cdef Py_ssize_t f, n_features = bin_ptr.shape[0] - 1
    for f in range(n_features):
        if allowed[f]:
            scan_feature(hist, <int32_t> f, bin_ptr[f],
                         bin_ptr[f + 1] - bin_ptr[f] - 1, Gq, Hq,
                         parent_score, thresholds, scale_g, scale_h, p, NULL,
                         0, best)


cdef double[::1] _parent_scores(const int64_t[:, ::1] node_sums,
                                double scale_g, double scale_h,
                                const RegParams* p, bounds):
    """Each node's own score, from its exact sums (its weight clipped
    into its ``bounds``, when given)."""
    cdef Py_ssize_t k, n_nodes = node_sums.shape[0]
    cdef double[::1] scores = np.empty(max(n_nodes, 1))
    cdef NodeBounds* node_bounds = node_bounds_array(bounds, n_nodes)
    # once per node, not per candidate: the parent's score is the same for
    # every split of the node
    try:
        for k in range(n_nodes):
            if node_bounds == NULL:
                scores[k] = leaf_score(node_sums[k, 0] / scale_g,
                                       node_sums[k, 1] / scale_h, p)
            else:
                scores[k] = bounded_leaf_score(node_sums[k, 0] / scale_g,
                                               node_sums[k, 1] / scale_h,
                                               &node_bounds[k], p)
        return scores
    finally:
        free(node_bounds)


# The histogram finders' candidates leave the kernels in two steps: the
# threads' bests merged into thread 0's (merge_thread_bests, the one merge
# of _thread_bests.pxd), then written as SPLIT_RECORD rows (_to_records,
# through the packed SplitRecord below, which a test holds to the dtype).

cdef HistCandidate* _fresh_bests(Py_ssize_t count) except NULL:
    """``count`` candidates (threads x nodes) holding no split yet; the
    caller frees them."""
    cdef HistCandidate* best = <HistCandidate*> malloc(
        max(count, 1) * sizeof(HistCandidate))
    if best == NULL:
        raise MemoryError()
    cdef Py_ssize_t k
    for k in range(count):
        _reset_best(&best[k])
    return best


cdef inline void _reset_best(HistCandidate* best) noexcept nogil:
    """A candidate holding no split, every field set: a node without an
    admissible split leaves the scan with these values whatever the
    thread count (the left sums were left as malloc gave them)."""
    reset_candidate(&best.split)
    best.split_bin = -1
    best.Gq_left = 0
    best.Hq_left = 0
    best.cat_kind = NUMERIC_SPLIT


cdef object _merged_to_records(HistCandidate* best, int n_threads,
                               Py_ssize_t n_nodes):
    """Merge the threads' bests (``best[t * n_nodes + k]``) into thread 0's
    under the total order, then as records."""
    merge_thread_bests(best, n_nodes, n_threads, n_nodes)
    return _to_records(best, n_nodes)


# One row of ``splits.SPLIT_RECORD`` (an unaligned numpy dtype: a packed
# struct, field for field; a mismatch fails the buffer check on every call)
cdef packed struct SplitRecord:
    int32_t feature
    double threshold
    uint8_t default_left
    double gain
    double G_left
    double H_left
    int32_t split_bin
    int64_t Gq_left
    int64_t Hq_left
    uint8_t cat_kind


def _split_record_layout():
    """``(sizeof(SplitRecord), {field: byte offset})``: the struct as the C
    compiler laid it out, for the test that holds it to ``SPLIT_RECORD``
    (tests/test_hist_split.py)."""
    cdef SplitRecord r
    cdef size_t base = <size_t> &r
    offsets = {
        "feature": <size_t> &r.feature - base,
        "threshold": <size_t> &r.threshold - base,
        "default_left": <size_t> &r.default_left - base,
        "gain": <size_t> &r.gain - base,
        "G_left": <size_t> &r.G_left - base,
        "H_left": <size_t> &r.H_left - base,
        "split_bin": <size_t> &r.split_bin - base,
        "Gq_left": <size_t> &r.Gq_left - base,
        "Hq_left": <size_t> &r.Hq_left - base,
        "cat_kind": <size_t> &r.cat_kind - base,
    }
    return sizeof(SplitRecord), offsets


cdef object _to_records(const HistCandidate* best, Py_ssize_t n):
    """The first n candidates as ``SPLIT_RECORD`` rows: the one place the
    histogram finders' candidates become records (written in place: a
    column at a time took ~5 us of every scan call)."""
    records = np.empty(n, dtype=SPLIT_RECORD)
    # the buffer check compares SplitRecord's format with the dtype's on
    # every call (and raises on any mismatch)
    cdef SplitRecord[::1] out = records
    cdef Py_ssize_t k
    for k in range(n):
        out[k].feature = best[k].split.feature
        out[k].threshold = best[k].split.threshold
        out[k].default_left = best[k].split.default_left
        out[k].gain = best[k].split.gain
        out[k].G_left = best[k].split.G_left
        out[k].H_left = best[k].split.H_left
        out[k].split_bin = best[k].split_bin
        out[k].Gq_left = best[k].Gq_left
        out[k].Hq_left = best[k].Hq_left
        out[k].cat_kind = best[k].cat_kind
    return records


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_inputs(hist, node_sums, bin_ptr, thresholds, feature_allowed,
                  hist_rows, NodeCategoryLists category_lists):
    """Validates the inputs; returns the int64 histogram row of each node."""
    n_nodes, n_bins = node_sums.shape[0], hist.shape[1]
    if hist.shape[2] != 2 or node_sums.shape[1] != 2:
        raise ValueError("hist must be (n_hist, n_bins, 2), node_sums (n_nodes, 2)")
    if thresholds.shape[1] != n_bins or thresholds.shape[0] not in (1, n_nodes):
        raise ValueError("thresholds must be (1 or n_nodes, n_bins)")
    rows = scan_layout(hist, hist_rows, n_nodes, bin_ptr, feature_allowed)
    if category_lists is not None and (
            category_lists.n_nodes != n_nodes
            or category_lists.n_features != bin_ptr.shape[0] - 1
            or not category_lists.same_layout(bin_ptr)):
        raise ValueError("category_lists must be of these nodes and bins")
    return rows


def scan_layout(hist, hist_rows, Py_ssize_t n_nodes, bin_ptr, feature_allowed):
    """The checks every histogram scan shares (this one and the vector-leaf
    scan of _vector_hist): each node's histogram row inside ``hist``,
    ``bin_ptr`` describing hist's bins, one allowed-feature row per node.
    Returns the int64 histogram row of each node (0..n_nodes-1 if None)."""
    cdef Py_ssize_t n_bins = hist.shape[1], n_features = bin_ptr.shape[0] - 1
    if hist_rows is None:
        if hist.shape[0] != n_nodes:
            raise ValueError("hist must have one histogram per node")
        hist_rows = np.arange(n_nodes, dtype=np.int64)
    hist_rows = np.ascontiguousarray(hist_rows, dtype=np.int64)
    if hist_rows.shape != (n_nodes,) or not all_in_range[int64_t](
            hist_rows, 0, hist.shape[0]):
        raise ValueError("hist_rows must hold a row of hist for each node")
    if not rising_from_zero(np.ascontiguousarray(bin_ptr, dtype=np.int64),
                            n_bins):
        raise ValueError("bin_ptr must rise from 0 to n_bins, >= 1 bin each")
    if feature_allowed.shape[0] != n_nodes or (
            feature_allowed.shape[1] != n_features):
        raise ValueError("feature_allowed must be (n_nodes, n_features)")
    return hist_rows
