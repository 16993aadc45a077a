"""The finders' total order on split candidates, on records.

Every finder keeps, per node, the best of its candidates under
``_common.is_better``: higher gain, then lower feature index, then lower
threshold. Two finders' bests of the same nodes (a numeric finder's and the
categorical one's, ``finders.categorical.merge_splits``) are merged under
that same order, here, rather than by a second implementation of it.
"""

import numpy as np

from ._common cimport SplitCandidate, int32_t, is_better, uint8_t

from .splits import SPLIT_RECORD


def better_of(a, b):
    """Where ``b``'s candidate beats ``a``'s, node by node.

    Parameters
    ----------
    a, b : ndarray of shape (n_nodes,), dtype ``splits.SPLIT_RECORD``
        Two finders' best splits of the same nodes.

    Returns
    -------
    b_wins : ndarray of shape (n_nodes,), bool
        True where ``b`` holds a split (``feature >= 0``) that is better
        than ``a``'s under ``_common.is_better``; a node where ``a`` holds
        none (``feature < 0``) goes to any split of ``b``.
    """
    a, b = _records("a", a), _records("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must be of equal length, got "
                         f"{a.shape[0]} and {b.shape[0]}")
    cdef Py_ssize_t k, n = a.shape[0]
    cdef const double[::1] gain_a = np.ascontiguousarray(a["gain"])
    cdef const double[::1] gain_b = np.ascontiguousarray(b["gain"])
    cdef const int32_t[::1] feature_a = np.ascontiguousarray(a["feature"])
    cdef const int32_t[::1] feature_b = np.ascontiguousarray(b["feature"])
    cdef const double[::1] threshold_a = np.ascontiguousarray(a["threshold"])
    cdef const double[::1] threshold_b = np.ascontiguousarray(b["threshold"])
    b_wins = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] wins = b_wins
    cdef SplitCandidate best
    # the fields were copied to contiguous columns above (a structured
    # array's fields are strided); one pass in C, a few comparisons a node
    with nogil:
        for k in range(n):
            if feature_b[k] < 0:
                continue
            # a's candidate as the best so far; "no split" (feature < 0)
            # loses to any split whatever its gain (is_better compares
            # gains first)
            best.gain = gain_a[k]
            best.feature = feature_a[k]
            best.threshold = threshold_a[k]
            wins[k] = best.feature < 0 or is_better(
                gain_b[k], feature_b[k], threshold_b[k], &best)
    return b_wins.view(bool)


def _records(name, records):
    """``records`` as a 1-d array of SPLIT_RECORD (validated)."""
    records = np.asarray(records)
    if records.dtype != SPLIT_RECORD or records.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of SPLIT_RECORD, got "
                         f"dtype {records.dtype} and shape {records.shape}")
    return records
