"""Level-wise histogram finders on presorted columns, with exact
fixed-point sums: the approximate method with *local* proposals, and the
column-wise histogram scan of sparse input (``"hist"``, global
``"approx"``).

Both find every node of a batch's split in one walk of the presorted
columns, so neither builds a histogram per node of every bin: the cost of
a batch is linear in the stored entries.
"""

import numpy as np

from .._approx import entry_codes, local_histograms, propose_cuts_flat
from .._column_scan import (BinnedColumns, CodeBlocks,
                            find_best_splits_columns,
                            find_best_splits_groups)
from .._context import SplitContext
from .._hist_split import find_best_splits_hist
from .._histogram import quantize_gradients
from .._sparse import SparseRows
from ..binning import (HistogramLayout, ZeroBlocks, has_missing_values,
                       value_bin_caps)
from ..splits import SplitBatch
from .base import NodeTable
from .categorical import CategoricalSplits, merge_splits
from .hist import weighted_hessians
from .level import LevelFinder

_SUMS = {"sums": (np.int64, (2,))}   # per node: exact fixed-point totals


class FixedPointLevelFinder(LevelFinder):
    """A level-wise finder on fixed-point gradient sums: each node's exact
    totals, children's from their parent's and the left child's.

    Parameters
    ----------
    X : ndarray (float32) or SparseRows
    sorted_columns : SortedColumns
    params : TreeParams
    n_threads : int
    weight : ndarray of shape (n_rows,) or None
    n_categories : ndarray of shape (n_features,), default=None
        Categories of each categorical feature (values: category codes), 0
        for the numeric ones: their splits come from histograms with one
        bin per category (``CategoricalSplits``).
    """

    def __init__(self, X, sorted_columns, params, n_threads, weight=None,
                 n_categories=None):
        super().__init__(X, n_threads,
                         track_leaves=params.grow_policy == "lossguide")
        self.sorted = sorted_columns
        self.params = params
        self.fit_context = SplitContext.from_params(params, n_threads)
        self.weight = weight
        self.categories = CategoricalSplits.create(sorted_columns,
                                                   n_categories, params,
                                                   n_threads)
        self.table = NodeTable(_SUMS)

    def start_tree(self, gpair, active):
        self.quantized, self.scales = quantize_gradients(
            gpair, self.weight, active.view(np.uint8), self.n_threads)
        self.context = self.fit_context.with_scales(*self.scales)
        self.hess = weighted_hessians(gpair, self.weight, active)
        self._start_rows(active)
        sums = self.quantized[active].sum(axis=0)
        self.table["sums"][0] = sums
        G, H = sums / self.scales
        return G, H

    def find_splits(self, batch):
        self._select_slots(batch.nodes)
        cats = self.categories
        allowed = batch.allowed
        sums = self.table["sums"][batch.nodes]
        records = self._find_numeric(
            sums, allowed if cats is None else cats.numeric_allowed(allowed),
            batch.constraint_arguments())
        left_sets = None
        if cats is not None:
            records, left_sets = merge_splits(records, cats.best_splits(
                self.row_slot, allowed, self.quantized, self.scales,
                bounds=batch.bounds))
        return SplitBatch(records, batch.G, batch.H, left_sets)

    def _children_made(self, nodes, splits, left, right):
        r = splits.records
        t = self.table
        t.reserve(int(right.max()) + 1)
        left_sums = np.column_stack([r["Gq_left"], r["Hq_left"]])
        t["sums"][right] = t["sums"][nodes] - left_sums
        t["sums"][left] = left_sums


class LocalApproxFinder(FixedPointLevelFinder):
    """The approximate algorithm with *local* proposals
    (``tree_method="approx", approx_proposal="local"``): every node's
    candidate cuts are re-proposed from its own rows' hessians.

    One walk of each feature's presorted block proposes every node's cuts
    and fills its histogram (``_approx.local_histograms``); the histogram
    scan finds the splits and the rows move by comparing their values to
    the chosen thresholds. Children's cuts differ from their parent's, so
    there is no histogram subtraction.

    Parameters
    ----------
    As ``FixedPointLevelFinder``, plus ``max_bin`` (int).
    """

    def __init__(self, X, sorted_columns, params, max_bin, n_threads,
                 weight=None, n_categories=None):
        super().__init__(X, sorted_columns, params, n_threads, weight=weight,
                         n_categories=n_categories)
        caps = value_bin_caps(max_bin, np.diff(sorted_columns.col_ptr)
                              < sorted_columns.n_rows)
        if isinstance(X, SparseRows):
            # no more bins than distinct values: a node's histogram holds
            # every bin of every feature, too many for wide sparse data
            caps = np.clip(distinct_values(sorted_columns), 2, caps)
        self.bin_ptr = np.zeros(caps.shape[0] + 1, dtype=np.int64)
        np.cumsum(caps + 1, out=self.bin_ptr[1:])

    def _find_numeric(self, sums, allowed, constraints):
        """Best split of each open node: its own cuts and histogram
        (``constraints``: the kernel's monotone arguments)."""
        hist, thresholds = local_histograms(self.sorted, self.quantized,
                                            self.hess, self.row_slot, sums,
                                            self.bin_ptr,
                                            n_threads=self.n_threads)
        return find_best_splits_hist(hist, sums, self.bin_ptr, thresholds,
                                     allowed, context=self.context,
                                     **constraints)


class ColumnScanFinder(FixedPointLevelFinder):
    """Histogram splits on presorted columns, for sparse input
    (``tree_method="hist"``, or ``"approx"`` with global proposals).

    A dense bin matrix, histograms of every bin for every node and the
    subtraction trick all cost O(n_rows x n_features) or O(n_bins) per node,
    hopeless for wide sparse data. Here each stored entry has its bin
    (``BinnedColumns``), and one walk of the presorted columns per batch
    finds every node's best split (``find_best_splits_columns``), with the
    missing (absent) values' statistics recovered from the node totals: the
    cost is linear in the stored entries. The splits are those the
    histogram finder would choose on the same bins.

    When absent entries are missing (the default), the entries' bins are
    kept grouped by the level's nodes (``CodeBlocks``, the exact finder's
    ``NodeBlocks``): a node's walk reads its own entries contiguously, and
    the entries of finished leaves drop out (``find_best_splits_groups``,
    the same splits). Absent entries read as 0.0 walk whole columns
    (``find_best_splits_columns``), whose zero blocks have no group.

    Parameters
    ----------
    As ``FixedPointLevelFinder``, plus:

    mapper : BinMapper or None
        Fitted cuts for ``"hist"``; None re-proposes hessian-weighted cuts
        for every tree (``"approx"``), needing ``max_bin``.
    max_bin : int
    """

    def __init__(self, X, sorted_columns, params, n_threads, weight=None,
                 mapper=None, max_bin=256, n_categories=None):
        super().__init__(X, sorted_columns, params, n_threads, weight=weight,
                         n_categories=n_categories)
        self.has_missing = has_missing_values(sorted_columns)
        self.max_bins = value_bin_caps(max_bin, self.has_missing)
        # absent entries read as 0.0: the proposals see each feature's zeros
        # as one weighted entry
        self.zero_blocks = (ZeroBlocks(sorted_columns)
                            if sorted_columns.zero_absent else None)
        self.propose = mapper is None
        self._proposed_for = None   # (hessians, active rows) of the cuts
        self.code_blocks = None     # the bins grouped by node, if grouped
        # rows routed from the groups (numeric splits, absent = missing)
        # also tell each row's leaf, so the margins need no prediction
        self.routes_from_groups = (not sorted_columns.zero_absent
                                   and self.categories is None)
        self.track_leaves = self.track_leaves or self.routes_from_groups
        if not self.propose:
            self._set_cuts(HistogramLayout(mapper.cuts_, mapper.has_missing_))

    def _set_cuts(self, layout):
        # the old codes go before the new arrive
        self.binned = self.code_blocks = None
        # the bin of 0.0 in each feature (the zero block's, if any)
        zero_codes = np.bincount(
            np.repeat(np.arange(self.sorted.n_features),
                      np.diff(layout.cut_ptr))[layout.flat_cuts <= 0.0],
            minlength=self.sorted.n_features)
        self.binned = BinnedColumns(
            self.sorted, entry_codes(self.sorted, layout.flat_cuts,
                                     layout.cut_ptr, self.n_threads),
            layout.bin_ptr, zero_codes)
        if not self.sorted.zero_absent:
            # grouped by node: the bins live on in the groups only
            self.code_blocks = CodeBlocks(self.binned)
            self.binned = None
        self.thresholds = layout.split_thresholds

    def start_tree(self, gpair, active):
        """Start a tree (re-proposing the cuts first for approx)."""
        if self.propose and (self._proposed_for is None or not (
                np.array_equal(gpair[:, 1], self._proposed_for[0])
                and np.array_equal(active, self._proposed_for[1]))):
            self._proposed_for = (gpair[:, 1].copy(), active.copy())
            self._propose_cuts(weighted_hessians(gpair, self.weight, active))
        G, H = super().start_tree(gpair, active)
        if self.code_blocks is not None:
            self.code_blocks.blocks.start(self.row_slot, 1, self.n_threads)
        return G, H

    def _slots_changed(self):
        if self.code_blocks is not None:
            self.code_blocks.blocks.start(
                self.row_slot, self.slot_node.shape[0], self.n_threads)

    def _route(self, level, n_next, find_next):
        if self.routes_from_groups:
            self._route_from_groups(level, n_next)
        else:
            self._move_rows_by_value(level, n_next)
        if self.code_blocks is not None and n_next and find_next:
            # the groups follow the rows to their children's slots
            self.code_blocks.blocks.split(self.row_slot, level.left_slot,
                                          n_next, self.n_threads)

    def _propose_cuts(self, hess):
        columns = self.sorted
        if self.zero_blocks is not None:
            columns = self.zero_blocks.columns
            hess = self.zero_blocks.weights(hess)
        flat, cut_ptr = propose_cuts_flat(columns, hess, self.max_bins,
                                          self.n_threads)
        self._set_cuts(HistogramLayout.from_flat(flat, cut_ptr,
                                                 self.has_missing))

    def _route_from_groups(self, level, n_next):
        """Rows to their children from the split features' groups, by
        bin (no lookup of a row's value in the CSR rows): bins up to the
        split's go left, as the values below its threshold do."""
        tracked = self.row_leaf is not None
        self.code_blocks.blocks.route_rows(
            self.row_slot, level.feature, level.split_bin + 0.5,
            level.default_left, level.left_slot, n_next=n_next,
            n_threads=self.n_threads,
            slot_node=self.slot_node.astype(np.int32) if tracked else None,
            row_leaf=self.row_leaf)

    def _find_numeric(self, sums, allowed, constraints):
        if self.code_blocks is not None:
            return find_best_splits_groups(
                self.code_blocks, self.thresholds, self.quantized, sums,
                allowed, context=self.context, **constraints)
        return find_best_splits_columns(
            self.binned, self.thresholds, self.row_slot, self.quantized, sums,
            allowed, context=self.context, **constraints)


def distinct_values(columns):
    """Number of distinct present values of each presorted column."""
    values = np.asarray(columns.values)
    col_ptr = np.asarray(columns.col_ptr)
    new = np.ones(values.shape[0], dtype=bool)
    new[1:] = values[1:] != values[:-1]
    sizes = np.diff(col_ptr)
    new[col_ptr[:-1][sizes > 0]] = True   # each column's first entry
    feature = np.repeat(np.arange(columns.n_features), sizes)
    return np.bincount(feature[new], minlength=columns.n_features)
