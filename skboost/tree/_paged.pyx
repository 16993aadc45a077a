"""One pass over a page of binned rows: route the page's rows to the
children of the level's splits, and add them to the histograms of the
nodes being built (out-of-core training, ``finders/paged.py``).

In core, rows are kept sorted by node (``RowPartition``) and a node's
histogram reads its rows through that index. Out of core the binned rows
arrive page by page, in row order, so each row carries the id of its node
instead (``position``), and every page is read once per level::

    page k (rows row_offset .. row_offset + n)    feature-major codes
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
from libc.math cimport llrint
from libc.stdint cimport uint16_t

from ._common cimport int32_t, int64_t, uint8_t
from .._parallel cimport threads_for_work

ctypedef fused code_t:
    uint8_t
    uint16_t


cdef inline int64_t fixed_point(float value, const double* weight,
                                Py_ssize_t row, double scale) noexcept nogil:
    """round(value * weight[row] * scale): the rounding of
    ``_histogram.fixed_point``, so a page-built histogram equals the one
    built in core bit for bit."""
    if weight == NULL:
        return llrint(<double> value * scale)
    return llrint(<double> value * weight[row] * scale)


cdef const double* _weight_pointer(weight):
    if weight is None:
        return NULL
    cdef const double[::1] view = weight
    return &view[0] if view.shape[0] else NULL


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_pass(page, Py_ssize_t row_offset, position, active, nodes,
                missing_code, bin_ptr, hist, gpair, weight, counts, qbuf,
                target):
    """Every index the nogil loops follow, checked once per page: the
    page's rows inside the data, node ids inside the node arrays, the
    histogram rows inside ``hist``."""
    n_features, n_page_rows = page.shape
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
    if qbuf.shape[0] < n_page_rows or target.shape[0] < n_page_rows:
        raise ValueError("qbuf and target need one entry per page row")


def route_and_build(const code_t[:, ::1] page not None,   # IN (n_features, n) feature-major
                    Py_ssize_t row_offset,               # first row of the page
                    int32_t[::1] position not None,      # IN/OUT (n_rows,) node id, -1: none
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
                    bint route, bint build, int n_threads):
    """Route the page's rows through the splits (``route``) and add the
    active ones to their node's histogram (``build``, nodes with
    ``build_row >= 0``); ``counts[node] +=`` the active rows now in each
    node. A row goes left when its code is ``<= split_bin`` (missing code:
    ``default_left``), exactly as ``RowPartition.split_nodes`` sends it.
    A code beyond its feature's bins (a damaged page) is ignored, never
    followed out of bounds."""
    n_threads = check_n_threads(n_threads)
    _check_pass(page, row_offset, position, active,
                (split_feature, split_bin, default_left, left_child,
                 right_child, build_row), missing_code, bin_ptr, hist, gpair,
                weight, counts, qbuf, target)
    cdef Py_ssize_t n = page.shape[1], n_features = page.shape[0]
    cdef Py_ssize_t n_ids = counts.shape[0]
    cdef const double* w = _weight_pointer(weight)
    cdef Py_ssize_t i, r, f, k
    cdef int32_t node, feat, code
    cdef int64_t t, b
    cdef int tid
    n_phase_threads = threads_for_work(n_threads, 4 * n)
    per_thread_arr = np.zeros((n_phase_threads, n_ids), dtype=np.int64)
    cdef int64_t[:, ::1] per_thread = per_thread_arr
    # phase A: each row's node after the splits, and what it adds
    for i in prange(n, nogil=True, schedule="static",
                    num_threads=n_phase_threads):
        r = row_offset + i
        node = position[r]
        if route and node >= 0 and split_feature[node] >= 0:
            feat = split_feature[node]
            code = page[feat, i]
            if code == missing_code[feat]:
                node = left_child[node] if default_left[node] else right_child[node]
            elif code < missing_code[feat]:
                node = left_child[node] if code <= split_bin[node] else right_child[node]
            position[r] = node
        target[i] = -1
        if node >= 0 and active[r]:
            per_thread[threadid(), node] += 1
            if build and build_row[node] >= 0:
                target[i] = build_row[node]
                qbuf[i, 0] = fixed_point(gpair[r, 0], w, r, scale_g)
                qbuf[i, 1] = fixed_point(gpair[r, 1], w, r, scale_h)
    counts_arr = np.asarray(counts)
    counts_arr += per_thread_arr.sum(axis=0)
    if not build:
        return
    # phase B: each thread adds whole features, all rows of the page
    for f in prange(n_features, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads, n * n_features)):
        for i in range(n):
            t = target[i]
            if t < 0:
                continue
            code = page[f, i]
            if code > missing_code[f]:
                continue
            b = bin_ptr[f] + code
            hist[t, b, 0] += qbuf[i, 0]
            hist[t, b, 1] += qbuf[i, 1]
