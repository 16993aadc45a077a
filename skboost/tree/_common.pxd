# C types shared by the tree kernels.
#
# Conventions, named here once:
# - A row's "slot" is the index of its node among the open nodes of the
#   level being grown (0 .. n_slots-1); NO_SLOT marks a row that is in a
#   finished leaf or not sampled for this tree.
# - Gradient pairs are float32 (n_rows, 2) arrays: column 0 the gradient,
#   column 1 the hessian. Every sum of them is float64.
# - A split sends a row left when its value is < threshold; a missing value
#   (NaN) follows default_left.

from libc.math cimport llrint
from libc.stdint cimport int32_t, int64_t, uint8_t

ctypedef float X_DTYPE_C          # feature values, NaN = missing
ctypedef float GRAD_DTYPE_C       # per-row gradients and hessians
ctypedef double SUM_DTYPE_C       # every sum of gradients or hessians
ctypedef int32_t NODE_INDEX_C     # node index inside one tree

cdef enum:
    NO_SLOT = -1
    NO_FEATURE = -1
    NO_CHILD = -1


ctypedef struct SplitCandidate:
    double gain            # loss reduction before gamma (see _gain.pxd)
    double threshold       # value < threshold goes left
    double G_left
    double H_left
    int32_t feature        # NO_FEATURE: no admissible split was found
    uint8_t default_left   # direction of missing values


cdef inline void reset_candidate(SplitCandidate* c) noexcept nogil:
    c.gain = -1e300
    c.threshold = 0.0
    c.G_left = 0.0
    c.H_left = 0.0
    c.feature = NO_FEATURE
    c.default_left = 0


cdef inline bint is_better(double gain, int32_t feature, double threshold,
                           const SplitCandidate* best) noexcept nogil:
    """Total order on candidates: higher gain, then lower feature index, then
    lower threshold. A total order makes the best split independent of the
    order in which threads report candidates."""
    if gain != best.gain:
        return gain > best.gain
    if feature != best.feature:
        return best.feature == NO_FEATURE or feature < best.feature
    return threshold < best.threshold


cdef extern from *:
    """
    /* Read prefetch into all cache levels (GCC/Clang builtin; no-op elsewhere). */
    /* Read prefetch into the outer cache levels only (locality 1:
       prefetcht2 on x86), for the scattered rows of a deep node: see
       prefetch_outer below. */
    #if defined(__GNUC__) || defined(__clang__)
    #define SKB_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 3)
    #define SKB_PREFETCH_OUTER(p) __builtin_prefetch((const void*)(p), 0, 1)
    #else
    #define SKB_PREFETCH(p) ((void)0)
    #define SKB_PREFETCH_OUTER(p) ((void)0)
    #endif
    """
    void prefetch "SKB_PREFETCH"(const void* p) noexcept nogil
    # A prefetch that does not fill the first-level cache. The histogram
    # kernel prefetches two or three lines a row, PREFETCH_ROWS rows ahead,
    # on top of its own misses: prefetched into L1, they held the core's
    # few L1 miss buffers and the loads waited; into L2 the deep levels of
    # a depth-8 tree (1,000,000 x 28) built about 20% faster, measured
    # (the lines are then L2 hits, a few cycles, when the row comes).
    void prefetch_outer "SKB_PREFETCH_OUTER"(const void* p) noexcept nogil

# How many rows ahead the indirect loops prefetch: far enough to hide a
# memory access (~100 ns) behind the work on the rows in between.
cdef enum:
    PREFETCH_ROWS = 24


# Per-thread buffers are padded to whole cache lines: a line shared by two
# threads would bounce between their cores (false sharing).
cdef enum:
    CACHE_LINE = 64


cdef inline Py_ssize_t padded_count(Py_ssize_t n,
                                    size_t item_size) noexcept nogil:
    """n items rounded up to whole cache lines (in items); at least 1."""
    cdef Py_ssize_t per_line = max(<Py_ssize_t> (CACHE_LINE // item_size), 1)
    return max(((n + per_line - 1) // per_line) * per_line, 1)


# Fixed point: gradient pairs become exact int64 sums (_histogram.pyx; the
# paged and distributed builders round the same way, so their histograms
# equal the in-core ones bit for bit).

cdef extern from *:
    """
    /* llrint as the one instruction it is on x86-64 (cvtsd2si, rounding by
       the current mode: what glibc's llrint runs). The compiler keeps
       llrint a library call (it may set errno), two per row of every
       histogram. */
    #if defined(__x86_64__) && defined(__SSE2__)
    #include <emmintrin.h>
    #define SKB_LLRINT(x) ((int64_t) _mm_cvtsd_si64(_mm_set_sd(x)))
    #else
    #define SKB_LLRINT(x) ((int64_t) llrint(x))
    #endif
    """
    int64_t round_to_int64 "SKB_LLRINT"(double x) noexcept nogil


cdef inline int64_t fixed_point(float value, const double* weight,
                                Py_ssize_t row, double scale) noexcept nogil:
    """round(value * weight[row] * scale), the one rounding every kernel
    uses (llrint: round to nearest, ties to even, one instruction)."""
    if weight == NULL:
        return round_to_int64(<double> value * scale)
    return round_to_int64(<double> value * weight[row] * scale)


cdef inline const double* weight_pointer(weight):
    """Data pointer of a validated float64 weight array, NULL for None."""
    if weight is None:
        return NULL
    cdef const double[::1] view = weight
    return &view[0] if view.shape[0] else NULL


cdef extern from *:
    """
    /* bin[0] += g and bin[1] += h as one 128-bit integer add (SSE2, part of
       x86-64): one load and one store per row-feature update instead of
       two of each; the stores bounded the histogram loop. Same integers. */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline void skb_add_pair(int64_t* bin, int64_t g, int64_t h) {
        __m128i* p = (__m128i*) bin;
        _mm_storeu_si128(p, _mm_add_epi64(_mm_loadu_si128(p),
                                          _mm_set_epi64x(h, g)));
    }
    #else
    static inline void skb_add_pair(int64_t* bin, int64_t g, int64_t h) {
        bin[0] += g;
        bin[1] += h;
    }
    #endif
    """
    void add_pair "skb_add_pair"(int64_t* bin, int64_t g,
                                 int64_t h) noexcept nogil
