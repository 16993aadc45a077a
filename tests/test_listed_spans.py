"""A level's children histograms touched on their parents' category lists
only (``_categorical_scan.ListedSpans``): the smaller child zeroed on them
before it is built (``build_histograms(listed=)``), the larger one
subtracted on them.

Oracles: numpy's histograms (``np.add.at``) on the listed bins, and the
untouched prior content of every other bin; for whole fits, the same fit
with every histogram row zeroed whole (a pool whose rows are filled with
junk before a node takes them must give the same model, while some junk
is left in bins off the lists), and a fit whose unscanned features pass no
list on, which reads junk (the check can fail).
"""

import numpy as np
import pytest

from skboost import BoostRegressor
from skboost.tree._binning import BinnedData
from skboost.tree._categorical_scan import ListedSpans, NodeCategoryLists
from skboost.tree._hist_split import find_best_splits_hist
from skboost.tree._histogram import FixedPointGradients, build_histograms
from skboost.tree._partition import RowPartition
from skboost.tree.finders import hist as hist_finders
from _oracles import split_context

REG = (1.0, 0.0, 0.0, 1.0)     # lambda, alpha, max_delta_step, min_child_weight
JUNK = 7_777_777
# a fit's junk: a category of a strongly positive gradient (the most
# negative leaf weight, first in a sorted scan's order) and a hessian
# of a few rows (in fixed point), the best split wherever it is read
JUNK_G, JUNK_H = 1 << 58, 1 << 53


# the features' bins (the missing bin last in each): a wide categorical
# feature (60,000 categories), six numeric ones, a narrow categorical one
WIDTHS = (60_001,) + (16,) * 6 + (301,)


def layout():
    bin_ptr = np.r_[0, np.cumsum(WIDTHS)].astype(np.int64)
    flags = np.array([1] + [0] * 6 + [1], np.uint8)
    return bin_ptr, flags


def random_codes(rng, n_rows):
    """uint16 codes (n_rows, 8): Zipf-like categories, 3% missing."""
    columns = []
    for n_bins in WIDTHS:
        p = 1.0 / (np.arange(n_bins - 1) + 5.0)
        c = rng.choice(n_bins - 1, size=n_rows, p=p / p.sum())
        c[rng.random(n_rows) < 0.03] = n_bins - 1
        columns.append(c)
    return np.ascontiguousarray(np.column_stack(columns), dtype=np.uint16)


def naive_histogram(codes, bin_ptr, quantized, rows):
    out = np.zeros((bin_ptr[-1], 2), dtype=np.int64)
    for f in range(codes.shape[1]):
        np.add.at(out[:, 0], bin_ptr[f] + codes[rows, f], quantized[rows, 0])
        np.add.at(out[:, 1], bin_ptr[f] + codes[rows, f], quantized[rows, 1])
    return out


def scanned_lists(hists, bin_ptr, flags):
    """The lists of a scan of ``hists`` (every feature allowed)."""
    lists = NodeCategoryLists([None] * hists.shape[0], bin_ptr, flags)
    find_best_splits_hist(
        hists, hists[:, :bin_ptr[1]].sum(axis=1), bin_ptr,
        np.zeros((1, bin_ptr[-1])),
        np.ones((hists.shape[0], flags.shape[0]), dtype=np.uint8),
        context=split_context(REG, 1, scale_g=4.0, scale_h=8.0,
                              max_cat_to_onehot=1, max_cat_threshold=8),
        categorical=flags, category_lists=lists)
    return lists


def span_mask(spans, k, bin_ptr):
    """Bool (n_bins,): the bins of node k's spans."""
    counts = spans.listed_counts()[k]
    mask = np.zeros(bin_ptr[-1], dtype=bool)
    for f, count in enumerate(counts):
        if count < 0:
            mask[bin_ptr[f]:bin_ptr[f + 1]] = True
    return mask, counts


@pytest.mark.parametrize("n_threads", [1, 2])
def test_listed_build_zeroes_and_fills_the_spans_only(n_threads):
    """Children of four parents built into rows full of junk: on their
    spans they are numpy's histograms; a listed feature's other bins keep
    the junk in a node built by one thread, and hold anything in one of
    18,000 rows (two tasks: with two threads, partial histograms zeroed
    on the spans and added up). The wide feature's lists are short
    (listed), the narrow one's long (whole), and the parent without lists
    spans everything."""
    rng = np.random.default_rng(11)
    n_rows = 40_000
    codes = random_codes(rng, n_rows)
    bin_ptr, flags = layout()
    data = BinnedData(codes, bin_ptr)
    gpair = np.column_stack([rng.normal(size=n_rows),
                             rng.uniform(0.1, 1, n_rows)]).astype(np.float32)
    active = np.ones(n_rows, np.uint8)
    gradients = FixedPointGradients(gpair, None, active, n_threads)
    quantized = gradients.quantized(active, 1)
    # contiguous blocks of rows (the rows are drawn alike): each child's
    # rows are the first of its parent's, in the increasing order a
    # partition keeps
    parents = np.split(np.arange(n_rows), [20_000, 26_000, 33_000])
    parent_hists = np.stack([naive_histogram(codes, bin_ptr, quantized, rows)
                             for rows in parents])
    lists = scanned_lists(parent_hists, bin_ptr, flags)
    # each child: some of its parent's rows (so among its categories)
    children = [rows[:int(0.9 * rows.shape[0]) if k == 0 else rows.shape[0] // 3]
                for k, rows in enumerate(parents)]
    spans = ListedSpans([(lists, 0), (lists, 1), None, (lists, 3)], bin_ptr,
                        flags)
    counts = spans.listed_counts()
    assert np.all(counts[[0, 1, 3], 0] >= 0)          # wide: listed
    assert np.all(counts[:, 1:] == -1) and np.all(counts[2] == -1)
    partition = RowPartition(np.concatenate(children), n_rows)
    ends = np.cumsum([c.shape[0] for c in children])
    begin, end = np.r_[0, ends[:-1]], ends
    pool = np.full((6, bin_ptr[-1], 2), JUNK, dtype=np.int64)
    hist_rows = np.array([4, 1, 5, 2])
    build_histograms(data, partition, gradients, begin, end, pool, n_threads,
                     hist_rows=hist_rows, listed=spans)
    for k, rows in enumerate(children):
        expected = naive_histogram(codes, bin_ptr, quantized, rows)
        got = pool[hist_rows[k]]
        mask, counts = span_mask(spans, k, bin_ptr)
        for f in np.flatnonzero(counts >= 0):
            listed = lists.node_list(k, f)
            mask[bin_ptr[f] + listed] = True
            mask[bin_ptr[f + 1] - 1] = True
        np.testing.assert_array_equal(got[mask], expected[mask])
        # every row's bin is on the spans: nothing added elsewhere
        assert np.all(expected[~mask] == 0)
        if k != 2:
            assert (~mask).sum() > 3000   # most wide bins left alone
        if k != 0:   # built by one thread, straight into its row
            assert np.all(got[~mask] == JUNK)
        elif n_threads == 2:   # added up from partial histograms
            assert not np.all(got[~mask] == JUNK)
    assert np.all(pool[[0, 3]] == JUNK)


def test_listed_build_rejects_spans_of_other_nodes_or_layouts():
    rng = np.random.default_rng(2)
    codes = random_codes(rng, 100)
    bin_ptr, flags = layout()
    data = BinnedData(codes, bin_ptr)
    gradients = FixedPointGradients(
        rng.uniform(0.1, 1, (100, 2)).astype(np.float32), None,
        np.ones(100, np.uint8), 1)
    partition = RowPartition(np.arange(100), 100)
    pool = np.zeros((2, bin_ptr[-1], 2), dtype=np.int64)
    other = np.r_[bin_ptr[:-1], bin_ptr[-1] - 1, bin_ptr[-1]]
    for spans in (ListedSpans([None, None], bin_ptr, flags),
                  ListedSpans([None], other, np.r_[flags, 0])):
        with pytest.raises(ValueError, match="listed"):
            build_histograms(data, partition, gradients, [0], [100], pool, 1,
                             hist_rows=[0], listed=spans)
    lists = NodeCategoryLists([None], bin_ptr, flags)
    for parents, bins in (([("not lists", 0)], bin_ptr),
                          ([(lists, 1)], bin_ptr),
                          ([(lists, 0)], other),
                          ([None], np.array([0, 5, 5]))):
        with pytest.raises(ValueError):
            ListedSpans(parents, bins, np.ones(len(bins) - 1, np.uint8))


def categorical_data(rng, n_rows=8000):
    cards = (6, 50, 2000)
    columns = []
    y = np.zeros(n_rows)
    for k in cards:
        p = 1.0 / (np.arange(k) + 4.0)
        c = rng.choice(k, size=n_rows, p=p / p.sum())
        y += rng.normal(size=k)[c]
        c = c.astype(np.float32)
        c[rng.random(n_rows) < 0.03] = np.nan
        columns.append(c)
    numeric = rng.normal(size=(n_rows, 2)).astype(np.float32)
    y += numeric @ np.array([0.5, -1.0]) + rng.normal(size=n_rows)
    return np.column_stack(columns + [numeric]), y


def fit(X, y, **params):
    model = BoostRegressor(n_estimators=6, max_depth=6, tree_method="hist",
                           categorical_features=[0, 1, 2], n_jobs=2,
                           colsample_bynode=0.5, random_state=1, **params)
    return model.fit(X, y)


def fill_taken_rows_with_junk(monkeypatch):
    """Every histogram row a node takes first filled with junk; returns
    the list of pools made, to look at after the fit."""
    made = []
    take = hist_finders.HistogramPool.take

    def take_junk(self, n):
        rows = take(self, n)
        self.array[rows, :, 0] = JUNK_G
        self.array[rows, :, 1] = JUNK_H
        if not any(p is self for p in made):
            made.append(self)
        return rows

    monkeypatch.setattr(hist_finders.HistogramPool, "take", take_junk)
    return made


def test_a_fit_reads_no_bin_its_lists_leave_alone(monkeypatch):
    """Junk in every taken row changes nothing (the fit without it is the
    oracle), though junk stays in bins off the lists; column sampling
    leaves features unscanned, whose visited lists are passed on."""
    X, y = categorical_data(np.random.default_rng(4))
    clean = [fit(X, y, max_cat_threshold=t) for t in (4, 64)]
    pools = fill_taken_rows_with_junk(monkeypatch)
    with_junk = [fit(X, y, max_cat_threshold=t) for t in (4, 64)]
    for a, b in zip(clean, with_junk):
        assert a.get_booster().get_dump(with_stats=True) == (
            b.get_booster().get_dump(with_stats=True))
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert any(np.any(p.array[:, :, 0] == JUNK_G) for p in pools)


def test_unscanned_features_must_pass_their_lists_on(monkeypatch):
    """The check above can fail: when a node that did not scan a feature
    passes no list on, its children read that feature's every bin, some
    of them junk, and the model changes."""
    X, y = categorical_data(np.random.default_rng(4))
    clean = fit(X, y)
    fill_taken_rows_with_junk(monkeypatch)

    def scanned_without_passing_on(self, nodes, lists):
        if lists is not None and self.nested:
            for k, node in enumerate(nodes.tolist()):
                self._scanned[node] = (lists, k)

    monkeypatch.setattr(hist_finders.CategoryListKeeper, "scanned",
                        scanned_without_passing_on)
    broken = fit(X, y)
    assert not np.array_equal(clean.predict(X), broken.predict(X))
