"""One pass over a page of binned rows: route the page's rows to the
children of the level's splits, and add them to the histograms of the
nodes being built (out-of-core training, ``finders/paged.py``).

In core, rows are kept sorted by node (``RowPartition``) and a node's
histogram reads its rows through that index. Out of core the binned rows
arrive page by page, in row order, so each row carries the id of its node
instead (``position``), and every page is read once per level::

    page k (rows row_offset .. row_offset + n)    row-major codes
      phase A, parallel over rows:  position[r] -> child (if its node split)
                                    target[i] = build_row[position[r]]
                                    qbuf[i]   = fixed-point (g, h) of row r
      phase B, parallel over features:
                                    hist[target[i], bin_ptr[f] + code[f, i]]
                                        += qbuf[i]

Phase B splits the work by feature: each thread owns whole columns of the
histograms, so no per-thread copies are needed, and the sums are exact
integers, so nothing depends on the number of threads.
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython
from cython.parallel cimport prange, threadid
from libc.stdint cimport int16_t, uint16_t

from ._common cimport (PREFETCH_ROWS, fixed_point, int32_t, int64_t, prefetch,
                      uint8_t, weight_pointer)
from .._parallel cimport threads_for_work

ctypedef fused code_t:
    uint8_t
    uint16_t

# A row's node id: int16 (2 bytes a row) when the tree's node ids fit,
# int32 otherwise (``finders/paged.py`` chooses).
ctypedef fused position_t:
    int16_t
    int32_t


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_pass(page, Py_ssize_t row_offset, position, active, nodes,
                missing_code, bin_ptr, hist, gpair, weight, counts, qbuf,
                target, entry_row):
    """Every index the nogil loops follow, checked once per page: the
    page's rows inside the data, node ids inside the node arrays, the
    histogram rows inside ``hist``."""
    n_page_rows, n_features = page.shape
    n_rows = position.shape[0]
    if row_offset < 0 or row_offset + n_page_rows > n_rows:
        raise ValueError("the page's rows are outside the data")
    if active.shape[0] != n_rows or gpair.shape[0] != n_rows or (
            weight is not None and weight.shape[0] != n_rows):
        raise ValueError("active, gpair and weight need one entry per row")
    if missing_code.shape[0] != n_features or (
            bin_ptr.shape[0] != n_features + 1):
        raise ValueError("missing_code and bin_ptr must describe the "
                         "page's features")
    if np.any(np.asarray(missing_code) != np.diff(np.asarray(bin_ptr)) - 1):
        raise ValueError("missing_code must be each feature's last bin")
    n_ids = nodes[0].shape[0]
    if any(a.shape[0] != n_ids for a in nodes) or counts.shape[0] != n_ids:
        raise ValueError("the node arrays must have one entry per node id")
    if n_ids > np.iinfo(np.asarray(position).dtype).max + 1:
        raise ValueError("node ids do not fit the dtype of position")
    feature, split_bin, default_left, left, right, build_row = nodes
    split = np.asarray(feature) >= 0
    if np.any(np.asarray(feature)[split] >= n_features):
        raise ValueError("split feature outside the page's features")
    for child in (np.asarray(left)[split], np.asarray(right)[split]):
        if child.size and (child.min() < 0 or child.max() >= n_ids):
            raise ValueError("child node id outside the node arrays")
    rows = np.asarray(build_row)
    built = rows[rows >= 0]
    if built.size and built.max() >= hist.shape[0]:
        raise ValueError("build_row outside hist")
    if hist.shape[1] != bin_ptr[n_features] or hist.shape[2] != 2:
        raise ValueError("hist must be (n_hist, n_bins, 2)")
    window = np.asarray(position)[row_offset:row_offset + n_page_rows]
    if window.size and (window.max() >= n_ids or window.min() < -1):
        raise ValueError("a row's node id is outside the node arrays")
    if (qbuf.shape[0] < n_page_rows or target.shape[0] < n_page_rows
            or entry_row.shape[0] < n_page_rows):
        raise ValueError("qbuf, target and entry_row need one entry per "
                         "page row")


# Rows per parallel task of phase A.
cdef enum:
    BLOCK_ROWS = 4096


def route_and_build(const code_t[:, ::1] page not None,   # IN (n, n_features) row-major
                    Py_ssize_t row_offset,               # first row of the page
                    position_t[::1] position not None,   # IN/OUT (n_rows,) node id, -1: none
                    const uint8_t[::1] active not None,  # IN (n_rows,) rows of the tree
                    const int32_t[::1] split_feature not None,  # IN (n_ids,) -1: not split now
                    const int32_t[::1] split_bin not None,      # IN (n_ids,)
                    const uint8_t[::1] default_left not None,   # IN (n_ids,)
                    const int32_t[::1] left_child not None,     # IN (n_ids,)
                    const int32_t[::1] right_child not None,    # IN (n_ids,)
                    const int64_t[::1] build_row not None,      # IN (n_ids,) hist row, -1: none
                    const int32_t[::1] missing_code not None,   # IN (n_features,)
                    const int64_t[::1] bin_ptr not None,        # IN (n_features + 1,)
                    const float[:, ::1] gpair not None,         # IN (n_rows, 2)
                    weight,                                     # IN (n_rows,) float64 or None
                    double scale_g, double scale_h,
                    int64_t[:, :, ::1] hist not None,           # IN/OUT (n_hist, n_bins, 2)
                    int64_t[::1] counts not None,               # IN/OUT (n_ids,) active rows
                    int64_t[:, ::1] qbuf not None,              # scratch (>= n, 2)
                    int64_t[::1] target not None,               # scratch (>= n,)
                    int32_t[::1] entry_row not None,            # scratch (>= n,)
                    bint route, bint build, int n_threads):
    """Route the page's rows through the splits (``route``) and add the
    active ones to their node's histogram (``build``, nodes with
    ``build_row >= 0``); ``counts[node] +=`` the active rows now in each
    node. A row goes left when its code is ``<= split_bin`` (missing code:
    ``default_left``), exactly as ``RowPartition.split_nodes`` sends it.
    A code beyond its feature's bins (a damaged page) is ignored, never
    followed out of bounds.

    The rows to add are grouped by histogram before they are added (a
    counting sort over the page): adding a page's rows in row order would
    jump between the histograms of up to 2**(depth-1) nodes at every row,
    a cache miss per update; grouped, each feature's run of rows stays in
    one histogram's bins."""
    n_threads = check_n_threads(n_threads)
    _check_pass(page, row_offset, position, active,
                (split_feature, split_bin, default_left, left_child,
                 right_child, build_row), missing_code, bin_ptr, hist, gpair,
                weight, counts, qbuf, target, entry_row)
    cdef Py_ssize_t n = page.shape[0], n_features = page.shape[1]
    cdef Py_ssize_t n_blocks = (n + BLOCK_ROWS - 1) // BLOCK_ROWS
    cdef Py_ssize_t n_hist = hist.shape[0]
    n_phase_threads = threads_for_work(n_threads, 4 * n)
    per_thread = np.zeros((n_phase_threads, counts.shape[0]), dtype=np.int64)
    # rows of each block going to each histogram
    block_hist = np.zeros((max(n_blocks, 1), max(n_hist, 1)), dtype=np.int64)
    cdef int64_t[:, ::1] per_thread_view = per_thread
    cdef int64_t[:, ::1] block_hist_view = block_hist
    _route(page, row_offset, position, active, split_feature, split_bin,
           default_left, left_child, right_child, build_row, build,
           missing_code, target, per_thread_view, block_hist_view,
           n_phase_threads)
    counts_arr = np.asarray(counts)
    counts_arr += per_thread.sum(axis=0)
    if not build:
        return
    # where each block's rows of histogram h go: grouped by h, then by block
    per_hist = block_hist.sum(axis=0)
    hist_start = np.zeros(block_hist.shape[1] + 1, dtype=np.int64)
    np.cumsum(per_hist, out=hist_start[1:])
    start = hist_start[:block_hist.shape[1]] + np.cumsum(block_hist, axis=0) - block_hist
    cdef int64_t[:, ::1] start_view = start
    cdef const int64_t[::1] hist_start_view = hist_start
    _pack(row_offset, target[:n], gpair, weight, scale_g, scale_h,
          start_view, entry_row, qbuf, n_phase_threads)
    cdef int add_threads = threads_for_work(n_threads, n * n_features)
    # whole histograms per thread when there are enough and none holds
    # more than a thread's share of the rows
    cdef bint by_histogram = bool(add_threads > 1
                        and np.count_nonzero(per_hist) >= 4 * add_threads
                        and per_hist.max() * add_threads <= per_hist.sum())
    _add_page(page, entry_row, qbuf, hist_start_view, missing_code, bin_ptr,
              hist, add_threads, by_histogram)


cdef void _route(const code_t[:, ::1] page, Py_ssize_t row_offset,
                 position_t[::1] position, const uint8_t[::1] active,
                 const int32_t[::1] split_feature,
                 const int32_t[::1] split_bin,
                 const uint8_t[::1] default_left,
                 const int32_t[::1] left_child,
                 const int32_t[::1] right_child,
                 const int64_t[::1] build_row, bint build,
                 const int32_t[::1] missing_code,
                 int64_t[::1] target,                 # OUT (n,) hist row, -1
                 int64_t[:, ::1] per_thread,          # OUT (threads, n_ids)
                 int64_t[:, ::1] block_hist,          # OUT (blocks, n_hist)
                 int n_threads) noexcept:
    """Phase A: each row's node after the splits, the histogram it adds
    to (``target``, -1: none; ``build``: whether histograms are built)
    and how many rows of each block go to each histogram."""
    cdef Py_ssize_t n = page.shape[0]
    cdef Py_ssize_t n_blocks = (n + BLOCK_ROWS - 1) // BLOCK_ROWS
    cdef Py_ssize_t k, i, r
    cdef int32_t node, feat, code
    cdef int tid
    cdef int64_t t
    for k in prange(n_blocks, nogil=True, schedule="static",
                    num_threads=n_threads):
        tid = threadid()
        for i in range(k * BLOCK_ROWS, min((k + 1) * BLOCK_ROWS, n)):
            r = row_offset + i
            node = position[r]
            if node >= 0 and split_feature[node] >= 0:
                feat = split_feature[node]
                code = page[i, feat]
                if code == missing_code[feat]:
                    node = (left_child[node] if default_left[node]
                            else right_child[node])
                elif code < missing_code[feat]:
                    node = (left_child[node] if code <= split_bin[node]
                            else right_child[node])
                position[r] = <position_t> node
            t = -1
            if node >= 0 and active[r]:
                per_thread[tid, node] += 1
                if build:
                    t = build_row[node]
                    if t >= 0:
                        block_hist[k, t] += 1
            target[i] = t


cdef void _pack(Py_ssize_t row_offset, const int64_t[::1] target,
                const float[:, ::1] gpair, object weight,
                double scale_g, double scale_h,
                int64_t[:, ::1] start,               # IN/OUT (blocks, n_hist)
                int32_t[::1] entry_row,              # OUT page row per entry
                int64_t[:, ::1] qbuf,                # OUT fixed-point pairs
                int n_threads) noexcept:
    """The rows to add, grouped by histogram: block k's rows of histogram
    h go to ``start[k, h]`` on, in row order."""
    cdef Py_ssize_t n_blocks = start.shape[0]
    cdef Py_ssize_t n = target.shape[0]
    cdef const double* w = NULL
    if weight is not None:
        w = weight_pointer(weight)
    cdef Py_ssize_t k, i, r
    cdef int64_t t, dst
    for k in prange(n_blocks, nogil=True, schedule="static",
                    num_threads=n_threads):
        for i in range(k * BLOCK_ROWS, min((k + 1) * BLOCK_ROWS, n)):
            t = target[i]
            if t < 0:
                continue
            r = row_offset + i
            dst = start[k, t]
            start[k, t] = dst + 1
            entry_row[dst] = <int32_t> i
            qbuf[dst, 0] = fixed_point(gpair[r, 0], w, r, scale_g)
            qbuf[dst, 1] = fixed_point(gpair[r, 1], w, r, scale_h)


cdef inline void _add_rows(const code_t[:, ::1] page,
                           const int32_t[::1] entry_row,
                           const int64_t[:, ::1] qbuf,
                           Py_ssize_t first, Py_ssize_t last,
                           const int32_t[::1] missing_code,
                           const int64_t[::1] bin_ptr,
                           int64_t* bins,
                           Py_ssize_t f0, Py_ssize_t f1) noexcept nogil:
    """Entries ``first .. last`` of one histogram, features f0 .. f1."""
    cdef Py_ssize_t j, f
    cdef int64_t gq, hq
    cdef int32_t code, row
    for j in range(first, last):
        if j + PREFETCH_ROWS < last:
            prefetch(&page[entry_row[j + PREFETCH_ROWS], f0])
        row = entry_row[j]
        gq = qbuf[j, 0]
        hq = qbuf[j, 1]
        for f in range(f0, f1):
            code = page[row, f]
            if code <= missing_code[f]:
                bins[2 * (bin_ptr[f] + code)] += gq
                bins[2 * (bin_ptr[f] + code) + 1] += hq


cdef void _add_page(const code_t[:, ::1] page,
                    const int32_t[::1] entry_row,
                    const int64_t[:, ::1] qbuf,
                    const int64_t[::1] hist_start,   # (n_hist + 1,)
                    const int32_t[::1] missing_code,
                    const int64_t[::1] bin_ptr,
                    int64_t[:, :, ::1] hist,
                    int n_threads, bint by_histogram) noexcept:
    """Phase B: histogram h's rows, ``hist_start[h]`` to
    ``hist_start[h + 1]``, added to its bins row by row, each row's pair
    loaded once for the features, which sit in the row's cache line (the
    in-core kernel's row-wise order). ``by_histogram``: each thread takes
    whole histograms (every row read once); otherwise thread g owns
    features [g F / T, (g + 1) F / T) of every histogram.
    Either way each bin has one writer: the sums do not depend on it."""
    cdef Py_ssize_t n_features = page.shape[1]
    cdef Py_ssize_t n_hist = hist_start.shape[0] - 1
    cdef int n_groups = <int> min(n_threads, n_features)
    cdef Py_ssize_t g, f, j, h, f0, f1
    cdef int64_t gq, hq
    cdef int32_t code, row
    cdef int64_t* bins
    if n_groups < 1:
        return
    if by_histogram:
        for h in prange(n_hist, nogil=True, schedule="dynamic",
                        num_threads=n_threads):
            _add_rows(page, entry_row, qbuf, hist_start[h],
                      hist_start[h + 1], missing_code, bin_ptr,
                      &hist[h, 0, 0], 0, n_features)
        return
    for g in prange(n_groups, nogil=True, schedule="static",
                    num_threads=n_groups):
        f0 = g * n_features // n_groups
        f1 = (g + 1) * n_features // n_groups
        for h in range(n_hist):
            bins = &hist[h, 0, 0]
            for j in range(hist_start[h], hist_start[h + 1]):
                # a node's rows are scattered over the page: fetch the
                # codes of a row PREFETCH_ROWS ahead (as the in-core kernel)
                if j + PREFETCH_ROWS < hist_start[h + 1]:
                    prefetch(&page[entry_row[j + PREFETCH_ROWS], f0])
                row = entry_row[j]
                gq = qbuf[j, 0]
                hq = qbuf[j, 1]
                for f in range(f0, f1):
                    code = page[row, f]
                    if code <= missing_code[f]:
                        bins[2 * (bin_ptr[f] + code)] += gq
                        bins[2 * (bin_ptr[f] + code) + 1] += hq
