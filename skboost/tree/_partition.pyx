"""Row partitioner for level-wise growth: moves each active row to the slot of
the child its value selects, after the splits of a level are decided."""

import numpy as np

from cython.parallel cimport prange
from libc.math cimport isnan

from ._common cimport NO_FEATURE, NO_SLOT, int32_t, uint8_t


def apply_level_splits(
        const float[:, ::1] X,                 # IN (n_rows, n_features)
        int32_t[::1] row_slot,                 # IN/OUT (n_rows,)
        const int32_t[::1] split_feature,      # IN (n_slots,) -1: now a leaf
        const double[::1] split_threshold,     # IN (n_slots,)
        const uint8_t[::1] default_left,       # IN (n_slots,)
        const int32_t[::1] left_slot,          # IN (n_slots,) slot at next level
        const int32_t[::1] right_slot,         # IN (n_slots,)
        int n_next_slots, int n_threads):
    """Send every row of a split node to its child's slot; rows of nodes that
    became leaves get NO_SLOT. Returns the number of rows in each new slot."""
    cdef Py_ssize_t n_rows = X.shape[0], n_slots = split_feature.shape[0]
    _check_inputs(X, row_slot, split_feature, split_threshold, default_left,
                  left_slot, right_slot, n_next_slots)
    cdef Py_ssize_t r
    cdef int32_t slot, feature
    cdef float x
    cdef bint go_left
    for r in prange(n_rows, nogil=True, schedule="static",
                    num_threads=n_threads):
        slot = row_slot[r]
        if slot == NO_SLOT:
            continue
        feature = split_feature[slot]
        if feature == NO_FEATURE:
            row_slot[r] = NO_SLOT
            continue
        x = X[r, feature]
        if isnan(x):
            go_left = default_left[slot]
        else:
            go_left = x < split_threshold[slot]
        row_slot[r] = left_slot[slot] if go_left else right_slot[slot]
    slots = np.asarray(row_slot)
    return np.bincount(slots[slots >= 0], minlength=n_next_slots).astype(
        np.int64)


def _check_inputs(X, row_slot, split_feature, split_threshold, default_left,
                  left_slot, right_slot, n_next_slots):
    n_slots = split_feature.shape[0]
    if row_slot.shape[0] != X.shape[0]:
        raise ValueError("row_slot must have one entry per row of X")
    if not (split_threshold.shape[0] == default_left.shape[0]
            == left_slot.shape[0] == right_slot.shape[0] == n_slots):
        raise ValueError("split arrays must all have n_slots entries")
    features = np.asarray(split_feature)
    if n_slots and (features.max() >= X.shape[1] or features.min() < -1):
        raise ValueError("split_feature outside [-1, n_features)")
    slots = np.asarray(row_slot)
    if slots.size and (slots.max() >= n_slots or slots.min() < -1):
        raise ValueError("row_slot holds a slot outside [-1, n_slots)")
    split = features >= 0
    for child in (np.asarray(left_slot)[split], np.asarray(right_slot)[split]):
        if child.size and (child.min() < 0 or child.max() >= n_next_slots):
            raise ValueError("child slot outside [0, n_next_slots)")
