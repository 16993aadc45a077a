"""skboost: regularised second-order gradient-boosted trees for scikit-learn."""

from ._estimators import BoostClassifier, BoostRanker, BoostRegressor
from ._forest import BoostRFClassifier, BoostRFRegressor

__all__ = ["BoostClassifier", "BoostRanker", "BoostRegressor",
           "BoostRFClassifier", "BoostRFRegressor"]
__version__ = "0.1.0.dev0"
