"""The row-order margin update (tree/_leaf_margins.pyx, used by
finders.SplitLeafRows.add_values) against a naive numpy oracle and, for
leaves without a split, against the slice walk of
_partition.add_leaf_values, bit for bit."""

import numpy as np
import pytest

from skboost.tree._binning import BinnedData
from skboost.tree._leaf_margins import add_group_values
from skboost.tree._partition import RowPartition, add_leaf_values


def _binned(rng, n_rows, n_features, dtype):
    top = 255 if dtype == np.uint8 else 600
    codes = rng.integers(0, top + 1, size=(n_rows, n_features)).astype(dtype)
    bin_ptr = np.arange(n_features + 1, dtype=np.int64) * (top + 1)
    return BinnedData(codes, bin_ptr, 1)


def _partitioned(rng, binned, n_levels, active=None):
    """A RowPartition of the active rows split ``n_levels`` times on random
    features (as a tree's levels), and its slices."""
    n = binned.n_rows
    rows = (np.arange(n) if active is None else np.flatnonzero(active))
    partition = RowPartition(rows.astype(np.int32), n)
    begin, end = np.array([0]), np.array([rows.shape[0]])
    for _ in range(n_levels):
        m = begin.shape[0]
        n_left = partition.split_nodes(
            binned, begin, end,
            rng.integers(0, binned.n_features, m).astype(np.int32),
            rng.integers(0, 200, m).astype(np.int32),
            rng.integers(0, 2, m).astype(np.uint8), n_threads=1)
        mid = begin + n_left
        begin = np.stack([begin, mid], 1).ravel()
        end = np.stack([mid, end], 1).ravel()
    return partition, begin, end


def _groups(rng, begin, n_features, leaf_share=0.3):
    n = begin.shape[0]
    feature = rng.integers(0, n_features, n).astype(np.int32)
    feature[rng.random(n) < leaf_share] = -1     # leaves without a split
    return dict(feature=feature,
                split_bin=rng.integers(0, 300, n).astype(np.int32),
                default_left=rng.integers(0, 2, n).astype(np.uint8),
                value_left=rng.normal(size=n), value_right=rng.normal(size=n))


def _oracle(row_index, begin, end, groups, codes, missing_code, raw, column):
    """Each group's rows, one at a time, in numpy."""
    out = raw.copy()
    for k in range(begin.shape[0]):
        rows = row_index[begin[k]:end[k]]
        f = groups["feature"][k]
        if f < 0:
            value = np.full(rows.shape[0], groups["value_left"][k])
        else:
            code = codes[rows, f].astype(np.int64)
            left = np.where(code == missing_code[f],
                            groups["default_left"][k] == 1,
                            code <= groups["split_bin"][k])
            value = np.where(left, groups["value_left"][k],
                             groups["value_right"][k])
        out[rows, column] += value
    return out


@pytest.mark.parametrize("n_rows", [1, 8191, 8192, 30_001])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("layout", ["rows", "features"])
def test_equals_the_naive_oracle(n_rows, dtype, n_threads, layout):
    """Codes in either layout: row-major, or the feature-major copy's
    transpose view (what SplitLeafRows passes, read in place)."""
    rng = np.random.default_rng(n_rows)
    binned = _binned(rng, n_rows, 5, dtype)
    active = rng.random(n_rows) < 0.8           # rows of no slice too
    active[0] = True
    partition, begin, end = _partitioned(rng, binned, 4, active)
    groups = _groups(rng, begin, 5)
    raw = rng.normal(size=(n_rows, 3))
    expected = _oracle(partition.row_index, begin, end, groups,
                       binned.codes, binned.missing_code, raw, 1)
    codes = (binned.codes if layout == "rows"
             else binned.codes_by_feature.T)
    add_group_values(partition.row_index, begin, end, **groups,
                     codes=codes, missing_code=binned.missing_code,
                     raw=raw, column=1, n_threads=n_threads)
    np.testing.assert_array_equal(raw.view(np.uint64),
                                  expected.view(np.uint64))


@pytest.mark.parametrize("n_threads", [1, 2])
def test_special_margins_keep_their_bits(n_threads):
    """Margins -0.0, +0.0, inf and NaN, in rows of no slice (which the
    kernel adds -0.0 to) and in rows of a slice, come out with the bits
    of the oracle's additions (rows of no slice untouched)."""
    rng = np.random.default_rng(11)
    n_rows = 20_000
    binned = _binned(rng, n_rows, 4, np.uint8)
    active = rng.random(n_rows) < 0.5
    partition, begin, end = _partitioned(rng, binned, 3, active)
    groups = _groups(rng, begin, 4)
    groups["value_left"][0] = -0.0        # -0.0 + -0.0 stays -0.0
    specials = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan])
    raw = rng.choice(specials, size=(n_rows, 2))
    expected = _oracle(partition.row_index, begin, end, groups,
                       binned.codes, binned.missing_code, raw, 0)
    add_group_values(partition.row_index, begin, end, **groups,
                     codes=binned.codes_by_feature.T,
                     missing_code=binned.missing_code, raw=raw, column=0,
                     n_threads=n_threads)
    np.testing.assert_array_equal(raw.view(np.uint64),
                                  expected.view(np.uint64))


def test_leaves_equal_the_slice_walk_bit_for_bit():
    """Groups without a split (every row to its leaf) give the margins of
    add_leaf_values' walk of the slices, for 1 and 2 threads."""
    rng = np.random.default_rng(7)
    binned = _binned(rng, 50_000, 6, np.uint8)
    partition, begin, end = _partitioned(rng, binned, 6)
    groups = _groups(rng, begin, 6)
    groups["feature"][:] = -1
    start = rng.normal(size=(50_000, 1)) * 1e3
    walked = start.copy()
    add_leaf_values(partition, begin, end, groups["value_left"], walked,
                    column=0, n_threads=2)
    for n_threads in (1, 2):
        raw = start.copy()
        add_group_values(partition.row_index, begin, end, **groups,
                         codes=binned.codes,
                         missing_code=binned.missing_code, raw=raw,
                         column=0, n_threads=n_threads)
        np.testing.assert_array_equal(raw.view(np.uint64),
                                      walked.view(np.uint64))


def _call(row_index, begin, end, n_rows=6, n_groups=None, **changes):
    n_groups = len(begin) if n_groups is None else n_groups
    args = dict(feature=np.full(n_groups, -1, np.int32),
                split_bin=np.zeros(n_groups, np.int32),
                default_left=np.zeros(n_groups, np.uint8),
                value_left=np.ones(n_groups), value_right=np.ones(n_groups),
                codes=np.zeros((n_rows, 2), np.uint8),
                missing_code=np.array([3, 3]), raw=np.zeros((n_rows, 1)),
                column=0, n_threads=2)
    args.update(changes)
    add_group_values(np.asarray(row_index, dtype=np.int32), begin, end,
                     **args)


def test_rows_out_of_order_across_blocks_are_a_value_error():
    """A slice whose rows go back across a block boundary (8192 rows) would
    leave rows out: an error, whatever the thread count."""
    rows = np.arange(20_000)
    rows[[100, 10_000]] = rows[[10_000, 100]]
    for n_threads in (1, 2):
        with pytest.raises(ValueError, match="not increasing"):
            _call(rows, np.array([0]), np.array([20_000]), n_rows=20_000,
                  n_threads=n_threads)


@pytest.mark.parametrize("row_index, begin, end, message", [
    ([0, 1, 2, -1, 4, 5], [0, 3], [3, 6], "not increasing"),  # negative row
    ([0, 1, 2, 3, 4, 9], [0, 3], [3, 6], "not increasing"),   # row >= n_rows
    ([0, 1, 2, 3, 4, 5], [0, 2], [3, 6], "overlap"),
    ([0, 1, 2, 3, 4, 5], [0, 3], [3, 7], "outside the row index"),
    ([0, 1, 2, 3, 4, 5], [0, 3], [3, 2], "outside the row index"),
])
def test_bad_slices_are_value_errors(row_index, begin, end, message):
    with pytest.raises(ValueError, match=message):
        _call(row_index, np.array(begin), np.array(end))


def test_bad_arrays_are_value_errors():
    rows, begin, end = [0, 1, 2, 3, 4, 5], np.array([0, 3]), np.array([3, 6])
    with pytest.raises(ValueError, match="split feature outside"):
        _call(rows, begin, end, feature=np.array([0, 2], np.int32))
    with pytest.raises(ValueError, match="one entry per group"):
        _call(rows, begin, end, value_left=np.ones(3))
    with pytest.raises(ValueError, match="codes must be"):   # raw: n_rows
        _call(rows, begin, end, raw=np.zeros((5, 1)))
    with pytest.raises(ValueError, match="raw must be"):
        _call(rows, begin, end, column=1)
    with pytest.raises(ValueError, match="codes must be"):
        _call(rows, begin, end, codes=np.zeros((6, 2), np.int32))
    with pytest.raises(ValueError, match="missing_code"):
        _call(rows, begin, end, missing_code=np.array([3]))
