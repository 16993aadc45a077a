"""The parameter table (``skboost/_estimators/params.py``) and the public
signatures agree: every common parameter is a keyword of every public
estimator (forests: all but the four a forest has not), with the table's
default (forests: their documented overrides), its constraint and its
docstring entry; the tree parameters every engine trains with are built
from the table.

Oracle: ``inspect.signature`` of the public classes, and the values set on
an estimator read back one by one from ``TreeParams``.
"""

import inspect

import numpy as np
import pytest

from skboost import (BoostClassifier, BoostDistributionRegressor,
                     BoostRanker, BoostRegressor, BoostRFClassifier,
                     BoostRFRegressor)
from skboost._estimators.params import PARAMETERS, tree_params

BOOSTED = [BoostClassifier, BoostRegressor, BoostRanker,
           BoostDistributionRegressor]
FORESTS = [BoostRFClassifier, BoostRFRegressor]
NOT_FOREST = {"num_parallel_tree", "early_stopping_rounds",
              "validation_fraction", "warm_start", "booster", "rate_drop",
              "one_drop", "skip_drop", "sample_type", "normalize_type",
              "max_recoveries"}
# tree rows that TreeParams holds resolved or parsed (checked below)
PARSED = {"max_delta_step", "monotone_constraints", "interaction_constraints",
          "feature_weights"}
FOREST_DEFAULTS = {"learning_rate": 1.0, "subsample": 0.8,
                   "colsample_bynode": 0.8, "reg_lambda": 1e-5}


def _same(a, b):
    return (a is b or a == b
            or (isinstance(a, float) and isinstance(b, float)
                and np.isnan(a) and np.isnan(b)))


@pytest.mark.parametrize("cls", BOOSTED + FORESTS, ids=lambda c: c.__name__)
def test_signature_matches_the_table(cls):
    signature = inspect.signature(cls.__init__).parameters
    forest = cls in FORESTS
    for row in PARAMETERS:
        if forest and row.name in NOT_FOREST:
            assert row.name not in signature
            continue
        assert row.name in signature, f"{cls.__name__} lacks {row.name}"
        expected = FOREST_DEFAULTS.get(row.name, row.default) if forest \
            else row.default
        assert _same(signature[row.name].default, expected), row.name
        assert signature[row.name].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("cls", BOOSTED + FORESTS, ids=lambda c: c.__name__)
def test_constraints_and_docs_come_from_the_table(cls):
    for row in PARAMETERS:
        if cls in FORESTS and row.name in NOT_FOREST:
            continue
        assert cls._parameter_constraints[row.name] == row.constraint
        if row.doc is not None and cls in BOOSTED:
            assert row.doc.strip().splitlines()[0] in cls.__doc__


def test_every_parameter_is_stored_as_given():
    values = {row.name: object() for row in PARAMETERS}
    estimator = BoostRegressor(**values)
    params = estimator.get_params()
    assert all(params[name] is value for name, value in values.items())


def test_tree_params_carry_every_tree_row():
    """Each tree parameter, set to a distinct value, arrives in TreeParams
    under its name (constraints parsed)."""
    estimator = BoostRegressor(
        max_depth=3, learning_rate=0.25, tree_method="approx", max_bin=17,
        approx_proposal="local", grow_policy="lossguide", max_leaves=9,
        gamma=0.5, min_child_weight=2.5, reg_lambda=3.0, reg_alpha=0.125,
        colsample_bytree=0.9, colsample_bylevel=0.8, colsample_bynode=0.7,
        max_cat_to_onehot=5, max_cat_threshold=11,
        monotone_constraints=(1, 0, -1), interaction_constraints=[[0, 1]],
        feature_weights=[1.0, 2.0, 3.0])
    params = tree_params(estimator, max_delta_step=0.75, n_features=3)
    for row in PARAMETERS:
        if row.goes_to == "tree" and row.name not in PARSED:
            assert hasattr(params, row.name), row.name
            assert getattr(params, row.name) == getattr(estimator, row.name)
    assert params.max_delta_step == 0.75
    assert params.monotone == (1, 0, -1)
    assert params.feature_weights == (1.0, 2.0, 3.0)
    assert [set(s) for s in params.interaction_sets][:1] == [{0, 1}]
