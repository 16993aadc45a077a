"""Per-row gradients and hessians of the built-in objectives.

Each kernel writes float32 pairs ``gpair[i] = (g_i, h_i)`` (already
multiplied by the sample weight) from float64 raw margins. The formulas:

- squared error, ``l = 1/2 (m - y)^2``: ``g = m - y``, ``h = 1``;
- logistic, ``p = sigmoid(m)``: ``g = p - y``, ``h = max(p (1 - p), eps)``;
- softmax over K classes, ``p = softmax(m)``: ``g_k = p_k - [y == k]``,
  ``h_k = max(2 p_k (1 - p_k), eps)``. The factor 2 makes the diagonal an
  upper bound of the softmax Hessian, so the K trees of a round, fitted
  independently, do not overshoot together; it is also what XGBoost uses,
  so tuned parameters (min_child_weight) carry over.
"""

import numpy as np

from skboost._openmp_helpers import check_n_threads

cimport cython

from cython.parallel cimport prange
from libc.stdint cimport int32_t
from libc.math cimport exp, fmax

cdef double HESSIAN_FLOOR = 1e-16


cdef inline double sigmoid(double m) noexcept nogil:
    cdef double e
    if m >= 0:
        return 1.0 / (1.0 + exp(-m))
    e = exp(m)
    return e / (1.0 + e)


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
        if a.shape[0] != n:
            raise ValueError("all per-row arrays must have the same length")


def squared_error_gradient(const double[::1] y not None,        # IN (n,)
                           const double[::1] raw not None,      # IN (n,)
                           const double[::1] weight not None,   # IN (n,)
                           float[:, ::1] gpair not None,        # OUT (n, 2)
                           int n_threads):
    check_n_threads(n_threads)
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef Py_ssize_t i
    for i in prange(y.shape[0], nogil=True, schedule="static",
                    num_threads=n_threads):
        gpair[i, 0] = <float> ((raw[i] - y[i]) * weight[i])
        gpair[i, 1] = <float> weight[i]


def logistic_gradient(const double[::1] y not None,
                      const double[::1] raw not None,
                      const double[::1] weight not None,
                      float[:, ::1] gpair not None,
                      int n_threads):
    check_n_threads(n_threads)
    _check(y.shape[0], raw, weight, gpair)
    _check_pairs(gpair.shape[1])
    cdef Py_ssize_t i
    cdef double p
    for i in prange(y.shape[0], nogil=True, schedule="static",
                    num_threads=n_threads):
        p = sigmoid(raw[i])
        gpair[i, 0] = <float> ((p - y[i]) * weight[i])
        gpair[i, 1] = <float> (fmax(p * (1.0 - p), HESSIAN_FLOOR) * weight[i])


def softmax_gradient(const int32_t[::1] y not None,         # IN (n,) class index
                     const double[:, ::1] raw not None,     # IN (n, K)
                     const double[::1] weight not None,     # IN (n,)
                     float[:, :, ::1] gpair not None,       # OUT (K, n, 2)
                     int n_threads):
    check_n_threads(n_threads)
    cdef Py_ssize_t n = y.shape[0], K = raw.shape[1]
    _check(n, raw, weight)
    _check_pairs(gpair.shape[2])
    if gpair.shape[0] != K or gpair.shape[1] != n:
        raise ValueError("gpair must be (n_classes, n_rows, 2)")
    labels = np.asarray(y)
    if n and (labels.min() < 0 or labels.max() >= K):
        raise ValueError("class index outside [0, n_classes)")
    cdef Py_ssize_t i, k
    cdef double top, total, p
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        top = raw[i, 0]
        for k in range(1, K):
            top = fmax(top, raw[i, k])
        total = 0.0
        for k in range(K):
            total = total + exp(raw[i, k] - top)
        for k in range(K):
            p = exp(raw[i, k] - top) / total
            gpair[k, i, 0] = <float> ((p - (k == y[i])) * weight[i])
            gpair[k, i, 1] = <float> (
                fmax(2.0 * p * (1.0 - p), HESSIAN_FLOOR) * weight[i])
