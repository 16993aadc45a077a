"""pandas input: column names, reordering, dtypes (numpy, nullable,
pyarrow), labels from a Series.

Oracle: the same model trained on a plain float ndarray built independently
of pandas (NaN where the frame has a missing value); training is
deterministic, so the two must agree bit for bit.
"""

import tracemalloc

import numpy as np
import pytest

from skboost import BoostClassifier, BoostRegressor

pd = pytest.importorskip("pandas")

N = 300


def _raw(seed=0):
    """Column values and missing masks, as plain numpy arrays."""
    rng = np.random.default_rng(seed)
    cols = {
        "float64": rng.normal(size=N),
        "float32": rng.normal(size=N).astype(np.float32),
        "int8": rng.integers(-5, 5, size=N).astype(np.int8),
        "uint16": rng.integers(0, 1000, size=N).astype(np.uint16),
        "bool": rng.random(N) < 0.4,
        "Int64": rng.integers(0, 50, size=N),
        "Float64": rng.normal(size=N),
        "boolean": rng.random(N) < 0.5,
    }
    masks = {name: (rng.random(N) < 0.15 if name[0].isupper() or name == "boolean"
                    else np.zeros(N, bool)) for name in cols}
    return cols, masks


def _frame(cols, masks):
    data = {}
    for name, values in cols.items():
        if name in ("Int64", "Float64", "boolean"):
            data[name] = pd.array(values, dtype=name)
            data[name][masks[name]] = pd.NA
        else:
            data[name] = values
    return pd.DataFrame(data)


def _matrix(cols, masks):
    """Oracle input: float64 matrix, NaN where missing."""
    X = np.column_stack([np.asarray(v, dtype=np.float64) for v in cols.values()])
    X[np.column_stack(list(masks.values()))] = np.nan
    return X


def _target(X):
    Z = np.nan_to_num(X)
    return Z[:, 0] + 0.3 * Z[:, 5] - Z[:, 6] + Z[:, 7]


def test_mixed_dtypes_train_the_same_model_as_the_ndarray():
    cols, masks = _raw()
    frame, X = _frame(cols, masks), _matrix(cols, masks)
    assert {str(t) for t in frame.dtypes} >= {"Int64", "Float64", "boolean", "int8"}
    y = _target(X)
    a = BoostRegressor(n_estimators=5, tree_method="exact").fit(frame, y)
    b = BoostRegressor(n_estimators=5, tree_method="exact").fit(X, y)
    np.testing.assert_array_equal(a.predict(frame), b.predict(X))
    np.testing.assert_array_equal(a.apply(frame), b.apply(X))
    assert list(a.feature_names_in_) == list(cols)
    assert not hasattr(b, "feature_names_in_")


def test_pyarrow_backed_columns():
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(1)
    ints = rng.integers(0, 9, size=N)
    floats = rng.normal(size=N).astype(np.float32)
    bools = rng.random(N) < 0.5
    mask = rng.random(N) < 0.2
    frame = pd.DataFrame({
        "i": pd.array(pa.array(ints, mask=mask), dtype=pd.ArrowDtype(pa.int64())),
        "f": pd.array(pa.array(floats, mask=mask[::-1]),
                      dtype=pd.ArrowDtype(pa.float32())),
        "b": pd.array(pa.array(bools, mask=mask), dtype=pd.ArrowDtype(pa.bool_())),
    })
    X = np.column_stack([ints, floats, bools]).astype(np.float64)
    X[mask, 0] = X[mask[::-1], 1] = X[mask, 2] = np.nan
    y = np.nan_to_num(X) @ np.array([1.0, -2.0, 0.5])
    a = BoostRegressor(n_estimators=4).fit(frame, y)
    b = BoostRegressor(n_estimators=4).fit(X, y)
    np.testing.assert_array_equal(a.predict(frame), b.predict(X))


def _nullable_column(kind, values, mask):
    if kind in ("Int64", "boolean"):
        column = pd.array(values, dtype=kind)
        column[mask] = pd.NA
        return column
    pa = pytest.importorskip("pyarrow")
    array = pa.array(values, mask=mask)
    return pd.array(array, dtype=pd.ArrowDtype(array.type))


@pytest.mark.parametrize("kind", ["Int64", "boolean", "int64[pyarrow]",
                                  "bool[pyarrow]"])
def test_nullable_columns_are_not_copied_to_object(kind):
    """Converting 200,000 x 4 nullable values takes about the float32
    result's memory; an object array would take twice that for its pointers
    alone (plus an object per value)."""
    n, d = 200_000, 4
    rng = np.random.default_rng(0)
    mask = np.zeros(n, dtype=bool)
    mask[::7] = True
    values = (rng.integers(0, 100, n) if kind.startswith("Int") or kind.startswith("int")
              else rng.random(n) < 0.5)
    frame = pd.DataFrame({f"c{j}": _nullable_column(kind, values, mask)
                          for j in range(d)})
    assert str(frame.dtypes.iloc[0]) == kind
    reg = BoostRegressor(n_estimators=1, max_depth=1).fit(frame.iloc[:50], np.arange(50.0))
    from skboost._input.arrays import check_X

    tracemalloc.start()
    try:
        X = check_X(reg, frame, reset=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.dtype == np.float32 and X.flags.c_contiguous
    assert np.isnan(X[::7]).all() and not np.isnan(X[1:7]).any()
    np.testing.assert_array_equal(X[1:7, 0], values[1:7].astype(np.float32))
    assert peak < 1.5 * X.nbytes


def test_columns_are_matched_by_name():
    cols, masks = _raw()
    frame = _frame(cols, masks)
    X = _matrix(cols, masks)
    clf = BoostClassifier(n_estimators=4).fit(frame, _target(X) > 0)
    shuffled = frame[list(frame.columns[::-1])]
    for method in ("predict", "predict_proba", "decision_function", "apply"):
        expected = getattr(clf, method)(frame)
        np.testing.assert_array_equal(getattr(clf, method)(shuffled), expected)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.assign(extra=1.0), "unseen at fit time:\n- extra"),
    (lambda f: f.drop(columns=["Int64", "bool"]),
     "yet now missing:\n- Int64\n- bool"),
    (lambda f: f.rename(columns={"int8": "int_8"}), "- int_8"),
])
def test_missing_or_extra_columns_are_named(change, message):
    cols, masks = _raw()
    frame = _frame(cols, masks)
    reg = BoostRegressor(n_estimators=2).fit(frame, _target(_matrix(cols, masks)))
    for method in (reg.predict, reg.apply, reg.score):
        args = (change(frame),) if method != reg.score else (change(frame), np.zeros(N))
        with pytest.raises(ValueError, match=message.replace("\n", "\\n")):
            method(*args)


@pytest.mark.parametrize("bad", [
    pd.Series(["a", "b", "c"] * (N // 3), dtype=object),
    pd.Series(["a", "b", "c"] * (N // 3), dtype="string"),
    pd.Series(pd.date_range("2020-01-01", periods=N)),
    pd.Series(pd.timedelta_range("1D", periods=N)),
    pd.Series(np.arange(N) + 1j),
], ids=["object", "string", "datetime", "timedelta", "complex"])
def test_non_numeric_columns_are_named(bad):
    frame = pd.DataFrame({"ok": np.arange(N, dtype=float), "city": bad})
    with pytest.raises(ValueError, match="column 'city'"):
        BoostRegressor(n_estimators=2).fit(frame, np.arange(N, dtype=float))
    fitted = BoostRegressor(n_estimators=2).fit(
        frame[["ok"]].assign(city=0.0), np.arange(N, dtype=float))
    with pytest.raises(ValueError, match="column 'city'"):
        fitted.predict(frame)


def test_category_column_is_a_categorical_feature():
    """A category column trains as a categorical feature (see
    test_categorical.py); where training had a numeric column, it is
    named at predict."""
    city = pd.Series(["a", "b", "c"] * (N // 3), dtype="category")
    frame = pd.DataFrame({"ok": np.arange(N, dtype=float), "city": city})
    model = BoostRegressor(n_estimators=2).fit(frame, np.arange(N, dtype=float))
    assert list(model.categories_) == ["city"]
    fitted = BoostRegressor(n_estimators=2).fit(
        frame[["ok"]].assign(city=0.0), np.arange(N, dtype=float))
    with pytest.raises(ValueError, match="column 'city'"):
        fitted.predict(frame)


def test_all_bad_columns_are_named_at_once():
    frame = pd.DataFrame({"a": ["x"] * 10, "b": np.ones(10), "c": ["y"] * 10})
    with pytest.raises(ValueError, match="columns 'a' \\(.*\\), 'c' \\(.*\\) are"):
        BoostRegressor().fit(frame, np.ones(10))


def test_series_labels_with_any_index_round_trip():
    cols, masks = _raw()
    frame, X = _frame(cols, masks), _matrix(cols, masks)
    labels = np.array(["cat", "dog", "emu"])[np.digitize(_target(X), [-0.5, 0.5])]
    index = pd.Index([f"row{i}" for i in range(N)][::-1])
    y = pd.Series(labels, index=index, dtype="string")
    frame.index = np.arange(N) * 3 + 7  # unrelated to y's index: no alignment
    clf = BoostClassifier(n_estimators=4).fit(frame, y)
    ref = BoostClassifier(n_estimators=4).fit(X, labels)
    assert list(clf.classes_) == ["cat", "dog", "emu"]
    predicted = clf.predict(frame)
    np.testing.assert_array_equal(predicted, ref.predict(X))
    assert set(predicted) <= {"cat", "dog", "emu"} and all(
        isinstance(p, str) for p in predicted)
    np.testing.assert_array_equal(clf.predict_proba(frame), ref.predict_proba(X))


def test_categorical_and_nullable_int_labels():
    cols, masks = _raw()
    frame, X = _frame(cols, masks), _matrix(cols, masks)
    codes = np.digitize(_target(X), [-0.5, 0.5])
    y_int = pd.Series(pd.array(codes + 10, dtype="Int64"))
    clf = BoostClassifier(n_estimators=3).fit(frame, y_int)
    np.testing.assert_array_equal(clf.classes_, [10, 11, 12])
    ref = BoostClassifier(n_estimators=3).fit(X, codes + 10)
    np.testing.assert_array_equal(clf.predict(frame), ref.predict(X))


def test_integer_column_names_give_no_feature_names():
    X = np.random.default_rng(0).normal(size=(50, 3))
    reg = BoostRegressor(n_estimators=2).fit(pd.DataFrame(X), X[:, 0])
    assert not hasattr(reg, "feature_names_in_")
    np.testing.assert_array_equal(reg.predict(pd.DataFrame(X)), reg.predict(X))


def test_missing_marker_and_infinity_in_frames():
    frame = pd.DataFrame({"a": pd.array([1, -1, 3, 4] * 20, dtype="Int64"),
                          "b": np.linspace(0, 1, 80)})
    X = frame.to_numpy(dtype=float)
    y = np.arange(80.0)
    a = BoostRegressor(n_estimators=3, missing=-1).fit(frame, y)
    Xn = X.copy()
    Xn[Xn == -1] = np.nan
    b = BoostRegressor(n_estimators=3).fit(Xn, y)
    np.testing.assert_array_equal(a.predict(frame), b.predict(Xn))
    with pytest.raises(ValueError, match="infinity"):
        BoostRegressor().fit(frame.assign(b=np.inf), y)
    with pytest.raises(ValueError, match="0 sample"):
        BoostRegressor().fit(frame.iloc[:0], y[:0])


def test_eval_set_frames_are_matched_by_name():
    cols, masks = _raw()
    frame, X = _frame(cols, masks), _matrix(cols, masks)
    y = _target(X)
    train, valid = slice(0, 200), slice(200, None)
    shuffled = frame.iloc[valid][list(frame.columns[::-1])]
    a = BoostRegressor(n_estimators=4).fit(frame.iloc[train], y[train],
                                           eval_set=[(shuffled, y[valid])])
    b = BoostRegressor(n_estimators=4).fit(X[train], y[train],
                                           eval_set=[(X[valid], y[valid])])
    assert a.evals_result_["validation_0"] == b.evals_result_["validation_0"]
    with pytest.raises(ValueError, match="unseen at fit time:\n- extra"):
        BoostRegressor(n_estimators=2).fit(
            frame.iloc[train], y[train],
            eval_set=[(frame.iloc[valid].assign(extra=1), y[valid])])
