# Scalar functions shared by the objective and ranking kernels.

from libc.math cimport exp


cdef inline double sigmoid(double m) noexcept nogil:
    """1 / (1 + exp(-m)) without overflow for large |m|."""
    cdef double e
    if m >= 0:
        return 1.0 / (1.0 + exp(-m))
    e = exp(m)
    return e / (1.0 + e)
