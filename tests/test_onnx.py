"""ONNX export (skboost.onnx): onnxruntime's outputs against skboost's own
predictions, for every estimator and objective, both tree operators, and
pipelines converted by skl2onnx."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("skl2onnx")
ort = pytest.importorskip("onnxruntime")

from _export_cases import (CLASSIFICATION_OBJECTIVES,  # noqa: E402
                           MULTILABEL_OBJECTIVES, REGRESSION_OBJECTIVES,
                           default_directions_hit, fit_classifier,
                           fit_multilabel, fit_ranker, fit_regressor,
                           make_categorical_data, make_data)

from skboost import BoostClassifier, BoostRegressor  # noqa: E402
from skboost.onnx import to_onnx  # noqa: E402

# ai.onnx.ml opset 3 (TreeEnsembleRegressor) and 5 (TreeEnsemble)
OPSETS = {"ml3": {"": 17, "ai.onnx.ml": 3}, "ml5": {"": 21, "ai.onnx.ml": 5}}
TOL = dict(rtol=1e-5, atol=1e-5)   # float32 arithmetic in onnxruntime


def run(model, X, **inputs):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    feeds = {"X": X} if X is not None else {}
    return session.run(None, {**feeds, **inputs})


def tree_op(model):
    ops = {node.op_type for node in model.graph.node}
    return ops & {"TreeEnsemble", "TreeEnsembleRegressor"}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("objective", REGRESSION_OBJECTIVES)
def test_regressor_matches_predict(objective, opset):
    model, X = fit_regressor(objective)
    onnx_model = to_onnx(model, X, target_opset=OPSETS[opset])
    assert tree_op(onnx_model) == ({"TreeEnsemble"} if opset == "ml5"
                                   else {"TreeEnsembleRegressor"})
    (out,) = run(onnx_model, X)
    expected = model.predict(X)
    np.testing.assert_allclose(out, expected.reshape(X.shape[0], -1), **TOL)


def test_test_rows_take_both_default_directions():
    model, X = fit_regressor("reg:squarederror")
    assert default_directions_hit(model, X) == {0, 1}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("objective", CLASSIFICATION_OBJECTIVES)
def test_classifier_matches_predict_proba(objective, opset):
    labels = (["no", "yes"] if objective.startswith("binary")
              else ["ant", "bee", "cat", "dog"])
    model, X = fit_classifier(objective, labels)
    label, proba = run(to_onnx(model, X, target_opset=OPSETS[opset],
                               options={"zipmap": False}), X)
    np.testing.assert_allclose(proba, model.predict_proba(X), **TOL)
    np.testing.assert_array_equal(label, model.predict(X))
    assert label.dtype == object   # string labels stay strings


@pytest.mark.parametrize("labels", [[3, 7, 11], [False, True], [0.0, 1.0]])
def test_classifier_numeric_labels_are_int64(labels):
    model, X = fit_classifier("multi:softprob" if len(labels) > 2
                              else "binary:logistic", labels)
    label, proba = run(to_onnx(model, X, options={"zipmap": False}), X)
    assert label.dtype == np.int64
    np.testing.assert_array_equal(label, model.predict(X).astype(np.int64))
    np.testing.assert_allclose(proba, model.predict_proba(X), **TOL)


def test_classifier_zipmap_by_default():
    model, X = fit_classifier("multi:softprob", ["a", "b", "c"])
    onnx_model = to_onnx(model, X)
    assert [o.name for o in onnx_model.graph.output] == [
        "output_label", "output_probability"]
    label, maps = run(onnx_model, X[:10])
    proba = model.predict_proba(X[:10])
    np.testing.assert_array_equal(label, model.predict(X[:10]))
    for row, probabilities in zip(proba, maps):
        assert list(probabilities) == ["a", "b", "c"]
        np.testing.assert_allclose(list(probabilities.values()), row, **TOL)


@pytest.mark.parametrize("strategy", ["one_output_per_tree",
                                      "multi_output_tree"])
@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("objective", MULTILABEL_OBJECTIVES)
def test_multilabel_classifier(objective, opset, strategy):
    """A classifier fitted on a 2-D y: labels (N, n_labels) int64 as
    predict gives them and probabilities as predict_proba, with or without
    the zipmap option (no ZipMap for multi-label, as skl2onnx for
    scikit-learn's); vector-leaf trees too (oracle: the fitted model)."""
    model, X = fit_multilabel(objective, multi_strategy=strategy)
    for options in (None, {"zipmap": False}):
        onnx_model = to_onnx(model, X, target_opset=OPSETS[opset],
                             options=options)
        assert [o.name for o in onnx_model.graph.output] == [
            "label", "probabilities"]
        label, proba = run(onnx_model, X)
        assert label.dtype == np.int64 and label.shape == (X.shape[0], 3)
        np.testing.assert_allclose(proba, model.predict_proba(X), **TOL)
        margins = model.decision_function(X)
        clear = np.abs(margins) > 1e-5   # float32 margins agree on sign
        assert clear.mean() > 0.9
        np.testing.assert_array_equal(label[clear], model.predict(X)[clear])


def test_multilabel_classifier_in_a_pipeline():
    """skl2onnx.to_onnx(pipeline) with skl2onnx's defaults, as for
    scikit-learn's multi-label MLPClassifier: no ZipMap, (N, n_labels)
    labels and probabilities (oracle: the fitted pipeline)."""
    import skl2onnx
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    model, X = fit_multilabel("binary:logistic")
    Y = model.predict(X)
    pipeline = make_pipeline(SimpleImputer(), BoostClassifier(
        **model.get_params())).fit(X, Y)
    label, proba = run(skl2onnx.to_onnx(pipeline, X[:1]), X)
    np.testing.assert_allclose(proba, pipeline.predict_proba(X), **TOL)
    margins = pipeline.decision_function(X)
    clear = np.abs(margins) > 1e-5
    np.testing.assert_array_equal(label[clear], pipeline.predict(X)[clear])


@pytest.mark.parametrize("opset", OPSETS)
def test_ranker_scores(opset):
    model, X = fit_ranker()
    (out,) = run(to_onnx(model, X, target_opset=OPSETS[opset]), X)
    np.testing.assert_allclose(out[:, 0], model.predict(X), **TOL)


@pytest.mark.parametrize("opset", OPSETS)
def test_early_stopped_model_exports_best_rounds(opset):
    X, score, _ = make_data(1)
    model = BoostRegressor(n_estimators=200, learning_rate=0.5,
                           early_stopping_rounds=3).fit(X, score)
    best = model.best_iteration
    assert best + 1 < model.booster_.n_rounds    # trees after the best
    onnx_model = to_onnx(model, X, target_opset=OPSETS[opset])
    attributes = {a.name: a for node in onnx_model.graph.node
                  for a in node.attribute}
    n_trees = (len(attributes["tree_roots"].ints) if opset == "ml5"
               else len(set(attributes["nodes_treeids"].ints)))
    assert n_trees == best + 1
    (out,) = run(onnx_model, X)
    np.testing.assert_allclose(out[:, 0], model.predict(X), **TOL)


@pytest.mark.parametrize("opset", OPSETS)
def test_single_leaf_trees(opset):
    X, score, _ = make_data(2)
    model = BoostRegressor(n_estimators=3, gamma=1e9).fit(X, score)
    assert all(t.n_nodes == 1 for t in model.booster_.trees)
    (out,) = run(to_onnx(model, X, target_opset=OPSETS[opset]), X)
    np.testing.assert_allclose(out[:, 0], model.predict(X), **TOL)


@pytest.mark.parametrize("opset", OPSETS)
def test_missing_marker(opset):
    X, score, _ = make_data(3)
    X = np.where(np.isnan(X), np.float32(-999.0), X)
    model = BoostRegressor(n_estimators=20, missing=-999.0).fit(X, score)
    (out,) = run(to_onnx(model, X, target_opset=OPSETS[opset]), X)
    np.testing.assert_allclose(out[:, 0], model.predict(X), **TOL)


def test_categorical_member_splits():
    X, y, X_test = make_categorical_data()
    model = BoostRegressor(n_estimators=30, categorical_features=[5],
                           max_cat_to_onehot=1).fit(X, y)
    onnx_model = to_onnx(model, X)   # needs ai.onnx.ml 5: chosen for it
    modes = [node for node in onnx_model.graph.node
             if node.op_type == "TreeEnsemble"]
    assert modes, "set-membership splits need TreeEnsemble"
    (out,) = run(onnx_model, X_test)
    np.testing.assert_allclose(out[:, 0], model.predict(X_test), **TOL)


def test_categorical_partition_needs_opset_5():
    X, y, _ = make_categorical_data()
    model = BoostRegressor(n_estimators=10, categorical_features=[5],
                           max_cat_to_onehot=1).fit(X, y)
    with pytest.raises(ValueError, match="'f5'.*ai.onnx.ml opset 5"):
        to_onnx(model, X, target_opset=OPSETS["ml3"])


def test_categorical_one_category_splits_in_opset_3():
    """A split with one category opposite to its default side is a
    BRANCH_EQ test, which every ai.onnx.ml opset has."""
    X, y, X_test = make_categorical_data(values=[0, 1])
    model = BoostRegressor(n_estimators=10, categorical_features=[5]).fit(
        X, y)
    assert any(t.has_categorical_splits for t in model.booster_.trees)
    (out,) = run(to_onnx(model, X, target_opset=OPSETS["ml3"]), X_test)
    np.testing.assert_allclose(out[:, 0], model.predict(X_test), **TOL)


def test_pandas_string_categories_raise():
    pd = pytest.importorskip("pandas")
    X, y, _ = make_categorical_data(values=[0, 1, 2])
    frame = pd.DataFrame(X[:, :-1], columns=list("abcde"))
    frame["colour"] = pd.Categorical(
        np.array(["red", "green", "blue"])[np.nan_to_num(X[:, -1]).astype(int)])
    model = BoostRegressor(n_estimators=5).fit(frame, y)
    with pytest.raises(ValueError, match="'colour'.*non-numeric"):
        to_onnx(model, frame)


def test_callable_objective_raises():
    X, score, _ = make_data()

    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    model = BoostRegressor(n_estimators=3, objective=squared).fit(X, score)
    with pytest.raises(ValueError, match="callable objective"):
        to_onnx(model, X)


def test_bad_arguments():
    model, X = fit_regressor("reg:squarederror")
    with pytest.raises(ValueError, match="X_sample"):
        to_onnx(model, X[:, :2])
    with pytest.raises(ValueError, match="options"):
        to_onnx(model, X, options={"nocl": True})
    with pytest.raises(TypeError, match="BoostClassifier"):
        to_onnx(object(), X)


# ------------------------------------------------------------ pipelines


def test_column_transformer_pipeline_with_string_labels():
    pd = pytest.importorskip("pandas")
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    X, score, rng = make_data(4)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "c": rng.choice(["x", "y", "z", "w"], X.shape[0])})
    y = np.where(frame["c"].isin(["x", "z"]) ^ (score > 0), "yes", "no")
    columns = ColumnTransformer([("num", SimpleImputer(), ["a"]),
                                 ("pass", "passthrough", ["b"]),
                                 ("cat", OrdinalEncoder(), ["c"])])
    pipeline = make_pipeline(columns, BoostClassifier(
        n_estimators=20, categorical_features=[2])).fit(frame, y)
    onnx_model = skl2onnx.to_onnx(
        pipeline, initial_types=[("a", FloatTensorType([None, 1])),
                                 ("b", FloatTensorType([None, 1])),
                                 ("c", StringTensorType([None, 1]))],
        options={BoostClassifier: {"zipmap": False}})
    label, proba = run(onnx_model, None,
                       a=frame[["a"]].to_numpy(np.float32),
                       b=frame[["b"]].to_numpy(np.float32),
                       c=frame[["c"]].to_numpy().astype(str))
    np.testing.assert_array_equal(label, pipeline.predict(frame))
    np.testing.assert_allclose(proba, pipeline.predict_proba(frame), **TOL)


@pytest.mark.parametrize("objective", ["count:poisson",
                                       "reg:quantileerror"])
def test_regressor_pipeline(objective):
    import skl2onnx
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    model, X = fit_regressor(objective)
    X_train, score, _ = make_data()
    pipeline = make_pipeline(SimpleImputer(),
                             BoostRegressor(**model.get_params())).fit(
        X_train, score if objective != "count:poisson"
        else np.round(np.exp(score / 3)))
    (out,) = run(skl2onnx.to_onnx(pipeline, X[:5]), X)
    np.testing.assert_allclose(out, pipeline.predict(X).reshape(
        X.shape[0], -1), **TOL)


def test_pipeline_with_set_splits_names_the_feature():
    import skl2onnx
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    X, y, _ = make_categorical_data()
    pipeline = make_pipeline(FunctionTransformer(), BoostRegressor(
        n_estimators=5, categorical_features=[5],
        max_cat_to_onehot=1)).fit(X, y)
    with pytest.raises(ValueError, match="'f5'"):
        skl2onnx.to_onnx(pipeline, X[:5])


@pytest.mark.parametrize("labels", [[3, 7], ["ant", "bee", "cat"]])
def test_pipeline_with_skl2onnx_defaults(labels):
    """skl2onnx.to_onnx(pipeline, X) with no options (its classifier path
    asks for the option 'nocl'): ZipMap'ed probabilities of every class, as
    predict_proba (oracle: the fitted pipeline; an imputer before it, whose
    float32 arithmetic in ONNX is exact, unlike a scaler's)."""
    import skl2onnx
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    X, score, _ = make_data()
    y = np.asarray(labels)[np.digitize(score, np.quantile(
        score, np.linspace(0, 1, len(labels) + 1)[1:-1]))]
    pipeline = make_pipeline(SimpleImputer(), BoostClassifier(
        n_estimators=10)).fit(X, y)
    label, maps = run(skl2onnx.to_onnx(pipeline, X[:1]), X[:20])
    np.testing.assert_array_equal(label, pipeline.predict(X[:20]))
    for row, probabilities in zip(pipeline.predict_proba(X[:20]), maps):
        assert list(probabilities) == labels
        np.testing.assert_allclose(list(probabilities.values()), row, **TOL)


def test_pipeline_nocl_gives_class_indices():
    """skl2onnx's option nocl=True: labels and ZipMap keys are the class
    indices (oracle: predict's labels looked up in classes_)."""
    import skl2onnx
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    model, X = fit_classifier("multi:softprob", ["a", "b", "c"])
    pipeline = make_pipeline(SimpleImputer(), BoostClassifier(
        **model.get_params())).fit(X, model.predict(X))
    label, maps = run(skl2onnx.to_onnx(
        pipeline, X[:1], options={BoostClassifier: {"nocl": True}}), X[:20])
    np.testing.assert_array_equal(label, np.searchsorted(
        pipeline.classes_, pipeline.predict(X[:20])))
    assert list(maps[0]) == [0, 1, 2]
