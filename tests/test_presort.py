"""``presort_dense`` against a per-column sort written in the test."""

import numpy as np
import pytest

from skboost.tree._presort import presort_dense


def expected_blocks(X):
    """Per column: present rows ordered by (value, row) with Python's sort,
    which knows nothing of numpy's NaN placement or stability."""
    blocks = []
    for j in range(X.shape[1]):
        entries = sorted((float(X[r, j]), r) for r in range(X.shape[0])
                         if not np.isnan(X[r, j]))
        blocks.append(([v for v, _ in entries], [r for _, r in entries]))
    return blocks


def check(X):
    s = presort_dense(X)
    blocks = expected_blocks(X)
    assert s.n_rows == X.shape[0]
    assert s.n_features == X.shape[1]
    assert s.col_ptr.dtype == np.int64
    assert s.values.dtype == np.float32
    assert s.rows.dtype == np.int32
    # col_ptr: 0, then the running count of present entries per column.
    expected_ptr = [0]
    for j in range(X.shape[1]):
        expected_ptr.append(expected_ptr[-1]
                            + sum(not np.isnan(v) for v in X[:, j]))
    assert s.col_ptr.tolist() == expected_ptr
    for j, (values, rows) in enumerate(blocks):
        block = slice(s.col_ptr[j], s.col_ptr[j + 1])
        assert s.rows[block].tolist() == rows
        assert s.values[block].tolist() == values
        # each value is the one of its row
        np.testing.assert_array_equal(s.values[block], X[s.rows[block], j])


@pytest.mark.parametrize("seed", range(12))
def test_matches_per_column_sort(seed):
    rng = np.random.default_rng(seed)
    n_rows, n_features = rng.integers(1, 60), rng.integers(1, 7)
    if seed % 3 == 0:
        X = rng.normal(size=(n_rows, n_features))
    else:  # many ties
        X = rng.integers(-3, 4, size=(n_rows, n_features)) * 0.5
    X = X.astype(np.float32)
    X[rng.random(X.shape) < rng.uniform(0, 0.4)] = np.nan
    check(X)


def test_matches_np_argsort_with_nan_dropped():
    rng = np.random.default_rng(42)
    X = rng.normal(size=(200, 5)).astype(np.float32)  # no ties
    X[rng.random(X.shape) < 0.2] = np.nan
    s = presort_dense(X)
    for j in range(X.shape[1]):
        present = np.flatnonzero(~np.isnan(X[:, j]))
        order = present[np.argsort(X[present, j])]
        block = slice(s.col_ptr[j], s.col_ptr[j + 1])
        np.testing.assert_array_equal(s.rows[block], order)
        np.testing.assert_array_equal(s.values[block], X[order, j])


def test_ties_keep_row_order():
    X = np.array([[2.0, 0.0], [1.0, -0.0], [2.0, np.nan], [1.0, 0.0],
                  [np.nan, -0.0], [2.0, -1.0]], dtype=np.float32)
    s = presort_dense(X)
    # column 0: 1.0 at rows 1, 3; 2.0 at rows 0, 2, 5 (row 4 missing)
    assert s.rows[s.col_ptr[0]:s.col_ptr[1]].tolist() == [1, 3, 0, 2, 5]
    # column 1: -1 at row 5; then 0.0 == -0.0 at rows 0, 1, 3, 4 in row order
    assert s.rows[s.col_ptr[1]:s.col_ptr[2]].tolist() == [5, 0, 1, 3, 4]
    assert s.col_ptr.tolist() == [0, 5, 10]


def test_edge_shapes():
    check(np.full((4, 3), np.nan, dtype=np.float32))  # nothing present
    check(np.zeros((0, 2), dtype=np.float32))  # no rows
    check(np.zeros((3, 0), dtype=np.float32))  # no features
    s = presort_dense(np.full((4, 2), np.nan, dtype=np.float32))
    assert s.col_ptr.tolist() == [0, 0, 0]
    assert s.values.shape == (0,) and s.rows.shape == (0,)
