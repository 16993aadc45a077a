"""The scikit-learn estimators: ``base`` (the shared base and the three
boosting estimators), ``forest`` (random forests), and what only the
estimator layer needs (continued training, the early-stopping hold-out,
XGBoost's and LightGBM's parameter names).

Pickles name ``skboost._estimators.BoostClassifier`` and its siblings: they
are importable from here."""

from .classifier import BoostClassifier
from .ranker import BoostRanker
from .regressor import BoostRegressor
from .forest import BoostRFClassifier, BoostRFRegressor
from .distribution import BoostDistributionRegressor

__all__ = ["BoostDistributionRegressor", "BoostClassifier", "BoostRanker", "BoostRegressor",
           "BoostRFClassifier", "BoostRFRegressor"]
