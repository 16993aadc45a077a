"""Values to bin codes, in parallel over rows.

Feature ``f`` has ``n_value_bins[f]`` value bins and one missing bin whose
code is ``n_value_bins[f]`` (the last code of the feature). Its interior cut
points are ``cuts[cut_ptr[f]:cut_ptr[f+1]]`` (``n_value_bins[f] - 1`` of
them, sorted); a value ``x`` gets the number of cuts ``<= x``, so that
``code(x) <= b`` exactly when ``x < cuts[b]``: the split "bins 0..b go left"
is the tree split ``x < cuts[b]``.
"""

import numpy as np

cimport cython

from skboost._openmp_helpers import check_n_threads

from cython.parallel cimport prange
from libc.math cimport floor, isnan

from ._common cimport int32_t, int64_t, uint8_t
from .._parallel cimport threads_for_work
from libc.stdint cimport uint16_t

ctypedef fused code_t:
    uint8_t
    uint16_t


cdef inline int32_t upper_bound(const float* cuts, int32_t n,
                                float x) noexcept nogil:
    """Number of cuts <= x, for n >= 1 (branch-free binary search: the
    comparison selects the next base with a conditional move, so random
    values cost no branch mispredictions)."""
    cdef const float* base = cuts
    cdef int32_t half
    # the window [base, base + n) always holds the last cut <= x, if any:
    # each step halves it, log2(n) steps whatever x is (no early exit, so
    # the loop's trip count is as predictable as its branch)
    while n > 1:
        half = n >> 1
        base = base + half if base[half] <= x else base
        n -= half
    return <int32_t> (base - cuts) + (base[0] <= x)


# Features whose cuts are a unit apart (``c0, c0 + 1, ...``: the
# categories' cuts ``category_cuts``, 0.5 .. n - 1.5) need no search: the
# count of cuts <= x is floor(x - c0) + 1, clipped to [0, n]. It is
# checked against the two cuts around it (the very comparisons of the
# search's definition), and the search runs where the check fails
# (rounding of x - c0 far from the cuts), so the code is upper_bound's
# for every x. A 30,000-category column: one subtraction and two
# compares a value instead of 15 dependent search steps.
cdef enum:
    # fewer cuts than this keep the search (a few steps in the L1 cache)
    UNIT_STEP_MIN_CUTS = 16


cdef inline int32_t unit_step_count(const float* cuts, int32_t n,
                                    float x) noexcept nogil:
    """``upper_bound(cuts, n, x)`` for cuts ``cuts[j] == cuts[0] + j``
    (``_unit_step_features``) and x not NaN."""
    cdef double guess = floor(<double> x - <double> cuts[0]) + 1.0
    cdef int32_t count
    if not guess > 0.0:   # (NaN: x - c0 of infinities; checked below)
        count = 0
    elif guess >= n:
        count = n
    else:
        count = <int32_t> guess
    if (count == 0 or cuts[count - 1] <= x) and (
            count == n or not cuts[count] <= x):
        return count
    return upper_bound(cuts, n, x)


def _unit_step_features(cuts32, cut_ptr):
    """Which features' float32 cuts are a unit apart, each exactly
    ``cuts[0] + j`` (at least UNIT_STEP_MIN_CUTS of them; uint8, one per
    feature): their values are counted directly (``unit_step_count``).
    Whole-array steps, no loop over features (this runs on every chunk of
    out-of-core data, which may have thousands of features): the first
    and last cuts rule out most features, the others are checked cut by
    cut."""
    cuts = np.asarray(cuts32)
    ptr = np.asarray(cut_ptr, dtype=np.int64)
    sizes = np.diff(ptr)
    flags = np.zeros(sizes.shape[0], dtype=np.uint8)
    features = np.flatnonzero(sizes >= UNIT_STEP_MIN_CUTS)
    first = cuts[ptr[features]].astype(np.float64)
    last = cuts[ptr[features + 1] - 1].astype(np.float64)
    ends_fit = np.isfinite(first) & np.isfinite(last) & (
        last == first + (sizes[features] - 1))
    features, first = features[ends_fit], first[ends_fit]
    # cut j of each such feature against its first cut + j, in float64
    # (a NaN cut differs from everything)
    n_cuts = sizes[features]
    step = np.arange(int(n_cuts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(n_cuts) - n_cuts, n_cuts)
    values = cuts[np.repeat(ptr[features], n_cuts) + step].astype(np.float64)
    off_step = values != np.repeat(first, n_cuts) + step
    n_off_step = np.bincount(np.repeat(np.arange(features.shape[0]), n_cuts)
                             [off_step], minlength=features.shape[0])
    flags[features[n_off_step == 0]] = 1
    return flags


cdef enum:
    # values searched side by side (upper_bound_lanes): one search is a
    # chain of dependent load-compare-select steps, ~5 cycles each, the
    # core idle between them; four independent chains fill those cycles
    LANES = 4


cdef inline void upper_bound_lanes(const float* cuts,
                                   const int64_t* first_cut, int32_t n,
                                   const float* x,
                                   int32_t* out) noexcept nogil:
    """``upper_bound`` of LANES values at once: value ``x[k]`` among the n
    cuts starting at ``cuts[first_cut[k]]`` (n >= 1, the same for every
    lane), in one loop of independent steps. Each lane takes the very
    steps ``upper_bound`` takes, so its count is the same (a NaN gets 0,
    as there: its comparisons are false)."""
    cdef const float* b0 = cuts + first_cut[0]
    cdef const float* b1 = cuts + first_cut[1]
    cdef const float* b2 = cuts + first_cut[2]
    cdef const float* b3 = cuts + first_cut[3]
    cdef float x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3]
    cdef int32_t half
    while n > 1:
        half = n >> 1
        b0 = b0 + half if b0[half] <= x0 else b0
        b1 = b1 + half if b1[half] <= x1 else b1
        b2 = b2 + half if b2[half] <= x2 else b2
        b3 = b3 + half if b3[half] <= x3 else b3
        n -= half
    out[0] = <int32_t> (b0 - (cuts + first_cut[0])) + (b0[0] <= x0)
    out[1] = <int32_t> (b1 - (cuts + first_cut[1])) + (b1[0] <= x1)
    out[2] = <int32_t> (b2 - (cuts + first_cut[2])) + (b2[0] <= x2)
    out[3] = <int32_t> (b3 - (cuts + first_cut[3])) + (b3[0] <= x3)


def _lockstep_features(cut_ptr, unit_step=None):
    """Which features start a group of LANES consecutive features with the
    same number of cuts, at least one (uint8, one per feature): their
    values are searched side by side (``upper_bound_lanes``). Greedy from
    feature 0: a group's features start no other group. Features flagged
    in ``unit_step`` join no group (they are counted, not searched)."""
    n_cuts = np.diff(np.asarray(cut_ptr))
    n_features = n_cuts.shape[0]
    starts = np.zeros(n_features, dtype=np.uint8)
    if n_features < LANES:
        return starts
    searched = (np.ones(n_features, dtype=bool) if unit_step is None
                else np.asarray(unit_step) == 0)
    # could_start[f]: features f .. f+LANES-1 searched, with the same
    # number of cuts (at least one); whole-array steps, then the greedy
    # walk over plain Python bools
    n_starts = n_features - LANES + 1
    could_start = (n_cuts[:n_starts] >= 1) & searched[:n_starts]
    for k in range(1, LANES):
        could_start &= (n_cuts[k:k + n_starts] == n_cuts[:n_starts]) & (
            searched[k:k + n_starts])
    could = could_start.tolist()
    f = 0
    while f < n_starts:
        if could[f]:
            starts[f] = 1
            f += LANES
        else:
            f += 1
    return starts


def float32_cuts(cuts):
    """Each float64 cut c as the smallest float32 >= c: for a float32 x,
    ``c <= x`` exactly when ``float32_cuts(c) <= x`` (x >= c is a float32
    at or above c, so at or above the smallest such; the converse by
    transitivity). The codes are then those of the float64 cuts, with
    cuts half as wide: 28 features of 255 cuts stay in the first-level
    cache during the search."""
    cuts = np.asarray(cuts, dtype=np.float64)
    # overflow to +-inf is intended: -inf below a cut < -FLT_MAX is
    # moved up to -FLT_MAX below, +inf is the right answer above FLT_MAX
    with np.errstate(over="ignore"):
        rounded = cuts.astype(np.float32)
    below = rounded.astype(np.float64) < cuts
    rounded[below] = np.nextafter(rounded[below], np.float32(np.inf))
    return rounded


# The table search of map_to_bins, where the CPU has AVX-512 and every
# feature has at most TABLE_CUTS cuts: a feature's cuts padded with +inf
# to TABLE_CUTS floats (16 blocks of 16, one AVX-512 register each), and
# its 16 "splitters", the last cut of each block. A value's count of cuts
# <= x is then two compares of 16 lanes and two popcounts: the splitters
# <= x count the blocks wholly <= x (a prefix, the cuts being sorted),
# and the next block's cuts <= x the rest:
#
#     cuts      | c0 .. c15 | c16 .. c31 | ... | c240 .. c255 |  (+inf pad)
#     splitters    c15         c31               c255
#     x:  k splitters <= x  ->  count = 16 k + (cuts of block k <= x)
#
# against the search's 8 dependent load-compare-select steps. With k = 16
# (x at or above the last splitter) block 15 is taken, all of whose cuts
# are <= x: 256. The padding counts only for x = +inf, so the count is
# clipped to the feature's number of cuts, and a NaN, which no compare
# counts, gets the missing code. The same count as upper_bound, so the
# same codes, for every x (checked: test_binning's table tests).
cdef enum:
    TABLE_CUTS = 256
    TABLE_BLOCK = 16

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
        && (__GNUC__ >= 8)
    #include <immintrin.h>
    /* The codes of one row of n_features values (map_to_bins's table
       search, above), written to codes[f] and, unless by_feature is NULL,
       to by_feature[f * stride] (the row's place in each feature's column
       of the feature-major copy); returns whether a NaN's missing code
       exceeds largest. One function per code width. */
    #define SKB_TABLE_ROW_CODES(NAME, CODE_T)                               \\
    __attribute__((target("avx512f,popcnt")))                               \\
    static uint8_t NAME(const float* x, int64_t n_features,                 \\
                        const float* tables, const float* splitters,        \\
                        const int64_t* cut_ptr, int32_t largest,            \\
                        CODE_T* codes, CODE_T* by_feature,                  \\
                        int64_t stride) {                                   \\
        uint8_t overflow = 0;                                               \\
        for (int64_t f = 0; f < n_features; f++) {                          \\
            const float value = x[f];                                       \\
            const __m512 v = _mm512_set1_ps(value);                         \\
            const int32_t n_cuts = (int32_t) (cut_ptr[f + 1] - cut_ptr[f]); \\
            unsigned block = (unsigned) __builtin_popcount(                 \\
                _mm512_cmp_ps_mask(_mm512_loadu_ps(splitters + 16 * f), v,  \\
                                   _CMP_LE_OQ));                            \\
            block = block < 15 ? block : 15;                                \\
            int32_t count = (int32_t) (16 * block) + __builtin_popcount(    \\
                _mm512_cmp_ps_mask(                                         \\
                    _mm512_loadu_ps(tables + 256 * f + 16 * block), v,      \\
                    _CMP_LE_OQ));                                           \\
            count = count < n_cuts ? count : n_cuts;                        \\
            if (value != value) {                                           \\
                overflow |= n_cuts + 1 > largest;                           \\
                count = n_cuts + 1;                                         \\
            }                                                               \\
            codes[f] = (CODE_T) count;                                      \\
            if (by_feature != NULL)                                         \\
                by_feature[f * stride] = (CODE_T) count;                    \\
        }                                                                   \\
        return overflow;                                                    \\
    }
    SKB_TABLE_ROW_CODES(skb_table_row_codes_u8, uint8_t)
    SKB_TABLE_ROW_CODES(skb_table_row_codes_u16, uint16_t)
    static int skb_table_search_init(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f")
            && __builtin_cpu_supports("popcnt");
    }
    #else
    static uint8_t skb_table_row_codes_u8(
            const float* x, int64_t n_features, const float* tables,
            const float* splitters, const int64_t* cut_ptr, int32_t largest,
            uint8_t* codes, uint8_t* by_feature, int64_t stride) {
        return 0;
    }
    static uint8_t skb_table_row_codes_u16(
            const float* x, int64_t n_features, const float* tables,
            const float* splitters, const int64_t* cut_ptr, int32_t largest,
            uint16_t* codes, uint16_t* by_feature, int64_t stride) {
        return 0;
    }
    static int skb_table_search_init(void) { return 0; }
    #endif
    """
    uint8_t table_row_codes_u8 "skb_table_row_codes_u8"(
        const float* x, int64_t n_features, const float* tables,
        const float* splitters, const int64_t* cut_ptr, int32_t largest,
        uint8_t* codes, uint8_t* by_feature, int64_t stride) noexcept nogil
    uint8_t table_row_codes_u16 "skb_table_row_codes_u16"(
        const float* x, int64_t n_features, const float* tables,
        const float* splitters, const int64_t* cut_ptr, int32_t largest,
        uint16_t* codes, uint16_t* by_feature, int64_t stride) noexcept nogil
    int table_search_init "skb_table_search_init"() noexcept nogil


# Whether map_to_bins takes the table search where it can: the CPU has
# AVX-512 (set_table_search turns it off, for tests of the search).
cdef bint _table_search = table_search_init()


def set_table_search(bint enabled):
    """Code values by the table search where the CPU has AVX-512 (True,
    the default), or by the binary search only; returns the previous
    setting. The codes are the same either way."""
    global _table_search
    previous = _table_search
    _table_search = enabled and table_search_init()
    return previous


@cython.wraparound(True)   # numpy slices from the end
def _search_tables(cuts32, cut_ptr):
    """The table search's arrays (``map_to_bins``): every feature's float32
    cuts padded with +inf to TABLE_CUTS, shape (n_features, TABLE_CUTS),
    and their splitters (each block's last cut), (n_features,
    TABLE_BLOCK); None where a feature has more cuts than TABLE_CUTS or
    its cuts are not sorted (NaN included), which only the search takes."""
    cuts = np.asarray(cuts32, dtype=np.float32)
    ptr = np.asarray(cut_ptr, dtype=np.int64)
    sizes = np.diff(ptr)
    n_features = sizes.shape[0]
    if n_features == 0 or sizes.max() > TABLE_CUTS:
        return None
    feature = np.repeat(np.arange(n_features), sizes)
    same_feature = feature[1:] == feature[:-1]
    if not np.all(cuts[1:][same_feature] >= cuts[:-1][same_feature]) or (
            np.isnan(cuts).any()):
        return None
    tables = np.full((n_features, TABLE_CUTS), np.inf, dtype=np.float32)
    position = np.arange(cuts.shape[0]) - np.repeat(ptr[:-1], sizes)
    tables[feature, position] = cuts
    splitters = np.ascontiguousarray(
        tables[:, TABLE_BLOCK - 1::TABLE_BLOCK])
    return tables, splitters


cdef class BinnedData:
    """Bin codes of a matrix with the histogram layout they index into.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_features), uint8 or uint16, C order
    bin_ptr : ndarray of shape (n_features + 1,), int64
        Feature f owns histogram bins ``bin_ptr[f] .. bin_ptr[f+1]-1``, the
        last of which is its missing bin.
    n_threads : int, default=1
        Threads for the feature-major copy of row-major codes.

    Notes
    -----
    The codes are kept in both layouts: row-major for building histograms
    (a row's codes are adjacent) and feature-major for partitioning (the
    partitioner reads one feature of a node's rows, which then sit in one
    contiguous column instead of one cache line per row).
    """

    @cython.boundscheck(True)
    @cython.wraparound(True)
    def __init__(self, codes, bin_ptr, int n_threads=1):
        codes = np.asarray(codes)
        bin_ptr = np.ascontiguousarray(bin_ptr, dtype=np.int64)
        if codes.ndim != 2 or codes.dtype not in (np.uint8, np.uint16):
            raise ValueError("codes must be a 2-d uint8 or uint16 array")
        if bin_ptr.shape != (codes.shape[1] + 1,) or bin_ptr[0] != 0:
            raise ValueError("bin_ptr must have n_features + 1 entries from 0")
        widths = np.diff(bin_ptr)
        if np.any(widths < 1):
            raise ValueError("every feature needs at least its missing bin")
        # every code indexes inside its feature's bins: the histogram
        # kernels add at bin_ptr[f] + code with no check
        if codes.shape[0] and codes.shape[1] and np.any(
                codes.max(axis=0) >= widths):
            raise ValueError("a bin code is beyond its feature's bins")
        # both layouts; a feature-major array passed as its transpose view
        # (codes.T of a C array) costs one copy, not two
        if codes.flags.c_contiguous:
            self._assign(codes, transposed_codes(codes, n_threads), bin_ptr)
        else:
            self._assign(np.ascontiguousarray(codes),
                         np.ascontiguousarray(codes.T), bin_ptr)

    cdef _assign(self, codes, codes_by_feature, bin_ptr):
        """Set the fields from checked codes (``__init__``, ``bin_matrix``)."""
        self.codes = codes
        self.codes_by_feature = codes_by_feature
        self.bin_ptr = bin_ptr
        self.missing_code = (np.diff(bin_ptr) - 1).astype(np.int32)
        self.n_rows = codes.shape[0]
        self.n_features = codes.shape[1]
        self.n_bins = int(bin_ptr[-1])


# Rows per task of ``transposed_codes``: a block's codes (28 features: 56
# KB) stay in cache while its features are written out one by one.
cdef enum:
    TRANSPOSE_ROWS = 2048


def transposed_codes(codes, int n_threads):
    """The feature-major copy ``codes.T`` (C order) of row-major codes, in
    parallel over blocks of rows: numpy's transposing copy read the whole
    matrix once per feature, a byte at a time."""
    n_threads = check_n_threads(n_threads)
    out = np.empty((codes.shape[1], codes.shape[0]), dtype=codes.dtype)
    if codes.dtype == np.uint8:
        _transpose[uint8_t](codes, out, n_threads)
    else:
        _transpose[uint16_t](codes, out, n_threads)
    return out


cdef void _transpose(const code_t[:, ::1] codes, code_t[:, ::1] out,
                     int n_threads) noexcept:
    cdef Py_ssize_t n_rows = codes.shape[0], n_features = codes.shape[1]
    cdef Py_ssize_t n_blocks = (n_rows + TRANSPOSE_ROWS - 1) // TRANSPOSE_ROWS
    cdef Py_ssize_t block, first, stop, r, f
    # each block of rows writes its own columns of out: no shared writes
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads,
                                                     n_rows * n_features)):
        first = block * TRANSPOSE_ROWS
        stop = min(first + TRANSPOSE_ROWS, n_rows)
        for f in range(n_features):
            for r in range(first, stop):
                out[f, r] = codes[r, f]


cdef inline uint8_t _row_codes(const float* x, const float* cuts32,
                               const int64_t* cut_ptr,
                               const uint8_t* lockstep,
                               const uint8_t* unit_step,
                               Py_ssize_t n_features, int32_t largest,
                               code_t* codes) noexcept nogil:
    """The codes of one row's values ``x`` (``map_to_bins``). Groups of
    LANES features with as many cuts (``lockstep``) are searched side by
    side, their NaNs then given the missing code; features of unit-step
    cuts (``unit_step``) counted directly; the others searched one by one.
    Returns whether a NaN's missing code exceeds ``largest``."""
    cdef int32_t lane_codes[LANES]
    cdef int32_t n_cuts
    cdef uint8_t overflow = 0
    cdef Py_ssize_t f = 0, k
    while f < n_features:
        n_cuts = <int32_t> (cut_ptr[f + 1] - cut_ptr[f])
        if lockstep[f]:
            upper_bound_lanes(cuts32, &cut_ptr[f], n_cuts, &x[f], lane_codes)
            for k in range(LANES):
                if isnan(x[f + k]):
                    overflow |= n_cuts + 1 > largest
                    lane_codes[k] = n_cuts + 1   # the missing bin
                codes[f + k] = <code_t> lane_codes[k]
            f += LANES
        else:
            if isnan(x[f]):
                overflow |= n_cuts + 1 > largest
                codes[f] = <code_t> (n_cuts + 1)   # the missing bin
            elif n_cuts == 0:
                codes[f] = 0
            elif unit_step[f]:
                codes[f] = <code_t> unit_step_count(&cuts32[cut_ptr[f]],
                                                    n_cuts, x[f])
            else:
                codes[f] = <code_t> upper_bound(&cuts32[cut_ptr[f]], n_cuts,
                                                x[f])
            f += 1
    return overflow


def map_to_bins(const float[:, ::1] X not None,          # IN (n_rows, n_features)
                const double[::1] cuts not None,         # IN all features' cuts
                const int64_t[::1] cut_ptr not None,     # IN (n_features + 1,)
                code_t[:, ::1] codes not None,           # OUT (n_rows, n_features)
                int n_threads, codes_by_feature=None):
    """Bin code of every value of X; NaN gets its feature's missing code.
    With ``codes_by_feature`` (OUT, shape (n_features, n_rows), the dtype
    of codes, C order), the codes are also written there transposed: in
    the same pass where the table search runs (``_map_by_tables``), else
    copied after (``transposed_codes``)."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_rows = X.shape[0], n_features = X.shape[1]
    if codes.shape[0] != n_rows or codes.shape[1] != n_features:
        raise ValueError("codes must have the shape of X")
    cdef code_t[:, ::1] by_feature = _feature_major_out(
        codes_by_feature, np.asarray(codes).dtype, n_features, n_rows)
    if cut_ptr.shape[0] != n_features + 1 or cut_ptr[0] != 0 or (
            cut_ptr[n_features] != cuts.shape[0]):
        raise ValueError("cut_ptr does not describe cuts")
    ptr = np.asarray(cut_ptr)
    if np.any(np.diff(ptr) < 0):
        raise ValueError("cut_ptr must be non-decreasing")
    max_code = np.iinfo(np.asarray(codes).dtype).max
    cuts_per_feature = np.diff(ptr)
    if n_features and np.any(cuts_per_feature > max_code):
        raise ValueError("too many bins for the code dtype")
    # A feature's missing code (n_cuts + 1) is needed only where X is NaN;
    # whether it fits the dtype is checked in the loop (no copy of X).
    missing_overflow_arr = np.zeros(n_rows, dtype=np.uint8)
    cdef uint8_t[::1] missing_overflow = missing_overflow_arr
    cdef const float[::1] cuts32 = float32_cuts(cuts)
    if n_rows == 0 or n_features == 0:
        return   # no value to code (the pointers below need one)
    tables = _search_tables(cuts32, cut_ptr) if _table_search else None
    cdef const float[:, ::1] table_cuts, splitters
    if tables is not None:
        table_cuts, splitters = tables
        _map_by_tables(X, table_cuts, splitters, cut_ptr, codes,
                       by_feature, missing_overflow, n_threads)
    else:
        _map_by_search(X, cuts32, cut_ptr, codes, <int32_t> max_code,
                       missing_overflow, n_threads)
        if by_feature is not None:
            _transpose(codes, by_feature, n_threads)
    if missing_overflow_arr.any():
        raise ValueError("a feature's missing code does not fit the code "
                         "dtype")


def _feature_major_out(out, dtype, Py_ssize_t n_features, Py_ssize_t n_rows):
    """``map_to_bins``'s codes_by_feature, checked (None passes)."""
    if out is None:
        return None
    if not isinstance(out, np.ndarray) or out.dtype != dtype or (
            out.shape != (n_features, n_rows)) or not out.flags.c_contiguous:
        raise ValueError("codes_by_feature must be a C-ordered array of "
                         "the codes' dtype, shape (n_features, n_rows)")
    return out


cdef void _map_by_search(const float[:, ::1] X,          # IN (n_rows, n_features)
                         const float[::1] cuts32,        # IN float32_cuts
                         const int64_t[::1] cut_ptr,     # IN (n_features + 1,)
                         code_t[:, ::1] codes,           # OUT (n_rows, n_features)
                         int32_t largest,                # the dtype's largest code
                         uint8_t[::1] missing_overflow,  # OUT (n_rows,)
                         int n_threads):
    """``map_to_bins`` by the binary search (``_row_codes``); shapes
    checked by the caller, n_rows and n_features >= 1."""
    cdef Py_ssize_t r, n_rows = X.shape[0], n_features = X.shape[1]
    cdef const uint8_t[::1] unit_step = _unit_step_features(cuts32, cut_ptr)
    cdef const uint8_t[::1] lockstep = _lockstep_features(cut_ptr, unit_step)
    # NULL when no feature has a cut (then no search reads it)
    cdef const float* cut_values = (&cuts32[0] if cuts32.shape[0] > 0
                                    else NULL)
    # one row per iteration, its features in order: X and codes are both
    # row-major, so a thread streams through contiguous memory, and each
    # code depends on its value alone (any split of the rows gives the
    # same codes). A value's binary search over its cuts (float32: see
    # float32_cuts): ~8 units of work
    for r in prange(n_rows, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads,
                                                 8 * n_rows * n_features)):
        missing_overflow[r] = _row_codes(&X[r, 0], cut_values, &cut_ptr[0],
                                         &lockstep[0], &unit_step[0],
                                         n_features, largest, &codes[r, 0])


cdef void _map_by_tables(const float[:, ::1] X,          # IN (n_rows, n_features)
                         const float[:, ::1] tables,     # IN (n_features, TABLE_CUTS)
                         const float[:, ::1] splitters,  # IN (n_features, TABLE_BLOCK)
                         const int64_t[::1] cut_ptr,     # IN (n_features + 1,)
                         code_t[:, ::1] codes,           # OUT (n_rows, n_features)
                         code_t[:, ::1] by_feature,      # OUT (n_features, n_rows) or None
                         uint8_t[::1] missing_overflow,  # OUT (n_rows,)
                         int n_threads):
    """``map_to_bins`` by the table search (``_search_tables``), a row at
    a time, in parallel over rows (each row's codes its own: the same
    codes for any number of threads). With ``by_feature``, each code is
    also stored at its place in its feature's column: one byte more a
    value, instead of a second pass over the codes to transpose them.
    Shapes checked by the caller; two compares a value, ~2 units of
    work."""
    cdef Py_ssize_t r, n_rows = X.shape[0], n_features = X.shape[1]
    cdef int32_t largest = 255 if code_t is uint8_t else 65535
    cdef code_t* column_base = (&by_feature[0, 0] if by_feature is not None
                                else NULL)
    for r in prange(n_rows, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads,
                                                 2 * n_rows * n_features)):
        if code_t is uint8_t:
            missing_overflow[r] = table_row_codes_u8(
                &X[r, 0], n_features, &tables[0, 0], &splitters[0, 0],
                &cut_ptr[0], largest, &codes[r, 0],
                column_base + r if column_base != NULL else NULL, n_rows)
        else:
            missing_overflow[r] = table_row_codes_u16(
                &X[r, 0], n_features, &tables[0, 0], &splitters[0, 0],
                &cut_ptr[0], largest, &codes[r, 0],
                column_base + r if column_base != NULL else NULL, n_rows)


def bin_matrix(X, cuts, cut_ptr, bin_ptr, dtype, int n_threads=1):
    """The ``BinnedData`` of float32 C-ordered X on the given cuts
    (``map_to_bins``' codes, in both layouts, written in one pass where
    the table search runs). Its codes are made here, each at most its
    feature's missing code (n_cuts + 1, the last of the feature's
    ``bin_ptr`` bins, checked), so they are not scanned again as a
    ``BinnedData`` of the caller's codes is."""
    bin_ptr = np.ascontiguousarray(bin_ptr, dtype=np.int64)
    cut_ptr = np.ascontiguousarray(cut_ptr, dtype=np.int64)
    widths = np.diff(bin_ptr) if bin_ptr.shape == cut_ptr.shape else None
    if widths is None or bin_ptr.shape[0] < 1 or bin_ptr[0] != 0 or np.any(
            widths != np.diff(cut_ptr) + 2):
        raise ValueError("bin_ptr must give each feature its cuts' value "
                         "bins and a missing bin")
    codes = np.empty(X.shape, dtype=dtype)
    codes_by_feature = np.empty(X.shape[::-1], dtype=dtype)
    map_to_bins(X, cuts, cut_ptr, codes, n_threads, codes_by_feature)
    cdef BinnedData binned = BinnedData.__new__(BinnedData)
    binned._assign(codes, codes_by_feature, bin_ptr)
    return binned


def map_entries_to_bins(const float[::1] values not None,     # IN (nnz,)
                        const int32_t[::1] features not None,  # IN (nnz,)
                        const double[::1] cuts not None,       # IN all cuts
                        const int64_t[::1] cut_ptr not None,   # IN (n_features + 1,)
                        code_t[::1] codes not None,            # OUT (nnz,)
                        int n_threads):
    """Bin code of each stored entry of a sparse matrix (value
    ``values[k]`` of feature ``features[k]``), as ``map_to_bins`` codes
    the same value in a dense matrix: no dense copy is made, the cost is
    one search per stored entry. NaN gets its feature's missing code."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_entries = values.shape[0]
    cdef Py_ssize_t n_features = cut_ptr.shape[0] - 1
    if features.shape[0] != n_entries or codes.shape[0] != n_entries:
        raise ValueError("values, features and codes must have one entry "
                         "each per stored entry")
    if n_features < 0 or cut_ptr[0] != 0 or cut_ptr[n_features] != (
            cuts.shape[0]) or np.any(np.diff(np.asarray(cut_ptr)) < 0):
        raise ValueError("cut_ptr does not describe cuts")
    feature_array = np.asarray(features)
    if n_entries and (feature_array.min() < 0
                      or feature_array.max() >= n_features):
        raise ValueError("an entry's feature is outside [0, n_features)")
    max_code = np.iinfo(np.asarray(codes).dtype).max
    if n_features and np.diff(np.asarray(cut_ptr)).max() > max_code:
        raise ValueError("too many bins for the code dtype")
    cdef const float[::1] cuts32 = float32_cuts(cuts)
    cdef Py_ssize_t k, overflow = 0
    cdef int32_t f, n_cuts
    cdef int32_t largest = <int32_t> max_code
    cdef float x
    for k in prange(n_entries, nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads, 8 * n_entries)):
        f = features[k]
        x = values[k]
        n_cuts = <int32_t> (cut_ptr[f + 1] - cut_ptr[f])
        if isnan(x):
            if n_cuts + 1 > largest:
                overflow += 1
            codes[k] = <code_t> (n_cuts + 1)   # the missing bin
        elif n_cuts == 0:
            codes[k] = 0
        else:
            codes[k] = <code_t> upper_bound(&cuts32[cut_ptr[f]], n_cuts, x)
    if overflow:
        raise ValueError("a feature's missing code does not fit the code "
                         "dtype")


cdef inline bint any_nan(const float* values, Py_ssize_t n) noexcept nogil:
    """Whether ``values[:n]`` holds a NaN: an OR of ``x != x`` over the
    run, no early exit, so it vectorises."""
    cdef Py_ssize_t i
    cdef int found = 0
    for i in range(n):
        found |= values[i] != values[i]
    return found != 0


def columns_with_nan(const float[:, ::1] X not None, int n_threads):
    """Which columns of X hold a NaN: bool (n_features,). One pass over
    the rows in order, in parallel over blocks of rows (each block's
    flags OR-ed into its thread's row of flags: no shared writes). A
    block is first scanned flat, its floats as one contiguous run (a loop
    the compiler vectorises); only a block holding a NaN is scanned again
    feature by feature."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n_rows = X.shape[0], n_features = X.shape[1]
    cdef Py_ssize_t n_blocks = (n_rows + TRANSPOSE_ROWS - 1) // TRANSPOSE_ROWS
    n_threads = threads_for_work(n_threads, n_rows * n_features)
    flag_array = np.zeros((n_blocks, n_features), dtype=np.uint8)
    if n_rows == 0 or n_features == 0:
        return flag_array.any(axis=0)
    cdef uint8_t[:, ::1] flags = flag_array
    cdef Py_ssize_t block, r, f, first, last
    cdef float x
    # a NaN is the one value unequal to itself; a block's flags are its own
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=n_threads):
        first = block * TRANSPOSE_ROWS
        last = min(first + TRANSPOSE_ROWS, n_rows)
        if not any_nan(&X[first, 0], (last - first) * n_features):
            continue
        for r in range(first, last):
            for f in range(n_features):
                x = X[r, f]
                flags[block, f] |= x != x
    return flag_array.any(axis=0)
