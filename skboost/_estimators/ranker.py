"""BoostRanker: learning to rank (LambdaMART), rows grouped by query."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..metrics import get_metric
from ..objectives import RANKING_OBJECTIVES, CallableObjective
from .._input.arrays import check_weight, check_X, reject_external_weight
from .._model.margins import eval_base_margins, rows_of
from .params import store_params
from .query_weights import check_per_query_sample_weight, per_row_weight
from .base import (_BoostBase, _COMMON_ATTRIBUTES_DOC, _COMMON_PARAMS_DOC,
                   _EVAL_FIT_DOC, _eval_target, _evaluation_kwargs,
                   fit_or_restore)


def _external_queries(X, qid, group):
    """The query ids of ExternalData's chunks, which must come sorted (the
    rows of a query together, queries in increasing id order)."""
    if qid is not None or group is not None:
        raise ValueError("with ExternalData, qid comes from the chunks: "
                         "yield (X, y, sample_weight, qid) tuples")
    qid = X.qid
    if qid is not None and np.any(np.diff(qid) < 0):
        raise ValueError(
            "ExternalData's qid must be sorted across the chunks (each "
            "query's rows together, in increasing query id): out of core "
            "the rows cannot be reordered")
    return qid


def _check_queries(qid, group, n_rows, what="qid"):
    """Stable order that groups the rows by query, and the query boundaries.

    Parameters
    ----------
    qid : array-like of shape (n_rows,) or None
        Query id of every row (any order).
    group : array-like of shape (n_queries,) or None
        Sizes of consecutive queries (rows already grouped).
    n_rows : int

    Returns
    -------
    order : ndarray of shape (n_rows,)
        Rows in query order (``qid`` sorted stably).
    query_ptr : ndarray of shape (n_queries + 1,), int64
    sorted_qid : ndarray of shape (n_rows,)
    """
    if qid is not None and group is not None:
        raise ValueError(f"give either {what} or group sizes, not both")
    if group is not None:
        sizes = _query_sizes(group, n_rows)
        qid = np.repeat(np.arange(sizes.shape[0]), sizes)
    elif qid is None:
        qid = np.zeros(n_rows, dtype=np.int64)  # the whole input is one query
    qid = np.asarray(qid)
    if qid.ndim != 1 or qid.shape[0] != n_rows:
        raise ValueError(f"{what} must be 1-D with one query id per row "
                         f"({n_rows}), got shape {qid.shape}")
    if qid.dtype.kind not in "iub":
        raise TypeError(f"{what} must hold integer query ids, got dtype "
                        f"{qid.dtype}")
    order = np.argsort(qid, kind="stable")
    sorted_qid = qid[order]
    starts = np.flatnonzero(np.r_[True, sorted_qid[1:] != sorted_qid[:-1]])
    query_ptr = np.r_[starts, n_rows].astype(np.int64) if n_rows else (
        np.zeros(1, dtype=np.int64))
    return order, query_ptr, sorted_qid


def _query_sizes(group, n_rows):
    """Query sizes as int64: integers, or floats that are whole numbers
    (sizes read with ``np.loadtxt``, ``np.ones(n)``), summing to n_rows."""
    sizes = np.asarray(group)
    message = ("group must be non-negative whole-number query sizes summing "
               f"to the number of rows ({n_rows})")
    if sizes.ndim != 1 or sizes.dtype.kind not in "iuf":
        raise ValueError(f"{message}; got an array of shape {sizes.shape} "
                         f"and dtype {sizes.dtype}")
    if sizes.dtype.kind == "f":
        whole = (np.isfinite(sizes) & (sizes == np.round(sizes))
                 & (np.abs(sizes) <= max(n_rows, 1)))
        if not whole.all():
            raise ValueError(f"{message}; group[{int(np.argmin(whole))}] = "
                             f"{sizes[np.argmin(whole)]!r} is not a whole "
                             "number")
        sizes = sizes.astype(np.int64)
    if np.any(sizes < 0) or sizes.sum() != n_rows:
        raise ValueError(f"{message}; they sum to {int(sizes.sum())}")
    return sizes.astype(np.int64)


class BoostRanker(_BoostBase):
    __doc__ = f"""Gradient-boosted trees for learning to rank (LambdaMART).

    Rows are documents, grouped into queries by ``qid`` (or ``group``
    sizes); the model scores documents so that, within each query, better
    documents score higher. Unlike XGBoost's and LightGBM's rankers it is a
    complete scikit-learn estimator: without ``qid`` the whole input is one
    query, and ``qid`` can be routed through model selection as metadata
    (see :doc:`/user_guide/ranking`).

    Parameters
    ----------
    objective : str or callable, default="rank:ndcg"
        ``"rank:ndcg"`` (LambdaMART with NDCG), ``"rank:map"`` (with MAP,
        binary labels), ``"rank:pairwise"`` (RankNet pairs),
        ``"rank:xendcg"`` (LightGBM's cross-entropy NDCG loss, linear in the
        documents; ``random_state`` seeds its per-round draws), or a function
        ``obj(y_true, y_pred, *, sample_weight, qid) -> (grad, hess)`` of the
        margins (keyword arguments optional; rows grouped by query).
    lambdarank_pair_method : {{"topk", "mean"}}, default="topk"
        ``"topk"``: pairs of each of the ``lambdarank_num_pair_per_sample``
        best-ranked documents with every document below it; ``"mean"``:
        ``lambdarank_num_pair_per_sample`` random pairs per document.
    lambdarank_num_pair_per_sample : int >= 1, default=None
        Truncation level (``topk``) or pairs per document (``mean``); None is
        32 for ``topk`` and 1 for ``mean``, as XGBoost.
    ndcg_exp_gain : bool, default=True
        NDCG gains ``2^y - 1`` (labels up to 31) instead of ``y``.
    lambdarank_normalization : bool, default=True
        Scale each query's pairs (XGBoost's parameter, LightGBM's
        ``lambdarank_norm``): by ``log2(1 + S) / S`` with ``"topk"``
        pairs, ``S`` the sum of their ``|lambda|``, by
        ``1 / lambdarank_num_pair_per_sample`` with ``"mean"``.
    lambdarank_score_normalization : bool, default=True
        Divide each pair's ``|delta|`` by the gap of the two documents'
        scores plus 0.01 (XGBoost's parameter; part of LightGBM's
        ``lambdarank_norm``).
    lambdarank_unbiased : bool, default=False
        Position debiasing (Unbiased LambdaMART, XGBoost's parameter): a
        document's position is its place in its query's input order (as it
        was shown, for click data); the bias ratios of the first positions
        are estimated every round and divide the pairs' lambdas. The
        estimates are ``position_bias_`` after fit. LambdaMART objectives
        only (not ``rank:xendcg``).
    lambdarank_bias_norm : float >= 0, default=1.0
        The Lp regularisation of those estimates (the exponent
        ``1 / (1 + p)``).
    score_k : int >= 1, default=None
        :meth:`score` returns the mean NDCG@``score_k`` over queries; None
        ranks the whole list.{_COMMON_PARAMS_DOC}
    Attributes
    ----------
{_COMMON_ATTRIBUTES_DOC}
    Examples
    --------
    >>> import numpy as np
    >>> from skboost import BoostRanker
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3))
    >>> y = np.clip(np.round(X[:, 0] + 1), 0, 3)
    >>> qid = np.repeat(np.arange(6), 10)
    >>> ranker = BoostRanker(n_estimators=10).fit(X, y, qid=qid)
    >>> ranker.predict(X[:2]).shape
    (2,)
    """

    _parameter_constraints = {
        **_BoostBase._parameter_constraints,
        "objective": [StrOptions(set(RANKING_OBJECTIVES)), callable],
        "lambdarank_pair_method": [StrOptions({"topk", "mean"})],
        "lambdarank_num_pair_per_sample": [
            Interval(Integral, 1, None, closed="left"), None],
        "ndcg_exp_gain": ["boolean"],
        "lambdarank_normalization": ["boolean"],
        "lambdarank_score_normalization": ["boolean"],
        "lambdarank_unbiased": ["boolean"],
        "lambdarank_bias_norm": [Interval(Real, 0.0, None, closed="left")],
        "score_k": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, objective="rank:ndcg", n_estimators=100,
                 max_depth=6, learning_rate=0.3, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0,
                 n_jobs=None, gamma=0.0, min_child_weight=1.0,
                 max_delta_step=None, subsample=1.0, colsample_bytree=1.0,
                 colsample_bylevel=1.0, colsample_bynode=1.0, reg_alpha=0.0,
                 reg_lambda=1.0, base_score=None, random_state=None,
                 missing=np.nan, sparse_absent="missing",
                 categorical_features=None, max_cat_to_onehot=4,
                 max_cat_threshold=64, monotone_constraints=None,
                 interaction_constraints=None, feature_weights=None,
                 importance_type="gain", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None,
                 validation_fraction=0.1, warm_start=False,
                 num_parallel_tree=1,
                 multi_strategy="one_output_per_tree",
                 max_recoveries=3,
                 lambdarank_pair_method="topk",
                 lambdarank_num_pair_per_sample=None, ndcg_exp_gain=True,
                 score_k=None, verbosity=None, device="cpu",
                 booster="gbtree", rate_drop=0.0, one_drop=False,
                 skip_drop=0.0, sample_type="uniform", normalize_type="tree",
                 lambdarank_unbiased=False, lambdarank_bias_norm=1.0,
                 lambdarank_normalization=True,
                 lambdarank_score_normalization=True):
        store_params(self, locals())

    def _objective_params(self):
        debias = ({"lambdarank_unbiased": True,
                   "lambdarank_bias_norm": float(self.lambdarank_bias_norm)}
                  if self.lambdarank_unbiased else {})
        # recorded only when off, so that models of the defaults (and their
        # files) stay as earlier versions wrote them
        flags = {name: False for name in ("lambdarank_normalization",
                                          "lambdarank_score_normalization")
                 if not getattr(self, name, True)}
        return {**super()._objective_params(),
                "lambdarank_pair_method": self.lambdarank_pair_method,
                "lambdarank_num_pair_per_sample":
                    self.lambdarank_num_pair_per_sample,
                "ndcg_exp_gain": bool(self.ndcg_exp_gain), **debias, **flags}

    @property
    def position_bias_(self):
        """Position debiasing's estimates after fit (``lambdarank_unbiased``):
        ``(t_plus, t_minus)``, the bias ratios of the first positions of a
        query's input order (position 0 is 1), of the relevant and the
        irrelevant documents; None without debiasing. Not saved in model
        files (pickles keep it)."""
        check_is_fitted(self)
        return self.booster_.position_bias

    # (over 60 lines for its docstring, which documents every argument of
    # the public fit; the body is 25 lines of wiring)
    @fit_or_restore
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, qid=None, group=None, sample_weight=None,
            eval_set=None, eval_qid=None, eval_group=None,
            sample_weight_eval_set=None, verbose=False,
            base_margin=None, base_margin_eval_set=None, xgb_model=None,
            init_score=None, eval_init_score=None, init_model=None,
            query_weight=None, eval_query_weight=None):
        """Fit the ranker.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or ExternalData
            Documents; NaN (and ``missing``) mark missing values.
            :class:`~skboost.ExternalData` trains out of core: y, the
            sample weights and the query ids come from its chunks
            (``(X, y, sample_weight, qid)``, rows sorted by query id).
        y : array-like of shape (n_samples,)
            Relevance labels, non-negative integers (0 or 1 for
            ``rank:map``); None with ExternalData.
        qid : array-like of shape (n_samples,), default=None
            Integer query id of every row, in any order (rows are grouped
            by a stable sort inside). None, with ``group`` None, makes the
            whole input one query.
        group : array-like of shape (n_queries,), default=None
            Sizes of consecutive queries, instead of ``qid``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows (scikit-learn's convention);
            they scale each row's lambda gradients and hessians. For
            XGBoost's one weight per query, use ``query_weight``: a
            ``sample_weight`` with one entry per query is a ValueError
            that says so.
        {_EVAL_FIT_DOC}
        eval_qid : list of array-like, default=None
            Query ids of the rows of each ``eval_set`` pair.
        eval_group : list of array-like, default=None
            Query sizes of each ``eval_set`` pair, instead of ``eval_qid``.
        query_weight : array-like of shape (n_queries,), default=None
            One non-negative weight per query, XGBoost's ``sample_weight``
            of :class:`xgboost.XGBRanker` (same model with the exact
            method): the k-th weight is that of the k-th query in
            increasing ``qid`` order (the order of ``np.unique(qid)``; for
            rows sorted by ``qid``, as XGBoost requires, the order of the
            queries' first appearance), or of the k-th ``group``. As in
            XGBoost, the weights are normalised to a mean of 1 over the
            queries (only their ratios matter, up to the order of equal
            scores: see :doc:`/user_guide/ranking`), and every row of a query
            takes its query's weight; with ``sample_weight`` too, a row's
            weight is the product of the two.
        eval_query_weight : list of array-like, default=None
            Per-query weights of each ``eval_set`` pair (None entries: unit
            weights), ordered as ``query_weight`` by ``eval_qid`` or
            ``eval_group``; they weigh the queries in the mean of a ranking
            metric, combined with ``sample_weight_eval_set`` as
            ``query_weight`` with ``sample_weight``.

        Returns
        -------
        self : BoostRanker
        """
        X, y = check_X(self, X, y=y, reset=True, y_numeric=True)
        order, query_ptr, sorted_qid, sample_weight = self._queries_of(
            X, qid, group, sample_weight, query_weight)
        objective = self.objective
        if callable(objective):
            objective = CallableObjective(objective, {"link": "identity"},
                                          qid=sorted_qid)
        kwargs = _evaluation_kwargs(
            eval_set, sample_weight_eval_set, verbose, base_margin,
            base_margin_eval_set, xgb_model, init_score, eval_init_score,
            init_model)
        (kwargs["eval_set"], kwargs["sample_weight_eval_set"], eval_ptrs,
         kwargs["base_margin_eval_set"]) = self._sorted_eval_sets(
            eval_set, eval_qid, eval_group, sample_weight_eval_set,
            kwargs["base_margin_eval_set"], eval_query_weight)
        kwargs["base_margin"] = rows_of(kwargs["base_margin"], order,
                                        X.shape[0])
        if getattr(X, "out_of_core", False):   # rows already by query
            return self._train(X, np.asarray(y), sample_weight, objective,
                               query_ptr=query_ptr, eval_query_ptrs=eval_ptrs,
                               **kwargs)
        X = X[order] if sp.issparse(X) else np.ascontiguousarray(X[order])
        return self._train(
            X, np.asarray(y)[order],
            sample_weight, objective, query_ptr=query_ptr,
            eval_query_ptrs=eval_ptrs, **kwargs)

    fit.__doc__ = fit.__doc__.format(_EVAL_FIT_DOC=_EVAL_FIT_DOC)

    def _queries_of(self, X, qid, group, sample_weight, query_weight):
        """The rows' order by query, the query boundaries, the sorted query
        ids, and the rows' weights in that order (``query_weight`` folded
        in)."""
        if getattr(X, "out_of_core", False):
            reject_external_weight(X, sample_weight)
            if query_weight is not None:
                raise ValueError(
                    "query_weight is not supported with ExternalData: "
                    "give every row its query's weight in the chunks' "
                    "sample weights")
            qid = _external_queries(X, qid, group)
        order, query_ptr, sorted_qid = _check_queries(qid, group, X.shape[0])
        # score() needs qid exactly when fit had queries
        self._fitted_on_queries = qid is not None or group is not None
        if self._fitted_on_queries:
            check_per_query_sample_weight(sample_weight, X.shape[0],
                                          query_ptr)
        if sample_weight is not None:
            sample_weight = check_weight(sample_weight, X)[order]
        sample_weight = per_row_weight(query_weight, query_ptr, sample_weight)
        return order, query_ptr, sorted_qid, sample_weight

    def _sorted_eval_sets(self, eval_set, eval_qid, eval_group,
                          sample_weight_eval_set, base_margin_eval_set=None,
                          eval_query_weight=None):
        """Each eval set's rows grouped by query, its boundaries, its rows'
        weights (``eval_query_weight`` folded in) and its base margin's
        rows in that order."""
        if eval_set is None:
            if eval_query_weight is not None:
                raise ValueError("eval_query_weight needs an eval_set")
            return (None, sample_weight_eval_set, None,
                    base_margin_eval_set)
        eval_set = list(eval_set)
        n_sets = len(eval_set)
        margins = eval_base_margins(base_margin_eval_set, n_sets)
        qids = [None] * n_sets if eval_qid is None else list(eval_qid)
        groups = [None] * n_sets if eval_group is None else list(eval_group)
        weights = ([None] * n_sets if sample_weight_eval_set is None
                   else list(sample_weight_eval_set))
        query_weights = ([None] * n_sets if eval_query_weight is None
                         else list(eval_query_weight))
        if not (len(qids) == len(groups) == len(weights)
                == len(query_weights) == n_sets):
            raise ValueError("eval_qid, eval_group, sample_weight_eval_set "
                             "and eval_query_weight need one entry per "
                             "eval_set pair")
        pairs, sorted_weights, ptrs = [], [], []
        for i, pair in enumerate(eval_set):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("eval_set must be a list of (X, y) pairs")
            X_eval = check_X(self, pair[0], reset=False)
            if qids[i] is None and groups[i] is None:
                raise ValueError(
                    f"eval_set[{i}] has no queries: give eval_qid (or "
                    "eval_group) with one entry per eval_set pair, as for "
                    "XGBoost's and LightGBM's rankers (a ranking metric is "
                    "computed per query)")
            order, ptr, _ = _check_queries(qids[i], groups[i],
                                           X_eval.shape[0], "eval_qid")
            y_eval = _eval_target(pair[1], X_eval.shape[0], i)
            check_per_query_sample_weight(
                weights[i], X_eval.shape[0], ptr,
                f"sample_weight_eval_set[{i}]", "eval_query_weight")
            weight = (None if weights[i] is None
                      else check_weight(weights[i], X_eval)[order])
            weight = per_row_weight(query_weights[i], ptr, weight,
                                    f"eval_query_weight[{i}]")
            pairs.append((X_eval[order], y_eval[order]))
            sorted_weights.append(weight)
            ptrs.append(ptr)
            margins[i] = rows_of(margins[i], order, X_eval.shape[0],
                                 f"base_margin_eval_set[{i}]")
        return pairs, sorted_weights, ptrs, margins

    def predict(self, X, output_margin=False, iteration_range=None,
                base_margin=None):
        """Ranking scores: within a query, higher means ranked higher.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Documents; NaN (and ``missing``) mark missing values.
        output_margin : bool, default=False
            Accepted for symmetry with the other estimators; the scores are
            the margins.
        iteration_range : tuple of (int, int), default=None
            Use the trees of boosting rounds ``[start, end)``; None uses all
            (those up to ``best_iteration`` after early stopping).
        base_margin : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
            Margins the rows start from instead of the fitted intercept
            (``intercept_``), as given to ``fit``: one per row, one per row
            and class for a multiclass model.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            One score per row, in the order of ``X``.
        """
        return self._raw_predict(X, iteration_range, base_margin)[:, 0]

    def score(self, X, y, qid=None):
        """Mean NDCG@``score_k`` over the queries (1 for a query without
        relevant documents).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Documents.
        y : array-like of shape (n_samples,)
            Relevance labels.
        qid : array-like of shape (n_samples,), default=None
            Query id of every row (routed as metadata like ``fit``'s:
            ``set_score_request(qid=True)``). Required when the ranker was
            fitted with ``qid`` or ``group``: without it a ValueError is
            raised, as a single-query NDCG of many queries means nothing.
            Only a ranker fitted without queries (the whole input one
            query) scores without it, the input then being one query.

        Returns
        -------
        score : float
            In [0, 1]; gains follow ``ndcg_exp_gain``.
        """
        check_is_fitted(self)
        if qid is None and getattr(self, "_fitted_on_queries", True):
            raise ValueError(
                "BoostRanker.score needs qid (the query id of every row) "
                "for a ranker fitted with queries: NDCG is a mean over "
                "queries. In model selection, route it with "
                "set_score_request(qid=True) under "
                "sklearn.set_config(enable_metadata_routing=True).")
        scores = self.predict(X)
        y = np.asarray(y, dtype=np.float64)
        order, query_ptr, _ = _check_queries(qid, None, scores.shape[0])
        name = "ndcg" if self.score_k is None else f"ndcg@{self.score_k}"
        metric = get_metric(name, {"ndcg_exp_gain": bool(self.ndcg_exp_gain)})
        return metric(y[order], scores[order], np.ones(y.shape[0]), query_ptr)
