"""Survival analysis: labels, the Cox and AFT losses, concordance.

Two models, XGBoost's (``survival:cox`` and ``survival:aft``):

* **Cox proportional hazards.** The margin ``m`` is a log relative risk;
  the loss is the negative partial log-likelihood with Breslow's handling
  of tied times,
  ``-sum_{i: event} [m_i - log sum_{j: t_j >= t_i} exp(m_j)]``.
  Labels are times, negative for censored rows (XGBoost's convention).
* **Accelerated failure time.** ``log T = m + sigma Z`` with ``Z`` normal,
  logistic or extreme-value (``aft_loss_distribution``,
  ``aft_loss_distribution_scale`` = sigma). A row is an interval
  ``[lower, upper]`` that holds its time: ``lower == upper`` is an observed
  time, ``upper = inf`` right-censoring, ``lower = 0`` left-censoring. The
  loss is ``-log`` of the density (observed) or of the probability of the
  interval; gradients and hessians are clipped to XGBoost's ranges, and
  where a density or interval probability underflows they take their limit
  (the paper: Barnwal, Cho & Hocking, "Survival regression with accelerated
  failure time model in XGBoost", 2022), so that with the exact method the
  trees are XGBoost's.

The functions here are vectorised over rows (NumPy); the Cox gradient needs
one sort of the times per fit and a pass of cumulative sums per round.
"""

import numpy as np
from scipy.special import erf

# The ranges of AFT gradients and hessians (XGBoost's regularisation: no
# row gets a zero hessian, no row an unbounded step).
AFT_GRADIENT_RANGE = (-15.0, 15.0)
AFT_HESSIAN_RANGE = (1e-16, 15.0)
# Floor of a density or interval probability under a log or a division.
AFT_EPS = 1e-12
AFT_DISTRIBUTIONS = ("normal", "logistic", "extreme")


# -- labels ------------------------------------------------------------------

def structured_labels(y):
    """(event, time) of a scikit-survival structured array (a bool field
    and a float field, in that order), or None when ``y`` is not one."""
    y = np.asarray(y)
    names = y.dtype.names
    if names is None:
        return None
    if len(names) != 2 or y.dtype[names[0]].kind != "b" or \
            y.dtype[names[1]].kind not in "fiu":
        raise ValueError(
            "a structured survival y has two fields, (event: bool, time: "
            f"float), as scikit-survival's Surv.from_arrays; got {y.dtype}")
    return y[names[0]].astype(bool), y[names[1]].astype(np.float64)


def cox_labels(y):
    """Cox labels as XGBoost reads them: the time, negative when censored.

    ``y`` is that already (1-D), or a scikit-survival structured array."""
    pair = structured_labels(y)
    if pair is not None:
        event, time = pair
        _check_times(time, "time")
        y = np.where(event, time, -time)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError("survival:cox needs y as times (negative: censored) "
                         "or a structured (event, time) array, got shape "
                         f"{y.shape}")
    if not np.all(np.isfinite(y)) or np.any(y == 0):
        raise ValueError("survival:cox needs finite non-zero times in y "
                         "(a negative time is a censored row)")
    return y


def aft_bounds(y):
    """AFT labels as an (n, 2) array of [lower, upper] bounds of each time.

    ``y`` is (n, 2) bounds already (``upper = inf``: right-censored,
    ``lower = 0``: left-censored), or 1-D times (negative: right-censored,
    as for Cox), or a structured (event, time) array."""
    pair = structured_labels(y)
    if pair is not None:
        event, time = pair
        _check_times(time, "time")
        y = np.where(event, time, -time)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 1:
        if not np.all(np.isfinite(y)) or np.any(y == 0):
            raise ValueError("survival:aft needs finite non-zero times in a "
                             "1-D y (a negative time is right-censored)")
        time = np.abs(y)
        y = np.column_stack([time, np.where(y > 0, time, np.inf)])
    if y.ndim != 2 or y.shape[1] != 2:
        raise ValueError("survival:aft needs y as (n, 2) bounds [lower, "
                         "upper], times (negative: censored) or a "
                         f"structured (event, time) array, got shape {y.shape}")
    lower, upper = y[:, 0], y[:, 1]
    if np.isnan(y).any() or np.any(lower < 0) or np.isinf(lower).any():
        raise ValueError("survival:aft needs lower bounds that are finite "
                         "and >= 0 (0: left-censored)")
    if np.any(upper < lower) or np.any(upper <= 0):
        raise ValueError("survival:aft needs upper bounds > 0 and >= the "
                         "lower bounds (inf: right-censored)")
    return np.ascontiguousarray(y)


def _check_times(time, what):
    if not np.all(np.isfinite(time)) or np.any(time <= 0):
        raise ValueError(f"survival labels need positive finite {what}s")


# -- Cox ---------------------------------------------------------------------

class CoxRiskSets:
    """The order of the rows by time and the boundaries of tied times,
    computed once per fit (the labels do not change)."""

    def __init__(self, y):
        self.order = np.argsort(np.abs(y), kind="stable")
        time = np.abs(y)[self.order]
        self.event = (y > 0)[self.order]
        # first sorted position of each row's tie group, and one past its last
        new = np.r_[True, time[1:] != time[:-1]]
        starts = np.flatnonzero(new)
        group = np.cumsum(new) - 1
        ends = np.r_[starts[1:], time.size]
        self.group_start = starts[group]
        self.group_end = ends[group]


def cox_gradient(risk_sets, margin):
    """Gradient and hessian of the Cox loss (Breslow's ties) per row.

    With ``S_i = sum_{j: t_j >= t_i} exp(m_j)`` the risk-set sum at an
    event time, a row k gets ``g_k = exp(m_k) R_k - event_k`` and
    ``h_k = exp(m_k) R_k - exp(2 m_k) Q_k`` where ``R_k`` and ``Q_k`` sum
    ``1 / S_i`` and ``1 / S_i^2`` over the events at or before its time
    (every event of its tie group included). Sums in float64, one pass of
    cumulative sums in time order."""
    order = risk_sets.order
    exp_m = np.exp(margin[order])
    # S at each sorted position: the sum over rows at or after its group
    suffix = np.cumsum(exp_m[::-1])[::-1]
    at_group = suffix[risk_sets.group_start]
    inverse = np.where(risk_sets.event, 1.0 / at_group, 0.0)
    inverse_sq = np.where(risk_sets.event, 1.0 / (at_group * at_group), 0.0)
    # events up to the end of each row's tie group
    last = risk_sets.group_end - 1
    r = np.cumsum(inverse)[last]
    q = np.cumsum(inverse_sq)[last]
    grad = np.empty_like(exp_m)
    hess = np.empty_like(exp_m)
    grad[order] = exp_m * r - risk_sets.event
    hess[order] = exp_m * r - exp_m * exp_m * q
    return grad, hess


def cox_negative_log_likelihood(y, margin):
    """XGBoost's ``cox-nloglik``: the negative partial log-likelihood
    (Breslow) divided by the number of events."""
    risk_sets = CoxRiskSets(y)
    m = margin[risk_sets.order]
    suffix = np.cumsum(np.exp(m)[::-1])[::-1]
    at_group = suffix[risk_sets.group_start]
    event = risk_sets.event
    n_events = max(int(event.sum()), 1)
    return float(-np.sum(m[event] - np.log(at_group[event])) / n_events)


# -- AFT ---------------------------------------------------------------------

class _Normal:
    @staticmethod
    def pdf(z):
        return np.exp(-z * z / 2.0) / np.sqrt(2.0 * np.pi)

    @staticmethod
    def cdf(z):
        return 0.5 * (1.0 + erf(z / np.sqrt(2.0)))

    @classmethod
    def pdf_derivatives(cls, z):
        """(f'(z), f''(z))."""
        f = cls.pdf(z)
        return -z * f, (z * z - 1.0) * f


class _Logistic:
    @staticmethod
    def pdf(z):
        w = np.exp(z)
        with np.errstate(over="ignore", invalid="ignore"):
            f = w / ((1.0 + w) * (1.0 + w))
        return np.where(np.isinf(w) | np.isinf(w * w), 0.0, f)

    @staticmethod
    def cdf(z):
        w = np.exp(z)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(np.isinf(w), 1.0, w / (1.0 + w))

    @classmethod
    def pdf_derivatives(cls, z):
        w = np.exp(z)
        f = cls.pdf(z)
        with np.errstate(over="ignore", invalid="ignore"):
            d1 = np.where(np.isinf(w), 0.0, f * (1.0 - w) / (1.0 + w))
            d2 = np.where(np.isinf(w) | np.isinf(w * w), 0.0,
                          f * (w * w - 4.0 * w + 1.0) / ((1.0 + w) ** 2))
        return d1, d2


class _Extreme:
    """The minimum extreme-value (Gumbel) distribution of log-times."""

    @staticmethod
    def pdf(z):
        w = np.exp(z)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(np.isinf(w), 0.0, w * np.exp(-w))

    @staticmethod
    def cdf(z):
        return 1.0 - np.exp(-np.exp(z))

    @classmethod
    def pdf_derivatives(cls, z):
        w = np.exp(z)
        f = cls.pdf(z)
        with np.errstate(over="ignore", invalid="ignore"):
            d1 = np.where(np.isinf(w), 0.0, (1.0 - w) * f)
            d2 = np.where(np.isinf(w) | np.isinf(w * w), 0.0,
                          (w * w - 3.0 * w + 1.0) * f)
        return d1, d2


_DISTRIBUTIONS = {"normal": _Normal, "logistic": _Logistic,
                  "extreme": _Extreme}


def aft_distribution(name):
    """The noise distribution called ``name`` (``aft_loss_distribution``)."""
    try:
        return _DISTRIBUTIONS[name]
    except KeyError:
        raise ValueError(f"aft_loss_distribution must be one of "
                         f"{list(AFT_DISTRIBUTIONS)}, got {name!r}") from None


class _Interval:
    """The standardised bounds of each row at margins ``m``: z-scores, the
    distribution's pdf, cdf and pdf derivatives there (0 or 1 beyond an
    open end), and the censoring kind."""

    def __init__(self, bounds, margin, dist, sigma):
        lower, upper = bounds[:, 0], bounds[:, 1]
        self.exact = lower == upper
        self.right = ~self.exact & np.isinf(upper)
        self.left = ~self.exact & (lower <= 0.0)
        with np.errstate(divide="ignore"):
            z_l = (np.log(lower) - margin) / sigma
            z_u = (np.log(upper) - margin) / sigma
        z_l = np.where(self.left, 0.0, z_l)
        z_u = np.where(self.right, 0.0, z_u)
        self.z_l, self.z_u = z_l, z_u
        self.pdf_l = np.where(self.left, 0.0, dist.pdf(z_l))
        self.pdf_u = np.where(self.right, 0.0, dist.pdf(z_u))
        self.cdf_l = np.where(self.left, 0.0, dist.cdf(z_l))
        self.cdf_u = np.where(self.right, 1.0, dist.cdf(z_u))
        d1_l, d2_l = dist.pdf_derivatives(z_l)
        d1_u, d2_u = dist.pdf_derivatives(z_u)
        self.d1_l = np.where(self.left, 0.0, d1_l)
        self.d1_u = np.where(self.right, 0.0, d1_u)
        self.d2_l = d2_l   # read for exact rows only (z_l == z_u there)
        # the sign of the z-score that picks a limit (XGBoost's rule)
        self.positive = np.where(self.exact, z_l > 0, (z_u > 0) | (z_l > 0))


def aft_loss(bounds, margin, distribution, sigma):
    """Per-row AFT loss: ``-log`` of the density of an observed time (per
    unit of time) or of the probability of a censored row's interval."""
    dist = aft_distribution(distribution)
    iv = _Interval(bounds, margin, dist, sigma)
    lower = bounds[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        density = iv.pdf_l / (sigma * lower)
    probability = iv.cdf_u - iv.cdf_l
    return -np.log(np.maximum(np.where(iv.exact, density, probability),
                              AFT_EPS))


def aft_gradient(bounds, margin, distribution, sigma):
    """Per-row gradient and hessian of :func:`aft_loss` in the margin,
    clipped to ``AFT_GRADIENT_RANGE`` / ``AFT_HESSIAN_RANGE``; where the
    denominator underflows, the limit as the margin goes to infinity."""
    dist = aft_distribution(distribution)
    iv = _Interval(bounds, margin, dist, sigma)
    exact = iv.exact
    cdf_diff = iv.cdf_u - iv.cdf_l
    pdf_diff = iv.pdf_u - iv.pdf_l
    d1_diff = iv.d1_u - iv.d1_l
    grad_num = np.where(exact, iv.d1_l, pdf_diff)
    grad_den = np.where(exact, sigma * iv.pdf_l, sigma * cdf_diff)
    hess_num = np.where(exact, -(iv.pdf_l * iv.d2_l - iv.d1_l * iv.d1_l),
                        -(cdf_diff * d1_diff - pdf_diff * pdf_diff))
    hess_den = np.where(exact, (sigma * iv.pdf_l) ** 2,
                        (sigma * cdf_diff) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        grad = grad_num / grad_den
        hess = hess_num / hess_den
    grad_limit, hess_limit = _limits(distribution, iv, sigma)
    grad = np.where((grad_den < AFT_EPS) & ~np.isfinite(grad), grad_limit,
                    grad)
    hess = np.where((hess_den < AFT_EPS) & ~np.isfinite(hess), hess_limit,
                    hess)
    return (np.clip(grad, *AFT_GRADIENT_RANGE),
            np.clip(hess, *AFT_HESSIAN_RANGE))


def _limits(distribution, iv, sigma):
    """The gradient and hessian each row tends to where its density or
    interval probability underflows (the margin far from its interval),
    by censoring kind and the side the margin lies on."""
    g_lo, g_hi = AFT_GRADIENT_RANGE
    h_lo, h_hi = AFT_HESSIAN_RANGE
    positive = iv.positive
    right, left = iv.right, iv.left
    if distribution == "normal":
        far_below, far_above = g_lo, g_hi         # z > 0: margin too small
        hess_both = 1.0 / (sigma * sigma)
        hess = np.where(right & ~positive, h_lo,
                        np.where(left & positive, h_lo, hess_both))
    elif distribution == "logistic":
        far_below, far_above = -1.0 / sigma, 1.0 / sigma
        hess = np.full(positive.shape, h_lo)
    else:  # extreme
        far_below, far_above = g_lo, 1.0 / sigma
        hess = np.where(left, h_lo, np.where(positive, h_hi, h_lo))
    grad = np.where(positive, far_below, far_above)
    grad = np.where(right & ~positive, 0.0, grad)
    grad = np.where(left & positive, 0.0, grad)
    return grad, hess


def aft_constant_margin(bounds, weight, distribution, sigma):
    """The margin of the best constant model (minimum of the weighted AFT
    loss), by Newton steps from the mean log-time; the base margin of an
    AFT fit without ``base_score``."""
    lower, upper = bounds[:, 0], bounds[:, 1]
    anchor = np.where(np.isinf(upper), lower, np.where(lower <= 0, upper,
                                                       np.sqrt(lower * upper)))
    margin = float(np.average(np.log(np.maximum(anchor, 1e-300)),
                              weights=weight))
    for _ in range(50):
        m = np.full(lower.shape, margin)
        grad, hess = aft_gradient(bounds, m, distribution, sigma)
        step = np.sum(weight * grad) / max(np.sum(weight * hess), 1e-12)
        margin -= float(np.clip(step, -5.0, 5.0))
        if abs(step) < 1e-10:
            break
    return margin


def interval_accuracy(bounds, predicted_time):
    """Whether each predicted time lies in its row's interval (XGBoost's
    ``interval-regression-accuracy``, per row)."""
    return (predicted_time >= bounds[:, 0]) & (predicted_time <= bounds[:, 1])


# -- concordance -------------------------------------------------------------

def concordance_index(event, time, estimate):
    """Harrell's concordance index of risk estimates.

    A pair (i, j) is comparable when ``time[i] < time[j]`` and row i's
    event was observed; it is concordant when ``estimate[i] >
    estimate[j]`` (the earlier event has the higher risk), and counts 1/2
    when the estimates tie. Pairs with tied times count when exactly one
    of them is an event (it is the earlier one). Returns the concordant
    share of the comparable pairs (NaN without any), as scikit-survival's
    ``concordance_index_censored`` and lifelines' ``concordance_index``
    (with risks negated) do. O(n log n): one sort by time, a Fenwick tree
    over the ranks of the estimates.
    """
    event = np.asarray(event, dtype=bool)
    time = np.asarray(time, dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)
    if not (event.shape == time.shape == estimate.shape) or event.ndim != 1:
        raise ValueError("event, time and estimate must be 1-D arrays of "
                         "the same length")
    if np.isnan(estimate).any():
        raise ValueError("concordance_index: the estimates contain NaN")
    ranks = np.unique(estimate, return_inverse=True)[1]
    concordant, tied, comparable = _count_pairs(event, time, ranks)
    if comparable == 0:
        return float("nan")
    return (concordant + 0.5 * tied) / comparable


def _count_pairs(event, time, ranks):
    """(concordant, tied-estimate, comparable) pair counts: rows taken in
    decreasing time, tie groups at once; the Fenwick tree holds the ranks
    of the rows with strictly later times (censored rows of the same time
    join before the group's events are counted)."""
    order = np.lexsort((event, -time))   # later first; censored first in ties
    size = int(ranks.max()) + 2
    tree = np.zeros(size, dtype=np.int64)
    later = 0
    concordant = tied = comparable = 0
    i, n = 0, time.size
    while i < n:
        j = i
        while j < n and time[order[j]] == time[order[i]]:
            j += 1
        group = order[i:j]
        censored = group[~event[group]]
        for row in censored:            # a censored row outlives a tied event
            _add(tree, ranks[row] + 1)
        for row in group[event[group]]:
            below = _prefix(tree, ranks[row])          # later rows, lower risk
            at_most = _prefix(tree, ranks[row] + 1)
            members = later + len(censored)
            concordant += below
            tied += at_most - below
            comparable += members
        for row in group[event[group]]:
            _add(tree, ranks[row] + 1)
        later += j - i
        i = j
    return concordant, tied, comparable


def _add(tree, position):
    while position < tree.size:
        tree[position] += 1
        position += position & -position


def _prefix(tree, position):
    """Number of added ranks < ``position`` (ranks are stored 1-based)."""
    total = 0
    while position > 0:
        total += tree[position]
        position -= position & -position
    return int(total)
