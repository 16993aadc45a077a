"""The split-finder interface the growth driver calls, and where the rows
of a grown tree ended.

A finder knows how to find the best split of a batch of open nodes and how
to move rows to children; the driver (``tree/driver.py``) decides which
nodes are split, in what order, and when to stop. A new way of finding
splits is one subclass of ``SplitFinder`` (and one row of the method table
in ``tree/methods.py``); ``doc/user_guide/split_finders.rst`` shows how.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

import numpy as np

from .._leaf_margins import add_group_values
from .._partition import RowPartition, add_leaf_values


class SplitFinder(ABC):
    """What the growth driver needs from a way of finding splits.

    One finder serves every tree of a fit. Per tree, the driver calls
    ``start_tree`` once, then alternates ``find_splits`` on a batch of open
    nodes (a level, or the two children of a node under lossguide) and
    ``apply_splits`` on the nodes it chose to split, calls ``retire`` on
    nodes that became final leaves, and ends with ``finish_tree``. Every
    call is a few kernel calls over all nodes of the batch at once, never a
    Python loop over rows.

    Nodes are the tree's node ids (``TreeBuilder``); the root is 0 and the
    children of a split get the ids the driver passes to ``apply_splits``.
    """

    # whether start_tree takes ``gradient_maxima=`` (max |g|, max |h| of the
    # round's gradients, which the objective's check already found): the
    # histogram finders' fixed-point scales then need no pass over the rows
    takes_gradient_maxima = False

    @abstractmethod
    def start_tree(self, gpair, active):
        """Start a tree on unweighted gradient pairs ``gpair`` (n_rows, 2)
        float32 with the rows where ``active`` is True (sample weights are
        the finder's, applied inside its sums). Returns the root's gradient
        and hessian totals (G, H), floats."""

    @abstractmethod
    def find_splits(self, batch):
        """The best split of each node of ``batch`` (``driver.NodeBatch``)
        over the features it allows: a ``splits.SplitBatch`` in the order
        of ``batch.nodes``."""

    @abstractmethod
    def apply_splits(self, nodes, splits, left, right, find_next):
        """Move the rows of ``nodes`` (split by ``splits``, a SplitBatch) to
        their children ``left[k]``, ``right[k]``. ``find_next``: whether
        ``find_splits`` will be called on the children (prepare for it).
        Returns the children's ids, in the order their splits should be
        found (the order the column sampler draws their masks in)."""

    def retire(self, nodes):
        """``nodes`` became final leaves: their working memory may go."""

    def finish_tree(self, tree):
        """Where the active rows of the grown tree ended (an object with
        ``add_values(tree, raw, column, n_threads)``), or None: the
        booster then predicts the tree on the rows for the margins."""
        return None


@dataclass
class RowLeaves:
    """The leaf (node id) of each row of a grown tree, -1 for the rows not
    in it."""

    leaf: np.ndarray

    def add_values(self, tree, raw, column, n_threads):
        """raw[row, column] += the tree's value at the row, for these rows."""
        rows = np.flatnonzero(self.leaf >= 0)
        raw[rows, column] += tree.value[self.leaf[rows]]


@dataclass
class LeafRows:
    """Where the active rows of a grown tree ended: leaf ``node[k]`` holds
    the rows of ``partition.row_index[begin[k]:end[k]]``."""

    partition: RowPartition
    begin: np.ndarray
    end: np.ndarray
    node: np.ndarray

    def add_values(self, tree, raw, column, n_threads):
        """raw[row, column] += the tree's value at the row, for these rows."""
        add_leaf_values(self.partition, self.begin, self.end,
                        tree.value[self.node], raw, column=column,
                        n_threads=n_threads)


@dataclass
class LastSplits:
    """Numeric splits of a tree's last level whose rows were not
    partitioned: node k's rows, ``partition.row_index[begin[k]:end[k]]``,
    go to leaf ``left[k]`` when their code of ``feature[k]`` is at most
    ``split_bin[k]`` (missing: when ``default_left[k]``), else to leaf
    ``right[k]``."""

    begin: np.ndarray
    end: np.ndarray
    feature: np.ndarray
    split_bin: np.ndarray
    default_left: np.ndarray
    left: np.ndarray
    right: np.ndarray


@dataclass
class SplitLeafRows:
    """Where the active rows of a grown tree ended when its last level was
    not partitioned (``HistFinder(defer_last_partition=True)``): the
    leaves with a slice of the partition (``sliced``, a ``LeafRows``) and
    the last level's splits (``last``, ``LastSplits``) over ``binned``.

    ``add_values`` reads each row's leaf off its split and adds the leaf's
    value in the same pass, visiting the rows in row order
    (``_leaf_margins.add_group_values``: a walk of the slices would read
    a scattered margin and code per row): the margins the partition then
    ``LeafRows.add_values`` would give, bit for bit, without the
    partition's passes. ``partition``, ``begin``, ``end`` and ``node``
    are those of the equivalent ``LeafRows``, partitioned on first use."""

    sliced: LeafRows
    binned: object
    last: LastSplits
    n_threads: int

    def add_values(self, tree, raw, column, n_threads):
        """raw[row, column] += the tree's value at the row, for these rows.

        The leaves finished above the last level are groups without a
        split (feature -1), the last level's nodes groups with their
        split; each row is added once, in row order."""
        sliced, last = self.sliced, self.last
        n_leaves = sliced.begin.shape[0]
        leaf_value = tree.value[sliced.node]
        unused = np.zeros(n_leaves, dtype=np.int32)
        add_group_values(
            sliced.partition.row_index,
            np.concatenate([sliced.begin, last.begin]),
            np.concatenate([sliced.end, last.end]),
            np.concatenate([np.full(n_leaves, -1, dtype=np.int32),
                            last.feature]),
            np.concatenate([unused, last.split_bin]),
            np.concatenate([unused.astype(np.uint8), last.default_left]),
            np.concatenate([leaf_value, tree.value[last.left]]),
            np.concatenate([leaf_value, tree.value[last.right]]),
            self.binned.codes_by_feature.T, self.binned.missing_code, raw,
            column=column, n_threads=n_threads)

    def renumbered(self, new_id):
        """The same rows with leaf ids ``new_id[old id]``."""
        return replace(self, sliced=replace(self.sliced,
                                            node=new_id[self.sliced.node]),
                       last=replace(self.last, left=new_id[self.last.left],
                                    right=new_id[self.last.right]))

    def leaf_rows(self):
        """The equivalent ``LeafRows`` (the last level partitioned now;
        valid until the partition's next tree)."""
        if getattr(self, "_leaf_rows", None) is None:
            last, sliced = self.last, self.sliced
            n_left = sliced.partition.split_nodes(
                self.binned, last.begin, last.end, last.feature,
                last.split_bin, last.default_left, n_threads=self.n_threads)
            mid = last.begin + n_left
            self._leaf_rows = LeafRows(
                sliced.partition,
                np.concatenate([sliced.begin, last.begin, mid]),
                np.concatenate([sliced.end, mid, last.end]),
                np.concatenate([sliced.node, last.left, last.right]))
        return self._leaf_rows

    @property
    def partition(self):
        return self.leaf_rows().partition

    @property
    def begin(self):
        return self.leaf_rows().begin

    @property
    def end(self):
        return self.leaf_rows().end

    @property
    def node(self):
        return self.leaf_rows().node


class NodeTable:
    """Per-node arrays of a finder, indexed by node id, growing with the
    tree (``columns``: name -> (dtype, shape of one entry))."""

    def __init__(self, columns, capacity=64):
        self._arrays = {name: np.zeros((capacity,) + shape, dtype=dtype)
                        for name, (dtype, shape) in columns.items()}

    def __getitem__(self, name):
        return self._arrays[name]

    def reserve(self, n_nodes):
        """Room for node ids below ``n_nodes``."""
        capacity = next(iter(self._arrays.values())).shape[0]
        if n_nodes <= capacity:
            return
        capacity = max(2 * capacity, n_nodes)
        for name, array in self._arrays.items():
            grown = np.zeros((capacity,) + array.shape[1:], dtype=array.dtype)
            grown[:array.shape[0]] = array
            self._arrays[name] = grown
