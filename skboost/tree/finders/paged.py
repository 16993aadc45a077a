"""The histogram finder on binned rows kept on disk (out-of-core training,
``skboost.ExternalData``).

It is ``HistFinder`` with another way of reading the binned rows: the
split scans, the histogram pool, the subtraction trick and the split
records are HistFinder's own, so the same trees grow in core and out of
core. What differs is where the rows are:

- in core, each node's rows are a slice of a row index sorted by node
  (``RowPartition``), and histograms read codes through it;
- here, the codes come page by page from disk (``pages.PageFile``), and
  each page keeps its own rows sorted by node (``_paged.PagePartition``:
  page-local uint16 row numbers, 2 bytes a row, in one segment per node).
  One pass over the pages per level both moves the rows of the level's
  split nodes to their children and builds the new histograms, the
  pass's threads each taking whole pages (reading them themselves)
  while the operating system reads the file ahead
  (``pages.PageFile.kernel_file``).

Which child's histogram is built (the other is its parent's minus it,
exact in fixed point) is chosen before the pass from the children's
hessian sums; the order of the children handed back to the driver is the
in-core one (the child with fewer rows first: the built child's rows are
counted during the pass, the other's are its parent's minus those), so
column sampling by node draws the same masks.
"""

import numpy as np

from .._histogram import FixedPointGradients
from .._paged import CAN_READ_PAGES, PagePartition
from .hist import HistFinder


class SegmentLeaves:
    """Where the rows of a grown tree ended (``_paged.PagePartition``:
    every row, sampled or not, in its leaf's segment of its page), so the
    booster needs no prediction pass for the margins."""

    # the booster adds the tree to every row's margin through this object
    covers_every_row = True

    def __init__(self, partition):
        self.partition = partition

    def add_values(self, tree, raw, column, n_threads):
        """raw[row, column] += the tree's value at the row, for every row."""
        if raw.dtype == np.float64:
            self.partition.add_values(tree.value, raw, column, n_threads)
        else:
            raw[:, column] += tree.value[self.partition.node_of_rows()]


class PagedHistFinder(HistFinder):
    """``tree_method="hist"`` on a ``pages.PagedMatrix``.

    Parameters
    ----------
    paged : PagedMatrix
    params : TreeParams
    n_threads : int
    weight : ndarray of shape (n_rows,) or None
    """

    # its start_tree makes its own pass over the pages
    takes_gradient_maxima = False

    def __init__(self, paged, params, n_threads, weight=None):
        super().__init__(paged, paged.split_thresholds, params, n_threads,
                         weight=weight)
        self.partition = PagePartition(paged.n_rows, paged.pages.page_rows)

    def start_tree(self, gpair, active):
        self.gradients = FixedPointGradients(gpair, self.weight, active,
                                             self.n_threads)
        self.scales = self.gradients.scales
        self.context = self.fit_context.with_scales(*self.scales)
        self._active = np.ascontiguousarray(active).view(np.uint8)
        self.partition.reset()     # every row starts at the root
        self._start_pool()
        root_row = self.pool.take(1)
        self.pool.array[root_row] = 0
        nodes = _NodeArrays(1)
        nodes.build_row[0] = root_row[0]
        self._node_rows = np.zeros(1, dtype=np.int64)
        self._node_rows[0] = self.build_histograms(nodes, route=False)[
            root_row[0]]
        first = self.binned.bin_ptr
        sums = self.pool.array[root_row[0], first[0]:first[1]].sum(axis=0)
        t = self.table
        t["hist_row"][0], t["sums"][0] = root_row[0], sums
        return tuple(sums / self.scales)

    def build_histograms(self, nodes, route=True):
        """One pass over the pages (the hook where ``HistFinder`` reads its
        in-core rows): route the rows of ``nodes``' split nodes to their
        children, add rows to the histograms of the nodes with a
        ``build_row``. Returns the rows added to each histogram (row of
        the pool)."""
        rows = np.zeros(self.pool.array.shape[0], dtype=np.int64)
        build = bool(np.any(nodes.build_row >= 0))
        if not (route or build):
            return rows
        paged = self.binned
        level = self.partition
        level.start_level(
            self._active, nodes.feature, nodes.split_bin,
            nodes.default_left, nodes.left, nodes.right, nodes.build_row,
            paged.missing_code, paged.bin_ptr, self.gradients.gpair,
            self.gradients.weight, self.pool.array, rows,
            context=self.context, route=route, build=build)
        if CAN_READ_PAGES:   # each page read by the pass's own threads
            with paged.pages.kernel_file() as fd:
                level.read_pages(fd, paged.pages.code_dtype.itemsize)
        else:
            for k, (_, page) in enumerate(paged.pages.pages()):
                level.add_page(k, page)
        level.finish_level()
        return rows

    def apply_splits(self, nodes, splits, left, right, find_next):
        t = self.table
        n_ids = int(right.max()) + 1
        t.reserve(n_ids)
        left_sums = self._left_sums(splits)
        right_sums = t["sums"][nodes] - left_sums
        # build the child of the smaller hessian sum (the row count for
        # unit hessians and weights); the other is parent minus it
        build_left = left_sums[:, 1] <= right_sums[:, 1]
        built = np.where(build_left, left, right)
        derived = np.where(build_left, right, left)
        parent_rows = t["hist_row"][nodes]
        t["hist_row"][nodes] = -1
        arrays = _NodeArrays(n_ids)
        r = splits.records
        arrays.feature[nodes] = r["feature"]
        arrays.split_bin[nodes] = r["split_bin"]
        arrays.default_left[nodes] = r["default_left"]
        arrays.left[nodes], arrays.right[nodes] = left, right
        if find_next:
            built_rows = self.pool.take(nodes.shape[0])
            self.pool.array[built_rows] = 0
            t["hist_row"][built], t["hist_row"][derived] = (built_rows,
                                                            parent_rows)
            arrays.build_row[built] = built_rows
        else:
            self.pool.give_back(parent_rows)
            t["hist_row"][left] = t["hist_row"][right] = -1
        added = self.build_histograms(arrays)
        t["sums"][left], t["sums"][right] = left_sums, right_sums
        if not find_next:   # leaves: no order to keep
            return np.concatenate([left, right])
        self._subtract(parent_rows, built_rows)
        counts = self._node_rows_for(n_ids)
        counts[built] = added[built_rows]
        counts[derived] = counts[nodes] - counts[built]
        left_smaller = counts[left] <= counts[right]
        return np.concatenate([np.where(left_smaller, left, right),
                               np.where(left_smaller, right, left)])

    def _node_rows_for(self, n_ids):
        """The active rows of each node id (grown to ``n_ids``)."""
        if self._node_rows.shape[0] < n_ids:
            grown = np.zeros(n_ids, dtype=np.int64)
            grown[:self._node_rows.shape[0]] = self._node_rows
            self._node_rows = grown
        return self._node_rows

    def finish_tree(self, tree):
        self.gradients = None
        return SegmentLeaves(self.partition)

    def release(self):
        """Free the page buffer and the helper thread (after the fit)."""
        self.binned.pages.release()


class _NodeArrays:
    """The kernel's per-node-id arrays for one pass: nothing split, no
    histogram built until set."""

    def __init__(self, n_ids):
        self.n_ids = n_ids
        self.feature = np.full(n_ids, -1, dtype=np.int32)
        self.split_bin = np.zeros(n_ids, dtype=np.int32)
        self.default_left = np.zeros(n_ids, dtype=np.uint8)
        self.left = np.zeros(n_ids, dtype=np.int32)
        self.right = np.zeros(n_ids, dtype=np.int32)
        self.build_row = np.full(n_ids, -1, dtype=np.int64)
