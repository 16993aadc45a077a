"""Categorical splits for the level-wise finders (``ExactFinder``,
``LocalApproxFinder``, ``ColumnScanFinder``): dense or sparse input.

Those finders find numeric splits by their own method (the exact scan of
presorted blocks, local proposals, the column-wise histogram scan). A
categorical feature's values are category codes, and categories are
discrete: a histogram over its codes holds every split the feature has, so
scanning it is exact whatever the tree method. For every level:

1. the finder's own scan runs with the categorical features masked out
   (``numeric_allowed``);
2. ``CategoricalSplits.best_splits`` builds each open node's histograms over
   the codes of the categorical features
   (``_categorical_scan.category_histograms``, one walk of their presorted
   columns) and scans them with the categorical scan of
   ``tree_method="hist"`` (``_hist_split.find_best_splits_hist``: one
   category against the rest, or sorted partitions);
3. ``merge_splits`` keeps, for each node, the better of the two bests under
   the total order every finder uses (gain, then feature index, then
   threshold: ``_candidate_order.better_of``), and the left set of each
   categorical winner (``_categorical_scan.categorical_left_set``), which
   the row partitioner (``_partition.apply_level_splits``) and the tree
   builder take.

The statistics are the fixed-point integer sums of the histogram finders
(``_histogram.quantize_gradients``), so a categorical split is the one
``tree_method="hist"`` would choose on the same rows. Without categorical
features the finders hold ``None`` instead of a ``CategoricalSplits`` and
do no extra work.
"""

import numpy as np

from .._candidate_order import better_of
from .._categorical_scan import categorical_left_set, category_histograms
from .._context import SplitContext
from .._hist_split import find_best_splits_hist
from .._histogram import quantize_gradients


class CategoricalSplits:
    """The categorical features of a fit and the search of their splits.

    Parameters
    ----------
    sorted_columns : SortedColumns
        Presorted columns of the training data; a categorical feature's
        values are its category codes 0 .. n-1 (validated here).
    n_categories : ndarray of shape (n_features,)
        Categories of each categorical feature, 0 for the numeric ones.
    params : TreeParams
    n_threads : int
    """

    def __init__(self, sorted_columns, n_categories, params, n_threads):
        n_categories = np.asarray(n_categories, dtype=np.int64)
        if n_categories.shape != (sorted_columns.n_features,):
            raise ValueError("n_categories must have one entry per feature")
        self.columns = sorted_columns
        self.features = np.flatnonzero(n_categories > 0).astype(np.int32)
        self.n_categories = n_categories[self.features]
        self.bin_ptr = np.zeros(self.features.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.n_categories + 1, out=self.bin_ptr[1:])
        self.is_categorical = n_categories > 0
        self.params = params
        self.n_threads = n_threads
        self._check_codes()
        # every scan of a categorical histogram is categorical
        self._flags = np.ones(self.features.shape[0], dtype=np.uint8)
        self._thresholds = np.zeros((1, int(self.bin_ptr[-1])))
        self.quantized = self.scales = None

    @classmethod
    def create(cls, sorted_columns, n_categories, params, n_threads):
        """The search for these features, or None without categorical ones
        (the finders then do nothing extra)."""
        if n_categories is None or not np.any(np.asarray(n_categories) > 0):
            return None
        return cls(sorted_columns, n_categories, params, n_threads)

    def _check_codes(self):
        col_ptr = np.asarray(self.columns.col_ptr)
        values = np.asarray(self.columns.values)
        for f, n in zip(self.features, self.n_categories):
            codes = values[col_ptr[f]:col_ptr[f + 1]]
            if codes.size and (codes[0] < 0 or codes[-1] >= n or np.any(
                    codes != np.floor(codes))):
                raise ValueError(
                    f"categorical feature {f}: its values must be category "
                    f"codes, integers in [0, {n})")

    def start_tree(self, gpair, weight, active):
        """Fixed-point gradient pairs of a new tree (for finders that do not
        quantize their own: the exact one)."""
        self.quantized, self.scales = quantize_gradients(
            gpair, weight, np.ascontiguousarray(active).view(np.uint8),
            self.n_threads)

    def numeric_allowed(self, allowed):
        """The column-sampling mask with the categorical features taken
        out: what the finder's own (numeric) scan may use."""
        allowed = allowed.copy()
        allowed[:, self.is_categorical] = 0
        return allowed

    def best_splits(self, row_slot, allowed, quantized=None, scales=None,
                    bounds=None):
        """Best categorical split of each open node (slot) of a level.

        Parameters
        ----------
        row_slot : ndarray of shape (n_rows,), int32
            Slot of each row among the level's nodes, -1 for none.
        allowed : ndarray of shape (n_slots, n_features), uint8
            The column-sampling mask (all features).
        quantized, scales : ndarray, default=None
            The tree's fixed-point gradient pairs and their scales; None:
            those of ``start_tree``.
        bounds : ndarray of shape (n_slots, 2), default=None
            The nodes' monotone bounds (``driver.NodeBatch``); categorical
            features themselves are never constrained.

        Returns
        -------
        splits : ndarray of shape (n_slots,), dtype ``splits.SPLIT_RECORD``
            As ``find_best_splits_hist`` (features are the real indices),
            with ``default_left`` set as the hist finder sets it (with "the
            rest" when the node has no missing value).
        left_sets : ndarray of shape (n_slots,), object
            For each node whose best split exists, the bool array of the
            categories it sends left; None for the others.
        """
        quantized = self.quantized if quantized is None else quantized
        scales = self.scales if scales is None else scales
        n_slots = allowed.shape[0]
        hist, sums = category_histograms(
            self.columns, self.features, self.bin_ptr, row_slot, quantized,
            n_slots=n_slots, n_threads=self.n_threads)
        context = SplitContext.from_params(
            self.params, self.n_threads).with_scales(scales[0], scales[1])
        splits = find_best_splits_hist(
            hist, sums, self.bin_ptr, self._thresholds,
            np.ascontiguousarray(allowed[:, self.features]), context=context,
            categorical=self._flags, bounds=bounds)
        local = splits["feature"]
        left_sets = np.full(n_slots, None, dtype=object)
        for k in np.flatnonzero(local >= 0):
            j = local[k]
            first, missing = self.bin_ptr[j], self.bin_ptr[j + 1] - 1
            left, rest_left = categorical_left_set(
                hist[k], first_bin=first, n_categories=missing - first,
                cat_kind=int(splits["cat_kind"][k]),
                split_bin=int(splits["split_bin"][k]), context=context)
            left_sets[k] = left
            if not hist[k, missing].any():   # no missing value in the node
                splits["default_left"][k] = rest_left
        splits["feature"] = np.where(local >= 0, self.features[local],
                                     local).astype(np.int32)
        return splits, left_sets


def merge_splits(numeric, categorical):
    """Per node, the better of two bests under the finders' total order
    (``_candidate_order.better_of``: higher gain, then lower feature index;
    the features differ).

    Parameters
    ----------
    numeric : ndarray of shape (n_slots,), dtype ``splits.SPLIT_RECORD``
        The numeric finder's bests.
    categorical : tuple of (ndarray, ndarray)
        The categorical bests and their left sets
        (``CategoricalSplits.best_splits``).

    Returns
    -------
    splits : ndarray of shape (n_slots,), dtype ``splits.SPLIT_RECORD``
        ``numeric``'s records, ``categorical``'s where it wins.
    left_sets : list
        The winners' left sets (None for numeric splits).
    """
    cat_splits, cat_left_sets = categorical
    cat_wins = better_of(numeric, cat_splits)
    merged = numeric.copy()
    merged[cat_wins] = cat_splits[cat_wins]
    left_sets = [cat_left_sets[k] if wins else None
                 for k, wins in enumerate(cat_wins)]
    return merged, left_sets

