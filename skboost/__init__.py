"""skboost: regularised second-order gradient-boosted trees for scikit-learn."""

# first: the kernels' own OpenMP runtime, with its thread-waiting policy
from . import _openmp_runtime  # noqa: F401  (isort: skip)
from . import _legacy
from ._model.booster import Booster
from ._io import booster_files  # noqa: F401  (Booster.save_model's writer)
from ._estimators import (BoostClassifier, BoostDistributionRegressor,
                          BoostRanker, BoostRegressor, BoostRFClassifier,
                          BoostRFRegressor)


_legacy.install()  # old module paths (pickles) lead to the moved modules


def __getattr__(name):
    # ExternalData (out-of-core training) loads its modules on first use
    if name == "ExternalData":
        from .external import ExternalData
        return ExternalData
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"ExternalData"})


__all__ = ["Booster", "BoostClassifier", "BoostDistributionRegressor", "BoostRanker", "BoostRegressor", "ExternalData",
           "BoostRFClassifier", "BoostRFRegressor"]
from ._version import __version__  # noqa: E402
