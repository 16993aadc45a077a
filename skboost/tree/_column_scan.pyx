"""The histogram finder for sparse input, column-wise.

A dense bin matrix, histograms of every bin for every node and the
subtraction trick all cost O(n_rows x n_features) or O(n_bins) per node,
hopeless for wide sparse data. Here each stored entry of the presorted
columns has its bin (``BinnedColumns``), and one walk of the columns per
level finds every open node's best split (``find_best_splits_columns``),
with the missing (absent) values' statistics recovered from the node
totals: the cost of a level is linear in the stored entries. The candidates
are offered with the histogram finder's arithmetic and order
(``_hist_split.pxd``), so the splits are those ``find_best_splits_hist``
would choose on the same bins.
"""

import numpy as np

cimport cython

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

from .._parallel cimport capped
from ._common cimport PREFETCH_ROWS, int32_t, int64_t, prefetch, uint8_t
from ._context cimport SplitContext, reg_params
from ._gain cimport (NodeBounds, RegParams, feature_directions, is_l2_only,
                     node_bounds_array)
from ._hist_split cimport (HistCandidate, _at, _fresh_bests,
                           _merged_to_records, _parent_scores, offer_boundary,
                           with_direction)
from ._node_blocks cimport (BlockData, GroupData, NodeBlocks, SplitStep,
                            _block_data, _group_data, split_step_feature)
from ._presorted cimport SortedColumns


# One feature's column, walked for every open node at once:
#
#     column (value order):  e0 e1 e2 e3 e4 e5 ...    (entry -> its row)
#     row_slot[row]:         n2 n0 n2 n1 n0 n2        (node of each entry)
#     pass 1: per node, the sums of its present entries (so its missing
#             sums are its totals minus them, with no pass over the rows)
#     pass 2: per node, a running sum; a change of bin between two of a
#             node's consecutive entries is a boundary, offered as the
#             histogram scan would offer it
#
# The nodes' entries interleave, so each node keeps its walk's state in a
# small per-thread table (sums[node], last_bin[node]); only the nodes the
# feature meets are visited at the end (`touched`), not every open node.
#
# The entries' rows come in value order, so their slots and gradients are
# read at random (most of a level's time): they are gathered once per
# column, with the rows a few entries ahead prefetched, into a per-thread
# buffer that both passes then read in order (`_gather_column`).

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
        # every code checked against its own feature's value bins (the
        # kernels then index thresholds by code without a check)
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
        *, SplitContext context not None, bounds=None, monotone=None):
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

    ``context`` holds the regularisation, the fixed-point scales of the
    sums and the thread count (the categorical limits are not used);
    ``bounds`` and ``monotone`` are the monotone constraints, as in
    ``find_best_splits_hist``.

    Returns
    -------
    splits : ndarray of shape (n_nodes,), dtype ``splits.SPLIT_RECORD``
        As ``find_best_splits_hist``: numeric splits only.
    """
    cdef SortedColumns columns = binned.columns
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef Py_ssize_t n_features = columns.n_features
    _check_columns_inputs(binned, thresholds, row_slot, quantized, node_sums,
                          feature_allowed)
    cdef int n_threads = capped(context.n_threads)
    cdef RegParams p = reg_params(context)
    cdef double[::1] parent_score = _parent_scores(
        node_sums, context.scale_g, context.scale_h, &p, bounds)
    cdef const signed char[::1] direction = feature_directions(monotone,
                                                               n_features)
    cdef ColumnScan scan
    _column_scan(&scan, binned, row_slot, quantized, feature_allowed)
    cdef LevelScoring level
    level.node_sums = &node_sums[0, 0] if n_nodes else NULL
    level.parent_score = &parent_score[0]
    level.scale_g = context.scale_g
    level.scale_h = context.scale_h
    level.p = &p
    level.l2_only = is_l2_only(&p)
    level.node_bounds = node_bounds_array(bounds, n_nodes)
    try:
        return _scan_level(&scan, &level, binned, thresholds, direction,
                           n_nodes, n_threads)
    finally:
        free(level.node_bounds)


cdef object _scan_level(const ColumnScan* scan, const LevelScoring* level,
                        BinnedColumns binned, const double[::1] thresholds,
                        const signed char[::1] direction, Py_ssize_t n_nodes,
                        int n_threads):
    """Every feature's column walked, in parallel over features, each
    thread into its own bests and its own per-node state; the bests then
    merged (_thread_bests.pxd) into records."""
    # per thread and node: present sums, running sums, missing sums, zero
    # block pending, last bin seen
    cdef int64_t[:, :, ::1] sums = np.zeros((n_threads, max(n_nodes, 1), 8),
                                            dtype=np.int64)
    cdef int32_t[:, ::1] last_bin = np.full((n_threads, max(n_nodes, 1)), -1,
                                            dtype=np.int32)
    cdef int32_t[:, ::1] touched = np.empty((n_threads, max(n_nodes, 1)),
                                            dtype=np.int32)
    cdef const int32_t[::1] zero_codes = binned.zero_codes
    cdef const int64_t[::1] bin_ptr = binned.bin_ptr
    cdef Py_ssize_t f
    cdef int tid
    # per thread: the gathered entries of the column it walks
    cdef Py_ssize_t room = max(_longest_column(scan), 1)
    cdef ColumnEntry* gathered = <ColumnEntry*> malloc(
        n_threads * room * sizeof(ColumnEntry))
    if gathered == NULL:
        raise MemoryError()
    cdef HistCandidate* best = NULL
    try:
        best = _fresh_bests(n_threads * n_nodes)
        # one feature per task (dynamic: columns differ in stored entries);
        # a feature's candidates go to the thread's own bests, and the
        # merge's total order makes the result thread-independent
        for f in prange(scan.n_features, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            tid = threadid()
            scan_column(scan, level,
                        _feature_scan(<int32_t> f, bin_ptr, zero_codes,
                                      thresholds, direction),
                        &sums[tid, 0, 0], &last_bin[tid, 0],
                        &touched[tid, 0], &gathered[tid * room],
                        &best[tid * n_nodes])
        return _merged_to_records(best, n_threads, n_nodes)
    finally:
        free(best)
        free(gathered)


cdef Py_ssize_t _longest_column(const ColumnScan* scan) noexcept nogil:
    """Most stored entries of one column."""
    cdef Py_ssize_t f, longest = 0
    for f in range(scan.n_features):
        longest = max(longest, scan.col_ptr[f + 1] - scan.col_ptr[f])
    return longest


ctypedef struct ColumnEntry:
    # one stored entry of the column being walked, with its row's state
    # gathered (the rows' arrays are read once per entry, prefetched)
    int64_t qg
    int64_t qh
    int32_t node
    int32_t code


cdef Py_ssize_t _gather_column(const ColumnScan scan, int32_t f,
                               ColumnEntry* out) noexcept nogil:
    """Feature f's stored entries of rows in a node that scans f, in value
    order, with their node and fixed-point gradient pair; returns how many.
    The rows are in value order, so their slots and gradients are read at
    random: the rows a few entries ahead are prefetched."""
    cdef int64_t k, start = scan.col_ptr[f], stop = scan.col_ptr[f + 1]
    cdef int64_t ahead
    cdef int32_t row, node
    cdef Py_ssize_t n = 0
    for k in range(start, stop):
        ahead = k + PREFETCH_ROWS
        if ahead < stop:
            prefetch(&scan.row_slot[scan.rows[ahead]])
            prefetch(&scan.quantized[2 * scan.rows[ahead]])
        row = scan.rows[k]
        node = scan.row_slot[row]
        if not _scans(scan, node, f):
            continue
        out[n].qg = scan.quantized[2 * row]
        out[n].qh = scan.quantized[2 * row + 1]
        out[n].node = node
        out[n].code = scan.codes[k]
        n += 1
    return n


ctypedef struct ColumnScan:
    # the presorted columns a level's scan walks, and the rows' state
    const int64_t* col_ptr
    const int32_t* rows
    const int32_t* codes
    const int64_t* missing_ptr
    const int32_t* missing_rows
    bint zero_absent
    const int32_t* row_slot         # (n_rows,) slot or -1
    const int64_t* quantized        # (n_rows, 2) fixed-point gradient pairs
    const uint8_t* allowed          # (n_nodes, n_features) feature masks
    Py_ssize_t n_features


ctypedef struct LevelScoring:
    # what every candidate of the level's nodes is scored with
    const int64_t* node_sums        # (n_nodes, 2) exact totals
    const double* parent_score      # (n_nodes,)
    double scale_g
    double scale_h
    const RegParams* p
    bint l2_only
    const NodeBounds* node_bounds   # (n_nodes,) monotone bounds; NULL: none


ctypedef struct FeatureScan:
    # the feature one thread walks (passed by value: each prange iteration
    # has its own)
    int32_t index
    int64_t n_value_bins
    int32_t zero_code               # the value bin of 0.0
    const double* thresholds        # the feature's thresholds, by bin
    int direction                   # its monotone constraint


cdef inline FeatureScan _feature_scan(int32_t f, const int64_t[::1] bin_ptr,
                                      const int32_t[::1] zero_codes,
                                      const double[::1] thresholds,
                                      const signed char[::1] direction
                                      ) noexcept nogil:
    cdef FeatureScan F
    F.index = f
    F.n_value_bins = bin_ptr[f + 1] - bin_ptr[f] - 1
    F.zero_code = zero_codes[f]
    F.thresholds = &thresholds[bin_ptr[f]]
    F.direction = direction[f]
    return F


cdef void _column_scan(ColumnScan* scan, BinnedColumns binned,
                       const int32_t[::1] row_slot,
                       const int64_t[:, ::1] quantized,
                       const uint8_t[:, ::1] feature_allowed):
    """Pointers into validated arrays (kept alive by the caller)."""
    cdef SortedColumns columns = binned.columns
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const int64_t[::1] missing_ptr = columns.missing_ptr
    scan.col_ptr = &col_ptr[0]
    scan.rows = _int32_pointer(columns.rows)
    scan.codes = _int32_pointer(binned.entry_codes)
    scan.missing_ptr = &missing_ptr[0]
    scan.missing_rows = _int32_pointer(columns.missing_rows)
    scan.zero_absent = columns.zero_absent
    scan.row_slot = &row_slot[0] if row_slot.shape[0] else NULL
    scan.quantized = &quantized[0, 0] if quantized.shape[0] else NULL
    scan.allowed = (&feature_allowed[0, 0] if feature_allowed.shape[0]
                    and feature_allowed.shape[1] else NULL)
    scan.n_features = columns.n_features


cdef const int32_t* _int32_pointer(array):
    """Data pointer of a validated int32 array (NULL when empty)."""
    cdef const int32_t[::1] view = array
    return &view[0] if view.shape[0] else NULL


# Fields of a node's scan state (int64 each).
cdef enum:
    PRESENT_G = 0      # sums of its present (stored, non-missing) entries
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
    # last_bin doubles as the "met" flag: -1 between features, -2 met but
    # no entry walked yet, else the bin of the last entry walked
    if last_bin[node] == -1:
        last_bin[node] = -2
        touched[n_touched[0]] = node
        n_touched[0] += 1
        for i in range(STATE_SIZE):
            s[i] = 0
    return s


cdef inline void walk_step(HistCandidate* best, const LevelScoring L,
                           const FeatureScan F, int32_t node, int64_t* s,
                           int32_t* last_bin, int32_t code, int64_t qg,
                           int64_t qh, int64_t Gq_miss,
                           int64_t Hq_miss) noexcept nogil:
    """The node's next entries in value order (bin ``code``, sums qg, qh):
    offer the boundaries the histogram scan would see below them, then
    add them to the left side. ``last_bin`` points to the node's last bin
    walked (-2 before its first entry)."""
    cdef NodeBounds feature_bounds
    cdef const NodeBounds* bounds = with_direction(
        &feature_bounds, _at(L.node_bounds, node), F.direction)
    cdef int64_t Gq = L.node_sums[2 * node], Hq = L.node_sums[2 * node + 1]
    cdef bint has_missing = Gq_miss != 0 or Hq_miss != 0
    cdef int32_t b = last_bin[0]
    # a boundary is offered when the bin changes: entries of one bin are
    # one histogram bin, which no histogram split can cut
    if b == -2:
        # the node's first entry: bins below it hold no present entry;
        # at bin 0, missing values alone may go left
        if code > 0 and has_missing:
            offer_boundary(best, F.index, F.thresholds[0], 0, Gq_miss,
                           Hq_miss, Gq, Hq, L.parent_score[node], L.scale_g,
                           L.scale_h, L.p, L.l2_only, True, bounds)
    elif code != b:
        offer_boundary(best, F.index, F.thresholds[b], b, s[LEFT_G],
                       s[LEFT_H], Gq, Hq, L.parent_score[node], L.scale_g,
                       L.scale_h, L.p, L.l2_only, False, bounds)
        if has_missing and b != F.n_value_bins - 1:
            offer_boundary(best, F.index, F.thresholds[b], b,
                           s[LEFT_G] + Gq_miss, s[LEFT_H] + Hq_miss, Gq, Hq,
                           L.parent_score[node], L.scale_g, L.scale_h, L.p,
                           L.l2_only, True, bounds)
    s[LEFT_G] += qg
    s[LEFT_H] += qh
    last_bin[0] = code


cdef void scan_column(const ColumnScan* columns, const LevelScoring* level,
                      const FeatureScan F,
                      int64_t* sums,        # (n_nodes, STATE_SIZE) this thread's
                      int32_t* last_bin,    # (n_nodes,) -1 between calls
                      int32_t* touched,     # (n_nodes,) scratch
                      ColumnEntry* gathered,  # room for the column
                      HistCandidate* best) noexcept nogil:
    """One feature for every node (see find_best_splits_columns)."""
    # by value: with -fno-strict-aliasing (Python's flags), fields read
    # through a pointer would be reloaded after every store to the sums
    cdef ColumnScan scan = columns[0]
    cdef LevelScoring L = level[0]
    # the column's entries with their rows' state, read once: both passes
    # then walk them in order
    cdef Py_ssize_t n_entries = _gather_column(scan, F.index, gathered)
    cdef Py_ssize_t n_touched = _node_sums_of_feature(
        scan, F.index, gathered, n_entries, sums, last_bin, touched)
    cdef int64_t Gq_miss, Hq_miss
    cdef Py_ssize_t i
    cdef int32_t node, code
    cdef int64_t* s
    # boundaries in value order; the zero block (the rows with no stored
    # entry) joins in at the bin of 0.0
    for i in range(n_entries):
        node = gathered[i].node
        s = &sums[STATE_SIZE * node]
        code = gathered[i].code
        _missing_sums(s, node, L, scan.zero_absent, &Gq_miss, &Hq_miss)
        if s[ZERO_PENDING] and code > F.zero_code:
            _add_zero_block(&best[node], L, F, node, s, last_bin, Gq_miss,
                            Hq_miss)
        walk_step(&best[node], L, F, node, s, &last_bin[node], code,
                  gathered[i].qg, gathered[i].qh, Gq_miss, Hq_miss)
    # after each node's last entry: every present entry left, missing right
    for i in range(n_touched):
        node = touched[i]
        s = &sums[STATE_SIZE * node]
        _missing_sums(s, node, L, scan.zero_absent, &Gq_miss, &Hq_miss)
        if s[ZERO_PENDING]:
            _add_zero_block(&best[node], L, F, node, s, last_bin, Gq_miss,
                            Hq_miss)
        if (Gq_miss != 0 or Hq_miss != 0) and last_bin[node] >= 0:
            _offer_missing_apart(&best[node], L, F, node, s, last_bin[node],
                                 Gq_miss, Hq_miss)
        last_bin[node] = -1


cdef inline void _offer_missing_apart(HistCandidate* best,
                                      const LevelScoring L,
                                      const FeatureScan F, int32_t node,
                                      const int64_t* s, int32_t last_code,
                                      int64_t Gq_miss,
                                      int64_t Hq_miss) noexcept nogil:
    """After the node's last entry: every present entry left, missing
    values right; under a monotone constraint also the same partition in
    the other order (as in ``_hist_split.scan_feature``)."""
    cdef NodeBounds feature_bounds
    cdef const NodeBounds* bounds = with_direction(
        &feature_bounds, _at(L.node_bounds, node), F.direction)
    cdef int64_t Gq = L.node_sums[2 * node], Hq = L.node_sums[2 * node + 1]
    offer_boundary(best, F.index, F.thresholds[last_code], last_code,
                   s[LEFT_G], s[LEFT_H], Gq, Hq, L.parent_score[node],
                   L.scale_g, L.scale_h, L.p, L.l2_only, False, bounds)
    if bounds != NULL:
        offer_boundary(best, F.index, -INFINITY, -1, Gq_miss, Hq_miss, Gq,
                       Hq, L.parent_score[node], L.scale_g, L.scale_h, L.p,
                       L.l2_only, True, bounds)


cdef inline bint _scans(const ColumnScan scan, int32_t node,
                        int32_t f) noexcept nogil:
    """Whether a row in slot ``node`` takes part in feature f's scan."""
    return node >= 0 and scan.allowed[node * scan.n_features + f] != 0


cdef Py_ssize_t _node_sums_of_feature(const ColumnScan scan, int32_t f,
                                      const ColumnEntry* gathered,
                                      Py_ssize_t n_entries, int64_t* sums,
                                      int32_t* last_bin,
                                      int32_t* touched) noexcept nogil:
    """The first passes over feature f: each node's sums of its stored
    missing entries (absent = 0.0) and of its present entries (``gathered``,
    ``_gather_column``); returns how many nodes it met (listed in
    ``touched``)."""
    cdef Py_ssize_t n_touched = 0, i
    cdef int64_t k
    cdef int32_t node, row
    cdef int64_t* s
    # stored missing entries (NaN among stored values) are kept apart from
    # the present ones in SortedColumns: summed first when absent is 0.0
    if scan.zero_absent:
        for k in range(scan.missing_ptr[f], scan.missing_ptr[f + 1]):
            row = scan.missing_rows[k]
            node = scan.row_slot[row]
            if not _scans(scan, node, f):
                continue
            s = touch(node, sums, last_bin, touched, &n_touched)
            s[MISSING_G] += scan.quantized[2 * row]
            s[MISSING_H] += scan.quantized[2 * row + 1]
    for i in range(n_entries):
        s = touch(gathered[i].node, sums, last_bin, touched, &n_touched)
        s[PRESENT_G] += gathered[i].qg
        s[PRESENT_H] += gathered[i].qh
    # absent entries read as 0.0: each met node's zero block (its rows with
    # no stored entry) is still to be walked, at the bin of 0.0
    if scan.zero_absent:
        for i in range(n_touched):
            sums[STATE_SIZE * touched[i] + ZERO_PENDING] = 1
    return n_touched


cdef inline void _missing_sums(const int64_t* s, int32_t node,
                               const LevelScoring L, bint zero_absent,
                               int64_t* Gq_miss,
                               int64_t* Hq_miss) noexcept nogil:
    """The node's missing sums: its stored missing entries' when absent
    entries are 0.0, else its totals minus its present entries'."""
    if zero_absent:
        Gq_miss[0] = s[MISSING_G]
        Hq_miss[0] = s[MISSING_H]
    else:
        Gq_miss[0] = L.node_sums[2 * node] - s[PRESENT_G]
        Hq_miss[0] = L.node_sums[2 * node + 1] - s[PRESENT_H]


cdef inline void _add_zero_block(HistCandidate* best, const LevelScoring L,
                                 const FeatureScan F, int32_t node,
                                 int64_t* s, int32_t* last_bin,
                                 int64_t Gq_miss,
                                 int64_t Hq_miss) noexcept nogil:
    """Walk the node's zero block: its totals minus its stored entries, in
    the bin of 0.0 (skipped when empty, as an empty bin is)."""
    cdef int64_t zero_g = L.node_sums[2 * node] - s[PRESENT_G] - s[MISSING_G]
    cdef int64_t zero_h = (L.node_sums[2 * node + 1] - s[PRESENT_H]
                           - s[MISSING_H])
    s[ZERO_PENDING] = 0
    if zero_g == 0 and zero_h == 0:
        return
    walk_step(best, L, F, node, s, &last_bin[node], F.zero_code, zero_g,
              zero_h, Gq_miss, Hq_miss)


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_columns_inputs(BinnedColumns binned, thresholds, row_slot,
                          quantized, node_sums, feature_allowed):
    columns = binned.columns
    n_nodes = node_sums.shape[0]
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


# --------------------------------------------------------------------------
# The same scan over the entries grouped by node
# --------------------------------------------------------------------------

# ``find_best_splits_columns`` walks every entry of a column at every level
# and reads each entry's node and gradients at its (random) row, keeping
# every node's walk state in a table. Here the entries' bins are kept in
# per-node groups (``_node_blocks.NodeBlocks``, as the exact finder keeps
# its values; the bins stand in for the values, ``CodeBlocks``):
#
#     block of feature j:  [ node 2: b0 <= b3 ... ][ node 0: b1 <= b2 ... ]
#
# so a node's walk reads its own entries contiguously, with its state in
# registers, and the entries of finished leaves drop out as the tree grows.
# A group is gathered once (gradients at its rows, prefetched), summed for
# the node's missing sums, then walked with the same steps (``walk_step``)
# in the same order as the column walk: the same candidates, the same
# splits. After a level the groups are split into the children's groups
# (one stable pass per feature, done just before the feature's scan while
# its entries come into cache).

cdef class CodeBlocks:
    """The value bins of presorted columns, grouped by the open nodes of a
    level (``NodeBlocks`` over the bins as float32 values: exact below
    2**24): the input of ``find_best_splits_groups``. Made from validated
    ``BinnedColumns``; the groups only ever permute or drop a feature's
    entries, so every bin stays a value bin of its feature. Absent entries
    must be missing (not 0.0): the zero blocks have no group.

    Parameters
    ----------
    binned : BinnedColumns
    """

    cdef readonly NodeBlocks blocks
    cdef readonly object bin_ptr

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, BinnedColumns binned not None):
        columns = binned.columns
        if columns.zero_absent:
            raise ValueError("CodeBlocks needs absent entries missing, "
                             "not 0.0 (use BinnedColumns)")
        if binned.bin_ptr[-1] >= 2 ** 24:
            raise ValueError("more bins than float32 holds exactly")
        codes = SortedColumns(columns.col_ptr,
                              binned.entry_codes.astype(np.float32),
                              columns.rows, columns.n_rows)
        self.blocks = NodeBlocks(codes)
        self.bin_ptr = binned.bin_ptr


ctypedef struct GroupScan:
    # a level's groups (the current ones, or those a planned split writes)
    const int64_t* col_ptr
    const float* codes              # the entries' bins, as float32
    const int32_t* rows
    const int64_t* group_ptr
    const int64_t* group_count
    const int32_t* group_slot
    const int64_t* group_end
    const int64_t* quantized        # (n_rows, 2) fixed-point gradient pairs
    const uint8_t* allowed          # (n_nodes, n_features) feature masks
    Py_ssize_t n_features


def find_best_splits_groups(
        CodeBlocks code_blocks not None,                # IN grouped for the level
        const double[::1] thresholds not None,          # IN (n_bins,)
        const int64_t[:, ::1] quantized not None,       # IN (n_rows, 2)
        const int64_t[:, ::1] node_sums not None,       # IN (n_nodes, 2)
        const uint8_t[:, ::1] feature_allowed not None,  # IN (n_nodes, n_features)
        *, SplitContext context not None, bounds=None, monotone=None):
    """``find_best_splits_columns`` on the entries grouped by node: the
    same records. ``code_blocks.blocks`` must be grouped (``start`` or
    ``split``) for the level's rows, node k in slot k; a planned split is
    carried out here, feature by feature, before each feature's scan."""
    cdef NodeBlocks grouped = code_blocks.blocks
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef Py_ssize_t n_features = grouped.columns.n_features
    _check_group_inputs(code_blocks, thresholds, quantized, node_sums,
                        feature_allowed)
    cdef int n_threads = capped(context.n_threads)
    cdef RegParams p = reg_params(context)
    cdef double[::1] parent_score = _parent_scores(
        node_sums, context.scale_g, context.scale_h, &p, bounds)
    cdef const signed char[::1] direction = feature_directions(monotone,
                                                               n_features)
    cdef LevelScoring level
    level.node_sums = &node_sums[0, 0] if n_nodes else NULL
    level.parent_score = &parent_score[0]
    level.scale_g = context.scale_g
    level.scale_h = context.scale_h
    level.p = &p
    level.l2_only = is_l2_only(&p)
    level.node_bounds = node_bounds_array(bounds, n_nodes)
    try:
        return _scan_groups_level(grouped, code_blocks.bin_ptr, &level,
                                  thresholds, direction, quantized,
                                  feature_allowed, n_nodes, n_threads)
    finally:
        free(level.node_bounds)


cdef object _scan_groups_level(NodeBlocks grouped, bin_ptr_array,
                               const LevelScoring* level,
                               const double[::1] thresholds,
                               const signed char[::1] direction,
                               const int64_t[:, ::1] quantized,
                               const uint8_t[:, ::1] feature_allowed,
                               Py_ssize_t n_nodes, int n_threads):
    """Every feature's groups split (if planned) and walked, in parallel
    over features, each thread into its own bests; then merged."""
    cdef bint splitting = grouped._pending is not None
    cdef SplitStep step
    if splitting:
        step = grouped._split_step(n_threads)
    cdef GroupScan scan
    _group_scan(&scan, grouped, &step if splitting else NULL, quantized,
                feature_allowed)
    cdef const int64_t[::1] bin_ptr = bin_ptr_array
    cdef const int32_t[::1] no_zero_codes = np.zeros(
        max(scan.n_features, 1), dtype=np.int32)
    # the features no open node may split on are only moved, not walked
    cdef const uint8_t[::1] used = np.asarray(feature_allowed).any(
        axis=0).astype(np.uint8) if n_nodes else np.zeros(
            max(scan.n_features, 1), dtype=np.uint8)
    cdef Py_ssize_t f, room = max(grouped.longest, 1)
    cdef int tid
    cdef ColumnEntry* gathered = <ColumnEntry*> malloc(
        n_threads * room * sizeof(ColumnEntry))
    if gathered == NULL:
        raise MemoryError()
    cdef HistCandidate* best = NULL
    try:
        best = _fresh_bests(n_threads * n_nodes)
        # one feature per task (dynamic: features differ in entries): its
        # block and groups are the task's own, its candidates go to the
        # thread's own bests, and the merge's total order makes the result
        # thread-independent
        for f in prange(scan.n_features, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            tid = threadid()
            if splitting:
                split_step_feature(&step, <int32_t> f, tid)
            if used[f]:
                scan_feature_groups(&scan, level,
                                    _feature_scan(<int32_t> f, bin_ptr,
                                                  no_zero_codes, thresholds,
                                                  direction),
                                    &gathered[tid * room],
                                    &best[tid * n_nodes])
        records = _merged_to_records(best, n_threads, n_nodes)
    finally:
        free(best)
        free(gathered)
    if splitting:
        grouped._commit()
    return records


cdef void _group_scan(GroupScan* scan, NodeBlocks grouped,
                      const SplitStep* step,
                      const int64_t[:, ::1] quantized,
                      const uint8_t[:, ::1] feature_allowed):
    """Pointers into validated arrays (kept alive by the caller): the
    groups a planned split (``step``, NULL if none) writes, else the
    current ones."""
    cdef BlockData data
    cdef GroupData groups
    if step != NULL:
        data = step.dst
        groups = step.out
    else:
        data = _block_data(grouped.columns.col_ptr, grouped.values,
                           grouped.rows)
        groups = _group_data(grouped.group_ptr, grouped.group_count,
                             grouped.group_slot, grouped.group_end)
    scan.col_ptr = data.col_ptr
    scan.codes = data.values
    scan.rows = data.rows
    scan.group_ptr = groups.ptr
    scan.group_count = groups.count
    scan.group_slot = groups.slot
    scan.group_end = groups.end
    scan.quantized = &quantized[0, 0] if quantized.shape[0] else NULL
    scan.allowed = (&feature_allowed[0, 0] if feature_allowed.shape[0]
                    and feature_allowed.shape[1] else NULL)
    scan.n_features = grouped.columns.n_features


cdef void scan_feature_groups(const GroupScan* groups,
                              const LevelScoring* level, const FeatureScan F,
                              ColumnEntry* gathered,
                              HistCandidate* best) noexcept nogil:
    """Feature F's candidates for every open node allowed to use it: one
    walk per group (a group spans [previous end, its end))."""
    cdef GroupScan S = groups[0]
    cdef int64_t i, begin = S.col_ptr[F.index], end
    cdef int32_t node
    for i in range(S.group_ptr[F.index],
                   S.group_ptr[F.index] + S.group_count[F.index]):
        node = S.group_slot[i]
        end = S.group_end[i]
        if S.allowed[node * S.n_features + F.index]:
            scan_node_group(level, F, node, &S.codes[begin], &S.rows[begin],
                            end - begin, S.quantized, gathered, &best[node])
        begin = end


cdef void scan_node_group(const LevelScoring* level, const FeatureScan F,
                          int32_t node, const float* codes,
                          const int32_t* rows, Py_ssize_t n,
                          const int64_t* quantized, ColumnEntry* gathered,
                          HistCandidate* best) noexcept nogil:
    """One node's group of feature F (n >= 1 entries in value order): its
    entries gathered with their gradients (summed: the node's missing sums
    are its totals minus them), then walked as ``scan_column`` walks the
    node's entries, ending with every present entry left."""
    # by value: see scan_column
    cdef LevelScoring L = level[0]
    cdef int64_t s[STATE_SIZE]
    cdef int64_t Gq_present = 0, Hq_present = 0, Gq_miss, Hq_miss
    cdef int32_t row, last = -2
    cdef Py_ssize_t k
    # the rows are in value order, i.e. scattered: prefetched ahead
    for k in range(n):
        if k + PREFETCH_ROWS < n:
            prefetch(&quantized[2 * rows[k + PREFETCH_ROWS]])
        row = rows[k]
        gathered[k].qg = quantized[2 * row]
        gathered[k].qh = quantized[2 * row + 1]
        gathered[k].code = <int32_t> codes[k]
        Gq_present += gathered[k].qg
        Hq_present += gathered[k].qh
    Gq_miss = L.node_sums[2 * node] - Gq_present
    Hq_miss = L.node_sums[2 * node + 1] - Hq_present
    s[LEFT_G] = 0
    s[LEFT_H] = 0
    for k in range(n):
        walk_step(best, L, F, node, s, &last, gathered[k].code,
                  gathered[k].qg, gathered[k].qh, Gq_miss, Hq_miss)
    if Gq_miss != 0 or Hq_miss != 0:
        _offer_missing_apart(best, L, F, node, s, last, Gq_miss, Hq_miss)


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_group_inputs(CodeBlocks code_blocks, thresholds, quantized,
                        node_sums, feature_allowed):
    blocks = code_blocks.blocks
    columns = blocks.columns
    n_nodes = node_sums.shape[0]
    if thresholds.shape[0] != code_blocks.bin_ptr[-1]:
        raise ValueError("one threshold per bin")
    if quantized.shape[0] != columns.n_rows or quantized.shape[1] != 2:
        raise ValueError("quantized must be (n_rows, 2)")
    if node_sums.shape[1] != 2:
        raise ValueError("node_sums must be (n_nodes, 2)")
    if blocks.n_slots != n_nodes:
        raise ValueError(f"the blocks are grouped for {blocks.n_slots} "
                         f"slots, not {n_nodes}")
    if feature_allowed.shape[0] != n_nodes or (
            feature_allowed.shape[1] != columns.n_features):
        raise ValueError("feature_allowed must be (n_nodes, n_features)")
