"""``SplitContext``: the split kernels' fixed settings, validated once."""

import math
import pickle

import numpy as np
import pytest

from skboost.tree._context import SplitContext
from skboost.tree.driver import TreeParams

DEFAULTS = dict(reg_lambda=1.0, reg_alpha=0.0, max_delta_step=0.0,
                min_child_weight=1.0, n_threads=1, max_cat_to_onehot=4,
                max_cat_threshold=64, scale_g=1.0, scale_h=1.0)

SETTINGS = dict(reg_lambda=2.5, reg_alpha=0.25, max_delta_step=0.7,
                min_child_weight=3.0, n_threads=2, max_cat_to_onehot=9,
                max_cat_threshold=5, scale_g=2.0 ** 20, scale_h=2.0 ** 30)


def fields(context):
    return {name: getattr(context, name) for name in DEFAULTS}


def test_defaults():
    assert fields(SplitContext()) == DEFAULTS


def test_keyword_arguments_are_kept():
    context = SplitContext(**SETTINGS)
    assert fields(context) == SETTINGS
    assert isinstance(context.n_threads, int)
    assert isinstance(context.scale_g, float)


def test_keyword_arguments_only():
    with pytest.raises(TypeError):
        SplitContext(1.0)


def test_fields_are_read_only():
    context = SplitContext()
    with pytest.raises(AttributeError):
        context.reg_lambda = 2.0


def test_numpy_scalars_are_accepted():
    context = SplitContext(reg_lambda=np.float32(0.5), n_threads=np.int64(3),
                           scale_g=np.float64(4.0))
    assert context.reg_lambda == 0.5 and context.n_threads == 3
    assert context.scale_g == 4.0


def test_infinite_regularisation_is_accepted():
    # the estimators' constraints allow any non-negative real
    context = SplitContext(reg_lambda=math.inf, max_delta_step=math.inf)
    assert context.reg_lambda == math.inf


BAD = [
    ("reg_lambda", -1.0), ("reg_lambda", math.nan), ("reg_lambda", "1"),
    ("reg_lambda", None), ("reg_alpha", -0.5), ("reg_alpha", math.nan),
    ("max_delta_step", -1e-9), ("min_child_weight", -1.0),
    ("min_child_weight", True),
    ("n_threads", 0), ("n_threads", -1), ("n_threads", 1.0),
    ("n_threads", 2 ** 40), ("n_threads", True),
    ("max_cat_to_onehot", 0), ("max_cat_to_onehot", 2.5),
    ("max_cat_threshold", 0), ("max_cat_threshold", -3),
    ("scale_g", 0.0), ("scale_g", -1.0), ("scale_g", math.inf),
    ("scale_h", math.nan), ("scale_h", 0.0),
]


@pytest.mark.parametrize("name, value", BAD)
def test_invalid_settings_raise_value_error_naming_them(name, value):
    with pytest.raises(ValueError, match=name):
        SplitContext(**{name: value})


def test_with_scales_returns_a_copy():
    context = SplitContext(**SETTINGS)
    scaled = context.with_scales(8.0, 16.0)
    assert scaled is not context
    assert (scaled.scale_g, scaled.scale_h) == (8.0, 16.0)
    assert fields(scaled) == dict(SETTINGS, scale_g=8.0, scale_h=16.0)
    assert fields(context) == SETTINGS  # unchanged


def test_with_scales_validates():
    with pytest.raises(ValueError, match="scale_h"):
        SplitContext().with_scales(1.0, 0.0)


def test_repr_lists_every_setting():
    text = repr(SplitContext(**SETTINGS))
    assert text.startswith("SplitContext(") and text.endswith(")")
    for name, value in SETTINGS.items():
        assert f"{name}={value!r}" in text
    # readable enough to rebuild it
    assert fields(eval(text, {"SplitContext": SplitContext})) == SETTINGS


def test_pickles():
    # the kernels' bad-input tests send contexts to child processes
    context = SplitContext(**SETTINGS)
    assert fields(pickle.loads(pickle.dumps(context))) == SETTINGS


def test_from_params():
    params = TreeParams(reg_lambda=3.0, reg_alpha=0.5, max_delta_step=0.2,
                        min_child_weight=2.0, max_cat_to_onehot=7,
                        max_cat_threshold=11)
    context = SplitContext.from_params(params, 2)
    assert fields(context) == dict(
        reg_lambda=3.0, reg_alpha=0.5, max_delta_step=0.2,
        min_child_weight=2.0, n_threads=2, max_cat_to_onehot=7,
        max_cat_threshold=11, scale_g=1.0, scale_h=1.0)
