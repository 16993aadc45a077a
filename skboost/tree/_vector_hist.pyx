"""Histograms and split scan of vector-leaf trees (several outputs per leaf).

A vector-leaf tree (``multi_strategy="multi_output_tree"``) has one
structure for all T outputs of a model and a leaf value per output. A
split is chosen by its loss reduction summed over the outputs,

    gain = 1/2 sum_t [score(G_L,t, H_L,t) + score(G_R,t, H_R,t)
                      - score(G_t, H_t)]

(``_gain.pxd``'s score of each output; a child must satisfy
``min_child_weight`` in every output), so the scan needs each bin's
gradient and hessian sums of every output. They are kept as exact int64
fixed-point sums, one power-of-two scale pair per output
(``_histogram.FixedPointGradients`` of each output's gradients): sums do
not depend on the order of the rows, so nothing depends on the threads,
and the larger child's histogram is exactly its parent's minus the
smaller child's. With T = 1 every number is the one the single-output
scan (``_hist_split``) computes, bit for bit.

Layouts::

    qgrad[row, t, 0 or 1]          (n_rows, T, 2) int64: a row's pairs adjacent
    hist[h, bin, t, 0 or 1]        (n_hist, n_bins, T, 2) int64
    node_sums[k, t, 0 or 1]        (n_nodes, T, 2) int64

Histograms are built in parallel over (node, feature) tasks: a task owns
its feature's bins of its node, so no two threads write one bin. It reads
the feature-major codes (``BinnedData.codes_by_feature``) of the node's
rows and adds each row's T pairs into the row's bin.
"""

import numpy as np

cimport cython

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdint cimport uint16_t
from libc.stdlib cimport free, malloc

from ._binning cimport BinnedData
from ._common cimport (SplitCandidate, int32_t, int64_t, is_better,
                       reset_candidate, uint8_t)
from ._context cimport SplitContext, reg_params
from ._gain cimport RegParams, leaf_score
from ._hist_candidate cimport VectorCandidate
from ._thread_bests cimport winning_thread
from ._partition cimport RowPartition
from .._parallel cimport threads_for_work

from skboost._openmp_helpers import check_n_threads

from ._hist_split import scan_layout
from .splits import empty_records

ctypedef fused code_t:
    uint8_t
    uint16_t


def build_vector_histograms(BinnedData binned not None,
                            RowPartition partition not None,
                            const int64_t[:, :, ::1] qgrad not None,  # IN (n_rows, T, 2)
                            begin, end,
                            int64_t[:, :, :, ::1] hist not None,      # OUT (n_hist, n_bins, T, 2)
                            hist_rows, *, int n_threads):
    """Histograms of the rows ``partition.row_index[begin[k]:end[k]]`` into
    ``hist[hist_rows[k]]`` (overwritten), for every node k.

    Parameters
    ----------
    binned : BinnedData
    partition : RowPartition
    qgrad : ndarray of shape (n_rows, T, 2), int64
        Fixed-point gradient and hessian of every row and output (0 for
        rows not in the tree).
    begin, end : array-like of shape (n_nodes,), int
        Each node's slice of ``partition.row_index``.
    hist : ndarray of shape (n_hist, n_bins, T, 2), int64
    hist_rows : array-like of shape (n_nodes,), int
        The row of ``hist`` each node's histogram goes to.
    n_threads : int
    """
    n_threads = check_n_threads(n_threads)
    # every index the nogil loop follows is checked first: node slices
    # inside the partition, distinct histogram rows (tasks of two nodes
    # must not write one row), shapes agreeing on rows, bins and outputs
    begin, end, hist_rows = _check_build(binned, partition, qgrad, begin,
                                         end, hist, hist_rows)
    # one unit of work per (row, feature, output) update
    n_threads = threads_for_work(n_threads, int(np.sum(end - begin))
                                 * binned.n_features * qgrad.shape[1])
    if binned.codes_by_feature.dtype == np.uint8:
        _build[uint8_t](binned.codes_by_feature, binned.bin_ptr,
                        partition.row_index, qgrad, begin, end, hist,
                        hist_rows, n_threads)
    else:
        _build[uint16_t](binned.codes_by_feature, binned.bin_ptr,
                         partition.row_index, qgrad, begin, end, hist,
                         hist_rows, n_threads)


cdef void _build(const code_t[:, ::1] codes,              # (n_features, n_rows)
                 const int64_t[::1] bin_ptr,
                 const int32_t[::1] row_index,
                 const int64_t[:, :, ::1] qgrad,
                 const int64_t[::1] begin, const int64_t[::1] end,
                 int64_t[:, :, :, ::1] hist,
                 const int64_t[::1] hist_rows, int n_threads) noexcept nogil:
    cdef Py_ssize_t n_features = codes.shape[0], n_outputs = qgrad.shape[1]
    cdef Py_ssize_t n_nodes = begin.shape[0]
    cdef Py_ssize_t task, k, i, t, b, first, stop
    cdef int32_t f, row
    cdef int64_t* out
    cdef const int64_t* pair
    # one (node, feature) pair per task: the task owns the feature's bins
    # of the node's histogram, so no two threads add to one bin
    for task in prange(n_nodes * n_features, schedule="dynamic",
                       num_threads=n_threads):
        k = task // n_features
        f = <int32_t> (task % n_features)
        first = bin_ptr[f]
        stop = bin_ptr[f + 1]
        # the task zeroes its own bins first: the histogram row is
        # overwritten, never accumulated across calls
        for b in range(first, stop):
            for t in range(n_outputs):
                hist[hist_rows[k], b, t, 0] = 0
                hist[hist_rows[k], b, t, 1] = 0
        # codes are feature-major (codes[f, row]); a row's T pairs are
        # adjacent in qgrad and in the bin: one run of 2 T int64 additions
        for i in range(begin[k], end[k]):
            row = row_index[i]
            out = &hist[hist_rows[k], first + codes[f, row], 0, 0]
            pair = &qgrad[row, 0, 0]
            for t in range(2 * n_outputs):
                out[t] += pair[t]


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_build(binned, partition, qgrad, begin, end, hist, hist_rows):
    """Shapes and indices checked before the kernel reads without checks."""
    begin = np.ascontiguousarray(begin, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    hist_rows = np.ascontiguousarray(hist_rows, dtype=np.int64)
    n_nodes = begin.shape[0]
    n_active = partition.row_index.shape[0]
    if end.shape != (n_nodes,) or hist_rows.shape != (n_nodes,):
        raise ValueError("begin, end and hist_rows need one entry per node")
    if n_nodes and (begin.min() < 0 or end.max() > n_active
                    or np.any(begin > end)):
        raise ValueError("node slices must lie inside the partition")
    if n_nodes and (hist_rows.min() < 0 or hist_rows.max() >= hist.shape[0]):
        raise ValueError("hist_rows must be rows of hist")
    if len(set(hist_rows.tolist())) != n_nodes:
        raise ValueError("every node needs its own histogram row")
    if qgrad.shape[0] != binned.n_rows or partition.n_rows != binned.n_rows:
        raise ValueError("qgrad, partition and binned must have the same rows")
    if hist.shape[1] != binned.n_bins or hist.shape[2:] != (qgrad.shape[1], 2) \
            or qgrad.shape[2] != 2:
        raise ValueError("hist must be (n_hist, n_bins, T, 2) for qgrad "
                         "(n_rows, T, 2)")
    return begin, end, hist_rows


cdef inline double vector_gain(const int64_t[:, ::1] left,
                               const int64_t[:, ::1] missing,
                               bint missing_left,
                               const int64_t[:, ::1] total,
                               const double[:, ::1] inverse_scales,
                               double parent_score,
                               const RegParams* p) noexcept nogil:
    """Loss reduction of the split whose left child holds ``left`` (plus
    ``missing`` when ``missing_left``), summed over the outputs; -inf when
    a child is lighter than min_child_weight in some output."""
    cdef Py_ssize_t t
    cdef int64_t Gq_left, Hq_left
    cdef double G_left, H_left, G_right, H_right, children = 0.0
    # outputs in order 0..T-1: the float64 sum of their scores is the same
    # for every thread count (and, with T = 1, _hist_split's number)
    for t in range(left.shape[0]):
        Gq_left = left[t, 0] + (missing[t, 0] if missing_left else 0)
        Hq_left = left[t, 1] + (missing[t, 1] if missing_left else 0)
        H_left = Hq_left * inverse_scales[t, 1]
        H_right = (total[t, 1] - Hq_left) * inverse_scales[t, 1]
        if H_left < p.min_child_weight or H_right < p.min_child_weight:
            return -INFINITY
        G_left = Gq_left * inverse_scales[t, 0]
        G_right = (total[t, 0] - Gq_left) * inverse_scales[t, 0]
        children += leaf_score(G_left, H_left, p) + leaf_score(G_right,
                                                               H_right, p)
    return 0.5 * (children - parent_score)


cdef inline void offer_vector(VectorCandidate* best, int64_t[:, ::1] best_left,
                              double gain, int32_t feature, double threshold,
                              int32_t split_bin, bint default_left,
                              const int64_t[:, ::1] left,
                              const int64_t[:, ::1] missing) noexcept nogil:
    """Take the candidate if it beats ``best`` (the total order of
    ``_common.is_better``), with its left sums."""
    cdef Py_ssize_t t
    # -inf: a child too light in some output; such a candidate never
    # enters, even as a thread's first (whose best holds no split yet)
    if gain == -INFINITY or not is_better(gain, feature, threshold,
                                          &best.split):
        return
    best.split.gain = gain
    best.split.feature = feature
    best.split.threshold = threshold
    best.split.default_left = default_left
    best.split_bin = split_bin
    for t in range(left.shape[0]):
        best_left[t, 0] = left[t, 0] + (missing[t, 0] if default_left else 0)
        best_left[t, 1] = left[t, 1] + (missing[t, 1] if default_left else 0)


cdef void scan_vector_feature(const int64_t[:, :, ::1] hist,  # (n_bins, T, 2)
                              int32_t feature, int64_t first_bin,
                              int64_t n_value_bins,
                              const int64_t[:, ::1] total,     # (T, 2)
                              double parent_score,
                              const double[::1] thresholds,
                              const double[:, ::1] inverse_scales,
                              const RegParams* p,
                              int64_t[:, ::1] left,             # scratch (T, 2)
                              VectorCandidate* best,
                              int64_t[:, ::1] best_left) noexcept nogil:
    """The candidates of one feature in one node, both missing directions,
    in the order of ``_hist_split.scan_bins``."""
    cdef Py_ssize_t t, n_outputs = total.shape[0]
    cdef int64_t b
    cdef const int64_t[:, ::1] missing = hist[first_bin + n_value_bins]
    cdef bint has_missing = False
    for t in range(n_outputs):
        left[t, 0] = 0
        left[t, 1] = 0
        if missing[t, 0] != 0 or missing[t, 1] != 0:
            has_missing = True
    cdef int64_t last = n_value_bins if has_missing else n_value_bins - 1
    cdef double threshold
    # the bins in order, as _hist_split.scan_bins: after bin b the left
    # child holds bins 0..b (plus the missing bin when missing goes left)
    for b in range(last):
        for t in range(n_outputs):
            left[t, 0] += hist[first_bin + b, t, 0]
            left[t, 1] += hist[first_bin + b, t, 1]
        threshold = thresholds[first_bin + b]
        # missing values right (bins 0..b left), also when there are none
        offer_vector(best, best_left,
                     vector_gain(left, missing, False, total, inverse_scales,
                                 parent_score, p),
                     feature, threshold, <int32_t> b, False, left,
                     missing)
        if not has_missing or b == n_value_bins - 1:
            continue
        # missing values left (bins 0..b and the missing bin left)
        offer_vector(best, best_left,
                     vector_gain(left, missing, True, total, inverse_scales,
                                 parent_score, p),
                     feature, threshold, <int32_t> b, True, left, missing)


def vector_parent_scores(const int64_t[:, :, ::1] node_sums not None,
                         const double[:, ::1] scales not None,
                         SplitContext context not None):
    """Each node's score summed over its outputs (from its exact sums)."""
    cdef RegParams p = reg_params(context)
    cdef Py_ssize_t k, t
    out = np.zeros(node_sums.shape[0])
    cdef double[::1] view = out
    # the outputs' scores summed in output order, as vector_gain sums the
    # children's: parent and children are computed alike
    for k in range(node_sums.shape[0]):
        for t in range(node_sums.shape[1]):
            view[k] += leaf_score(node_sums[k, t, 0] / scales[t, 0],
                                  node_sums[k, t, 1] / scales[t, 1], &p)
    return out


def find_best_vector_splits(
        const int64_t[:, :, :, ::1] hist not None,   # IN (n_hist, n_bins, T, 2)
        const int64_t[:, :, ::1] node_sums not None,  # IN (n_nodes, T, 2)
        const int64_t[::1] bin_ptr not None,          # IN (n_features + 1,)
        const double[::1] thresholds not None,        # IN (n_bins,)
        const uint8_t[:, ::1] feature_allowed not None,  # IN (n_nodes, n_features)
        const double[:, ::1] scales not None,         # IN (T, 2)
        *, SplitContext context not None, hist_rows=None):
    """Best split of each node of a batch from its vector histogram.

    Parameters
    ----------
    hist : ndarray of shape (n_hist, n_bins, T, 2), int64
        Node k's histogram is ``hist[hist_rows[k]]`` (``hist[k]`` without
        ``hist_rows``).
    node_sums : ndarray of shape (n_nodes, T, 2), int64
        Each node's exact fixed-point totals per output.
    bin_ptr : ndarray of shape (n_features + 1,), int64
        Feature f owns bins ``bin_ptr[f] .. bin_ptr[f+1]-1``, the last its
        missing bin.
    thresholds : ndarray of shape (n_bins,), float64
        Tree threshold of each "split after bin" (``binning.py``).
    feature_allowed : ndarray of shape (n_nodes, n_features), uint8
    scales : ndarray of shape (T, 2), float64
        Each output's fixed-point scales (gradient, hessian): a sum ``q``
        stands for ``q / scale``.
    context : SplitContext
        Regularisation and thread count (its own scales are unused).
    hist_rows : array-like of shape (n_nodes,), int, default=None

    Returns
    -------
    records : ndarray of shape (n_nodes,), dtype ``splits.SPLIT_RECORD``
        Each node's best split (``G_left``, ``H_left``, ``Gq_left``,
        ``Hq_left`` hold output 0's sums).
    left_sums : ndarray of shape (n_nodes, T, 2), int64
        The exact fixed-point sums of each best split's left child.
    """
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef const int64_t[::1] rows = _check_scan(
        hist, node_sums, bin_ptr, thresholds, feature_allowed, scales,
        hist_rows)
    cdef RegParams p = reg_params(context)
    cdef int n_threads = _vector_scan_threads(context, n_nodes, hist.shape[1],
                                              node_sums.shape[1])
    cdef double[:, ::1] inverse = 1.0 / np.asarray(scales)
    cdef double[::1] parent = vector_parent_scores(node_sums, scales, context)
    scratch_arr, best_left_arr = _vector_buffers(n_threads, n_nodes,
                                                 node_sums.shape[1])
    cdef VectorCandidate* best = _fresh_vector_bests(n_threads * n_nodes)
    try:   # (the buffers' memoryviews are made at the call)
        _scan_vector_tasks(hist, rows, node_sums, bin_ptr, thresholds,
                           feature_allowed, inverse, parent, &p, scratch_arr,
                           best, best_left_arr, n_threads)
        return _merged(best, best_left_arr, n_threads, n_nodes, inverse)
    finally:
        free(best)


cdef int _vector_scan_threads(SplitContext context, Py_ssize_t n_nodes,
                              Py_ssize_t n_bins, Py_ssize_t n_outputs):
    """Threads of the scan, sized once by its work: a bin (both
    directions) is about one unit per output."""
    return threads_for_work(context.n_threads, n_nodes * n_bins * n_outputs)


def _vector_buffers(int n_threads, Py_ssize_t n_nodes, Py_ssize_t n_outputs):
    """Each thread's running sums (T, 2), and the left sums of every
    thread's best of every node (threads x nodes, T, 2), int64."""
    return (np.zeros((n_threads, n_outputs, 2), dtype=np.int64),
            np.zeros((n_threads * max(n_nodes, 1), n_outputs, 2),
                     dtype=np.int64))


cdef VectorCandidate* _fresh_vector_bests(Py_ssize_t count) except NULL:
    """``count`` candidates (threads x nodes) holding no split yet; the
    caller frees them."""
    cdef VectorCandidate* best = <VectorCandidate*> malloc(
        max(count, 1) * sizeof(VectorCandidate))
    if best == NULL:
        raise MemoryError()
    cdef Py_ssize_t k
    for k in range(count):
        reset_candidate(&best[k].split)
        best[k].split_bin = -1
    return best


cdef void _scan_vector_tasks(const int64_t[:, :, :, ::1] hist,
                             const int64_t[::1] rows,
                             const int64_t[:, :, ::1] node_sums,
                             const int64_t[::1] bin_ptr,
                             const double[::1] thresholds,
                             const uint8_t[:, ::1] feature_allowed,
                             const double[:, ::1] inverse,
                             const double[::1] parent, const RegParams* p,
                             int64_t[:, :, ::1] scratch,
                             VectorCandidate* best,
                             int64_t[:, :, ::1] best_left,
                             int n_threads) noexcept nogil:
    """Every (node, feature) task of find_best_vector_splits, in parallel:
    thread t's candidates and their left sums go to slot t * n_nodes + k,
    its running sums to ``scratch[t]``."""
    cdef Py_ssize_t n_nodes = node_sums.shape[0]
    cdef Py_ssize_t n_features = bin_ptr.shape[0] - 1
    cdef Py_ssize_t k, task, slot
    cdef int tid
    cdef int32_t f
    # as _hist_split: one (node, feature) pair per task, each thread into
    # its own candidates; merged afterwards under the total order
    for task in prange(n_nodes * n_features, schedule="dynamic",
                       num_threads=n_threads):
        tid = threadid()
        k = task // n_features
        f = <int32_t> (task % n_features)
        if not feature_allowed[k, f]:
            continue
        slot = tid * n_nodes + k
        scan_vector_feature(hist[rows[k]], f, bin_ptr[f],
                            bin_ptr[f + 1] - bin_ptr[f] - 1, node_sums[k],
                            parent[k], thresholds, inverse, p, scratch[tid],
                            &best[slot], best_left[slot])


cdef object _merged(VectorCandidate* best, best_left, int n_threads,
                    Py_ssize_t n_nodes, const double[:, ::1] inverse):
    """Thread 0's candidates after merging the others' under the total
    order, as records and left sums."""
    cdef Py_ssize_t k
    cdef int t
    for k in range(n_nodes):
        # the left sums live beside the candidates: moved with the winner
        t = winning_thread(best, n_nodes, n_threads, k)
        if t > 0:
            best[k] = best[t * n_nodes + k]
            best_left[k] = best_left[t * n_nodes + k]
    # thread 0's rows now hold the winners
    left = np.ascontiguousarray(best_left[:n_nodes])
    records = empty_records(n_nodes)
    # the records hold output 0's left sums (the driver's G_left, H_left);
    # every output's are in `left`, returned beside them
    for k in range(n_nodes):
        records["gain"][k] = best[k].split.gain
        records["feature"][k] = best[k].split.feature
        records["threshold"][k] = best[k].split.threshold
        records["default_left"][k] = best[k].split.default_left
        records["split_bin"][k] = best[k].split_bin
    records["Gq_left"] = left[:, 0, 0]
    records["Hq_left"] = left[:, 0, 1]
    records["G_left"] = left[:, 0, 0] * np.asarray(inverse)[0, 0]
    records["H_left"] = left[:, 0, 1] * np.asarray(inverse)[0, 1]
    return records, left


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_scan(hist, node_sums, bin_ptr, thresholds, feature_allowed, scales,
                hist_rows):
    """Validates the inputs; returns the int64 histogram row of each node."""
    n_nodes, n_outputs = node_sums.shape[0], node_sums.shape[1]
    n_bins = hist.shape[1]
    if hist.shape[2] != n_outputs or hist.shape[3] != 2 or (
            node_sums.shape[2] != 2):
        raise ValueError("hist must be (n_hist, n_bins, T, 2), node_sums "
                         "(n_nodes, T, 2)")
    if scales.shape[0] != n_outputs or scales.shape[1] != 2 or not np.all(
            np.asarray(scales) > 0):
        raise ValueError("scales must be (T, 2), positive")
    if thresholds.shape[0] != n_bins:
        raise ValueError("thresholds must have one entry per bin")
    return scan_layout(hist, hist_rows, n_nodes, bin_ptr, feature_allowed)
