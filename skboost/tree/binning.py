"""Histogram binning: cut points from the weighted quantile sketch, and the
layout of the flat histogram.

Each feature f has ``n_value_bins[f]`` value bins and one missing bin (its
last code). The flat histogram of a node holds, for feature f, the entries
``bin_ptr[f] .. bin_ptr[f+1]-1``: first the value bins, then the missing
bin. ``split_thresholds[bin_ptr[f] + b]`` is the tree threshold of the split
"value bins 0..b go left": the cut above bin b, or +inf for the last value
bin (all present values left, only missing values right).
"""


import numpy as np

from .._threads import map_columns
from ._binning import (bin_matrix, columns_with_nan, map_entries_to_bins,
                       map_to_bins)
from ._presorted import SortedColumns
from ._sketch import sketch_column, sketch_columns
from ._sparse import BinnedRows

# One byte per code when every feature's codes (value bins + missing bin)
# fit in it: with max_bin=256, a feature that has missing values keeps at
# most 255 value bins so that its missing code is 255.
ONE_BYTE_CODES = 256


def value_bin_caps(max_bin, has_missing):
    """Value bins allowed per feature: ``max_bin``, but 255 for a feature
    with missing values when ``max_bin=256``, so its codes fit a byte."""
    caps = np.full(has_missing.shape[0], max_bin, dtype=np.int64)
    if max_bin >= ONE_BYTE_CODES:
        caps[has_missing & (max_bin == ONE_BYTE_CODES)] = ONE_BYTE_CODES - 1
    return caps


class HistogramLayout:
    """Where each feature's bins sit, given its interior cut points.

    Attributes
    ----------
    cut_ptr : ndarray (n_features + 1,)
        Feature f's cuts are ``concatenate(cuts)[cut_ptr[f]:cut_ptr[f+1]]``.
    n_value_bins : ndarray (n_features,)
        ``len(cuts[f]) + 1``; the missing code of feature f is this number.
    bin_ptr : ndarray (n_features + 1,)
        Feature f owns histogram bins ``bin_ptr[f] .. bin_ptr[f+1]-1``
        (value bins, then the missing bin).
    split_thresholds : ndarray (n_bins,)
        Tree threshold of "value bins 0..b go left": the cut above bin b, or
        +inf for the last value bin; NaN in the missing bin's slot.
    code_dtype : numpy dtype
        uint8 when every code that can occur fits a byte, else uint16. A
        feature's missing code occurs only if it has missing values.

    Parameters
    ----------
    cuts : list of ndarray
        Interior cut points of each feature.
    has_missing : ndarray of bool, default=None
        Features with missing values in the data to bin (None: all).
    """

    def __init__(self, cuts, has_missing=None):
        sizes = np.array([c.shape[0] for c in cuts], dtype=np.int64)
        cut_ptr = np.zeros(len(cuts) + 1, dtype=np.int64)
        np.cumsum(sizes, out=cut_ptr[1:])
        flat = (np.concatenate(cuts).astype(np.float64, copy=False) if cuts
                else np.empty(0))
        self._build(flat, cut_ptr, has_missing)

    @classmethod
    def from_flat(cls, flat_cuts, cut_ptr, has_missing=None):
        """The layout of cuts given flat: feature f's are
        ``flat_cuts[cut_ptr[f]:cut_ptr[f+1]]`` (no per-feature arrays, for
        wide data)."""
        layout = cls.__new__(cls)
        layout._build(np.asarray(flat_cuts, dtype=np.float64),
                      np.asarray(cut_ptr, dtype=np.int64), has_missing)
        return layout

    def _build(self, flat, cut_ptr, has_missing):
        n_features = cut_ptr.shape[0] - 1
        sizes = np.diff(cut_ptr)
        self.flat_cuts = flat
        self.cut_ptr = cut_ptr
        self.n_value_bins = (sizes + 1).astype(np.int32)
        self.bin_ptr = np.zeros(n_features + 1, dtype=np.int64)
        np.cumsum(self.n_value_bins + 1, out=self.bin_ptr[1:])
        # per feature: its cuts, +inf (the last value bin), NaN (missing)
        self.split_thresholds = np.full(self.bin_ptr[-1], np.inf)
        first_cut = np.repeat(self.bin_ptr[:-1] - cut_ptr[:-1], sizes)
        self.split_thresholds[first_cut + np.arange(flat.shape[0])] = flat
        self.split_thresholds[self.bin_ptr[1:] - 1] = np.nan
        if has_missing is None:
            has_missing = np.ones(n_features, dtype=bool)
        largest_code = (int(np.max(self.n_value_bins - 1 + has_missing))
                        if n_features else 0)
        self.code_dtype = np.uint8 if largest_code < ONE_BYTE_CODES else np.uint16


class BinMapper:
    """Learns per-feature cut points and maps values to bin codes.

    Parameters
    ----------
    max_bin : int
        Maximum number of value bins per feature.
    """

    def __init__(self, max_bin=256):
        self.max_bin = max_bin

    def fit(self, X, weight=None, n_threads=1, n_categories=None):
        """Cut points of every column of float32 X (NaN = missing).

        Features are sketched independently (``sketch_columns``: a chunk
        of rows at a time, each feature's summary in turn), in up to
        ``n_threads`` groups of features side by side (the sort and the
        sketch's loops release the GIL); the result does not depend on
        ``n_threads``. A categorical feature (``n_categories[f] > 0``,
        values that are category codes) gets one value bin per category,
        whatever ``max_bin``: cuts at 0.5, 1.5, ...
        """
        missing = _columns_with_nan(X, n_threads)
        categorical = (np.zeros(X.shape[1], dtype=bool) if n_categories is None
                       else np.asarray(n_categories) > 0)
        caps = value_bin_caps(self.max_bin, missing)
        numeric = np.flatnonzero(~categorical)
        # contiguous groups of features, one per thread: each group's pass
        # reads X's rows once (the features of a group share the chunks)
        n_groups = max(1, min(n_threads, numeric.shape[0]))
        groups = [g for g in np.array_split(numeric, n_groups) if g.size]

        def sketch(group):
            summaries = sketch_columns(X, group, caps[group], weight)
            return [np.asarray(s.cut_points(int(caps[f])), dtype=np.float64)
                    for f, s in zip(group, summaries)]

        cuts = [None] * X.shape[1]
        for group, group_cuts in zip(groups, map_columns(
                sketch, groups, n_threads, n_rows=X.shape[0])):
            for f, c in zip(group, group_cuts):
                cuts[f] = c
        for f in np.flatnonzero(categorical):
            cuts[f] = category_cuts(n_categories[f])
        self.has_missing_ = missing
        self._set_cuts(cuts)
        return self

    def fit_columns(self, columns, weight=None, n_threads=1):
        """Cut points from presorted columns (sparse data: the stored,
        non-missing entries). A feature has missing values when some row has
        no entry, or, when absent entries are 0.0, a stored missing entry;
        its implicit zeros then count as values (``ZeroBlocks``).

        A feature with at most its cap of distinct values (of positive
        weight) gets the midpoints, as the sketch's exact summary gives
        them, all features at once; the others are sketched one by one.
        """
        self.has_missing_ = has_missing_values(columns)
        if columns.zero_absent:
            blocks = ZeroBlocks(columns)
            weight = blocks.weights(np.ones(columns.n_rows) if weight is None
                                    else weight)
            columns = blocks.columns
        col_ptr = np.asarray(columns.col_ptr)
        values = np.asarray(columns.values)
        rows = np.asarray(columns.rows)
        n_features = columns.n_features
        caps = value_bin_caps(self.max_bin, self.has_missing_)
        feature = np.repeat(np.arange(n_features), np.diff(col_ptr))
        kept = np.ones(values.shape[0], bool) if weight is None else (
            weight[rows] > 0)
        # distinct values: the first kept entry of each run of equal values
        v, f = values[kept], feature[kept]
        new = np.ones(v.shape[0], dtype=bool)
        new[1:] = (v[1:] != v[:-1]) | (f[1:] != f[:-1])
        v, f = v[new].astype(np.float64), f[new]
        n_distinct = np.bincount(f, minlength=n_features)
        exact = n_distinct <= caps
        lo, hi = v[:-1], v[1:]
        pair = (f[:-1] == f[1:]) & exact[f[:-1]]
        with np.errstate(over="ignore", invalid="ignore"):
            mid = 0.5 * (lo[pair] + hi[pair])
        mids = np.where((lo[pair] < mid) & (mid < hi[pair]), mid, hi[pair])
        split_at = np.cumsum(np.bincount(f[:-1][pair], minlength=n_features))
        cuts = np.split(mids, split_at[:-1]) if n_features else []

        def sketch(j):
            block = slice(col_ptr[j], col_ptr[j + 1])
            w = None if weight is None else weight[rows[block]]
            summary = sketch_column(values[block], w, max_bin=int(caps[j]))
            return np.asarray(summary.cut_points(int(caps[j])),
                              dtype=np.float64)

        approximate = np.flatnonzero(~exact)
        # short columns (wide sparse data: a thousand entries each) are
        # sketched in this thread: their sketch is mostly Python, which
        # threads would only take turns at, at a cost per column
        longest = int(np.diff(col_ptr)[approximate].max(initial=0))
        for j, c in zip(approximate,
                        map_columns(sketch, approximate, n_threads,
                                    n_rows=longest)):
            cuts[j] = c
        self._set_cuts(cuts)
        return self

    def _set_cuts(self, cuts):
        self.cuts_ = cuts
        layout = HistogramLayout(cuts, getattr(self, "has_missing_", None))
        self.cut_ptr_ = layout.cut_ptr
        self.n_value_bins_ = layout.n_value_bins
        self.bin_ptr_ = layout.bin_ptr
        self.split_thresholds_ = layout.split_thresholds
        self.code_dtype_ = layout.code_dtype

    @property
    def n_bins_total(self):
        """Length of a node's flat histogram."""
        return int(self.bin_ptr_[-1])

    def transform(self, X, n_threads=1):
        """Bin codes of float32 C-ordered X, shape (n_rows, n_features)."""
        codes = np.empty(X.shape, dtype=self.code_dtype_)
        flat = np.concatenate(self.cuts_) if self.cuts_ else np.empty(0)
        map_to_bins(X, flat, self.cut_ptr_, codes, n_threads)
        return codes

    def binned(self, X, n_threads=1):
        """The ``BinnedData`` of float32 C-ordered X: ``transform``'s codes
        in both its layouts (row-major and feature-major), written in one
        pass over X where the table search runs (``_binning.bin_matrix``)."""
        flat = np.concatenate(self.cuts_) if self.cuts_ else np.empty(0)
        return bin_matrix(X, flat, self.cut_ptr_, self.bin_ptr_,
                          self.code_dtype_, n_threads)

    def transform_sparse(self, rows, n_threads=1):
        """The ``_sparse.BinnedRows`` of sparse rows (``SparseRows``): the
        code of each stored entry, as ``transform`` codes its value, and
        each feature's code of the entries not stored (its missing code,
        or its code of 0.0 when ``rows.absent_value`` is 0.0). Memory: one
        code per stored entry, never one per row and feature."""
        codes = np.empty(np.asarray(rows.indices).shape[0],
                         dtype=self.code_dtype_)
        flat = np.concatenate(self.cuts_) if self.cuts_ else np.empty(0)
        map_entries_to_bins(rows.data, rows.indices, flat, self.cut_ptr_,
                            codes, n_threads)
        if np.isnan(rows.absent_value):
            absent = self.n_value_bins_
        else:   # the number of cuts <= 0.0: the bin of 0.0
            feature = np.repeat(np.arange(len(self.cuts_)),
                                np.diff(self.cut_ptr_))
            absent = np.bincount(feature[flat <= 0.0],
                                 minlength=len(self.cuts_))
        return BinnedRows(rows, codes, self.bin_ptr_, absent)


def _columns_with_nan(X, n_threads):
    """Which columns of X hold a NaN (bool, one per column): one pass over
    the rows of a C-ordered float32 X, else a column at a time."""
    if X.dtype == np.float32 and X.flags.c_contiguous:
        return columns_with_nan(X, n_threads)
    return np.array([bool(np.isnan(X[:, f]).any())
                     for f in range(X.shape[1])], dtype=bool)


def category_cuts(n_categories):
    """Cuts giving each category code 0 .. n_categories-1 its own bin."""
    return np.arange(int(n_categories) - 1, dtype=np.float64) + 0.5


def has_missing_values(columns):
    """Features of presorted columns with at least one missing value."""
    if columns.zero_absent:
        return np.diff(columns.missing_ptr) > 0
    return np.diff(columns.col_ptr) < columns.n_rows


class ZeroBlocks:
    """Presorted columns whose absent entries are 0.0, with each feature's
    implicit zeros made one entry: value 0.0 at its place in the sorted
    block, on a virtual row ``n_rows + f`` whose weight is the weight of
    the rows the feature has no entry for. The sketch and the weighted
    proposals then see the zeros without a row per zero.

    Parameters
    ----------
    columns : SortedColumns
        With ``zero_absent``.
    """

    def __init__(self, columns):
        col_ptr = np.asarray(columns.col_ptr)
        values = np.asarray(columns.values)
        self.source = columns
        n_features = columns.n_features
        feature = np.repeat(np.arange(n_features), np.diff(col_ptr))
        self.entry_feature = feature
        self.missing_feature = np.repeat(np.arange(n_features),
                                         np.diff(columns.missing_ptr))
        # after the feature's entries <= 0 (ties: real rows first)
        at = col_ptr[:-1] + np.bincount(feature[values <= 0],
                                        minlength=n_features)
        virtual_rows = columns.n_rows + np.arange(n_features, dtype=np.int32)
        self.columns = SortedColumns(
            col_ptr + np.arange(n_features + 1),
            np.insert(values, at, np.float32(0.0)),
            np.insert(np.asarray(columns.rows), at, virtual_rows),
            columns.n_rows + n_features)

    def weights(self, row_weight):
        """Per-row weights extended by each zero block's: the total minus
        the weights of the feature's stored (present and missing) rows."""
        columns = self.source
        n_features = columns.n_features
        stored = (np.bincount(self.entry_feature,
                              weights=row_weight[columns.rows],
                              minlength=n_features)
                  + np.bincount(self.missing_feature,
                                weights=row_weight[columns.missing_rows],
                                minlength=n_features))
        zero = np.maximum(row_weight.sum() - stored, 0.0)
        return np.concatenate([row_weight, zero])
