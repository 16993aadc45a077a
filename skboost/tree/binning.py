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

from ._binning import map_to_bins
from ._sketch import sketch_column

# One byte per code when every feature's codes (value bins + missing bin)
# fit in it: with max_bin=256, a feature that has missing values keeps at
# most 255 value bins so that its missing code is 255.
ONE_BYTE_CODES = 256


class BinMapper:
    """Learns per-feature cut points and maps values to bin codes.

    Parameters
    ----------
    max_bin : int
        Maximum number of value bins per feature.
    """

    def __init__(self, max_bin=256):
        self.max_bin = max_bin

    def fit(self, X, weight=None):
        """Cut points of every column of float32 X (NaN = missing)."""
        n_features = X.shape[1]
        cuts = []
        for f in range(n_features):
            column = X[:, f]
            n_bins = self.max_bin
            if n_bins >= ONE_BYTE_CODES and np.isnan(column).any():
                n_bins = ONE_BYTE_CODES - 1
            summary = sketch_column(column, weight, max_bin=n_bins)
            cuts.append(np.asarray(summary.cut_points(n_bins), dtype=np.float64))
        self._set_cuts(cuts)
        return self

    def _set_cuts(self, cuts):
        self.cuts_ = cuts
        self.cut_ptr_ = np.zeros(len(cuts) + 1, dtype=np.int64)
        np.cumsum([c.shape[0] for c in cuts], out=self.cut_ptr_[1:])
        self.n_value_bins_ = np.array([c.shape[0] + 1 for c in cuts],
                                      dtype=np.int32)
        self.bin_ptr_ = np.zeros(len(cuts) + 1, dtype=np.int64)
        np.cumsum(self.n_value_bins_ + 1, out=self.bin_ptr_[1:])
        self.split_thresholds_ = np.concatenate(
            [np.concatenate([c, [np.inf, np.nan]]) for c in cuts]
        ) if cuts else np.empty(0)
        largest_code = int(self.n_value_bins_.max()) if cuts else 0
        self.code_dtype_ = np.uint8 if largest_code < ONE_BYTE_CODES else np.uint16

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
