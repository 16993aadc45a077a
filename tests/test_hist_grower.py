"""Model-level tests of ``tree_method="hist"`` (``finders.HistFinder``).

Oracles:

- ``tree_method="exact"``: when ``max_bin`` is at least the number of
  distinct values of every feature, the cut points are the midpoints of
  consecutive distinct values, so every split the exact finder can make has
  a histogram split with the same partition of every node's rows (and the
  extra histogram thresholds at empty bins only repeat partitions). Both
  finders then choose the same partitions and the training predictions
  agree to rounding (the exact finder sums float64 values, the histogram
  finder exact integers). Gradients must make different partitions differ in
  gain by more than rounding: continuous targets or continuous weights.
- Depth-wise growth: see ``test_lossguide_with_room_for_a_full_tree_...``.
- Properties: limits on leaves and depth, thread independence, monotone
  training loss, and accuracy next to XGBoost's own hist method.
"""

import numpy as np
import pytest

from skboost import BoostClassifier, BoostRegressor
from _shared_data import load_tsv

def trees_of(model):
    return model.get_booster().trees


def small_integer_data(seed, n_rows=600, n_features=5, task="regression",
                       missing=0.1, weighted=True):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n_rows, n_features)).astype(np.float64)
    X[:, 1] = X[:, 1] * 0.5 - 2.0
    X[rng.random(X.shape) < missing] = np.nan
    Xf = np.nan_to_num(X, nan=5.0)
    signal = np.sin(Xf[:, 0]) + 0.3 * Xf[:, 1] * (Xf[:, 2] > 4) - 0.1 * Xf[:, 3]
    noise = rng.normal(scale=0.5, size=n_rows)
    if task == "regression":
        y = 3.0 * signal + noise
    else:
        y = (signal + noise > 0.0).astype(np.int64)
    weight = rng.uniform(0.2, 3.0, n_rows) if weighted else None
    return X, y, weight


def continuous_data(seed, n_rows=2000, n_features=6, task="regression",
                    missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    signal = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    X[rng.random(X.shape) < missing] = np.nan
    noise = rng.normal(scale=0.5, size=n_rows)
    if task == "regression":
        return X, 2.0 * signal + noise, rng.uniform(0.2, 3.0, n_rows)
    return X, (signal + noise > 0.2).astype(np.int64), rng.uniform(0.2, 3.0,
                                                                  n_rows)


def predictions(model, X):
    if isinstance(model, BoostClassifier):
        return model.predict_proba(X)
    return model.predict(X)


def make(task, **params):
    kind = BoostRegressor if task == "regression" else BoostClassifier
    return kind(n_jobs=1, **params)


# --------------------------------------------------------------------------
# hist == exact when every distinct value has its own bin
# --------------------------------------------------------------------------

REG_SETTINGS = {
    "default": dict(),
    "lambda5_mcw3": dict(reg_lambda=5.0, min_child_weight=3.0),
    "alpha1": dict(reg_alpha=1.0),
    "max_delta_step0.3": dict(max_delta_step=0.3),
    "gamma0.5_no_lambda": dict(gamma=0.5, reg_lambda=0.0, max_depth=4),
    "deep_mcw0": dict(max_depth=8, min_child_weight=0.0, learning_rate=0.5),
}


@pytest.mark.parametrize("task", ["regression", "classification"])
@pytest.mark.parametrize("setting", list(REG_SETTINGS))
def test_hist_equals_exact_when_every_value_has_a_bin(task, setting):
    X, y, weight = small_integer_data(7, task=task)
    n_distinct = max(np.unique(X[~np.isnan(X[:, j]), j]).size
                     for j in range(X.shape[1]))
    params = {"n_estimators": 12, "learning_rate": 0.3,
              **REG_SETTINGS[setting]}
    exact = make(task, tree_method="exact", **params).fit(X, y, weight)
    hist = make(task, tree_method="hist", max_bin=n_distinct,
                **params).fit(X, y, weight)
    np.testing.assert_allclose(predictions(hist, X), predictions(exact, X),
                               rtol=0, atol=1e-9)
    # same tree shapes, not only the same sums
    for a, b in zip(trees_of(hist), trees_of(exact)):
        assert a.n_leaves == b.n_leaves


@pytest.mark.parametrize("max_bin", [12, 64, 256])
def test_hist_equals_exact_without_weights(max_bin):
    # unit weights: the continuous targets keep gains apart
    X, y, _ = small_integer_data(8, weighted=False, missing=0.2)
    params = dict(n_estimators=10, max_depth=5)
    exact = make("regression", tree_method="exact", **params).fit(X, y)
    hist = make("regression", tree_method="hist", max_bin=max_bin,
                **params).fit(X, y)
    np.testing.assert_allclose(hist.predict(X), exact.predict(X), rtol=0,
                               atol=1e-9)


def test_zero_weight_rows_take_no_part():
    X, y, weight = small_integer_data(9)
    weight[::4] = 0.0
    params = dict(n_estimators=8, tree_method="hist", max_bin=12)
    with_zero = make("regression", **params).fit(X, y, weight)
    keep = weight > 0
    without = make("regression", **params).fit(X[keep], y[keep],
                                                weight[keep])
    np.testing.assert_array_equal(with_zero.predict(X), without.predict(X))


# --------------------------------------------------------------------------
# Limits: max_leaves and max_depth
# --------------------------------------------------------------------------

# lossguide's limits and best-first prefixes: tests/test_driver.py, for every
# finder

@pytest.mark.parametrize("max_leaves,max_depth", [(3, 6), (10, 6), (5, 2)])
def test_depthwise_respects_max_leaves(max_leaves, max_depth):
    X, y, weight = continuous_data(2)
    model = make("regression", tree_method="hist", grow_policy="depthwise",
                 max_leaves=max_leaves, max_depth=max_depth,
                 n_estimators=8).fit(X, y, weight)
    trees = trees_of(model)
    assert all(t.n_leaves <= max_leaves for t in trees)
    assert all(t.max_depth <= max_depth for t in trees)
    assert max(t.n_leaves for t in trees) == min(max_leaves, 2 ** max_depth)


@pytest.mark.parametrize("task", ["regression", "classification"])
@pytest.mark.parametrize("max_depth", [2, 4])
@pytest.mark.parametrize("data", ["continuous", "ties"])
def test_lossguide_with_room_for_a_full_tree_equals_depthwise(task, max_depth,
                                                              data):
    """Why this must hold, exactly and with or without near-ties:

    - both policies evaluate every child of every split node below
      max_depth, and a node's best split depends only on its own rows (its
      histogram is an exact integer sum, whichever way it was obtained) and
      the parameters, never on the order in which nodes are expanded;
    - both split a node exactly when that split is worth it
      (``worth_splitting``), except that lossguide stops at max_leaves. A
      tree of depth <= D has at most 2**D leaves, reached only when it is
      complete, i.e. when no node is left to split: max_leaves = 2**D never
      stops lossguide early;
    - so both grow the same set of splits; node numbers differ, but leaf
      values (functions of the same G, H) and predictions do not.

    Row subsampling and column sampling by tree and by level draw the same
    random numbers in both (a level's sample is drawn when the level is
    first reached, and both reach levels in increasing order); sampling by
    node would not (nodes are evaluated in another order).

    The "ties" data (small integers, a duplicated feature, unit weights:
    many splits of exactly equal gain) checks that ties change nothing.
    """
    if data == "continuous":
        X, y, weight = continuous_data(4, task=task)
    else:
        X, y, weight = small_integer_data(4, task=task, weighted=False)
        X = np.column_stack([X, X[:, 0]])
    params = dict(tree_method="hist", max_depth=max_depth, n_estimators=10,
                  subsample=0.8, colsample_bytree=0.8, colsample_bylevel=0.7,
                  random_state=0, max_bin=64)
    depthwise = make(task, grow_policy="depthwise", **params).fit(X, y, weight)
    lossguide = make(task, grow_policy="lossguide", max_leaves=2 ** max_depth,
                     **params).fit(X, y, weight)
    np.testing.assert_array_equal(predictions(lossguide, X),
                                  predictions(depthwise, X))
    for a, b in zip(trees_of(lossguide), trees_of(depthwise)):
        assert a.n_leaves == b.n_leaves
        np.testing.assert_array_equal(np.sort(a.value[a.is_leaf]),
                                      np.sort(b.value[b.is_leaf]))


# --------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------

@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_n_jobs_give_bit_identical_models(grow_policy):
    # large enough that nodes span several tasks (16384 rows) and the split
    # scan of a level (nodes x 20 features x 256 bins) is shared by threads
    rng = np.random.default_rng(6)
    n_rows, n_features = 40_000, 20
    X = rng.normal(size=(n_rows, n_features))
    X[:, :5] = np.round(X[:, :5] * 3)  # ties
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(size=n_rows)
    X[rng.random(X.shape) < 0.05] = np.nan
    weight = rng.uniform(0.5, 2.0, n_rows)
    models = [BoostRegressor(tree_method="hist", grow_policy=grow_policy,
                             max_leaves=48 if grow_policy == "lossguide" else 0,
                             max_depth=6, n_estimators=4, subsample=0.7,
                             colsample_bynode=0.8, random_state=3,
                             n_jobs=n_jobs).fit(X, y, weight)
              for n_jobs in (1, 2)]
    for a, b in zip(trees_of(models[0]), trees_of(models[1])):
        for field in ("feature", "threshold", "default_left", "value",
                      "gain", "cover", "left_child", "right_child"):
            np.testing.assert_array_equal(getattr(a, field),
                                          getattr(b, field), err_msg=field)
    np.testing.assert_array_equal(models[0].predict(X), models[1].predict(X))


# --------------------------------------------------------------------------
# Training loss never increases
# --------------------------------------------------------------------------

LOSS_SETTINGS = [
    dict(),
    dict(learning_rate=1.0, reg_lambda=0.0, min_child_weight=0.0),
    dict(reg_alpha=2.0, max_delta_step=0.2),
    dict(gamma=1.0, reg_lambda=10.0, grow_policy="lossguide", max_leaves=9),
]


@pytest.mark.parametrize("params", LOSS_SETTINGS)
def test_squared_error_training_loss_never_increases(params):
    """The squared error is its own second-order expansion. On a leaf with
    sums G, H every row moves by v = -lr T_alpha(G) / (H + lambda) (clipped
    by max_delta_step: |v| only shrinks), with the sign of -G, so the leaf's
    loss changes by G v + 1/2 H v^2 <= -|G| |v| (1 - lr/2) <= 0. Without row
    subsampling every row of positive weight is in the tree's sums."""
    X, y, weight = continuous_data(10, missing=0.1)
    weight[::7] = 0.0
    n_estimators = 15
    model = make("regression", tree_method="hist", n_estimators=n_estimators,
                 max_bin=32, **{"learning_rate": 0.3, **params}).fit(X, y,
                                                                     weight)
    losses = [np.average((model.predict(X, iteration_range=(0, k)) - y) ** 2,
                         weights=weight) for k in range(1, n_estimators + 1)]
    base = np.average((model.get_booster().base_margin[0] - y) ** 2,
                      weights=weight)
    losses = np.array([base] + losses)
    assert np.all(np.diff(losses) <= 1e-12 * losses[:-1])
    assert losses[-1] < losses[0]


def test_logistic_training_loss_never_increases_where_guaranteed():
    """The logistic loss has curvature <= 1/4, so on a leaf with sums G, H
    (weighted) and total weight N, moving every row by v (sign of -G,
    |v| <= lr |G| / (H + lambda)) changes the loss by at most
    G v + N v^2 / 8 <= -|G| |v| (1 - lr N / (8 (H + lambda))). The loss cannot
    increase when lr N <= 8 (H + lambda) on every leaf, which is checked
    here from the trees' covers (H) and the rows' leaves (N)."""
    X, y, weight = continuous_data(11, task="classification", missing=0.1)
    lr, reg_lambda, n_estimators = 0.3, 1.0, 15
    model = make("classification", tree_method="hist", max_bin=64,
                 learning_rate=lr, reg_lambda=reg_lambda, max_depth=4,
                 n_estimators=n_estimators).fit(X, y, weight)
    leaves = model.apply(X)
    for k, tree in enumerate(trees_of(model)):
        N = np.bincount(leaves[:, k], weights=weight, minlength=tree.n_nodes)
        leaf = tree.is_leaf
        assert np.all(lr * N[leaf] <= 8 * (tree.cover[leaf] + reg_lambda))

    def loss(k):
        p = model.predict_proba(X, iteration_range=(0, k))[:, 1]
        return -np.average(y * np.log(p) + (1 - y) * np.log(1 - p),
                           weights=weight)

    losses = np.array([loss(k) for k in range(1, n_estimators + 1)])
    assert np.all(np.diff(losses) <= 1e-12 * losses[:-1])
    assert losses[-1] < losses[0]


# --------------------------------------------------------------------------
# Accuracy next to XGBoost's hist method on real data
# --------------------------------------------------------------------------

@pytest.mark.parametrize("task", ["binary", "regression"])
def test_accuracy_matches_xgboost_hist(task):
    xgboost = pytest.importorskip("xgboost")
    X_train, y_train = load_tsv(f"{task}.train")
    X_test, y_test = load_tsv(f"{task}.test")
    params = dict(n_estimators=100, max_depth=6, learning_rate=0.1,
                  max_bin=256, tree_method="hist", n_jobs=1)
    if task == "binary":
        ours = BoostClassifier(**params).fit(X_train, y_train)
        theirs = xgboost.XGBClassifier(**params).fit(X_train, y_train)

        def metric(model):
            p = np.clip(model.predict_proba(X_test)[:, 1], 1e-15, 1 - 1e-15)
            return -np.mean(y_test * np.log(p) + (1 - y_test) * np.log(1 - p))
    else:
        ours = BoostRegressor(**params).fit(X_train, y_train)
        theirs = xgboost.XGBRegressor(**params).fit(X_train, y_train)

        def metric(model):
            return np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))

    ours_score, theirs_score = metric(ours), metric(theirs)
    assert abs(ours_score - theirs_score) <= 0.01 * theirs_score, (
        ours_score, theirs_score)


def test_histogram_pool_keeps_rows_when_it_grows():
    from skboost.tree.finders import HistogramPool
    pool = HistogramPool(n_bins=3, capacity=2)
    first = pool.take(2)
    pool.array[first] = [[[1, 2]] * 3, [[3, 4]] * 3]
    more = pool.take(3)                      # doubles twice: 8 rows
    assert pool.array.shape == (8, 3, 2)
    assert len(set(first) | set(more)) == 5  # all distinct
    np.testing.assert_array_equal(pool.array[first[0]], [[1, 2]] * 3)
    np.testing.assert_array_equal(pool.array[first[1]], [[3, 4]] * 3)
    pool.give_back(first)
    assert set(pool.take(2)) == set(first)   # given-back rows are reused
    pool.clear()
    assert len(pool.take(8)) == 8 and pool.array.shape[0] == 8


def test_histogram_pool_over_given_memory():
    """A pool over a given array (a shared outbox) writes its rows there;
    when full it grows into memory of its own, its rows kept; an array of
    another shape or dtype is refused."""
    from skboost.tree.finders import HistogramPool
    given = np.zeros((2, 3, 2), dtype=np.int64)
    pool = HistogramPool(n_bins=3, capacity=2, array=given)
    rows = pool.take(2)
    pool.array[rows[0]] = 5
    assert pool.array is given and (given[rows[0]] == 5).all()
    pool.take(1)                              # full: grows, copies
    assert pool.array is not given and pool.array.shape == (4, 3, 2)
    assert (pool.array[rows[0]] == 5).all()
    for bad in (np.zeros((2, 4, 2), dtype=np.int64),
                np.zeros((2, 3, 2), dtype=np.float64),
                np.zeros((3, 3, 2), dtype=np.int64)):
        with pytest.raises(ValueError, match="array must be int64"):
            HistogramPool(n_bins=3, capacity=2, array=bad)


@pytest.mark.parametrize("max_depth", [1, 3, 6])
def test_depthwise_needs_half_a_level_of_histograms(max_depth, monkeypatch):
    # the larger child reuses its parent's histogram row: growing full trees
    # to max_depth never needs more than the pool's 2**(max_depth - 1) rows
    from skboost.tree.finders import HistogramPool
    grown = []
    original = HistogramPool._grow

    def recording_grow(pool):
        grown.append(pool.array.shape[0])
        original(pool)
    monkeypatch.setattr(HistogramPool, "_grow", recording_grow)
    X, y, _ = continuous_data(0, n_rows=20_000, missing=0.0)
    model = make("regression", max_depth=max_depth, n_estimators=3,
                 min_child_weight=0.0).fit(X, y)
    assert trees_of(model)[0].n_leaves == 2 ** max_depth  # full trees
    assert grown == []
