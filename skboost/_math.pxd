# Scalar functions shared by the objective and ranking kernels.

from libc.math cimport exp, fabs, isnan


cdef inline double sigmoid(double m) noexcept nogil:
    """1 / (1 + exp(-m)) without overflow for large |m|: ``e / (1 + e)``
    with ``e = exp(m)`` for negative m.

    One exponential of ``-|m|`` (``-m`` or ``m``, exactly) and a select
    instead of a branch on the sign: margins change sign at random from
    row to row, and the mispredicted branch cost more than the
    exponential. The same bits as the two branches; NaN takes the
    negative side's path, as before (``-|m|`` would flip its sign bit)."""
    cdef double e
    if isnan(m):   # never taken on real margins: a predicted branch
        e = exp(m)
        return e / (1.0 + e)
    e = exp(-fabs(m))
    return (1.0 if m >= 0 else e) / (1.0 + e)
