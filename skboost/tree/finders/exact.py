"""The sparsity-aware exact greedy finder (``tree_method="exact"``,
paper Algorithms 1 and 3), dense or sparse input.

The presorted blocks are kept grouped by the batch's nodes
(``_node_blocks.NodeBlocks``); each node's group of each feature is walked
(``_exact_scan.find_best_splits``), and rows move to their children's slots
from the split features' groups, with no lookup of a row's value
(``NodeBlocks.route_rows``). With categorical features, or absent entries
read as 0.0, rows move by their values instead (``apply_level_splits``).
"""

import numpy as np

from .._context import SplitContext
from .._exact_scan import find_best_splits, root_sums
from .._node_blocks import NodeBlocks
from ..binning import has_missing_values
from ..splits import SplitBatch
from .categorical import CategoricalSplits, merge_splits
from .level import LevelFinder


class ExactFinder(LevelFinder):
    """Exact greedy splits over presorted blocks grouped by node.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    sorted_columns : SortedColumns
        Presorted blocks of ``X`` (see ``_presort.py``).
    params : TreeParams
    n_threads : int
    weight : ndarray of shape (n_rows,), float64, default=None
        Sample weights, applied inside the float64 sums (gradient pairs are
        unweighted); None for unit weights.
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (values: category codes), 0
        for the numeric ones: their splits come from histograms over their
        codes (``CategoricalSplits``), the numeric ones' from the exact
        scan.
    """

    def __init__(self, X, sorted_columns, params, n_threads, weight=None,
                 n_categories=None):
        if sorted_columns.n_rows != X.shape[0] or (
                sorted_columns.n_features != X.shape[1]):
            raise ValueError("sorted_columns does not describe X")
        self.blocks = NodeBlocks(sorted_columns)
        self.context = SplitContext.from_params(params, n_threads)
        self.weight = weight
        # XGBoost's exact method: where a node saw no missing value of its
        # split feature, missing values go right if the feature has any in
        # the training data, left if it has none (the scan's forward walk,
        # missing right, is then skipped); see _send_unseen_missing_left
        self.never_missing = ~has_missing_values(sorted_columns)
        self.categories = CategoricalSplits.create(sorted_columns,
                                                   n_categories, params,
                                                   n_threads)
        # rows move by the split features' groups (numeric splits, absent
        # entries missing), which also tells each row's leaf for free
        self.routes_from_groups = (self.categories is None
                                   and not sorted_columns.zero_absent)
        super().__init__(X, n_threads, track_leaves=(
            self.routes_from_groups or params.grow_policy == "lossguide"))

    def start_tree(self, gpair, active):
        self.gpair = gpair
        G, H = root_sums(gpair, active.view(np.uint8), self.weight)
        self.count = np.array([np.count_nonzero(active)], dtype=np.int64)
        self._start_rows(active)
        self.blocks.start(self.row_slot, 1, self.n_threads)
        if self.categories is not None:
            self.categories.start_tree(gpair, self.weight, active)
        return G, H

    def _slots_changed(self):
        n_slots = self.slot_node.shape[0]
        self.blocks.start(self.row_slot, n_slots, self.n_threads)
        slots = self.row_slot[self.row_slot >= 0]
        self.count = np.bincount(slots, minlength=n_slots).astype(np.int64)

    def find_splits(self, batch):
        self._select_slots(batch.nodes)
        cats = self.categories
        allowed = batch.allowed
        records = find_best_splits(
            self.blocks, self.gpair, self.row_slot, batch.G, batch.H,
            self.count,
            allowed if cats is None else cats.numeric_allowed(allowed),
            context=self.context, weight=self.weight,
            **batch.constraint_arguments())
        self._send_unseen_missing_left(records)
        left_sets = None
        if cats is not None:
            records, left_sets = merge_splits(records, cats.best_splits(
                self.row_slot, allowed, bounds=batch.bounds))
        return SplitBatch(records, batch.G, batch.H, left_sets)

    def _send_unseen_missing_left(self, records):
        """Numeric splits on a feature with no missing value in the training
        data send missing values left (the scan sends them right where the
        node had none): XGBoost's exact convention, so that a missing value
        at prediction goes where XGBoost sends it."""
        split = records["feature"] >= 0
        never = np.zeros(split.shape[0], dtype=bool)
        never[split] = self.never_missing[records["feature"][split]]
        records["default_left"][never] = 1

    def _route(self, level, n_next, find_next):
        if self.routes_from_groups:
            # the split features' groups hold the values: no row lookups
            self.count = self.blocks.route_rows(
                self.row_slot, level.feature, level.threshold,
                level.default_left, level.left_slot, n_next=n_next,
                n_threads=self.n_threads,
                slot_node=self.slot_node.astype(np.int32),
                row_leaf=self.row_leaf)
        else:
            self.count = self._move_rows_by_value(level, n_next)
        if n_next and find_next:
            self.blocks.split(self.row_slot, level.left_slot, n_next,
                              self.n_threads)
