"""Explanations of predictions: SHAP feature contributions, Saabas
contributions and SHAP interaction values of every row (the kernels are in
``tree/_shap.pyx``), and their hand-over to the ``shap`` package.

Everything is in margin space, one explanation per output (class) of the
model: the contributions of a row add up to its raw margin
(``predict(..., output_margin=True)``), the expected value (the base margin
plus every tree's cover-weighted mean leaf value) in the last column.
"""

import weakref

import numpy as np

from ..tree.packing import SHAP_FIELDS, pack_trees

# what the kernel computes (tree/_shap.pyx)
KIND_TREE_SHAP, KIND_SAABAS, KIND_INTERACTIONS = 0, 1, 2


# booster -> (its trees when built, ShapForest): built once per model, as
# the booster's packed forest for prediction is
_FORESTS = weakref.WeakKeyDictionary()


def shap_forest(booster):
    """The booster's trees as a validated :class:`ShapForest` (cached while
    the booster holds the same trees)."""
    cached = _FORESTS.get(booster)
    weights = booster.tree_weights   # DART's weights change as it trains
    weights = None if weights is None else list(weights)
    if cached is not None and len(cached[0]) == len(booster.trees) and all(
            a is b for a, b in zip(cached[0], booster.trees)) \
            and cached[2] == weights:
        return cached[1]
    forest = _build_shap_forest(booster)
    _FORESTS[booster] = (list(booster.trees), forest, weights)
    return forest


def _build_shap_forest(booster):
    from ..tree._shap import ShapForest   # loaded when first explained

    trees, groups = booster.scalar_trees()
    return pack_trees(ShapForest, trees, groups,
                      n_features=booster.n_features,
                      n_outputs=booster.n_outputs, fields=SHAP_FIELDS)


def explain(booster, X, kind, iteration_range, n_threads):
    """Contributions or interaction values of the rows of X.

    Parameters
    ----------
    booster : Booster
    X : ndarray (float32, C-ordered, NaN for missing) or sparse matrix
        As the estimators' ``check_X`` returns it.
    kind : int
        ``KIND_TREE_SHAP``, ``KIND_SAABAS`` or ``KIND_INTERACTIONS``.
    iteration_range : tuple of (int, int) or None
        Rounds ``[start, end)``, resolved by the caller (None: all).
    n_threads : int

    Returns
    -------
    values : ndarray of float64
        Contributions: (n_rows, n_features + 1) for a model with one
        output, (n_rows, n_outputs, n_features + 1) otherwise.
        Interactions: (n_rows, [n_outputs,] n_features + 1, n_features + 1).
    """
    first, last = booster.scalar_slice(*booster._tree_slice(iteration_range))
    n_rows, width = X.shape[0], booster.n_features + 1
    size = width * width if kind == KIND_INTERACTIONS else width
    out = np.zeros((n_rows, booster.n_outputs, size))
    out[:, :, size - 1] = booster.base_margin   # the expected value starts here
    if n_rows and last > first:
        rows = booster._sparse_rows(X) if _is_sparse(X) else X
        shap_forest(booster).explain(
            rows, out.reshape(n_rows, -1), first, last, n_threads, kind)
    if kind == KIND_INTERACTIONS:
        out = out.reshape(n_rows, booster.n_outputs, width, width)
    return out[:, 0] if booster.n_outputs == 1 else out


def approximate_interactions(booster, X, iteration_range, n_threads):
    """XGBoost's ``approx_contribs`` with ``pred_interactions``: no
    interaction is approximated, the diagonal holds the Saabas
    contributions (the expected value at [-1, -1])."""
    contribs = explain(booster, X, KIND_SAABAS, iteration_range, n_threads)
    width = contribs.shape[-1]
    out = np.zeros(contribs.shape + (width,))
    diagonal = np.arange(width)
    out[..., diagonal, diagonal] = contribs
    return out


def _is_sparse(X):
    import scipy.sparse as sp

    from ..tree._sparse import SparseRows

    return sp.issparse(X) or isinstance(X, SparseRows)


def contributions(booster, X, *, pred_contribs, approx_contribs,
                  pred_interactions, iteration_range, n_threads):
    """``Booster.predict``'s explanations: SHAP or Saabas contributions, or
    interaction values (X as the kernels read it)."""
    if pred_interactions and approx_contribs:
        return approximate_interactions(booster, X, iteration_range, n_threads)
    kind = (KIND_INTERACTIONS if pred_interactions
            else KIND_SAABAS if approx_contribs else KIND_TREE_SHAP)
    return explain(booster, X, kind, iteration_range, n_threads)
