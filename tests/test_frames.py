"""polars DataFrames and pyarrow Tables as X.

Oracle: the same data as a pandas DataFrame (whose conversion the other
tests check against numpy): the same model, the same predictions, the same
feature names and categories; nulls are NaN.
"""

import numpy as np
import pandas as pd
import pytest

from skboost import BoostClassifier, BoostRegressor

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def pandas_frame(seed=0, n=300):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "size": rng.normal(size=n),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n),
                                 categories=["red", "green", "blue"]),
        "count": pd.array(rng.integers(0, 5, n), dtype="Int64"),
        "flag": rng.random(n) > 0.5,
    })
    frame.loc[::7, "size"] = np.nan
    frame.loc[::5, "count"] = pd.NA
    frame.loc[::11, "colour"] = np.nan
    y = (np.where(frame["colour"] == "green", 1.0, 0.0)
         + np.nan_to_num(frame["size"].to_numpy()) + rng.normal(size=n) * 0.1)
    return frame, y


def as_polars(frame):
    out = pl.from_pandas(frame)
    # an Enum keeps the pandas category list and its order
    return out.with_columns(pl.col("colour").cast(
        pl.Enum(list(frame["colour"].cat.categories))))


def as_arrow(frame):
    return pa.Table.from_pandas(frame, preserve_index=False)


CONVERTERS = {"polars": as_polars, "arrow": as_arrow}


@pytest.mark.parametrize("library", CONVERTERS)
@pytest.mark.parametrize("method", ["hist", "exact"])
def test_same_model_as_pandas(library, method):
    frame, y = pandas_frame()
    other = CONVERTERS[library](frame)
    reference = BoostRegressor(n_estimators=8, tree_method=method).fit(frame, y)
    model = BoostRegressor(n_estimators=8, tree_method=method).fit(other, y)
    np.testing.assert_array_equal(model.predict(other), reference.predict(frame))
    assert list(model.feature_names_in_) == list(frame.columns)
    np.testing.assert_array_equal(model.categories_["colour"],
                                  reference.categories_["colour"])
    # a model fitted on one library predicts frames of the others
    np.testing.assert_array_equal(reference.predict(other),
                                  reference.predict(frame))
    np.testing.assert_array_equal(model.predict(frame), reference.predict(frame))


def test_polars_categorical_and_nulls():
    """A polars Categorical's categories are its sorted distinct values;
    nulls in every kind of column are missing values."""
    frame, y = pandas_frame(1)
    polars_frame = pl.from_pandas(frame)  # colour: Categorical
    assert polars_frame.schema["colour"] == pl.Categorical
    model = BoostRegressor(n_estimators=5).fit(polars_frame, y)
    np.testing.assert_array_equal(model.categories_["colour"],
                                  ["blue", "green", "red"])
    sorted_frame = frame.assign(colour=frame["colour"].cat.reorder_categories(
        ["blue", "green", "red"]))
    reference = BoostRegressor(n_estimators=5).fit(sorted_frame, y)
    np.testing.assert_array_equal(model.predict(polars_frame),
                                  reference.predict(sorted_frame))


def test_columns_in_another_order_and_unseen_categories():
    frame, y = pandas_frame(2)
    table = as_arrow(frame)
    model = BoostRegressor(n_estimators=5).fit(table, y)
    shuffled = table.select(["flag", "count", "colour", "size"])
    np.testing.assert_array_equal(model.predict(shuffled), model.predict(table))
    # an unseen category is missing: as a null
    unseen = as_polars(frame.head(20).assign(colour=pd.Categorical(
        ["purple"] * 20)))
    nulls = as_polars(frame.head(20).assign(colour=pd.Categorical(
        [None] * 20, categories=["red"])))
    polars_model = BoostRegressor(n_estimators=5).fit(as_polars(frame), y)
    np.testing.assert_array_equal(polars_model.predict(unseen),
                                  polars_model.predict(nulls))


def test_unsupported_columns_are_named():
    frame = pl.DataFrame({"x": [1.0, 2.0, 3.0], "name": ["a", "b", "c"]})
    with pytest.raises(ValueError, match="'name'.*not numeric"):
        BoostRegressor(n_estimators=1).fit(frame, [1.0, 2.0, 3.0])
    table = pa.table({"x": [1.0, 2.0], "when": pa.array([1, 2],
                                                         pa.timestamp("s"))})
    with pytest.raises(ValueError, match="'when'.*not numeric"):
        BoostRegressor(n_estimators=1).fit(table, [1.0, 2.0])


def test_categorical_kind_must_match_training():
    frame, y = pandas_frame(3)
    model = BoostRegressor(n_estimators=2).fit(as_polars(frame), y)
    numeric = as_polars(frame).with_columns(pl.col("colour").to_physical()
                                            .cast(pl.Float64))
    with pytest.raises(ValueError, match="'colour' was categorical"):
        model.predict(numeric)
    with pytest.raises(ValueError, match="feature names"):
        model.predict(as_polars(frame).rename({"size": "length"}))


def test_no_pandas_copy(monkeypatch):
    """Neither frame goes through a pandas DataFrame (no DataFrame is
    built while fitting and predicting)."""
    def refuse(*args, **kwargs):
        raise AssertionError("converted to pandas")
    frame, y = pandas_frame(4)
    polars_frame, table = as_polars(frame), as_arrow(frame)
    monkeypatch.setattr(pl.DataFrame, "to_pandas", refuse)
    monkeypatch.setattr(pd.DataFrame, "__init__", refuse)
    for X in (polars_frame, table):
        BoostClassifier(n_estimators=2).fit(X, y > 0).predict_proba(X)


def test_set_output_polars_pipeline():
    """A ColumnTransformer with set_output(transform="polars") hands a
    polars frame to the estimator, with the transformer's column names."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    frame, y = pandas_frame(5)
    numeric = frame[["size", "flag"]].astype(float)
    pipe = make_pipeline(
        ColumnTransformer([("scale", StandardScaler(), ["size"])],
                          remainder="passthrough"),
        BoostRegressor(n_estimators=4)).set_output(transform="polars")
    pipe.fit(numeric, y)
    assert list(pipe[-1].feature_names_in_) == ["scale__size",
                                                "remainder__flag"]
    expected = BoostRegressor(n_estimators=4).fit(
        pipe[0].transform(numeric).to_pandas(), y)
    np.testing.assert_array_equal(pipe.predict(numeric),
                                  expected.predict(
                                      pipe[0].transform(numeric).to_pandas()))
