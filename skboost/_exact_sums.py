"""Exact sums of float64 values, mergeable across processes.

Some objectives need sums over every row of a fit (the distributions' mean
Fisher information, the position biases of debiased LambdaMART). A float
sum depends on the order of its terms, so a fit split over workers would
not get the sum one process gets. These sums are exact instead: every
finite float64 is an integer multiple of ``2**-1074``, so a sum of them is
one Python integer ``N`` (the sum times ``2**1074``). Integers add
exactly in any order; the float is ``N / 2**1074``, rounded once
(Python's integer division is correctly rounded). One process and any
number of workers, each summing its own rows, then get the same float.

The sum is vectorised: each value is split by ``frexp`` into a 53-bit
integer mantissa and an exponent, the mantissas (in two halves of at most
27 bits, so that the float64 bin sums of ``bincount`` stay exact integers)
summed per exponent, and the few dozen per-exponent sums shifted into
the Python integer.
"""

import numpy as np

# every finite float64 is a multiple of 2**-SCALE_BITS
SCALE_BITS = 1074
_MANTISSA_BITS = 53
_LOW_BITS = 26
# rows summed per bincount: |half| < 2**27 over 2**25 rows stays < 2**52
_CHUNK_ROWS = 2 ** 25


def exact_sums(values):
    """The exact sum of each column of ``values`` (1-D: one column), as
    integers in units of ``2**-1074``.

    Parameters
    ----------
    values : array-like of float, shape (n,) or (n, k)

    Returns
    -------
    sums : list of int or float
        One per column; NaN (a float) for a column with a value that is
        not finite (it stays NaN when added to other parts: the caller's
        checks of finite gradients name it).
    """
    values = np.asarray(values, dtype=np.float64)
    columns = (values[:, np.newaxis] if values.ndim == 1
               else values.reshape(values.shape[0], -1))
    return [_column_sum(columns[:, k]) if np.all(np.isfinite(columns[:, k]))
            else float("nan") for k in range(columns.shape[1])]


def _column_sum(column):
    total = 0
    for start in range(0, column.shape[0], _CHUNK_ROWS):
        total += _chunk_sum(column[start:start + _CHUNK_ROWS])
    return total


def _chunk_sum(values):
    """Sum of one chunk: value = mantissa * 2**(shift - 1074), mantissa
    an integer of at most 53 bits, shift >= 0."""
    fraction, exponent = np.frexp(values)
    mantissa = (fraction * 2.0 ** _MANTISSA_BITS).astype(np.int64)
    shift = exponent.astype(np.int64) + (SCALE_BITS - _MANTISSA_BITS)
    # subnormals: the mantissa's low bits are zero, shift them out
    low = shift < 0
    mantissa[low] >>= -shift[low]
    shift[low] = 0
    high_half = mantissa >> _LOW_BITS            # floor, also when negative
    low_half = mantissa & ((1 << _LOW_BITS) - 1)  # 0 .. 2**26 - 1
    length = int(shift.max(initial=0)) + 1
    high_sums = np.bincount(shift, weights=high_half, minlength=length)
    low_sums = np.bincount(shift, weights=low_half, minlength=length)
    total = 0
    for s in np.flatnonzero((high_sums != 0) | (low_sums != 0)).tolist():
        total += ((int(high_sums[s]) << _LOW_BITS)
                  + int(low_sums[s])) << s
    return total


def add_sums(parts):
    """The column-wise total of several ``exact_sums`` results (one per
    part of the rows)."""
    return [float("nan") if any(isinstance(s, float) for s in column)
            else sum(column) for column in zip(*parts)]


def to_float(sums):
    """``exact_sums`` as float64, each correctly rounded."""
    return np.array([total if isinstance(total, float)
                     else total / (1 << SCALE_BITS) for total in sums],
                    dtype=np.float64)
