"""Predictive distributions: families fitted by boosting their negative
log-likelihood (``BoostDistributionRegressor``).

A family has ``k`` parameters, each on its natural link: the raw margins
(the trees' sums) are the location itself for the normal and Student's t,
the log of every scale, shape, mean of a positive variable or dispersion.
One margin column per parameter: the booster trains ``k`` outputs, one tree
each per round or one vector-leaf tree for all (``multi_strategy``).

================  ===========================  ============  ==============
``distribution``  margins                      scipy.stats   mean
================  ===========================  ============  ==============
``normal``        mu, log sigma                ``norm``      mu
``lognormal``     mu, log sigma of ln y        ``lognorm``   exp(mu + s²/2)
``gamma``         log mean, log shape          ``gamma``     mean
``poisson``       log mean                     ``poisson``   mean
``negbinomial``   log mean, log size r         ``nbinom``    mean
``studentt``      mu, log sigma (df fixed)     ``t``         mu (df > 1)
================  ===========================  ============  ==============

Second-order boosting needs a positive hessian per row and margin. The
observed hessian of a log-likelihood is not positive everywhere (the
normal's ``d²/d(log sigma)²`` is ``2 z²``, zero at ``y = mu``; Student's
t's is negative in the tails), so every family uses the **Fisher
information** (the expected hessian) of its parameters instead: a Fisher
scoring step, positive by construction, equal to the observed hessian on
average. All six parametrisations are orthogonal (the Fisher matrix is
diagonal), so the per-margin diagonal is the whole matrix. The one entry
without a closed form, the negative binomial's ``log r``, uses the observed
hessian clipped at ``HESSIAN_FLOOR`` (its expectation is the Fisher
information, and the clip keeps every leaf's hessian sum positive).

``natural_gradient=True`` is NGBoost's scaling instead: each row's gradient
is divided by its Fisher information (the natural gradient) and every
hessian is 1, so each tree fits the natural gradients by least squares.

Without it, each round scales every parameter's pairs by one positive
constant, the inverse of its mean Fisher information over the training
rows (weighted): a leaf's Newton step ``-G / H`` is unchanged, and
``reg_lambda`` and ``min_child_weight`` keep the meaning they have for the
squared error (a count of rows), whatever the scale of ``y``. Unscaled,
the normal's ``1 / sigma²`` hessians would be tiny for a target in the
hundreds and ``reg_lambda=1`` would stop the mean from moving.
"""

import numpy as np
from scipy import stats
from scipy.optimize import minimize
from scipy.special import beta as beta_fn
from scipy.special import digamma, gammaln, ive, log_ndtr, ndtr, polygamma

from ._exact_sums import add_sums, exact_sums, to_float
from .objectives import Objective, register_objective, weighted_quantile

# Lower bound of the observed hessians used where no closed-form Fisher
# information exists (the negative binomial's log r).
HESSIAN_FLOOR = 1e-6

# Objective parameters of the distributional objectives (saved with the
# model; the model-file reader checks them).
DISTRIBUTION_PARAMS = {"distribution": "normal", "natural_gradient": False,
                       "student_df": 3.0}

_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def _phi(z):
    return np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)


class Family:
    """One family of predictive distributions over margins ``raw`` (n, k).

    Subclasses define ``param_names`` (the scipy-side parameters
    ``natural`` returns), ``margin_names``, ``nll`` (per row),
    ``grad_fisher`` (per-row gradients of the NLL in margin space and the
    diagonal Fisher information), ``frozen`` (a frozen scipy.stats
    distribution with array parameters), ``mean``, ``crps`` and
    ``initial_margins`` (a start for the constant model).
    """

    name = None
    margin_names = ()
    discrete = False
    positive = False     # support (0, inf) (or {0, 1, ...} if discrete)

    def __init__(self, student_df=3.0):
        self.student_df = float(student_df)

    @property
    def n_params(self):
        return len(self.margin_names)

    def check_labels(self, y):
        """Raise a ValueError naming the distribution on labels outside its
        support."""
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"distribution={self.name!r} needs finite labels")
        if self.discrete and np.any((y < 0) | (y != np.floor(y))):
            raise ValueError(f"distribution={self.name!r} needs labels that "
                             "are counts (integers >= 0)")
        if self.positive and not self.discrete and np.any(y <= 0):
            raise ValueError(f"distribution={self.name!r} needs labels > 0")
        return y

    def quantiles(self, raw, q):
        """Quantiles ``q`` (m,) of every row: (n, m)."""
        dist = self.frozen(raw)
        return np.column_stack([dist.ppf(np.full(raw.shape[0], p))
                                for p in np.asarray(q, dtype=np.float64)])


class Normal(Family):
    """N(mu, sigma²); margins (mu, log sigma)."""

    name = "normal"
    margin_names = ("loc", "log_scale")

    def natural(self, raw):
        return {"loc": raw[:, 0], "scale": np.exp(raw[:, 1])}

    def nll(self, y, raw):
        z = (y - raw[:, 0]) * np.exp(-raw[:, 1])
        return raw[:, 1] + 0.5 * z * z + _HALF_LOG_2PI

    def grad_fisher(self, y, raw):
        inv_var = np.exp(-2.0 * raw[:, 1])
        r = y - raw[:, 0]
        grad = np.column_stack([-r * inv_var, 1.0 - r * r * inv_var])
        fisher = np.column_stack([inv_var, np.full(len(y), 2.0)])
        return grad, fisher

    def frozen(self, raw):
        return stats.norm(loc=raw[:, 0], scale=np.exp(raw[:, 1]))

    def mean(self, raw):
        return raw[:, 0].copy()

    def crps(self, y, raw):
        sigma = np.exp(raw[:, 1])
        z = (y - raw[:, 0]) / sigma
        return sigma * (z * (2.0 * ndtr(z) - 1.0) + 2.0 * _phi(z)
                        - 1.0 / np.sqrt(np.pi))

    def initial_margins(self, y, weight):
        mean = np.average(y, weights=weight)
        var = np.average((y - mean) ** 2, weights=weight)
        return np.array([mean, 0.5 * np.log(max(var, 1e-12))])


class LogNormal(Normal):
    """ln y ~ N(mu, sigma²); margins (mu, log sigma) of ln y."""

    name = "lognormal"
    positive = True

    def nll(self, y, raw):
        return super().nll(np.log(y), raw) + np.log(y)

    def grad_fisher(self, y, raw):
        return super().grad_fisher(np.log(y), raw)

    def frozen(self, raw):
        return stats.lognorm(s=np.exp(raw[:, 1]), scale=np.exp(raw[:, 0]))

    def natural(self, raw):
        return {"s": np.exp(raw[:, 1]), "scale": np.exp(raw[:, 0])}

    def mean(self, raw):
        return np.exp(raw[:, 0] + 0.5 * np.exp(2.0 * raw[:, 1]))

    def crps(self, y, raw):
        # Baran & Lerch (2015), closed form
        mu, sigma = raw[:, 0], np.exp(raw[:, 1])
        w = (np.log(y) - mu) / sigma
        return (y * (2.0 * ndtr(w) - 1.0) - 2.0 * np.exp(mu + 0.5 * sigma ** 2)
                * (ndtr(w - sigma) + ndtr(sigma / np.sqrt(2.0)) - 1.0))

    def initial_margins(self, y, weight):
        return super().initial_margins(np.log(y), weight)


class Gamma(Family):
    """Gamma of mean m and shape a (rate a / m); margins (log m, log a)."""

    name = "gamma"
    margin_names = ("log_mean", "log_shape")
    positive = True

    def natural(self, raw):
        shape = np.exp(raw[:, 1])
        return {"a": shape, "scale": np.exp(raw[:, 0]) / shape}

    def nll(self, y, raw):
        log_m, a = raw[:, 0], np.exp(raw[:, 1])
        return (gammaln(a) - a * (raw[:, 1] - log_m) - (a - 1.0) * np.log(y)
                + a * y * np.exp(-log_m))

    def grad_fisher(self, y, raw):
        a = np.exp(raw[:, 1])
        ratio = y * np.exp(-raw[:, 0])
        d_shape = (digamma(a) - raw[:, 1] + raw[:, 0] - 1.0 - np.log(y)
                   + ratio)
        grad = np.column_stack([a * (1.0 - ratio), a * d_shape])
        # I(log m) = a; I(log a) = a² trigamma(a) - a (> 0: trigamma > 1/a)
        fisher = np.column_stack([a, a * a * polygamma(1, a) - a])
        return grad, np.maximum(fisher, HESSIAN_FLOOR)

    def frozen(self, raw):
        return stats.gamma(**self.natural(raw))

    def mean(self, raw):
        return np.exp(raw[:, 0])

    def crps(self, y, raw):
        # Gneiting & Raftery / scoringRules' crps_gamma, shape a, scale s
        p = self.natural(raw)
        a, s = p["a"], p["scale"]
        return (y * (2.0 * stats.gamma.cdf(y, a, scale=s) - 1.0)
                - a * s * (2.0 * stats.gamma.cdf(y, a + 1.0, scale=s) - 1.0)
                - s / beta_fn(0.5, a))

    def initial_margins(self, y, weight):
        mean = np.average(y, weights=weight)
        var = np.average((y - mean) ** 2, weights=weight)
        return np.array([np.log(mean), np.log(max(mean ** 2 / max(var, 1e-12),
                                                  1e-6))])


class Poisson(Family):
    """Poisson of mean lambda; margin log lambda (Fisher = observed)."""

    name = "poisson"
    margin_names = ("log_mean",)
    discrete = positive = True

    def natural(self, raw):
        return {"mu": np.exp(raw[:, 0])}

    def nll(self, y, raw):
        return np.exp(raw[:, 0]) - y * raw[:, 0] + gammaln(y + 1.0)

    def grad_fisher(self, y, raw):
        lam = np.exp(raw[:, 0])
        return (lam - y)[:, np.newaxis], np.maximum(lam, HESSIAN_FLOOR)[:, np.newaxis]

    def frozen(self, raw):
        return stats.poisson(mu=np.exp(raw[:, 0]))

    def mean(self, raw):
        return np.exp(raw[:, 0])

    def crps(self, y, raw):
        # Wei & Held (2014), closed form; ive(k, x) = exp(-x) I_k(x)
        lam = np.exp(raw[:, 0])
        return ((y - lam) * (2.0 * stats.poisson.cdf(y, lam) - 1.0)
                + 2.0 * lam * stats.poisson.pmf(np.floor(y), lam)
                - lam * (ive(0, 2.0 * lam) + ive(1, 2.0 * lam)))

    def initial_margins(self, y, weight):
        return np.array([np.log(max(np.average(y, weights=weight), 1e-12))])


class NegBinomial(Family):
    """Negative binomial of mean m and size r (variance m + m²/r);
    margins (log m, log r)."""

    name = "negbinomial"
    margin_names = ("log_mean", "log_size")
    discrete = positive = True

    def natural(self, raw):
        m, r = np.exp(raw[:, 0]), np.exp(raw[:, 1])
        return {"n": r, "p": r / (r + m)}

    def nll(self, y, raw):
        log_m, log_r = raw[:, 0], raw[:, 1]
        r = np.exp(log_r)
        log_rm = np.logaddexp(log_r, log_m)
        return (gammaln(r) + gammaln(y + 1.0) - gammaln(y + r)
                - r * (log_r - log_rm) - y * (log_m - log_rm))

    def grad_fisher(self, y, raw):
        m, r = np.exp(raw[:, 0]), np.exp(raw[:, 1])
        rm = r + m
        d_r = (digamma(r) - digamma(y + r) - raw[:, 1] + np.log(rm) - 1.0
               + (r + y) / rm)
        d2_r = (polygamma(1, r) - polygamma(1, y + r) - 1.0 / r + 1.0 / rm
                + (m - y) / rm ** 2)
        grad = np.column_stack([r * (m - y) / rm, r * d_r])
        # I(log m) = r m / (r + m); log r: the observed hessian, clipped
        hess_log_r = r * d_r + r * r * d2_r
        fisher = np.column_stack([r * m / rm, hess_log_r])
        return grad, np.maximum(fisher, HESSIAN_FLOOR)

    def frozen(self, raw):
        return stats.nbinom(**self.natural(raw))

    def mean(self, raw):
        return np.exp(raw[:, 0])

    def crps(self, y, raw):
        r, m = np.exp(raw[:, 1]), np.exp(raw[:, 0])
        log_p, log_q = -np.log1p(m / r), -np.log1p(r / m)

        def log_pmf(k):   # (block, n): k a column
            return (gammaln(k + r) - gammaln(r) - gammaln(k + 1.0)
                    + r * log_p + k * log_q)
        return _discrete_crps(self.frozen(raw), y, log_pmf)

    def initial_margins(self, y, weight):
        mean = max(np.average(y, weights=weight), 1e-12)
        var = np.average((y - mean) ** 2, weights=weight)
        size = mean ** 2 / (var - mean) if var > mean * 1.001 else 1e3
        return np.array([np.log(mean), np.log(size)])


class StudentT(Family):
    """Student's t of ``student_df`` degrees of freedom (fixed), location
    mu and scale sigma; margins (mu, log sigma)."""

    name = "studentt"
    margin_names = ("loc", "log_scale")

    def natural(self, raw):
        return {"df": np.full(raw.shape[0], self.student_df),
                "loc": raw[:, 0], "scale": np.exp(raw[:, 1])}

    def nll(self, y, raw):
        nu = self.student_df
        z = (y - raw[:, 0]) * np.exp(-raw[:, 1])
        return (raw[:, 1] + 0.5 * (nu + 1.0) * np.log1p(z * z / nu)
                - gammaln(0.5 * (nu + 1.0)) + gammaln(0.5 * nu)
                + 0.5 * np.log(nu * np.pi))

    def grad_fisher(self, y, raw):
        nu = self.student_df
        inv_sigma = np.exp(-raw[:, 1])
        z = (y - raw[:, 0]) * inv_sigma
        weight = (nu + 1.0) / (nu + z * z)
        grad = np.column_stack([-weight * z * inv_sigma, 1.0 - weight * z * z])
        fisher = np.column_stack([
            (nu + 1.0) / (nu + 3.0) * inv_sigma ** 2,
            np.full(len(y), 2.0 * nu / (nu + 3.0))])
        return grad, fisher

    def frozen(self, raw):
        return stats.t(**self.natural(raw))

    def mean(self, raw):
        if self.student_df <= 1.0:
            return np.full(raw.shape[0], np.nan)   # no mean
        return raw[:, 0].copy()

    def crps(self, y, raw):
        # Jordan, Krueger & Lerch (scoringRules' crps_t), df > 1
        nu, sigma = self.student_df, np.exp(raw[:, 1])
        if nu <= 1.0:
            return np.full(len(y), np.inf)
        z = (y - raw[:, 0]) / sigma
        const = (2.0 * np.sqrt(nu) * beta_fn(0.5, nu - 0.5)
                 / ((nu - 1.0) * beta_fn(0.5, 0.5 * nu) ** 2))
        return sigma * (z * (2.0 * stats.t.cdf(z, nu) - 1.0)
                        + 2.0 * stats.t.pdf(z, nu) * (nu + z * z) / (nu - 1.0)
                        - const)

    def initial_margins(self, y, weight):
        # weighted: a row of weight 2 starts the fit as two copies would
        median = weighted_quantile(y, weight, 0.5)
        mad = weighted_quantile(np.abs(y - median), weight, 0.5) * 1.4826
        return np.array([median, np.log(max(mad, 1e-6))])


def _discrete_crps(dist, y, log_pmf, tail=1e-10):
    """CRPS of a distribution on {0, 1, ...}: sum over k of
    (F(k) - 1{y <= k})², up to the (1 - tail)-quantile (or y); F the
    running sum of ``exp(log_pmf(k))`` (faster than scipy's cdf)."""
    top = int(max(np.max(dist.ppf(np.full(len(y), 1.0 - tail))), np.max(y)))
    total = np.zeros(len(y))
    cdf_before = np.zeros(len(y))
    for start in range(0, top + 1, 256):   # a block of k at a time
        k = np.arange(start, min(start + 256, top + 1), dtype=np.float64)
        cdf = cdf_before + np.cumsum(np.exp(log_pmf(k[:, np.newaxis])), axis=0)
        cdf_before = cdf[-1]
        total += np.sum((np.minimum(cdf, 1.0)
                         - (y[np.newaxis, :] <= k[:, np.newaxis])) ** 2,
                        axis=0)
    return total


FAMILIES = {cls.name: cls for cls in (Normal, LogNormal, Gamma, Poisson,
                                      NegBinomial, StudentT)}


def get_family(name, student_df=3.0):
    """The family ``name`` (a key of ``FAMILIES``)."""
    try:
        return FAMILIES[name](student_df=student_df)
    except KeyError:
        raise ValueError(f"Unknown distribution {name!r}; expected one of "
                         f"{sorted(FAMILIES)}") from None


def family_of(params):
    """The family named by an objective's parameters."""
    return get_family(params.get("distribution", "normal"),
                      params.get("student_df", 3.0))


class DistributionObjective(Objective):
    """The negative log-likelihood of a family (one output per parameter);
    pairs are (gradient, Fisher information), or (natural gradient, 1) with
    ``natural_gradient`` (see the module docstring)."""

    default_metric = "nll"
    family_name = "normal"

    def __init__(self, params=None):
        super().__init__({**DISTRIBUTION_PARAMS, **(params or {}),
                          "distribution": self.family_name})
        self.family = family_of(self.params)
        self.name = "dist:" + self.family.name

    def n_outputs(self, n_classes):
        return self.family.n_params

    def prepare_labels(self, y):
        return np.ascontiguousarray(self.family.check_labels(y))

    def training_weight(self, y, weight):
        # kept for the per-round hessian scale (``gradient``)
        self.row_weight = weight
        return weight

    def estimate_base_margin(self, y, weight, n_outputs):
        """The constant model's maximum-likelihood margins (L-BFGS from the
        family's moment estimate)."""
        weight = np.ones(len(y)) if weight is None else weight
        total = float(np.sum(weight))
        start = self.family.initial_margins(y, weight)

        def loss(theta):
            raw = np.broadcast_to(theta, (len(y), len(theta)))
            grad, _ = self.family.grad_fisher(y, raw)
            return (float(np.dot(weight, self.family.nll(y, raw))) / total,
                    weight @ grad / total)
        result = minimize(loss, start, jac=True, method="L-BFGS-B")
        theta = result.x if np.all(np.isfinite(result.x)) else start
        return np.asarray(theta, dtype=np.float64)

    def base_score_to_margin(self, base_score, n_outputs):
        raise ValueError("base_score does not apply to a distribution's "
                         "several parameters; leave it None")

    def gradient(self, y, raw, weight, gpair, n_threads):
        grad, fisher = self.family.grad_fisher(y, raw)
        if self.params["natural_gradient"]:
            grad, fisher = grad / fisher, np.ones_like(fisher)
        else:
            # each parameter's pairs scaled so that its hessians average 1
            # over the rows: the Newton step -G/H is unchanged, and
            # reg_lambda and min_child_weight count rows as they do for the
            # squared error, whatever the scale of y (1/sigma² would make
            # them dominate for a large sigma, vanish for a small one)
            scale = 1.0 / self._mean_fisher(fisher)
            grad, fisher = grad * scale, fisher * scale
        if weight is not None:
            grad, fisher = grad * weight[:, None], fisher * weight[:, None]
        with np.errstate(over="ignore"):   # float32 overflow: named later
            gpair[:, :, 0] = grad.T
            gpair[:, :, 1] = fisher.T

    def _mean_fisher(self, fisher):
        """Each parameter's Fisher information averaged over every row of
        the fit, weighted: exact sums (``_exact_sums``), gathered from
        every part of the rows, so the scale is the same float however
        the rows are split among workers."""
        weight = getattr(self, "row_weight", None)
        if weight is None or len(weight) != fisher.shape[0]:
            weight = np.ones(fisher.shape[0])
        parts = self.gather_parts(
            (exact_sums(fisher * weight[:, np.newaxis]), exact_sums(weight)))
        fisher_sums = to_float(add_sums(p[0] for p in parts))
        weight_sum = to_float(add_sums(p[1] for p in parts))[0]
        return fisher_sums / weight_sum

    def loss(self, y, raw, weight):
        return float(np.average(self.family.nll(y, raw), weights=weight))

    def transform(self, raw):
        """The predictive mean (the predictions callables metrics see)."""
        return self.family.mean(raw)[:, np.newaxis]

    def eval_transform(self, raw):
        """The margins themselves: the ``nll`` and ``crps`` metrics read the
        distribution from them."""
        return raw


class NormalNLL(DistributionObjective):
    family_name = "normal"


class LogNormalNLL(DistributionObjective):
    family_name = "lognormal"


class GammaNLL(DistributionObjective):
    family_name = "gamma"


class PoissonNLL(DistributionObjective):
    family_name = "poisson"


class NegBinomialNLL(DistributionObjective):
    family_name = "negbinomial"


class StudentTNLL(DistributionObjective):
    family_name = "studentt"


DISTRIBUTION_OBJECTIVES = {}
for _cls in (NormalNLL, LogNormalNLL, GammaNLL, PoissonNLL, NegBinomialNLL,
             StudentTNLL):
    _cls.name = "dist:" + _cls.family_name
    DISTRIBUTION_OBJECTIVES[_cls.name] = _cls
    register_objective(_cls)


def nll_metric(params):
    """The ``nll`` metric: mean negative log-likelihood of the labels under
    the distributions of margins ``pred`` (n, k)."""
    family = family_of(params)

    def nll(y, pred, weight, query_ptr=None):
        raw = np.asarray(pred, dtype=np.float64).reshape(len(y), -1)
        return float(np.average(family.nll(y, raw), weights=weight))
    return nll


def crps_metric(params):
    """The ``crps`` metric: mean continuous ranked probability score."""
    family = family_of(params)

    def crps(y, pred, weight, query_ptr=None):
        raw = np.asarray(pred, dtype=np.float64).reshape(len(y), -1)
        return float(np.average(family.crps(y, raw), weights=weight))
    return crps
