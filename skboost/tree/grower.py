"""Growing one tree: the growth loop, constraints and sampling around a
split finder.

The exact greedy finder grows depth-wise, one level at a time (paper
Algorithm 1): all open nodes of a level are searched together by one scan
per feature (``_exact.find_best_splits``), the grower decides which of them
split, and the partitioner moves rows to their children's slots. The
grower has no per-row loop.
"""

from dataclasses import dataclass

import numpy as np

from ._column_sampler import ColumnSampler
from ._exact import find_best_splits
from ._gain import leaf_scores, leaf_weights
from ._partition import apply_level_splits
from ._tree import TreeBuilder

# A split whose loss reduction is this small relative to its parent's score
# is rounding noise (the exact reduction is zero), not a split.
SPLIT_NOISE_RTOL = 1e-12


@dataclass(frozen=True)
class TreeParams:
    """Parameters of one tree's growth (see the estimators' docstrings)."""

    max_depth: int = 6  # 0: no limit
    learning_rate: float = 0.3
    gamma: float = 0.0
    min_child_weight: float = 1.0
    reg_lambda: float = 1.0
    reg_alpha: float = 0.0
    max_delta_step: float = 0.0
    colsample_bytree: float = 1.0
    colsample_bylevel: float = 1.0
    colsample_bynode: float = 1.0

    @property
    def reg(self):
        """Positional arguments of the _gain kernels."""
        return (self.reg_lambda, self.reg_alpha, self.max_delta_step,
                self.min_child_weight)


class ExactGrower:
    """Depth-wise growth driven by the sparsity-aware exact greedy finder.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, C order
        Training data, NaN for missing values (used to partition rows).
    sorted_columns : SortedColumns
        Presorted blocks of ``X`` (see ``_presort.py``).
    params : TreeParams
    n_threads : int
    rng : numpy.random.Generator
        Source of the column samples.
    weight : ndarray of shape (n_rows,), float64, default=None
        Sample weights, applied inside the float64 sums (gradient pairs are
        unweighted); None for unit weights.
    """

    def __init__(self, X, sorted_columns, params, n_threads, rng, weight=None):
        if sorted_columns.n_rows != X.shape[0] or (
                sorted_columns.n_features != X.shape[1]):
            raise ValueError("sorted_columns does not describe X")
        self.X = X
        self.sorted = sorted_columns
        self.params = params
        self.n_threads = n_threads
        self.weight = weight
        self.sampler = ColumnSampler(X.shape[1], params.colsample_bytree,
                                     params.colsample_bylevel,
                                     params.colsample_bynode, rng)

    def grow(self, gpair, active):
        """Grow one tree on unweighted gradient pairs ``gpair`` (n_rows, 2)
        float32, using the rows where ``active`` is True."""
        p = self.params
        row_slot = np.where(active, 0, -1).astype(np.int32)
        G, H = self._root_sums(gpair, active)
        count = np.array([np.count_nonzero(active)], dtype=np.int64)
        builder = TreeBuilder(G[0], H[0])
        self.sampler.start_tree()
        depth = 0
        while G.shape[0] and (p.max_depth == 0 or depth < p.max_depth):
            G, H, count = self._grow_level(builder, gpair, row_slot, G, H, count)
            depth += 1
        return builder.finish(lambda G, H: leaf_weights(G, H, *p.reg),
                              p.learning_rate)

    def _root_sums(self, gpair, active):
        pairs = gpair[active].astype(np.float64)
        if self.weight is not None:
            pairs *= self.weight[active, np.newaxis]
        G, H = pairs.sum(axis=0)
        return np.array([G]), np.array([H])

    def _grow_level(self, builder, gpair, row_slot, G, H, count):
        p = self.params
        allowed = self.sampler.level_masks(G.shape[0])
        s = self.sorted
        splits = find_best_splits(s.col_ptr, s.values, s.rows, gpair, row_slot,
                                  G, H, count, allowed, *p.reg, self.n_threads,
                                  weight=self.weight)
        parent_score = leaf_scores(G, H, *p.reg)
        gain = splits["gain"]
        do_split = ((splits["feature"] >= 0) & (gain > p.gamma)
                    & (gain > SPLIT_NOISE_RTOL * parent_score))
        G_next, H_next = builder.close_level(
            do_split, splits["feature"], splits["threshold"],
            splits["default_left"], gain, splits["G_left"], splits["H_left"])
        n_split = int(np.count_nonzero(do_split))
        left_slot = np.full(G.shape[0], -1, dtype=np.int32)
        left_slot[do_split] = 2 * np.arange(n_split, dtype=np.int32)
        feature = np.where(do_split, splits["feature"], -1).astype(np.int32)
        count_next = apply_level_splits(
            self.X, row_slot, feature, splits["threshold"],
            splits["default_left"], left_slot, left_slot + 1, 2 * n_split,
            self.n_threads)
        return G_next, H_next, count_next
