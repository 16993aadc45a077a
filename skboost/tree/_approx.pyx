"""Candidate cuts weighted by the current hessians (paper section 3.2).

The approximate algorithm proposes, for each feature, candidate split
points ``s_1 < s_2 < ...`` such that the hessian-weighted mass between two
neighbours is about ``1/max_bin`` of the total (paper eq. 8-9: the hessian
is the weight of a row in the second-order objective). The presorted blocks
of the exact finder (``SortedColumns``) are an exact summary of each
feature, so the proposal is one linear pass per feature: walk the values in
order, accumulate hessians, and cut between two distinct values once the
bin has reached its share, or before a single value heavier than a share
(so that it is isolated in its own bin rather than swallowing the feature).
The weighted quantiles are exact (rank error below one bin's share); no
sort happens per tree.

Cuts sit at midpoints between consecutive distinct values, like the exact
finder's thresholds: when a feature has at most ``max_bin`` distinct values
every boundary is a cut and the approximate method finds the exact splits.
"""

import numpy as np

cimport cython
from cython.parallel cimport prange, threadid

from skboost._openmp_helpers import check_n_threads

from ._common cimport PREFETCH_ROWS, int32_t, int64_t, prefetch, uint8_t
from ._presorted cimport SortedColumns
from libc.stdint cimport uint16_t

ctypedef fused code_t:
    uint8_t
    uint16_t


cdef inline double group_mass(const float[::1] values,
                              const int32_t[::1] rows,
                              const double[::1] hess, int64_t k, int64_t end,
                              int32_t slot,
                              const int32_t[::1] row_slot) noexcept nogil:
    """Hessian mass of the value values[k] from entry k on (the rows of
    ``slot`` only, unless slot < 0). A value heavier than a bin's share
    gets a cut before it as well as after: it is isolated in its own bin
    (the paper's eq. 9 cannot be met inside it)."""
    cdef double mass = 0.0
    cdef int64_t j = k
    cdef float v = values[k]
    # a short look-ahead over the run of equal values (the block is
    # sorted), met once per candidate boundary only
    while j < end and values[j] == v:
        if slot < 0 or row_slot[rows[j]] == slot:
            if hess[rows[j]] > 0.0:
                mass += hess[rows[j]]
        j += 1
    return mass


cdef int64_t propose_feature(const float[::1] values,
                             const int32_t[::1] rows,
                             int64_t start, int64_t end,
                             const double[::1] hess,
                             int64_t max_bin,
                             double* cuts) noexcept nogil:
    """Write the cuts of one feature into ``cuts`` (room for max_bin - 1);
    return how many. Only rows of positive hessian weight (the rows of the
    tree) propose cuts: a row outside the tree, or of weight 0, must not
    move a candidate."""
    cdef double total = 0.0, cumulative = 0.0, h
    cdef int64_t k, n_cuts = 0, n_distinct = 0
    cdef int64_t quantile = 1    # the next target is quantile/max_bin of total
    cdef float previous = 0.0
    cdef bint every_boundary, seen = False
    # pass 1: the total hessian mass and the distinct values. The block is
    # in value order, so its rows (and their hessians) are scattered:
    # prefetched PREFETCH_ROWS entries ahead
    for k in range(start, end):
        if k + PREFETCH_ROWS < end:
            prefetch(&hess[rows[k + PREFETCH_ROWS]])
        h = hess[rows[k]]
        if h > 0.0:
            total += h
            if not seen or values[k] != previous:
                n_distinct += 1
            previous = values[k]
            seen = True
    if n_distinct < 2:
        return 0
    # few distinct values: a cut at every boundary, as the exact finder
    every_boundary = n_distinct <= max_bin
    seen = False
    # pass 2: a cut where the running mass reaches the next target
    # quantile, only ever between two distinct values (a value is never
    # split across bins)
    for k in range(start, end):
        h = hess[rows[k]]
        if h <= 0.0:
            continue
        if (seen and values[k] != previous and n_cuts < max_bin - 1
                and (every_boundary
                     or cumulative >= total * quantile / max_bin
                     or group_mass(values, rows, hess, k, end, -1, rows)
                     > total / max_bin)):
            cuts[n_cuts] = 0.5 * (<double> previous + <double> values[k])
            n_cuts += 1
            # the next bin starts here: skip the targets already passed
            while quantile < max_bin and total * quantile / max_bin <= cumulative:
                quantile += 1
        cumulative += h
        previous = values[k]
        seen = True
    return n_cuts


@cython.wraparound(True)
def propose_cuts(SortedColumns columns, hess, max_bins, int n_threads):
    """``propose_cuts_flat`` as one array of cuts per feature."""
    flat, cut_ptr = propose_cuts_flat(columns, hess, max_bins, n_threads)
    return np.split(flat, cut_ptr[1:-1])


@cython.wraparound(True)
def propose_cuts_flat(SortedColumns columns not None,
                 const double[::1] hess not None,      # IN (n_rows,) weighted
                 const int64_t[::1] max_bins not None,    # IN (n_features,)
                 int n_threads):
    """Hessian-weighted candidate cuts of every feature.

    Parameters
    ----------
    columns : SortedColumns
    hess : ndarray of shape (n_rows,)
        Weighted hessian of each row (0 for rows not in the tree).
        Features with at most ``max_bins[f]`` distinct values among the rows
        of positive hessian get a cut at every boundary.
    max_bins : ndarray of shape (n_features,)
        At most this many value bins per feature (>= 2).

    Returns
    -------
    flat_cuts : ndarray
        Sorted interior cut points of all features (``BinMapper`` layout),
        feature f's at ``flat_cuts[cut_ptr[f]:cut_ptr[f+1]]``.
    cut_ptr : ndarray of shape (n_features + 1,)
    """
    n_threads = check_n_threads(n_threads)
    if hess.shape[0] != columns.n_rows or (
            max_bins.shape[0] != columns.n_features):
        raise ValueError("hess needs one entry per row, max_bins one per "
                         "feature")
    if columns.n_features and np.min(max_bins) < 2:
        raise ValueError("max_bins must be >= 2")
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const float[::1] values = columns.values
    cdef const int32_t[::1] rows = columns.rows
    cdef Py_ssize_t n_features = columns.n_features, f
    # room for each feature's cuts: fewer than its bins and its entries
    room = np.minimum(np.asarray(max_bins) - 1, np.diff(columns.col_ptr))
    room_ptr_arr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(room, out=room_ptr_arr[1:])
    out_arr = np.empty(max(int(room_ptr_arr[-1]), 1), dtype=np.float64)
    counts_arr = np.zeros(n_features, dtype=np.int64)
    cdef double[::1] out = out_arr
    cdef const int64_t[::1] room_ptr = room_ptr_arr
    cdef int64_t[::1] counts = counts_arr
    # one feature per task, each writing its own range of `out`: the cuts
    # are those of a sequential run whatever the thread count
    for f in prange(n_features, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        counts[f] = propose_feature(values, rows, col_ptr[f], col_ptr[f + 1],
                                    hess, max_bins[f], &out[room_ptr[f]])
    # compact: each feature's cuts moved from its room to right after the
    # previous feature's cuts
    cut_ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(counts_arr, out=cut_ptr[1:])
    kept = np.arange(cut_ptr[-1]) + np.repeat(room_ptr_arr[:-1] - cut_ptr[:-1],
                                              counts_arr)
    return out_arr[kept], cut_ptr


def codes_from_sorted(SortedColumns columns not None, cuts, codes,
                      int n_threads):
    """Bin codes for the given cuts, written feature-major
    (``codes[f, row]``) by walking each feature's sorted block: no search
    per value, and each feature's writes stay in one column. Rows absent
    from a block (missing values) get the missing code ``len(cuts[f]) + 1``.
    """
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_features = columns.n_features
    # the codes must fit their dtype, the missing code (cuts + 1) included
    # when the feature has missing rows: checked before any write
    if len(cuts) != n_features or codes.shape != (n_features, columns.n_rows):
        raise ValueError("one cut array per feature; codes (n_features, n_rows)")
    widths = np.array([len(c) + 2 for c in cuts], dtype=np.int64)
    max_code = np.iinfo(codes.dtype).max
    has_missing = np.diff(columns.col_ptr) < columns.n_rows
    if n_features and np.any(widths - 2 + has_missing > max_code):
        raise ValueError("too many bins for the code dtype")
    cut_ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(widths - 2, out=cut_ptr[1:])
    flat = (np.concatenate(cuts).astype(np.float64) if n_features
            else np.empty(0))
    if codes.dtype == np.uint8:
        _fill_codes[uint8_t](columns.col_ptr, columns.values, columns.rows,
                             flat, cut_ptr, codes, n_threads)
    else:
        _fill_codes[uint16_t](columns.col_ptr, columns.values, columns.rows,
                              flat, cut_ptr, codes, n_threads)


@cython.boundscheck(True)
@cython.wraparound(True)
def entry_codes(SortedColumns columns not None, flat_cuts, cut_ptr,
                int n_threads):
    """Value bin of every presorted entry for the given cuts (the number of
    cuts <= its value, as ``_binning.map_to_bins``), by walking each
    feature's sorted block: the codes of sparse data, one per stored entry.
    Feature f's cuts are ``flat_cuts[cut_ptr[f]:cut_ptr[f+1]]``.

    Returns
    -------
    codes : ndarray of shape (n_entries,), int32
    """
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_features = columns.n_features
    flat = np.ascontiguousarray(flat_cuts, dtype=np.float64)
    cut_ptr = np.ascontiguousarray(cut_ptr, dtype=np.int64)
    if cut_ptr.shape != (n_features + 1,) or cut_ptr[0] != 0 or (
            cut_ptr[-1] != flat.shape[0]) or np.any(np.diff(cut_ptr) < 0):
        raise ValueError("cut_ptr must rise from 0 to len(flat_cuts), one "
                         "range per feature")
    out = np.empty(columns.values.shape[0], dtype=np.int32)
    _fill_entry_codes(columns.col_ptr, columns.values, flat, cut_ptr, out,
                      n_threads)
    return out


cdef void _fill_entry_codes(const int64_t[::1] col_ptr,
                            const float[::1] values, const double[::1] cuts,
                            const int64_t[::1] cut_ptr, int32_t[::1] codes,
                            int n_threads):
    cdef Py_ssize_t n_features = col_ptr.shape[0] - 1, f
    cdef int64_t k, b, n_cuts, first
    # a merge of two sorted lists (the block's values, the feature's cuts):
    # the bin only moves forward, so a feature costs entries + cuts, with
    # no binary search per value
    for f in prange(n_features, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        first = cut_ptr[f]
        n_cuts = cut_ptr[f + 1] - first
        b = 0
        for k in range(col_ptr[f], col_ptr[f + 1]):
            while b < n_cuts and values[k] >= cuts[first + b]:
                b = b + 1
            codes[k] = <int32_t> b


cdef void _fill_codes(const int64_t[::1] col_ptr, const float[::1] values,
                      const int32_t[::1] rows, const double[::1] cuts,
                      const int64_t[::1] cut_ptr, code_t[:, ::1] codes,
                      int n_threads):
    cdef Py_ssize_t n_features = col_ptr.shape[0] - 1, n_rows = codes.shape[1]
    cdef Py_ssize_t f, r
    cdef int64_t k, b, n_cuts, first
    # feature-major codes: a feature's task writes one row of `codes`
    # (codes[f, :]), so threads never share a cache line but at the ends
    for f in prange(n_features, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        first = cut_ptr[f]
        n_cuts = cut_ptr[f + 1] - first
        for r in range(n_rows):
            codes[f, r] = <code_t> (n_cuts + 1)       # missing unless present
        b = 0
        for k in range(col_ptr[f], col_ptr[f + 1]):
            while b < n_cuts and values[k] >= cuts[first + b]:
                b = b + 1
            codes[f, rows[k]] = <code_t> b


ctypedef struct LocalBinState:
    double total           # weighted hessian of the node's present entries
    double cumulative      # ... seen so far in the walk
    int64_t n_distinct     # distinct values among them
    int64_t bin            # current value bin of the node
    int64_t quantile       # next target: quantile / max_bin of total
    int64_t count          # present entries seen
    float previous         # last value seen in this node


def local_histograms(SortedColumns columns not None,
                     const int64_t[:, ::1] quantized not None,  # IN (n_rows, 2)
                     const double[::1] hess not None,   # IN (n_rows,) weighted
                     const int32_t[::1] row_slot not None,  # IN (n_rows,)
                     const int64_t[:, ::1] node_sums not None,  # IN (n_slots, 2)
                     const int64_t[::1] bin_ptr not None,   # IN (n_features + 1,)
                     *, int n_threads):
    """Per-node ("local") proposals and histograms, two walks per feature.

    For every open node (slot) and feature, candidate cuts are the node's
    own hessian-weighted quantiles (feature f has room for
    ``bin_ptr[f+1] - bin_ptr[f] - 1`` value bins), and the node's histogram
    is accumulated over those bins: a first walk of the presorted block
    takes each node's hessian mass and distinct values, a second one cuts
    and accumulates. Rows of zero hessian take no part (they are not in
    the tree).
    The missing bin is the node's total minus its present entries (exact in
    fixed point).

    Returns
    -------
    hist : ndarray of shape (n_slots, n_bins, 2), int64
    thresholds : ndarray of shape (n_slots, n_bins)
        Tree threshold of "value bins 0..b go left" for each node; +inf for
        bins past the node's last cut (all present values left).
    """
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_slots = node_sums.shape[0]
    cdef Py_ssize_t n_features = columns.n_features
    # bin_ptr's length is checked before its last entry is read
    _check_local(columns, quantized, hess, row_slot, node_sums, bin_ptr)
    cdef Py_ssize_t n_bins = bin_ptr[n_features]
    hist_arr = np.zeros((n_slots, n_bins, 2), dtype=np.int64)
    thr_arr = np.full((n_slots, n_bins), np.inf)
    state_arr = np.empty((max(n_threads, 1), max(n_slots, 1),
                          sizeof(LocalBinState)), dtype=np.uint8)
    cdef int64_t[:, :, ::1] hist = hist_arr
    cdef double[:, ::1] thresholds = thr_arr
    cdef uint8_t[:, :, ::1] states = state_arr
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const float[::1] values = columns.values
    cdef const int32_t[::1] rows = columns.rows
    cdef Py_ssize_t f
    cdef int tid
    # one feature per task: a feature owns its bins of every node's
    # histogram and thresholds; the per-node walk state is the thread's own
    for f in prange(n_features, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        local_feature(f, col_ptr, values, rows, quantized, hess, row_slot,
                      node_sums, bin_ptr, hist, thresholds,
                      <LocalBinState*> &states[tid, 0, 0], n_slots)
    return hist_arr, thr_arr


cdef void local_feature(Py_ssize_t f,
                        const int64_t[::1] col_ptr, const float[::1] values,
                        const int32_t[::1] rows,
                        const int64_t[:, ::1] quantized,
                        const double[::1] hess,
                        const int32_t[::1] row_slot,
                        const int64_t[:, ::1] node_sums,
                        const int64_t[::1] bin_ptr,
                        int64_t[:, :, ::1] hist,
                        double[:, ::1] thresholds,
                        LocalBinState* st,
                        Py_ssize_t n_slots) noexcept nogil:
    cdef int64_t k, first = bin_ptr[f]
    cdef int64_t max_bin = bin_ptr[f + 1] - first - 1    # value bins
    cdef int64_t missing = first + max_bin
    cdef int32_t row, s
    cdef double h
    cdef float v
    # pass 1: each node's hessian mass and distinct values on this feature
    _local_masses(col_ptr[f], col_ptr[f + 1], values, rows, hess, row_slot,
                  st, n_slots)
    # pass 2: cut at the node's quantiles (every boundary when it has few
    # distinct values) and accumulate the node's histogram
    for k in range(col_ptr[f], col_ptr[f + 1]):
        row = rows[k]
        s = row_slot[row]
        h = hess[row]
        if s < 0 or h <= 0.0:
            continue
        v = values[k]
        if (st[s].count > 0 and v != st[s].previous
                and st[s].bin < max_bin - 1
                and (st[s].n_distinct <= max_bin
                     or st[s].cumulative
                     >= st[s].total * st[s].quantile / max_bin
                     or group_mass(values, rows, hess, k, col_ptr[f + 1], s,
                                   row_slot) > st[s].total / max_bin)):
            thresholds[s, first + st[s].bin] = 0.5 * (
                <double> st[s].previous + <double> v)
            st[s].bin += 1
            while (st[s].quantile < max_bin and st[s].total * st[s].quantile
                   / max_bin <= st[s].cumulative):
                st[s].quantile += 1
        hist[s, first + st[s].bin, 0] += quantized[row, 0]
        hist[s, first + st[s].bin, 1] += quantized[row, 1]
        st[s].cumulative += h
        st[s].previous = v
        st[s].count += 1
    # the missing bin: what the node holds beyond its present entries
    # (exact: fixed-point integers)
    for s in range(n_slots):
        hist[s, missing, 0] = node_sums[s, 0]
        hist[s, missing, 1] = node_sums[s, 1]
        for k in range(first, missing):
            hist[s, missing, 0] -= hist[s, k, 0]
            hist[s, missing, 1] -= hist[s, k, 1]


cdef inline void _local_masses(int64_t begin, int64_t end,
                               const float[::1] values,
                               const int32_t[::1] rows,
                               const double[::1] hess,
                               const int32_t[::1] row_slot,
                               LocalBinState* st,
                               Py_ssize_t n_slots) noexcept nogil:
    """local_feature's first pass over the block's entries [begin, end):
    every node's state reset, then its hessian mass and its number of
    distinct values (rows of zero hessian are not in the tree); ``count``
    is zero again afterwards, ready for the second pass."""
    cdef int64_t k
    cdef int32_t row, s
    cdef double h
    cdef float v
    for s in range(n_slots):
        st[s].total = 0.0
        st[s].cumulative = 0.0
        st[s].n_distinct = 0
        st[s].bin = 0
        st[s].quantile = 1
        st[s].count = 0
    # the nodes' entries interleave in the block: each entry updates its
    # own node's state (this thread's table), so one walk serves all nodes
    for k in range(begin, end):
        row = rows[k]
        s = row_slot[row]
        h = hess[row]
        if s < 0 or h <= 0.0:
            continue
        v = values[k]
        if st[s].count == 0 or v != st[s].previous:
            st[s].n_distinct += 1
        st[s].total += h
        st[s].previous = v
        st[s].count += 1
    for s in range(n_slots):
        st[s].count = 0


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_local(columns, quantized, hess, row_slot, node_sums, bin_ptr):
    n_rows, n_features = columns.n_rows, columns.n_features
    if quantized.shape[0] != n_rows or quantized.shape[1] != 2:
        raise ValueError("quantized must be (n_rows, 2)")
    if hess.shape[0] != n_rows or row_slot.shape[0] != n_rows:
        raise ValueError("hess and row_slot need one entry per row")
    if node_sums.shape[1] != 2:
        raise ValueError("node_sums must be (n_slots, 2)")
    ptr = np.asarray(bin_ptr)
    if ptr.shape[0] != n_features + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 3):
        raise ValueError("bin_ptr must give every feature >= 2 value bins "
                         "and its missing bin")
    slots = np.asarray(row_slot)
    if slots.size and (slots.min() < -1 or slots.max() >= node_sums.shape[0]):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
