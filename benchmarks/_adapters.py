"""Thin adapters so every contender takes the same parameter names.

scikit-learn's HistGradientBoosting calls the number of rounds ``max_iter``;
the benchmark harness sets ``n_estimators`` (for its warm-up fit).
"""

from sklearn.ensemble import (HistGradientBoostingClassifier,
                              HistGradientBoostingRegressor)


class _RoundsAsNEstimators:
    def set_params(self, **params):
        if "n_estimators" in params:
            params["max_iter"] = params.pop("n_estimators")
        return super().set_params(**params)


class HGBClassifier(_RoundsAsNEstimators, HistGradientBoostingClassifier):
    pass


class HGBRegressor(_RoundsAsNEstimators, HistGradientBoostingRegressor):
    pass
