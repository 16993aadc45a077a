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
"""

import numpy as np

cimport cython

from cython.parallel cimport prange, threadid
from libc.stdlib cimport free, malloc

from ._exact cimport SortedColumns
from ._common cimport (SplitCandidate, int32_t, int64_t, uint8_t, is_better,
                       reset_candidate)
from ._gain cimport (RegParams, children_heavy_enough, is_l2_only, leaf_score,
                     make_reg_params, split_loss_reduction,
                     split_loss_reduction_l2)


# Below this many histogram bins per thread, a parallel region costs more
# than it saves.
BINS_PER_THREAD = 4096


ctypedef struct HistCandidate:
    SplitCandidate split
    int32_t split_bin       # value bins 0..split_bin go left
    int64_t Gq_left         # exact left sums, for the children's totals
    int64_t Hq_left


cdef inline void offer(HistCandidate* best, double gain, int32_t feature,
                       double threshold, int32_t split_bin, int64_t Gq_left,
                       int64_t Hq_left, double scale_g, double scale_h,
                       bint default_left) noexcept nogil:
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


cdef inline void offer_boundary(HistCandidate* best, int32_t feature,
                                double threshold, int32_t split_bin,
                                int64_t Gq_left, int64_t Hq_left,
                                int64_t Gq, int64_t Hq, double parent_score,
                                double scale_g, double scale_h,
                                const RegParams* p, bint l2_only,
                                bint default_left) noexcept nogil:
    """Offer the split whose left child has the exact sums (Gq_left,
    Hq_left) of a node with totals (Gq, Hq), if both children are heavy
    enough."""
    cdef double H_left = Hq_left / scale_h
    cdef double H_right = (Hq - Hq_left) / scale_h
    cdef double gain
    if not children_heavy_enough(H_left, H_right, p):
        return
    if l2_only:
        gain = split_loss_reduction_l2(Gq_left / scale_g, H_left,
                                       (Gq - Gq_left) / scale_g, H_right,
                                       parent_score, p.reg_lambda)
    else:
        gain = split_loss_reduction(Gq_left / scale_g, H_left,
                                    (Gq - Gq_left) / scale_g, H_right,
                                    parent_score, p)
    offer(best, gain, feature, threshold, split_bin, Gq_left, Hq_left,
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
        double min_child_weight, int n_threads, hist_rows=None):
    """Best split of each node of a batch from its histogram.

    Node k's histogram is ``hist[hist_rows[k]]`` (rows of a pool of
    histograms), or ``hist[k]`` without ``hist_rows``. ``thresholds[k]``
    holds node k's tree threshold of each "split after bin" (see
    binning.py); a single row is shared by every node.

    Returns
    -------
    splits : dict of ndarray, each of shape (n_nodes,)
        ``gain``, ``feature`` (-1: none admissible), ``threshold``,
        ``split_bin``, ``default_left``, ``G_left``, ``H_left`` (float64) and
        ``Gq_left``, ``Hq_left`` (exact int64 sums).
    """
    cdef Py_ssize_t n_nodes = node_sums.shape[0], n_bins = hist.shape[1]
    cdef Py_ssize_t n_features = bin_ptr.shape[0] - 1
    cdef const int64_t[::1] rows = _check_inputs(
        hist, node_sums, bin_ptr, thresholds, feature_allowed, n_threads,
        hist_rows)
    cdef RegParams p = make_reg_params(reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight)
    # about BINS_PER_THREAD bins of scanning per thread, at least
    n_threads = max(1, min(n_threads, (n_nodes * n_bins) // BINS_PER_THREAD))
    cdef double[::1] parent_score = np.empty(n_nodes)
    cdef Py_ssize_t k, t, task, n_tasks = n_nodes * n_features
    cdef int tid
    cdef int32_t f
    cdef HistCandidate* c
    cdef bint per_node_thresholds = thresholds.shape[0] > 1
    for k in range(n_nodes):
        parent_score[k] = leaf_score(node_sums[k, 0] / scale_g,
                                     node_sums[k, 1] / scale_h, &p)
    cdef HistCandidate* best = <HistCandidate*> malloc(
        n_threads * max(n_nodes, 1) * sizeof(HistCandidate))
    if best == NULL:
        raise MemoryError()
    try:
        for k in range(n_threads * n_nodes):
            reset_candidate(&best[k].split)
            best[k].split_bin = -1
        for task in prange(n_tasks, nogil=True, schedule="dynamic",
                           num_threads=n_threads):
            tid = threadid()
            k = task // n_features
            f = <int32_t> (task % n_features)
            if feature_allowed[k, f]:
                scan_feature(hist[rows[k]], f, bin_ptr[f],
                             bin_ptr[f + 1] - bin_ptr[f] - 1,
                             node_sums[k, 0], node_sums[k, 1],
                             parent_score[k],
                             thresholds[k if per_node_thresholds else 0],
                             scale_g, scale_h,
                             &p, &best[tid * n_nodes + k])
        for t in range(1, n_threads):
            for k in range(n_nodes):
                c = &best[t * n_nodes + k]
                if c.split.feature >= 0 and is_better(
                        c.split.gain, c.split.feature, c.split.threshold,
                        &best[k].split):
                    best[k] = c[0]
        return _to_arrays(best, n_nodes)
    finally:
        free(best)


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
    """

    cdef readonly SortedColumns columns
    cdef readonly object entry_codes
    cdef readonly object bin_ptr

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, SortedColumns columns not None, entry_codes, bin_ptr):
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
    cdef double[::1] parent_score = np.empty(max(n_nodes, 1))
    cdef Py_ssize_t k
    for k in range(n_nodes):
        parent_score[k] = leaf_score(node_sums[k, 0] / scale_g,
                                     node_sums[k, 1] / scale_h, &p)
    # per thread and node: present sums, running sums, last bin seen
    cdef int64_t[:, :, ::1] sums = np.zeros((n_threads, max(n_nodes, 1), 4),
                                            dtype=np.int64)
    cdef int32_t[:, ::1] last_bin = np.full((n_threads, max(n_nodes, 1)), -1,
                                            dtype=np.int32)
    cdef int32_t[:, ::1] touched = np.empty((n_threads, max(n_nodes, 1)),
                                            dtype=np.int32)
    cdef const int64_t[::1] col_ptr = columns.col_ptr
    cdef const int32_t[::1] rows = columns.rows
    cdef const int32_t[::1] codes = binned.entry_codes
    cdef const int64_t[::1] bin_ptr = binned.bin_ptr
    cdef HistCandidate* best = <HistCandidate*> malloc(
        n_threads * max(n_nodes, 1) * sizeof(HistCandidate))
    if best == NULL:
        raise MemoryError()
    cdef Py_ssize_t f, t
    cdef int tid
    cdef HistCandidate* c
    try:
        for k in range(n_threads * n_nodes):
            reset_candidate(&best[k].split)
            best[k].split_bin = -1
        for f in prange(n_features, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            tid = threadid()
            scan_column(<int32_t> f, col_ptr[f], col_ptr[f + 1], rows, codes,
                        bin_ptr[f], bin_ptr[f + 1] - bin_ptr[f] - 1,
                        &thresholds[bin_ptr[f]], row_slot, quantized,
                        node_sums, feature_allowed, parent_score,
                        scale_g, scale_h, &p, l2_only, &sums[tid, 0, 0],
                        &last_bin[tid, 0], &touched[tid, 0],
                        &best[tid * n_nodes])
        for t in range(1, n_threads):
            for k in range(n_nodes):
                c = &best[t * n_nodes + k]
                if c.split.feature >= 0 and is_better(
                        c.split.gain, c.split.feature, c.split.threshold,
                        &best[k].split):
                    best[k] = c[0]
        return _to_arrays(best, n_nodes)
    finally:
        free(best)


cdef void scan_column(int32_t f, int64_t begin, int64_t end,
                      const int32_t[::1] rows, const int32_t[::1] codes,
                      int64_t first_bin, int64_t n_value_bins,
                      const double* thresholds,      # feature f's bins
                      const int32_t[::1] row_slot,
                      const int64_t[:, ::1] quantized,
                      const int64_t[:, ::1] node_sums,
                      const uint8_t[:, ::1] feature_allowed,
                      const double[::1] parent_score,
                      double scale_g, double scale_h,
                      const RegParams* p, bint l2_only,
                      int64_t* sums,        # (n_nodes, 4) this thread's
                      int32_t* last_bin,    # (n_nodes,) -1 between calls
                      int32_t* touched,     # (n_nodes,) scratch
                      HistCandidate* best) noexcept nogil:
    """One feature for every node (see find_best_splits_columns). ``sums[4
    node + 0..1]`` the node's present sums, ``+ 2..3`` the running sums."""
    cdef int64_t k, Gq_miss, Hq_miss
    cdef Py_ssize_t n_touched = 0, i
    cdef int32_t node, code, b, row
    cdef int64_t* s
    cdef bint has_missing
    # pass 1: present sums of every node with entries (last_bin -2: seen)
    for k in range(begin, end):
        row = rows[k]
        node = row_slot[row]
        if node < 0 or not feature_allowed[node, f]:
            continue
        s = &sums[4 * node]
        if last_bin[node] == -1:
            last_bin[node] = -2
            touched[n_touched] = node
            n_touched = n_touched + 1
            s[0] = 0
            s[1] = 0
            s[2] = 0
            s[3] = 0
        s[0] += quantized[row, 0]
        s[1] += quantized[row, 1]
    # pass 2: boundaries in value order
    for k in range(begin, end):
        row = rows[k]
        node = row_slot[row]
        if node < 0 or not feature_allowed[node, f]:
            continue
        s = &sums[4 * node]
        code = codes[k]
        Gq_miss = node_sums[node, 0] - s[0]
        Hq_miss = node_sums[node, 1] - s[1]
        has_missing = Gq_miss != 0 or Hq_miss != 0
        b = last_bin[node]
        if b == -2:
            # the node's first entry: bins below it hold no present entry;
            # at bin 0, missing values alone may go left
            if code > 0 and has_missing:
                offer_boundary(&best[node], f, thresholds[0], 0, Gq_miss,
                               Hq_miss, node_sums[node, 0], node_sums[node, 1],
                               parent_score[node], scale_g, scale_h, p,
                               l2_only, True)
        elif code != b:
            offer_boundary(&best[node], f, thresholds[b], b, s[2], s[3],
                           node_sums[node, 0], node_sums[node, 1],
                           parent_score[node], scale_g, scale_h, p, l2_only,
                           not has_missing)
            if has_missing and b != n_value_bins - 1:
                offer_boundary(&best[node], f, thresholds[b], b,
                               s[2] + Gq_miss, s[3] + Hq_miss,
                               node_sums[node, 0], node_sums[node, 1],
                               parent_score[node], scale_g, scale_h, p,
                               l2_only, True)
        s[2] += quantized[row, 0]
        s[3] += quantized[row, 1]
        last_bin[node] = code
    # after each node's last entry: every present entry left, missing right
    for i in range(n_touched):
        node = touched[i]
        s = &sums[4 * node]
        Gq_miss = node_sums[node, 0] - s[0]
        Hq_miss = node_sums[node, 1] - s[1]
        if Gq_miss != 0 or Hq_miss != 0:
            b = last_bin[node]
            offer_boundary(&best[node], f, thresholds[b], b, s[2], s[3],
                           node_sums[node, 0], node_sums[node, 1],
                           parent_score[node], scale_g, scale_h, p, l2_only,
                           False)
        last_bin[node] = -1


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


cdef dict _to_arrays(const HistCandidate* best, Py_ssize_t n):
    out = {name: np.empty(n, dtype=dtype) for name, dtype in (
        ("gain", np.float64), ("feature", np.int32), ("threshold", np.float64),
        ("split_bin", np.int32), ("default_left", np.uint8),
        ("G_left", np.float64), ("H_left", np.float64),
        ("Gq_left", np.int64), ("Hq_left", np.int64))}
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
