"""Independent re-statements of the model's arithmetic, shared by the tests
of the split finders (written from the maths, not from the kernels)."""

import math

from skboost.tree._context import SplitContext

REG_GRID = [
    # (reg_lambda, reg_alpha, max_delta_step, min_child_weight)
    (1.0, 0.0, 0.0, 0.0),
    (1.0, 0.0, 0.0, 1.0),
    (0.0, 0.0, 0.0, 0.5),
    (2.0, 0.5, 0.0, 0.0),
    (1.0, 0.0, 0.4, 0.0),
    (0.5, 0.25, 0.3, 1.5),
    (1.0, 2.0, 0.0, 3.0),
]


def split_context(reg, n_threads=1, **settings):
    """The ``SplitContext`` of a ``REG_GRID`` entry (plus ``settings``:
    scales, categorical limits)."""
    reg_lambda, reg_alpha, max_delta_step, min_child_weight = reg
    return SplitContext(reg_lambda=reg_lambda, reg_alpha=reg_alpha,
                        max_delta_step=max_delta_step,
                        min_child_weight=min_child_weight,
                        n_threads=n_threads, **settings)


def score(G, H, reg):
    """-2 min_w [G w + 1/2 (H + lambda) w^2 + alpha |w|], |w| <= mds if mds > 0;
    0 for a node lighter than min_child_weight (or with no hessian)."""
    reg_lambda, reg_alpha, mds, mcw = reg
    if H < mcw or H <= 0.0:
        return 0.0
    t = math.copysign(max(abs(G) - reg_alpha, 0.0), G)  # soft threshold
    w = -t / (H + reg_lambda)
    if mds > 0.0 and abs(w) > mds:
        w = math.copysign(mds, w)
        return -(2.0 * G * w + (H + reg_lambda) * w * w
                 + 2.0 * reg_alpha * abs(w))
    return t * t / (H + reg_lambda)
