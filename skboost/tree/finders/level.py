"""Finders that handle a batch of nodes in passes over every row: each
active row carries its node's *slot* among the batch (``row_slot``), and
one kernel call finds every slot's split (the exact scan, local proposals,
the sparse column scan) or moves every row to its child's slot.

Depth-wise, a batch is a level: after the level's splits the rows move to
their children's slots, the rows of nodes that became leaves drop out, and
the children are the next batch. Best-first (lossguide), the node to split
may not be in the current batch: the rows are then re-slotted from the
node each row is in (``row_leaf`` keeps it for rows out of the batch), at
the cost of one pass over the rows.
"""

import numpy as np

from .._partition import apply_level_splits
from .base import RowLeaves, SplitFinder


class LevelFinder(SplitFinder):
    """Row slots and their moves, shared by the level-wise finders.

    Parameters
    ----------
    X : ndarray (float32, NaN = missing) or SparseRows
        Training data (read to move rows, unless a subclass routes them
        otherwise).
    n_threads : int
    track_leaves : bool
        Keep the node of every row out of the batch (``row_leaf``): needed
        to re-slot rows (lossguide), and gives the rows' leaves for the
        margins.
    """

    def __init__(self, X, n_threads, track_leaves):
        self.X = X
        self.n_threads = n_threads
        self.track_leaves = track_leaves

    def _start_rows(self, active):
        """Every active row in the root's slot."""
        self.row_slot = np.where(active, 0, -1).astype(np.int32)
        self.slot_node = np.zeros(1, dtype=np.int64)
        self.row_leaf = (np.full(active.shape[0], -1, dtype=np.int32)
                         if self.track_leaves else None)

    def _row_nodes(self):
        """The node each active row is in (-1 for inactive rows): ``row_leaf``
        completed in place (its entries of rows in a slot are unused)."""
        slotted = self.row_slot >= 0
        self.row_leaf[slotted] = self.slot_node[self.row_slot[slotted]]
        return self.row_leaf

    def _select_slots(self, nodes):
        """Make ``nodes`` the batch, re-slotting rows if it is not already
        (lossguide only: depth-wise batches follow from the routing)."""
        if np.array_equal(nodes, self.slot_node):
            return
        if self.row_leaf is None:
            raise RuntimeError("re-slotting rows needs track_leaves")
        row_node = self._row_nodes()
        slot_of = np.full(max(int(row_node.max()), int(nodes.max())) + 1, -1,
                          dtype=np.int32)
        slot_of[nodes] = np.arange(nodes.shape[0], dtype=np.int32)
        self.row_slot = np.where(row_node >= 0, slot_of[row_node],
                                 -1).astype(np.int32)
        self.slot_node = np.array(nodes, dtype=np.int64)
        self._slots_changed()

    def _slots_changed(self):
        """Hook: the rows were re-slotted."""

    def apply_splits(self, nodes, splits, left, right, find_next):
        if not np.all(np.isin(nodes, self.slot_node)):
            self._select_slots(nodes)
        slot = _positions(self.slot_node, nodes)
        n_slots, n_split = self.slot_node.shape[0], nodes.shape[0]
        level = _LevelSplits(n_slots, slot, splits)
        level.left_slot[slot] = 2 * np.arange(n_split, dtype=np.int32)
        self._route(level, 2 * n_split, find_next)
        self._children_made(nodes, splits, left, right)
        self.slot_node = np.column_stack([left, right]).ravel()
        return self.slot_node

    def _route(self, level, n_next, find_next):
        """Move the rows of the split slots to their children's slots
        (``2 * k``, ``2 * k + 1`` for the k-th split), the others out."""
        self._move_rows_by_value(level, n_next)

    def _move_rows_by_value(self, level, n_next):
        """Route rows by reading their values of the split features in X;
        returns the number of rows in each new slot."""
        self._park_rows()
        return apply_level_splits(self.X, self.row_slot, level.feature,
                                  level.threshold, level.default_left,
                                  level.left_slot, level.left_slot + 1,
                                  n_next_slots=n_next,
                                  n_threads=self.n_threads,
                                  left_sets=level.left_sets)

    def _park_rows(self):
        """Record the node of every row of the batch before it moves, for
        the rows that leave it (when nodes are tracked)."""
        if self.row_leaf is not None:
            slotted = self.row_slot >= 0
            self.row_leaf[slotted] = self.slot_node[self.row_slot[slotted]]

    def _children_made(self, nodes, splits, left, right):
        """Hook: per-node state of the new children."""

    def finish_tree(self, tree):
        if self.row_leaf is None:
            return None
        return RowLeaves(self._row_nodes())


class _LevelSplits:
    """A level's splits laid out by slot, as the routing kernels take
    them: slots not split have feature -1 and left slot -1."""

    def __init__(self, n_slots, slot, splits):
        r = splits.records
        self.feature = np.full(n_slots, -1, dtype=np.int32)
        self.threshold = np.zeros(n_slots)
        self.default_left = np.zeros(n_slots, dtype=np.uint8)
        self.left_slot = np.full(n_slots, -1, dtype=np.int32)
        self.split_bin = np.full(n_slots, -1, dtype=np.int32)
        self.feature[slot] = r["feature"]
        self.split_bin[slot] = r["split_bin"]
        self.threshold[slot] = r["threshold"]
        self.default_left[slot] = r["default_left"]
        self.left_sets = None
        if splits.left_sets is not None:
            self.left_sets = [None] * n_slots
            for k, s in enumerate(slot):
                self.left_sets[s] = splits.left_sets[k]


def _positions(values, wanted):
    """Index in ``values`` (distinct) of each of ``wanted`` (all present)."""
    order = np.argsort(values, kind="stable")
    return order[np.searchsorted(values, wanted, sorter=order)]
