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
