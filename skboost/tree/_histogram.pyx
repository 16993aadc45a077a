"""Gradient histograms in exact fixed-point arithmetic.

Gradients and hessians are quantised once per tree to 64-bit integers with a
power-of-two scale (``quantize_gradients``), so every histogram bin is an
exact integer sum:

- the sum does not depend on the order of the rows, hence not on how rows
  are split between threads: results are bit-identical for any n_jobs;
- the larger child's histogram is the parent's minus the smaller child's,
  exactly;
- a float32 gradient times a power of two is an integer whenever it is not
  tiny, so a row of integer weight w adds exactly what w copies of it add.

The scale is chosen so that the sum of the absolute quantised values of all
rows stays below 2**62: no bin, node total or partial sum can overflow.
Quantisation keeps about 61 - log2(n_rows) bits below the largest gradient
(a resolution of about 1e-12 of it for a million rows); values smaller than
that, such as the 1e-16 hessian floor of the logistic loss, round to 0.

Histogram layout: ``hist[node, bin, 0]`` gradient and ``hist[node, bin, 1]``
hessian, with feature f owning bins ``bin_ptr[f] .. bin_ptr[f+1]-1`` (see
``binning.py``).
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

from cython.parallel cimport prange, threadid
from libc.math cimport fabs, frexp, isfinite, ldexp, llrint
from libc.string cimport memset
from libc.stdint cimport uint16_t

from ._binning cimport BinnedData
from ._common cimport PREFETCH_ROWS, int32_t, int64_t, prefetch, uint8_t
from ._partition cimport RowPartition
from ._partition import _make_tasks, threads_for_tasks

ctypedef fused code_t:
    uint8_t
    uint16_t

# Headroom: sums of |quantised values| stay below 2**SUM_BITS.
SUM_BITS = 62
# the largest finite power of two
MAX_SCALE_EXPONENT = 1023


def quantization_scale(double max_abs, Py_ssize_t n_terms):
    """Power of two s with ``n_terms * max_abs * s < 2**61`` (the largest,
    up to a factor 2), so that the rounded terms sum below 2**62.

    Bounding the sum by ``n_terms * max_abs`` (instead of summing) makes the
    scale independent of the order of the rows, hence of the threads. The
    exponent is capped so the scale stays finite for vanishing gradients.
    """
    cdef int exponent
    if max_abs <= 0.0 or n_terms == 0:
        return 1.0
    frexp(max_abs * n_terms, &exponent)     # max_abs * n < 2**exponent
    return ldexp(1.0, min(SUM_BITS - 1 - exponent, MAX_SCALE_EXPONENT))


def quantize_gradients(const float[:, ::1] gpair not None,     # IN (n_rows, 2)
                       weight,                        # None or float64 (n_rows,)
                       const uint8_t[::1] active not None,     # IN (n_rows,)
                       int n_threads, out=None):
    """Weighted gradient pairs of the active rows as int64 fixed point.

    Returns
    -------
    quantized : ndarray of shape (n_rows, 2), int64
        ``round(g * w * scale_g)`` and ``round(h * w * scale_h)``; 0 for
        inactive rows. Written into ``out`` when given (reused between
        trees).
    scales : ndarray of shape (2,)
        ``scale_g`` and ``scale_h``, powers of two.
    """
    check_n_threads(n_threads)
    cdef Py_ssize_t n = gpair.shape[0], i
    if active.shape[0] != n or gpair.shape[1] != 2:
        raise ValueError("gpair must be (n_rows, 2), active (n_rows,)")
    cdef bint weighted = weight is not None
    w = (np.ones(1) if weight is None
         else np.ascontiguousarray(weight, dtype=np.float64))
    if weighted and w.shape[0] != n:
        raise ValueError("weight must have one entry per row")
    cdef const double[::1] wv = w
    # maxima per thread, then overall: max is order-independent, so the
    # scales (and everything after) do not depend on the threads
    # g, h, count; a cache line (8 doubles) per thread: no false sharing
    maxima_arr = np.zeros((n_threads, 8), dtype=np.float64)
    bad_arr = np.zeros(n_threads, dtype=np.uint8)
    cdef double[:, ::1] maxima = maxima_arr
    cdef uint8_t[::1] bad = bad_arr
    cdef double g, h
    cdef int tid
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        if active[i]:
            tid = threadid()
            g = fabs(gpair[i, 0] * (wv[i] if weighted else 1.0))
            h = fabs(gpair[i, 1] * (wv[i] if weighted else 1.0))
            if not (isfinite(g) and isfinite(h)):
                bad[tid] = 1
            maxima[tid, 2] += 1
            if g > maxima[tid, 0]:
                maxima[tid, 0] = g
            if h > maxima[tid, 1]:
                maxima[tid, 1] = h
    if bad_arr.any():
        raise ValueError("gradients, hessians and weights must be finite")
    cdef double max_g = maxima_arr[:, 0].max(), max_h = maxima_arr[:, 1].max()
    cdef Py_ssize_t n_active = int(maxima_arr[:, 2].sum())
    cdef double scale_g = quantization_scale(max_g, n_active)
    cdef double scale_h = quantization_scale(max_h, n_active)
    if out is None:
        out = np.empty((n, 2), dtype=np.int64)
    if out.shape != (n, 2) or out.dtype != np.int64:
        raise ValueError("out must be int64 of shape (n_rows, 2)")
    cdef int64_t[:, ::1] q = out
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        if active[i]:
            # llrint: round to nearest (ties to even), one instruction
            q[i, 0] = llrint(<double> gpair[i, 0]
                             * (wv[i] if weighted else 1.0) * scale_g)
            q[i, 1] = llrint(<double> gpair[i, 1]
                             * (wv[i] if weighted else 1.0) * scale_h)
        else:
            q[i, 0] = 0
            q[i, 1] = 0
    return out, np.array([scale_g, scale_h])


cdef inline void accumulate_rows(const code_t[:, ::1] codes,
                                 const int64_t[:, ::1] quantized,
                                 const int32_t[::1] row_index,
                                 int64_t begin, int64_t end,
                                 const int64_t[::1] bin_ptr,
                                 int64_t* hist) noexcept nogil:
    """hist[bin] += (g, h) for the rows row_index[begin:end], all features."""
    cdef Py_ssize_t n_features = codes.shape[1], f
    cdef int64_t i, b, g, h
    cdef int32_t row, ahead
    for i in range(begin, end):
        # Rows of a deep node are scattered: fetch the codes and gradients
        # of a row PREFETCH_ROWS ahead while accumulating this one (paper
        # section 4.2, cache-aware access).
        if i + PREFETCH_ROWS < end:
            ahead = row_index[i + PREFETCH_ROWS]
            prefetch(&codes[ahead, 0])
            prefetch(&quantized[ahead, 0])
        row = row_index[i]
        g = quantized[row, 0]
        h = quantized[row, 1]
        for f in range(n_features):
            b = 2 * (bin_ptr[f] + codes[row, f])
            hist[b] += g
            hist[b + 1] += h


def build_histograms(BinnedData data,
                     RowPartition partition,
                     quantized,                  # IN (n_rows, 2) int64
                     node_begin,                 # IN (n_nodes,) int64
                     node_end,                   # IN (n_nodes,) int64
                     hist,                       # OUT (n_nodes, n_bins, 2) int64
                     int n_threads):
    """Histograms of a batch of nodes, node k owning the rows
    ``partition.row_index[node_begin[k]:node_end[k]]``.

    Tasks of at most ROWS_PER_TASK rows of one node run in parallel; each
    thread accumulates into its own copy of the node's histogram, zeroed on
    first use, and the copies are added up (exactly, in integers).
    """
    check_n_threads(n_threads)
    if partition.n_rows != data.n_rows:
        raise ValueError("data and partition have different row counts")
    if quantized.shape != (data.n_rows, 2) or quantized.dtype != np.int64:
        raise ValueError("quantized must be int64 of shape (n_rows, 2)")
    node_begin = np.ascontiguousarray(node_begin, dtype=np.int64)
    node_end = np.ascontiguousarray(node_end, dtype=np.int64)
    n_nodes = node_begin.shape[0]
    if hist.shape != (n_nodes, data.n_bins, 2) or hist.dtype != np.int64:
        raise ValueError("hist must be int64 of shape (n_nodes, n_bins, 2)")
    if node_end.shape[0] != n_nodes or (n_nodes and (
            node_begin.min() < 0 or np.any(node_end < node_begin)
            or node_end.max() > partition.row_index.shape[0])):
        raise ValueError("node ranges outside the partition")
    tasks = _make_tasks(node_begin, node_end)
    n_threads = threads_for_tasks(tasks[0].shape[0], n_threads)
    if data.codes.dtype == np.uint8:
        _build[uint8_t](data.codes, quantized, partition.row_index, tasks,
                        node_end, data.bin_ptr, hist, n_threads)
    else:
        _build[uint16_t](data.codes, quantized, partition.row_index, tasks,
                         node_end, data.bin_ptr, hist, n_threads)


cdef void _build(const code_t[:, ::1] codes,
                 const int64_t[:, ::1] quantized,
                 const int32_t[::1] row_index,
                 tuple tasks,
                 const int64_t[::1] node_end,
                 const int64_t[::1] bin_ptr,
                 int64_t[:, :, ::1] hist,
                 int n_threads):
    cdef const int64_t[::1] task_node = tasks[0]
    cdef const int64_t[::1] task_begin = tasks[1]
    cdef const int64_t[::1] task_end = tasks[2]
    cdef Py_ssize_t n_tasks = task_node.shape[0]
    cdef Py_ssize_t n_nodes = hist.shape[0], n_bins = hist.shape[1]
    # A node of one task is built by one thread straight into ``hist``; only
    # nodes split into several tasks need per-thread partial histograms
    # (scratch[thread, shared node, bin, 2]), added up at the end.
    tasks_per_node = np.bincount(np.asarray(task_node), minlength=n_nodes)
    shared_nodes = np.flatnonzero(tasks_per_node > 1)
    shared_index_arr = np.full(n_nodes, -1, dtype=np.int64)
    shared_index_arr[shared_nodes] = np.arange(shared_nodes.shape[0])
    cdef Py_ssize_t n_shared = shared_nodes.shape[0]
    scratch_arr = np.empty((n_threads, max(n_shared, 1), n_bins, 2),
                           dtype=np.int64)
    touched_arr = np.zeros((n_threads, max(n_shared, 1)), dtype=np.uint8)
    cdef int64_t[:, :, :, ::1] scratch = scratch_arr
    cdef uint8_t[:, ::1] touched = touched_arr
    cdef const int64_t[::1] shared_index = shared_index_arr
    cdef const int64_t[::1] shared_node = shared_nodes.astype(np.int64)
    cdef Py_ssize_t t, k, j
    cdef int tid
    cdef int64_t node, s
    cdef int64_t* target
    for t in prange(n_tasks, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        node = task_node[t]
        s = shared_index[node]
        if s < 0:
            target = &hist[node, 0, 0]
            memset(target, 0, n_bins * 2 * sizeof(int64_t))
        else:
            target = &scratch[tid, s, 0, 0]
            if not touched[tid, s]:
                memset(target, 0, n_bins * 2 * sizeof(int64_t))
                touched[tid, s] = 1
        accumulate_rows(codes, quantized, row_index, task_begin[t],
                        task_end[t], bin_ptr, target)
    # Add up the partial histograms of shared nodes, in parallel over bins.
    for k in range(n_shared):
        node = shared_node[k]
        for j in prange(n_bins, nogil=True, schedule="static",
                        num_threads=n_threads):
            hist[node, j, 0] = 0
            hist[node, j, 1] = 0
            for tid in range(n_threads):
                if touched[tid, k]:
                    hist[node, j, 0] += scratch[tid, k, j, 0]
                    hist[node, j, 1] += scratch[tid, k, j, 1]
