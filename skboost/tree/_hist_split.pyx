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
    cdef int64_t b, Gq_left = 0, Hq_left = 0, Gq_l, Hq_l
    cdef double G_left, H_left, H_right, gain
    cdef int64_t last = n_value_bins if has_missing else n_value_bins - 1
    cdef bint l2_only = is_l2_only(p)
    for b in range(last):
        Gq_left += hist[first_bin + b, 0]
        Hq_left += hist[first_bin + b, 1]
        # missing values right (bins 0..b left)
        H_left = Hq_left / scale_h
        H_right = (Hq - Hq_left) / scale_h
        if children_heavy_enough(H_left, H_right, p):
            G_left = Gq_left / scale_g
            if l2_only:
                gain = split_loss_reduction_l2(G_left, H_left,
                                               (Gq - Gq_left) / scale_g,
                                               H_right, parent_score,
                                               p.reg_lambda)
            else:
                gain = split_loss_reduction(G_left, H_left,
                                            (Gq - Gq_left) / scale_g, H_right,
                                            parent_score, p)
            offer(best, gain, feature, thresholds[first_bin + b], <int32_t> b,
                  Gq_left, Hq_left, scale_g, scale_h, not has_missing)
        if not has_missing or b == n_value_bins - 1:
            continue
        # missing values left (bins 0..b and the missing bin left)
        Gq_l = Gq_left + Gq_miss
        Hq_l = Hq_left + Hq_miss
        H_left = Hq_l / scale_h
        H_right = (Hq - Hq_l) / scale_h
        if children_heavy_enough(H_left, H_right, p):
            if l2_only:
                gain = split_loss_reduction_l2(Gq_l / scale_g, H_left,
                                               (Gq - Gq_l) / scale_g, H_right,
                                               parent_score, p.reg_lambda)
            else:
                gain = split_loss_reduction(Gq_l / scale_g, H_left,
                                            (Gq - Gq_l) / scale_g, H_right,
                                            parent_score, p)
            offer(best, gain, feature, thresholds[first_bin + b], <int32_t> b,
                  Gq_l, Hq_l, scale_g, scale_h, True)


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
