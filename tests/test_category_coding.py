"""Coding of numeric columns named categorical: the categories found at
fit (``value_categories``) and the codes of a column against them
(``value_codes``), on the counted / table paths for whole-number columns
and the sorted / searched path for the others.

Oracles: Python's set and dict of the column's values (a category is a
distinct non-NaN value; its code its index in sorted order; -0.0 is the
same category as 0.0, as ``==`` says), written without numpy's sort or
search.
"""

import math

import numpy as np
import pytest

from skboost._input.categorical import value_categories, value_codes


def naive_categories(column):
    values = {float(v) for v in column.tolist() if not math.isnan(v)}
    return sorted(values)


def naive_codes(column, categories):
    code_of = {float(c): i for i, c in enumerate(categories)}
    return np.array([code_of.get(float(v), math.nan) if not math.isnan(v)
                     else math.nan for v in column.tolist()],
                    dtype=np.float32)


def columns(rng):
    """float32 columns of every kind the coding meets."""
    codes = rng.integers(0, 300, size=2000).astype(np.float32)
    codes[rng.random(2000) < 0.05] = np.nan
    sparse_codes = (rng.integers(0, 50, size=500) * 1000).astype(np.float32)
    fractional = codes + 0.5
    negative = codes - 100
    huge = codes.copy()
    huge[3] = 2.0 ** 21      # beyond the counted range: sorted instead
    signed_zero = codes.copy()
    signed_zero[:5] = -0.0
    return {"codes": codes, "sparse codes": sparse_codes,
            "fractional": fractional, "negative": negative, "huge": huge,
            "signed zero": signed_zero,
            "strided": np.column_stack([codes, fractional])[:, 0]}


@pytest.mark.parametrize("kind", ["codes", "sparse codes", "fractional",
                                  "negative", "huge", "signed zero",
                                  "strided"])
def test_categories_and_codes_match_naive_sets(kind):
    column = columns(np.random.default_rng(0))[kind]
    categories = value_categories(column, "c")
    assert categories.dtype == np.float64
    np.testing.assert_array_equal(categories, naive_categories(column))
    # codes of the training column, and of new values: unseen whole
    # numbers, fractions, negatives, NaN, -0.0, values past the largest
    new = np.concatenate([column, np.array(
        [np.nan, -0.0, 0.0, 0.5, -1.0, 1e9, 299.0, 301.0, 2.0 ** 21,
         np.inf, -np.inf], dtype=np.float32)])
    codes = value_codes(new, categories)
    assert codes.dtype == np.float32
    np.testing.assert_array_equal(codes, naive_codes(new, categories))


def test_codes_against_loaded_categories():
    """Categories given as a model stores them (float64, maybe not whole
    numbers or not starting at 0) code a column as the naive lookup."""
    rng = np.random.default_rng(1)
    column = rng.integers(-3, 12, size=400).astype(np.float32)
    for categories in (np.array([0.0, 2.0, 5.0, 11.0]),
                       np.array([-2.0, 0.0, 3.0]),
                       np.array([0.25, 4.0]), np.array([7.0])):
        np.testing.assert_array_equal(value_codes(column, categories),
                                      naive_codes(column, categories))


def test_every_value_missing_is_an_error():
    with pytest.raises(ValueError, match="'c' has no categories"):
        value_categories(np.full(5, np.nan, dtype=np.float32), "c")
