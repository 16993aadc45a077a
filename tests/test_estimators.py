"""Estimator behaviour (skboost/_estimators.py, skboost/_data.py): labels,
output shapes and links, missing values, input validation and its errors."""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils._param_validation import InvalidParameterError

from skboost import BoostClassifier, BoostRegressor
from skboost._estimators.classifier import _classes_and_encoder


def _data(seed=0, n=300, d=5, missing_fraction=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    signal = X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] + rng.normal(scale=0.3, size=n)
    if missing_fraction:
        X[rng.random((n, d)) < missing_fraction] = np.nan
    return X, signal


def _clf(**params):
    params.setdefault("n_estimators", 5)
    params.setdefault("n_jobs", 1)
    return BoostClassifier(**params)


def _reg(**params):
    params.setdefault("n_estimators", 5)
    params.setdefault("n_jobs", 1)
    return BoostRegressor(**params)


def _sigmoid(m):
    return 1.0 / (1.0 + np.exp(-m))


def _softmax(m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------


def test_string_labels_round_trip():
    X, signal = _data()
    y = np.where(signal > 0, "spam", "ham")
    clf = _clf().fit(X, y)
    np.testing.assert_array_equal(clf.classes_, ["ham", "spam"])
    assert clf.n_classes_ == 2
    pred = clf.predict(X)
    assert pred.dtype.kind == "U"
    assert set(pred) <= {"ham", "spam"}
    assert np.mean(pred == y) > 0.85
    # same model as with the integer codes of classes_
    codes = (y == "spam").astype(int)
    ref = _clf().fit(X, codes)
    np.testing.assert_array_equal(clf.predict_proba(X), ref.predict_proba(X))
    np.testing.assert_array_equal(pred, clf.classes_[ref.predict(X)])


def test_labels_that_are_not_0_1_round_trip():
    X, signal = _data(1)
    y = np.where(signal > 0, 7, -3)
    clf = _clf().fit(X, y)
    np.testing.assert_array_equal(clf.classes_, [-3, 7])
    assert set(clf.predict(X)) <= {-3, 7}
    # predict_proba columns follow classes_: column 1 is P(7)
    proba = clf.predict_proba(X)
    assert np.mean((proba[:, 1] > 0.5) == (y == 7)) > 0.85


@pytest.mark.parametrize("n_classes", [3, 5])
def test_more_than_two_classes_switch_to_softprob(n_classes):
    X, signal = _data(2)
    names = np.array(["a", "b", "c", "d", "e"])[:n_classes]
    cuts = np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
    y = names[np.digitize(signal, cuts)]
    clf = _clf(n_estimators=4).fit(X, y)  # objective left at binary:logistic
    assert clf.get_params()["objective"] == "binary:logistic"  # not modified
    assert clf.booster_.objective == "multi:softprob"
    np.testing.assert_array_equal(clf.classes_, names)
    assert len(clf.booster_.trees) == 4 * n_classes
    assert clf.predict_proba(X).shape == (X.shape[0], n_classes)
    assert clf.decision_function(X).shape == (X.shape[0], n_classes)
    assert set(clf.predict(X)) <= set(names)
    assert np.mean(clf.predict(X) == y) > 1.0 / n_classes + 0.2


def test_explicit_softprob_with_two_classes():
    X, signal = _data(3)
    y = (signal > 0).astype(int)
    clf = _clf(objective="multi:softprob").fit(X, y)
    assert clf.booster_.objective == "multi:softprob"
    assert clf.predict(X, output_margin=True).shape == (X.shape[0],)
    # two softmax margins per row; scikit-learn's binary decision_function
    # is 1-D: their difference, the log-odds of classes_[1]
    raw = clf.get_booster().predict_raw(
        np.ascontiguousarray(X, dtype=np.float32))
    assert raw.shape == (X.shape[0], 2)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba, _softmax(raw), rtol=1e-12)
    np.testing.assert_allclose(clf.decision_function(X), raw[:, 1] - raw[:, 0],
                               rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), np.argmax(proba, axis=1))


def test_single_class_is_an_error():
    X, _ = _data()
    with pytest.raises(ValueError, match="class"):
        _clf().fit(X, np.full(X.shape[0], "only"))


def test_continuous_labels_for_classifier_are_an_error():
    X, signal = _data()
    with pytest.raises(ValueError, match="[Uu]nknown label type|continuous"):
        _clf().fit(X, signal)


def _sklearn_label_outcome(y):
    """What scikit-learn's checks and LabelEncoder make of labels y: the
    classes, the class indices (float64) and the warnings, or the error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_classification_targets(y)
            encoder = LabelEncoder().fit(y)
            out = (encoder.classes_, encoder.transform(y).astype(np.float64))
        except ValueError as exc:
            out = (type(exc), str(exc))
    return out, [str(w.message) for w in caught]


def _skboost_label_outcome(y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            classes, encode = _classes_and_encoder(y, np.zeros((len(y), 1)))
            out = (classes, encode())
        except ValueError as exc:
            out = (type(exc), str(exc))
    return out, [str(w.message) for w in caught]


_rng = np.random.default_rng(0)
LABELS = {
    "int binary": _rng.integers(0, 2, 500),
    "negative ints": _rng.integers(-3, 3, 500),
    "uint8": _rng.integers(0, 7, 500).astype(np.uint8),
    # integer labels counted rather than sorted (_unique_labels): offsets
    # wider than the labels' type, 64-bit extremes, and a range too wide
    # to count
    "int8 spanning the type": _rng.integers(-128, 128, 900).astype(np.int8),
    "int64 near the minimum": np.iinfo(np.int64).min + _rng.integers(0, 5, 90),
    "uint64 near the maximum": (np.iinfo(np.uint64).max
                                - _rng.integers(0, 5, 90).astype(np.uint64)),
    "int64 too wide to count": _rng.integers(0, 5, 90) * 10**12 - 7,
    "bool": _rng.random(500) < 0.3,
    "integral floats": _rng.integers(0, 4, 500) * 2.0 - 1.0,
    "float32": _rng.integers(0, 3, 500).astype(np.float32),
    "continuous": _rng.normal(size=500),
    "nan": np.where(_rng.random(500) < 0.1, np.nan, 1.0),
    "inf": np.where(_rng.random(500) < 0.1, np.inf, 0.0),
    "more classes than half the rows": np.arange(40) % 30,
    "as many classes as a third": np.arange(60) % 20,
    "strings": np.array(["b", "a", "c"])[_rng.integers(0, 3, 500)],
}


@pytest.mark.parametrize("y", list(LABELS.values()), ids=list(LABELS))
def test_classes_and_indices_as_scikit_learn_makes_them(y):
    """One pass for numeric labels (a count for integers of a small
    range, np.unique otherwise): the classes, indices,
    warnings and errors of check_classification_targets and LabelEncoder
    (the warning about more classes than half the rows counted on the rows,
    not on the distinct labels)."""
    (expected, expected_warnings) = _sklearn_label_outcome(y)
    (got, got_warnings) = _skboost_label_outcome(y)
    assert got_warnings == expected_warnings
    if isinstance(expected[0], type):
        assert got == expected
        return
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[0].dtype == expected[0].dtype
    np.testing.assert_array_equal(got[1], expected[1])
    assert got[1].dtype == np.float64


# --------------------------------------------------------------------------
# Outputs: probabilities, margins, labels, leaves
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def binary_model():
    X, signal = _data(4, missing_fraction=0.1)
    return _clf(n_estimators=6).fit(X, signal > 0.2), X


@pytest.fixture(scope="module")
def multi_model():
    X, signal = _data(5, missing_fraction=0.1)
    y = np.digitize(signal, [-0.5, 0.5, 1.5])
    return _clf(n_estimators=6).fit(X, y), X


def test_binary_proba_is_sigmoid_of_margin(binary_model):
    clf, X = binary_model
    margin = clf.decision_function(X)
    assert margin.shape == (X.shape[0],)
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(proba[:, 1], _sigmoid(margin), rtol=1e-12, atol=1e-15)
    assert np.all((proba >= 0) & (proba <= 1))
    assert np.std(margin) > 0.1  # not a constant model


def test_multi_proba_is_softmax_of_margin(multi_model):
    clf, X = multi_model
    margin = clf.decision_function(X)
    assert margin.shape == (X.shape[0], 4)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(proba, _softmax(margin), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("model", ["binary_model", "multi_model"])
def test_predict_is_argmax_of_proba(model, request):
    clf, X = request.getfixturevalue(model)
    np.testing.assert_array_equal(
        clf.predict(X), clf.classes_[np.argmax(clf.predict_proba(X), axis=1)])


@pytest.mark.parametrize("model", ["binary_model", "multi_model"])
def test_output_margin_is_decision_function(model, request):
    clf, X = request.getfixturevalue(model)
    np.testing.assert_array_equal(clf.predict(X, output_margin=True),
                                  clf.decision_function(X))
    np.testing.assert_array_equal(
        clf.predict(X, output_margin=True, iteration_range=(1, 3)),
        clf.decision_function(X, iteration_range=(1, 3)))


def test_regressor_output_margin_is_prediction():
    X, signal = _data(6)
    reg = _reg().fit(X, signal)
    pred = reg.predict(X)
    assert pred.shape == (X.shape[0],)
    np.testing.assert_array_equal(reg.predict(X, output_margin=True), pred)
    # the model learned something: better than the mean
    assert np.mean((pred - signal) ** 2) < 0.5 * np.var(signal)


@pytest.mark.parametrize("model", ["binary_model", "multi_model"])
def test_apply_shape_and_leaves(model, request):
    clf, X = request.getfixturevalue(model)
    booster = clf.booster_
    n_outputs = 1 if clf.n_classes_ == 2 else clf.n_classes_
    leaves = clf.apply(X)
    assert leaves.shape == (X.shape[0], 6 * n_outputs)
    assert np.issubdtype(leaves.dtype, np.integer)
    for t, tree in enumerate(booster.trees):
        assert np.all(leaves[:, t] >= 0) and np.all(leaves[:, t] < tree.n_nodes)
        assert np.all(tree.left_child[leaves[:, t]] == -1)
        assert np.all(tree.right_child[leaves[:, t]] == -1)
    # the leaf values add up to the margin
    margin = np.tile(booster.base_margin, (X.shape[0], 1))
    for t, tree in enumerate(booster.trees):
        margin[:, t % n_outputs] += tree.value[leaves[:, t]]
    np.testing.assert_allclose(
        margin, clf.decision_function(X).reshape(X.shape[0], -1), rtol=0, atol=1e-10)


def test_apply_regressor_shape():
    X, signal = _data(7)
    reg = _reg(n_estimators=3).fit(X, signal)
    assert reg.apply(X).shape == (X.shape[0], 3)
    assert reg.apply(X[:1]).shape == (1, 3)


def test_get_booster_is_booster():
    X, signal = _data()
    reg = _reg().fit(X, signal)
    assert reg.get_booster() is reg.booster_


# --------------------------------------------------------------------------
# Missing values
# --------------------------------------------------------------------------


def _nan_stump_data(nan_like_high, seed=0, n=400):
    """Feature 0 decides y: y=0 for x<0, y=10 for x>=0; rows where x0 is
    missing get the label of one side. Feature 1 is noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = np.where(X[:, 0] < 0, 0.0, 10.0)
    missing = rng.random(n) < 0.2
    X[missing, 0] = np.nan
    y[missing] = 10.0 if nan_like_high else 0.0
    return X, y, missing


@pytest.mark.parametrize("nan_like_high", [True, False])
def test_nan_at_predict_follows_learned_default_direction(nan_like_high):
    X, y, missing = _nan_stump_data(nan_like_high)
    reg = _reg(n_estimators=1, max_depth=1, learning_rate=1.0, reg_lambda=0.0,
               base_score=0.0).fit(X, y)
    tree = reg.booster_.trees[0]
    assert tree.feature[0] == 0
    assert -0.1 < tree.threshold[0] < 0.1
    # the missing rows went to the side whose label they share: the cover
    # (sum of hessians = row count for squared error) says so
    left, right = tree.left_child[0], tree.right_child[0]
    n_low = np.count_nonzero(X[~missing, 0] < tree.threshold[0])
    n_missing = np.count_nonzero(missing)
    if nan_like_high:
        assert tree.default_left[0] == 0
        assert tree.cover[left] == n_low
        assert tree.cover[right] == X.shape[0] - n_low
    else:
        assert tree.default_left[0] == 1
        assert tree.cover[left] == n_low + n_missing
    # an unseen row with NaN lands where the NaN rows went
    X_new = np.array([[np.nan, 0.3], [-0.5, 0.3], [0.5, 0.3]])
    pred = reg.predict(X_new)
    expected_side = 2 if nan_like_high else 1
    assert pred[0] == pred[expected_side]
    assert pred[0] != pred[3 - expected_side]
    np.testing.assert_allclose(pred[0], 10.0 if nan_like_high else 0.0)
    # apply agrees
    leaves = reg.apply(X_new)[:, 0]
    assert leaves[0] == leaves[expected_side] != leaves[3 - expected_side]


@pytest.mark.parametrize("nan_like_high", [True, False])
def test_nan_default_direction_classifier(nan_like_high):
    X, y, _ = _nan_stump_data(nan_like_high, seed=1)
    clf = _clf(n_estimators=3, max_depth=1).fit(X, y > 5)
    proba = clf.predict_proba(np.array([[np.nan, 0.0], [-0.5, 0.0], [0.5, 0.0]]))
    expected_side = 2 if nan_like_high else 1
    np.testing.assert_array_equal(proba[0], proba[expected_side])
    assert (proba[0, 1] > 0.5) == nan_like_high


@pytest.mark.parametrize("estimator", [_reg, _clf], ids=["reg", "clf"])
def test_missing_marker_is_the_same_as_nan(estimator):
    X, signal = _data(8, missing_fraction=0.15)
    y = signal if estimator is _reg else signal > 0
    X_marker = np.where(np.isnan(X), -999.0, X)
    with_nan = estimator(max_depth=3).fit(X, y)
    with_marker = estimator(max_depth=3, missing=-999.0).fit(X_marker, y)
    for a, b in zip(with_nan.booster_.trees, with_marker.booster_.trees):
        for field in ("feature", "threshold", "default_left", "value"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(with_nan.predict(X), with_marker.predict(X_marker))
    # at predict time too: the marker model reads NaN as missing as well
    np.testing.assert_array_equal(with_marker.predict(X), with_marker.predict(X_marker))
    # guard: without the marker, -999 is an ordinary (very small) value
    plain = estimator(max_depth=3).fit(X_marker, y)
    assert not all(np.array_equal(a.default_left, b.default_left)
                   and np.array_equal(a.threshold, b.threshold)
                   for a, b in zip(plain.booster_.trees, with_nan.booster_.trees))


@pytest.mark.parametrize("marker", [np.inf, -np.inf])
def test_infinite_missing_marker(marker):
    """``missing`` accepts any real number; an infinite marker must make
    those entries missing (as in XGBoost), not be refused as bad input."""
    X, signal = _data(12, missing_fraction=0.15)
    X_marker = np.where(np.isnan(X), marker, X)
    with_nan = _reg(max_depth=3).fit(X, signal)
    with_marker = _reg(max_depth=3, missing=marker).fit(X_marker, signal)
    np.testing.assert_array_equal(with_nan.predict(X), with_marker.predict(X_marker))


def test_all_missing_feature_is_never_split_on():
    X, signal = _data(9)
    X[:, 3] = np.nan
    reg = _reg().fit(X, signal)
    for tree in reg.booster_.trees:
        assert not np.any(tree.feature == 3)
    assert np.all(np.isfinite(reg.predict(X)))


# --------------------------------------------------------------------------
# pandas
# --------------------------------------------------------------------------


def test_dataframe_sets_feature_names():
    pd = pytest.importorskip("pandas")
    X, signal = _data(10)
    columns = ["alpha", "beta", "gamma", "delta", "epsilon"]
    df = pd.DataFrame(X, columns=columns)
    reg = _reg().fit(df, signal)
    np.testing.assert_array_equal(reg.feature_names_in_, columns)
    assert reg.n_features_in_ == 5
    np.testing.assert_array_equal(reg.predict(df), _reg().fit(X, signal).predict(X))
    # columns in another order are matched by name, not silently misread
    np.testing.assert_array_equal(reg.predict(df[columns[::-1]]),
                                  reg.predict(df))
    with pytest.raises(ValueError, match="feature names"):
        reg.predict(df[columns[::-1]].rename(columns={"beta": "b"}))
    # an ndarray has no names and fitting on it leaves none
    assert not hasattr(_reg().fit(X, signal), "feature_names_in_")


def test_dataframe_with_missing_values():
    pd = pytest.importorskip("pandas")
    X, signal = _data(11, missing_fraction=0.2)
    df = pd.DataFrame(X, columns=list("abcde"))
    clf = _clf().fit(df, pd.Series(np.where(signal > 0, "yes", "no")))
    np.testing.assert_array_equal(
        clf.predict_proba(df),
        _clf().fit(X, np.where(signal > 0, "yes", "no")).predict_proba(X))


# --------------------------------------------------------------------------
# Bad input: clear errors, no crash
# --------------------------------------------------------------------------

ESTIMATORS = [_reg, _clf]
EST_IDS = ["reg", "clf"]


def _target(estimator, signal):
    return signal if estimator is _reg else (signal > 0).astype(int)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_y(estimator, bad):
    X, signal = _data()
    y = _target(estimator, signal).astype(float)
    y[5] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        estimator().fit(X, y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_X(estimator, bad):
    X, signal = _data()
    y = _target(estimator, signal)
    X_bad = X.copy()
    X_bad[3, 2] = bad
    with pytest.raises(ValueError, match="infinity"):
        estimator().fit(X_bad, y)
    model = estimator().fit(X, y)
    with pytest.raises(ValueError, match="infinity"):
        model.predict(X_bad)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
def test_float64_too_large_for_float32(estimator):
    X, signal = _data()
    y = _target(estimator, signal)
    X_big = X.copy()
    X_big[0, 0] = 1e39  # finite in float64, inf in float32
    message = r"too large for dtype\('float32'\)"
    with pytest.raises(ValueError, match=message):
        estimator().fit(X_big, y)
    model = estimator().fit(X, y)
    with pytest.raises(ValueError, match=message):
        model.predict(X_big)
    # the largest float32 itself is fine
    X_max = X.copy()
    X_max[0, 0] = np.finfo(np.float32).max
    assert np.all(np.isfinite(estimator().fit(X_max, y).predict(X_max)))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
def test_wrong_X_dimensions(estimator):
    X, signal = _data()
    y = _target(estimator, signal)
    with pytest.raises(ValueError, match="2D"):
        estimator().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="dim 3|3D|3-d|dimension"):
        estimator().fit(X.reshape(X.shape[0], 5, 1), y)
    model = estimator().fit(X, y)
    with pytest.raises(ValueError, match="2D"):
        model.predict(X[0])
    with pytest.raises(ValueError, match="dim 3|3D|3-d|dimension"):
        model.predict(X.reshape(X.shape[0], 5, 1))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
def test_zero_samples_and_zero_features(estimator):
    X, signal = _data()
    y = _target(estimator, signal)
    with pytest.raises(ValueError, match="0 sample"):
        estimator().fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="0 feature"):
        estimator().fit(X[:, :0], y)
    model = estimator().fit(X, y)
    with pytest.raises(ValueError, match="0 sample"):
        model.predict(X[:0])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
def test_inconsistent_lengths(estimator):
    X, signal = _data()
    y = _target(estimator, signal)
    with pytest.raises(ValueError, match="inconsistent|samples"):
        estimator().fit(X, y[:-1])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("method", ["predict", "apply"])
def test_predict_with_wrong_number_of_features(estimator, method):
    X, signal = _data()
    model = estimator().fit(X, _target(estimator, signal))
    for n_features in (3, 8):
        X_wrong = np.zeros((4, n_features))
        with pytest.raises(ValueError) as info:
            getattr(model, method)(X_wrong)
        message = str(info.value)
        assert re.search(rf"\b{n_features}\b", message), message
        assert re.search(r"\b5\b", message), message


def test_classifier_methods_with_wrong_number_of_features(binary_model):
    clf, X = binary_model
    for method in ("predict_proba", "decision_function"):
        with pytest.raises(ValueError, match=r"\b5\b"):
            getattr(clf, method)(X[:, :3])


BAD_PARAMS = [
    ("objective", "reg:unknown"),
    ("objective", "rank:unknown"),
    ("tree_method", "approximate"),
    ("tree_method", None),
    ("learning_rate", -0.1),
    ("learning_rate", np.inf),
    ("n_estimators", 0),
    ("n_estimators", 2.5),
    ("n_estimators", "10"),
    ("max_depth", -1),
    ("max_depth", 1.5),
    ("gamma", -1.0),
    ("min_child_weight", -1.0),
    ("max_delta_step", -0.5),
    ("subsample", 0.0),
    ("subsample", 1.5),
    ("colsample_bytree", 0.0),
    ("colsample_bylevel", -0.2),
    ("colsample_bynode", 2.0),
    ("reg_alpha", -1.0),
    ("reg_lambda", -1.0),
    ("base_score", "high"),
    ("base_score", np.inf),
    ("random_state", "seed"),
    ("missing", "NA"),
    ("n_jobs", "all"),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("name, value", BAD_PARAMS,
                         ids=[f"{n}={v!r}" for n, v in BAD_PARAMS])
def test_invalid_parameter(estimator, name, value):
    X, signal = _data(n=50)
    model = estimator().set_params(**{name: value})  # __init__ only stores
    assert model.get_params()[name] is value
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter"):
        model.fit(X, _target(estimator, signal))
    assert issubclass(InvalidParameterError, ValueError)


def test_objective_of_the_other_estimator_is_refused():
    X, signal = _data(n=50)
    with pytest.raises(InvalidParameterError, match="'objective' parameter"):
        _reg(objective="binary:logistic").fit(X, signal)
    with pytest.raises(InvalidParameterError, match="'objective' parameter"):
        _clf(objective="reg:squarederror").fit(X, signal > 0)


def test_n_jobs_zero_is_an_error():
    X, signal = _data(n=50)
    with pytest.raises(ValueError, match="n_jobs"):
        _reg(n_jobs=0).fit(X, signal)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=EST_IDS)
def test_bad_sample_weight(estimator):
    X, signal = _data()
    y = _target(estimator, signal)
    w = np.ones(X.shape[0])
    negative = w.copy()
    negative[3] = -1.0
    with pytest.raises(ValueError, match="[Nn]egative"):
        estimator().fit(X, y, sample_weight=negative)
    with pytest.raises(ValueError, match="positive sum|non-zero"):
        estimator().fit(X, y, sample_weight=np.zeros(X.shape[0]))
    nan = w.copy()
    nan[0] = np.nan
    with pytest.raises(ValueError, match="NaN|infinity"):
        estimator().fit(X, y, sample_weight=nan)
    inf = w.copy()
    inf[0] = np.inf
    with pytest.raises(ValueError, match="NaN|infinity"):
        estimator().fit(X, y, sample_weight=inf)
    with pytest.raises(ValueError, match="sample_weight|shape|samples"):
        estimator().fit(X, y, sample_weight=w[:-1])


@pytest.mark.parametrize("base_score", [0.0, 1.0, 1.5, -0.2])
def test_base_score_outside_unit_interval_for_logistic(base_score):
    X, signal = _data()
    with pytest.raises(ValueError, match="base_score"):
        _clf(base_score=base_score).fit(X, signal > 0)
    # a regressor takes any base score
    reg = _reg(base_score=base_score).fit(X, signal)
    np.testing.assert_allclose(reg.booster_.base_margin, [base_score])


def test_regressor_refuses_string_targets():
    X, _ = _data()
    with pytest.raises(ValueError):
        _reg().fit(X, np.array(["a", "b"] * 150))


NOT_FITTED = [(BoostRegressor, m) for m in ("predict", "apply", "get_booster")] + [
    (BoostClassifier, m) for m in ("predict", "apply", "get_booster",
                                   "predict_proba", "decision_function")]


@pytest.mark.parametrize("estimator, method", NOT_FITTED,
                         ids=[f"{e.__name__}.{m}" for e, m in NOT_FITTED])
def test_not_fitted(estimator, method):
    X, _ = _data(n=10)
    args = () if method == "get_booster" else (X,)
    with pytest.raises(NotFittedError):
        getattr(estimator(), method)(*args)


# What a fresh process prints after a default fit on small data (the lines
# of each test's ``after``): which modules a fit loads.
_FIT_THEN = (
    "import sys, numpy as np, skboost\n"
    "from skboost import BoostClassifier\n"
    "X = np.random.default_rng(0).normal(size=(200, 3))\n"
    "BoostClassifier(n_estimators=2).fit(X, X[:, 0] > 0)\n")


def _printed_after_a_fit(after):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-c", _FIT_THEN + after],
                          capture_output=True, text=True,
                          check=True).stdout.split("\n")


def test_in_core_fits_do_not_load_the_out_of_core_modules():
    """``import skboost`` and an in-core fit leave ExternalData's modules
    (pages, the page kernel) and the SHAP kernel unloaded (a worker of a
    parallel search imports skboost for every fit it runs), and
    ``skboost.ExternalData`` loads them when asked for."""
    out = _printed_after_a_fit(
        "lazy = ['skboost.external', 'skboost.tree.pages',\n"
        "        'skboost.tree._paged', 'skboost.tree._shap']\n"
        "print([m for m in lazy if m in sys.modules])\n"
        "print(skboost.ExternalData.__module__, 'ExternalData' in dir(skboost))\n"
        "print('skboost.tree.pages' in sys.modules)\n")
    assert out[:3] == ["[]", "skboost.external True", "True"]


def test_hist_fits_do_not_load_the_other_methods():
    """A fit with the default method (hist, dense) leaves the exact,
    local-approx, sparse and vector-leaf finders unloaded (and
    ``statistics``, which skboost does not need), and each method still
    finds its finder: ``tree_method='exact'`` loads the exact finder, and
    ``skboost.tree.finders.ExactFinder`` is the class."""
    out = _printed_after_a_fit(
        "lazy = ['skboost.tree.finders.exact', 'skboost.tree.finders.local',\n"
        "        'skboost.tree.finders.vector_hist', 'statistics']\n"
        "print([m for m in lazy if m in sys.modules])\n"
        "BoostClassifier(n_estimators=2, tree_method='exact').fit(\n"
        "    X, X[:, 0] > 0)\n"
        "print('skboost.tree.finders.exact' in sys.modules)\n"
        "from skboost.tree import finders\n"
        "from skboost.tree.finders.local import ColumnScanFinder\n"
        "print(finders.ExactFinder.__module__,\n"
        "      finders.ColumnScanFinder is ColumnScanFinder)\n")
    assert out[:3] == ["[]", "True", "skboost.tree.finders.exact True"]
