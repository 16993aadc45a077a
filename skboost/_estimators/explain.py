"""The estimators' explanation methods: ``predict_contributions`` and
``shap_explanation`` (the kernels and the booster's side are in
``skboost/_model/explain.py``)."""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._input.arrays import check_X


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
        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        return self.booster_.predict_checked(
            X, pred_contribs=not interactions, approx_contribs=approximate,
            pred_interactions=interactions,
            iteration_range=self._iteration_range(iteration_range),
            n_jobs=self.n_jobs)

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
        check_is_fitted(self)
        X = check_X(self, X, reset=False)
        values = self.booster_.predict_checked(
            X, pred_contribs=True,
            iteration_range=self._iteration_range(iteration_range),
            n_jobs=self.n_jobs)
        data = X.toarray() if sp.issparse(X) else X
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
