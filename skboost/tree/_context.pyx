"""The fixed settings every split kernel reads: one object, built once.

The split finders (``_exact_scan.find_best_splits``,
``_hist_split.find_best_splits_hist``,
``_column_scan.find_best_splits_columns``,
``_vector_hist.find_best_vector_splits``,
``_categorical_scan.categorical_left_set``), the regularised arithmetic
over node arrays (``_gain.leaf_weights``, ``_gain.leaf_scores``) and the
out-of-core pass (``_paged.PagePartition.start_level``: scales and thread
count) take a ``SplitContext`` instead of loose regularisation floats,
scales and limits. Its C fields are read by
the kernels (``cimport`` of ``_context.pxd``) once per call, before they
release the GIL.
"""

import functools
import math
import numbers

# name -> default, in the order of the repr
_DEFAULTS = {
    "reg_lambda": 1.0,
    "reg_alpha": 0.0,
    "max_delta_step": 0.0,
    "min_child_weight": 1.0,
    "n_threads": 1,
    "max_cat_to_onehot": 4,
    "max_cat_threshold": 64,
    "scale_g": 1.0,
    "scale_h": 1.0,
}


cdef class SplitContext:
    """Regularisation, fixed-point scales, thread count and categorical
    limits of the split kernels.

    Built once per fit (``from_params``) and handed to every kernel call;
    the histogram finders take the tree's scales with ``with_scales``.
    Immutable: every field is read-only.

    Parameters
    ----------
    reg_lambda : float >= 0, default=1.0
        L2 regularisation of the leaf weights.
    reg_alpha : float >= 0, default=0.0
        L1 regularisation of the leaf weights.
    max_delta_step : float >= 0, default=0.0
        Leaf weights are clipped to ``[-max_delta_step, max_delta_step]``;
        0 means no clipping.
    min_child_weight : float >= 0, default=1.0
        Smallest hessian sum of a child.
    n_threads : int >= 1, default=1
        OpenMP threads of the kernels (resolved from ``n_jobs`` already).
    max_cat_to_onehot : int >= 1, default=4
        Categorical features with at most this many categories are split
        one category against the rest.
    max_cat_threshold : int >= 1, default=64
        Most categories on the smaller side of a sorted categorical split.
    scale_g, scale_h : float > 0, default=1.0
        Fixed-point scales of the tree's gradient and hessian sums
        (``_histogram.quantize_gradients``): a sum ``q`` stands for
        ``q / scale``. 1.0 when the kernel does not use them.

    Raises
    ------
    ValueError
        Naming the first parameter outside its range.
    TypeError
        When called with positional arguments.

    Examples
    --------
    >>> from skboost.tree._context import SplitContext
    >>> context = SplitContext(reg_lambda=2.0, n_threads=2)
    >>> context.with_scales(2.0 ** 20, 2.0 ** 24).scale_g
    1048576.0
    """

    # keyword-only: nine numbers of similar ranges, where a positional
    # mix-up would pass every check and train a different model
    def __init__(self, *, reg_lambda=1.0, reg_alpha=0.0, max_delta_step=0.0,
                 min_child_weight=1.0, n_threads=1, max_cat_to_onehot=4,
                 max_cat_threshold=64, scale_g=1.0, scale_h=1.0):
        self.reg_lambda = _non_negative("reg_lambda", reg_lambda)
        self.reg_alpha = _non_negative("reg_alpha", reg_alpha)
        self.max_delta_step = _non_negative("max_delta_step", max_delta_step)
        self.min_child_weight = _non_negative("min_child_weight",
                                              min_child_weight)
        self.n_threads = _at_least_one("n_threads", n_threads)
        self.max_cat_to_onehot = _at_least_one("max_cat_to_onehot",
                                               max_cat_to_onehot)
        self.max_cat_threshold = _at_least_one("max_cat_threshold",
                                               max_cat_threshold)
        self.scale_g = _scale("scale_g", scale_g)
        self.scale_h = _scale("scale_h", scale_h)

    @classmethod
    def from_params(cls, params, n_threads):
        """The context of a fit's tree parameters (any object with the
        attributes ``reg_lambda``, ``reg_alpha``, ``max_delta_step``,
        ``min_child_weight``, ``max_cat_to_onehot`` and
        ``max_cat_threshold``, such as ``driver.TreeParams``) and thread
        count; scales 1.0."""
        return cls(reg_lambda=params.reg_lambda, reg_alpha=params.reg_alpha,
                   max_delta_step=params.max_delta_step,
                   min_child_weight=params.min_child_weight,
                   n_threads=n_threads,
                   max_cat_to_onehot=params.max_cat_to_onehot,
                   max_cat_threshold=params.max_cat_threshold)

    def with_scales(self, scale_g, scale_h):
        """A copy with the fixed-point scales ``scale_g``, ``scale_h``."""
        # once per tree: the other fields were validated when self was
        # built, so they are copied, not checked again
        cdef SplitContext copy = SplitContext.__new__(SplitContext)
        copy.reg_lambda, copy.reg_alpha = self.reg_lambda, self.reg_alpha
        copy.max_delta_step = self.max_delta_step
        copy.min_child_weight = self.min_child_weight
        copy.n_threads = self.n_threads
        copy.max_cat_to_onehot = self.max_cat_to_onehot
        copy.max_cat_threshold = self.max_cat_threshold
        copy.scale_g = _scale("scale_g", scale_g)
        copy.scale_h = _scale("scale_h", scale_h)
        return copy

    def _settings(self):
        """The constructor's keyword arguments, in the repr's order."""
        return {name: getattr(self, name) for name in _DEFAULTS}

    def __repr__(self):
        fields = ", ".join(f"{name}={value!r}"
                           for name, value in self._settings().items())
        return f"SplitContext({fields})"

    def __reduce__(self):
        # keyword-only construction: pickled as a partial of the class
        return functools.partial(SplitContext, **self._settings()), ()


# The checks: every field is validated here, once, so the nogil kernels can
# divide by H + lambda, compare with min_child_weight and size OpenMP
# regions without testing anything again.

def _non_negative(name, value):
    """``value`` as a float >= 0 (+inf allowed, NaN not)."""
    value = _real(name, value)
    if not value >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def _scale(name, value):
    """``value`` as a finite float > 0."""
    value = _real(name, value)
    if not (value > 0.0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def _real(name, value):
    # bools are Real in Python: True would pass as 1.0 and hide a mistake
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _at_least_one(name, value):
    """``value`` as an int >= 1 (that fits a C int)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if not 1 <= value <= 2 ** 31 - 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value
