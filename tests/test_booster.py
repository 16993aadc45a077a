"""The boosting loop and the trained Booster (skboost/_booster.py).

Oracles: the objective's own loss (training loss never increases), closed
forms of the base margin, sums of leaf values read from the trees, and
invariances (thread count, random_state, zero-weight rows).
"""

import numpy as np
import pytest

from skboost import BoostClassifier, BoostRegressor
from skboost.objectives import get_objective

N_ROWS, N_FEATURES = 400, 6


def _data(seed, n=N_ROWS, d=N_FEATURES, missing_fraction=0.1):
    """Continuous features with some NaN; a nonlinear signal in the first
    three features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    signal = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
              + rng.normal(scale=0.5, size=n))
    X[rng.random((n, d)) < missing_fraction] = np.nan
    return X, signal, rng


def _targets(objective, signal):
    """Regression target, 0/1 labels or 3 class indices from the signal."""
    if objective == "reg:squarederror":
        return 2.0 * signal + 1.0
    if objective == "binary:logistic":
        return (signal > 0.3).astype(np.int64)
    return np.digitize(signal, [-0.5, 0.5]).astype(np.int64)


def _estimator(objective, **params):
    params.setdefault("n_jobs", 1)
    if objective == "reg:squarederror":
        return BoostRegressor(objective=objective, **params)
    return BoostClassifier(objective=objective, **params)


def _raw(booster, X, iteration_range=None):
    return booster.predict_raw(np.ascontiguousarray(X, dtype=np.float32),
                               iteration_range)


OBJECTIVES = ["reg:squarederror", "binary:logistic", "multi:softprob"]


# --------------------------------------------------------------------------
# Training loss never increases
# --------------------------------------------------------------------------

LOSS_PARAMS = [
    dict(),
    dict(max_depth=3, learning_rate=0.1),
    dict(max_depth=0, learning_rate=0.3, reg_lambda=0.0, min_child_weight=0.0),
    dict(reg_alpha=2.0),
    dict(max_delta_step=0.3),
    dict(min_child_weight=20.0, reg_lambda=5.0),
    dict(reg_alpha=0.5, max_delta_step=1.0, gamma=0.5),
    dict(max_depth=2, learning_rate=0.6, reg_lambda=0.5),
]


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("params", LOSS_PARAMS, ids=str)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("seed", [0, 1])
def test_training_loss_never_increases(objective, params, weighted, seed):
    X, signal, rng = _data(seed)
    y = _targets(objective, signal)
    weight = rng.uniform(0.0, 3.0, size=X.shape[0]) if weighted else None
    n_rounds = 12
    model = _estimator(objective, n_estimators=n_rounds, subsample=1.0,
                       colsample_bytree=1.0, colsample_bylevel=1.0,
                       colsample_bynode=1.0, **params)
    model.fit(X, y, sample_weight=weight)
    booster = model.booster_
    assert booster.n_rounds == n_rounds

    obj = get_objective(booster.objective)
    y_obj = y.astype(np.int32) if objective == "multi:softprob" else y.astype(float)
    w = np.ones(X.shape[0]) if weight is None else weight
    base = np.tile(booster.base_margin, (X.shape[0], 1))
    losses = [obj.loss(y_obj, base, w)]
    for k in range(1, n_rounds + 1):
        losses.append(obj.loss(y_obj, _raw(booster, X, (0, k)), w))
    losses = np.array(losses)
    increase = np.diff(losses)
    # float32 gradients: allow rounding-level noise only
    tol = 1e-9 * np.abs(losses[:-1]) + 1e-12
    assert np.all(increase <= tol), (losses, increase)
    # and the model does learn something overall
    assert losses[-1] < losses[0]


def test_loss_of_objective_matches_hand_formula():
    """The loss used by the property test above is the one we think it is."""
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(50, 3))
    w = rng.uniform(0.5, 2, 50)
    y = rng.integers(0, 3, 50).astype(np.int32)
    log_p = raw - np.log(np.exp(raw).sum(axis=1, keepdims=True))
    expected = np.sum(w * -log_p[np.arange(50), y]) / w.sum()
    assert get_objective("multi:softprob").loss(y, raw, w) == pytest.approx(expected)
    yb = (y > 0).astype(float)
    p = 1 / (1 + np.exp(-raw[:, 0]))
    expected = np.sum(w * -(yb * np.log(p) + (1 - yb) * np.log(1 - p))) / w.sum()
    assert get_objective("binary:logistic").loss(yb, raw[:, :1], w) == pytest.approx(expected)
    expected = np.sum(w * 0.5 * (raw[:, 0] - yb) ** 2) / w.sum()
    assert get_objective("reg:squarederror").loss(yb, raw[:, :1], w) == pytest.approx(expected)


# --------------------------------------------------------------------------
# Base score
# --------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_base_margin_squared_error_is_weighted_mean(weighted):
    X, signal, rng = _data(0)
    y = 3.0 * signal + 7.0
    w = rng.uniform(0, 5, size=y.shape[0]) if weighted else np.ones(y.shape[0])
    model = BoostRegressor(n_estimators=2, n_jobs=1).fit(
        X, y, sample_weight=w if weighted else None)
    expected = np.sum(w * y) / np.sum(w)
    np.testing.assert_allclose(model.booster_.base_margin, [expected], rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_base_margin_logistic_is_logit_of_weighted_mean(weighted):
    X, signal, rng = _data(1)
    y = (signal > 0.8).astype(int)  # unbalanced
    w = rng.uniform(0, 5, size=y.shape[0]) if weighted else np.ones(y.shape[0])
    model = BoostClassifier(n_estimators=2, n_jobs=1).fit(
        X, y, sample_weight=w if weighted else None)
    mean = np.sum(w * y) / np.sum(w)
    assert 0.05 < mean < 0.45
    expected = np.log(mean / (1.0 - mean))
    np.testing.assert_allclose(model.booster_.base_margin, [expected], rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_base_margin_softprob_is_log_of_weighted_priors(weighted):
    X, signal, rng = _data(2)
    labels = np.array(["low", "mid", "high", "top"])
    codes = np.digitize(signal, [-1.0, 0.0, 1.5])
    y = labels[codes]
    w = rng.uniform(0, 5, size=y.shape[0]) if weighted else np.ones(y.shape[0])
    model = BoostClassifier(n_estimators=2, n_jobs=1).fit(
        X, y, sample_weight=w if weighted else None)
    assert model.booster_.objective == "multi:softprob"
    priors = np.array([np.sum(w[y == c]) / np.sum(w) for c in model.classes_])
    assert len(set(np.round(priors, 3))) == 4  # priors really differ
    margin = model.booster_.base_margin
    assert margin.shape == (4,)
    # log of the priors up to a common shift (softmax does not see it; the
    # margins may be centred): the softmax of the base margin is the priors
    np.testing.assert_allclose(margin - margin[0], np.log(priors / priors[0]),
                               rtol=1e-12, atol=1e-12)
    softmax = np.exp(margin) / np.exp(margin).sum()
    np.testing.assert_allclose(softmax, priors, rtol=1e-12)


def test_base_score_given_is_used_in_prediction_space():
    X, signal, _ = _data(0)
    reg = BoostRegressor(n_estimators=1, base_score=2.5, n_jobs=1).fit(X, signal)
    np.testing.assert_allclose(reg.booster_.base_margin, [2.5])
    clf = BoostClassifier(n_estimators=1, base_score=0.2, n_jobs=1).fit(
        X, signal > 0)
    np.testing.assert_allclose(clf.booster_.base_margin, [np.log(0.2 / 0.8)],
                               rtol=1e-12)


def test_base_margin_is_the_start_of_every_prediction():
    """The margin of round 1 is base_margin + the first tree's leaf value."""
    X, signal, _ = _data(0)
    y = _targets("multi:softprob", signal)
    model = BoostClassifier(n_estimators=3, n_jobs=1).fit(X, y)
    booster = model.booster_
    leaves = model.apply(X)
    expected = np.tile(booster.base_margin, (X.shape[0], 1))
    for t in range(booster.n_outputs):
        expected[:, booster.tree_group[t]] += booster.trees[t].value[leaves[:, t]]
    np.testing.assert_allclose(_raw(booster, X, (0, 1)), expected, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------
# iteration_range
# --------------------------------------------------------------------------


@pytest.fixture(scope="module", params=OBJECTIVES)
def fitted(request):
    X, signal, _ = _data(5)
    y = _targets(request.param, signal)
    model = _estimator(request.param, n_estimators=6, max_depth=3).fit(X, y)
    return model, X


def test_tree_groups_and_counts(fitted):
    model, X = fitted
    booster = model.booster_
    K = booster.n_outputs
    assert K == (3 if booster.objective == "multi:softprob" else 1)
    assert len(booster.trees) == 6 * K
    assert booster.n_rounds == 6
    # the trees of a round are consecutive, one per output column
    assert list(booster.tree_group) == [t % K for t in range(6 * K)]


def _sum_of_trees(booster, leaves, first_round, last_round):
    K = booster.n_outputs
    out = np.tile(booster.base_margin, (leaves.shape[0], 1))
    for t in range(first_round * K, last_round * K):
        out[:, booster.tree_group[t]] += booster.trees[t].value[leaves[:, t]]
    return out


def test_iteration_range_is_base_plus_first_rounds(fitted):
    model, X = fitted
    booster = model.booster_
    leaves = model.apply(X)  # all trees
    for k in range(1, booster.n_rounds + 1):
        np.testing.assert_allclose(_raw(booster, X, (0, k)),
                                   _sum_of_trees(booster, leaves, 0, k),
                                   rtol=0, atol=1e-12)
    # a range not starting at 0 still starts from the base margin
    np.testing.assert_allclose(_raw(booster, X, (2, 5)),
                               _sum_of_trees(booster, leaves, 2, 5),
                               rtol=0, atol=1e-12)


def test_consecutive_ranges_differ_by_one_round(fitted):
    model, X = fitted
    booster = model.booster_
    K = booster.n_outputs
    leaves = model.apply(X)
    for k in range(2, booster.n_rounds + 1):
        diff = _raw(booster, X, (0, k)) - _raw(booster, X, (0, k - 1))
        contrib = np.zeros_like(diff)
        for t in range((k - 1) * K, k * K):
            contrib[:, booster.tree_group[t]] += booster.trees[t].value[leaves[:, t]]
        np.testing.assert_allclose(diff, contrib, rtol=0, atol=1e-10)
        assert np.any(contrib != 0)


def test_apply_with_iteration_range_selects_trees(fitted):
    model, X = fitted
    K = model.booster_.n_outputs
    np.testing.assert_array_equal(model.apply(X, iteration_range=(2, 4)),
                                  model.apply(X)[:, 2 * K:4 * K])


def test_full_range_none_and_zero_zero_agree(fitted):
    model, X = fitted
    booster = model.booster_
    full = _raw(booster, X, None)
    np.testing.assert_array_equal(_raw(booster, X, (0, 0)), full)
    np.testing.assert_array_equal(_raw(booster, X, (0, booster.n_rounds)), full)
    assert not np.array_equal(_raw(booster, X, (0, booster.n_rounds - 1)), full)
    # estimator API passes the range down
    if isinstance(model, BoostRegressor):
        np.testing.assert_array_equal(
            model.predict(X, iteration_range=(0, 2)), _raw(booster, X, (0, 2))[:, 0])
    else:
        margin = model.decision_function(X, iteration_range=(0, 2))
        np.testing.assert_array_equal(
            margin.reshape(X.shape[0], -1), _raw(booster, X, (0, 2)))


@pytest.mark.parametrize("bad", [(0, 7), (3, 3), (4, 2), (-1, 3), (0, -1),
                                 (1,), (0, 1, 2), "ab", ("a", "b"), 5,
                                 ])
def test_invalid_iteration_range_raises(fitted, bad):
    model, X = fitted
    with pytest.raises(ValueError):
        _raw(model.booster_, X, bad)
    with pytest.raises(ValueError):
        model.predict(X, iteration_range=bad)
    with pytest.raises(ValueError):
        model.apply(X, iteration_range=bad)


# --------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------

SAMPLING = dict(subsample=0.7, colsample_bytree=0.8, colsample_bylevel=0.8,
                colsample_bynode=0.7)


def _fit_sampled(objective, n_jobs, random_state, X, y, weight=None):
    return _estimator(objective, n_estimators=5, max_depth=4, n_jobs=n_jobs,
                      random_state=random_state, **SAMPLING).fit(
        X, y, sample_weight=weight)


def _assert_same_trees(a, b):
    assert len(a.trees) == len(b.trees)
    for ta, tb in zip(a.trees, b.trees):
        for field in ("left_child", "right_child", "feature", "threshold",
                      "default_left", "value", "gain", "cover"):
            np.testing.assert_array_equal(getattr(ta, field), getattr(tb, field))
    np.testing.assert_array_equal(a.base_margin, b.base_margin)


@pytest.fixture(scope="module")
def wide_data():
    X, signal, rng = _data(11, n=800, d=10)
    return X, signal, rng.uniform(0.2, 2.0, size=X.shape[0])


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_n_jobs_does_not_change_the_model(objective, wide_data):
    X, signal, weight = wide_data
    y = _targets(objective, signal)
    one = _fit_sampled(objective, 1, 42, X, y, weight)
    two = _fit_sampled(objective, 2, 42, X, y, weight)
    _assert_same_trees(one.booster_, two.booster_)
    # and predicting with 1 or 2 threads gives the same bits
    raw_1 = one.booster_.predict_raw(X, None, 1)
    raw_2 = one.booster_.predict_raw(X, None, 2)
    assert np.array_equal(raw_1, raw_2)
    if objective == "reg:squarederror":
        assert np.array_equal(one.predict(X), two.predict(X))
    else:
        assert np.array_equal(one.predict_proba(X), two.predict_proba(X))
        assert np.array_equal(one.decision_function(X), two.decision_function(X))


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_same_random_state_same_model(objective):
    X, signal, _ = _data(12)
    y = _targets(objective, signal)
    a = _fit_sampled(objective, 1, 7, X, y)
    b = _fit_sampled(objective, 1, 7, X, y)
    _assert_same_trees(a.booster_, b.booster_)
    rs_a = _fit_sampled(objective, 1, np.random.RandomState(3), X, y)
    rs_b = _fit_sampled(objective, 1, np.random.RandomState(3), X, y)
    _assert_same_trees(rs_a.booster_, rs_b.booster_)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("sampling", [
    dict(subsample=0.6), dict(colsample_bytree=0.5), dict(colsample_bylevel=0.5),
    dict(colsample_bynode=0.5)], ids=str)
def test_different_random_state_different_model(objective, sampling):
    X, signal, _ = _data(13)
    y = _targets(objective, signal)
    kw = dict(n_estimators=5, max_depth=4, **sampling)
    a = _estimator(objective, random_state=0, **kw).fit(X, y)
    b = _estimator(objective, random_state=1, **kw).fit(X, y)
    assert not np.array_equal(_raw(a.booster_, X), _raw(b.booster_, X))


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_no_sampling_ignores_random_state(objective):
    X, signal, _ = _data(14)
    y = _targets(objective, signal)
    a = _estimator(objective, n_estimators=4, random_state=0).fit(X, y)
    b = _estimator(objective, n_estimators=4, random_state=1).fit(X, y)
    _assert_same_trees(a.booster_, b.booster_)


# --------------------------------------------------------------------------
# Sample weights
# --------------------------------------------------------------------------


def _assert_same_structure(a, b):
    assert len(a.trees) == len(b.trees)
    for ta, tb in zip(a.trees, b.trees):
        for field in ("left_child", "right_child", "feature", "threshold",
                      "default_left"):
            np.testing.assert_array_equal(getattr(ta, field), getattr(tb, field))


ZERO_WEIGHT_PARAMS = [dict(), dict(reg_alpha=0.5, max_delta_step=0.7,
                                   min_child_weight=3.0)]
BASE_SCORE = {"reg:squarederror": 0.5, "binary:logistic": 0.4,
              "multi:softprob": 0.5}


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("params", ZERO_WEIGHT_PARAMS, ids=str)
def test_zero_weight_rows_are_absent_rows(objective, params):
    """With a given base_score every row's gradient and every sum over the
    rows that take part are the same: the models are bit-identical."""
    X, signal, rng = _data(21, n=600)
    y = _targets(objective, signal)
    weight = rng.uniform(0.5, 2.0, size=X.shape[0])
    zero = rng.random(X.shape[0]) < 0.3
    weight[zero] = 0.0
    keep = ~zero
    kw = dict(n_estimators=6, max_depth=4, base_score=BASE_SCORE[objective],
              **params)
    with_zeros = _estimator(objective, **kw).fit(X, y, sample_weight=weight)
    without = _estimator(objective, **kw).fit(X[keep], y[keep],
                                              sample_weight=weight[keep])
    _assert_same_trees(with_zeros.booster_, without.booster_)
    assert np.array_equal(_raw(with_zeros.booster_, X[keep]),
                          _raw(without.booster_, X[keep]))
    # the zero-weight rows did not even shape the thresholds
    assert np.array_equal(_raw(with_zeros.booster_, X),
                          _raw(without.booster_, X))


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("params", ZERO_WEIGHT_PARAMS, ids=str)
def test_zero_weight_rows_are_absent_rows_estimated_base(objective, params):
    """The estimated base score is a weighted mean, summed in a different
    order with the zero terms: equal up to rounding, same trees."""
    X, signal, rng = _data(24, n=600)
    y = _targets(objective, signal)
    weight = rng.uniform(0.5, 2.0, size=X.shape[0])
    zero = rng.random(X.shape[0]) < 0.3
    weight[zero] = 0.0
    keep = ~zero
    kw = dict(n_estimators=6, max_depth=4, **params)
    with_zeros = _estimator(objective, **kw).fit(X, y, sample_weight=weight)
    without = _estimator(objective, **kw).fit(X[keep], y[keep],
                                              sample_weight=weight[keep])
    np.testing.assert_allclose(with_zeros.booster_.base_margin,
                               without.booster_.base_margin, rtol=1e-13)
    _assert_same_structure(with_zeros.booster_, without.booster_)
    np.testing.assert_allclose(_raw(with_zeros.booster_, X[keep]),
                               _raw(without.booster_, X[keep]),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_integer_weight_is_a_repeated_row(objective):
    X, signal, rng = _data(22, n=500, missing_fraction=0.0)
    y = _targets(objective, signal)
    weight = rng.integers(1, 3, size=X.shape[0])  # 1 or 2
    kw = dict(n_estimators=5, max_depth=3)
    weighted = _estimator(objective, **kw).fit(X, y, sample_weight=weight)
    repeat = np.repeat(np.arange(X.shape[0]), weight)
    repeated = _estimator(objective, **kw).fit(X[repeat], y[repeat])
    np.testing.assert_allclose(_raw(weighted.booster_, X),
                               _raw(repeated.booster_, X), rtol=1e-9, atol=1e-9)


def test_weights_change_the_model():
    """Guard for the two tests above: weights are not ignored."""
    X, signal, rng = _data(23)
    y = _targets("reg:squarederror", signal)
    w = rng.uniform(0, 3, size=X.shape[0])
    a = BoostRegressor(n_estimators=3, n_jobs=1).fit(X, y)
    b = BoostRegressor(n_estimators=3, n_jobs=1).fit(X, y, sample_weight=w)
    assert not np.allclose(a.predict(X), b.predict(X))
    c = BoostRegressor(n_estimators=3, n_jobs=1).fit(X, y, sample_weight=np.full(len(y), 2.5))
    # a constant weight scales G and H alike: with lambda=0 and no
    # min_child_weight the model is the same
    a0 = BoostRegressor(n_estimators=3, reg_lambda=0, min_child_weight=0,
                        n_jobs=1).fit(X, y)
    c0 = BoostRegressor(n_estimators=3, reg_lambda=0, min_child_weight=0,
                        n_jobs=1).fit(X, y, sample_weight=np.full(len(y), 2.5))
    np.testing.assert_allclose(a0.predict(X), c0.predict(X), rtol=1e-9, atol=1e-9)
    assert not np.allclose(a.predict(X), c.predict(X))  # lambda=1 does see the scale
