"""DART, survival analysis and ``rank:xendcg`` on a real local Spark
(``local[2]``), through the one boosting loop the Spark tasks share with
Dask and single-node training.

Oracle: the single-node estimator fitted on the same rows (the features
have at most 40 distinct values, so the cuts do not depend on the
partitioning), bit for bit, for one and two barrier tasks.
"""

import numpy as np
import pytest

# the session fixture, the frames and the tree comparison of test_spark
# (which skips this module with the reason when PySpark or java is absent)
from test_spark import _discrete_data, _frame, _trees_equal, spark  # noqa: F401

from skboost import BoostRanker, BoostRegressor  # noqa: E402
from skboost.spark import SparkBoostRanker, SparkBoostRegressor  # noqa: E402

PARAMS = dict(n_estimators=8, max_depth=3, learning_rate=0.3, random_state=5,
              n_jobs=1)


def _spark_models_equal_local(spark_class, local, frame, **params):
    """Fit ``spark_class`` with one and two tasks; both equal ``local``."""
    for workers in (1, 2):
        model = spark_class(num_workers=workers, **params).fit(frame)
        assert _trees_equal(model.get_booster(), local.get_booster())
    return model


def test_dart_equals_single_node(spark):
    """Dropped trees and their weights: the dropout draws are the fit's,
    not a task's, so the model is single-node DART's."""
    X, y = _discrete_data(n=900, seed=1)
    params = dict(PARAMS, booster="dart", rate_drop=0.3, skip_drop=0.2,
                  sample_type="weighted", normalize_type="forest")
    local = BoostRegressor(**params).fit(X, y)
    assert not np.all(local.get_booster().tree_weights == 1.0)  # drops ran
    model = _spark_models_equal_local(SparkBoostRegressor, local,
                                      _frame(spark, X, y, 4), **params)
    np.testing.assert_array_equal(model.get_booster().tree_weights,
                                  local.get_booster().tree_weights)
    out = model.transform(_frame(spark, X, y, 3)).toPandas()
    np.testing.assert_array_equal(out["prediction"].to_numpy(),
                                  local.predict(X))


@pytest.mark.parametrize("objective", ["survival:cox", "survival:aft"])
def test_survival_equals_single_node(spark, objective):
    """XGBoost's label convention (negative times are right-censored
    rows). Cox's Breslow gradients need every margin in time order,
    gathered across the tasks; AFT's are row by row."""
    X, _ = _discrete_data(n=800, seed=2)
    rng = np.random.default_rng(2)
    risk = np.nan_to_num(X[:, 0] - X[:, 1]) / 20
    time = rng.exponential(np.exp(-risk)) + 0.01
    time = np.round(time, 2)      # ties, which Breslow's rule handles
    y = np.where(rng.random(800) < 0.3, -time, time)
    params = dict(PARAMS, objective=objective)
    local = BoostRegressor(**params).fit(X, y)
    _spark_models_equal_local(SparkBoostRegressor, local,
                              _frame(spark, X, y, 4), **params)


def test_xendcg_ranker_equals_single_node(spark):
    """rank:xendcg draws one number per document and round; each query's
    draws are seeded by its number among all the fit's queries, so the
    tasks draw what one process draws."""
    X, y = _discrete_data(n=960, seed=3, n_classes=4)
    qid = np.repeat(np.arange(48), 20)   # 12 queries in each partition
    params = dict(PARAMS, objective="rank:xendcg", min_child_weight=1e-3)
    local = BoostRanker(**params).fit(X, y, qid=qid)
    frame = _frame(spark, X, y, 4, extra=[[int(q)] for q in qid])
    _spark_models_equal_local(SparkBoostRanker, local, frame,
                              qidCol="extra0", **params)
