"""Random forests: one round of ``n_estimators`` parallel trees.

:class:`BoostRFClassifier` and :class:`BoostRFRegressor` are XGBoost's
``XGBRFClassifier`` / ``XGBRFRegressor``: the second-order trees of the
boosted estimators, but all grown in a single round from the gradients at
the base margin, each on its own row sample (``subsample``) and column
samples (``colsample_bynode`` per node), and averaged (the round adds the
mean of their outputs; ``learning_rate`` 1 by default). The defaults are
XGBoost's for its forests.

Early stopping, warm starts and ``num_parallel_tree`` are not parameters of
a forest (a forest is one round; ``n_estimators`` is its number of trees).
"""

import numpy as np

from .classifier import BoostClassifier
from .regressor import BoostRegressor
from .params import store_params

# Parameters of the boosted estimators that a forest does not have.
_NOT_FOREST_PARAMS = ("num_parallel_tree", "early_stopping_rounds",
                      "validation_fraction", "warm_start", "booster",
                      "rate_drop", "one_drop", "skip_drop", "sample_type",
                      "normalize_type", "max_recoveries")

_FOREST_PARAMS_DOC = """
    Parameters
    ----------
    n_estimators : int, default=100
        Number of trees of the forest (grown in one round).
    learning_rate : float >= 0, default=1
        Multiplies the forest's mean output.
    subsample : float in (0, 1], default=0.8
        Each tree uses each row with this probability.
    colsample_bynode : float in (0, 1], default=0.8
        Fraction of the features each node draws its split from.
    reg_lambda : float >= 0, default=1e-5
        L2 regularisation of the leaf weights (XGBoost's forest default:
        leaves close to their rows' mean residual).
    **other parameters
        Every other parameter of :class:`{boosted}` (``max_depth``,
        ``tree_method``, ``min_child_weight``, ``objective``,
        ``multi_strategy``, ...), with the same meaning and default;
        ``num_parallel_tree``, ``early_stopping_rounds``,
        ``validation_fraction``, ``warm_start`` and ``max_recoveries`` (no
        forest trains on Dask) are not parameters of a forest.
"""


class _ForestMixin:
    """One round of ``n_estimators`` parallel trees (see module doc)."""

    # The boosted estimators read these; a forest has them fixed.
    early_stopping_rounds = None
    validation_fraction = 0.1
    warm_start = False
    booster = "gbtree"   # one round: nothing to drop (DART)

    def _round_layout(self):
        return 1, self.n_estimators

    @property
    def num_parallel_tree(self):
        """Trees of the forest's one round: ``n_estimators``."""
        return self.n_estimators


def _forest_constraints(boosted):
    return {name: rule for name, rule in boosted._parameter_constraints.items()
            if name not in _NOT_FOREST_PARAMS}


class BoostRFClassifier(_ForestMixin, BoostClassifier):
    __doc__ = f"""Random forest classifier of second-order trees
    (XGBoost's ``XGBRFClassifier``).

    ``n_estimators`` trees grown in one round from the gradients of the log
    loss at the base margin, each on its own row and column samples; the
    margin is the base margin plus their mean. Multi-class and multi-label
    targets as :class:`BoostClassifier`. See
    :doc:`/user_guide/random_forests`.
{_FOREST_PARAMS_DOC.format(boosted="BoostClassifier")}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    booster_ : Booster
        The trained forest (one round of ``n_estimators`` trees per
        output).
    feature_importances_ : ndarray of shape (n_features,)
        Importances of type ``importance_type``, normalised to sum to 1.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skboost import BoostRFClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> forest = BoostRFClassifier(n_estimators=20, random_state=0).fit(X, y)
    >>> len(forest.get_booster().trees)
    20
    """

    _parameter_constraints = _forest_constraints(BoostClassifier)

    def __init__(self, *, objective="binary:logistic", n_estimators=100,
                 max_depth=6, learning_rate=1.0, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0, n_jobs=None,
                 gamma=0.0, min_child_weight=1.0, max_delta_step=None,
                 subsample=0.8, colsample_bytree=1.0, colsample_bylevel=1.0,
                 colsample_bynode=0.8, reg_alpha=0.0, reg_lambda=1e-5,
                 base_score=None, random_state=None, missing=np.nan,
                 sparse_absent="missing", categorical_features=None,
                 max_cat_to_onehot=4, max_cat_threshold=64,
                 monotone_constraints=None, interaction_constraints=None,
                 feature_weights=None, importance_type="gain",
                 eval_metric=None, callbacks=None,
                 multi_strategy="one_output_per_tree",
                 scale_pos_weight=1.0, class_weight=None, verbosity=None,
                 device="cpu"):
        store_params(self, locals())


class BoostRFRegressor(_ForestMixin, BoostRegressor):
    __doc__ = f"""Random forest regressor of second-order trees
    (XGBoost's ``XGBRFRegressor``).

    ``n_estimators`` trees grown in one round from the gradients at the base
    margin, each on its own row and column samples; predictions are the
    base margin plus their mean (through the objective's link). A 2-D y
    grows a forest per target (or vector-leaf trees with
    ``multi_strategy="multi_output_tree"``). See
    :doc:`/user_guide/random_forests`.
{_FOREST_PARAMS_DOC.format(boosted="BoostRegressor")}
    Attributes
    ----------
    booster_ : Booster
        The trained forest (one round of ``n_estimators`` trees per
        output).
    feature_importances_ : ndarray of shape (n_features,)
        Importances of type ``importance_type``, normalised to sum to 1.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skboost import BoostRFRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> forest = BoostRFRegressor(n_estimators=20, random_state=0).fit(X, y)
    >>> forest.predict(X[:2]).shape
    (2,)
    """

    _parameter_constraints = _forest_constraints(BoostRegressor)

    def __init__(self, *, objective="reg:squarederror", n_estimators=100,
                 max_depth=6, learning_rate=1.0, tree_method="hist",
                 max_bin=256, approx_proposal="global",
                 grow_policy="depthwise", max_leaves=0, n_jobs=None,
                 gamma=0.0, min_child_weight=1.0, max_delta_step=None,
                 subsample=0.8, colsample_bytree=1.0, colsample_bylevel=1.0,
                 colsample_bynode=0.8, reg_alpha=0.0, reg_lambda=1e-5,
                 base_score=None, random_state=None, missing=np.nan,
                 sparse_absent="missing", categorical_features=None,
                 max_cat_to_onehot=4, max_cat_threshold=64,
                 monotone_constraints=None, interaction_constraints=None,
                 feature_weights=None, importance_type="gain",
                 eval_metric=None, callbacks=None,
                 multi_strategy="one_output_per_tree", huber_slope=1.0,
                 quantile_alpha=0.5, tweedie_variance_power=1.5,
                 verbosity=None, device="cpu"):
        store_params(self, locals())
