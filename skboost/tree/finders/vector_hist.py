"""The histogram finder of vector-leaf trees (``multi_strategy=
"multi_output_tree"``, ``tree_method="hist"``, dense numeric input).

One tree serves the T outputs of a model: its histograms hold every
output's gradient and hessian sums per bin (``_vector_hist``), and a split
is chosen by its gain summed over the outputs. Rows, histogram pool and
subtraction work as in ``HistFinder``: each node's rows are a contiguous
slice of a ``RowPartition``, the smaller child's histogram is built, the
larger child's is its parent's minus it (exact in fixed point).
"""

import numpy as np

from .._context import SplitContext
from .._histogram import FixedPointGradients
from .._partition import RowPartition
from .._vector_hist import build_vector_histograms, find_best_vector_splits
from ..splits import SplitBatch
from .base import NodeTable
from .hist import HistogramPool, PooledHistogramFinder


class VectorHistFinder(PooledHistogramFinder):
    """Splits of vector-leaf trees found on vector histograms.

    ``start_tree`` takes the gradient pairs of every output, shape
    (n_outputs, n_rows, 2), and returns per-output totals; the SplitBatch
    of ``find_splits`` carries the left children's per-output sums
    (``left_sums``) beside its records.

    Parameters
    ----------
    binned : BinnedData
    thresholds : ndarray of shape (n_bins,)
        Tree threshold of each "split after bin".
    params : TreeParams
    n_outputs : int
    n_threads : int
    weight : ndarray of shape (n_rows,) or None
    """

    def __init__(self, binned, thresholds, params, n_outputs, n_threads,
                 weight=None):
        self.binned = binned
        self.thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        self.params = params
        self.n_outputs = int(n_outputs)
        self.n_threads = n_threads
        self.context = SplitContext.from_params(params, n_threads)
        self.weight = weight
        self.partition = None
        depth_bound = 2 ** (params.max_depth - 1) if params.max_depth else 64
        self.pool = HistogramPool(
            binned.n_bins, min(depth_bound, params.max_leaves or depth_bound,
                               1024), entry_shape=(self.n_outputs, 2))
        self.table = NodeTable({"begin": (np.int64, ()),
                                "end": (np.int64, ()),
                                "hist_row": (np.int64, ()),
                                "sums": (np.int64, (self.n_outputs, 2))})

    def start_tree(self, gpair, active):
        gpair = np.asarray(gpair)
        if gpair.shape[0] != self.n_outputs:
            raise ValueError(f"gpair must hold {self.n_outputs} outputs, got "
                             f"shape {gpair.shape}")
        self.gradients, self.scales = self._quantize(gpair, active)
        if self.partition is None:
            self.partition = RowPartition([], self.binned.n_rows)
        self.partition.reset_to_active(active, self.n_threads)
        self.pool.clear()
        n_active = self.partition.row_index.shape[0]
        root_row = self.pool.take(1)
        self.build_histograms([0], [n_active], root_row)
        first = self.binned.bin_ptr
        sums = self.pool.array[root_row[0], first[0]:first[1]].sum(axis=0)
        t = self.table
        t["begin"][0], t["end"][0] = 0, n_active
        t["hist_row"][0], t["sums"][0] = root_row[0], sums
        G, H = self._floats(sums[np.newaxis])
        return G[0], H[0]

    def _quantize(self, gpair, active):
        """(n_rows, T, 2) int64 fixed-point pairs of the tree's rows, and
        each output's scales (T, 2)."""
        qgrad = np.empty((gpair.shape[1], self.n_outputs, 2), dtype=np.int64)
        scales = np.empty((self.n_outputs, 2))
        column = np.empty((gpair.shape[1], 2), dtype=np.int64)
        for output in range(self.n_outputs):
            fixed = FixedPointGradients(np.ascontiguousarray(gpair[output]),
                                        self.weight, active, self.n_threads)
            fixed.quantized(active, self.n_threads, out=column)
            qgrad[:, output] = column
            scales[output] = fixed.scales
        return qgrad, scales

    def _floats(self, sums):
        """Fixed-point sums (n, T, 2) as float64 (G, H), each (n, T)."""
        values = sums / self.scales
        return values[..., 0], values[..., 1]

    def find_splits(self, batch):
        if batch.bounds is not None:
            raise ValueError("vector-leaf trees do not support monotone "
                             "constraints")
        sums = self.table["sums"][batch.nodes]
        records, left = find_best_vector_splits(
            self.pool.array, sums, self.binned.bin_ptr, self.thresholds,
            batch.allowed, self.scales, context=self.context,
            hist_rows=self.table["hist_row"][batch.nodes])
        G, H = self._floats(sums)
        G_left, H_left = self._floats(left)
        return SplitBatch(records, G, H, left_sums=left, G_left=G_left,
                          H_left=H_left)

    def build_histograms(self, begin, end, rows):
        """Vector histograms of the nodes owning the partition's slices
        [begin[k], end[k]) into the pool's ``rows``."""
        build_vector_histograms(self.binned, self.partition, self.gradients,
                                begin, end, self.pool.array, rows,
                                n_threads=self.n_threads)

    def _split_rows(self, begin, end, splits):
        r = splits.records
        return self.partition.split_nodes(
            self.binned, begin, end, r["feature"], r["split_bin"],
            r["default_left"], n_threads=self.n_threads)

    def _subtract(self, parent_rows, small_rows):
        self.pool.array[parent_rows] -= self.pool.array[small_rows]

    def _left_sums(self, splits):
        return splits.left_sums
