"""The parameters of the boosting estimators, declared once.

``PARAMETERS`` is the one table: each row names a parameter, its default,
where it goes (``"tree"``: the tree grower's ``TreeParams``; ``"boost"``: the
boosting loop; ``"estimator"``: the estimator layer itself), its constraint
(scikit-learn's ``_parameter_constraints`` form, checked at ``fit``) and its
entry in the docstrings' Parameters section. From it come

* ``constraints()``: the estimators' ``_parameter_constraints``;
* ``params_doc()``: the common part of their Parameters section;
* ``tree_params()``: the ``TreeParams`` of a fit, built the same way for
  every engine (in process, Dask).

The public ``__init__`` signatures stay explicit (scikit-learn reads them);
``tests/test_params.py`` checks each against this table. Adding a
parameter is one row here plus one keyword in each public signature (and a
field of ``TreeParams`` when it goes to the tree). Parameters of one
estimator alone (``objective``, ``scale_pos_weight``, the ranker's
``lambdarank_*``, ...) are declared by that estimator.
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._model.importance import IMPORTANCE_TYPES
from .._model.multi_output import MULTI_STRATEGIES
from ..tree.constraints import (parse_feature_weights, parse_interactions,
                                parse_monotone)
from ..tree.driver import TreeParams

_FRACTION = Interval(Real, 0.0, 1.0, closed="right")
_NON_NEGATIVE = Interval(Real, 0.0, None, closed="left")


@dataclass(frozen=True)
class Param:
    """One parameter: name, default, where it goes, constraint, doc entry
    (None: documented with the row before it)."""

    name: str
    default: object
    goes_to: str
    constraint: list
    doc: str | None


PARAMETERS = (
    Param('n_estimators', 100, 'boost',
          [Interval(Integral, 1, None, closed="left")],
          """\
    n_estimators : int, default=100
        Number of boosting rounds.
"""),
    Param('max_depth', 6, 'tree',
          [Interval(Integral, 0, None, closed="left")],
          """\
    max_depth : int, default=6
        Maximum depth of a tree; 0 means no limit.
"""),
    Param('learning_rate', 0.3, 'tree',
          [_NON_NEGATIVE],
          """\
    learning_rate : float >= 0, default=0.3
        Shrinkage: each leaf value is multiplied by it (``eta``). XGBoost's
        range: 0 grows trees whose leaves add nothing (a schedule of
        ``callbacks`` can then set the rate of each round), and rates above
        1 are allowed.
"""),
    Param('tree_method', 'hist', 'tree',
          [StrOptions({"exact", "approx", "hist"})],
          """\
    tree_method : {"hist", "approx", "exact"}, default="hist"
        Split finding algorithm. ``"hist"`` bins every feature once into at
        most ``max_bin`` bins at cut points from the weighted quantile sketch
        and finds splits on gradient histograms. ``"approx"`` is the paper's
        approximate algorithm: for every tree, candidate cuts are re-proposed
        as hessian-weighted quantiles (at most ``max_bin`` bins) and the tree
        is grown on histograms of those bins. ``"exact"`` is the
        sparsity-aware exact greedy algorithm over presorted columns (paper
        Algorithms 1 and 3).
"""),
    Param('max_bin', 256, 'tree',
          [Interval(Integral, 2, 65535, closed="both")],
          """\
    max_bin : int in [2, 65535], default=256
        Maximum number of value bins (candidate cuts + 1) per feature, for
        ``"hist"`` and ``"approx"``. Missing values have a bin of their own;
        with ``max_bin=256`` a feature that has missing values keeps at most
        255 value bins so that its codes fit a byte.
"""),
    Param('approx_proposal', 'global', 'tree',
          [StrOptions({"global", "local"})],
          """\
    approx_proposal : {"global", "local"}, default="global"
        When ``tree_method="approx"`` re-proposes candidate cuts (paper
        section 3.2): ``"global"`` once per tree from all its rows, ``"local"``
        for every node from the node's own rows (finer candidates where the
        tree is deep, two walks over the data per level).
"""),
    Param('grow_policy', 'depthwise', 'tree',
          [StrOptions({"depthwise", "lossguide"})],
          """\
    grow_policy : {"depthwise", "lossguide"}, default="depthwise"
        ``"depthwise"`` splits every node of a level before the next level;
        ``"lossguide"`` always splits the leaf with the highest loss
        reduction, up to ``max_leaves``. Both work with every
        ``tree_method``, on dense and sparse input.
"""),
    Param('max_leaves', 0, 'tree',
          [Interval(Integral, 0, None, closed="left")],
          """\
    max_leaves : int >= 0, default=0
        Maximum number of leaves per tree; 0 means no limit.
"""),
    Param('n_jobs', None, 'estimator',
          [Integral, None],
          """\
    n_jobs : int, default=None
        Number of OpenMP threads. None or -1 use the threads OpenMP allows
        (``OMP_NUM_THREADS``, threadpoolctl limits). Results do not depend on
        it.
"""),
    Param('gamma', 0.0, 'tree',
          [_NON_NEGATIVE],
          """\
    gamma : float >= 0, default=0
        Minimum loss reduction a split must bring (``min_split_loss``). skboost
        compares it with the loss reduction ``1/2 [score_L + score_R -
        score_parent]`` of the paper when a split is made, and never makes a
        split below it. XGBoost compares ``gamma`` with twice that reduction,
        and only after growing the tree, pruning bottom-up (a weak split
        survives when a split below it passes). XGBoost's ``gamma=g`` is
        therefore close to, not identical with, ``gamma=g/2`` here.
"""),
    Param('min_child_weight', 1.0, 'tree',
          [_NON_NEGATIVE],
          """\
    min_child_weight : float >= 0, default=1
        Minimum sum of hessians (weighted) in each child.
"""),
    Param('max_delta_step', None, 'tree',
          [_NON_NEGATIVE, None],
          """\
    max_delta_step : float >= 0, default=None
        Leaf weights are clipped to ``[-max_delta_step, max_delta_step]``
        before shrinkage; 0 disables clipping. None is 0, except for
        ``count:poisson``: 0.7, XGBoost's default, which it also uses in its
        hessian safeguard ``exp(m + max_delta_step)``.
"""),
    Param('subsample', 1.0, 'boost',
          [_FRACTION],
          """\
    subsample : float in (0, 1], default=1
        Each tree uses each row with this probability.
"""),
    Param('colsample_bytree', 1.0, 'tree',
          [_FRACTION],
          """\
    colsample_bytree, colsample_bylevel, colsample_bynode : float in (0, 1], default=1
        Fractions of the features sampled per tree, then per level from the
        tree's, then per node from the level's (each keeps at least one).
"""),
    Param('colsample_bylevel', 1.0, 'tree',
          [_FRACTION],
          None),
    Param('colsample_bynode', 1.0, 'tree',
          [_FRACTION],
          None),
    Param('reg_alpha', 0.0, 'tree',
          [_NON_NEGATIVE],
          """\
    reg_alpha : float >= 0, default=0
        L1 regularisation of the leaf weights.
"""),
    Param('reg_lambda', 1.0, 'tree',
          [_NON_NEGATIVE],
          """\
    reg_lambda : float >= 0, default=1
        L2 regularisation of the leaf weights.
"""),
    Param('base_score', None, 'boost',
          [Interval(Real, None, None, closed="neither"), None],
          """\
    base_score : float, default=None
        Initial prediction of every sample, in prediction space (a probability
        for ``binary:logistic``). None estimates it from the training data.
"""),
    Param('random_state', None, 'estimator',
          ["random_state", np.random.Generator],
          """\
    random_state : int, RandomState or Generator instance, or None, default=None
        Seed of row and column subsampling (and of the hold-out of early
        stopping). An int gives the same model every fit; a
        ``numpy.random.RandomState`` or ``numpy.random.Generator``
        instance draws a new seed from it at every fit.
"""),
    Param('missing', np.nan, 'estimator',
          [Real],
          """\
    missing : float, default=np.nan
        Value marking a missing entry, in addition to NaN.
"""),
    Param('sparse_absent', 'missing', 'boost',
          [StrOptions({"missing", "zero"})],
          """\
    sparse_absent : {"missing", "zero"}, default="missing"
        What an entry *not stored* in a scipy.sparse X means. ``"missing"``
        (as in XGBoost): a missing value, which follows the learned default
        direction; a stored 0.0 is a value. ``"zero"``: the value 0.0, so
        that the sparse and the dense form of a matrix give the same model.
        Dense input is unaffected. See :doc:`/user_guide/sparse`.
"""),
    Param('categorical_features', None, 'estimator',
          ["array-like", None],
          """\
    categorical_features : array-like of int, str or bool, default=None
        Features to treat as categorical beyond the pandas ``category``
        columns (which always are): indices, column names or a boolean mask.
        Their distinct values at fit are the categories (re-coded by value at
        predict; unseen values follow the missing-value direction). Numeric
        features never become categorical otherwise. Every tree_method
        splits them, on dense or sparse X (a sparse column's absent entries
        are missing, or the category 0.0 with ``sparse_absent="zero"``).
        See :doc:`/user_guide/categorical`.
"""),
    Param('max_cat_to_onehot', 4, 'tree',
          [Interval(Integral, 1, None, closed="left")],
          """\
    max_cat_to_onehot : int >= 1, default=4
        A categorical feature with at most this many categories is split
        one category against the rest (the splits of its one-hot encoding);
        one with more is split by the best partition of its categories
        sorted by gradient over hessian.
"""),
    Param('max_cat_threshold', 64, 'tree',
          [Interval(Integral, 1, None, closed="left")],
          """\
    max_cat_threshold : int >= 1, default=64
        A partition split sends at most this many categories to one of its
        sides (a guard against over-fitting on many categories).
"""),
    Param('monotone_constraints', None, 'tree',
          [str, dict, "array-like", None],
          """\
    monotone_constraints : str, sequence or dict, default=None
        Force predictions to be non-decreasing (1) or non-increasing (-1)
        in a feature, whatever the other features' values (0: free).
        XGBoost's formats: ``"(1,-1,0)"``, a sequence with one entry per
        feature, or ``{column name: direction}`` for a DataFrame (unlisted
        columns free). Categorical features can not be constrained. Every
        tree_method and grow_policy; XGBoost's method (leaf weights
        clipped into bounds their ancestors' splits set). See
        :doc:`/user_guide/constraints`.
"""),
    Param('interaction_constraints', None, 'tree',
          [str, "array-like", None],
          """\
    interaction_constraints : str or list of lists, default=None
        Sets of features (indices or column names) allowed to interact: a
        node splits on a feature only if that feature and those already
        on its path lie in one set. The sets must not overlap; a feature in
        no set forms a set of its own (XGBoost's rule). ``"[[0, 1], [2]]"``
        is accepted too.
"""),
    Param('feature_weights', None, 'tree',
          ["array-like", None],
          """\
    feature_weights : array-like of shape (n_features,), default=None
        Relative probability of each feature being drawn by
        ``colsample_bytree``, ``colsample_bylevel`` and
        ``colsample_bynode`` (>= 0, not all 0; a 0 is never drawn); no
        effect when they are all 1.
"""),
    Param('importance_type', 'gain', 'estimator',
          [StrOptions(set(IMPORTANCE_TYPES))],
          """\
    importance_type : {"gain", "weight", "cover", "total_gain", "total_cover"}, default="gain"
        Definition of ``feature_importances_`` (XGBoost's): the average
        (``gain``) or total loss reduction of the splits on a feature, their
        number (``weight``), or the average or total cover (hessian sum) of
        those splits.
"""),
    Param('eval_metric', None, 'estimator',
          [str, list, callable, None],
          """\
    eval_metric : str, list or callable, default=None
        Metrics of the ``eval_set`` pairs of :meth:`fit`, logged every round
        in ``evals_result_``: names from :mod:`skboost.metrics` (``"rmse"``,
        ``"logloss"``, ``"auc"``, ``"ndcg@10"``, ...), a list of them, or a
        callable ``metric(y_true, y_pred, *, sample_weight=None) -> float``
        (minimised). A callable gets what XGBoost gives it: the encoded
        labels (class indices) and the objective's predictions as
        ``predict`` makes them from the margins: probabilities (one column
        for two classes), the predicted class indices under
        ``multi:softmax``, margins under ``binary:logitraw``. None uses the
        objective's default metric.
"""),
    Param('early_stopping_rounds', None, 'estimator',
          [Interval(Integral, 1, None, closed="left"), None],
          """\
    early_stopping_rounds : int, default=None
        Stop when the last metric on the last ``eval_set`` pair has not
        improved for this many rounds; ``best_iteration`` and ``best_score``
        record the best round, which predictions then use by default.
        Without ``eval_set``, a ``validation_fraction`` of the training data
        is held out and watched instead.
"""),
    Param('callbacks', None, 'estimator',
          [list, None],
          """\
    callbacks : list, default=None
        Objects called during training (:mod:`skboost.callback`): after each
        round with the evaluation log; one returning True stops training.
"""),
    Param('validation_fraction', 0.1, 'estimator',
          [Interval(Real, 0.0, 1.0, closed="neither")],
          """\
    validation_fraction : float in (0, 1), default=0.1
        With ``early_stopping_rounds`` and no ``eval_set``, the fraction of
        the training rows held out (stratified by class for the classifier,
        whole queries for the ranker, drawn from ``random_state``) to decide
        when to stop; it is logged as ``"validation"`` in
        ``evals_result_``. Inside a ``Pipeline`` and ``GridSearchCV`` this
        early-stops on the training folds only, without leaking the test
        fold.
"""),
    Param('warm_start', False, 'estimator',
          ["boolean"],
          """\
    warm_start : bool, default=False
        When fitted already, ``fit`` keeps the trees and adds rounds until
        there are ``n_estimators`` (scikit-learn's convention; the data must
        have the same features and, for a classifier, the same classes).
        ``evals_result_`` then logs the new rounds only. To continue
        another model, pass it to ``fit`` as ``xgb_model``.
"""),
    Param('verbosity', None, 'estimator',
          [Interval(Integral, 0, 3, closed="both"), None],
          """\
    verbosity : int in [0, 3], default=None
        XGBoost's parameter, accepted so that its configurations carry
        over; it changes nothing. skboost writes no messages of its own
        besides the progress lines of ``fit(..., verbose=...)``, which go
        through the ``"skboost"`` logger as well (:mod:`logging`), where
        an application sets their level.
"""),
    Param('device', 'cpu', 'estimator',
          [str, None],
          """\
    device : {"cpu"}, default="cpu"
        XGBoost's parameter: skboost runs on the CPU only; ``"cuda"`` or
        any other device is a ValueError at ``fit`` (None means
        ``"cpu"``).
"""),
    Param('max_recoveries', 3, 'estimator',
          [Interval(Integral, 0, None, closed="left")],
          """\
    max_recoveries : int >= 0, default=3
        Distributed fits (:mod:`skboost.dask`): how many times a fit may
        lose a worker and go on. After a loss the fit re-forms its shards
        on the workers left (the lost partitions recomputed by Dask),
        restores the last completed round and continues, giving the model
        of the uninterrupted fit bit for bit; each recovery is logged
        (logger ``"skboost"``, WARNING) with its cause and cost. 0: the
        first loss ends the fit with an error naming the worker. A fit in
        one process has no workers to lose and ignores it. See
        :doc:`/user_guide/dask`.
"""),
    Param('num_parallel_tree', 1, 'boost',
          [Interval(Integral, 1, None, closed="left")],
          """\
    num_parallel_tree : int >= 1, default=1
        Trees grown per output in every round, each on its own row sample
        (``subsample``) and column samples, all from the round's gradients;
        the round adds ``learning_rate`` times their mean (XGBoost's
        boosted random forests). :class:`BoostRFClassifier` and
        :class:`BoostRFRegressor` are one round of such a forest. See
        :doc:`/user_guide/random_forests`.
"""),
    Param('multi_strategy', 'one_output_per_tree', 'boost',
          [StrOptions(set(MULTI_STRATEGIES))],
          """\
    multi_strategy : {"one_output_per_tree", "multi_output_tree"}, default="one_output_per_tree"
        How a model of several outputs (a 2-D ``y`` of several targets or
        labels, classes of ``multi:*``, several quantiles) grows its trees:
        one tree per output and round, or one tree per round whose leaves
        hold a value per output, its splits chosen by the gain summed over
        the outputs (XGBoost's vector-leaf trees; ``tree_method="hist"``
        on dense numeric data). See :doc:`/user_guide/multi_output`.
"""),
    Param('booster', 'gbtree', 'boost', [StrOptions({"gbtree", "dart"})],
          """    booster : {"gbtree", "dart"}, default="gbtree"
        ``"dart"``: Dropouts meet Multiple Additive Regression Trees
        (Rashmi & Gilad-Bachrach, 2015), XGBoost's ``booster="dart"``:
        every round some earlier trees are left out of the margins the
        gradients are taken at, and the new tree and the dropped ones are
        then rescaled (each tree keeps a weight, saved with the model). See
        :doc:`/user_guide/dart`.
"""),
    Param('rate_drop', 0.0, 'boost', [Interval(Real, 0.0, 1.0,
                                               closed="both")],
          """    rate_drop : float in [0, 1], default=0.0
        DART: the probability that each earlier tree is dropped in a round
        (0 gives exactly the ``"gbtree"`` model).
"""),
    Param('one_drop', False, 'boost', ["boolean"],
          """    one_drop : bool, default=False
        DART: drop at least one tree in every round that drops any.
"""),
    Param('skip_drop', 0.0, 'boost', [Interval(Real, 0.0, 1.0,
                                               closed="both")],
          """    skip_drop : float in [0, 1], default=0.0
        DART: the probability that a round drops no tree at all (it wins
        over ``rate_drop`` and ``one_drop``).
"""),
    Param('sample_type', 'uniform', 'boost',
          [StrOptions({"uniform", "weighted"})],
          """    sample_type : {"uniform", "weighted"}, default="uniform"
        DART: every tree equally likely to be dropped, or in proportion to
        its weight.
"""),
    Param('normalize_type', 'tree', 'boost',
          [StrOptions({"tree", "forest"})],
          """    normalize_type : {"tree", "forest"}, default="tree"
        DART: with ``k`` trees dropped and learning rate ``eta`` shared by
        the round's ``n`` new trees (``lr = eta / n``), ``"tree"`` gives
        each new tree the weight ``1 / (k + lr)`` and scales the dropped
        ones by ``k / (k + lr)``; ``"forest"`` uses ``1 / (1 + lr)`` for
        both (XGBoost's definitions).
"""),)

# DART's parameters (rows of the table above), as BoostParams' DartParams
DART_PARAMS = ("rate_drop", "one_drop", "skip_drop", "sample_type",
               "normalize_type")

# the constraint parameters become parsed TreeParams fields of other names
_PARSED_TREE_PARAMS = ("monotone_constraints", "interaction_constraints",
                       "feature_weights")


def constraints():
    """``_parameter_constraints`` of the common parameters."""
    return {p.name: p.constraint for p in PARAMETERS}


def defaults():
    """{name: default} of the common parameters."""
    return {p.name: p.default for p in PARAMETERS}


def params_doc():
    """The docstrings' entries of the common parameters, in table order."""
    return "\n" + "".join(p.doc for p in PARAMETERS if p.doc is not None)


def store_params(estimator, params):
    """``__init__``: store every parameter as given (scikit-learn's rule);
    ``params`` is the ``locals()`` of the signature."""
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def tree_params(estimator, *, max_delta_step, n_features):
    """The ``TreeParams`` of a fit of ``estimator``: every ``"tree"`` row
    as set on it, ``max_delta_step`` resolved by the objective, the
    constraints parsed against the training features. Every engine builds
    its tree parameters here (the learning rate is the round's; the
    boosting loop divides it among ``num_parallel_tree`` trees)."""
    values = {p.name: getattr(estimator, p.name) for p in PARAMETERS
              if p.goes_to == "tree" and p.name not in _PARSED_TREE_PARAMS}
    values["max_delta_step"] = max_delta_step
    return TreeParams(**values, **_constraint_params(estimator, n_features))


def _constraint_params(estimator, n_features):
    """The constraints and feature weights as ``TreeParams`` fields,
    checked against the training features."""
    names = getattr(estimator, "feature_names_in_", None)
    category_map = getattr(estimator, "_category_map_", None)
    categorical = np.zeros(n_features, dtype=bool)
    if category_map is not None:
        categorical[category_map.features] = True
    monotone = parse_monotone(estimator.monotone_constraints, n_features,
                              names, categorical)
    weights = parse_feature_weights(estimator.feature_weights, n_features)
    return dict(
        monotone=None if monotone is None else tuple(monotone.tolist()),
        interaction_sets=parse_interactions(
            estimator.interaction_constraints, n_features, names),
        feature_weights=None if weights is None else tuple(weights))
