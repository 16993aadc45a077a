"""skboost: regularised second-order gradient-boosted trees for scikit-learn."""

from ._estimators import BoostClassifier, BoostRanker, BoostRegressor

__all__ = ["BoostClassifier", "BoostRanker", "BoostRegressor"]
__version__ = "0.1.0.dev0"
