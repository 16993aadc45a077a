"""skboost: regularised second-order gradient-boosted trees for scikit-learn."""

from ._estimators import BoostClassifier, BoostRegressor

__all__ = ["BoostClassifier", "BoostRegressor"]
__version__ = "0.1.0.dev0"
