"""``RowPartition.split_nodes`` (the histogram method's contiguous row
partitioner) against a naive stable partition written here.

Each node k owns the slice ``row_index[begin[k]:end[k]]``; after the call
the slice holds first the rows going left (code ``<= split_bin[k]``, or the
feature's missing code with ``default_left[k]``) then the others, each group
in its previous order. Entries outside the slices do not move, and the
number of rows going left in each node is returned.
"""

import numpy as np
import pytest

from skboost.tree._binning import BinnedData
from skboost.tree._leaf_margins import add_group_values
from skboost.tree._partition import (RowPartition, add_leaf_values,
                                     set_vector_partition)
from _isolation import snippet_input_tests


def naive_split(row_index, codes, missing_code, begin, end, feature,
                split_bin, default_left):
    out = row_index.copy()
    n_left = []
    for k in range(len(begin)):
        rows = row_index[begin[k]:end[k]]
        code = codes[rows, feature[k]].astype(np.int64)
        left = np.where(code == missing_code[feature[k]],
                        bool(default_left[k]), code <= split_bin[k])
        out[begin[k]:end[k]] = np.concatenate([rows[left], rows[~left]])
        n_left.append(int(left.sum()))
    return out, n_left


def random_data(rng, n_rows, n_features, dtype):
    widths = rng.integers(1, 10, n_features)
    if dtype == np.uint16:
        widths[rng.random(n_features) < 0.5] = rng.integers(257, 600)
    bin_ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
    # missing codes often enough to matter
    missing = rng.random(codes.shape) < 0.2
    codes = np.where(missing, widths - 1, codes).astype(dtype)
    return BinnedData(codes, bin_ptr)


def random_nodes(rng, n_active, n_nodes):
    """Disjoint slices (some empty) covering part of [0, n_active)."""
    edges = np.sort(rng.integers(0, n_active + 1, 2 * n_nodes))
    order = rng.permutation(n_nodes)  # nodes listed in any order
    return (edges[0::2][order].astype(np.int64),
            edges[1::2][order].astype(np.int64))


def random_problem(seed, dtype, n_rows=None):
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 500)) if n_rows is None else n_rows
    n_features = int(rng.integers(1, 6))
    data = random_data(rng, n_rows, n_features, dtype)
    rows = np.flatnonzero(rng.random(n_rows) < rng.uniform(0.2, 1.0))
    partition = RowPartition(rows, n_rows)
    n_nodes = int(rng.integers(1, 6))
    begin, end = random_nodes(rng, rows.size, n_nodes)
    feature = rng.integers(0, n_features, n_nodes).astype(np.int32)
    widths = np.diff(data.bin_ptr)
    # split bins from -1 (nothing present left) to past the last value bin
    split_bin = np.array([rng.integers(-1, widths[f] + 1) for f in feature],
                         dtype=np.int32)
    default_left = rng.integers(0, 2, n_nodes).astype(np.uint8)
    return data, partition, begin, end, feature, split_bin, default_left


def check_against_naive(data, partition, begin, end, feature, split_bin,
                        default_left, n_threads):
    before = np.asarray(partition.row_index).copy()
    expected, expected_left = naive_split(before, data.codes,
                                          data.missing_code, begin, end,
                                          feature, split_bin, default_left)
    n_left = partition.split_nodes(data, begin, end, feature, split_bin,
                                   default_left, n_threads=n_threads)
    np.testing.assert_array_equal(partition.row_index, expected)
    assert n_left.dtype == np.int64
    assert n_left.tolist() == expected_left
    return n_left


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("first_seed", range(0, 90, 30))
def test_matches_naive_stable_partition(dtype, first_seed):
    for seed in range(first_seed, first_seed + 30):
        check_against_naive(*random_problem(seed, dtype),
                            n_threads=1 + seed % 2)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_large_nodes_split_into_tasks(dtype):
    # nodes of more than one task (16384 rows) must stay stable: each task's
    # left rows go before the next task's
    rng = np.random.default_rng(1)
    n_rows = 90_000
    data = random_data(rng, n_rows, 4, dtype)
    partition = RowPartition(np.flatnonzero(rng.random(n_rows) < 0.95),
                             n_rows)
    n_active = partition.row_index.shape[0]
    begin = np.array([0, 40_000, 40_001, 80_000], dtype=np.int64)
    end = np.array([40_000, 40_001, 80_000, n_active], dtype=np.int64)
    for n_threads in (1, 2):
        check_against_naive(data, partition, begin, end,
                            np.array([0, 1, 2, 3], np.int32),
                            np.array([3, 0, 1, 2], np.int32),
                            np.array([1, 0, 0, 1], np.uint8), n_threads)


def random_splits(rng, n_active, widths, n_nodes):
    """``n_nodes`` nodes tiling ``n_active`` partition rows (some empty,
    the last ending at the last row and split on the last feature), each
    with a random feature, split bin (-1 .. width: every row left or right
    included) and missing direction."""
    cuts = np.sort(rng.integers(0, n_active, n_nodes - 1))
    begin = np.concatenate([[0], cuts]).astype(np.int64)
    end = np.concatenate([cuts, [n_active]]).astype(np.int64)
    feature = rng.integers(0, len(widths), begin.size).astype(np.int32)
    feature[-1] = len(widths) - 1
    split_bin = np.array([rng.integers(-1, w + 1) for w in
                          widths[feature]], dtype=np.int32)
    default_left = rng.integers(0, 2, begin.size).astype(np.uint8)
    return begin, end, feature, split_bin, default_left


@pytest.mark.parametrize("vector", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_vector_steps_and_scalar_loop_match_naive(vector, seed):
    # byte codes up to 255 (a 256-code feature, whose missing code is 255),
    # nodes of 0 to ~300 rows: the AVX-512 steps (where the CPU has them)
    # take 16 rows at a time, the scalar loop the rest; the last node ends
    # at the last row, split on the last feature, whose last rows' 4-byte
    # reads would pass the codes' end (those steps go to the scalar loop)
    previous = set_vector_partition(vector)
    try:
        rng = np.random.default_rng(seed)
        n_rows = 3000
        widths = np.array([256, 7, 200])
        codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
        codes[rng.random(codes.shape) < 0.1] = 0
        codes = np.where(rng.random(codes.shape) < 0.2, widths - 1,
                         codes).astype(np.uint8)
        data = BinnedData(codes, np.concatenate([[0], np.cumsum(widths)]))
        rows = np.flatnonzero(rng.random(n_rows) < 0.9)
        rows = np.union1d(rows, np.arange(n_rows - 40, n_rows))
        partition = RowPartition(rows, n_rows)
        begin, end, feature, split_bin, default_left = random_splits(
            rng, rows.size, widths, n_nodes=13)
        for n_threads in (1, 2):
            check_against_naive(data, partition, begin, end, feature,
                                split_bin, default_left, n_threads)
    finally:
        set_vector_partition(previous)


def naive_categorical_split(row_index, codes, missing_code, begin, end,
                            feature, split_bin, default_left, left_sets):
    """``naive_split`` where node k's split is categorical when
    ``left_sets[k]`` is not None: a value code goes left when its flag is
    set, the missing code with ``default_left[k]``."""
    out, n_left = naive_split(row_index, codes, missing_code, begin, end,
                              feature, split_bin, default_left)
    for k in range(len(begin)):
        if left_sets[k] is None:
            continue
        rows = row_index[begin[k]:end[k]]
        code = codes[rows, feature[k]].astype(np.int64)
        is_missing = code == missing_code[feature[k]]
        left = np.where(is_missing, bool(default_left[k]),
                        left_sets[k][np.where(is_missing, 0, code)])
        out[begin[k]:end[k]] = np.concatenate([rows[left], rows[~left]])
        n_left[k] = int(left.sum())
    return out, n_left


def categorical_problem(rng, dtype, n_rows):
    """Codes of a wide feature (every code of its width, the last value
    code included), a narrow one and a numeric one; the last rows of the
    codes active (their 4-byte reads pass the codes' end on the last
    feature); nodes of 0 to a few hundred rows, one ending at the last
    row; each node's split categorical (a random set, all or none of its
    codes) or numeric."""
    wide = 256 if dtype == np.uint8 else 30_001
    widths = np.array([7, 200, wide])
    codes = np.column_stack([rng.integers(0, w, n_rows) for w in widths])
    codes[:wide - 1, 2] = np.arange(wide - 1)[:min(n_rows, wide - 1)]
    codes = np.where(rng.random(codes.shape) < 0.15, widths - 1,
                     codes).astype(dtype)
    data = BinnedData(codes, np.concatenate([[0], np.cumsum(widths)]))
    rows = np.union1d(np.flatnonzero(rng.random(n_rows) < 0.9),
                      np.arange(n_rows - 40, n_rows))
    begin, end, feature, split_bin, default_left = random_splits(
        rng, rows.size, widths, n_nodes=15)
    left_sets = []
    for k, f in enumerate(feature):
        kind = rng.integers(0, 4)
        n_values = widths[f] - 1
        left_sets.append(None if kind == 0 else
                         rng.random(n_values) < 0.5 if kind == 1 else
                         np.full(n_values, kind == 2))
    left_sets[-1] = rng.random(widths[2] - 1) < 0.5
    return data, RowPartition(rows, n_rows), begin, end, feature, split_bin, \
        default_left, left_sets


@pytest.mark.parametrize("vector", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("seed", range(3))
def test_categorical_splits_match_naive(vector, dtype, seed):
    # the vector steps gather each row's flag from its node's left set
    # (byte or 2-byte codes); the scalar loop reads it row by row: both
    # against the naive partition, on 1 and 2 threads
    previous = set_vector_partition(vector)
    try:
        rng = np.random.default_rng(seed)
        (data, partition, begin, end, feature, split_bin, default_left,
         left_sets) = categorical_problem(rng, dtype, 40_000)
        for n_threads in (1, 2):
            before = np.asarray(partition.row_index).copy()
            expected, expected_left = naive_categorical_split(
                before, data.codes, data.missing_code, begin, end, feature,
                split_bin, default_left, left_sets)
            n_left = partition.split_nodes(
                data, begin, end, feature, split_bin, default_left,
                n_threads=n_threads, left_sets=left_sets)
            np.testing.assert_array_equal(partition.row_index, expected)
            assert n_left.tolist() == expected_left
    finally:
        set_vector_partition(previous)


def test_set_vector_partition_returns_the_previous_setting():
    previous = set_vector_partition(False)
    try:
        assert set_vector_partition(True) is False
        # True only where the CPU has the vector steps
        assert set_vector_partition(True) in (True, False)
    finally:
        set_vector_partition(previous)


def test_repeated_splits_keep_nodes_contiguous():
    """Growing a tree level by level: every node's slice holds exactly the
    rows whose codes lead there, in increasing row order."""
    rng = np.random.default_rng(2)
    n_rows = 5000
    data = random_data(rng, n_rows, 5, np.uint8)
    codes = data.codes.astype(np.int64)
    missing = data.missing_code
    partition = RowPartition(np.arange(n_rows), n_rows)
    nodes = [(0, n_rows, np.ones(n_rows, bool))]  # (begin, end, member mask)
    for depth in range(4):
        feature = rng.integers(0, 5, len(nodes)).astype(np.int32)
        split_bin = rng.integers(0, 4, len(nodes)).astype(np.int32)
        default_left = rng.integers(0, 2, len(nodes)).astype(np.uint8)
        begin = np.array([n[0] for n in nodes], np.int64)
        end = np.array([n[1] for n in nodes], np.int64)
        n_left = partition.split_nodes(data, begin, end, feature, split_bin,
                                       default_left, n_threads=2)
        children = []
        for k, (b, e, member) in enumerate(nodes):
            code = codes[:, feature[k]]
            left = np.where(code == missing[feature[k]],
                            bool(default_left[k]), code <= split_bin[k])
            mid = b + int(n_left[k])
            children += [(b, mid, member & left), (mid, e, member & ~left)]
        nodes = children
        for b, e, member in nodes:
            np.testing.assert_array_equal(partition.row_index[b:e],
                                          np.flatnonzero(member))


def test_missing_code_follows_default_left():
    codes = np.array([[0], [2], [1], [2], [0]], dtype=np.uint8)  # 2: missing
    data = BinnedData(codes, [0, 3])
    for default_left, expected in [(1, [0, 1, 3, 4, 2]), (0, [0, 4, 1, 2, 3])]:
        partition = RowPartition(np.arange(5), 5)
        n_left = partition.split_nodes(data, [0], [5], [0], [0],
                                       [default_left], n_threads=1)
        assert partition.row_index.tolist() == expected
        assert n_left.tolist() == [4 if default_left else 2]
    # split_bin at the last value bin: present vs missing
    partition = RowPartition(np.arange(5), 5)
    n_left = partition.split_nodes(data, [0], [5], [0], [1], [0],
                                   n_threads=1)
    assert partition.row_index.tolist() == [0, 2, 4, 1, 3]
    assert n_left.tolist() == [3]


def test_no_nodes_and_empty_nodes():
    data = BinnedData(np.zeros((4, 1), np.uint8), [0, 2])
    partition = RowPartition(np.arange(4), 4)
    n_left = partition.split_nodes(data, np.zeros(0), np.zeros(0),
                                   np.zeros(0), np.zeros(0), np.zeros(0),
                                   n_threads=1)
    assert n_left.shape == (0,) and partition.row_index.tolist() == [0, 1, 2, 3]
    n_left = partition.split_nodes(data, [2, 4], [2, 4], [0, 0], [0, 0],
                                   [0, 0], n_threads=2)
    assert n_left.tolist() == [0, 0]
    assert partition.row_index.tolist() == [0, 1, 2, 3]


def test_threads_give_identical_results():
    data, partition, begin, end, feature, split_bin, default_left = (
        random_problem(5, np.uint8, n_rows=120_000))
    results = []
    for n_threads in (1, 2):
        p = RowPartition(np.asarray(partition.row_index).copy(),
                         partition.n_rows)
        n_left = p.split_nodes(data, begin, end, feature, split_bin,
                               default_left, n_threads=n_threads)
        results.append((np.asarray(p.row_index).copy(), n_left))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_constructor_copies_and_validates_rows():
    rows = np.array([0, 2, 5])
    partition = RowPartition(rows, 6)
    assert partition.row_index.dtype == np.int32
    assert partition.row_index.tolist() == [0, 2, 5] and partition.n_rows == 6
    assert RowPartition([], 0).row_index.shape == (0,)


def test_reset_starts_over_in_the_same_buffers():
    # a new tree on the same number of rows reuses the buffers; the result
    # is the partition a fresh object gives
    rng = np.random.default_rng(4)
    data = random_data(rng, 500, 3, np.uint8)
    partition = RowPartition(np.arange(0, 500, 2), 500)
    partition.split_nodes(data, [0], [250], [1], [2], [0], n_threads=1)
    buffer = partition.row_index
    rows = np.sort(rng.choice(500, 250, replace=False))
    partition.reset(rows)
    assert partition.row_index is buffer
    np.testing.assert_array_equal(partition.row_index, rows)
    fresh = RowPartition(rows, 500)
    for p in (partition, fresh):
        p.split_nodes(data, [0], [250], [2], [1], [1], n_threads=1)
    np.testing.assert_array_equal(partition.row_index, fresh.row_index)
    partition.reset(np.arange(7))     # another size: new buffers
    assert partition.row_index.tolist() == list(range(7))
    for bad in ([3, 2], [0, 500], [-1, 4]):
        with pytest.raises(ValueError):
            partition.reset(bad)



@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("fraction", [1.0, 0.6, 0.0])
def test_reset_to_active_keeps_the_active_rows_in_order(n_threads, fraction):
    """The rows of an active mask, in increasing order, as np.flatnonzero
    lists them (every row active: the identity, filled in parallel)."""
    rng = np.random.default_rng(5)
    n_rows = 300_000
    active = rng.random(n_rows) < fraction
    partition = RowPartition([], n_rows)
    partition.reset_to_active(active, n_threads)
    np.testing.assert_array_equal(partition.row_index,
                                  np.flatnonzero(active))
    with pytest.raises(ValueError):
        partition.reset_to_active(active[1:], n_threads)

# --------------------------------------------------------------------------
# Invalid inputs: a ValueError, never a crash or an out-of-bounds write.
# Each case runs in a child process so that a crash fails its own case only.
# --------------------------------------------------------------------------



# Large enough that a write past a slice lands outside the heap block.
_PRELUDE = """
import numpy as np
from skboost.tree._binning import BinnedData
from skboost.tree._partition import RowPartition, add_leaf_values
N = 200_000
codes = np.zeros((N, 2), dtype=np.uint8)
codes[::3, 0] = 1
codes[::2, 1] = 2
data = BinnedData(codes, np.array([0, 3, 6]))
partition = RowPartition(np.arange(N), N)
def split(**changes):
    args = dict(data=data, begin=np.array([0, N // 2]),
                end=np.array([N // 2, N]), feature=np.array([0, 1]),
                split_bin=np.array([0, 0]), default_left=np.array([0, 1]),
                n_threads=1)
    args.update(changes)
    before = partition.row_index.copy()
    try:
        return partition.split_nodes(**args)
    except ValueError:
        # validation happens before any row moves
        assert (partition.row_index == before).all()
        raise
"""

BAD_INPUTS = {
    "slice beyond the partition": "split(end=np.array([N // 2, N + 1]))",
    "slice before the partition": "split(begin=np.array([-1, N // 2]))",
    "slice reversed": "split(begin=np.array([N // 2 + 1, N // 2]))",
    "overlapping slices, same rows twice": (
        "split(begin=np.array([0, 0]), end=np.array([N, N]),"
        " split_bin=np.array([5, -1]))"),
    "overlapping slices, partly": (
        "split(begin=np.array([0, N // 4]), end=np.array([N // 2, N]),"
        " split_bin=np.array([5, -1]))"),
    "overlapping slices, listed out of order": (
        "split(begin=np.array([N // 4, 0]), end=np.array([N, N // 2]),"
        " split_bin=np.array([5, -1]))"),
    "feature beyond the data's": "split(feature=np.array([0, 2]))",
    "feature negative": "split(feature=np.array([-1, 0]))",
    "end of other length": "split(end=np.array([N]))",
    "feature of other length": "split(feature=np.array([0]))",
    "split_bin of other length": "split(split_bin=np.array([0, 0, 0]))",
    "default_left of other length": "split(default_left=np.array([1]))",
    "data of other rows than the partition": (
        "split(data=BinnedData(codes[:-1], np.array([0, 3, 6])),"
        " end=np.array([N // 2, N - 1]))"),
    "n_threads 0": "split(n_threads=0)",
    "n_threads -1": "split(n_threads=-1)",
    "partition rows beyond n_rows": "RowPartition(np.array([0, 5]), 5)",
    "partition rows negative": "RowPartition(np.array([-1, 2]), 5)",
    "partition rows 2-d": "RowPartition(np.zeros((2, 2)), 5)",
}

VALID = {
    "valid": (
        "n_left = split()\n"
        "assert n_left.tolist() == [N // 2 - len(range(0, N // 2, 3)),"
        " N // 2], n_left\n"
        "assert sorted(partition.row_index.tolist()) == list(range(N))"),
    "valid with threads": (
        "n_left = split(n_threads=2)\n"
        "assert sorted(partition.row_index.tolist()) == list(range(N))"),
}


test_valid_arguments_run, test_bad_inputs_raise_value_error = \
    snippet_input_tests(_PRELUDE, BAD_INPUTS, VALID)


# --------------------------------------------------------------------------
# add_leaf_values: each row of leaf k's slice gets value[k] once
# --------------------------------------------------------------------------

def _partition_of(row_index):
    partition = RowPartition(np.arange(row_index.shape[0], dtype=np.int32),
                             row_index.shape[0])
    np.asarray(partition.row_index)[:] = row_index
    return partition


@pytest.mark.parametrize("n_threads", [1, 2])
def test_add_leaf_values_matches_a_naive_loop(n_threads):
    rng = np.random.default_rng(3)
    n = 300
    row_index = rng.permutation(n).astype(np.int32)
    # slices covering part of the partition, some empty: one listed after
    # a slice with the same begin, one abutting a slice's end, one inside
    # another's range (they add nothing, and share no row)
    begin = np.array([0, 40, 40, 90, 120, 150, 160, 200], dtype=np.int64)
    end = np.array([40, 90, 40, 120, 120, 199, 160, 260], dtype=np.int64)
    value = rng.normal(size=begin.shape[0])
    raw = rng.normal(size=(n, 3))
    expected = raw.copy()
    for k in range(begin.shape[0]):
        for i in range(begin[k], end[k]):
            expected[row_index[i], 1] += value[k]
    add_leaf_values(_partition_of(row_index), begin, end, value, raw,
                    column=1, n_threads=n_threads)
    np.testing.assert_array_equal(raw, expected)


@pytest.mark.parametrize("begin, end", [
    ([0, 5], [10, 15]),      # rows 5..9 in both
    ([0, 0], [10, 3]),       # one inside the other
    ([-1], [4]),             # outside the partition
    ([0], [301]),
    ([6], [5]),              # end before begin
])
def test_add_leaf_values_rejects_bad_slices(begin, end):
    row_index = np.arange(300, dtype=np.int32)
    raw = np.zeros((300, 1))
    with pytest.raises(ValueError, match="outside the partition or overl"):
        add_leaf_values(_partition_of(row_index),
                        np.array(begin, dtype=np.int64),
                        np.array(end, dtype=np.int64),
                        np.ones(len(begin)), raw, column=0, n_threads=1)
    assert not raw.any()


# --------------------------------------------------------------------------
# The last level's margin update without its partition
# (_leaf_margins.add_group_values, which SplitLeafRows.add_values calls),
# against the naive split (naive_split) then a loop adding each row's leaf
# value; its bad inputs are in test_leaf_margins.py
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("seed", range(0, 40, 8))
def test_split_group_values_match_split_then_leaf_values(dtype, n_threads,
                                                         seed):
    rng = np.random.default_rng(seed)
    # large enough for several blocks of rows on two threads
    data, partition, begin, end, feature, split_bin, default_left = (
        random_problem(seed, dtype, n_rows=int(rng.integers(1, 70_000))))
    value_left = rng.normal(size=begin.shape[0])
    value_right = rng.normal(size=begin.shape[0])
    raw = rng.normal(size=(data.n_rows, 2))
    # the oracle: the rows split naively, then each left row gets its
    # node's left value and each right row its right value, in a loop
    rows_after, n_left = naive_split(np.asarray(partition.row_index),
                                     data.codes, data.missing_code, begin,
                                     end, feature, split_bin, default_left)
    expected = raw.copy()
    for k in range(begin.shape[0]):
        mid = begin[k] + n_left[k]
        expected[rows_after[begin[k]:mid], 1] += value_left[k]
        expected[rows_after[mid:end[k]], 1] += value_right[k]
    row_index_before = np.asarray(partition.row_index).copy()
    add_group_values(partition.row_index, begin, end, feature, split_bin,
                     default_left, value_left, value_right, data.codes,
                     data.missing_code, raw, column=1, n_threads=n_threads)
    np.testing.assert_array_equal(raw, expected)
    # the partition is only read
    np.testing.assert_array_equal(partition.row_index, row_index_before)
