"""Gradient histograms in exact fixed-point arithmetic.

Gradients and hessians are quantised to 64-bit integers with power-of-two
scales chosen once per tree (``FixedPointGradients``), so every histogram
bin is an exact integer sum:

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
from libc.math cimport INFINITY, NAN, fabs, frexp, isfinite, isnan, ldexp
from libc.stdlib cimport free
from libc.string cimport memset
from libc.stdint cimport uint16_t, uint64_t

from ._binning cimport BinnedData
from ._categorical_scan cimport ListedSpans, SubtractSpan, clear_spans
from ._sparse cimport BinnedRows
from ._context cimport SplitContext, reg_params
from ._gain cimport RegParams
from ._hist_candidate cimport HistCandidate
from ._hist_split cimport (SCAN_WORK_PER_BIN, _fresh_bests,
                           _merged_to_records, _parent_scores,
                           scan_numeric_node)
from ._common cimport (PREFETCH_ROWS, add_pair, fixed_point, int32_t, int64_t,
                       prefetch, prefetch_outer, round_to_int64, uint8_t,
                       weight_pointer)
from .._parallel cimport threads_for_work
from ._checks cimport (distinct_in_range, rising_from_zero,
                      valid_slices)
from ._partition cimport RowPartition
from ._partition import ROWS_PER_TASK, _make_tasks, threads_for_tasks
from ._hist_split import _check_inputs as _check_scan_inputs

# bin codes: uint8 for up to 256 bins a feature, uint16 beyond; each
# kernel is compiled once per code type, so the inner loop reads codes
# of its own width (28 features: 28 bytes a row in uint8)
ctypedef fused code_t:
    uint8_t
    uint16_t


# How a histogram is built (build_histograms):
#
#     rows of node k (partition.row_index[begin:end], increasing)
#       |  cut into tasks of at most ROWS_PER_TASK rows (_partition)
#       v
#     task -> for each row: (g, h) rounded to int64 once, then
#             hist[bin_ptr[f] + code[row, f]] += (g, h) for every feature f
#
# The codes are row-major (codes[row, f]): one row's codes are adjacent,
# so a row costs one or two cache lines however many features it has, and
# the histogram is written in feature order. Integer sums make the result
# independent of how the tasks are shared out.

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
    # all zero (or no rows): any scale gives zero sums; 1.0 keeps it finite
    if max_abs <= 0.0 or n_terms == 0:
        return 1.0
    frexp(max_abs * n_terms, &exponent)     # max_abs * n < 2**exponent
    return ldexp(1.0, min(SUM_BITS - 1 - exponent, MAX_SCALE_EXPONENT))


cdef class FixedPointGradients:
    """One tree's gradient pairs with the power-of-two scales that make them
    int64 fixed point: row i adds ``round(g_i * w_i * scale_g)`` and
    ``round(h_i * w_i * scale_h)`` to a histogram.

    The histogram kernel quantises on the fly from the float32 pairs, so no
    (n_rows, 2) int64 copy is kept (16 bytes a row, the largest per-tree
    array of a fit); ``quantized`` builds that copy where it is wanted.

    Parameters
    ----------
    gpair : ndarray of shape (n_rows, 2), float32, C order
        Unweighted gradients and hessians.
    weight : ndarray of shape (n_rows,) or None
        Row weights (None: all 1).
    active : ndarray of shape (n_rows,), uint8
        Rows of the tree; only they count for the scales.
    n_threads : int
    scales : sequence of 2 floats, default=None
        The scales to use instead of those of these rows: distributed
        training (``skboost.dask``) chooses them from the maxima and row
        count of every worker's rows, so that every worker quantises alike
        (and as one process would on all rows).
    maxima : sequence of 2 or 3 floats, default=None
        ``max |g|`` and ``max |h|`` of every row, when they are known
        already (the round's gradient check found them:
        ``limits.check_gradients``), for unit weights only: when every
        row is active, the scales are those of the pass over the rows
        this saves (otherwise that pass is made). A third, the least h
        of every row, answers ``hessians_positive`` without a pass.
    """

    cdef readonly object gpair        # (n_rows, 2) float32
    cdef readonly object weight       # (n_rows,) float64 or None
    cdef readonly object scales       # (2,) float64: scale_g, scale_h
    cdef readonly Py_ssize_t n_active
    cdef double scale_g, scale_h
    cdef double least_h               # least h w of the active rows
    # given maxima: the rows (all active) and threads of a later least_h
    cdef object _all_rows
    cdef int _n_threads

    def __init__(self, gpair, weight, active, int n_threads, scales=None,
                 maxima=None):
        n_threads = check_n_threads(n_threads)
        gpair = np.asarray(gpair)
        if (gpair.dtype != np.float32 or gpair.ndim != 2
                or gpair.shape[1] != 2 or not gpair.flags.c_contiguous):
            raise ValueError("gpair must be a C-contiguous float32 array of "
                             "shape (n_rows, 2)")
        active = np.ascontiguousarray(active).view(np.uint8)
        if active.shape != (gpair.shape[0],):
            raise ValueError("active must have one entry per row of gpair")
        if weight is not None:
            weight = np.ascontiguousarray(weight, dtype=np.float64)
            if weight.shape != (gpair.shape[0],):
                raise ValueError("weight must have one entry per row")
        # the scales below come from the maxima and the row count only, not
        # from sums: they do not depend on the order of the rows or threads
        self.gpair = gpair
        self.weight = weight
        cdef ChunkMaxima totals
        if maxima is not None and np.count_nonzero(active) == active.shape[0]:
            max_g, max_h, least_h = _checked_maxima(maxima, weight)
            self.n_active = active.shape[0]
            # the least h w (all rows active, unit weights: the least h,
            # the same double) if given, else found only if
            # hessians_positive asks for it
            self.least_h = least_h
            self._all_rows, self._n_threads = active, n_threads
        else:
            totals = _active_maxima(gpair, weight, active, n_threads)
            max_g, max_h, self.n_active = totals.g, totals.h, totals.n_active
            self.least_h = totals.least_h
        if scales is None:
            self.scale_g = quantization_scale(max_g, self.n_active)
            self.scale_h = quantization_scale(max_h, self.n_active)
        else:
            self.scale_g, self.scale_h = _checked_scales(scales)
        self.scales = np.array([self.scale_g, self.scale_h])

    def hessians_positive(self):
        """Whether every active row's fixed-point hessian (``round(h w
        scale_h)``, the histograms' own rounding) is positive: what
        ``_categorical_scan.positive_hessians`` answers, from the least
        ``h w`` the scales' pass found (the rounding of ``h w scale_h`` never
        decreases as ``h w`` grows) instead of another pass over the
        rows."""
        if self.n_active == 0:
            return True
        cdef ChunkMaxima totals
        if isnan(self.least_h):
            # maxima were given (no pass over the rows made yet)
            totals = _active_maxima(self.gpair, self.weight, self._all_rows,
                                    self._n_threads)
            self.least_h = totals.least_h
        return round_to_int64(self.least_h * self.scale_h) > 0

    def quantized(self, active, int n_threads, out=None):
        """The fixed-point pairs as an (n_rows, 2) int64 array, 0 for the
        rows not in ``active`` (written into ``out`` when given)."""
        n_threads = check_n_threads(n_threads)
        cdef Py_ssize_t n = self.gpair.shape[0], i
        active = np.ascontiguousarray(active).view(np.uint8)
        if active.shape != (n,):
            raise ValueError("active must have one entry per row of gpair")
        if out is None:
            out = np.empty((n, 2), dtype=np.int64)
        if out.shape != (n, 2) or out.dtype != np.int64:
            raise ValueError("out must be int64 of shape (n_rows, 2)")
        cdef int64_t[:, ::1] q = out
        cdef const uint8_t[::1] act = active
        cdef const float[:, ::1] gp = self.gpair
        cdef const double* w = weight_pointer(self.weight)
        # one independent write per row: a static schedule streams the rows
        for i in prange(n, nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads, 2 * n)):
            if act[i]:
                q[i, 0] = fixed_point(gp[i, 0], w, i, self.scale_g)
                q[i, 1] = fixed_point(gp[i, 1], w, i, self.scale_h)
            else:
                q[i, 0] = 0
                q[i, 1] = 0
        return out


def _checked_maxima(maxima, weight):
    """Given maxima (``FixedPointGradients``): two finite values >= 0, for
    unit weights, and the least h when given as a third (NaN if not)."""
    if weight is not None:
        raise ValueError("maxima are for unit weights (weight None)")
    values = [float(m) for m in maxima]
    if len(values) not in (2, 3):
        raise ValueError("maxima must be (max |g|, max |h|) or (max |g|, "
                         "max |h|, least h)")
    max_g, max_h = values[:2]
    if not (0.0 <= max_g < np.inf and 0.0 <= max_h < np.inf):
        raise ValueError("gradients, hessians and weights must be finite")
    if len(values) == 2:
        return max_g, max_h, NAN
    # within [-max |h|, max |h|], or +inf for no row
    least_h = values[2]
    if not (-max_h <= least_h <= max_h or least_h == np.inf):
        raise ValueError("the least h must lie within [-max |h|, max |h|]")
    return max_g, max_h, least_h


def _checked_scales(scales):
    """Two given scales, checked: finite and positive."""
    scale_g, scale_h = (float(s) for s in scales)
    if not (0.0 < scale_g < np.inf and 0.0 < scale_h < np.inf):
        raise ValueError(f"scales must be finite and positive, got {scales!r}")
    return scale_g, scale_h


ctypedef struct ChunkMaxima:
    double g              # largest |g w| of the chunk's active rows
    double h              # largest |h w|
    int64_t n_active
    int64_t bad           # a non-finite |g w| or |h w| was seen
    double least_h        # least h w (signed; +inf without active rows)
    char padding[24]      # a cache line per chunk: no false sharing


cdef inline void _chunk_maxima(const float[:, ::1] gpair, const double* w,
                               const uint8_t[::1] active, Py_ssize_t start,
                               Py_ssize_t stop,
                               ChunkMaxima* out) noexcept nogil:
    """The maxima of rows ``start .. stop``, kept in locals (registers)
    and written once: a running total in memory made every row wait on the
    previous row's store."""
    cdef double g, h, hw, max_g = 0.0, max_h = 0.0, least_h = INFINITY
    cdef int64_t count = 0
    cdef bint finite = True
    cdef Py_ssize_t i
    for i in range(start, stop):
        if active[i]:
            g = fabs(gpair[i, 0] * (w[i] if w != NULL else 1.0))
            # h w as fixed_point forms it ((double) h * w, then * scale)
            hw = gpair[i, 1] * w[i] if w != NULL else <double> gpair[i, 1]
            h = fabs(hw)
            if hw < least_h:
                least_h = hw
            finite = finite and isfinite(g) and isfinite(h)
            count += 1
            if g > max_g:
                max_g = g
            if h > max_h:
                max_h = h
    out.g, out.h, out.n_active, out.bad = max_g, max_h, count, not finite
    out.least_h = least_h


def active_maxima(const float[:, ::1] gpair, weight,
                  const uint8_t[::1] active, int n_threads):
    """Largest |g w| and |h w| over the active rows, and their number.

    Maxima are order-independent, so the scales (and everything after) do
    not depend on the threads (nor on the chunks)."""
    cdef ChunkMaxima totals = _active_maxima(gpair, weight, active,
                                             n_threads)
    return totals.g, totals.h, totals.n_active


cdef ChunkMaxima _active_maxima(const float[:, ::1] gpair, weight,
                                const uint8_t[::1] active,
                                int n_threads) except *:
    """``active_maxima``'s figures, and the least ``h w``, in one pass."""
    cdef Py_ssize_t n = gpair.shape[0], c
    cdef const double* w = weight_pointer(weight)
    n_threads = threads_for_work(n_threads, 2 * n)
    cdef Py_ssize_t n_chunks = n_threads
    cdef uint8_t[::1] chunk_bytes = np.zeros(
        n_chunks * sizeof(ChunkMaxima), dtype=np.uint8)
    cdef ChunkMaxima* chunks = <ChunkMaxima*> &chunk_bytes[0]
    # one contiguous chunk of rows per thread, each writing its own padded
    # ChunkMaxima; maxima, minima and counts combine alike in any order
    for c in prange(n_chunks, nogil=True, schedule="static",
                    num_threads=n_threads):
        _chunk_maxima(gpair, w, active, c * n // n_chunks,
                      (c + 1) * n // n_chunks, &chunks[c])
    cdef ChunkMaxima totals
    totals.g, totals.h, totals.n_active = 0.0, 0.0, 0
    totals.bad, totals.least_h = 0, INFINITY
    for c in range(n_chunks):
        if chunks[c].bad:
            raise ValueError("gradients, hessians and weights must be finite")
        totals.g = max(totals.g, chunks[c].g)
        totals.h = max(totals.h, chunks[c].h)
        totals.least_h = min(totals.least_h, chunks[c].least_h)
        totals.n_active += chunks[c].n_active
    return totals


def quantize_gradients(gpair, weight, active, int n_threads, out=None):
    """Weighted gradient pairs of the active rows as int64 fixed point.

    Returns
    -------
    quantized : ndarray of shape (n_rows, 2), int64
        ``round(g * w * scale_g)`` and ``round(h * w * scale_h)``; 0 for
        inactive rows. Written into ``out`` when given.
    scales : ndarray of shape (2,)
        ``scale_g`` and ``scale_h``, powers of two.
    """
    fixed = FixedPointGradients(gpair, weight, active, n_threads)
    return fixed.quantized(active, n_threads, out), fixed.scales


cdef inline void add_row(int64_t* hist, const int64_t* bin_ptr,
                         const code_t* row_codes, Py_ssize_t n_features,
                         int64_t g, int64_t h) noexcept nogil:
    """hist[bin_ptr[f] + row_codes[f]] += (g, h) for every feature f,
    four features an iteration: the loop's own count, compare and branch
    were a third of the instructions of an addition (a load of the code,
    of the feature's first bin, the 16-byte load, add and store)."""
    cdef Py_ssize_t f = 0
    while f + 4 <= n_features:
        add_pair(&hist[2 * (bin_ptr[f] + row_codes[f])], g, h)
        add_pair(&hist[2 * (bin_ptr[f + 1] + row_codes[f + 1])], g, h)
        add_pair(&hist[2 * (bin_ptr[f + 2] + row_codes[f + 2])], g, h)
        add_pair(&hist[2 * (bin_ptr[f + 3] + row_codes[f + 3])], g, h)
        f += 4
    while f < n_features:
        add_pair(&hist[2 * (bin_ptr[f] + row_codes[f])], g, h)
        f += 1


cdef inline void accumulate_rows(const code_t[:, ::1] codes,
                                 const float[:, ::1] gpair,
                                 const double* weight,
                                 double scale_g, double scale_h,
                                 const int32_t[::1] row_index,
                                 int64_t begin, int64_t end,
                                 const int64_t[::1] bin_ptr,
                                 int64_t* hist) noexcept nogil:
    """hist[bin] += (g, h) for the rows row_index[begin:end], all features,
    each pair quantised on the fly (a few instructions, against 2 x
    n_features scattered additions)."""
    cdef Py_ssize_t n_features = codes.shape[1], f
    cdef int64_t i, g, h
    cdef int32_t row, ahead
    for i in range(begin, end):
        # Rows of a deep node are scattered: fetch the codes and gradients
        # of a row PREFETCH_ROWS ahead while accumulating this one (paper
        # section 4.2, cache-aware access), into L2 (prefetch_outer).
        if i + PREFETCH_ROWS < end:
            ahead = row_index[i + PREFETCH_ROWS]
            prefetch_outer(&codes[ahead, 0])
            # a row of codes (28 bytes in the benchmarks) often straddles
            # two cache lines: fetch the line of its last code too
            prefetch_outer(&codes[ahead, n_features - 1])
            prefetch_outer(&gpair[ahead, 0])
            if weight != NULL:
                prefetch_outer(&weight[ahead])
        row = row_index[i]
        # rounded once per row, used by every feature of the row
        g = fixed_point(gpair[row, 0], weight, row, scale_g)
        h = fixed_point(gpair[row, 1], weight, row, scale_h)
        # the bins of consecutive features are consecutive slices of hist:
        # the writes of one row move forward through the histogram
        add_row(hist, &bin_ptr[0], &codes[row, 0], n_features, g, h)


# The wide layout of a partial histogram (uint8 codes only): feature f's
# bins at ``wide[f * WIDE_BINS + code]``, every feature WIDE_BINS bins
# apart whatever its own count. A row's update then needs no load of the
# feature's first bin (``bin_ptr[f]``, reloaded after every store, since
# the compiler cannot tell it from the histogram): the address is the
# running feature base plus the code, five instructions an update instead
# of seven. The sums are the same integers, moved to the narrow layout
# (``bin_ptr``) when the partial histogram is added or copied out.
cdef enum:
    WIDE_BINS = 256


cdef inline void add_row_wide(int64_t* wide, const uint8_t* row_codes,
                              Py_ssize_t n_features, int64_t g,
                              int64_t h) noexcept nogil:
    """wide[f * WIDE_BINS + row_codes[f]] += (g, h) for every feature f,
    four features an iteration. The addresses are byte offsets (a pair is
    16 bytes) from one base: the shifted code plus a constant, which the
    compiler folds into the load's address (no multiply by 2 then 8)."""
    cdef Py_ssize_t f = 0
    cdef char* base = <char*> wide
    while f + 4 <= n_features:
        add_pair(<int64_t*> (base + (<Py_ssize_t> row_codes[f] << 4)), g, h)
        add_pair(<int64_t*> (base + (<Py_ssize_t> row_codes[f + 1] << 4)
                             + 16 * WIDE_BINS), g, h)
        add_pair(<int64_t*> (base + (<Py_ssize_t> row_codes[f + 2] << 4)
                             + 32 * WIDE_BINS), g, h)
        add_pair(<int64_t*> (base + (<Py_ssize_t> row_codes[f + 3] << 4)
                             + 48 * WIDE_BINS), g, h)
        base += 64 * WIDE_BINS
        f += 4
    while f < n_features:
        add_pair(<int64_t*> (base + (<Py_ssize_t> row_codes[f] << 4)), g, h)
        base += 16 * WIDE_BINS
        f += 1


cdef inline void accumulate_rows_wide(const uint8_t[:, ::1] codes,
                                      const float[:, ::1] gpair,
                                      const double* weight,
                                      double scale_g, double scale_h,
                                      const int32_t[::1] row_index,
                                      int64_t begin, int64_t end,
                                      int64_t* wide) noexcept nogil:
    """``accumulate_rows`` into a wide-layout histogram (same prefetches,
    same rounding)."""
    cdef Py_ssize_t n_features = codes.shape[1]
    cdef int64_t i, g, h
    cdef int32_t row, ahead
    for i in range(begin, end):
        if i + PREFETCH_ROWS < end:
            ahead = row_index[i + PREFETCH_ROWS]
            prefetch_outer(&codes[ahead, 0])
            prefetch_outer(&codes[ahead, n_features - 1])
            prefetch_outer(&gpair[ahead, 0])
            if weight != NULL:
                prefetch_outer(&weight[ahead])
        row = row_index[i]
        g = fixed_point(gpair[row, 0], weight, row, scale_g)
        h = fixed_point(gpair[row, 1], weight, row, scale_h)
        add_row_wide(wide, &codes[row, 0], n_features, g, h)


cdef inline void narrow_from_wide(int64_t* target, const int64_t* wide,
                                  const int64_t* wide_of_bin,
                                  Py_ssize_t n_bins) noexcept nogil:
    """target[bin] = wide[wide_of_bin[bin]] (pairs): a wide histogram in
    the narrow layout."""
    cdef Py_ssize_t j
    for j in range(n_bins):
        target[2 * j] = wide[2 * wide_of_bin[j]]
        target[2 * j + 1] = wide[2 * wide_of_bin[j] + 1]


def _wide_of_bin(bin_ptr):
    """Each narrow bin's index in the wide layout: feature f's bin
    ``bin_ptr[f] + c`` is ``f * WIDE_BINS + c``; a bin no uint8 code
    reaches (c >= WIDE_BINS: the missing bin of a feature of 256 value bins
    and no missing values) is the wide layout's last pair, after every
    feature's, which stays zero.

    Every build of a uint8 histogram asks for it: one typed pass over the
    bins (a few microseconds at 7,000 bins) where the numpy expression of
    it (diff, repeat, arange, where) took about 45 us of each call, a
    fifth of a deep level's build at 10,000 rows."""
    cdef const int64_t[::1] ptr = np.ascontiguousarray(bin_ptr,
                                                       dtype=np.int64)
    cdef Py_ssize_t n_features = ptr.shape[0] - 1, f
    if n_features < 0 or not rising_from_zero(ptr, ptr[n_features]):
        raise ValueError("bin_ptr must rise from 0, >= 1 bin a feature")
    out = np.empty(ptr[n_features], dtype=np.int64)
    cdef int64_t[::1] wide = out
    cdef int64_t code, zero_pair = n_features * WIDE_BINS
    for f in range(n_features):
        for code in range(ptr[f + 1] - ptr[f]):
            wide[ptr[f] + code] = (f * WIDE_BINS + code if code < WIDE_BINS
                                   else zero_pair)
    return out


def build_histograms(BinnedData data,
                     RowPartition partition,
                     FixedPointGradients gradients,
                     node_begin,                 # IN (n_nodes,) int64
                     node_end,                   # IN (n_nodes,) int64
                     hist,                       # OUT (n_hist, n_bins, 2) int64
                     int n_threads,
                     hist_rows=None,             # IN (n_nodes,) int64
                     ListedSpans listed=None):
    """Histograms of a batch of nodes, node k owning the rows
    ``partition.row_index[node_begin[k]:node_end[k]]``.

    Node k's histogram is written to ``hist[hist_rows[k]]`` (rows of a pool
    of histograms, distinct), or to ``hist[k]`` without ``hist_rows``.
    With ``listed`` (``_categorical_scan.ListedSpans``, one node's spans
    per node k: its parent's), a histogram built by one thread alone is
    zeroed on node k's spans only, not whole: a listed categorical
    feature's other bins keep what the row held before (never read, and
    no row adds to them: a node's categories are among its parent's).

    Tasks of at most ROWS_PER_TASK rows of one node run in parallel; each
    thread accumulates into its own copy of the node's histogram, zeroed on
    first use, and the copies are added up (exactly, in integers).
    """
    n_threads = check_n_threads(n_threads)
    node_begin, node_end = _checked_node_slices(
        data, partition, gradients, node_begin, node_end,
        "node ranges outside the partition")
    n_nodes = node_begin.shape[0]
    hist_rows = _check_hist_rows(hist_rows, n_nodes, hist, data.n_bins)
    # the thread count, named once here: no more threads than tasks, and
    # no more than the work (one update per row and feature) pays for
    tasks = _make_tasks(node_begin, node_end)
    n_updates = int((node_end - node_begin).sum()) * data.n_features
    n_threads = min(threads_for_tasks(tasks[0].shape[0], n_threads),
                    threads_for_work(n_threads, n_updates))
    wide_of_bin = _wide_layout(data)
    node_rows = node_end - node_begin
    if listed is not None and (listed.n_nodes != n_nodes or not np.array_equal(
            listed.bin_ptr, data.bin_ptr)):
        raise ValueError("listed must hold the spans of every node, of the "
                         "data's histogram layout")
    if data.codes.dtype == np.uint8:
        _build[uint8_t](data.codes, gradients, partition.row_index, tasks,
                        data.bin_ptr, hist, hist_rows, n_threads,
                        wide_of_bin, node_rows, listed)
    else:
        _build[uint16_t](data.codes, gradients, partition.row_index, tasks,
                         data.bin_ptr, hist, hist_rows, n_threads,
                         wide_of_bin, node_rows, listed)


def _checked_node_slices(data, RowPartition partition,
                         FixedPointGradients gradients, begin, end,
                         outside_message):
    """The checks of a build's rows (``build_histograms``,
    ``build_sparse_histograms``, ``build_subtract_scan``): data
    (``BinnedData`` or ``BinnedRows``), partition and gradients of the
    same rows, and node slices ``begin[k] .. end[k]`` inside the partition
    (``outside_message`` where not); returns them as int64 arrays."""
    if partition.n_rows != data.n_rows:
        raise ValueError("data and partition have different row counts")
    if gradients.gpair.shape[0] != data.n_rows:
        raise ValueError("gradients must have one pair per row of the data")
    begin = np.ascontiguousarray(begin, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    if end.shape != begin.shape or begin.ndim != 1 or not valid_slices(
            begin, end, partition.row_index.shape[0]):
        raise ValueError(outside_message)
    return begin, end


def subtract_histograms(int64_t[:, :, ::1] hist not None,  # IN/OUT (n_hist, n_bins, 2)
                        parent_rows,                        # IN (n_nodes,) int64
                        child_rows,                         # IN (n_nodes,) int64
                        int n_threads):
    """``hist[parent_rows[k]] -= hist[child_rows[k]]`` for every k, in
    parallel over the nodes: the larger child's histogram, in its parent's
    row, from the smaller child's (exact in fixed point). The rows must be
    2 * n_nodes distinct rows of ``hist``."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_nodes = len(parent_rows)
    rows = np.concatenate([
        np.ascontiguousarray(parent_rows, dtype=np.int64).reshape(-1),
        np.ascontiguousarray(child_rows, dtype=np.int64).reshape(-1)])
    if rows.shape[0] != 2 * n_nodes or _distinct(rows, hist.shape[0]) != 1:
        raise ValueError("parent_rows and child_rows must be one each per "
                         "node, distinct rows of hist")
    cdef const int64_t[::1] r = rows
    cdef Py_ssize_t n_values = hist.shape[1] * hist.shape[2], k
    cdef int64_t* base = &hist[0, 0, 0] if hist.shape[0] else NULL
    cdef int64_t* parent
    cdef const int64_t* child
    # a node's histogram is one contiguous block of n_bins * 2 int64: the
    # subtraction streams two blocks (_subtract_prefetched); rows are
    # distinct (checked), so the tasks write disjoint memory
    for k in prange(n_nodes, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads,
                                                 n_nodes * n_values)):
        parent = base + r[k] * n_values
        child = base + r[n_nodes + k] * n_values
        _subtract_prefetched(parent, child, n_values)


# int64 values a block of the subtraction: 8 cache lines of each histogram
cdef enum:
    SUBTRACT_BLOCK = 64


cdef inline void _subtract_prefetched(int64_t* parent, const int64_t* child,
                                      Py_ssize_t n_values) noexcept nogil:
    """``parent[i] -= child[i]`` for ``i < n_values``, a block at a time,
    asking for the next block's lines of both histograms (into L1) before
    subtracting this one: the hardware's stream prefetcher starts over at
    every 4 KB page (a 115 KB histogram has 29), and a level's histograms
    outgrow L2. Measured in one process on the same levels of a 10,000-row
    fit, alternating the two builds: -8% to -17%, 1 or 2 threads, hot or
    cold caches. The block's own loop stays a plain one (vectorised)."""
    cdef Py_ssize_t start = 0, i, stop, line
    while start < n_values:
        if start + 2 * SUBTRACT_BLOCK <= n_values:
            line = start + SUBTRACT_BLOCK
            while line < start + 2 * SUBTRACT_BLOCK:
                prefetch(&child[line])
                prefetch(&parent[line])
                line += 8   # int64 a line
        stop = min(start + SUBTRACT_BLOCK, n_values)
        for i in range(start, stop):
            parent[i] = parent[i] - child[i]
        start += SUBTRACT_BLOCK


def _check_hist_rows(hist_rows, Py_ssize_t n_nodes, hist, Py_ssize_t n_bins):
    """Validated int64 rows of ``hist`` for the nodes (0..n_nodes-1 if
    None): inside the array and distinct, since nodes are built in
    parallel."""
    if (hist.ndim != 3 or hist.shape[1:] != (n_bins, 2)
            or hist.dtype != np.int64 or not hist.flags.c_contiguous):
        raise ValueError("hist must be C-contiguous int64 of shape "
                         "(n_hist, n_bins, 2)")
    if hist_rows is None:
        if hist.shape[0] != n_nodes:
            raise ValueError("hist must have one histogram per node")
        return np.arange(n_nodes, dtype=np.int64)
    hist_rows = np.ascontiguousarray(hist_rows, dtype=np.int64)
    if hist_rows.shape != (n_nodes,):
        raise ValueError("hist_rows must have one entry per node")
    if _distinct(hist_rows, hist.shape[0]) != 1:
        raise ValueError("hist_rows must be distinct rows of hist")
    return hist_rows


cdef int _distinct(const int64_t[::1] rows, Py_ssize_t n_hist) except -1:
    """1 when the rows are distinct rows of a pool of n_hist, else 0."""
    cdef int answer = distinct_in_range(rows, n_hist)
    if answer < 0:
        raise MemoryError()
    return answer


# A node built by one thread alone goes through a wide histogram only when
# it has at least this many rows: the wide buffer is zeroed and copied out
# once per node (a few thousand pairs), which its cheaper updates repay on
# a node of a few thousand rows, not on a small one.
cdef enum:
    WIDE_MIN_ROWS = 4096


# Bins of a shared node's histogram one task of _add_partials adds up.
cdef enum:
    ADD_BLOCK_BINS = 2048


def _wide_layout(data):
    """The wide layout's bin map for ``data`` (see WIDE_BINS), or None
    where the narrow one is kept: uint16 codes, or features so much
    narrower than WIDE_BINS that the wide buffers would be more than twice
    the narrow ones (zeroing them would cost more than it saves)."""
    if data.codes.dtype != np.uint8 or data.n_features == 0:
        return None
    if data.n_features * WIDE_BINS > 2 * data.n_bins:
        return None
    return _wide_of_bin(data.bin_ptr)


cdef struct Accumulation:
    # what every task of a build reads
    const float* gpair          # (n_rows, 2) float32
    const double* weight        # NULL: unit weights
    double scale_g
    double scale_h
    const int64_t* wide_of_bin  # NULL: the narrow layout throughout
    Py_ssize_t n_bins
    Py_ssize_t n_wide           # pairs of a wide histogram
    const int64_t* bin_ptr
    Py_ssize_t n_features
    const SubtractSpan* listed  # (n_nodes, n_features); NULL: zero whole


cdef inline void _zero_target(const Accumulation* acc, int64_t node,
                              int64_t* target, bint wide) noexcept nogil:
    """Zero the histogram a node built by one thread adds into: a wide
    buffer or a narrow one whole, or a narrow one on the node's spans
    (``acc.listed``: what its histogram is read on)."""
    if wide:
        memset(target, 0, acc.n_wide * 2 * sizeof(int64_t))
    elif acc.listed != NULL:
        clear_spans(target, acc.bin_ptr, acc.n_features,
                    &acc.listed[node * acc.n_features])
    else:
        memset(target, 0, acc.n_bins * 2 * sizeof(int64_t))


cdef inline void _accumulate(const code_t[:, ::1] codes,
                             const float[:, ::1] gpair,
                             const Accumulation* acc,
                             const int32_t[::1] row_index,
                             int64_t begin, int64_t end,
                             const int64_t[::1] bin_ptr,
                             int64_t* target, bint wide) noexcept nogil:
    """A task's rows into ``target``: wide layout (uint8 codes only) or
    narrow."""
    if code_t is uint8_t:
        if wide:
            accumulate_rows_wide(codes, gpair, acc.weight, acc.scale_g,
                                 acc.scale_h, row_index, begin, end, target)
            return
    accumulate_rows(codes, gpair, acc.weight, acc.scale_g, acc.scale_h,
                    row_index, begin, end, bin_ptr, target)


cdef void _build_serial(const code_t[:, ::1] codes,
                        const float[:, ::1] gpair,
                        const Accumulation* acc,
                        const int32_t[::1] row_index,
                        const int64_t[::1] task_node,
                        const int64_t[::1] task_begin,
                        const int64_t[::1] task_end,
                        const int64_t[::1] bin_ptr,
                        int64_t[:, :, ::1] hist,
                        const int64_t[::1] hist_rows,
                        const int64_t[::1] node_rows,
                        int64_t* wide_buffer) noexcept nogil:
    """``_build`` on the calling thread: every task of a node (they are
    consecutive) adds into the node's histogram, zeroed by its first task
    (through ``wide_buffer``, copied out after its last task, for a large
    node in the wide layout). The sums are the same integers in any
    order."""
    cdef Py_ssize_t t, n_tasks = task_node.shape[0]
    cdef int64_t node
    cdef int64_t* target
    cdef bint wide
    for t in range(n_tasks):
        node = task_node[t]
        wide = acc.wide_of_bin != NULL and node_rows[node] >= WIDE_MIN_ROWS
        target = wide_buffer if wide else &hist[hist_rows[node], 0, 0]
        if t == 0 or node != task_node[t - 1]:
            _zero_target(acc, node, target, wide)
        _accumulate(codes, gpair, acc, row_index, task_begin[t], task_end[t],
                    bin_ptr, target, wide)
        if wide and (t + 1 == n_tasks or task_node[t + 1] != node):
            narrow_from_wide(&hist[hist_rows[node], 0, 0], wide_buffer,
                             acc.wide_of_bin, acc.n_bins)


cdef void _build(const code_t[:, ::1] codes,
                 FixedPointGradients gradients,
                 const int32_t[::1] row_index,
                 tuple tasks,
                 const int64_t[::1] bin_ptr,
                 int64_t[:, :, ::1] hist,
                 const int64_t[::1] hist_rows,
                 int n_threads,
                 wide_of_bin_arr,
                 node_rows_arr,
                 ListedSpans listed):
    cdef const int64_t[::1] task_node = tasks[0]
    cdef const int64_t[::1] task_begin = tasks[1]
    cdef const int64_t[::1] task_end = tasks[2]
    cdef const int64_t[::1] node_rows = node_rows_arr
    cdef const int64_t[::1] wide_of_bin = wide_of_bin_arr
    cdef const float[:, ::1] gpair = gradients.gpair
    cdef Accumulation acc = _accumulation(gradients, bin_ptr, hist.shape[1],
                                          codes.shape[1], wide_of_bin, listed)
    # a wide buffer per thread for the nodes one thread builds alone
    alone_arr = np.empty((n_threads if acc.wide_of_bin else 1,
                          max(acc.n_wide, 1), 2), dtype=np.int64)
    cdef int64_t[:, :, ::1] alone = alone_arr
    if n_threads == 1:
        # no partial histograms to set up and add up (their numpy set-up
        # was most of a small call's cost)
        with nogil:
            _build_serial(codes, gpair, &acc, row_index, task_node,
                          task_begin, task_end, bin_ptr, hist, hist_rows,
                          node_rows, &alone[0, 0, 0])
        return
    _build_parallel(codes, gpair, &acc, row_index, tasks, bin_ptr,
                    hist, hist_rows, node_rows, alone, n_threads)


cdef Accumulation _accumulation(FixedPointGradients gradients,
                                const int64_t[::1] bin_ptr,
                                Py_ssize_t n_bins, Py_ssize_t n_columns,
                                const int64_t[::1] wide_of_bin,
                                ListedSpans listed):
    """What every task of a build reads: the weights and scales, the
    layout, the wide layout (``wide_of_bin``, None: narrow throughout) and
    the spans a built node is zeroed on (``listed``, None: whole). The
    pointers are into arrays the caller keeps alive for the build."""
    cdef Accumulation acc
    acc.weight = weight_pointer(gradients.weight)
    acc.scale_g, acc.scale_h = gradients.scale_g, gradients.scale_h
    acc.wide_of_bin = NULL if wide_of_bin is None else &wide_of_bin[0]
    acc.n_bins = n_bins
    # every feature's WIDE_BINS pairs, then the zero pair (_wide_of_bin)
    acc.n_wide = n_columns * WIDE_BINS + 1
    acc.bin_ptr = &bin_ptr[0]
    acc.n_features = bin_ptr.shape[0] - 1
    acc.listed = NULL if listed is None else listed.spans
    return acc


cdef inline int64_t* _node_target(const Accumulation* acc, int64_t node,
                                  int64_t n_rows, int64_t* alone,
                                  int64_t* node_hist,
                                  bint* wide) noexcept nogil:
    """Where a node built by one task accumulates, zeroed: the thread's
    wide buffer ``alone`` for a node of many rows (narrowed into
    ``node_hist`` after), else ``node_hist`` itself; ``wide`` says
    which."""
    wide[0] = acc.wide_of_bin != NULL and n_rows >= WIDE_MIN_ROWS
    cdef int64_t* target = alone if wide[0] else node_hist
    _zero_target(acc, node, target, wide[0])
    return target


cdef void _build_parallel(const code_t[:, ::1] codes,
                          const float[:, ::1] gpair,
                          const Accumulation* acc,
                          const int32_t[::1] row_index,
                          tuple tasks,
                          const int64_t[::1] bin_ptr,
                          int64_t[:, :, ::1] hist,
                          const int64_t[::1] hist_rows,
                          const int64_t[::1] node_rows,
                          int64_t[:, :, ::1] alone,
                          int n_threads):
    """``_build`` on ``n_threads``. A node of one task is built by one
    thread straight into ``hist`` (or through its wide buffer in
    ``alone``); only nodes split into several tasks need per-thread
    partial histograms (scratch[thread, shared node, pair, 2], wide or
    narrow), added up at the end."""
    cdef const int64_t[::1] task_node = tasks[0]
    cdef const int64_t[::1] task_begin = tasks[1]
    cdef const int64_t[::1] task_end = tasks[2]
    cdef Py_ssize_t partial_pairs = acc.n_wide if acc.wide_of_bin else acc.n_bins
    shared_index_arr, shared_nodes, scratch_arr, touched_arr = (
        _shared_partials(task_node, hist_rows.shape[0], partial_pairs,
                         n_threads))
    cdef int64_t[:, :, :, ::1] scratch = scratch_arr
    cdef uint8_t[:, ::1] touched = touched_arr
    cdef const int64_t[::1] shared_index = shared_index_arr
    cdef const int64_t[::1] shared_node = shared_nodes.astype(np.int64)
    cdef Py_ssize_t t
    cdef int tid
    cdef int64_t node, s
    cdef int64_t* target
    cdef bint wide
    # dynamic: the tasks' rows are scattered differently in memory, so
    # equal row counts do not mean equal times
    for t in prange(task_node.shape[0], nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        tid = threadid()
        node = task_node[t]
        s = shared_index[node]
        if s < 0:
            target = _node_target(acc, node, node_rows[node], &alone[tid, 0, 0],
                                  &hist[hist_rows[node], 0, 0], &wide)
        else:
            wide = acc.wide_of_bin != NULL
            target = &scratch[tid, s, 0, 0]
            if not touched[tid, s]:
                # (a partial zeroed on the node's spans: its other bins add
                # up to bins of the node that are never read)
                _zero_target(acc, node, target, wide)
                touched[tid, s] = 1
        _accumulate(codes, gpair, acc, row_index, task_begin[t],
                    task_end[t], bin_ptr, target, wide)
        if s < 0 and wide:
            narrow_from_wide(&hist[hist_rows[node], 0, 0], target,
                             acc.wide_of_bin, acc.n_bins)
    _add_partials(hist, hist_rows, shared_node, scratch, touched, n_threads,
                  acc.wide_of_bin)


def _shared_partials(task_node, Py_ssize_t n_nodes, Py_ssize_t n_pairs,
                     int n_threads):
    """The nodes split into several tasks, each one's index among them (-1
    for the others), and per thread a partial histogram of ``n_pairs``
    pairs of each (untouched until its first task) for ``_build``."""
    tasks_per_node = np.bincount(np.asarray(task_node), minlength=n_nodes)
    shared_nodes = np.flatnonzero(tasks_per_node > 1)
    shared_index = np.full(n_nodes, -1, dtype=np.int64)
    shared_index[shared_nodes] = np.arange(shared_nodes.shape[0])
    n_shared = max(shared_nodes.shape[0], 1)
    scratch = np.empty((n_threads, n_shared, n_pairs, 2), dtype=np.int64)
    touched = np.zeros((n_threads, n_shared), dtype=np.uint8)
    return shared_index, shared_nodes, scratch, touched


cdef void _add_partials(int64_t[:, :, ::1] hist,
                        const int64_t[::1] hist_rows,
                        const int64_t[::1] shared_node,
                        const int64_t[:, :, :, ::1] scratch,
                        const uint8_t[:, ::1] touched,
                        int n_threads,
                        const int64_t* wide_of_bin) noexcept:
    """Each shared node's histogram as the sum of the threads' partial
    histograms it touched, in one parallel region over (shared node, bin);
    bin j of a wide partial is its pair ``wide_of_bin[j]``. The sums are
    unsigned (wrapping) additions: the same bits as the int64 sums where
    the partials were zeroed, and defined on the bins a listed build
    (``build_histograms(listed=)``) left holding anything."""
    cdef Py_ssize_t n_shared = shared_node.shape[0], n_bins = hist.shape[1]
    cdef Py_ssize_t n_blocks = (n_bins + ADD_BLOCK_BINS - 1) // ADD_BLOCK_BINS
    cdef Py_ssize_t block, k, j, w
    cdef int64_t node
    cdef uint64_t g, h
    cdef int tid, n_partials = n_threads
    # one block of a (node, bins) row per iteration: each bin has one
    # writer, and the partials are added in thread order (integers: any
    # order would give the same sums). Blocks, not single bins: a division
    # per bin to find its node cost more than the additions. The work: the
    # int64s a bin moves, 2 read from each partial and 2 written (the
    # root's single shared node of a 42,000-bin histogram then takes both
    # threads; counted as n_partials a bin, it ran on one)
    for block in prange(n_shared * n_blocks, nogil=True, schedule="static",
                        num_threads=threads_for_work(
                            n_threads,
                            n_shared * n_bins * 2 * (n_partials + 1))):
        k = block // n_blocks
        node = hist_rows[shared_node[k]]
        for j in range((block % n_blocks) * ADD_BLOCK_BINS,
                       min((block % n_blocks + 1) * ADD_BLOCK_BINS, n_bins)):
            w = wide_of_bin[j] if wide_of_bin != NULL else j
            g = 0
            h = 0
            for tid in range(n_partials):
                if touched[tid, k]:
                    g = g + <uint64_t> scratch[tid, k, w, 0]
                    h = h + <uint64_t> scratch[tid, k, w, 1]
            hist[node, j, 0] = <int64_t> g
            hist[node, j, 1] = <int64_t> h


# What the scans of build_subtract_scan share: the regularisation, the
# scales, each node's own score and its best candidate (node k's at
# best[k], one writer each: a pair's two nodes are one thread's).
cdef struct PipelineScan:
    RegParams p
    double scale_g
    double scale_h
    const double* parent_score
    HistCandidate* best


# The per-node pipeline of a depth-wise level (build_subtract_scan):
#
#     pairs (smaller child k, its parent's row), most rows first
#       |  one pair at a time per thread (dynamic schedule)
#       v
#     build the smaller child (its rows, one thread) -> subtract it from
#     the parent's row (now the larger child's) -> scan both children
#
# The batch path builds a whole level, then subtracts it, then scans it:
# at 64-128 nodes of 115 KB (28 features of 257 bins) a level is 7-15 MB
# between those passes, beyond L2, so the subtraction and the scan read
# every histogram back from L3 or memory. Here a pair's two histograms
# (230 KB) are subtracted and scanned while still in the thread's L2.

def build_subtract_scan(BinnedData data,
                        RowPartition partition,
                        FixedPointGradients gradients,
                        small_begin,                 # IN (n_pairs,) int64
                        small_end,                   # IN (n_pairs,) int64
                        small_rows,                  # IN (n_pairs,) int64
                        parent_rows,                 # IN (n_pairs,) int64
                        hist,                        # IN/OUT (n_hist, n_bins, 2)
                        node_sums,                   # IN (2 n_pairs, 2) int64
                        thresholds,                  # IN (1 or 2 n_pairs, n_bins)
                        feature_allowed,             # IN (2 n_pairs, n_features)
                        *, SplitContext context not None):
    """A level's histograms and best splits, pair by pair: for each k, the
    histogram of the rows ``partition.row_index[small_begin[k]:
    small_end[k]]`` (a smaller child) into ``hist[small_rows[k]]``, then
    ``hist[parent_rows[k]] -= hist[small_rows[k]]`` (the larger child's,
    in its parent's row), then both children scanned.

    The same histograms and splits as ``build_histograms``, then
    ``subtract_histograms``, then ``find_best_splits_hist`` with
    ``hist_rows = concatenate([small_rows, parent_rows])``, for numeric
    features without monotone bounds: ``node_sums``, ``thresholds`` (or
    one row for all) and ``feature_allowed`` hold the smaller children
    then the larger, as the returned splits do. Each thread takes a pair
    at a time (the thread count of ``context``), and reads the pair's two
    histograms while they are in its cache. On several threads, a smaller
    child of more rows than a build task (``ROWS_PER_TASK``) is built
    first by ``build_histograms``, its rows split among the threads (one
    thread on a pair of the first levels would hold the others up).

    Returns
    -------
    splits : ndarray of shape (2 * n_pairs,), dtype ``splits.SPLIT_RECORD``
    """
    small_begin, small_end, pool_rows = _pipeline_inputs(
        data, partition, gradients, small_begin, small_end, small_rows,
        parent_rows, hist, node_sums, thresholds, feature_allowed)
    cdef Py_ssize_t n_pairs = small_begin.shape[0]
    cdef PipelineScan scan
    scan.p = reg_params(context)
    scan.scale_g, scan.scale_h = context.scale_g, context.scale_h
    cdef double[::1] parent_score = _parent_scores(
        node_sums, scan.scale_g, scan.scale_h, &scan.p, None)
    scan.parent_score = &parent_score[0]
    counts = small_end - small_begin
    build = _build_in_pipeline(data, partition, gradients, small_begin,
                               small_end, pool_rows[:n_pairs], hist,
                               context.n_threads)
    cdef int n_threads = _pipeline_threads(data, counts, build,
                                           context.n_threads)
    # most rows to build first: the dynamic schedule ends on small pairs
    order = np.argsort(-counts * build, kind="stable")
    scan.best = _fresh_bests(2 * n_pairs)
    try:
        if data.codes.dtype == np.uint8:
            _pipeline[uint8_t](data.codes, gradients, partition.row_index,
                               small_begin, small_end, build, order,
                               pool_rows, hist, node_sums, data.bin_ptr,
                               thresholds, feature_allowed, &scan,
                               _wide_layout(data), n_threads)
        else:
            _pipeline[uint16_t](data.codes, gradients, partition.row_index,
                                small_begin, small_end, build, order,
                                pool_rows, hist, node_sums, data.bin_ptr,
                                thresholds, feature_allowed, &scan,
                                _wide_layout(data), n_threads)
        return _merged_to_records(scan.best, 1, 2 * n_pairs)
    finally:
        free(scan.best)


def _pipeline_threads(BinnedData data, counts, build, int n_threads):
    """The threads of ``build_subtract_scan``'s loop: at most one a pair,
    and as many as the work left pays for (the updates of the smaller
    children it builds, the scan of both children's bins)."""
    n_pairs = counts.shape[0]
    n_updates = (int(counts[build.view(bool)].sum()) * data.n_features
                 + SCAN_WORK_PER_BIN * 2 * n_pairs * data.n_bins)
    return min(threads_for_work(n_threads, n_updates), max(n_pairs, 1))


def _pipeline_inputs(BinnedData data, RowPartition partition,
                     FixedPointGradients gradients, small_begin, small_end,
                     small_rows, parent_rows, hist, node_sums, thresholds,
                     feature_allowed):
    """``build_subtract_scan``'s inputs, checked as ``build_histograms``,
    ``subtract_histograms`` and ``find_best_splits_hist`` check theirs;
    returns the int64 begins and ends, and the smaller children's rows of
    ``hist`` then the parents' (2 * n_pairs distinct rows)."""
    small_begin, small_end = _checked_node_slices(
        data, partition, gradients, small_begin, small_end,
        "small_begin, small_end: node ranges outside the partition")
    n_pairs = small_begin.shape[0]
    small_rows = np.ascontiguousarray(small_rows, dtype=np.int64)
    parent_rows = np.ascontiguousarray(parent_rows, dtype=np.int64)
    if small_rows.shape != (n_pairs,) or parent_rows.shape != (n_pairs,):
        raise ValueError("small_rows and parent_rows must have one entry "
                         "per pair")
    pool_rows = np.concatenate([small_rows, parent_rows])
    _check_hist_rows(pool_rows, 2 * n_pairs, hist, data.n_bins)
    if np.ndim(node_sums) != 2 or np.shape(node_sums)[0] != 2 * n_pairs:
        raise ValueError("node_sums must hold the sums of 2 * n_pairs nodes")
    _check_scan_inputs(hist, node_sums, data.bin_ptr, thresholds,
                       feature_allowed, pool_rows, None)
    return small_begin, small_end, pool_rows


def _build_in_pipeline(BinnedData data, RowPartition partition,
                       FixedPointGradients gradients, small_begin, small_end,
                       small_rows, hist, int n_threads):
    """Which smaller children ``build_subtract_scan``'s pairs build (uint8
    flags): all on one thread; on several, those of at most
    ``ROWS_PER_TASK`` rows, the others built here first by
    ``build_histograms`` on every thread."""
    large = (small_end - small_begin > ROWS_PER_TASK) & (n_threads > 1)
    if np.any(large):
        build_histograms(data, partition, gradients, small_begin[large],
                         small_end[large], hist, n_threads,
                         hist_rows=small_rows[large])
    return (~large).view(np.uint8)


cdef void _pipeline(const code_t[:, ::1] codes,
                    FixedPointGradients gradients,
                    const int32_t[::1] row_index,
                    const int64_t[::1] small_begin,
                    const int64_t[::1] small_end,
                    const uint8_t[::1] build,
                    const int64_t[::1] order,
                    const int64_t[::1] pool_rows,
                    int64_t[:, :, ::1] hist,
                    const int64_t[:, ::1] node_sums,
                    const int64_t[::1] bin_ptr,
                    const double[:, ::1] thresholds,
                    const uint8_t[:, ::1] feature_allowed,
                    const PipelineScan* scan,
                    wide_of_bin_arr, int n_threads):
    """``build_subtract_scan``'s parallel loop: pair ``order[i]`` at a
    time, its smaller child's histogram built by one thread where
    ``build`` says (through that thread's wide buffer in ``alone`` for a
    node of many rows), subtracted from its parent's, then both scanned.
    ``pool_rows``: the smaller children's rows of ``hist``, then the
    parents'."""
    cdef Py_ssize_t n_pairs = small_begin.shape[0], i, k, large
    cdef const float[:, ::1] gpair = gradients.gpair
    cdef const int64_t[::1] wide_of_bin = wide_of_bin_arr
    cdef Accumulation acc = _accumulation(gradients, bin_ptr, hist.shape[1],
                                          codes.shape[1], wide_of_bin, None)
    alone_arr = np.empty((n_threads if acc.wide_of_bin else 1,
                          max(acc.n_wide, 1), 2), dtype=np.int64)
    cdef int64_t[:, :, ::1] alone = alone_arr
    cdef bint per_node = thresholds.shape[0] > 1
    for i in prange(n_pairs, nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        k = order[i]
        large = n_pairs + k
        if build[k]:
            _build_node(codes, gpair, &acc, row_index, small_begin[k],
                        small_end[k], bin_ptr, &hist[pool_rows[k], 0, 0],
                        &alone[threadid() if acc.wide_of_bin else 0, 0, 0])
        _subtract_prefetched(&hist[pool_rows[large], 0, 0],
                             &hist[pool_rows[k], 0, 0], 2 * acc.n_bins)
        _scan_node(scan, k, hist[pool_rows[k]], node_sums, bin_ptr,
                   thresholds[k if per_node else 0], &feature_allowed[k, 0])
        _scan_node(scan, large, hist[pool_rows[large]], node_sums, bin_ptr,
                   thresholds[large if per_node else 0],
                   &feature_allowed[large, 0])


cdef inline void _build_node(const code_t[:, ::1] codes,
                             const float[:, ::1] gpair,
                             const Accumulation* acc,
                             const int32_t[::1] row_index,
                             int64_t begin, int64_t end,
                             const int64_t[::1] bin_ptr, int64_t* small,
                             int64_t* alone) noexcept nogil:
    """The histogram of the rows ``begin .. end`` into ``small``, as
    ``_build`` builds a node of one task."""
    cdef bint wide
    cdef int64_t* target = _node_target(acc, 0, end - begin, alone, small,
                                        &wide)
    _accumulate(codes, gpair, acc, row_index, begin, end, bin_ptr, target,
                wide)
    if wide:
        narrow_from_wide(small, target, acc.wide_of_bin, acc.n_bins)


cdef inline void _scan_node(const PipelineScan* scan, Py_ssize_t node,
                            const int64_t[:, ::1] node_hist,
                            const int64_t[:, ::1] node_sums,
                            const int64_t[::1] bin_ptr,
                            const double[::1] thresholds,
                            const uint8_t* allowed) noexcept nogil:
    """Node ``node``'s best split into ``scan.best[node]``."""
    scan_numeric_node(node_hist, bin_ptr, thresholds, allowed,
                      node_sums[node, 0], node_sums[node, 1],
                      scan.parent_score[node], scan.scale_g, scan.scale_h,
                      &scan.p, &scan.best[node])


# Histograms of sparse rows (``_sparse.BinnedRows``: codes of the stored
# entries only), for distributed training on sparse shards:
#
#     rows of node k, each row's stored entries only
#       -> hist[bin_ptr[f] + code] += (g, h) per stored entry (f, code)
#       -> per feature f: the absent entries' sums are the node's totals
#          minus what f's stored entries added, into f's absent bin
#          (missing, or the bin of 0.0)
#
# so the histogram is, integer for integer, the one ``build_histograms``
# builds from the dense codes of the same rows, at a cost of the stored
# entries plus one pass over the bins (never rows x features).

def build_sparse_histograms(BinnedRows data,
                            RowPartition partition,
                            FixedPointGradients gradients,
                            node_begin,             # IN (n_nodes,) int64
                            node_end,               # IN (n_nodes,) int64
                            hist,                   # OUT (n_hist, n_bins, 2)
                            int n_threads,
                            hist_rows=None):        # IN (n_nodes,) int64
    """``build_histograms`` for sparse rows: node k's histogram (rows
    ``partition.row_index[node_begin[k]:node_end[k]]``) into
    ``hist[hist_rows[k]]`` (or ``hist[k]``), from the stored entries, in
    parallel over the nodes (one thread builds a node)."""
    n_threads = check_n_threads(n_threads)
    node_begin, node_end = _checked_node_slices(
        data, partition, gradients, node_begin, node_end,
        "node ranges outside the partition")
    n_nodes = node_begin.shape[0]
    hist_rows = _check_hist_rows(hist_rows, n_nodes, hist, data.n_bins)
    n_updates = int((node_end - node_begin).sum()) + n_nodes * data.n_bins
    n_threads = min(max(1, n_nodes), threads_for_work(n_threads, n_updates))
    if data.codes.dtype == np.uint8:
        _build_sparse[uint8_t](data.codes, data, gradients,
                               partition.row_index, node_begin, node_end,
                               hist, hist_rows, n_threads)
    else:
        _build_sparse[uint16_t](data.codes, data, gradients,
                                partition.row_index, node_begin, node_end,
                                hist, hist_rows, n_threads)


cdef struct SparseLayout:
    # the stored entries and the bins of ``BinnedRows`` as pointers
    const int64_t* indptr
    const int32_t* indices
    const int64_t* bin_ptr
    const int32_t* absent_code
    Py_ssize_t n_features
    Py_ssize_t n_bins


cdef void _build_sparse(const code_t[::1] codes, BinnedRows data,
                        FixedPointGradients gradients,
                        const int32_t[::1] row_index,
                        const int64_t[::1] node_begin,
                        const int64_t[::1] node_end,
                        int64_t[:, :, ::1] hist,
                        const int64_t[::1] hist_rows, int n_threads):
    cdef const int64_t[::1] indptr = data.rows.indptr
    cdef const int32_t[::1] indices = data.rows.indices
    cdef const int64_t[::1] bin_ptr = data.bin_ptr
    cdef const int32_t[::1] absent_code = data.absent_code
    cdef const float[:, ::1] gpair = gradients.gpair
    cdef SparseLayout layout
    layout.indptr = &indptr[0]
    layout.indices = &indices[0] if indices.shape[0] else NULL
    layout.bin_ptr = &bin_ptr[0]
    layout.absent_code = &absent_code[0] if absent_code.shape[0] else NULL
    layout.n_features = data.n_features
    layout.n_bins = data.n_bins
    cdef const code_t* code_pointer = &codes[0] if codes.shape[0] else NULL
    cdef const double* weight = weight_pointer(gradients.weight)
    cdef double scale_g = gradients.scale_g, scale_h = gradients.scale_h
    cdef Py_ssize_t k
    # dynamic: nodes differ in rows and stored entries
    for k in prange(node_begin.shape[0], nogil=True, schedule="dynamic",
                    num_threads=n_threads):
        _sparse_node(code_pointer, &layout, gpair, weight, scale_g, scale_h,
                     row_index, node_begin[k], node_end[k],
                     &hist[hist_rows[k], 0, 0])


cdef void _sparse_node(const code_t* codes, const SparseLayout* layout,
                       const float[:, ::1] gpair, const double* weight,
                       double scale_g, double scale_h,
                       const int32_t[::1] row_index, int64_t begin,
                       int64_t end, int64_t* hist) noexcept nogil:
    """One node's histogram: its rows' stored entries, then each
    feature's absent entries (the node's totals minus the feature's
    stored sums) into the feature's absent bin."""
    cdef SparseLayout L = layout[0]
    cdef int64_t i, k, g, h, total_g = 0, total_h = 0, stored_g, stored_h
    cdef int64_t b
    cdef int32_t row
    cdef Py_ssize_t f
    memset(hist, 0, L.n_bins * 2 * sizeof(int64_t))
    for i in range(begin, end):
        row = row_index[i]
        g = fixed_point(gpair[row, 0], weight, row, scale_g)
        h = fixed_point(gpair[row, 1], weight, row, scale_h)
        total_g += g
        total_h += h
        for k in range(L.indptr[row], L.indptr[row + 1]):
            add_pair(&hist[2 * (L.bin_ptr[L.indices[k]] + codes[k])], g, h)
    for f in range(L.n_features):
        stored_g = 0
        stored_h = 0
        for b in range(L.bin_ptr[f], L.bin_ptr[f + 1]):
            stored_g += hist[2 * b]
            stored_h += hist[2 * b + 1]
        b = L.bin_ptr[f] + L.absent_code[f]
        hist[2 * b] += total_g - stored_g
        hist[2 * b + 1] += total_h - stored_h
