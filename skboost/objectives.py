"""Training objectives: gradients, link functions and base-score estimates.

An objective turns raw margins (the sum of the trees plus the base margin)
into per-row gradient pairs for the next round, and into predictions. The
per-row arithmetic runs in the Cython kernels of ``_objectives.pyx`` (and of
``_ranking.pyx`` for the per-query ranking objectives). Names and parameters
follow XGBoost.

==========================  ===============  ==========================  =========================
name                        prediction       base margin from the data   default metric
==========================  ===============  ==========================  =========================
``reg:squarederror``        margin           weighted mean               ``rmse``
``reg:squaredlogerror``     margin           expm1(mean of log1p y)      ``rmsle``
``reg:pseudohubererror``    margin           numerical minimiser         ``mphe``
``reg:absoluteerror``       margin           weighted median             ``mae``
``reg:quantileerror``       margin per alpha weighted alpha-quantiles    ``quantile``
``reg:logistic``            sigmoid          log-odds of the mean        ``rmse``
``count:poisson``           exp              log of the mean             ``poisson-nloglik``
``reg:gamma``               exp              log of the mean             ``gamma-nloglik``
``reg:tweedie``             exp              log of the mean             ``tweedie-nloglik@rho``
``binary:logistic``         sigmoid          log-odds of the mean        ``logloss``
``binary:logitraw``         margin           log-odds of the mean        ``logloss``
``binary:hinge``            0/1              +1 or -1 (majority)         ``error``
``multi:softprob``          softmax          centred log priors          ``mlogloss``
``multi:softmax``           class index      centred log priors          ``merror``
``rank:pairwise``           margin           0                           ``ndcg``
``rank:ndcg``               margin           0                           ``ndcg``
``rank:map``                margin           0                           ``map``
``rank:xendcg``             margin           0                           ``ndcg``
``survival:cox``            exp (risk)       0                           ``cox-nloglik``
``survival:aft``            exp (time)       constant-model minimiser    ``aft-nloglik``
==========================  ===============  ==========================  =========================

Every objective takes the same parameter dictionary (see ``DEFAULT_PARAMS``)
and reads the entries it needs.
"""

from abc import ABC, abstractmethod
import inspect

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_softmax, logit, softmax

from . import _objectives
from ._exact_sums import add_sums, exact_sums, to_float
from . import _ranking
from . import _survival

# Class frequencies are clipped to [PRIOR_FLOOR, 1 - PRIOR_FLOOR] before
# taking logs, so a class with (weighted) frequency 0 or 1 gives a finite
# base margin.
PRIOR_FLOOR = 1e-7

# Parameters of the objectives, with XGBoost's defaults.
# Label dtypes kept by objectives with ``compact_labels`` (the kernels'
# ``label_t``): exact class indices in 1 or 4 bytes.
COMPACT_LABEL_DTYPES = (np.dtype(np.uint8), np.dtype(np.float32))

DEFAULT_PARAMS = {
    "huber_slope": 1.0,
    "quantile_alpha": 0.5,
    "tweedie_variance_power": 1.5,
    "scale_pos_weight": 1.0,
    "poisson_max_delta_step": 0.7,
    "lambdarank_pair_method": "topk",
    "lambdarank_num_pair_per_sample": None,  # 32 for topk, 1 for mean
    "ndcg_exp_gain": True,
}

# position debiasing of the LambdaMART rankers (XGBoost's defaults), in
# the files of the rankers that use it only
UNBIASED_PARAMS = {
    "lambdarank_unbiased": False,
    "lambdarank_bias_norm": 1.0,
}

# survival:aft's parameters (XGBoost's defaults), in its models' files only
AFT_PARAMS = {
    "aft_loss_distribution": "normal",
    "aft_loss_distribution_scale": 1.0,
}

# Largest label of rank:ndcg with exponential gains 2^y - 1 (as XGBoost).
MAX_EXP_GAIN_LABEL = 31


def one_part(value):
    """Every part's ``value`` when the rows of a fit are all in this
    process: one part (``Objective.gather_parts``)."""
    return [value]


class Objective(ABC):
    """Interface of a training objective (see the module docstring).

    Pointwise objectives also define ``loss(y, raw, weight)``, the weighted
    mean loss that boosting decreases (the tests check their gradients
    against it). The ranking objectives (LambdaMART's lambdas follow no
    closed-form loss) and callable objectives (only gradients are given)
    have none.

    Parameters
    ----------
    params : dict, default=None
        Objective parameters; missing entries take ``DEFAULT_PARAMS``.
    """

    name = None
    default_metric = None
    # Whether ``gradient`` returns pairs already multiplied by the sample
    # weights (it then gets them in ``sample_weight``); the split finders apply
    # the weights otherwise.
    applies_weights = False
    # Whether every row's unweighted hessian is the same constant in every
    # round (the approximate method then proposes its cuts once).
    constant_hessian = False
    # Columns of y per output: 2 for interval labels (survival:aft's
    # [lower, upper]), which are one target, not two.
    label_columns = 1
    # Whether the gradient kernel also reads uint8 and float32 labels: such
    # labels (the out-of-core classifier's class indices) are then kept as
    # they are, 1 or 4 bytes a row instead of 8, the same gradients.
    compact_labels = False
    # ``gather_parts(value)``: a value computed on this process's rows,
    # gathered from every part of the fit's rows (a list, in part order).
    # An objective that needs sums over every row (exact ones:
    # ``_exact_sums``) combines them; a distributed engine sets its
    # all-gather among the workers (``skboost.dask``)
    gather_parts = staticmethod(one_part)

    def __init__(self, params=None):
        self.params = {**DEFAULT_PARAMS, **(params or {})}

    def n_outputs(self, n_classes):
        """Number of raw margins per row (trees per boosting round)."""
        return 1

    def prepare_labels(self, y):
        """Labels as the gradient kernel wants them; raise on invalid ones."""
        dtype = np.asarray(y).dtype
        y = np.ascontiguousarray(y, dtype=(
            dtype if self.compact_labels and dtype in COMPACT_LABEL_DTYPES
            else np.float64))
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{self.name} needs finite labels")
        return y

    def training_weight(self, y, weight):
        """Weights of the rows in training (``scale_pos_weight`` applies)."""
        return weight

    @abstractmethod
    def estimate_base_margin(self, y, weight, n_outputs):
        """Margin that minimises the weighted loss of a constant model."""

    def base_score_to_margin(self, base_score, n_outputs):
        """User's ``base_score`` (in prediction space) as a margin vector."""
        return np.full(n_outputs, float(base_score))

    @abstractmethod
    def gradient(self, y, raw, weight, gpair, n_threads):
        """Fill ``gpair`` of shape (n_outputs, n_rows, 2) at margins ``raw``,
        the pairs multiplied by ``weight`` (None: unit weights). May return
        the pairs' extremes, ``(max |g|, max |h|, least h)`` per output as
        ``_objectives.pair_magnitudes`` gives them, for the gradient check
        (``limits.check_gradients``); None otherwise."""

    def transform(self, raw):
        """Predictions (n_rows, n_outputs) from margins."""
        return raw

    def eval_transform(self, raw):
        """What the evaluation metrics see: probabilities for every
        classification objective, predictions otherwise."""
        return self.transform(raw)

    def refit_leaves(self):
        """Whether leaf values are re-fitted from residuals after growth."""
        return False



def _check_range(name, y, low=None, high=None, low_open=False, what=None):
    """Raise a ValueError naming the objective when a label is out of range."""
    bad = np.zeros(y.shape, dtype=bool)
    if low is not None:
        bad |= (y <= low) if low_open else (y < low)
    if high is not None:
        bad |= y > high
    if bad.any():
        raise ValueError(f"{name} needs labels {what}; got {y[bad][0]!r}")


class _Elementwise(Objective):
    """An objective whose pairs come from ``elementwise_gradient``."""

    loss_code = None

    def kernel_param(self):
        return 0.0

    def gradient(self, y, raw, weight, gpair, n_threads):
        _objectives.elementwise_gradient(
            y, np.ascontiguousarray(raw[:, 0]), weight, gpair[0],
            loss=_objectives.LOSS_CODES[self.loss_code],
            param=self.kernel_param(), n_threads=n_threads)

    def loss(self, y, raw, weight):
        return float(np.average(self.row_loss(y, raw[:, 0]), weights=weight))


class SquaredError(_Elementwise):
    """``reg:squarederror``: ``l = 1/2 (y - m)^2``."""

    name = "reg:squarederror"
    default_metric = "rmse"
    loss_code = "squared_error"
    constant_hessian = True

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.array([np.average(y, weights=weight)])

    def gradient(self, y, raw, weight, gpair, n_threads):
        # the kernel returns the pairs' extremes: the gradient check's
        return [_objectives.squared_error_gradient(y, raw[:, 0], weight,
                                                   gpair[0], n_threads)]

    def row_loss(self, y, m):
        return 0.5 * (m - y) ** 2


class SquaredLogError(_Elementwise):
    """``reg:squaredlogerror``: ``l = 1/2 (log1p(m) - log1p(y))^2``."""

    name = "reg:squaredlogerror"
    default_metric = "rmsle"
    loss_code = "squared_log_error"

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        _check_range(self.name, y, low=-1.0, low_open=True,
                     what="greater than -1")
        return y

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.array([np.expm1(np.average(np.log1p(y), weights=weight))])

    def row_loss(self, y, m):
        return 0.5 * (np.log1p(m) - np.log1p(y)) ** 2


class PseudoHuberError(_Elementwise):
    """``reg:pseudohubererror``: ``l = s^2 (sqrt(1 + ((m - y)/s)^2) - 1)``,
    ``s = huber_slope``."""

    name = "reg:pseudohubererror"
    default_metric = "mphe"
    loss_code = "pseudo_huber_error"

    def kernel_param(self):
        return float(self.params["huber_slope"])

    def estimate_base_margin(self, y, weight, n_outputs):
        # convex, no closed form: a bounded scalar minimisation over [min, max]
        if y.min() == y.max():
            return np.array([y[0]])
        result = minimize_scalar(lambda c: self.loss(y, np.full((len(y), 1), c),
                                                     weight),
                                 bounds=(y.min(), y.max()), method="bounded",
                                 options={"xatol": 1e-10 * (1 + np.ptp(y))})
        return np.array([result.x])

    def row_loss(self, y, m):
        s = self.kernel_param()
        return s * s * (np.sqrt(1.0 + ((m - y) / s) ** 2) - 1.0)


def weighted_quantile(values, weight, alpha):
    """Smallest value whose cumulative weight reaches ``alpha`` of the total:
    a minimiser of the weighted pinball loss at ``alpha``."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weight[order])
    k = np.searchsorted(cumulative, alpha * cumulative[-1], side="left")
    return values[order[min(k, len(values) - 1)]]


class QuantileError(Objective):
    """``reg:quantileerror``: pinball loss at each ``quantile_alpha``, one
    output per alpha; leaf values re-fitted to weighted quantiles."""

    name = "reg:quantileerror"
    default_metric = "quantile"

    @property
    def alphas(self):
        alphas = np.atleast_1d(np.asarray(self.params["quantile_alpha"],
                                          dtype=np.float64))
        if alphas.ndim != 1 or alphas.size == 0 or np.any(
                (alphas <= 0) | (alphas >= 1)):
            raise ValueError("quantile_alpha must be a number or a list of "
                             f"numbers in (0, 1), got {alphas.tolist()!r}")
        return alphas

    def n_outputs(self, n_classes):
        return self.alphas.size

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.array([weighted_quantile(y, weight, a) for a in self.alphas])

    def leaf_target(self, residual, weight, output):
        """The value a leaf is re-fitted to (before the learning rate): the
        alpha-quantile of its rows' residuals, as XGBoost computes it,
        interpolated between order statistics at ``alpha (n + 1)`` for
        unweighted data and the weighted (step) quantile otherwise."""
        alpha = self.alphas[output]
        if np.all(weight == 1.0):
            return float(np.quantile(residual, alpha, method="weibull"))
        return weighted_quantile(residual, weight, alpha)

    def refit_leaves(self):
        return True

    def gradient(self, y, raw, weight, gpair, n_threads):
        for k, alpha in enumerate(self.alphas):
            _objectives.elementwise_gradient(
                y, np.ascontiguousarray(raw[:, k]), weight, gpair[k],
                loss=_objectives.LOSS_CODES["quantile_error"], param=alpha,
                n_threads=n_threads)

    def loss(self, y, raw, weight):
        total = 0.0
        for k, alpha in enumerate(self.alphas):
            r = y - raw[:, k]
            total += np.average(np.where(r >= 0, alpha * r, (alpha - 1) * r),
                                weights=weight)
        return float(total)


class AbsoluteError(QuantileError):
    """``reg:absoluteerror``: ``l = |m - y|`` (the 0.5 quantile, doubled);
    leaf values re-fitted to weighted medians."""

    name = "reg:absoluteerror"
    default_metric = "mae"

    @property
    def alphas(self):
        return np.array([0.5])

    def gradient(self, y, raw, weight, gpair, n_threads):
        _objectives.elementwise_gradient(
            y, np.ascontiguousarray(raw[:, 0]), weight, gpair[0],
            loss=_objectives.LOSS_CODES["absolute_error"], param=0.0,
            n_threads=n_threads)

    def loss(self, y, raw, weight):
        return float(np.average(np.abs(raw[:, 0] - y), weights=weight))


class _LogisticBase(_Elementwise):
    """Log loss of ``p = sigmoid(m)``; positives weighted by
    ``scale_pos_weight``."""

    loss_code = "logistic"
    compact_labels = True

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        _check_range(self.name, y, low=0.0, high=1.0, what="in [0, 1]")
        return y

    def training_weight(self, y, weight):
        scale = float(self.params["scale_pos_weight"])
        if scale == 1.0:
            return weight
        return np.where(y == 1.0, weight * scale, weight)

    def estimate_base_margin(self, y, weight, n_outputs):
        mean = np.clip(np.average(y, weights=weight), PRIOR_FLOOR,
                       1 - PRIOR_FLOOR)
        return np.array([logit(mean)])

    def base_score_to_margin(self, base_score, n_outputs):
        if not 0.0 < base_score < 1.0:
            raise ValueError(
                f"base_score must be in (0, 1) for {self.name}, got "
                f"{base_score}")
        return np.array([logit(base_score)])

    def gradient(self, y, raw, weight, gpair, n_threads):
        # the kernel returns the pairs' extremes: the gradient check's
        return [_objectives.logistic_gradient(
            y, np.ascontiguousarray(raw[:, 0]), weight, gpair[0],
            n_threads)]

    def transform(self, raw):
        return expit(raw)

    def row_loss(self, y, m):
        # log(1 + exp(m)) - y m, written to avoid overflow
        return np.logaddexp(0.0, m) - y * m


class BinaryLogistic(_LogisticBase):
    """``binary:logistic``: log loss, predictions are probabilities."""

    name = "binary:logistic"
    default_metric = "logloss"


class RegLogistic(_LogisticBase):
    """``reg:logistic``: log loss for targets in [0, 1], predictions are
    probabilities, evaluated by ``rmse``."""

    name = "reg:logistic"
    default_metric = "rmse"


class BinaryLogitRaw(_LogisticBase):
    """``binary:logitraw``: log loss, predictions are the log-odds margins."""

    name = "binary:logitraw"
    default_metric = "logloss"

    def transform(self, raw):
        return raw

    def eval_transform(self, raw):
        return expit(raw)

    def base_score_to_margin(self, base_score, n_outputs):
        # predictions are margins: base_score is one (as in XGBoost)
        return np.array([float(base_score)])


class BinaryHinge(_Elementwise):
    """``binary:hinge``: ``l = max(0, 1 - (2y - 1) m)``, predictions 0/1.

    The hessian is 1 where the loss is linear (inside the margin) and
    ``FLT_MIN`` where it is flat, as XGBoost's.
    """

    name = "binary:hinge"
    default_metric = "error"
    loss_code = "hinge"

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        if np.any((y != 0) & (y != 1)):
            raise ValueError(f"{self.name} needs labels 0 or 1")
        return y

    def estimate_base_margin(self, y, weight, n_outputs):
        # The loss of a constant c in [-1, 1] is W+ (1 - c) + W- (1 + c).
        positive = weight[y == 1].sum()
        negative = weight[y == 0].sum()
        return np.array([float(np.sign(positive - negative))])

    def transform(self, raw):
        return (raw > 0).astype(np.float64)

    def row_loss(self, y, m):
        return np.maximum(0.0, 1.0 - (2.0 * y - 1.0) * m)


class _LogLink(_Elementwise):
    """Objectives on ``mu = exp(m)`` whose constant minimiser is the log of
    the weighted mean label."""

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        _check_range(self.name, y, low=0.0, what="non-negative")
        return y

    def estimate_base_margin(self, y, weight, n_outputs):
        mean = np.average(y, weights=weight)
        if mean <= 0:
            raise ValueError(f"{self.name} needs a positive mean label")
        return np.array([np.log(mean)])

    def base_score_to_margin(self, base_score, n_outputs):
        if not base_score > 0:
            raise ValueError(f"base_score must be positive for {self.name}, "
                             f"got {base_score}")
        return np.array([np.log(base_score)])

    def transform(self, raw):
        return np.exp(raw)


class Poisson(_LogLink):
    """``count:poisson``: ``l = exp(m) - y m``. The hessian is
    ``exp(m + max_delta_step)`` (0.7 unless set), XGBoost's safeguard."""

    name = "count:poisson"
    default_metric = "poisson-nloglik"
    loss_code = "poisson"

    def kernel_param(self):
        return float(self.params["poisson_max_delta_step"])

    def row_loss(self, y, m):
        return np.exp(m) - y * m


class Gamma(_LogLink):
    """``reg:gamma``: ``l = y exp(-m) + m`` (gamma deviance up to constants)."""

    name = "reg:gamma"
    default_metric = "gamma-nloglik"
    loss_code = "gamma"

    def prepare_labels(self, y):
        y = _Elementwise.prepare_labels(self, y)
        _check_range(self.name, y, low=0.0, low_open=True, what="positive")
        return y

    def row_loss(self, y, m):
        return y * np.exp(-m) + m


class Tweedie(_LogLink):
    """``reg:tweedie``: ``l = -y e^{(1-r)m}/(1-r) + e^{(2-r)m}/(2-r)``,
    ``r = tweedie_variance_power`` in [1, 2)."""

    name = "reg:tweedie"
    loss_code = "tweedie"

    @property
    def default_metric(self):
        return f"tweedie-nloglik@{self.kernel_param():g}"

    def kernel_param(self):
        rho = float(self.params["tweedie_variance_power"])
        if not 1.0 <= rho < 2.0:
            raise ValueError("tweedie_variance_power must be in [1, 2), got "
                             f"{rho}")
        return rho

    def row_loss(self, y, m):
        rho = self.kernel_param()
        first = (y * m if rho == 1.0
                 else y * np.exp((1 - rho) * m) / (1 - rho))
        return -first + np.exp((2 - rho) * m) / (2 - rho)


class MultiSoftprob(Objective):
    """``multi:softprob``: cross-entropy of ``p = softmax(m)`` over K classes."""

    name = "multi:softprob"
    default_metric = "mlogloss"

    def n_outputs(self, n_classes):
        return n_classes

    def prepare_labels(self, y):
        y = np.asarray(y)
        if y.size and (y.min() < 0 or np.any(y != np.round(y))):
            raise ValueError(f"{self.name} needs class indices 0..K-1")
        return np.ascontiguousarray(y, dtype=np.int32)

    def estimate_base_margin(self, y, weight, n_outputs):
        priors = np.bincount(y, weights=weight, minlength=n_outputs)
        log_priors = np.log(np.clip(priors / priors.sum(), PRIOR_FLOOR, 1.0))
        # softmax is invariant to a common shift: centre the margins (as
        # XGBoost does) so that decision_function values are comparable
        return log_priors - log_priors.mean()

    def gradient(self, y, raw, weight, gpair, n_threads):
        _objectives.softmax_gradient(y, np.ascontiguousarray(raw), weight,
                                     gpair, n_threads)

    def transform(self, raw):
        return softmax(raw, axis=1)

    def loss(self, y, raw, weight):
        log_p = log_softmax(raw, axis=1)
        return float(np.average(-log_p[np.arange(y.shape[0]), y],
                                weights=weight))


class MultiSoftmax(MultiSoftprob):
    """``multi:softmax``: trained as ``multi:softprob``; predictions are the
    class indices of the largest margins."""

    name = "multi:softmax"
    default_metric = "merror"

    def transform(self, raw):
        return np.argmax(raw, axis=1).astype(np.float64)[:, np.newaxis]

    def eval_transform(self, raw):
        return softmax(raw, axis=1)


class _Ranking(Objective):
    """LambdaMART (``_ranking.pyx``) over the queries of ``query_ptr``: the
    rows of query q are ``query_ptr[q]:query_ptr[q + 1]``."""

    def __init__(self, params=None, query_ptr=None):
        super().__init__(params)
        self.query_ptr = query_ptr
        self.iteration = 0
        # per-row keys ordering documents of equal scores and labels
        # (``_ranking.row_keys``); None: by row order
        self.row_key = None

    def set_row_keys(self, X, weight, salt, n_threads):
        """Key every row by its data, weight and ``salt``, so that the
        lambdas do not depend on the order of the rows within a query."""
        weight = np.ascontiguousarray(weight, dtype=np.float64)
        salt = int(salt) % 2**64
        if hasattr(X, "row_keys"):   # ExternalData: from its chunks
            self.row_key = X.row_keys(weight, salt, n_threads)
        else:
            self.row_key = _ranking.row_keys(X, weight, salt, n_threads)

    @property
    def pair_method(self):
        return self.params["lambdarank_pair_method"]

    @property
    def num_pair(self):
        num_pair = self.params["lambdarank_num_pair_per_sample"]
        if num_pair is None:
            return 32 if self.pair_method == "topk" else 1
        return int(num_pair)

    @property
    def ideal_k(self):
        """NDCG's ideal DCG over the best ``ideal_k`` documents of a query
        (0: all), as XGBoost: the truncation level with top-k pairs, the
        whole query with random pairs."""
        return self.num_pair if self.pair_method == "topk" else 0

    @property
    def default_metric(self):
        if self.pair_method == "topk":
            return f"{self.metric_name}@{self.num_pair}"
        return self.metric_name

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        if np.any((y < 0) | (y != np.round(y))):
            raise ValueError(f"{self.name} needs relevance labels that are "
                             "non-negative integers")
        return y

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.zeros(1)  # scores are invariant to a shift

    @property
    def unbiased(self):
        return bool(self.params.get("lambdarank_unbiased", False))

    def gradient(self, y, raw, weight, gpair, n_threads):
        query_ptr = (np.array([0, y.shape[0]], dtype=np.int64)
                     if self.query_ptr is None else self.query_ptr)
        bias = self._bias_buffers(y.shape[0], query_ptr)
        _ranking.lambda_gradient(
            y, np.ascontiguousarray(raw[:, 0]), query_ptr, gpair[0],
            objective=self.name, pair_method=self.pair_method,
            num_pair=self.num_pair, exp_gain=self.params["ndcg_exp_gain"],
            score_normalise=self.params.get(
                "lambdarank_score_normalization", True),
            normalise=self.params.get("lambdarank_normalization", True),
            iteration=self.iteration, n_threads=n_threads,
            ideal_k=self.ideal_k, row_key=self.row_key,
            **self._query_numbers(), **bias)
        if bias:
            self._update_position_bias(query_ptr, bias["li"], bias["lj"])
        self.iteration += 1
        if weight is not None and not np.all(weight == 1.0):
            gpair[0] *= weight[:, np.newaxis].astype(np.float32)

    def set_query_numbers(self, numbers, n_numbered):
        """Seed the random pairs of this part's queries by their
        ``numbers`` among all ``n_numbered`` queries of the fit (sorted by
        query id, as one process orders them): a Dask shard then draws the
        pairs one process draws."""
        self.query_numbers = (np.asarray(numbers, dtype=np.int64),
                              int(n_numbered))

    def _query_numbers(self):
        numbers = getattr(self, "query_numbers", None)
        if numbers is None:
            return {}
        return dict(query_number=numbers[0], n_numbered=numbers[1])

    # -- position debiasing (lambdarank_unbiased) -------------------------

    def _bias_buffers(self, n_rows, query_ptr):
        """The kernel's debiasing arguments (none when it is off): the
        current bias ratios of the tracked positions (1 at first) and the
        rows' cost accumulators."""
        if not self.unbiased:
            return {}
        if getattr(self, "t_plus", None) is None:
            # the longest query of every part of the rows
            longest = max(self.gather_parts(
                int(np.max(np.diff(query_ptr), initial=1))))
            # XGBoost's number of tracked positions: the truncation level,
            # else at most 32 (the bias decays fast with the position)
            k = (self.num_pair if self.pair_method == "topk"
                 else min(longest, 32))
            self.t_plus, self.t_minus = np.ones(k), np.ones(k)
        return dict(t_plus=self.t_plus, t_minus=self.t_minus,
                    li=np.zeros(n_rows), lj=np.zeros(n_rows))

    def _update_position_bias(self, query_ptr, li, lj):
        """t+ and t- from the round's costs summed per position over the
        queries (eq. 30-31 of Unbiased LambdaMART), normalised to position
        0, with the exponent 1 / (1 + lambdarank_bias_norm)."""
        rows = self._position_rows(query_ptr, li.shape[0])
        # exact sums (``_exact_sums``) over every part of the rows: the
        # same estimates however the queries are split among workers
        parts = self.gather_parts([(exact_sums(li[r])[0],
                                    exact_sums(lj[r])[0]) for r in rows])
        li_pos, lj_pos = (to_float(add_sums([[s[i] for s in part]
                                             for part in parts]))
                          for i in range(2))
        power = 1.0 / (1.0 + float(self.params.get("lambdarank_bias_norm",
                                                   1.0)))
        if li_pos[0] >= 1e-16:
            self.t_plus = (li_pos / li_pos[0]) ** power
        if lj_pos[0] >= 1e-16:
            self.t_minus = (lj_pos / lj_pos[0]) ** power

    def _position_rows(self, query_ptr, n_rows):
        """The rows at each tracked position of their query (kept: the
        queries do not change during a fit)."""
        cached = getattr(self, "_rows_at", None)
        if cached is None or cached[0] is not query_ptr:
            k = self.t_plus.shape[0]
            sizes = np.diff(query_ptr)
            position = np.arange(n_rows) - np.repeat(query_ptr[:-1], sizes)
            order = np.argsort(position, kind="stable")
            bounds = np.searchsorted(position[order], np.arange(k + 1))
            cached = (query_ptr, [order[bounds[p]:bounds[p + 1]]
                                  for p in range(k)])
            self._rows_at = cached
        return cached[1]

    def position_bias(self):
        """(t_plus, t_minus) after the last round, None when not debiasing."""
        if not self.unbiased or getattr(self, "t_plus", None) is None:
            return None
        return self.t_plus.copy(), self.t_minus.copy()


class RankPairwise(_Ranking):
    """``rank:pairwise``: RankNet pairs (|delta| = 1)."""

    name = "rank:pairwise"
    metric_name = "ndcg"


class RankNDCG(_Ranking):
    """``rank:ndcg``: LambdaMART with |delta NDCG|."""

    name = "rank:ndcg"
    metric_name = "ndcg"

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        if self.params["ndcg_exp_gain"] and np.any(y > MAX_EXP_GAIN_LABEL):
            raise ValueError(
                f"{self.name} with ndcg_exp_gain=True needs labels of at most "
                f"{MAX_EXP_GAIN_LABEL} (gains 2^y - 1); set "
                "ndcg_exp_gain=False for larger relevance degrees")
        return y


class RankMAP(_Ranking):
    """``rank:map``: LambdaMART with |delta MAP|; binary relevance labels."""

    name = "rank:map"
    metric_name = "map"

    def prepare_labels(self, y):
        y = super().prepare_labels(y)
        if np.any(y > 1):
            raise ValueError(f"{self.name} needs binary relevance labels "
                             "(0 or 1)")
        return y


class RankXENDCG(_Ranking):
    """``rank:xendcg``: the cross-entropy bound on NDCG (Bruch, "An
    Alternative Cross Entropy Loss for Learning-to-Rank", 2019), LightGBM's
    ``rank_xendcg``. Per query, the softmax of the scores ``rho`` is fitted
    to the distribution of ``2^y - gamma`` (``gamma`` uniform in [0, 1),
    drawn per document and round from the ranker's ``random_state``); the
    gradient is the cross-entropy's, expanded to third order in ``rho`` as
    LightGBM does, the hessian ``rho (1 - rho)``. Linear in the documents
    (no pairs), so a round costs less than LambdaMART's."""

    name = "rank:xendcg"
    metric_name = "ndcg"
    # a query's softmax weight of 1 leaves no room for second-order terms
    _EPS = 1e-15

    def __init__(self, params=None, query_ptr=None):
        super().__init__(params, query_ptr)
        if self.unbiased:
            raise ValueError("lambdarank_unbiased applies to the LambdaMART "
                             "objectives (rank:ndcg, rank:map, "
                             "rank:pairwise), not rank:xendcg")

    @property
    def default_metric(self):
        return "ndcg"

    def set_row_keys(self, X, weight, salt, n_threads):
        self.salt = int(salt) % 2**63   # seeds the gamma draws; no keys

    def set_draw_rows(self, rows, n_rows):
        """Draw each round's gammas for ``n_rows`` rows (all of a fit's
        rows, grouped by query) and keep those of ``rows``: a part of the
        rows (a Dask shard's) then gets the draws one process gives them."""
        self.draw_rows = (np.asarray(rows, dtype=np.int64), int(n_rows))

    def _gammas(self, n_rows):
        rng = np.random.default_rng([getattr(self, "salt", 0),
                                     self.iteration])
        rows = getattr(self, "draw_rows", None)
        if rows is None:
            return rng.random(n_rows)
        return rng.random(rows[1])[rows[0]]

    def gradient(self, y, raw, weight, gpair, n_threads):
        query_ptr = (np.array([0, y.shape[0]], dtype=np.int64)
                     if self.query_ptr is None else self.query_ptr)
        grad, hess = _xendcg_gradient(y, raw[:, 0], query_ptr,
                                      self._gammas(y.shape[0]))
        gpair[0, :, 0] = grad
        gpair[0, :, 1] = hess
        self.iteration += 1
        if weight is not None and not np.all(weight == 1.0):
            gpair[0] *= weight[:, np.newaxis].astype(np.float32)


def _xendcg_gradient(y, score, query_ptr, gamma):
    """XE-NDCG's per-document gradient and hessian over the queries of
    ``query_ptr``, vectorised with per-query sums (``reduceat``)."""
    sizes = np.diff(query_ptr)
    starts = query_ptr[:-1][sizes > 0]
    query = np.repeat(np.arange(sizes.size), sizes)

    def per_query(values):   # each row gets its query's sum
        sums = np.zeros(sizes.size)
        sums[sizes > 0] = np.add.reduceat(values, starts)
        return sums[query]

    top = np.full(sizes.size, -np.inf)
    np.maximum.at(top, query, score)
    e = np.exp(score - top[query])
    rho = e / per_query(e)
    target = np.exp2(y) - gamma
    target = target / np.maximum(per_query(target), 1e-15)
    room = np.maximum(1.0 - rho, RankXENDCG._EPS)
    first = rho - target
    p1 = first / room
    second = rho * (per_query(p1) - p1)
    p2 = second / room
    third = rho * (per_query(p2) - p2)
    grad = first + second + third
    hess = rho * (1.0 - rho)
    alone = sizes[query] <= 1   # a one-document query has nothing to rank
    grad[alone] = 0.0
    hess[alone] = 0.0
    return grad, hess


class _Survival(Objective):
    """Survival objectives (``_survival.py``): labels are times (negative:
    censored) or, for AFT, intervals; predictions ``exp(margin)``."""

    def base_score_to_margin(self, base_score, n_outputs):
        if not base_score > 0:
            raise ValueError(f"base_score must be positive for {self.name}, "
                             f"got {base_score}")
        return np.array([np.log(base_score)])

    def transform(self, raw):
        return np.exp(raw)

    def _store(self, gpair, grad, hess):
        gpair[0, :, 0] = grad
        gpair[0, :, 1] = hess


class CoxPH(_Survival):
    """``survival:cox``: Cox proportional hazards, the negative partial
    log-likelihood with Breslow's ties; ``y`` the times, negative for
    censored rows. Predictions are relative risks ``exp(margin)``."""

    name = "survival:cox"
    default_metric = "cox-nloglik"

    def __init__(self, params=None):
        super().__init__(params)
        self._risk_sets = None   # (labels, their CoxRiskSets)

    def prepare_labels(self, y):
        return _survival.cox_labels(y)

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.zeros(1)   # the partial likelihood ignores a shift

    def set_global_rows(self, rows):
        """The index of each of these rows among all rows of a fit split
        into parts (a Dask shard's rows). The risk-set sums run over every
        row in time order (sequential float sums, as in one process), so
        each round then gathers every part's margins (8 bytes a row) and
        computes the gradients of all rows, keeping those of ``rows``."""
        self.global_rows = np.asarray(rows, dtype=np.int64)

    def gradient(self, y, raw, weight, gpair, n_threads):
        if getattr(self, "global_rows", None) is not None:
            self._gathered_gradient(y, raw, gpair)
            return
        if self._risk_sets is None or self._risk_sets[0] is not y:
            self._risk_sets = (y, _survival.CoxRiskSets(y))
        grad, hess = _survival.cox_gradient(self._risk_sets[1], raw[:, 0])
        self._store(gpair, grad, hess)

    def _gathered_gradient(self, y, raw, gpair):
        """``gradient`` of a part of the rows: the labels gathered once
        (the risk sets of all rows), the margins every round."""
        rows = self.global_rows
        if self._risk_sets is None:
            parts = self.gather_parts((rows, y))
            labels = np.empty(sum(r.shape[0] for r, _ in parts))
            for part_rows, part_y in parts:
                labels[part_rows] = part_y
            self._risk_sets = (y, _survival.CoxRiskSets(labels),
                               [r for r, _ in parts])
        _, risk_sets, part_rows = self._risk_sets
        margin = np.empty(risk_sets.order.shape[0])
        for where, values in zip(part_rows, self.gather_parts(raw[:, 0])):
            margin[where] = values
        grad, hess = _survival.cox_gradient(risk_sets, margin)
        self._store(gpair, grad[rows], hess[rows])

    def loss(self, y, raw, weight):
        return _survival.cox_negative_log_likelihood(y, raw[:, 0])


class AFT(_Survival):
    """``survival:aft``: accelerated failure time, ``log T = margin +
    sigma Z``; ``y`` as (n, 2) bounds of each time (or times, negative
    for right-censored). Predictions are times ``exp(margin)``."""

    name = "survival:aft"
    default_metric = "aft-nloglik"
    label_columns = 2

    def __init__(self, params=None):
        super().__init__({**AFT_PARAMS, **(params or {})})

    @property
    def distribution(self):
        name = self.params["aft_loss_distribution"]
        _survival.aft_distribution(name)   # checks the name
        return name

    @property
    def sigma(self):
        sigma = float(self.params["aft_loss_distribution_scale"])
        if not sigma > 0:
            raise ValueError("aft_loss_distribution_scale must be > 0, got "
                             f"{sigma}")
        return sigma

    def prepare_labels(self, y):
        return _survival.aft_bounds(y)

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.array([_survival.aft_constant_margin(
            y, weight, self.distribution, self.sigma)])

    def gradient(self, y, raw, weight, gpair, n_threads):
        grad, hess = _survival.aft_gradient(y, raw[:, 0], self.distribution,
                                            self.sigma)
        self._store(gpair, grad, hess)

    def loss(self, y, raw, weight):
        return float(np.average(_survival.aft_loss(
            y, raw[:, 0], self.distribution, self.sigma), weights=weight))


class CallableObjective(Objective):
    """A user function ``obj(y_true, y_pred, *, sample_weight, qid)`` that
    returns ``(grad, hess)`` at the margins ``y_pred`` (the keyword arguments
    are optional).

    ``y_pred`` is 1-D for one output, (n_rows, n_outputs) otherwise. When the
    function takes ``sample_weight`` it receives the weights and must apply
    them itself (as in XGBoost); otherwise skboost weights its pairs.
    ``qid`` (the ranker's query id of every row, rows grouped by query) is
    passed when the function takes it. ``params["link"]`` (``"identity"``,
    ``"logistic"`` or ``"softmax"``) maps margins to predictions.
    """

    name = "custom"

    def __init__(self, function=None, params=None, qid=None, n_outputs=1):
        super().__init__(params)
        self.function = function
        self.qid = qid
        self._n_outputs = n_outputs
        parameters = ({} if function is None
                      else inspect.signature(function).parameters)
        self.takes_weight = "sample_weight" in parameters
        self.takes_qid = "qid" in parameters
        self.sample_weight = None  # set by the boosting loop

    @property
    def applies_weights(self):
        return self.takes_weight

    def transform(self, raw):
        link = self.params.get("link", "identity")
        if link == "logistic":
            return expit(raw)
        if link == "softmax":
            return softmax(raw, axis=1)
        return raw

    def n_outputs(self, n_classes):
        return self._n_outputs

    def estimate_base_margin(self, y, weight, n_outputs):
        return np.zeros(n_outputs)

    def gradient(self, y, raw, weight, gpair, n_threads):
        y_pred = raw[:, 0].copy() if raw.shape[1] == 1 else raw.copy()
        kwargs = {}
        if self.takes_weight:
            kwargs["sample_weight"] = (weight if self.sample_weight is None
                                       else self.sample_weight)
        if self.takes_qid:
            kwargs["qid"] = self.qid
        grad, hess = self.function(y, y_pred, **kwargs)
        shape = (raw.shape[0],) if raw.shape[1] == 1 else raw.shape
        grad, hess = (np.asarray(a, dtype=np.float64) for a in (grad, hess))
        if grad.shape != shape or hess.shape != shape:
            raise ValueError(
                "the objective function must return grad and hess of shape "
                f"{shape}, got {grad.shape} and {hess.shape}")
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
            raise ValueError("the objective function returned NaN or infinite "
                             "gradients or hessians")
        if np.any(hess < 0):
            # a node's cover is a hessian sum: the regularised weight
            # -G / (H + lambda) and TreeSHAP need it non-negative
            raise ValueError("the objective function returned negative "
                             "hessians; they must be >= 0")
        grad = grad.reshape(raw.shape[0], -1).T
        hess = hess.reshape(raw.shape[0], -1).T
        with np.errstate(over="ignore"):   # float32 overflow: the boosting
            gpair[:, :, 0] = grad          # loop names it (check_gradients)
            gpair[:, :, 1] = hess
        if (not self.takes_weight and weight is not None
                and not np.all(weight == 1.0)):
            gpair *= weight[np.newaxis, :, np.newaxis].astype(np.float32)



OBJECTIVES = {cls.name: cls for cls in (
    SquaredError, SquaredLogError, PseudoHuberError, AbsoluteError,
    QuantileError, RegLogistic, Poisson, Gamma, Tweedie, BinaryLogistic,
    BinaryLogitRaw, BinaryHinge, MultiSoftprob, MultiSoftmax, RankPairwise,
    RankNDCG, RankMAP, RankXENDCG, CoxPH, AFT)}



def register_objective(cls):
    """Make the objective class ``cls`` known by its ``name`` (to
    ``get_objective`` and the model-file reader): the distributional
    objectives of :mod:`skboost.distributions` register themselves."""
    OBJECTIVES[cls.name] = cls
    return cls


REGRESSION_OBJECTIVES = frozenset({
    "reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror",
    "reg:absoluteerror", "reg:quantileerror", "reg:logistic",
    "count:poisson", "reg:gamma", "reg:tweedie"})
CLASSIFICATION_OBJECTIVES = frozenset({
    "binary:logistic", "binary:logitraw", "binary:hinge", "multi:softprob",
    "multi:softmax"})
RANKING_OBJECTIVES = frozenset({"rank:pairwise", "rank:ndcg", "rank:map",
                                "rank:xendcg"})
# Trained by BoostRegressor (y: times or intervals; score: concordance).
SURVIVAL_OBJECTIVES = frozenset({"survival:cox", "survival:aft"})


def get_objective(name, params=None, **kwargs):
    """The objective registered under ``name``, configured by ``params``.

    Parameters
    ----------
    name : str
        An objective name (see the module docstring).
    params : dict, default=None
        Objective parameters (``DEFAULT_PARAMS`` fill the rest).
    **kwargs
        Extra arguments of the objective's constructor (``query_ptr`` of the
        ranking objectives).

    Returns
    -------
    Objective
    """
    if name == CallableObjective.name:  # a saved model's link, no function
        return CallableObjective(None, params)
    try:
        cls = OBJECTIVES[name]
    except KeyError:
        raise ValueError(
            f"Unknown objective {name!r}; expected one of "
            f"{sorted(OBJECTIVES)}") from None
    return cls(params, **kwargs)
