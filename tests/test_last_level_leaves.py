"""The last level of a dense ``hist`` tree is not partitioned: its rows go
straight to their leaf's margin (``HistFinder(defer_last_partition=True)``,
``finders.SplitLeafRows``, ``_leaf_margins.add_group_values``).

Oracle: the same grower with the last level partitioned
(``defer_last_partition=False``, the ``LeafRows`` path), on the same data
and gradients: the trees, the margins after ``add_values`` (bit for bit)
and, once partitioned, each leaf's rows must be the same; for depth-wise,
best-first (renumbered) growth, row subsampling, weights, missing values
and categorical splits (which are partitioned as before).
"""

import numpy as np
import pytest

from skboost.tree.driver import TreeParams
from skboost.tree.finders import LeafRows
from skboost.tree.finders.base import SplitLeafRows
from skboost.tree.methods import make_grower


def data(seed, n_rows=3000, n_features=6, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    n_categories = None
    if categorical:
        X[:, 0] = rng.integers(0, 12, n_rows)
        n_categories = np.zeros(n_features, dtype=np.int64)
        n_categories[0] = 12
    gpair = np.column_stack([rng.normal(size=n_rows),
                             rng.uniform(0.1, 1.0, n_rows)]).astype(np.float32)
    return X, gpair, n_categories, rng


def grower_pair(X, params, n_categories, weight):
    """The same grower twice: last level deferred, and partitioned."""
    growers = []
    for defer in (True, False):
        driver = make_grower(X, params, 2, np.random.default_rng(5),
                             weight=weight, n_categories=n_categories)
        driver.finder.defers_last_partition = defer
        growers.append(driver)
    return growers


def same_trees(a, b):
    for name in ("left_child", "right_child", "feature", "threshold",
                 "default_left", "value", "gain", "cover"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name),
                                      err_msg=name)


def leaf_row_sets(rows):
    return {int(node): set(np.asarray(rows.partition.row_index)[b:e].tolist())
            for node, b, e in zip(rows.node, rows.begin, rows.end) if e > b}


CASES = {
    "depthwise": dict(max_depth=4),
    "lossguide renumbered": dict(max_depth=5, grow_policy="lossguide"),
    "weighted, subsampled rows": dict(max_depth=6),
    "shallow": dict(max_depth=1),
    "categorical": dict(max_depth=4),
}


@pytest.mark.parametrize("case", list(CASES))
def test_deferred_last_level_gives_the_same_trees_margins_and_leaves(case):
    X, gpair, n_categories, rng = data(
        sum(map(ord, case)), categorical=case == "categorical")
    weight = (rng.uniform(0.2, 3.0, X.shape[0]) if "weighted" in case
              else None)
    active = (rng.random(X.shape[0]) < 0.7 if "subsampled" in case
              else np.ones(X.shape[0], dtype=bool))
    deferred, partitioned = grower_pair(
        X, TreeParams(**CASES[case]), n_categories, weight)
    for _ in range(3):   # a few trees: the finders' state carries over
        tree, rows = deferred.grow(gpair, active)
        ref_tree, ref_rows = partitioned.grow(gpair, active)
        same_trees(tree, ref_tree)
        assert isinstance(ref_rows, LeafRows)
        if CASES[case]["max_depth"] > 1 and case != "categorical":
            assert isinstance(rows, SplitLeafRows)
        raw = rng.normal(size=(X.shape[0], 2))
        expected = raw.copy()
        rows.add_values(tree, raw, 1, 2)
        ref_rows.add_values(ref_tree, expected, 1, 2)
        np.testing.assert_array_equal(raw, expected)
        # partitioned on demand: every leaf holds the same rows
        assert leaf_row_sets(rows) == leaf_row_sets(ref_rows)
        gpair = gpair[rng.permutation(X.shape[0])]
