"""A level's node-table bookkeeping (``_node_table.split_level``) against
the numpy code it replaced in ``PooledHistogramFinder.apply_splits``, on
random node tables; its bad inputs are ValueErrors."""

import numpy as np
import pytest

from skboost.tree._node_table import split_level


def random_level(rng, n_nodes, m, capacity=None):
    """A node table whose nodes 0 .. n_nodes-1 own disjoint slices of a
    partition, and a level splitting some of them into new ids."""
    capacity = capacity or 4 * n_nodes + 8
    sizes = rng.integers(0, 50, size=n_nodes)
    stops = np.cumsum(sizes)
    table = {"begin": np.zeros(capacity, np.int64),
             "end": np.zeros(capacity, np.int64),
             "hist_row": np.full(capacity, -7, np.int64),
             "sums": rng.integers(-10**12, 10**12, size=(capacity, m))}
    table["begin"][:n_nodes], table["end"][:n_nodes] = stops - sizes, stops
    table["hist_row"][:n_nodes] = rng.permutation(n_nodes)
    nodes = np.sort(rng.choice(n_nodes, size=rng.integers(1, n_nodes + 1),
                               replace=False)).astype(np.int64)
    # the children take new ids, in any order
    children = n_nodes + rng.permutation(2 * nodes.shape[0])
    left, right = children[0::2].astype(np.int64), children[1::2].astype(
        np.int64)
    n_left = rng.integers(0, sizes[nodes] + 1).astype(np.int64)
    left_sums = rng.integers(-10**12, 10**12, size=(nodes.shape[0], m))
    return table, nodes, left, right, n_left, left_sums


def numpy_split_level(t, nodes, left, right, n_left, left_sums, small_rows):
    """The numpy bookkeeping ``split_level`` replaced (apply_splits of
    the session's start), the build and subtraction left out."""
    begin, end = t["begin"][nodes], t["end"][nodes]
    mid = begin + n_left
    left_smaller = n_left <= end - mid
    small = np.where(left_smaller, left, right)
    large = left + right - small
    hist_row = t["hist_row"]
    parent_rows = hist_row[nodes]
    hist_row[nodes] = -1
    if small_rows is not None:
        hist_row[small], hist_row[large] = small_rows, parent_rows
    else:
        hist_row[left] = hist_row[right] = -1
    t["begin"][left], t["end"][left] = begin, mid
    t["begin"][right], t["end"][right] = mid, end
    t["sums"][right] = t["sums"][nodes] - left_sums
    t["sums"][left] = left_sums
    return (left_smaller, np.where(left_smaller, begin, mid),
            np.where(left_smaller, mid, end), parent_rows)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("m", [2, 6])
@pytest.mark.parametrize("find_next", [True, False])
def test_split_level_matches_numpy(seed, m, find_next):
    rng = np.random.default_rng(seed)
    table, nodes, left, right, n_left, left_sums = random_level(
        rng, int(rng.integers(1, 40)), m)
    small_rows = (rng.integers(0, 100, size=nodes.shape[0]).astype(np.int64)
                  if find_next else None)
    expected_table = {k: v.copy() for k, v in table.items()}
    expected = numpy_split_level(expected_table, nodes, left, right, n_left,
                                 left_sums, small_rows)
    got = split_level(table["begin"], table["end"], table["hist_row"],
                      table["sums"], nodes, left, right, n_left, left_sums,
                      small_rows)
    for name in table:
        np.testing.assert_array_equal(table[name], expected_table[name],
                                      err_msg=name)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype


def test_split_level_reads_strided_node_ids():
    """Node ids as columns of a 2-D array (the driver's children are)."""
    rng = np.random.default_rng(5)
    table, nodes, left, right, n_left, left_sums = random_level(rng, 10, 2)
    pairs = np.column_stack([left, right])
    expected_table = {k: v.copy() for k, v in table.items()}
    numpy_split_level(expected_table, nodes, left, right, n_left, left_sums,
                      None)
    split_level(table["begin"], table["end"], table["hist_row"],
                table["sums"], nodes, pairs[:, 0], pairs[:, 1], n_left,
                left_sums, None)
    for name in table:
        np.testing.assert_array_equal(table[name], expected_table[name])


def _bad(change):
    """split_level's arguments on a valid level, with ``change`` applied
    (a dict of replacements by name)."""
    rng = np.random.default_rng(0)
    table, nodes, left, right, n_left, left_sums = random_level(rng, 6, 2)
    nodes = nodes[:3] if nodes.shape[0] >= 3 else nodes
    args = dict(begin=table["begin"], end=table["end"],
                hist_row=table["hist_row"], sums=table["sums"], nodes=nodes,
                left=left[:nodes.shape[0]], right=right[:nodes.shape[0]],
                n_left=np.zeros(nodes.shape[0], np.int64),
                left_sums=left_sums[:nodes.shape[0]],
                small_rows=np.zeros(nodes.shape[0], np.int64))
    args.update(change(args))
    return args


BAD = {
    "short end": (lambda a: {"end": a["end"][:-1]}, "one entry per node id"),
    "short sums": (lambda a: {"sums": a["sums"][:-1]},
                   "one entry per node id"),
    "short left": (lambda a: {"left": a["left"][:-1]},
                   "one entry per split node"),
    "short n_left": (lambda a: {"n_left": a["n_left"][:-1]},
                     "one entry per split node"),
    "sums width": (lambda a: {"left_sums": np.zeros((a["nodes"].shape[0], 3),
                                                    np.int64)},
                   "as many sums"),
    "short small_rows": (lambda a: {"small_rows": a["small_rows"][:-1]},
                         "small_rows"),
    "node past the table": (
        lambda a: {"nodes": np.concatenate([a["nodes"][:-1],
                                            [a["begin"].shape[0]]])},
        "node ids"),
    "negative child": (lambda a: {"right": -a["right"]}, "node ids"),
    "child past the table": (lambda a: {"left": a["left"] + 10**6},
                             "node ids"),
    "negative n_left": (lambda a: {"n_left": a["n_left"] - 1}, "n_left"),
    "n_left past the slice": (
        lambda a: {"n_left": (a["end"] - a["begin"])[a["nodes"]] + 1},
        "n_left"),
}


@pytest.mark.parametrize("change, message", list(BAD.values()), ids=list(BAD))
def test_split_level_bad_inputs_are_value_errors(change, message):
    args = _bad(change)
    before = {k: args[k].copy() for k in ("begin", "end", "hist_row", "sums")}
    with pytest.raises(ValueError, match=message):
        split_level(**args)
    for name, array in before.items():   # nothing written
        np.testing.assert_array_equal(args[name], array)
