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
import scipy.sparse as sp

from .._threads import effective_n_threads
from ..tree._tree import NODE_FIELDS

# what the kernel computes (tree/_shap.pyx)
KIND_TREE_SHAP, KIND_SAABAS, KIND_INTERACTIONS = 0, 1, 2


# booster -> (its trees when built, ShapForest): built once per model, as
# the booster's packed forest for prediction is
_FORESTS = weakref.WeakKeyDictionary()


def shap_forest(booster):
    """The booster's trees as a validated :class:`ShapForest` (cached while
    the booster holds the same trees)."""
    cached = _FORESTS.get(booster)
    if cached is not None and len(cached[0]) == len(booster.trees) and all(
            a is b for a, b in zip(cached[0], booster.trees)):
        return cached[1]
    forest = _build_shap_forest(booster)
    _FORESTS[booster] = (list(booster.trees), forest)
    return forest


def _build_shap_forest(booster):
    from .booster import _forest_categories

    trees, groups = booster.scalar_trees()
    sizes = [tree.n_nodes for tree in trees]
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    from ..tree._shap import ShapForest   # loaded when first explained
    arrays = [np.concatenate([getattr(t, name) for t in trees]) if trees
              else np.empty(0, dtype=dtype)
              for name, dtype in NODE_FIELDS.items() if name != "gain"]
    return ShapForest(*arrays, starts, np.asarray(groups, np.int32),
                      booster.n_features, booster.n_outputs,
                      *_forest_categories(trees, starts))


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


class ExplainMixin:
    """Estimator methods explaining predictions (SHAP values)."""

    def predict_contributions(self, X, *, interactions=False,
                              approximate=False, iteration_range=None):
        """Feature contributions (SHAP values) of each sample's margin.

        Path-dependent TreeSHAP (Lundberg et al., 2020) over the trees, the
        cover (hessian sum) of a node standing for the share of training
        data that reaches it, as in XGBoost's ``pred_contribs``. The values
        are in margin space (log-odds for ``binary:logistic``): a sample's
        contributions add up to its raw margin.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Samples, as for :meth:`predict`.
        interactions : bool, default=False
            Return SHAP interaction values instead (XGBoost's
            ``pred_interactions``): entry ``[i, j]`` is half the change of
            feature ``j``'s SHAP value when feature ``i`` is known rather
            than unknown, the diagonal the rest of each SHAP value.
        approximate : bool, default=False
            Saabas contributions instead of SHAP values: along the sample's
            path, each split's feature gets the change of the subtree's
            cover-weighted mean (XGBoost's ``approx_contribs``). With
            ``interactions``, the diagonal matrix of those.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).

        Returns
        -------
        contributions : ndarray of float64
            Of shape (n_samples, n_features + 1) for a model with one output
            (regression, binary classification with ``binary:*``, ranking),
            (n_samples, n_outputs, n_features + 1) with several (classes of
            a ``multi:*`` objective, quantiles). The last column is the
            expected value (base margin plus every tree's mean): the row
            sums are the margins (``predict(X, output_margin=True)``, per
            class). With ``interactions`` each sample (and output) has an
            (n_features + 1, n_features + 1) symmetric matrix whose rows
            sum to the contributions, the expected value at ``[-1, -1]``.

        See Also
        --------
        shap_explanation : the SHAP values as a ``shap.Explanation``.
        """
        from .._input.arrays import check_X
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        return booster_predict(
            self.booster_, X, output_margin=False, pred_leaf=False,
            pred_contribs=not interactions, approx_contribs=approximate,
            pred_interactions=interactions,
            iteration_range=self._iteration_range(iteration_range),
            n_jobs=self.n_jobs, checked=True)

    def shap_explanation(self, X, *, iteration_range=None):
        """SHAP values as a ``shap.Explanation``, for the ``shap`` package's
        plots (beeswarm, waterfall, bar, scatter, ...).

        Needs the ``shap`` package (``pip install skboost[shap]``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Samples, as for :meth:`predict`.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).

        Returns
        -------
        explanation : shap.Explanation
            ``values`` of shape (n_samples, n_features) (with several
            outputs: (n_samples, n_features, n_outputs), shap's layout),
            ``base_values`` the expected value of each sample (and output),
            ``data`` the samples as the model sees them (a dense float
            matrix; categorical features as category codes), and
            ``feature_names`` the training column names (else ``"f0"``,
            ``"f1"``, ...). Values are in margin space, as in
            :meth:`predict_contributions`.
        """
        try:
            import shap
        except ImportError as exc:
            raise ImportError(
                "shap_explanation needs the shap package: pip install "
                "skboost[shap] (or pip install shap)") from exc
        from .._input.arrays import check_X
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        values = booster_predict(
            self.booster_, X, output_margin=False, pred_leaf=False,
            pred_contribs=True, approx_contribs=False,
            pred_interactions=False,
            iteration_range=self._iteration_range(iteration_range),
            n_jobs=self.n_jobs, checked=True)
        data = X.toarray() if _is_sparse(X) else X
        if values.ndim == 3:    # shap's layout: outputs last
            values = values.transpose(0, 2, 1)
            base = values[:, -1, :]
            values = values[:, :-1, :]
        else:
            base, values = values[:, -1], values[:, :-1]
        names = getattr(self, "feature_names_in_", None)
        names = ([str(n) for n in names] if names is not None
                 else [f"f{i}" for i in range(values.shape[1])])
        return shap.Explanation(values=np.ascontiguousarray(values),
                                base_values=np.ascontiguousarray(base),
                                data=np.asarray(data, dtype=np.float64),
                                feature_names=names)


def booster_predict(booster, X, *, output_margin, pred_leaf, pred_contribs,
                    approx_contribs, pred_interactions, iteration_range,
                    n_jobs, checked):
    """``Booster.predict`` (see its docstring)."""
    chosen = [name for name, flag in (("pred_leaf", pred_leaf),
                                      ("pred_contribs", pred_contribs),
                                      ("pred_interactions", pred_interactions))
              if flag]
    if len(chosen) > 1:
        raise ValueError(f"choose one of {', '.join(chosen)}: they are "
                         "different outputs")
    X = X if checked else booster._check_input(X)
    if n_jobs is None:
        estimator = getattr(booster, "_input_estimator", None)
        n_jobs = None if estimator is None else estimator.n_jobs
    n_threads = effective_n_threads(n_jobs)
    if iteration_range is None and booster.best_iteration is not None:
        iteration_range = (0, booster.best_iteration + 1)
    if pred_interactions and approx_contribs:
        return approximate_interactions(booster, X, iteration_range, n_threads)
    if pred_interactions or pred_contribs:
        kind = (KIND_INTERACTIONS if pred_interactions
                else KIND_SAABAS if approx_contribs else KIND_TREE_SHAP)
        return explain(booster, X, kind, iteration_range, n_threads)
    if pred_leaf:
        return booster.predict_leaves(X, iteration_range, n_threads)
    raw = booster.predict_raw(X, iteration_range, n_threads)
    if not output_margin:
        from ..objectives import get_objective

        raw = get_objective(booster.objective,
                            getattr(booster, "objective_params", None)
                            ).transform(raw)
    return raw[:, 0] if raw.shape[1] == 1 else raw


def plain_input(booster, X):
    """X for a booster without its estimator: float32 C-ordered (NaN for
    missing) or CSR, with the booster's number of features."""
    from sklearn.utils.validation import check_array

    if hasattr(X, "iloc"):
        raise TypeError(
            "this Booster is not bound to its estimator, which converts "
            "DataFrames: call estimator.get_booster() (or pass a numpy "
            "array or sparse matrix)")
    from .._input.sparse import canonical_csr, check_sparse_structure

    check_sparse_structure(X)
    X = check_array(X, dtype=np.float32, order="C", accept_sparse="csr",
                    ensure_all_finite="allow-nan")
    if sp.issparse(X):   # sorted unique indices, as the kernels read them
        absent_is_zero = getattr(booster, "absent_value", np.nan) == 0.0
        X = canonical_csr(X, np.nan, "zero" if absent_is_zero else "missing")
    if X.shape[1] != booster.n_features:
        raise ValueError(f"X has {X.shape[1]} features, but the booster "
                         f"expects {booster.n_features}")
    return X
