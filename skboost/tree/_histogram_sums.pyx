"""Sums of histogram rows held in several arrays: the reduce of the
distributed hist method (``skboost.dask``).

Each shard of a distributed fit builds the histograms of a level's
designated children over its own rows; the shards then sum them, every
shard over its own range of bins (a reduce-scatter), and subtract each
sum from its parent's summed histogram, which becomes the other child's
(exact: int64 fixed point, ``_histogram``). The pieces to sum lie in
different arrays (this shard's histograms, the peers' shared outboxes or
the buffers their messages were read into), each at its own rows and
bins: ``sum_histogram_rows`` sums them node by node in one pass, the
subtraction from the parent fused into the same pass, instead of one
numpy call per node and a second pass for the subtraction.
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

from cython.parallel cimport prange
from libc.stdlib cimport free, malloc

from ._common cimport int64_t
from .._parallel cimport threads_for_work
from ._checks cimport all_in_range, distinct_in_range


def sum_histogram_rows(int64_t[:, :, ::1] out not None,  # IN/OUT (n_out, width, 2)
                       out_rows,                          # IN (n_nodes,) int64
                       sources,                           # IN list of (hist, rows, first)
                       parent_rows=None,                  # IN (n_nodes,) int64 or None
                       int n_threads=1):
    """``out[out_rows[k]] = sum over (hist, rows, first) in sources of
    hist[rows[k], first:first + width]`` for every node k (``width =
    out.shape[1]``); with ``parent_rows``, then also
    ``out[parent_rows[k]] -= out[out_rows[k]]``.

    Parameters
    ----------
    out : ndarray of shape (n_out, width, 2), int64
        Where the sums go (and the parents' histograms are).
    out_rows : array-like of shape (n_nodes,), int
        The row of ``out`` each node's sum goes to.
    sources : list of (hist, rows, first)
        At least one. ``hist``: C-contiguous int64 of shape
        (n_hist, n_bins, 2) (read only; may be read-only memory);
        ``rows``: the row of ``hist`` of each node (None: row k for node
        k); ``first``: the first of the ``width`` bins taken.
    parent_rows : array-like of shape (n_nodes,), int, default=None
        The row of ``out`` of each node's parent, from which its sum is
        subtracted; None: nothing subtracted.
    n_threads : int

    The rows of ``out`` (``out_rows`` and ``parent_rows`` together) must
    be distinct, and the sources must not overlap ``out`` (not checked:
    the sums would read what they write, never outside the arrays). Sums
    of int64 in any order are the same: the result does not depend on
    ``n_threads`` or on the order of the sources.
    """
    cdef Py_ssize_t n_nodes = len(out_rows)
    cdef Py_ssize_t width = out.shape[1], n_src = len(sources)
    if out.shape[2] != 2:
        raise ValueError("out must have shape (n_out, width, 2)")
    if n_src == 0:
        raise ValueError("sources must hold at least one (hist, rows, first)")
    target = _out_rows(out_rows, parent_rows, n_nodes, out.shape[0])
    # every source's row of each node, and where its bins start
    offsets = np.empty((n_src, max(n_nodes, 1)), dtype=np.int64)
    keep = []   # the sources' arrays, alive while the pointers are used
    cdef int64_t** bases = <int64_t**> malloc(n_src * sizeof(int64_t*))
    if bases == NULL:
        raise MemoryError()
    try:
        for j, source in enumerate(sources):
            _check_source(source, j, n_nodes, width, offsets, keep, bases)
        _sum_rows(out, target, bases, offsets, n_src, n_nodes, width,
                  parent_rows is not None,
                  check_n_threads(n_threads))
    finally:
        free(bases)


def _out_rows(out_rows, parent_rows, Py_ssize_t n_nodes, Py_ssize_t n_out):
    """``out_rows`` then ``parent_rows`` (if any), one int64 array,
    checked: one per node each, distinct rows of ``out``."""
    rows = [np.ascontiguousarray(out_rows, dtype=np.int64).reshape(-1)]
    if parent_rows is not None:
        rows.append(np.ascontiguousarray(parent_rows,
                                         dtype=np.int64).reshape(-1))
    if any(r.shape[0] != n_nodes for r in rows):
        raise ValueError("out_rows and parent_rows must have one row per "
                         "node")
    target = np.concatenate(rows)
    answer = distinct_in_range(target, n_out)
    if answer < 0:
        raise MemoryError()
    if answer == 0:
        raise ValueError("out_rows and parent_rows must be distinct rows of "
                         "out")
    return target


cdef int _check_source(source, Py_ssize_t j, Py_ssize_t n_nodes,
                       Py_ssize_t width, int64_t[:, ::1] offsets,
                       list keep, int64_t** bases) except -1:
    """Checks source j; writes the start of its array into ``bases[j]``
    (NULL when it has no value: then nothing is read from it) and the
    offset (in int64) of each node's first bin in it into
    ``offsets[j]``."""
    try:
        hist, rows, first = source
    except (TypeError, ValueError):
        raise ValueError(f"sources[{j}] must be (hist, rows, first)") from None
    cdef const int64_t[:, :, ::1] h = hist
    if h.shape[2] != 2:
        raise ValueError(f"sources[{j}]: hist must have shape "
                         "(n_hist, n_bins, 2)")
    first = int(first)
    if first < 0 or first + width > h.shape[1]:
        raise ValueError(f"sources[{j}]: bins {first}..{first + width} are "
                         f"outside its {h.shape[1]} bins")
    if rows is None:
        rows = np.arange(n_nodes, dtype=np.int64)
    cdef const int64_t[::1] r = np.ascontiguousarray(
        rows, dtype=np.int64).reshape(-1)
    if r.shape[0] != n_nodes or not all_in_range(r, 0, h.shape[0]):
        raise ValueError(f"sources[{j}]: rows must be one per node, rows of "
                         "its hist")
    cdef Py_ssize_t k, row_size = h.shape[1] * 2
    for k in range(n_nodes):
        offsets[j, k] = r[k] * row_size + 2 * first
    keep.append(h)
    # no row (then no node) or no bin (then width 0): never read
    bases[j] = (<int64_t*> &h[0, 0, 0]
                if h.shape[0] and h.shape[1] else NULL)
    return 0


cdef void _sum_rows(int64_t[:, :, ::1] out, const int64_t[::1] target,
                    int64_t** bases, const int64_t[:, ::1] offsets,
                    Py_ssize_t n_src, Py_ssize_t n_nodes, Py_ssize_t width,
                    bint subtract, int n_threads) noexcept:
    # Node by node (in parallel over the nodes: their rows of ``out`` are
    # distinct): the first two sources summed into the node's row in one
    # pass, each further source added in another; the parent's row has the
    # sum taken off in the same pass as the last source (the sum is then
    # in cache, or still in a register with two sources).
    cdef Py_ssize_t n_values = 2 * width, k, i, j
    cdef int64_t* base = &out[0, 0, 0] if out.shape[0] and width else NULL
    cdef int64_t* dst
    cdef int64_t* parent
    cdef const int64_t* a
    cdef const int64_t* b
    cdef int64_t s
    if base == NULL or n_nodes == 0:
        return
    for k in prange(n_nodes, nogil=True, schedule="static",
                    num_threads=threads_for_work(
                        n_threads, n_nodes * n_values * n_src)):
        dst = base + target[k] * n_values
        parent = base + target[n_nodes + k] * n_values if subtract else NULL
        a = bases[0] + offsets[0, k]
        if n_src == 1:
            for i in range(n_values):
                dst[i] = a[i]
            if subtract:
                for i in range(n_values):
                    parent[i] = parent[i] - dst[i]
        elif n_src == 2 and subtract:
            b = bases[1] + offsets[1, k]
            for i in range(n_values):
                s = a[i] + b[i]
                dst[i] = s
                parent[i] = parent[i] - s
        else:
            b = bases[1] + offsets[1, k]
            for i in range(n_values):
                dst[i] = a[i] + b[i]
            for j in range(2, n_src):
                a = bases[j] + offsets[j, k]
                for i in range(n_values):
                    dst[i] = dst[i] + a[i]
            if subtract:
                for i in range(n_values):
                    parent[i] = parent[i] - dst[i]
