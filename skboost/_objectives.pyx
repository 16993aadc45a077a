"""Per-row gradients and hessians of the built-in objectives.

Each kernel writes float32 pairs ``gpair[i] = (g_i, h_i)`` (multiplied by
the sample weight, when one is given: ``weight=None`` is unit weights,
with no array of ones) from float64 raw margins. The formulas:

- squared error, ``l = 1/2 (m - y)^2``: ``g = m - y``, ``h = 1``;
- logistic, ``p = sigmoid(m)``: ``g = p - y``, ``h = max(p (1 - p), eps)``;
- softmax over K classes, ``p = softmax(m)``: ``g_k = p_k - [y == k]``,
  ``h_k = max(2 p_k (1 - p_k), eps)``. The factor 2 makes the diagonal an
  upper bound of the softmax Hessian, so the K trees of a round, fitted
  independently, do not overshoot together; it is also what XGBoost uses,
  so tuned parameters (min_child_weight) carry over;
- every other element-wise loss through ``elementwise_gradient``, the loss
  picked by a code of ``LOSS_CODES`` (formulas beside ``ElementwiseLoss``).
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython

from cython.parallel cimport parallel, prange
from libc.stdint cimport int32_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.math cimport INFINITY, exp, fabsf, fmax, log1p, sqrt

from ._math cimport sigmoid
from ._parallel cimport threads_for_work

# Every kernel here is one independent computation per row: rows are split
# among threads statically (contiguous ranges, streamed), and a row's pair
# depends on its own inputs only, so the pairs are the same for any thread
# count. Pairs are float32 (half the memory traffic of the histogram
# builders, which sum them in exact int64 fixed point).

# the smallest hessian written: a saturated sigmoid's p (1 - p) rounds to
# 0, and a leaf of such rows would get an infinite weight
cdef double HESSIAN_FLOOR = 1e-16

# Labels of the logistic kernel: float64, or uint8 / float32 where every
# label is one exactly (a classifier's class indices out of core, 1 or 4
# bytes a row); promoted to double before any arithmetic, so all give the
# same pairs.
ctypedef fused label_t:
    uint8_t
    float
    double

cdef inline const double* weight_pointer(const double[::1] weight):
    """Data pointer of the weights, NULL for None (unit weights: nothing
    multiplied, no array of ones kept)."""
    if weight is None or weight.shape[0] == 0:
        return NULL
    return &weight[0]


cdef inline double times_weight(double value, const double* w,
                                Py_ssize_t i) noexcept nogil:
    """``value * w[i]``, or ``value`` itself for unit weights (``w`` NULL;
    the same bits: ``x * 1.0 == x``)."""
    return value * w[i] if w != NULL else value


cdef inline double floored_hessian(double h) noexcept nogil:
    """``fmax(h, HESSIAN_FLOOR)`` inline (the floor for NaN too): fmax is
    a library call, a tenth of the logistic kernel's time."""
    return h if h > HESSIAN_FLOOR else HESSIAN_FLOOR


cdef enum:
    # A row's gradient pair (an exp or a log, a division) counts as this
    # many units of work (skboost/_parallel.pxd).
    ELEMENTWISE_WORK = 8
    # values per block of largest_magnitude (a block's maximum each)
    MAGNITUDE_BLOCK = 65536


@cython.boundscheck(True)
@cython.wraparound(True)
def _check_pairs(width):
    if width != 2:
        raise ValueError("gpair must hold (gradient, hessian) pairs: last "
                         f"axis of length 2, got {width}")


@cython.boundscheck(True)
@cython.wraparound(True)
def _check(n, *arrays):
    for a in arrays:
        if a is not None and a.shape[0] != n:
            raise ValueError("all per-row arrays must have the same length")


def squared_error_gradient(const double[::1] y not None,        # IN (n,)
                           const double[::1] raw not None,      # IN (n,)
                           const double[::1] weight,   # IN (n,)
                           float[:, ::1] gpair not None,        # OUT (n, 2)
                           int n_threads):
    n_threads = check_n_threads(n_threads)
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef const double* w = weight_pointer(weight)
    cdef Py_ssize_t i
    for i in prange(y.shape[0], nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads, 2 * y.shape[0])):
        gpair[i, 0] = <float> times_weight(raw[i] - y[i], w, i)
        gpair[i, 1] = <float> times_weight(1.0, w, i)


def logistic_gradient(const label_t[::1] y not None,
                      const double[::1] raw not None,
                      const double[::1] weight,
                      float[:, ::1] gpair not None,
                      int n_threads):
    n_threads = check_n_threads(n_threads)
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef const double* w = weight_pointer(weight)
    cdef Py_ssize_t i
    cdef double p
    for i in prange(y.shape[0], nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads,
                                                 ELEMENTWISE_WORK * y.shape[0])):
        p = sigmoid(raw[i])
        gpair[i, 0] = <float> times_weight(p - y[i], w, i)
        gpair[i, 1] = <float> times_weight(floored_hessian(p * (1.0 - p)),
                                           w, i)


def softmax_gradient(const int32_t[::1] y not None,         # IN (n,) class index
                     const double[:, ::1] raw not None,     # IN (n, K)
                     const double[::1] weight,     # IN (n,)
                     float[:, :, ::1] gpair not None,       # OUT (K, n, 2)
                     int n_threads):
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n = y.shape[0], K = raw.shape[1]
    _check(n, raw, weight)
    _check_pairs(gpair.shape[2])
    cdef const double* w = weight_pointer(weight)
    if gpair.shape[0] != K or gpair.shape[1] != n:
        raise ValueError("gpair must be (n_classes, n_rows, 2)")
    labels = np.asarray(y)
    if n and (labels.min() < 0 or labels.max() >= K):
        raise ValueError("class index outside [0, n_classes)")
    cdef Py_ssize_t i, k
    cdef double top, total, p, curvature
    cdef double* shifted = NULL   # exp(raw[i, k] - top), one row, per thread
    cdef int out_of_memory = 0
    # gpair is (K, n, 2): each class's pairs contiguous, as its tree's
    # histogram builder reads them
    with nogil, parallel(num_threads=threads_for_work(
            n_threads, ELEMENTWISE_WORK * n * K)):
        shifted = <double*> malloc(K * sizeof(double))
        for i in prange(n, schedule="static"):
            if shifted == NULL:
                out_of_memory = 1
                continue
            # the row's largest margin subtracted first: every exp(.) is
            # <= 1, so no overflow, and the probabilities are unchanged
            top = raw[i, 0]
            for k in range(1, K):
                top = fmax(top, raw[i, k])
            total = 0.0
            for k in range(K):   # each exponential once (they are K per row)
                shifted[k] = exp(raw[i, k] - top)
                total = total + shifted[k]
            for k in range(K):
                p = shifted[k] / total
                gpair[k, i, 0] = <float> times_weight(p - (k == y[i]), w, i)
                curvature = 2.0 * p * (1.0 - p)
                # fmax(curvature, HESSIAN_FLOOR), inline (the floor for NaN)
                gpair[k, i, 1] = <float> times_weight(
                    curvature if curvature > HESSIAN_FLOOR
                    else HESSIAN_FLOOR, w, i)
        free(shifted)
    if out_of_memory:
        raise MemoryError("no memory for a row of class probabilities")


# --------------------------------------------------------------------------
# Element-wise objectives: one kernel, the loss picked by a code. Each case
# writes the (unweighted) derivatives of the loss ``l(y, m)`` in the margin
# ``m``; ``param`` is the objective's parameter (huber_slope, quantile alpha,
# max_delta_step of poisson, tweedie_variance_power) and unused otherwise.
# --------------------------------------------------------------------------

cdef enum ElementwiseLoss:
    LOSS_SQUARED_LOG_ERROR = 1  # l = 1/2 (log1p(m) - log1p(y))^2, m > -1
    LOSS_PSEUDO_HUBER_ERROR = 2  # l = s^2 (sqrt(1 + ((m - y)/s)^2) - 1)
    LOSS_ABSOLUTE_ERROR = 3  # l = |m - y|; h = 1 (leaves re-fitted)
    LOSS_QUANTILE_ERROR = 4  # pinball loss at alpha; h = 1 (leaves re-fitted)
    LOSS_HINGE = 5  # l = max(0, 1 - (2y - 1) m); h = 1 on the margin
    LOSS_POISSON = 6  # l = exp(m) - y m; h = exp(m + max_delta_step)
    LOSS_GAMMA = 7  # l = y exp(-m) + m
    LOSS_TWEEDIE = 8  # l = -y e^{(1-r)m}/(1-r) + e^{(2-r)m}/(2-r)
    LOSS_SQUARED_ERROR = 9  # l = 1/2 (m - y)^2
    LOSS_LOGISTIC = 10  # l = log(1 + e^m) - y m

# The codes, for Python callers of elementwise_gradient.
LOSS_CODES = {
    "squared_log_error": LOSS_SQUARED_LOG_ERROR,
    "pseudo_huber_error": LOSS_PSEUDO_HUBER_ERROR,
    "absolute_error": LOSS_ABSOLUTE_ERROR,
    "quantile_error": LOSS_QUANTILE_ERROR,
    "hinge": LOSS_HINGE,
    "poisson": LOSS_POISSON,
    "gamma": LOSS_GAMMA,
    "tweedie": LOSS_TWEEDIE,
    "squared_error": LOSS_SQUARED_ERROR,
    "logistic": LOSS_LOGISTIC,
}

# hinge outside the margin: a positive hessian too small to matter (the
# smallest normal float32, so it survives the cast to the float32 pair)
cdef double HINGE_FLAT_HESSIAN = 1.1754943508222875e-38  # FLT_MIN
# the squared log error's hessian (1 - r) / (m + 1)^2 turns negative for
# r > 1: floored, as XGBoost does
cdef double SQUARED_LOG_HESSIAN_FLOOR = 1e-6


cdef struct GradientPair:
    double g
    double h


cdef inline GradientPair elementwise_pair(int loss, double y, double m,
                                          double param) noexcept nogil:
    cdef double r, z, p, sign
    cdef GradientPair out
    # inlined into the one prange loop of elementwise_gradient: the loss
    # code is the same for every row, so this chain of tests is perfectly
    # predicted and costs next to nothing against the exp and log
    if loss == LOSS_SQUARED_LOG_ERROR:
        r = log1p(m) - log1p(y)
        out.g = r / (m + 1.0)
        out.h = fmax((1.0 - r) / ((m + 1.0) * (m + 1.0)),
                    SQUARED_LOG_HESSIAN_FLOOR)
    elif loss == LOSS_PSEUDO_HUBER_ERROR:
        r = (m - y) / param
        z = sqrt(1.0 + r * r)
        out.g = (m - y) / z
        out.h = 1.0 / (z * z * z)
    elif loss == LOSS_ABSOLUTE_ERROR:
        out.g = (m > y) - (m < y)
        out.h = 1.0
    elif loss == LOSS_QUANTILE_ERROR:
        # a row on its prediction (y == m) counts as above it, 1 - alpha, as
        # XGBoost and LightGBM: at the first round, whose margin is a label
        # quantile, that decides whether any split has a gain
        out.g = -param if y > m else 1.0 - param
        out.h = 1.0
    elif loss == LOSS_HINGE:
        sign = 2.0 * y - 1.0
        if sign * m < 1.0:
            out.g = -sign
            out.h = 1.0
        else:
            out.g = 0.0
            out.h = HINGE_FLAT_HESSIAN
    elif loss == LOSS_POISSON:
        out.g = exp(m) - y
        out.h = exp(m + param)
    elif loss == LOSS_GAMMA:
        out.g = 1.0 - y * exp(-m)
        out.h = y * exp(-m)
    elif loss == LOSS_TWEEDIE:
        out.g = -y * exp((1.0 - param) * m) + exp((2.0 - param) * m)
        out.h = (-y * (1.0 - param) * exp((1.0 - param) * m)
                + (2.0 - param) * exp((2.0 - param) * m))
    elif loss == LOSS_SQUARED_ERROR:
        out.g = m - y
        out.h = 1.0
    else:  # LOGISTIC
        p = sigmoid(m)
        out.g = p - y
        out.h = fmax(p * (1.0 - p), HESSIAN_FLOOR)
    return out


def elementwise_gradient(const double[::1] y not None,        # IN (n,)
                         const double[::1] raw not None,      # IN (n,)
                         const double[::1] weight,   # IN (n,)
                         float[:, ::1] gpair not None,        # OUT (n, 2)
                         *, int loss, double param, int n_threads):
    """Gradient pairs of the element-wise loss ``loss`` (a code of
    ``LOSS_CODES``) with parameter ``param``, multiplied by ``weight``.
    After the arrays, keyword-only."""
    n_threads = check_n_threads(n_threads)
    if not LOSS_SQUARED_LOG_ERROR <= loss <= LOSS_LOGISTIC:
        raise ValueError(f"unknown element-wise loss code {loss}")
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef const double* w = weight_pointer(weight)
    cdef Py_ssize_t i
    cdef GradientPair pair
    for i in prange(y.shape[0], nogil=True, schedule="static",
                    num_threads=threads_for_work(n_threads,
                                                 ELEMENTWISE_WORK * y.shape[0])):
        pair = elementwise_pair(loss, y[i], raw[i], param)
        gpair[i, 0] = <float> times_weight(pair.g, w, i)
        gpair[i, 1] = <float> times_weight(pair.h, w, i)


def pair_magnitudes(const float[:, ::1] gpair not None, int n_threads, *,
                    bint least_hessian=False):
    """``max |g|`` and ``max |h|`` of gradient pairs ``gpair`` (n_rows, 2),
    each a float, NaN when one of its column is NaN (0.0 for no row): the
    round's gradient check (``limits.check_gradients``) in one parallel
    pass, whose maxima the histogram finders' fixed-point scales take
    (``FixedPointGradients``) instead of a pass of their own. Blocks of
    rows keep their own maxima and NaN flags; maxima of maxima are exact,
    so the result does not depend on the threads.

    With ``least_hessian``, a third float: the least h (signed; +inf for
    no row, meaningless when h holds a NaN), which tells the histogram
    finders whether every fixed-point hessian is positive
    (``FixedPointGradients.hessians_positive``) without another pass."""
    n_threads = check_n_threads(n_threads)
    _check_pairs(gpair.shape[1])
    cdef Py_ssize_t n = gpair.shape[0]
    cdef Py_ssize_t n_blocks = (n + MAGNITUDE_BLOCK - 1) // MAGNITUDE_BLOCK
    block_max = np.zeros((n_blocks, 2), dtype=np.float32)
    block_nan = np.zeros((n_blocks, 2), dtype=np.uint8)
    block_least = np.empty(n_blocks, dtype=np.float32)
    cdef float[:, ::1] maxima = block_max
    cdef uint8_t[:, ::1] nans = block_nan
    cdef float[::1] leasts = block_least
    cdef Py_ssize_t block, i
    cdef float largest_g, largest_h, least_h, g, h
    cdef uint8_t nan_g, nan_h
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads, 2 * n)):
        largest_g = 0.0
        largest_h = 0.0
        least_h = INFINITY
        nan_g = 0
        nan_h = 0
        for i in range(block * MAGNITUDE_BLOCK,
                       min((block + 1) * MAGNITUDE_BLOCK, n)):
            g = fabsf(gpair[i, 0])
            h = fabsf(gpair[i, 1])
            nan_g = nan_g | (g != g)
            nan_h = nan_h | (h != h)
            largest_g = g if g > largest_g else largest_g
            largest_h = h if h > largest_h else largest_h
            least_h = gpair[i, 1] if gpair[i, 1] < least_h else least_h
        maxima[block, 0] = largest_g
        maxima[block, 1] = largest_h
        leasts[block] = least_h
        nans[block, 0] = nan_g
        nans[block, 1] = nan_h
    found = _blocks_combined(block_max, block_nan)
    if least_hessian:
        # the least of the blocks' leasts: exact, whatever the threads
        return found + (float(block_least.min(initial=INFINITY)),)
    return found


def _blocks_combined(block_max, block_nan):
    """``pair_magnitudes``' (max |g|, max |h|) from its blocks' maxima and
    NaN flags: the maxima of the maxima (exact), NaN where a block saw
    one, 0.0 for no block."""
    column_nan = block_nan.any(axis=0)
    column_max = block_max.max(axis=0, initial=0.0)
    return tuple(float("nan") if column_nan[c] else float(column_max[c])
                 for c in range(2))


def largest_magnitude(const float[::1] values not None, int n_threads):
    """``max |values|`` as a float, NaN when one of them is NaN (0.0 for
    none): the bound of a round's gradient check (``limits.check_gradients``)
    in one parallel pass, where ``np.max`` and ``np.min`` took two. Each
    block of values keeps its own maximum and NaN flag; the maximum of
    the maxima is exact, so the result does not depend on the threads."""
    n_threads = check_n_threads(n_threads)
    cdef Py_ssize_t n = values.shape[0]
    cdef Py_ssize_t n_blocks = (n + MAGNITUDE_BLOCK - 1) // MAGNITUDE_BLOCK
    if n_blocks == 0:
        return 0.0
    block_max = np.zeros(n_blocks, dtype=np.float32)
    block_nan = np.zeros(n_blocks, dtype=np.uint8)
    cdef float[::1] maxima = block_max
    cdef uint8_t[::1] nans = block_nan
    cdef Py_ssize_t block, i
    cdef float largest, magnitude
    cdef uint8_t nan
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=threads_for_work(n_threads, n)):
        largest = 0.0
        nan = 0
        for i in range(block * MAGNITUDE_BLOCK,
                       min((block + 1) * MAGNITUDE_BLOCK, n)):
            magnitude = fabsf(values[i])
            nan = nan | (magnitude != magnitude)
            largest = magnitude if magnitude > largest else largest
        maxima[block] = largest
        nans[block] = nan
    if block_nan.any():
        return float("nan")
    return float(block_max.max())
