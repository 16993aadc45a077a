"""The column-wise histogram scans of sparse input (``_column_scan``): the
walk of whole columns (``find_best_splits_columns``) and the walk of the
entries grouped by node (``CodeBlocks``, ``find_best_splits_groups``).

Oracle: the histogram finder (``find_best_splits_hist``) on each node's
histogram, built here in numpy from the stored entries (bins by
``np.add.at``, the missing bin as the node's totals minus its present
entries): the scans promise exactly its records, without building a
histogram. The models are checked against the dense growers in
``test_sparse.py``.
"""

import numpy as np
import pytest

from skboost.tree._column_scan import (BinnedColumns, CodeBlocks,
                                       find_best_splits_columns,
                                       find_best_splits_groups)
from skboost.tree._context import SplitContext
from skboost.tree._hist_split import find_best_splits_hist
from skboost.tree._presorted import SortedColumns

SCALE = 2.0 ** 10


def random_columns(rng, n_rows, n_features):
    """Presorted columns of random stored entries whose values are their
    bins (several entries per bin), with each feature's bin layout."""
    n_value_bins = rng.integers(1, 9, n_features)
    bin_ptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(n_value_bins + 1, out=bin_ptr[1:])
    col_ptr, rows, codes = [0], [], []
    for f in range(n_features):
        stored = np.flatnonzero(rng.random(n_rows) < rng.uniform(0.05, 0.9))
        code = rng.integers(0, n_value_bins[f], stored.size)
        order = np.lexsort((stored, code))     # value order, ties by row
        rows.append(stored[order])
        codes.append(code[order])
        col_ptr.append(col_ptr[-1] + stored.size)
    rows = np.concatenate(rows).astype(np.int32)
    codes = np.concatenate(codes).astype(np.int32)
    columns = SortedColumns(np.array(col_ptr), codes.astype(np.float32), rows,
                            n_rows)
    return BinnedColumns(columns, codes, bin_ptr)


def naive_histograms(binned, quantized, row_slot, n_nodes):
    """Each node's histogram of fixed-point sums, its missing bin the
    node's totals minus its present entries."""
    columns = binned.columns
    bin_ptr = np.asarray(binned.bin_ptr)
    col_ptr = np.asarray(columns.col_ptr)
    rows = np.asarray(columns.rows)
    codes = np.asarray(binned.entry_codes)
    hist = np.zeros((n_nodes, bin_ptr[-1], 2), dtype=np.int64)
    sums = np.zeros((n_nodes, 2), dtype=np.int64)
    in_node = row_slot >= 0
    np.add.at(sums, row_slot[in_node], quantized[in_node])
    for f in range(columns.n_features):
        block = slice(col_ptr[f], col_ptr[f + 1])
        slot = row_slot[rows[block]]
        keep = slot >= 0
        np.add.at(hist, (slot[keep], bin_ptr[f] + codes[block][keep]),
                  quantized[rows[block]][keep])
        present = hist[:, bin_ptr[f]:bin_ptr[f + 1] - 1].sum(axis=1)
        hist[:, bin_ptr[f + 1] - 1] = sums - present
    return hist, sums


def level(rng, n_rows, n_slots):
    quantized = np.column_stack([
        rng.integers(-1000, 1000, n_rows),
        rng.integers(1, 1000, n_rows)]).astype(np.int64)
    row_slot = rng.integers(-1, n_slots, n_rows).astype(np.int32)
    return quantized, row_slot


def context(n_threads, **params):
    return SplitContext(n_threads=n_threads, scale_g=SCALE, scale_h=SCALE,
                        **params)


def assert_records_equal(ours, expected):
    np.testing.assert_array_equal(ours["feature"], expected["feature"])
    split = expected["feature"] >= 0
    for name in expected.dtype.names:
        np.testing.assert_array_equal(ours[name][split],
                                      expected[name][split], err_msg=name)


REGULARISATION = [dict(reg_lambda=1.0, min_child_weight=1.0),
                  dict(reg_lambda=0.5, reg_alpha=0.3, max_delta_step=0.7,
                       min_child_weight=4.0)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("params", REGULARISATION)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_grouped_scan_equals_the_histogram_finder(seed, params, n_threads):
    rng = np.random.default_rng(seed)
    n_rows, n_features, n_slots = 300, 7, 5
    binned = random_columns(rng, n_rows, n_features)
    quantized, row_slot = level(rng, n_rows, n_slots)
    allowed = (rng.random((n_slots, n_features)) < 0.8).astype(np.uint8)
    thresholds = np.arange(binned.bin_ptr[-1], dtype=np.float64)
    hist, sums = naive_histograms(binned, quantized, row_slot, n_slots)
    ctx = context(n_threads, **params)
    expected = find_best_splits_hist(hist, sums, binned.bin_ptr,
                                     thresholds[None], allowed, context=ctx)
    assert (expected["feature"] >= 0).sum() >= 2    # the case has splits
    code_blocks = CodeBlocks(binned)
    code_blocks.blocks.start(row_slot, n_slots, n_threads)
    grouped = find_best_splits_groups(code_blocks, thresholds, quantized,
                                      sums, allowed, context=ctx)
    assert_records_equal(grouped, expected)
    # and the walk of whole columns, the other path, gives the same
    assert_records_equal(find_best_splits_columns(
        binned, thresholds, row_slot, quantized, sums, allowed,
        context=ctx), expected)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_grouped_scan_after_a_split_of_the_groups(seed, n_threads):
    # the groups of a level split into the children's groups (planned by
    # NodeBlocks.split, carried out inside the scan) and scanned: the
    # records of the children's histograms; a second level after it
    rng = np.random.default_rng(100 + seed)
    n_rows, n_features = 400, 6
    binned = random_columns(rng, n_rows, n_features)
    quantized, row_slot = level(rng, n_rows, 3)
    code_blocks = CodeBlocks(binned)
    code_blocks.blocks.start(row_slot, 3, n_threads)
    thresholds = np.arange(binned.bin_ptr[-1], dtype=np.float64)
    ctx = context(n_threads)
    for depth in range(2):
        n_slots = code_blocks.blocks.n_slots
        # slot 1 becomes a leaf; the others split into 2k, 2k+1 at random
        left_slot = np.full(n_slots, -1, dtype=np.int32)
        split = np.arange(n_slots) != 1
        left_slot[split] = 2 * np.arange(split.sum(), dtype=np.int32)
        n_next = 2 * int(split.sum())
        child = np.full(n_rows, -1, dtype=np.int32)
        moving = (row_slot >= 0) & split[np.maximum(row_slot, 0)]
        child[moving] = (left_slot[row_slot[moving]]
                         + rng.integers(0, 2, moving.sum()))
        code_blocks.blocks.split(child, left_slot, n_next, n_threads)
        row_slot = child
        # some nodes may not use some features; feature 0 no node: its
        # groups are only moved
        allowed = (rng.random((n_next, n_features)) < 0.7).astype(np.uint8)
        allowed[:, 0] = 0
        hist, sums = naive_histograms(binned, quantized, row_slot, n_next)
        expected = find_best_splits_hist(hist, sums, binned.bin_ptr,
                                         thresholds[None], allowed,
                                         context=ctx)
        assert code_blocks.blocks.split_pending
        assert_records_equal(find_best_splits_groups(
            code_blocks, thresholds, quantized, sums, allowed, context=ctx),
            expected)
        assert not code_blocks.blocks.split_pending


def test_grouped_scan_refuses_blocks_grouped_for_another_level():
    rng = np.random.default_rng(7)
    binned = random_columns(rng, 50, 3)
    quantized, row_slot = level(rng, 50, 2)
    code_blocks = CodeBlocks(binned)
    code_blocks.blocks.start(row_slot, 2, 1)
    _, sums = naive_histograms(binned, quantized, row_slot, 3)
    thresholds = np.arange(binned.bin_ptr[-1], dtype=np.float64)
    with pytest.raises(ValueError, match="grouped for 2 slots, not 3"):
        find_best_splits_groups(code_blocks, thresholds, quantized, sums,
                                np.ones((3, 3), dtype=np.uint8),
                                context=context(1))
    with pytest.raises(ValueError, match="one threshold per bin"):
        find_best_splits_groups(code_blocks, thresholds[:-1], quantized,
                                sums[:2], np.ones((2, 3), dtype=np.uint8),
                                context=context(1))


def test_code_blocks_refuse_absent_entries_read_as_zero():
    columns = SortedColumns(np.array([0, 2]), np.array([1.0, 2.0]),
                            np.array([0, 1]), 3, missing_ptr=np.array([0, 0]),
                            missing_rows=np.zeros(0, dtype=np.int32))
    binned = BinnedColumns(columns, np.array([0, 1]), np.array([0, 3]),
                           zero_codes=np.array([0]))
    with pytest.raises(ValueError, match="absent entries missing"):
        CodeBlocks(binned)
