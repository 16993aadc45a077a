"""scikit-learn's estimator checks on every estimator and every split
finding method, with no expected failures."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skboost import BoostClassifier, BoostRegressor

ESTIMATORS = [Est(tree_method=method)
              for Est in (BoostClassifier, BoostRegressor)
              for method in ("hist", "approx", "exact")]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS[::3],
                         ids=lambda est: type(est).__name__)
def test_every_parameter_has_a_constraint(estimator):
    """check_param_validation relies on it; a parameter without one would be
    accepted unchecked."""
    assert set(estimator._parameter_constraints) == set(estimator.get_params())
