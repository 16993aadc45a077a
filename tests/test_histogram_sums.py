"""``sum_histogram_rows`` (the distributed reduce's sum, fused with the
subtraction from the parents) against a naive numpy oracle, and its
checks of bad input (never a read out of bounds)."""

import numpy as np
import pytest

from skboost.tree._histogram_sums import sum_histogram_rows


def _naive(out, out_rows, sources, parent_rows):
    """The oracle: numpy, node by node."""
    out = out.copy()
    width = out.shape[1]
    for k, target in enumerate(out_rows):
        total = np.zeros((width, 2), dtype=np.int64)
        for hist, rows, first in sources:
            row = k if rows is None else rows[k]
            total += hist[row, first:first + width]
        out[target] = total
        if parent_rows is not None:
            out[parent_rows[k]] -= total
    return out


def _sources(rng, n_src, n_nodes, width):
    """Sources of every form the reduce passes: whole pieces (rows None,
    from bin 0) and rows of larger histograms at an offset."""
    sources = []
    for j in range(n_src):
        if j % 2:
            sources.append((rng.integers(-2**58, 2**58, size=(
                n_nodes, width, 2)), None, 0))
        else:
            n_hist, first = n_nodes + 3, int(rng.integers(0, 5))
            hist = rng.integers(-2**58, 2**58, size=(n_hist, first + width
                                                     + 2, 2))
            rows = rng.choice(n_hist, size=n_nodes, replace=False)
            sources.append((hist, rows, first))
    return sources


@pytest.mark.parametrize("n_src", [1, 2, 3, 4])
@pytest.mark.parametrize("subtract", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_sums_and_subtracts_as_the_naive_oracle(n_src, subtract, n_threads):
    rng = np.random.default_rng(n_src + 10 * subtract)
    for n_nodes, width in ((1, 1), (5, 37), (17, 300), (0, 4)):
        sources = _sources(rng, n_src, n_nodes, width)
        n_out = 2 * n_nodes + 3
        out = rng.integers(-2**58, 2**58, size=(n_out, width, 2))
        chosen = rng.choice(n_out, size=2 * n_nodes, replace=False)
        out_rows, parent_rows = chosen[:n_nodes], chosen[n_nodes:]
        parents = parent_rows if subtract else None
        expected = _naive(out, out_rows, sources, parents)
        # read-only sources (a peer's outbox is mapped read-only)
        for hist, _, _ in sources:
            hist.flags.writeable = False
        sum_histogram_rows(out, out_rows, sources, parent_rows=parents,
                           n_threads=n_threads)
        assert np.array_equal(out, expected)


def test_rows_not_given_are_untouched_and_the_order_of_sources_is_free():
    rng = np.random.default_rng(3)
    sources = _sources(rng, 3, 4, 9)
    out = np.full((10, 9, 2), -7, dtype=np.int64)
    other = out.copy()
    sum_histogram_rows(out, [8, 1, 4, 6], sources, parent_rows=None)
    sum_histogram_rows(other, [8, 1, 4, 6], sources[::-1])
    assert np.array_equal(out, other)
    assert (out[[0, 2, 3, 5, 7, 9]] == -7).all()


def test_bad_input_is_a_clear_error():
    hist = np.zeros((3, 8, 2), dtype=np.int64)
    out = np.zeros((4, 5, 2), dtype=np.int64)
    cases = [
        (dict(out_rows=[0, 0], sources=[(hist, [0, 1], 0)]), "distinct"),
        (dict(out_rows=[0], sources=[(hist, [0], 0)], parent_rows=[0]),
         "distinct"),
        (dict(out_rows=[4], sources=[(hist, [0], 0)]), "distinct"),
        (dict(out_rows=[-1], sources=[(hist, [0], 0)]), "distinct"),
        (dict(out_rows=[0, 1], sources=[(hist, [0, 1], 0)],
              parent_rows=[2]), "one row per node"),
        (dict(out_rows=[0], sources=[]), "at least one"),
        (dict(out_rows=[0], sources=[(hist, [3], 0)]), "rows of its hist"),
        (dict(out_rows=[0], sources=[(hist, [-1], 0)]), "rows of its hist"),
        (dict(out_rows=[0, 1], sources=[(hist, [0], 0)]), "one per node"),
        (dict(out_rows=[0], sources=[(hist, [0], 4)]), "outside its 8 bins"),
        (dict(out_rows=[0], sources=[(hist, [0], -1)]), "outside"),
        (dict(out_rows=[0], sources=[(hist, [0])]), r"\(hist, rows, first\)"),
        (dict(out_rows=[0], sources=[(np.zeros((3, 8, 3), dtype=np.int64),
                                      [0], 0)]), "n_bins, 2"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            sum_histogram_rows(out, **kwargs)
    with pytest.raises((ValueError, TypeError)):
        sum_histogram_rows(out, [0], [(hist.astype(np.float64), [0], 0)])
    with pytest.raises(ValueError, match="shape"):
        sum_histogram_rows(np.zeros((4, 5, 3), dtype=np.int64), [0],
                           [(hist, [0], 0)])
