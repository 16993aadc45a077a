"""A grown tree's values added to the training margins from where its rows
ended (the finder's ``finish_tree``), in row order where that pays.

``add_leaf_margins`` is what the boosting loop calls for every tree. For a
tree whose last level was not partitioned (``SplitLeafRows``, dense
``hist``), the rows are visited in row order by
``_leaf_margins.add_group_values`` (its docstring: the slice walk of
``SplitLeafRows.add_values`` reads a scattered margin and code per row);
anything else goes through the rows' own ``add_values``. Both add each
row's leaf value once: the same margins, bit for bit.
"""

import numpy as np

from ._leaf_margins import add_group_values
from .finders.base import SplitLeafRows


def add_leaf_margins(leaf_rows, tree, raw, column, n_threads):
    """raw[row, column] += the tree's value at the row, for the rows of
    ``leaf_rows``."""
    if type(leaf_rows) is not SplitLeafRows:
        leaf_rows.add_values(tree, raw, column, n_threads)
        return
    sliced, last = leaf_rows.sliced, leaf_rows.last
    # the leaves finished above the last level are groups without a split
    # (feature -1), the last level's nodes groups with their split
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
        leaf_rows.binned.codes, leaf_rows.binned.missing_code, raw,
        column=column, n_threads=n_threads)
