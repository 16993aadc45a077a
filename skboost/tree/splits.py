"""The one record of split candidates, from the kernels to the tree.

Every split finder kernel returns its nodes' best splits as a numpy
structured array of ``SPLIT_RECORD`` (one row per node, in the order of
the nodes it was given); the growth driver reads it, merges two finders'
records under the finders' total order, and hands the chosen rows to
``TreeBuilder``. Categorical splits add the set of categories they send
left, which has no fixed size: ``SplitBatch`` carries it beside the
records.

Fields
------
feature : int32
    Feature index; -1 (``NO_FEATURE``): no admissible split was found.
threshold : float64
    A row goes left when its value is < threshold (numeric splits).
default_left : uint8
    Direction of missing values (and of unseen categories).
gain : float64
    Loss reduction before gamma (``_gain.pxd``).
G_left, H_left : float64
    Gradient and hessian sums of the left child.
split_bin : int32
    Histogram finders: the last bin going left (numeric) or the bin the
    categorical scan stopped at; -1 for the exact finder.
Gq_left, Hq_left : int64
    Histogram finders: the left child's exact fixed-point sums (0 for the
    exact finder).
cat_kind : uint8
    0: numeric split; otherwise the kind of categorical split
    (``_categorical_scan``: one category against the rest, or a sorted
    partition).
"""

import numpy as np

SPLIT_RECORD = np.dtype([
    ("feature", np.int32),
    ("threshold", np.float64),
    ("default_left", np.uint8),
    ("gain", np.float64),
    ("G_left", np.float64),
    ("H_left", np.float64),
    ("split_bin", np.int32),
    ("Gq_left", np.int64),
    ("Hq_left", np.int64),
    ("cat_kind", np.uint8),
])


def empty_records(n):
    """Records of ``n`` nodes with no split found."""
    records = np.zeros(n, dtype=SPLIT_RECORD)
    records["feature"] = -1
    records["gain"] = -1e300
    records["split_bin"] = -1
    return records


class SplitBatch:
    """The best splits of a batch of nodes, as a finder found them.

    Parameters
    ----------
    records : ndarray of SPLIT_RECORD, shape (n_nodes,)
    G, H : ndarray of shape (n_nodes,), float64
        Each node's gradient and hessian totals as the finder measured them
        (the parent score of the decision rule is computed from these).
    left_sets : list or None
        None when no split of the batch is categorical; else one entry per
        node: None, or the bool array over its feature's categories that
        its (categorical) split sends left.
    left_sums : ndarray of shape (n_nodes, n_outputs, 2), int64, or None
        Vector-leaf trees: the left children's exact fixed-point sums of
        every output (the records hold output 0's); ``G``, ``H`` are then
        (n_nodes, n_outputs), and so are ``G_left``, ``H_left``.
    G_left, H_left : ndarray of shape (n_nodes, n_outputs), or None
        Vector-leaf trees: ``left_sums`` as float64.
    """

    def __init__(self, records, G, H, left_sets=None, left_sums=None,
                 G_left=None, H_left=None):
        self.records = records
        self.G = np.ascontiguousarray(G, dtype=np.float64)
        self.H = np.ascontiguousarray(H, dtype=np.float64)
        self.left_sets = left_sets
        self.left_sums = left_sums
        self.G_left = G_left
        self.H_left = H_left

    def __len__(self):
        return self.records.shape[0]

    def take(self, index):
        """The splits of the nodes at ``index`` (an integer array)."""
        left_sets = (None if self.left_sets is None
                     else [self.left_sets[k] for k in index])
        if self.left_sums is None:
            return SplitBatch(self.records[index], self.G[index],
                              self.H[index], left_sets)
        return SplitBatch(self.records[index], self.G[index], self.H[index],
                          left_sets, self.left_sums[index],
                          self.G_left[index], self.H_left[index])

    def builder_arguments(self):
        """Keyword arguments of ``TreeBuilder.split`` for these splits."""
        r = self.records
        vector = self.left_sums is not None
        return dict(feature=r["feature"], threshold=r["threshold"],
                    default_left=r["default_left"], gain=r["gain"],
                    G_left=self.G_left if vector else r["G_left"],
                    H_left=self.H_left if vector else r["H_left"],
                    left_sets=self.left_sets)

