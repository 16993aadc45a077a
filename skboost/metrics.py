"""Named evaluation metrics, XGBoost's definitions.

A metric maps labels, predictions (in prediction space: probabilities,
expected counts, scores), weights and, for the per-query metrics, the query
boundaries to one number. Names follow XGBoost's ``eval_metric``:

- regression: ``rmse``, ``rmsle``, ``mae``, ``mape``, ``mphe``
  (pseudo-Huber, ``huber_slope``), ``quantile`` (pinball loss averaged over
  ``quantile_alpha``), ``poisson-nloglik``, ``gamma-nloglik``,
  ``gamma-deviance``, ``tweedie-nloglik@rho``;
- distributions (``BoostDistributionRegressor``, on the margins of every
  parameter): ``nll`` (mean negative log-likelihood), ``crps`` (mean
  continuous ranked probability score);
- classification: ``logloss``, ``error``, ``error@t`` (threshold t),
  ``merror``, ``mlogloss``, ``auc``, ``aucpr`` (interpolated as XGBoost);
- survival: ``cox-nloglik`` (``survival:cox``), ``aft-nloglik`` and
  ``interval-regression-accuracy`` (``survival:aft``);
- ranking (per query, averaged over queries): ``ndcg``, ``ndcg@n``, ``map``,
  ``map@n``, ``pre@n``, ``auc``, ``aucpr``. A trailing ``-`` (``ndcg@5-``) scores a query
  without relevant documents 0 instead of 1.

Use :func:`get_metric` to build one; it knows whether higher is better.
:func:`concordance_index` is Harrell's concordance of survival predictions
(the survival models' ``score``).
"""

from dataclasses import dataclass, field
import inspect
import difflib
import re

import numpy as np
from scipy.special import gammaln

from ._survival import concordance_index  # noqa: F401 (public here)
from .distributions import crps_metric, nll_metric

# Probabilities are clipped to [LOG_EPS, 1 - LOG_EPS] in log losses.
LOG_EPS = 1e-16

# Metrics where a larger value is better (all others are minimised).
_MAXIMISED = {"auc", "aucpr", "ndcg", "map", "pre",
              "interval-regression-accuracy"}

_RANKING = {"ndcg", "map", "pre"}


@dataclass
class Metric:
    """A named metric bound to its parameters.

    Parameters
    ----------
    name : str
        Name as given (with its ``@`` suffix), used in ``evals_result_``.
    function : callable
        ``function(y, pred, weight, query_ptr) -> float``.
    higher_is_better : bool
        Direction of improvement (for early stopping).
    on_predictions : bool
        A user's function: it sees the objective's predictions (as
        ``predict`` returns them: labels under ``multi:softmax``, margins
        under ``binary:logitraw``, as XGBoost passes them), not the
        probabilities the named metrics read.
    """

    name: str
    function: callable = field(repr=False)
    higher_is_better: bool = False
    on_predictions: bool = False

    def __call__(self, y, pred, weight, query_ptr=None):
        return float(self.function(y, pred, weight, query_ptr))


def _mean(values, weight):
    return np.sum(values * weight) / np.sum(weight)


def _column(pred):
    pred = np.asarray(pred, dtype=np.float64)
    return pred[:, 0] if pred.ndim == 2 and pred.shape[1] == 1 else pred


def rmse(y, pred, weight, query_ptr=None):
    """Root of the weighted mean squared error."""
    return np.sqrt(_mean((_column(pred) - y) ** 2, weight))


def rmsle(y, pred, weight, query_ptr=None):
    """Root of the weighted mean squared error of ``log1p``."""
    return np.sqrt(_mean((np.log1p(_column(pred)) - np.log1p(y)) ** 2, weight))


def mae(y, pred, weight, query_ptr=None):
    """Weighted mean absolute error."""
    return _mean(np.abs(_column(pred) - y), weight)


def mape(y, pred, weight, query_ptr=None):
    """Weighted mean of ``|y - pred| / |y|``."""
    return _mean(np.abs(y - _column(pred)) / np.abs(y), weight)


def logloss(y, pred, weight, query_ptr=None):
    """Weighted binary log loss of probabilities ``pred``."""
    p = np.clip(_column(pred), LOG_EPS, 1 - LOG_EPS)
    return _mean(-(y * np.log(p) + (1 - y) * np.log1p(-p)), weight)


def mlogloss(y, pred, weight, query_ptr=None):
    """Weighted multiclass log loss of class probabilities (n, K)."""
    p = np.clip(pred[np.arange(len(y)), y.astype(np.intp)], LOG_EPS, 1.0)
    return _mean(-np.log(p), weight)


def merror(y, pred, weight, query_ptr=None):
    """Weighted rate of rows whose most probable class is wrong."""
    return _mean(np.argmax(pred, axis=1) != y, weight)


def poisson_nloglik(y, pred, weight, query_ptr=None):
    """Weighted mean Poisson negative log-likelihood of means ``pred``."""
    mu = np.maximum(_column(pred), LOG_EPS)
    return _mean(mu - y * np.log(mu) + gammaln(y + 1.0), weight)


def gamma_nloglik(y, pred, weight, query_ptr=None):
    """Weighted mean negative log-likelihood of a gamma distribution of
    shape 1 (XGBoost's dispersion) and mean ``pred``."""
    mu = _column(pred)
    return _mean(y / mu + np.log(mu), weight)


def gamma_deviance(y, pred, weight, query_ptr=None):
    """Weighted mean gamma deviance ``2 (log(mu / y) + y / mu - 1)``."""
    mu = _column(pred)
    return _mean(2.0 * (np.log(mu / y) + y / mu - 1.0), weight)


def error_at(threshold):
    def error(y, pred, weight, query_ptr=None):
        """Weighted rate of rows on the wrong side of the threshold."""
        return _mean((_column(pred) > threshold) != (y > 0.5), weight)
    return error


def mphe(slope):
    def pseudo_huber(y, pred, weight, query_ptr=None):
        """Weighted mean pseudo-Huber error."""
        r = (_column(pred) - y) / slope
        return _mean(slope * slope * (np.sqrt(1.0 + r * r) - 1.0), weight)
    return pseudo_huber


def tweedie_nloglik(rho):
    if not 1.0 <= rho < 2.0:
        raise ValueError(f"tweedie-nloglik needs rho in [1, 2), got {rho}")

    def tweedie(y, pred, weight, query_ptr=None):
        """Weighted mean Tweedie negative log-likelihood (up to terms in y)."""
        mu = _column(pred)
        first = y * np.log(mu) if rho == 1.0 else (
            y * mu ** (1 - rho) / (1 - rho))
        return _mean(-first + mu ** (2 - rho) / (2 - rho), weight)
    return tweedie


def quantile_loss(alphas):
    alphas = np.atleast_1d(np.asarray(alphas, dtype=np.float64))

    def quantile(y, pred, weight, query_ptr=None):
        """Weighted pinball loss, averaged over the quantiles."""
        pred = np.asarray(pred, dtype=np.float64).reshape(len(y), -1)
        total = 0.0
        for k, alpha in enumerate(alphas):
            r = y - pred[:, k]
            total += _mean(np.where(r >= 0, alpha * r, (alpha - 1) * r), weight)
        return total / len(alphas)
    return quantile


def _binary_auc(y, score, weight):
    """Weighted ROC AUC, ties counted half (the Mann-Whitney statistic)."""
    positive = y > 0.5
    w_pos, w_neg = weight[positive].sum(), weight[~positive].sum()
    if w_pos == 0 or w_neg == 0:
        return np.nan
    order = np.argsort(-score, kind="stable")
    score, positive, weight = score[order], positive[order], weight[order]
    # blocks of tied scores
    starts = np.flatnonzero(np.r_[True, score[1:] != score[:-1]])
    pos_in_block = np.add.reduceat(np.where(positive, weight, 0.0), starts)
    neg_in_block = np.add.reduceat(np.where(positive, 0.0, weight), starts)
    pos_above = np.cumsum(pos_in_block) - pos_in_block
    area = np.sum(neg_in_block * (pos_above + 0.5 * pos_in_block))
    return area / (w_pos * w_neg)


def _binary_aucpr(y, score, weight):
    """Weighted area under the precision-recall curve, interpolated between
    the curve's points as Davis and Goadrich (2006) show precision must be
    (XGBoost's ``aucpr``): between two thresholds, false positives grow
    linearly with true positives, so precision is not linear in recall."""
    positive = y > 0.5
    total_pos = weight[positive].sum()
    if total_pos == 0 or weight[~positive].sum() == 0:
        return np.nan
    order = np.argsort(-score, kind="stable")
    score, positive, weight = score[order], positive[order], weight[order]
    ends = np.r_[np.flatnonzero(score[1:] != score[:-1]), len(score) - 1]
    tp = np.cumsum(np.where(positive, weight, 0.0))[ends]
    fp = np.cumsum(np.where(positive, 0.0, weight))[ends]
    tp_prev, fp_prev = np.r_[0.0, tp[:-1]], np.r_[0.0, fp[:-1]]
    recall, recall_prev = tp / total_pos, tp_prev / total_pos
    rises = tp > tp_prev
    # on a segment: fp = fp_prev + h (tp - tp_prev)
    h = np.where(rises, (fp - fp_prev) / np.where(rises, tp - tp_prev, 1.0),
                 0.0)
    a = 1.0 + h
    b = np.where(rises, (fp_prev - h * tp_prev) / total_pos, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        curved = (recall - recall_prev - b / a * (
            np.log(a * recall + b) - np.log(a * recall_prev + b))) / a
    area = np.where(b != 0.0, curved, (recall - recall_prev) / a)
    return float(np.sum(area))


def auc(y, pred, weight, query_ptr=None):
    """ROC AUC: binary, multiclass one-vs-rest weighted by class prevalence,
    or the mean over queries (relevance > 0 is positive) for ranking."""
    if query_ptr is not None:
        return _per_query(lambda yq, sq, wq: _binary_auc(yq, sq, wq),
                          y, _column(pred), weight, query_ptr, skip_nan=True)
    pred = np.asarray(pred, dtype=np.float64)
    if pred.ndim == 2 and pred.shape[1] > 1:
        total, area = 0.0, 0.0
        for k in range(pred.shape[1]):
            prevalence = weight[y == k].sum()
            if prevalence > 0:
                area += prevalence * _binary_auc((y == k).astype(float),
                                                 pred[:, k], weight)
                total += prevalence
        return area / total
    return _binary_auc(y, _column(pred), weight)


def aucpr(y, pred, weight, query_ptr=None):
    """Area under the precision-recall curve: binary, or the mean over
    queries (relevance > 0 is positive) for ranking."""
    if query_ptr is not None:
        return _per_query(_binary_aucpr, y, _column(pred), weight, query_ptr,
                          skip_nan=True)
    return _binary_aucpr(y, _column(pred), weight)


def _per_query(score_query, y, pred, weight, query_ptr, skip_nan=False):
    """Mean over queries of ``score_query(y_q, pred_q, weight_q)``, each query
    weighted by its first row's weight (XGBoost's query weights)."""
    if query_ptr is None:
        query_ptr = np.array([0, len(y)])
    scores, query_weight = [], []
    for begin, end in zip(query_ptr[:-1], query_ptr[1:]):
        if end == begin:
            continue
        value = score_query(y[begin:end], pred[begin:end], weight[begin:end])
        if skip_nan and np.isnan(value):
            continue
        scores.append(value)
        query_weight.append(weight[begin])
    if not scores:
        return np.nan
    return np.average(scores, weights=query_weight)


def _ranked_labels(y, score):
    """Labels in the order of decreasing score (ties by row order)."""
    return y[np.argsort(-score, kind="stable")]


def ndcg_at(k, exp_gain, empty_score):
    def ndcg(y, pred, weight, query_ptr=None):
        """Mean NDCG@k over queries (gains 2^y - 1 or y)."""
        def query(yq, sq, wq):
            gain = (2.0 ** yq - 1.0) if exp_gain else yq
            n = len(yq) if k is None else min(k, len(yq))
            discount = 1.0 / np.log2(np.arange(n) + 2.0)
            ideal = np.sum(np.sort(gain)[::-1][:n] * discount)
            if ideal == 0:
                return empty_score
            return np.sum(_ranked_labels(gain, sq)[:n] * discount) / ideal
        return _per_query(query, y, _column(pred), weight, query_ptr)
    return ndcg


def map_at(k, empty_score):
    def average_precision(y, pred, weight, query_ptr=None):
        """Mean average precision@k over queries (relevance > 0)."""
        def query(yq, sq, wq):
            relevant = (_ranked_labels(yq, sq) > 0).astype(np.float64)
            n_relevant = relevant.sum()
            if k is not None:
                relevant = relevant[:k]
                n_relevant = min(n_relevant, k)
            if n_relevant == 0:
                return empty_score
            precision = np.cumsum(relevant) / np.arange(1, len(relevant) + 1)
            return np.sum(precision * relevant) / n_relevant
        return _per_query(query, y, _column(pred), weight, query_ptr)
    return average_precision


def precision_at(k):
    def precision(y, pred, weight, query_ptr=None):
        """Mean precision@k over queries (relevance > 0)."""
        def query(yq, sq, wq):
            n = len(yq) if k is None else k
            return np.sum(_ranked_labels(yq, sq)[:n] > 0) / n
        return _per_query(query, y, _column(pred), weight, query_ptr)
    return precision


def cox_nloglik(y, pred, weight, query_ptr=None):
    """Negative partial log-likelihood of the Cox model (Breslow's ties)
    per event, from relative risks ``pred``; y: times, negative when
    censored. Unweighted, as XGBoost's."""
    from ._survival import cox_labels, cox_negative_log_likelihood

    with np.errstate(divide="ignore"):
        margin = np.log(_column(pred))
    return cox_negative_log_likelihood(cox_labels(y), margin)


def _aft_bounds(y, name):
    from ._survival import aft_bounds

    if np.ndim(y) != 2:
        raise ValueError(f"eval_metric {name!r} needs survival:aft's "
                         "interval labels (n, 2)")
    return aft_bounds(y)


def aft_nloglik(distribution, sigma):
    """Weighted mean AFT loss (``survival:aft``) of predicted times."""
    from ._survival import aft_loss

    def function(y, pred, weight, query_ptr=None):
        with np.errstate(divide="ignore"):
            margin = np.log(_column(pred))
        return _mean(aft_loss(_aft_bounds(y, "aft-nloglik"), margin,
                              distribution, sigma), weight)
    return function


def interval_regression_accuracy(y, pred, weight, query_ptr=None):
    """Weighted share of rows whose predicted time lies in its interval."""
    from ._survival import interval_accuracy

    bounds = _aft_bounds(y, "interval-regression-accuracy")
    return _mean(interval_accuracy(bounds, _column(pred)), weight)


_SIMPLE = {
    "rmse": rmse, "rmsle": rmsle, "mae": mae, "mape": mape,
    "logloss": logloss, "mlogloss": mlogloss, "merror": merror,
    "poisson-nloglik": poisson_nloglik, "gamma-nloglik": gamma_nloglik,
    "gamma-deviance": gamma_deviance, "auc": auc, "aucpr": aucpr,
    "cox-nloglik": cox_nloglik,
    "interval-regression-accuracy": interval_regression_accuracy,
}

_NAME = re.compile(r"^(?P<base>[a-z-]+?)(?:@(?P<arg>[0-9.eE+-]+?))?(?P<minus>-)?$")

METRIC_NAMES = sorted(set(_SIMPLE) | {"error", "error@t", "mphe", "quantile",
                                      "nll", "crps",
                                      "tweedie-nloglik@rho", "ndcg", "ndcg@n",
                                      "map", "map@n", "pre@n",
                                      "aft-nloglik"})


def _parse(name):
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        _unknown_metric(name)
    return match["base"], match["arg"], match["minus"] is not None


def _unknown_metric(name):
    """Raise the ValueError naming an unknown metric (and the closest
    known names, for a typo)."""
    close = (difflib.get_close_matches(name, METRIC_NAMES, n=3)
             if isinstance(name, str) else [])
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    raise ValueError(f"Unknown eval_metric {name!r}.{hint} Expected one of "
                     f"{METRIC_NAMES} or a callable")


def _integer_arg(name, arg):
    if arg is None:
        return None
    try:
        k = int(arg)
    except ValueError:
        k = 0
    if k < 1:
        raise ValueError(f"eval_metric {name!r}: the cut-off after '@' must "
                         "be a positive integer")
    return k


def get_metric(name, params=None):
    """The metric called ``name`` (or wrapping a callable).

    Parameters
    ----------
    name : str or callable
        A metric name (see the module docstring), or a function
        ``metric(y_true, y_pred, *, sample_weight=None) -> float`` on
        predictions (``sample_weight`` is passed when the function takes
        it), which is minimised.
    params : dict, default=None
        Objective parameters the metric depends on (``huber_slope``,
        ``quantile_alpha``, ``ndcg_exp_gain``).

    Returns
    -------
    Metric
    """
    params = params or {}
    if callable(name):
        return _callable_metric(name)
    if not isinstance(name, str):
        raise TypeError("eval_metric entries must be metric names (str) or "
                        f"callables, got {type(name).__name__} {name!r}")
    base, arg, minus = _parse(name)
    empty_score = 0.0 if minus else 1.0
    if base in _SIMPLE and arg is None and not minus:
        function = _SIMPLE[base]
    elif base == "error" and not minus:
        threshold = 0.5 if arg is None else float(arg)
        function = error_at(threshold)
    elif base == "mphe" and arg is None and not minus:
        function = mphe(float(params.get("huber_slope", 1.0)))
    elif base == "quantile" and arg is None and not minus:
        function = quantile_loss(params.get("quantile_alpha", 0.5))
    elif base in ("nll", "crps") and arg is None and not minus:
        function = (nll_metric if base == "nll" else crps_metric)(params)
    elif base == "tweedie-nloglik" and not minus:
        function = tweedie_nloglik(
            float(arg) if arg is not None
            else float(params.get("tweedie_variance_power", 1.5)))
    elif base == "aft-nloglik" and arg is None and not minus:
        function = aft_nloglik(
            params.get("aft_loss_distribution", "normal"),
            float(params.get("aft_loss_distribution_scale", 1.0)))
    elif base == "ndcg":
        function = ndcg_at(_integer_arg(name, arg),
                           bool(params.get("ndcg_exp_gain", True)), empty_score)
    elif base == "map":
        function = map_at(_integer_arg(name, arg), empty_score)
    elif base == "pre" and not minus:
        function = precision_at(_integer_arg(name, arg))
    else:
        _unknown_metric(name)
    return Metric(name, function, base in _MAXIMISED)


def is_ranking_metric(metric):
    """Whether a metric is computed per query."""
    return metric.name.split("@")[0].rstrip("-") in _RANKING


def _callable_metric(function):
    takes_weight = "sample_weight" in inspect.signature(function).parameters

    def call(y, pred, weight, query_ptr=None):
        pred = _column(pred)
        if takes_weight:
            return function(y, pred, sample_weight=weight)
        return function(y, pred)
    return Metric(getattr(function, "__name__", "custom"), call, False,
                  on_predictions=True)
