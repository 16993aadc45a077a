"""Sparsity-aware exact greedy split finder (paper Algorithms 1 and 3).

The training matrix is presorted once per fit (see ``_presort.py``): for each
feature a block of (value, row) pairs holding the non-missing entries only,
sorted by value. One level of the tree is grown at a time. For each feature,
ONE linear scan of its block serves every open node of the level: the row's
slot (its node among the open nodes) selects the accumulator the entry adds
to::

    block of feature j:  v0 <= v1 <= v2 <= ...        (present entries only)
                          |     |     |
    row_slot[row]:        2     0     2   ...  -> accumulators[slot] (G_L, H_L)

A candidate threshold sits between two consecutive distinct values of a node
(their midpoint). The forward scan puts missing values on the right; for the
nodes where feature j has missing values a backward scan puts them on the
left, so each split learns the direction of missing values. The block is
walked once: the forward walk keeps the (slot, value, gradients) of the
entries it meets, and the backward scan reads them back in reverse (the same
sums in the same order as a second walk, without gathering every row's slot
and gradients again). The cost of a level is linear in the number of present
entries.

Most candidates cannot beat their node's best so far; each is first tested
without the two divisions of its gain (see ``consider``).

Threads split the features. Each thread keeps its own accumulators and best
candidates; bests are merged with a total order (gain, feature, threshold),
so the result does not depend on the number of threads.
"""

import numpy as np

cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY

from ._common cimport (NO_FEATURE, NO_SLOT, PREFETCH_ROWS, SplitCandidate,
                       int32_t, int64_t, prefetch, uint8_t, is_better,
                       reset_candidate)
from ._gain cimport (RegParams, children_score_floor, is_l2_only,
                     leaf_score, make_reg_params, may_reach,
                     split_loss_reduction, split_loss_reduction_l2)


cdef class SortedColumns:
    """Presorted blocks of the present entries of each feature (CSC-like).

    Feature j owns ``values[col_ptr[j]:col_ptr[j+1]]`` (sorted, no NaN) and
    the matching ``rows``. Validated once here: the scan kernels rely on it
    and never re-check it.

    With ``missing_ptr`` (sparse input whose absent entries are 0.0), the
    blocks hold the stored values, feature j's stored *missing* entries are
    the rows ``missing_rows[missing_ptr[j]:missing_ptr[j+1]]``, and every
    other row has the value 0.0 (the implicit zero block, whose statistics
    the kernels recover from the node totals).

    Parameters
    ----------
    col_ptr : array-like of shape (n_features + 1,), int64
    values : array-like of shape (n_entries,), float32
    rows : array-like of shape (n_entries,), int32
    n_rows : int
        Number of rows of the matrix the entries come from.
    missing_ptr : array-like of shape (n_features + 1,), int64, optional
    missing_rows : array-like of shape (n_missing,), int32, optional
    """

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, col_ptr, values, rows, Py_ssize_t n_rows,
                 missing_ptr=None, missing_rows=None):
        col_ptr = np.ascontiguousarray(col_ptr, dtype=np.int64)
        values = np.ascontiguousarray(values, dtype=np.float32)
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        if col_ptr.ndim != 1 or col_ptr.shape[0] < 1 or col_ptr[0] != 0:
            raise ValueError("col_ptr must be 1-d, start at 0")
        if np.any(np.diff(col_ptr) < 0):
            raise ValueError("col_ptr must be non-decreasing")
        if values.ndim != 1 or rows.ndim != 1 or not (
                col_ptr[-1] == values.shape[0] == rows.shape[0]):
            raise ValueError("col_ptr does not match the sorted blocks")
        if n_rows < 0 or (rows.size and (rows.min() < 0
                                         or rows.max() >= n_rows)):
            raise ValueError("rows must be indices in [0, n_rows)")
        if np.isnan(values).any():
            raise ValueError("the sorted blocks hold present values only")
        self.col_ptr = col_ptr
        self.values = values
        self.rows = rows
        self.n_rows = n_rows
        self.n_features = col_ptr.shape[0] - 1
        self.zero_absent = missing_ptr is not None
        if not self.zero_absent:
            missing_ptr = np.zeros(col_ptr.shape[0], dtype=np.int64)
            missing_rows = np.empty(0, dtype=np.int32)
        missing_ptr = np.ascontiguousarray(missing_ptr, dtype=np.int64)
        missing_rows = np.ascontiguousarray(missing_rows, dtype=np.int32)
        if missing_ptr.shape != col_ptr.shape or missing_ptr[0] != 0 or (
                missing_ptr[-1] != missing_rows.shape[0]) or np.any(
                    np.diff(missing_ptr) < 0):
            raise ValueError("missing_ptr does not match missing_rows")
        if missing_rows.size and (missing_rows.min() < 0
                                  or missing_rows.max() >= n_rows):
            raise ValueError("missing_rows must be indices in [0, n_rows)")
        self.missing_ptr = missing_ptr
        self.missing_rows = missing_rows


ctypedef struct ScanAccumulator:
    double G               # sum of gradients seen so far in this node
    double H               # sum of hessians seen so far in this node
    int64_t count          # number of present entries seen so far
    float last_value       # value of the previous entry of this node
    bint enabled           # the node may split on the feature being scanned
    bint has_missing       # ... and has missing values of it (after the scan)
    # the summed children scores a candidate must reach to possibly beat
    # the node's best (see `consider`); -inf: no cheap test
    double need
    # the implicit zero block (absent entries read as 0.0), if any
    double zero_G
    double zero_H
    int64_t zero_count
    bint zero_pending      # not yet added in the current scan


ctypedef struct SeenEntry:
    # An entry the forward walk met, kept for the backward one (walking the
    # block again would gather every row's slot and gradients again)
    double g               # weighted gradient and hessian
    double h
    float value
    int32_t slot


ctypedef struct ScanContext:
    # what a scan step needs besides the node's accumulator
    int32_t feature
    const double* node_G
    const double* node_H
    const double* parent_score
    const RegParams* p
    bint l2_only
    SeenEntry* seen        # NULL when the feature has no missing value
    Py_ssize_t n_seen


cdef inline bint offer(SplitCandidate* best, double gain, int32_t feature,
                       double threshold, double G_left, double H_left,
                       bint default_left) noexcept nogil:
    if is_better(gain, feature, threshold, best):
        best.gain = gain
        best.feature = feature
        best.threshold = threshold
        best.G_left = G_left
        best.H_left = H_left
        best.default_left = default_left
        return True
    return False


cdef inline double reduction(double G_left, double H_left, double G_right,
                             double H_right, double parent_score,
                             const ScanContext* c) noexcept nogil:
    if c.l2_only:
        return split_loss_reduction_l2(G_left, H_left, G_right, H_right,
                                       parent_score, c.p.reg_lambda)
    return split_loss_reduction(G_left, H_left, G_right, H_right,
                                parent_score, c.p)


cdef inline double children_score_needed(const SplitCandidate* best,
                                         double parent_score,
                                         const ScanContext* c) noexcept nogil:
    """The children_score_floor of ``best`` (see ``_gain.pxd``); -inf
    when the cheap test does not apply (L1 term or clipping, or no best)."""
    if not c.l2_only or best.feature == NO_FEATURE:
        return -INFINITY
    return children_score_floor(best.gain, parent_score)


cdef inline void consider(ScanAccumulator* a, SplitCandidate* best,
                          int32_t slot, double G_left, double H_left,
                          double G_right, double H_right, double threshold,
                          bint default_left,
                          const ScanContext* c) noexcept nogil:
    """Offer a candidate split of node ``slot`` whose children both satisfy
    min_child_weight.

    Most candidates cannot beat the node's best, and the gain costs two
    divisions: only the candidates passing the division-free ``may_reach``
    test against the node's floor get their gain computed and offered (the
    same gains and choices as without the test)."""
    # one branch, rarely taken (several would each be mispredicted often)
    cdef bint may_win = (
        (H_left >= c.p.min_child_weight) & (H_right >= c.p.min_child_weight)
        & ((a.need == -INFINITY)
           | may_reach(a.need, G_left, H_left, G_right, H_right,
                       c.p.reg_lambda)))
    if not may_win:
        return
    if offer(best, reduction(G_left, H_left, G_right, H_right,
                             c.parent_score[slot], c),
             c.feature, threshold, G_left, H_left, default_left):
        a.need = children_score_needed(best, c.parent_score[slot], c)


cdef inline double midpoint(float below, float above) noexcept nogil:
    return 0.5 * (<double> below + <double> above)


cdef inline void forward_step(ScanAccumulator* a, SplitCandidate* best,
                              int32_t slot, float v, double g, double h,
                              int64_t n, ScanContext* c) noexcept nogil:
    """Entries of value v (n rows, sums g, h) arrive in ascending order: the
    boundary below them is a candidate (left = what came before, missing
    right), then they join the left side."""
    if a.count > 0 and v != a.last_value:
        consider(a, best, slot, a.G, a.H, c.node_G[slot] - a.G,
                 c.node_H[slot] - a.H, midpoint(a.last_value, v), False, c)
    a.G += g
    a.H += h
    a.count += n
    a.last_value = v


cdef inline void backward_step(ScanAccumulator* a, SplitCandidate* best,
                               int32_t slot, float v, double g, double h,
                               int64_t n, const ScanContext* c) noexcept nogil:
    """The mirror image: descending order, right = what came before,
    missing left."""
    if a.count > 0 and v != a.last_value:
        consider(a, best, slot, c.node_G[slot] - a.G, c.node_H[slot] - a.H,
                 a.G, a.H, midpoint(v, a.last_value), True, c)
    a.G += g
    a.H += h
    a.count += n
    a.last_value = v


cdef inline void zero_block_sums(
        int32_t feature, const int64_t[::1] col_ptr,
        const int32_t[::1] rows, const int64_t[::1] missing_ptr,
        const int32_t[::1] missing_rows, const float[:, ::1] gpair,
        const int32_t[::1] row_slot, const double[::1] weight, bint weighted,
        ScanAccumulator* acc, Py_ssize_t n_slots, const double[::1] node_G,
        const double[::1] node_H,
        const int64_t[::1] node_count) noexcept nogil:
    """Each node's zero block: its totals minus its stored entries
    (present and missing) of this feature."""
    cdef Py_ssize_t slot
    for slot in range(n_slots):
        acc[slot].zero_G = node_G[slot]
        acc[slot].zero_H = node_H[slot]
        acc[slot].zero_count = node_count[slot]
    subtract_rows(rows, col_ptr[feature], col_ptr[feature + 1], gpair,
                  row_slot, weight, weighted, acc)
    subtract_rows(missing_rows, missing_ptr[feature],
                  missing_ptr[feature + 1], gpair, row_slot, weight,
                  weighted, acc)


cdef inline void subtract_rows(const int32_t[::1] rows, int64_t begin,
                               int64_t end, const float[:, ::1] gpair,
                               const int32_t[::1] row_slot,
                               const double[::1] weight, bint weighted,
                               ScanAccumulator* acc) noexcept nogil:
    """Take the rows ``rows[begin:end]`` out of their nodes' zero blocks."""
    cdef int64_t k
    cdef int32_t row, s
    cdef double g, h
    for k in range(begin, end):
        row = rows[k]
        s = row_slot[row]
        if s == NO_SLOT:
            continue
        g = gpair[row, 0]
        h = gpair[row, 1]
        if weighted:
            g = g * weight[row]
            h = h * weight[row]
        acc[s].zero_G -= g
        acc[s].zero_H -= h
        acc[s].zero_count -= 1


cdef void start_scan(int32_t feature, ScanAccumulator* acc,
                     const SplitCandidate* best, Py_ssize_t n_slots,
                     const uint8_t[:, ::1] feature_allowed,
                     const ScanContext* c) noexcept nogil:
    cdef Py_ssize_t slot
    for slot in range(n_slots):
        acc[slot].G = 0.0
        acc[slot].H = 0.0
        acc[slot].count = 0
        acc[slot].enabled = feature_allowed[slot, feature]
        acc[slot].has_missing = False
        acc[slot].zero_pending = False
        acc[slot].need = children_score_needed(&best[slot],
                                               c.parent_score[slot], c)


cdef inline void keep_entry(ScanContext* c, int32_t slot, float v, double g,
                            double h) noexcept nogil:
    cdef SeenEntry* e = &c.seen[c.n_seen]
    c.n_seen += 1
    e.g = g
    e.h = h
    e.value = v
    e.slot = slot


cdef void forward_scan(int64_t start, int64_t end, const float[::1] values,
                       const int32_t[::1] rows, const float[:, ::1] gpair,
                       const int32_t[::1] row_slot, const double[::1] weight,
                       bint weighted, ScanAccumulator* acc,
                       SplitCandidate* best, Py_ssize_t n_slots,
                       ScanContext* c) noexcept nogil:
    """Ascending walk of a block: left = present entries below the
    threshold, missing right. The zero block joins in at value 0, before
    the first positive entry."""
    cdef int64_t k
    cdef int32_t row, slot
    cdef float v
    cdef double g, h
    for k in range(start, end):
        # the rows of a block are in value order, i.e. scattered: fetch the
        # slot and gradients of an entry ahead (paper section 4.2)
        if k + PREFETCH_ROWS < end:
            prefetch(&row_slot[rows[k + PREFETCH_ROWS]])
            prefetch(&gpair[rows[k + PREFETCH_ROWS], 0])
        row = rows[k]
        slot = row_slot[row]
        if slot == NO_SLOT or not acc[slot].enabled:
            continue
        v = values[k]
        if acc[slot].zero_pending and v > 0:
            forward_step(&acc[slot], &best[slot], slot, 0.0,
                         acc[slot].zero_G, acc[slot].zero_H,
                         acc[slot].zero_count, c)
            acc[slot].zero_pending = False
        g = gpair[row, 0]
        h = gpair[row, 1]
        if weighted:
            g = g * weight[row]
            h = h * weight[row]
        forward_step(&acc[slot], &best[slot], slot, v, g, h, 1, c)
        if c.seen != NULL:
            keep_entry(c, slot, v, g, h)
    for slot in range(n_slots):
        if acc[slot].zero_pending:
            forward_step(&acc[slot], &best[slot], slot, 0.0,
                         acc[slot].zero_G, acc[slot].zero_H,
                         acc[slot].zero_count, c)


cdef bint split_on_missingness(ScanAccumulator* acc, SplitCandidate* best,
                               Py_ssize_t n_slots,
                               const int64_t[::1] node_count,
                               ScanContext* c) noexcept nogil:
    """All present entries left, missing right: a split on missingness
    itself. Marks the nodes with missing values (returns whether any has);
    the nodes without send missing values left (their candidates had both
    directions equal)."""
    cdef Py_ssize_t slot
    cdef bint any_missing = False
    for slot in range(n_slots):
        if not acc[slot].enabled or acc[slot].count == 0:
            continue
        if acc[slot].count == node_count[slot]:
            if best[slot].feature == c.feature:
                best[slot].default_left = True
            continue
        any_missing = True
        acc[slot].has_missing = True
        # threshold +inf: every present value, seen or unseen, goes left
        consider(&acc[slot], &best[slot], <int32_t> slot, acc[slot].G,
                 acc[slot].H, c.node_G[slot] - acc[slot].G,
                 c.node_H[slot] - acc[slot].H, INFINITY, False, c)
    return any_missing


cdef void backward_scan(ScanAccumulator* acc, SplitCandidate* best,
                        Py_ssize_t n_slots, bint zero_absent,
                        const ScanContext* c) noexcept nogil:
    """The entries the forward walk kept, in descending order, for the
    nodes with missing values: right = present entries at or above the
    threshold, missing left. The same sums, in the same order, as a second
    walk of the block. The zero block joins in after the last negative
    entry."""
    cdef Py_ssize_t i, slot
    cdef const SeenEntry* e
    for slot in range(n_slots):
        acc[slot].G = 0.0
        acc[slot].H = 0.0
        acc[slot].count = 0
        acc[slot].zero_pending = (acc[slot].has_missing and zero_absent
                                  and acc[slot].zero_count > 0)
    for i in range(c.n_seen - 1, -1, -1):
        e = &c.seen[i]
        slot = e.slot
        if not acc[slot].has_missing:
            continue
        if acc[slot].zero_pending and e.value < 0:
            backward_step(&acc[slot], &best[slot], <int32_t> slot, 0.0,
                          acc[slot].zero_G, acc[slot].zero_H,
                          acc[slot].zero_count, c)
            acc[slot].zero_pending = False
        backward_step(&acc[slot], &best[slot], <int32_t> slot, e.value, e.g,
                      e.h, 1, c)
    for slot in range(n_slots):
        if acc[slot].zero_pending:
            backward_step(&acc[slot], &best[slot], <int32_t> slot, 0.0,
                          acc[slot].zero_G, acc[slot].zero_H,
                          acc[slot].zero_count, c)


cdef void scan_feature(
        int32_t feature,
        const int64_t[::1] col_ptr,
        const float[::1] values,
        const int32_t[::1] rows,
        const float[:, ::1] gpair,
        const int32_t[::1] row_slot,
        const double[::1] node_G,
        const double[::1] node_H,
        const double[::1] parent_score,
        const int64_t[::1] node_count,
        const uint8_t[:, ::1] feature_allowed,
        const double[::1] weight,
        bint weighted,
        const RegParams* p,
        bint zero_absent,              # absent entries are a zero block
        const int64_t[::1] missing_ptr,
        const int32_t[::1] missing_rows,
        ScanAccumulator* acc,          # OUT scratch, n_slots entries
        SeenEntry* seen,               # OUT scratch, NULL: no missing values
        SplitCandidate* best,          # IN/OUT, n_slots entries
) noexcept nogil:
    """One walk of feature's block offers every open node's candidates,
    missing right; the entries it kept give the missing-left ones."""
    cdef Py_ssize_t n_slots = node_G.shape[0]
    cdef Py_ssize_t slot
    cdef ScanContext ctx
    ctx.feature = feature
    ctx.node_G = &node_G[0]
    ctx.node_H = &node_H[0]
    ctx.parent_score = &parent_score[0]
    ctx.p = p
    ctx.l2_only = is_l2_only(p)
    ctx.seen = seen
    ctx.n_seen = 0

    start_scan(feature, acc, best, n_slots, feature_allowed, &ctx)
    if zero_absent:
        zero_block_sums(feature, col_ptr, rows, missing_ptr, missing_rows,
                        gpair, row_slot, weight, weighted, acc, n_slots,
                        node_G, node_H, node_count)
        for slot in range(n_slots):
            acc[slot].zero_pending = (acc[slot].enabled
                                      and acc[slot].zero_count > 0)
    forward_scan(col_ptr[feature], col_ptr[feature + 1], values, rows, gpair,
                 row_slot, weight, weighted, acc, best, n_slots, &ctx)
    if split_on_missingness(acc, best, n_slots, node_count, &ctx) and (
            seen != NULL):
        backward_scan(acc, best, n_slots, zero_absent, &ctx)


def find_best_splits(
        SortedColumns columns not None,        # IN presorted blocks
        const float[:, ::1] gpair not None,    # IN (n_rows, 2)
        const int32_t[::1] row_slot not None,  # IN (n_rows,)
        const double[::1] node_G not None,     # IN (n_slots,)
        const double[::1] node_H not None,     # IN (n_slots,)
        const int64_t[::1] node_count not None,  # IN (n_slots,) active rows
        const uint8_t[:, ::1] feature_allowed not None,  # (n_slots, n_features)
        double reg_lambda, double reg_alpha, double max_delta_step,
        double min_child_weight, int n_threads, weight=None):
    """Best split of every open node of a level, over all allowed features.

    ``gpair`` holds unweighted per-row gradients; ``weight`` (float64, one per
    row, None for unit weights) multiplies them inside the float64 sums. A
    weight w then adds exactly what w copies of the row add, so fitting with
    integer weights gives the same sums, hence the same tie-breaks, as
    fitting on repeated rows.

    Returns
    -------
    splits : dict of ndarray, each of shape (n_slots,)
        ``gain`` (loss reduction before gamma), ``feature`` (-1 where no
        split satisfies min_child_weight), ``threshold``, ``default_left``,
        ``G_left`` and ``H_left`` (statistics of the left child).
    """
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const float[::1] sorted_values = columns.values
    cdef const int32_t[::1] sorted_rows = columns.rows
    cdef Py_ssize_t n_features = columns.n_features
    cdef Py_ssize_t n_slots = node_G.shape[0]
    cdef Py_ssize_t n_rows = gpair.shape[0]
    cdef bint zero_absent = columns.zero_absent
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    cdef const int32_t[::1] missing_rows = columns.missing_rows
    _check_inputs(columns, gpair, row_slot, node_G, node_H, node_count,
                  feature_allowed, n_threads)

    cdef bint weighted = weight is not None
    cdef const double[::1] weight_view = _check_weight(weight, n_rows)
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    cdef double[::1] parent_score = np.empty(n_slots, dtype=np.float64)
    cdef Py_ssize_t s, t
    cdef int tid
    cdef int32_t feature
    cdef SplitCandidate* c
    for s in range(n_slots):
        parent_score[s] = leaf_score(node_G[s], node_H[s], &p)

    # Each thread's scratch starts on its own cache lines: the accumulators
    # are written on every entry, and a line shared by two threads would
    # bounce between their cores (false sharing).
    cdef Py_ssize_t acc_stride = padded_count(n_slots, sizeof(ScanAccumulator))
    cdef Py_ssize_t best_stride = padded_count(n_slots, sizeof(SplitCandidate))
    acc_buffer = np.empty(n_threads * acc_stride * sizeof(ScanAccumulator)
                          + CACHE_LINE, dtype=np.uint8)
    best_buffer = np.empty(n_threads * best_stride * sizeof(SplitCandidate)
                           + CACHE_LINE, dtype=np.uint8)
    cdef ScanAccumulator* acc = <ScanAccumulator*> aligned(acc_buffer)
    cdef SplitCandidate* best = <SplitCandidate*> aligned(best_buffer)
    # the entries kept by the features that have missing values
    cdef const uint8_t[::1] keeps = features_with_missing(columns)
    cdef Py_ssize_t seen_stride = padded_count(
        longest_block(columns, keeps), sizeof(SeenEntry))
    seen_buffer = np.empty(n_threads * seen_stride * sizeof(SeenEntry)
                           + CACHE_LINE, dtype=np.uint8)
    cdef SeenEntry* seen = <SeenEntry*> aligned(seen_buffer)
    for t in range(n_threads):
        for s in range(n_slots):
            reset_candidate(&best[t * best_stride + s])
    for feature in prange(n_features, nogil=True, schedule="dynamic",
                          num_threads=n_threads):
        tid = threadid()
        scan_feature(feature, col_ptr, sorted_values, sorted_rows, gpair,
                     row_slot, node_G, node_H, parent_score, node_count,
                     feature_allowed, weight_view, weighted, &p,
                     zero_absent, missing_ptr, missing_rows,
                     &acc[tid * acc_stride],
                     &seen[tid * seen_stride] if keeps[feature] else NULL,
                     &best[tid * best_stride])
    # Merge the threads' bests into thread 0's under the total order.
    for t in range(1, n_threads):
        for s in range(n_slots):
            c = &best[t * best_stride + s]
            if c.feature >= 0 and is_better(c.gain, c.feature,
                                            c.threshold, &best[s]):
                best[s] = c[0]
    return _candidates_to_arrays(best, n_slots)


def features_with_missing(SortedColumns columns):
    """Whether each feature may have missing values in some node (uint8):
    a block shorter than the column, or stored missing entries when absent
    entries are zeros."""
    if columns.zero_absent:
        out = np.diff(columns.missing_ptr) > 0
    else:
        out = np.diff(columns.col_ptr) < columns.n_rows
    return out.astype(np.uint8)


def longest_block(SortedColumns columns, keeps):
    """Most entries one feature's walk can keep (0 if none keeps any)."""
    lengths = np.diff(columns.col_ptr)[np.asarray(keeps, dtype=bool)]
    return int(lengths.max()) if lengths.size else 0


cdef enum:
    CACHE_LINE = 64


cdef Py_ssize_t padded_count(Py_ssize_t n, size_t item_size):
    """n items rounded up to whole cache lines (in items); at least 1."""
    cdef Py_ssize_t per_line = max(<Py_ssize_t> (CACHE_LINE // item_size), 1)
    return max(((n + per_line - 1) // per_line) * per_line, 1)


cdef char* aligned(object buffer):
    """First cache-line boundary inside a uint8 buffer (which has
    CACHE_LINE spare bytes for it)."""
    cdef unsigned char[::1] view = buffer
    cdef size_t address = <size_t> &view[0]
    return <char*> &view[0] + (-address) % CACHE_LINE


cdef dict _candidates_to_arrays(const SplitCandidate* best, Py_ssize_t n):
    out = {
        "gain": np.empty(n, dtype=np.float64),
        "feature": np.empty(n, dtype=np.int32),
        "threshold": np.empty(n, dtype=np.float64),
        "default_left": np.empty(n, dtype=np.uint8),
        "G_left": np.empty(n, dtype=np.float64),
        "H_left": np.empty(n, dtype=np.float64),
    }
    cdef double[::1] gain = out["gain"], threshold = out["threshold"]
    cdef double[::1] G_left = out["G_left"], H_left = out["H_left"]
    cdef int32_t[::1] feature = out["feature"]
    cdef uint8_t[::1] default_left = out["default_left"]
    cdef Py_ssize_t s
    for s in range(n):
        gain[s] = best[s].gain
        feature[s] = best[s].feature
        threshold[s] = best[s].threshold
        default_left[s] = best[s].default_left
        G_left[s] = best[s].G_left
        H_left[s] = best[s].H_left
    return out


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_weight(weight, n_rows):
    if weight is None:
        return np.ones(1, dtype=np.float64)  # never read
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    if weight.shape != (n_rows,):
        raise ValueError("weight must have one entry per row")
    return weight


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_inputs(columns, gpair, row_slot, node_G, node_H, node_count,
                  feature_allowed, n_threads):
    """Shapes that the nogil scan relies on (the blocks themselves were
    validated by SortedColumns)."""
    n_slots = node_G.shape[0]
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if gpair.shape[1] != 2 or gpair.shape[0] != columns.n_rows or (
            row_slot.shape[0] != columns.n_rows):
        raise ValueError("gpair must be (n_rows, 2) and row_slot (n_rows,)")
    if not (node_H.shape[0] == node_count.shape[0] == n_slots):
        raise ValueError("node statistics must all have n_slots entries")
    if (feature_allowed.shape[0] != n_slots
            or feature_allowed.shape[1] != columns.n_features):
        raise ValueError("feature_allowed must be (n_slots, n_features)")
    slots = np.asarray(row_slot)
    if slots.size and (slots.max() >= n_slots or slots.min() < -1):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
