"""The serving fast path (issue 39): a C-contiguous float32/float64 ndarray
or a DataFrame of the training float columns, read in place; a few rows
walked in the calling thread (``PackedForest.predict_raw_small``).

Oracles: the naive Python walk over each tree's node arrays (the sums are
taken in tree order, so equal bit for bit); the full path of the same call
(X given as a list of lists, which the fast path never takes, converted
and checked by ``check_X``); the full path's own error messages; XGBoost's
``inplace_predict`` for the shapes of its signature.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from skboost import BoostClassifier, BoostRegressor
from skboost._input.arrays import serving_rows
from test_predictor import naive_forest, naive_leaf, packed, random_forest


def _data(n_rows=300, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X, rng


def _models():
    X, rng = _data()
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1])
    y_bin = (signal > 0).astype(int)
    y_multi = np.digitize(signal, [-0.5, 0.5])
    y_two = np.column_stack([signal, np.nan_to_num(X[:, 2])])
    common = dict(n_estimators=12, max_depth=4, n_jobs=2)
    X_cat = X.copy()
    X_cat[:, 3] = rng.integers(0, 6, X.shape[0])
    return {
        "binary": (BoostClassifier(**common).fit(X, y_bin), X),
        "multiclass": (BoostClassifier(**common).fit(X, y_multi), X),
        "regressor": (BoostRegressor(**common).fit(X, signal), X),
        "multi_output": (BoostRegressor(
            multi_strategy="multi_output_tree", **common).fit(X, y_two), X),
        "categorical": (BoostClassifier(
            categorical_features=[3], **common).fit(X_cat, y_bin), X_cat),
    }


MODELS = _models()


def _naive_margins(model, X):
    """Base margin plus every tree's leaf value in tree order, by the
    naive walk."""
    booster = model.get_booster()
    trees, groups = booster.scalar_trees()
    X32 = X.astype(np.float32)
    raw = np.tile(booster.base_margin, (X.shape[0], 1))
    for tree, group in zip(trees, groups):
        for r in range(X.shape[0]):
            raw[r, group] += tree.value[naive_leaf(tree, X32[r])]
    return raw


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("n_rows", [1, 3, 8, 17, 200])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_path_equals_the_full_path(kind, n_rows, dtype):
    model, X = MODELS[kind]
    rows = np.ascontiguousarray(X[:n_rows], dtype=dtype)
    assert serving_rows(model, rows) is not None   # the fast path applies
    full = rows.tolist()                            # the full path
    np.testing.assert_array_equal(model.predict(rows), model.predict(full))
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(model.predict_proba(rows),
                                      model.predict_proba(full))
        np.testing.assert_array_equal(model.decision_function(rows),
                                      model.decision_function(full))
    booster = model.get_booster()
    np.testing.assert_array_equal(booster.predict(rows), booster.predict(full))


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regressor",
                                  "multi_output"])
@pytest.mark.parametrize("n_rows", [1, 5, 9, 300])
def test_fast_path_margins_equal_the_naive_walk(kind, n_rows):
    model, X = MODELS[kind]
    rows = np.ascontiguousarray(X[:n_rows], dtype=np.float64)
    booster = model.get_booster()
    raw = booster.serving_margins(rows)
    np.testing.assert_array_equal(raw, _naive_margins(model, rows))
    margin = booster.predict(rows, output_margin=True)
    np.testing.assert_array_equal(margin.reshape(raw.shape), raw)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_one_row_dataframe_takes_the_fast_path():
    X, _ = _data()
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    model = BoostClassifier(n_estimators=8, max_depth=3).fit(frame, y)
    one = frame.iloc[[4]]
    assert serving_rows(model, one) is not None
    np.testing.assert_array_equal(model.predict_proba(one),
                                  model.predict_proba(X[4:5].tolist()))
    # columns in another order: the full path reorders them by name
    shuffled = one[one.columns[::-1]]
    assert serving_rows(model, shuffled) is None
    np.testing.assert_array_equal(model.predict_proba(shuffled),
                                  model.predict_proba(one))


# ------------------------------------------------- the errors of today


def _message(call, *args):
    with pytest.raises((ValueError, TypeError)) as info:
        call(*args)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("method", ["predict", "predict_proba",
                                    "decision_function"])
def test_wrong_feature_count_raises_on_the_fast_path(method):
    model, X = MODELS["binary"]
    short = np.ascontiguousarray(X[:1, :-1])
    fast = _message(getattr(model, method), short)
    assert fast == _message(getattr(model, method), short.tolist())
    assert "features" in fast[1]
    with pytest.raises(ValueError, match="features"):
        model.get_booster().inplace_predict(short)


@pytest.mark.parametrize("value,dtype", [
    (np.inf, np.float32), (-np.inf, np.float32), (np.inf, np.float64),
    (-np.inf, np.float64), (1e39, np.float64)])   # 1e39: inf as float32
def test_infinity_raises_on_the_fast_path(value, dtype):
    model, X = MODELS["binary"]
    rows = np.array(X[:3], dtype=dtype, order="C")   # a copy
    rows[1, 2] = value
    assert serving_rows(model, rows) is not None
    for call in (model.predict_proba, model.get_booster().predict,
                 model.get_booster().inplace_predict):
        with pytest.raises(ValueError, match="[Ii]nfinity"):
            call(rows)
    # and in a batch (the parallel walk after the float32 conversion)
    big = np.repeat(rows, 2000, axis=0)
    with pytest.raises(ValueError, match="[Ii]nfinity"):
        model.predict_proba(big)


def test_feature_names_are_checked_on_the_fast_path():
    X, _ = _data()
    names = [f"c{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    model = BoostClassifier(n_estimators=4, max_depth=3).fit(frame, y)
    renamed = frame.iloc[[0]].rename(columns={"c1": "other"})
    with pytest.raises(ValueError, match="other"):
        model.predict_proba(renamed)
    with pytest.warns(UserWarning, match="feature names"):
        model.predict_proba(np.ascontiguousarray(X[:1]))
    text = frame.iloc[[0]].astype({"c2": object})
    text["c2"] = "a"
    with pytest.raises(ValueError, match="c2"):
        model.predict_proba(text)
    categories = frame.iloc[[0]].astype({"c2": "category"})
    assert serving_rows(model, categories) is None
    with pytest.raises(ValueError, match="c2"):
        model.predict_proba(categories)
    integers = frame.iloc[[0]].fillna(0).astype({"c2": np.int64})
    assert serving_rows(model, integers) is None


@pytest.mark.parametrize("column", [0, 3])   # numeric, categorical
def test_too_large_value_raises_with_categorical_features(column):
    model, X = MODELS["categorical"]
    rows = np.array(X[:2], dtype=np.float64, order="C")
    rows[0, column] = 1e39
    with pytest.raises(ValueError, match="[Ii]nfinity"):
        model.predict_proba(rows)


def test_unfitted_estimator_raises_not_fitted():
    with pytest.raises(NotFittedError):
        BoostClassifier().predict_proba(np.zeros((1, 3), np.float32))


def test_missing_marker_leaves_the_fast_path():
    X, _ = _data()
    marked = np.where(np.isnan(X), np.float32(-999.0), X)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    plain = BoostClassifier(n_estimators=6, max_depth=3).fit(X, y)
    with_marker = BoostClassifier(n_estimators=6, max_depth=3,
                                  missing=-999.0).fit(marked, y)
    assert serving_rows(with_marker, marked[:2]) is None
    np.testing.assert_array_equal(with_marker.predict_proba(marked[:2]),
                                  plain.predict_proba(X[:2]))


def test_unbound_booster_checks_its_input():
    model, X = MODELS["binary"]
    booster = model.get_booster()
    booster.bind_input(None)
    try:
        rows = np.ascontiguousarray(X[:2])
        np.testing.assert_array_equal(booster.predict(rows),
                                      model.predict_proba(rows)[:, 1])
        with pytest.raises(ValueError, match="features"):
            booster.predict(np.ascontiguousarray(X[:2, :-1]))
        bad = rows.astype(np.float64)
        bad[0, 0] = np.inf
        with pytest.raises(ValueError, match="[Ii]nfinity"):
            booster.inplace_predict(bad)
    finally:
        model.get_booster()   # binds it again


# ------------------------------------------------------ inplace_predict


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regressor"])
def test_inplace_predict_equals_predict(kind):
    model, X = MODELS[kind]
    booster = model.get_booster()
    for rows in (np.ascontiguousarray(X[:1]), X[:50].tolist()):
        np.testing.assert_array_equal(booster.inplace_predict(rows),
                                      booster.predict(rows))
        np.testing.assert_array_equal(
            booster.inplace_predict(rows, predict_type="margin"),
            booster.predict(rows, output_margin=True))
        np.testing.assert_array_equal(
            booster.inplace_predict(rows, iteration_range=(0, 5)),
            booster.predict(rows, iteration_range=(0, 5)))


def test_inplace_predict_base_margin_and_missing():
    model, X = MODELS["binary"]
    booster = model.get_booster()
    rows = np.ascontiguousarray(X[:7])
    start = np.linspace(-1, 1, 7)
    np.testing.assert_array_equal(
        booster.inplace_predict(rows, predict_type="margin",
                                base_margin=start),
        model.decision_function(rows, base_margin=start))
    marked = np.where(np.isnan(rows), np.float32(-5.0), rows)
    np.testing.assert_array_equal(booster.inplace_predict(marked, missing=-5),
                                  booster.inplace_predict(rows))
    with pytest.raises(ValueError, match="predict_type"):
        booster.inplace_predict(rows, predict_type="leaf")


def test_inplace_predict_validate_features_false_takes_columns_by_position():
    X, _ = _data()
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    booster = BoostClassifier(n_estimators=4, max_depth=3).fit(
        frame, y).get_booster()
    other = frame.iloc[:3].set_axis([f"x{i}" for i in range(X.shape[1])],
                                    axis=1)
    with pytest.raises(ValueError):
        booster.inplace_predict(other)
    np.testing.assert_array_equal(
        booster.inplace_predict(other, validate_features=False),
        booster.inplace_predict(frame.iloc[:3]))


@pytest.mark.parametrize("objective,n_classes", [("binary:logistic", 2),
                                                 ("multi:softprob", 3),
                                                 ("reg:squarederror", 0)])
def test_inplace_predict_shapes_follow_xgboost(objective, n_classes):
    xgboost = pytest.importorskip("xgboost")
    X, rng = _data(n_rows=120)
    y = (rng.integers(0, n_classes, X.shape[0]) if n_classes
         else rng.normal(size=X.shape[0]))
    ours = (BoostClassifier if n_classes else BoostRegressor)(
        n_estimators=3, max_depth=2, objective=objective).fit(X, y)
    theirs = (xgboost.XGBClassifier if n_classes else xgboost.XGBRegressor)(
        n_estimators=3, max_depth=2, objective=objective).fit(X, y)
    rows = np.ascontiguousarray(X[:4])
    for kwargs in ({}, {"strict_shape": True}, {"predict_type": "margin"},
                   {"predict_type": "margin", "strict_shape": True}):
        assert (ours.get_booster().inplace_predict(rows, **kwargs).shape
                == theirs.get_booster().inplace_predict(rows, **kwargs).shape)


# ------------------------------------------------------------- the kernel


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n_rows", [1, 2, 7, 8, 9, 23])
def test_predict_raw_small_matches_the_naive_walk(seed, n_rows):
    X, trees, tree_group, n_groups, rng = random_forest(seed, n_rows=n_rows)
    forest = packed(trees, tree_group, X.shape[1], n_groups)
    base = rng.normal(size=n_groups)
    expected = np.tile(base, (n_rows, 1))   # summed from the base, in order
    for tree, group in zip(trees, tree_group):
        for r in range(n_rows):
            expected[r, group] += tree.value[naive_leaf(tree, X[r])]
    for rows in (X, X.astype(np.float64)):
        out = forest.predict_raw_small(rows, base, 0, len(trees))
        np.testing.assert_array_equal(out, expected)
    # the parallel walk: the same sums at 1 and 2 threads
    for n_threads in (1, 2):
        out = np.tile(base, (n_rows, 1))
        forest.predict_raw(X, out, 0, len(trees), n_threads)
        np.testing.assert_array_equal(out, expected)


def test_predict_raw_small_reads_float64_as_its_float32():
    """A float64 value between two float32s walks as the float32 the
    conversion of X gives (round to nearest), not as the double."""
    X, trees, tree_group, n_groups, rng = random_forest(3, n_rows=40)
    forest = packed(trees, tree_group, X.shape[1], n_groups)
    wiggled = X.astype(np.float64) * (1 + 1e-9 * rng.normal(size=X.shape))
    raw, _ = naive_forest(wiggled.astype(np.float32), trees, tree_group,
                          n_groups)
    out = forest.predict_raw_small(wiggled, np.zeros(n_groups), 0, len(trees))
    np.testing.assert_array_equal(out, raw)


def test_predict_raw_small_checks_its_arguments():
    X, trees, tree_group, n_groups, _ = random_forest(1, n_rows=4)
    forest = packed(trees, tree_group, X.shape[1], n_groups)
    base = np.zeros(n_groups)
    with pytest.raises(ValueError, match="columns"):
        forest.predict_raw_small(np.zeros((2, X.shape[1] + 1), np.float32),
                                 base, 0, len(trees))
    with pytest.raises(ValueError, match="tree range"):
        forest.predict_raw_small(X, base, 0, len(trees) + 1)
    with pytest.raises(ValueError, match="base_margin"):
        forest.predict_raw_small(X, np.zeros(n_groups + 1), 0, len(trees))
    with pytest.raises(TypeError):
        forest.predict_raw_small(X.astype(np.int64), base, 0, len(trees))
    with pytest.raises(ValueError):   # not C-contiguous
        forest.predict_raw_small(np.asfortranarray(
            np.zeros((3, max(X.shape[1], 2)), np.float32))[:, :X.shape[1]],
            base, 0, len(trees))
    bad = X.copy()
    bad[0, 0] = np.inf
    assert forest.predict_raw_small(bad, base, 0, len(trees)) is None


def test_results_do_not_depend_on_threads():
    model, X = MODELS["multiclass"]
    rows = np.repeat(np.ascontiguousarray(X), 30, axis=0)   # 9,000 rows
    one = model.set_params(n_jobs=1).predict_proba(rows)
    two = model.set_params(n_jobs=2).predict_proba(rows)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one[:5], model.predict_proba(rows[:5]))


def test_no_warning_on_the_fast_path():
    model, X = MODELS["binary"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.predict_proba(np.ascontiguousarray(X[:1]))
