"""XGBoost's model files read by skboost (``skboost/_io/xgboost_format.py``).

The oracle is the installed XGBoost: each case trains a model with it,
saves it with ``save_model`` (JSON and UBJSON), and skboost's estimator
loaded from the file must predict what XGBoost's own model predicts on the
same rows (missing values among them): margins within 1e-6 relative,
``apply`` XGBoost's leaf ids, ``pred_contribs`` within 1e-5 (XGBoost sums in
float32), and the ONNX export of the loaded model what it predicts.
Models of XGBoost 1.7 to 2.x are the 3.x files with the entries those
versions lack taken away (only XGBoost 3.x is installed).
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from skboost import Booster, BoostClassifier, BoostRanker, BoostRegressor

xgb = pytest.importorskip("xgboost")
pd = pytest.importorskip("pandas")

N_ROWS = 400


def _features(rng, n=N_ROWS, d=5, missing=0.1):
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < missing] = np.nan
    return X


def _signal(X):
    Z = np.nan_to_num(X)
    return Z[:, 0] + np.sin(2 * Z[:, 1]) + 0.5 * Z[:, 2] * Z[:, 3]


def _regression(objective, **params):
    def fit(rng):
        X = _features(rng)
        s = _signal(X)
        y = {"count:poisson": np.round(np.exp(s / 2)),
             "reg:gamma": np.exp(s / 2), "reg:tweedie": np.exp(s / 2) * (
                 rng.random(N_ROWS) < 0.8),
             "reg:squaredlogerror": np.exp(s / 2),
             "reg:logistic": 1 / (1 + np.exp(-s))}.get(objective, s)
        model = xgb.XGBRegressor(objective=objective, **params)
        return model.fit(X, y), X
    return fit


def _classifier(objective, n_classes=2, **params):
    def fit(rng):
        X = _features(rng)
        y = np.digitize(_signal(X), np.quantile(
            _signal(X), np.linspace(0, 1, n_classes + 1)[1:-1]))
        return xgb.XGBClassifier(objective=objective, **params).fit(X, y), X
    return fit


def _ranker(objective):
    def fit(rng):
        X = _features(rng)
        y = np.digitize(_signal(X), [0] if objective == "rank:map"
                        else [-1, 0, 1])
        qid = np.repeat(np.arange(N_ROWS // 20), 20)
        model = xgb.XGBRanker(objective=objective, n_estimators=8)
        return model.fit(X, y, qid=qid), X
    return fit


def _categorical(kind, **params):
    def fit(rng):
        X = _features(rng, d=3)
        frame = pd.DataFrame(X, columns=["a", "b", "c"])
        codes = rng.integers(0, 6, N_ROWS)
        values = (np.array(list("uvwxyz"))[codes] if kind == "str"
                  else codes * 10)
        frame["k"] = pd.Categorical(values)
        frame.loc[rng.random(N_ROWS) < 0.05, "k"] = np.nan
        y = _signal(np.c_[X, X[:, :2]]) + np.isin(codes, [1, 4]) * 2.0
        model = xgb.XGBRegressor(enable_categorical=True, tree_method="hist",
                                 **params)
        return model.fit(frame, y), frame
    return fit


def _categorical_codes(rng):
    """Categories given as numbers (a feature typed "c", no DataFrame):
    XGBoost records no category values, the codes are the categories."""
    X = _features(rng)
    X[:, 2] = rng.integers(0, 7, N_ROWS)
    y = _signal(X) + np.isin(X[:, 2], [1, 5]) * 2.0
    return xgb.XGBRegressor(n_estimators=8, tree_method="hist",
                            enable_categorical=True, max_cat_to_onehot=1,
                            feature_types=["q", "q", "c", "q", "q"]).fit(
        X, y), X


def _multi_target(strategy):
    def fit(rng):
        X = _features(rng)
        Y = np.c_[_signal(X), np.nan_to_num(X[:, 4]) * 2]
        return xgb.XGBRegressor(tree_method="hist", multi_strategy=strategy,
                                n_estimators=6).fit(X, Y), X
    return fit


def _multi_label(rng):
    X = _features(rng)
    Y = np.c_[_signal(X) > 0, np.nan_to_num(X[:, 4]) > 0].astype(int)
    return xgb.XGBClassifier(tree_method="hist", n_estimators=6).fit(X, Y), X


def _forest(rng):
    X = _features(rng)
    return xgb.XGBRFRegressor(n_estimators=4, max_depth=4).fit(
        X, _signal(X)), X


def _early_stopped(rng):
    X = _features(rng)
    y = _signal(X) + rng.normal(size=N_ROWS)
    model = xgb.XGBRegressor(n_estimators=200, learning_rate=0.5,
                             early_stopping_rounds=3)
    return model.fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])],
                     verbose=False), X


def _sparse(rng):
    X = sp.random(N_ROWS, 20, density=0.2, random_state=1, format="csr",
                  dtype=np.float32)
    y = np.asarray(X[:, 0].todense()).ravel() + np.asarray(
        X[:, 1].todense()).ravel() ** 2
    return xgb.XGBRegressor(n_estimators=8).fit(X, y), X


def _pruned(rng):
    """Lossguide growth and gamma: nodes grown and pruned."""
    X = _features(rng)
    return xgb.XGBRegressor(grow_policy="lossguide", max_leaves=12,
                            max_depth=0, gamma=2.0, tree_method="hist",
                            n_estimators=8).fit(X, _signal(X)), X


def _pruned_exact(rng):
    """The exact method with gamma: pruned nodes left in the file,
    unreachable (renumbered on loading)."""
    X = _features(rng)
    return xgb.XGBRegressor(tree_method="exact", max_depth=6, gamma=5.0,
                            n_estimators=6).fit(X, _signal(X)), X


CASES = {
    "squarederror_hist": _regression("reg:squarederror", n_estimators=10),
    "squarederror_exact": _regression("reg:squarederror", tree_method="exact",
                                      n_estimators=10),
    "squarederror_approx": _regression("reg:squarederror",
                                       tree_method="approx", n_estimators=10),
    "squaredlogerror": _regression("reg:squaredlogerror", n_estimators=8),
    "pseudohuber": _regression("reg:pseudohubererror", huber_slope=0.7,
                               n_estimators=8),
    "absoluteerror": _regression("reg:absoluteerror", n_estimators=8),
    "quantile": _regression("reg:quantileerror", quantile_alpha=0.3,
                            n_estimators=8),
    "quantiles": _regression("reg:quantileerror",
                             quantile_alpha=[0.1, 0.5, 0.9], n_estimators=8),
    "reg_logistic": _regression("reg:logistic", n_estimators=8),
    "poisson": _regression("count:poisson", n_estimators=8),
    "gamma": _regression("reg:gamma", n_estimators=8),
    "tweedie": _regression("reg:tweedie", tweedie_variance_power=1.3,
                           n_estimators=8),
    "binary_logistic": _classifier("binary:logistic", n_estimators=8),
    "binary_base_score": _classifier("binary:logistic", n_estimators=8,
                                     base_score=0.3),
    "binary_logitraw": _classifier("binary:logitraw", n_estimators=8),
    "binary_hinge": _classifier("binary:hinge", n_estimators=8),
    "softprob": _classifier("multi:softprob", 4, n_estimators=6),
    "softmax": _classifier("multi:softmax", 3, n_estimators=6),
    "rank_ndcg": _ranker("rank:ndcg"),
    "rank_pairwise": _ranker("rank:pairwise"),
    "rank_map": _ranker("rank:map"),
    "categorical_str": _categorical("str", n_estimators=8),
    "categorical_onehot": _categorical("str", n_estimators=8,
                                       max_cat_to_onehot=8),
    "categorical_int": _categorical("int", n_estimators=8),
    "categorical_codes": _categorical_codes,
    "multi_target": _multi_target("one_output_per_tree"),
    "multi_target_vector": _multi_target("multi_output_tree"),
    "multi_label": _multi_label,
    "forest": _forest,
    "early_stopped": _early_stopped,
    "sparse": _sparse,
    "pruned": _pruned,
    "pruned_exact": _pruned_exact,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Every case trained once: (XGBoost model, X, its JSON and UBJSON
    files)."""
    folder = tmp_path_factory.mktemp("xgboost_models")
    out = {}
    for name, fit in CASES.items():
        model, X = fit(np.random.default_rng(sorted(CASES).index(name)))
        paths = folder / f"{name}.json", folder / f"{name}.ubj"
        for path in paths:
            model.save_model(path)
        out[name] = model, X, paths
    return out


def _loaded_class(model):
    objective = model.get_params()["objective"] or ""
    if objective.startswith(("binary:", "multi:")) or isinstance(
            model, xgb.XGBClassifier):
        return BoostClassifier
    if objective.startswith("rank:"):
        return BoostRanker
    return BoostRegressor


def _xgb_margins(model, X):
    data = xgb.DMatrix(X, enable_categorical=True)
    return model.get_booster().predict(data, output_margin=True)


def _close(got, want, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64).reshape(
        np.shape(want)), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("suffix", [0, 1], ids=["json", "ubj"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_predictions_equal_xgboost(models, name, suffix):
    model, X, paths = models[name]
    ours = _loaded_class(model).load(paths[suffix])
    every_round = (0, model.get_booster().num_boosted_rounds())
    _close(ours.get_booster().predict(X, output_margin=True,
                                      iteration_range=every_round),
           _xgb_margins(model, X))
    if name == "binary_logitraw":
        # XGBClassifier.predict_proba gives [1 - margin, margin] here (not
        # probabilities); skboost the logistic of the margin: the margins
        # above are the comparison
        return
    if isinstance(model, xgb.XGBClassifier):
        _close(ours.predict_proba(X), model.predict_proba(X))
        np.testing.assert_array_equal(ours.predict(X), model.predict(X))
    else:
        _close(ours.predict(X), model.predict(X), rtol=1e-6, atol=1e-5)


def test_enough_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_apply_and_contributions_equal_xgboost(models, name):
    model, X, paths = models[name]
    ours = _loaded_class(model).load(paths[0])
    data = xgb.DMatrix(X, enable_categorical=True)
    booster = model.get_booster()
    iteration_range = (0, booster.num_boosted_rounds())
    leaves = booster.predict(data, pred_leaf=True,
                             iteration_range=iteration_range)
    got = np.asarray(ours.apply(X, iteration_range=iteration_range))
    if name == "pruned_exact":
        # nodes renumbered: the same leaves, by their values
        trees = json.loads(booster.save_raw("json"))["learner"][
            "gradient_booster"]["model"]["trees"]
        for t, (tree, reference) in enumerate(zip(
                ours.get_booster().trees, trees)):
            np.testing.assert_array_equal(
                tree.value[got[:, t]], np.asarray(
                    reference["split_conditions"], np.float32)[
                        leaves[:, t].astype(np.int64)])
    else:
        np.testing.assert_array_equal(got.reshape(leaves.shape), leaves)
    if name in ("multi_target_vector",):
        return   # XGBoost has no SHAP values of vector-leaf trees
    theirs = booster.predict(data, pred_contribs=True,
                             iteration_range=iteration_range)
    mine = ours.get_booster().predict(X, pred_contribs=True,
                                      iteration_range=iteration_range)
    np.testing.assert_allclose(np.asarray(mine).reshape(theirs.shape),
                               theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["binary_logistic", "softprob", "poisson",
                                  "multi_target", "rank_ndcg", "forest"])
def test_onnx_export_of_a_loaded_model(models, name):
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    from skboost.onnx import to_onnx

    model, X, paths = models[name]
    ours = _loaded_class(model).load(paths[0])
    Xf = X
    onnx_model = to_onnx(ours, Xf[:1], options={"zipmap": False})
    session = ort.InferenceSession(onnx_model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"X": Xf})
    if isinstance(model, xgb.XGBClassifier):
        np.testing.assert_allclose(outputs[1], model.predict_proba(X),
                                   rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(outputs[0].reshape(-1),
                                   model.predict(X).reshape(-1),
                                   rtol=1e-5, atol=1e-5)


def test_booster_load_model_and_booster_files(models):
    model, X, paths = models["softprob"]
    booster = Booster(model_file=paths[1])
    _close(booster.predict(X, output_margin=True), _xgb_margins(model, X))
    assert booster.num_boosted_rounds() == 6
    assert booster.objective == "multi:softprob"


def test_feature_names_best_iteration_and_categories(models):
    model, X, paths = models["categorical_str"]
    ours = BoostRegressor.load(paths[0])
    assert list(ours.feature_names_in_) == ["a", "b", "c", "k"]
    assert list(ours.categories_["k"]) == list("uvwxyz")
    # categories matched by value: another order of the same categories
    shuffled = X.copy()
    shuffled["k"] = shuffled["k"].cat.reorder_categories(list("zyxwvu"))
    _close(ours.predict(shuffled), model.predict(X), atol=1e-5)
    model, X, paths = models["early_stopped"]
    ours = BoostRegressor.load(paths[0])
    assert ours.best_iteration == model.best_iteration
    _close(ours.predict(X), model.predict(X), atol=1e-5)


def test_loaded_model_saves_and_reloads_in_skboost(models, tmp_path):
    model, X, paths = models["categorical_str"]
    ours = BoostRegressor.load(paths[1])
    ours.save_model(tmp_path / "again.json")
    again = BoostRegressor.load(tmp_path / "again.json")
    np.testing.assert_array_equal(again.predict(X), ours.predict(X))


def _downgraded(path, tmp_path):
    """The file as XGBoost 1.7 wrote it: one base_score number, no
    iteration_indptr, no recorded categories, size_leaf_vector 0, no
    split_type (it has no categorical split)."""
    with open(path) as f:
        doc = json.load(f)
    learner = doc["learner"]
    doc["version"] = [1, 7, 6]
    score = learner["learner_model_param"]["base_score"]
    learner["learner_model_param"]["base_score"] = score.strip("[]")
    model = learner["gradient_booster"]["model"]
    model.pop("iteration_indptr", None)
    model.pop("cats", None)
    for tree in model["trees"]:
        tree["tree_param"]["size_leaf_vector"] = "0"
        if not any(tree["split_type"]):
            del tree["split_type"]
    out = tmp_path / "old.json"
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("name", ["binary_logistic", "squarederror_exact",
                                  "poisson", "forest"])
def test_files_of_older_xgboost(models, name, tmp_path):
    model, X, paths = models[name]
    ours = _loaded_class(model).load(_downgraded(paths[0], tmp_path))
    _close(ours.get_booster().predict(X, output_margin=True),
           _xgb_margins(model, X))
    np.testing.assert_array_equal(ours.apply(X), BoostRegressor.load(
        paths[0]).apply(X) if _loaded_class(model) is BoostRegressor
        else _loaded_class(model).load(paths[0]).apply(X))


# ------------------------------------------------------------ refusals


def _doc(path):
    with open(path) as f:
        return json.load(f)


def _write(doc, tmp_path, name="forged.json"):
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


def test_linear_models_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    model = xgb.XGBRegressor(booster="gblinear", n_estimators=3).fit(
        X, X[:, 0])
    model.save_model(tmp_path / "linear.json")
    with pytest.raises(ValueError, match="linear model.*trees only"):
        BoostRegressor.load(tmp_path / "linear.json")


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
def test_dart_models_read_with_their_weights(tmp_path, suffix):
    """XGBoost's DART model: skboost predicts what XGBoost predicts (the
    trees at XGBoost's weight_drop), and writes it back as DART."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = X[:, 0] + np.sin(2 * X[:, 1])
    model = xgb.XGBRegressor(booster="dart", rate_drop=0.3, n_estimators=12,
                             max_depth=3, random_state=0).fit(X, y)
    path = tmp_path / f"dart{suffix}"
    model.save_model(path)
    loaded = BoostRegressor.load(path)
    weights = loaded.get_booster().tree_weights
    assert len(set(weights)) > 1       # the weights were read
    _close(loaded.predict(X), model.predict(X))
    back = tmp_path / f"back{suffix}"
    loaded.save_model(back, format="xgboost")
    again = xgb.XGBRegressor()
    again.load_model(back)
    _close(again.predict(X), model.predict(X))


def test_skboost_dart_and_survival_models_load_in_xgboost(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    time = np.exp(0.5 * X[:, 0] + 0.3 * rng.normal(size=300))
    event = rng.random(300) < 0.7
    signed = np.where(event, time, -time)
    bounds = np.column_stack([time, np.where(event, time, np.inf)])
    cases = [
        ("dart", BoostRegressor(booster="dart", rate_drop=0.3,
                                n_estimators=12, random_state=0), X[:, 0]),
        ("cox", BoostRegressor(objective="survival:cox", n_estimators=8),
         signed),
        ("aft", BoostRegressor(objective="survival:aft", n_estimators=8,
                               aft_loss_distribution="logistic",
                               aft_loss_distribution_scale=0.7), bounds)]
    for name, ours, y in cases:
        ours.fit(X, y)
        path = tmp_path / f"{name}.json"
        ours.save_model(path, format="xgboost")
        theirs = xgb.Booster(model_file=str(path))
        _close(theirs.predict(xgb.DMatrix(X)), ours.predict(X),
               rtol=1e-5, atol=1e-5)
        config = json.loads(theirs.save_config())["learner"]
        if name == "aft":   # the distribution and scale went across
            param = config["objective"]["aft_loss_param"]
            assert param["aft_loss_distribution"] == "logistic"
            assert float(param["aft_loss_distribution_scale"]) == \
                pytest.approx(0.7, rel=1e-7)   # a float32 in XGBoost
        # and skboost reads XGBoost's file back to the same predictions
        again = BoostRegressor.load(path)
        _close(again.predict(X), ours.predict(X), rtol=1e-5, atol=1e-5)


def test_unknown_objective_is_refused(models, tmp_path):
    doc = _doc(models["squarederror_hist"][2][0])
    doc["learner"]["objective"]["name"] = "reg:linear"
    with pytest.raises(ValueError, match="reg:linear.*resave"):
        BoostRegressor.load(_write(doc, tmp_path))
    doc["learner"]["objective"]["name"] = "reg:something"
    with pytest.raises(ValueError, match="unknown objective 'reg:something'"):
        BoostRegressor.load(_write(doc, tmp_path))


def test_wrong_estimator_family_is_refused(models):
    with pytest.raises(ValueError, match="does not train the objective"):
        BoostRegressor.load(models["binary_logistic"][2][0])


@pytest.mark.parametrize("damage", [
    ("num_feature", "0"), ("num_class", "99999999"),
    ("base_score", "[1,2,3,4,5,6,7]"), ("base_score", "nan"),
    ("num_target", "-1")])
def test_forged_learner_parameters(models, tmp_path, damage):
    doc = _doc(models["softprob"][2][0])
    key, value = damage
    doc["learner"]["learner_model_param"][key] = value
    with pytest.raises(ValueError, match="not a valid XGBoost model file"):
        BoostClassifier.load(_write(doc, tmp_path))


@pytest.mark.parametrize("damage", [
    ("left_children", [5, -1, -1]), ("split_indices", [99, 0, 0]),
    ("left_children", [0, -1, -1]), ("num_nodes", "1000000000"),
    ("categories_sizes", [70000]), ("default_left", [2, 0, 0]),
    ("split_conditions", ["x", 0, 0]), ("sum_hessian", [1e300, 1, 1])])
def test_forged_trees(models, tmp_path, damage):
    doc = _doc(models["categorical_str"][2][0])
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    tree = trees[0]
    key, value = damage
    if key == "num_nodes":
        tree["tree_param"]["num_nodes"] = value
    else:
        n = len(tree["left_children"])
        tree[key] = value + tree[key][len(value):] if len(
            value) <= n and key != "categories_sizes" else value
    with pytest.raises(ValueError, match="not a valid XGBoost model file"):
        BoostRegressor.load(_write(doc, tmp_path))


# ================================================================ writing
#
# The oracle: XGBoost itself, loading the file skboost wrote and predicting
# (Booster(model_file=...), XGBClassifier().load_model).


def _skboost_regression(objective, **params):
    def fit(rng):
        X = _features(rng)
        s = _signal(X)
        y = {"count:poisson": np.round(np.exp(s / 2)),
             "reg:gamma": np.exp(s / 2) + 0.1,
             "reg:tweedie": np.exp(s / 2) * (rng.random(N_ROWS) < 0.8),
             "reg:logistic": 1 / (1 + np.exp(-s))}.get(objective, s)
        return BoostRegressor(objective=objective, n_estimators=6,
                              **params).fit(X, y), X
    return fit


def _skboost_classifier(objective, labels, **params):
    def fit(rng):
        X = _features(rng)
        y = np.asarray(labels)[np.digitize(_signal(X), np.quantile(
            _signal(X), np.linspace(0, 1, len(labels) + 1)[1:-1]))]
        return BoostClassifier(objective=objective, n_estimators=6,
                               **params).fit(X, y), X
    return fit


def _skboost_ranker(rng):
    X = _features(rng)
    y = np.digitize(_signal(X), [-1, 0, 1])
    return BoostRanker(n_estimators=6).fit(
        X, y, qid=np.repeat(np.arange(N_ROWS // 20), 20)), X


def _skboost_categorical(kind, method):
    def fit(rng):
        X = _features(rng, d=3)
        frame = pd.DataFrame(X, columns=["a", "b", "c"])
        codes = rng.integers(0, 7, N_ROWS)
        frame["k"] = pd.Categorical(np.array(list("pqrstuv"))[codes]
                                    if kind == "str" else codes * 10)
        y = np.nan_to_num(X[:, 0]) + np.isin(codes, [1, 4, 5]) * 2.0
        return BoostRegressor(n_estimators=6, tree_method=method,
                              max_cat_to_onehot=1).fit(frame, y), frame
    return fit


def _skboost_codes(rng):
    """A categorical feature named by index whose values are codes."""
    X = _features(rng, d=3)
    X[:, 2] = rng.integers(0, 5, N_ROWS)
    y = np.nan_to_num(X[:, 0]) + np.isin(X[:, 2], [1, 3]) * 2.0
    return BoostRegressor(n_estimators=6, categorical_features=[2],
                          max_cat_to_onehot=1).fit(X, y), X


def _skboost_multi_target(strategy):
    def fit(rng):
        X = _features(rng)
        Y = np.c_[_signal(X), np.nan_to_num(X[:, 4])]
        return BoostRegressor(n_estimators=5, multi_strategy=strategy).fit(
            X, Y), X
    return fit


WRITTEN = {
    "squarederror_exact": _skboost_regression("reg:squarederror",
                                              tree_method="exact"),
    "squarederror_hist": _skboost_regression("reg:squarederror"),
    "pseudohuber": _skboost_regression("reg:pseudohubererror",
                                       huber_slope=0.5),
    "quantiles": _skboost_regression("reg:quantileerror",
                                     quantile_alpha=[0.2, 0.8]),
    "reg_logistic": _skboost_regression("reg:logistic"),
    "poisson": _skboost_regression("count:poisson"),
    "gamma": _skboost_regression("reg:gamma"),
    "tweedie": _skboost_regression("reg:tweedie",
                                   tweedie_variance_power=1.4),
    "absoluteerror": _skboost_regression("reg:absoluteerror"),
    "binary": _skboost_classifier("binary:logistic", [0, 1]),
    "binary_labels": _skboost_classifier("binary:logistic", ["no", "yes"]),
    "hinge": _skboost_classifier("binary:hinge", [0, 1]),
    "softprob": _skboost_classifier("multi:softprob", [0, 1, 2, 3]),
    "softmax": _skboost_classifier("multi:softmax", [0, 1, 2]),
    "ranker": _skboost_ranker,
    "categorical_str": _skboost_categorical("str", "hist"),
    "categorical_exact": _skboost_categorical("str", "exact"),
    "categorical_int": _skboost_categorical("int", "approx"),
    "category_codes": _skboost_codes,
    "multi_target": _skboost_multi_target("one_output_per_tree"),
    "multi_target_vector": _skboost_multi_target("multi_output_tree"),
    "forest": _skboost_regression("reg:squarederror", num_parallel_tree=3,
                                  subsample=0.8),
}


def _xgb_input(X):
    return xgb.DMatrix(X, enable_categorical=True)


@pytest.mark.parametrize("suffix", ["json", "ubj"])
@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_written_model_predicts_the_same_in_xgboost(name, suffix, tmp_path):
    ours, X = WRITTEN[name](np.random.default_rng(sorted(WRITTEN).index(name)))
    path = tmp_path / f"model.{suffix}"
    ours.save_model(path, format="xgboost")
    theirs = xgb.Booster(model_file=path)
    rounds = ours.get_booster().num_boosted_rounds()
    assert theirs.num_boosted_rounds() == rounds
    margins = theirs.predict(_xgb_input(X), output_margin=True)
    _close(margins, ours.get_booster().predict(X, output_margin=True)
           .reshape(margins.shape), rtol=1e-5, atol=1e-5)
    # and back: skboost reads the file it wrote
    again = type(ours).load(path)
    _close(again.get_booster().predict(X, output_margin=True),
           ours.get_booster().predict(X, output_margin=True),
           rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["binary", "softprob", "binary_labels"])
def test_xgbclassifier_loads_a_written_classifier(name, tmp_path):
    ours, X = WRITTEN[name](np.random.default_rng(3))
    ours.save_model(tmp_path / "model.json", format="xgboost")
    theirs = xgb.XGBClassifier()
    theirs.load_model(tmp_path / "model.json")
    _close(theirs.predict_proba(X), ours.predict_proba(X), rtol=1e-5,
           atol=1e-5)
    # XGBoost's labels are the class indices
    np.testing.assert_array_equal(
        ours.classes_[theirs.predict(X)], ours.predict(X))


def test_written_model_keeps_best_iteration_and_names(tmp_path):
    rng = np.random.default_rng(0)
    X = _features(rng)
    y = _signal(X) + rng.normal(size=N_ROWS)
    frame = pd.DataFrame(X, columns=list("abcde"))
    ours = BoostRegressor(n_estimators=100, learning_rate=0.5,
                          early_stopping_rounds=3).fit(
        frame[:300], y[:300], eval_set=[(frame[300:], y[300:])])
    ours.save_model(tmp_path / "model.json", format="xgboost")
    theirs = xgb.XGBRegressor()
    theirs.load_model(tmp_path / "model.json")
    assert theirs.best_iteration == ours.best_iteration
    assert theirs.get_booster().feature_names == list("abcde")
    _close(theirs.predict(frame), ours.predict(frame), rtol=1e-5, atol=1e-5)


def test_what_xgboost_can_not_hold_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = _features(rng)
    y = _signal(X)
    path = tmp_path / "model.json"

    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    model = BoostRegressor(n_estimators=2, objective=squared).fit(X, y)
    with pytest.raises(ValueError, match="custom objective"):
        model.save_model(path, format="xgboost")
    sparse_model = BoostRegressor(n_estimators=2, sparse_absent="zero").fit(
        sp.csr_matrix(np.nan_to_num(X)), y)
    with pytest.raises(ValueError, match="sparse_absent='zero'"):
        sparse_model.save_model(path, format="xgboost")
    X[:, 2] = rng.integers(0, 4, N_ROWS) * 10   # values, not codes
    coded = BoostRegressor(n_estimators=2, categorical_features=[2]).fit(X, y)
    with pytest.raises(ValueError, match="feature 2.*category codes"):
        coded.save_model(path, format="xgboost")
    with pytest.raises(ValueError, match="format must be one of"):
        coded.save_model(path, format="lightgbm")
    assert not path.exists()


def test_continued_training_from_an_xgboost_file(tmp_path):
    """fit(xgb_model=<XGBoost's file>) adds rounds as XGBoost's own
    continuation does (the exact method: the same trees)."""
    rng = np.random.default_rng(0)
    X = _features(rng)
    y = _signal(X)
    params = dict(n_estimators=5, max_depth=3, tree_method="exact",
                  n_jobs=1, base_score=0.3)
    first = xgb.XGBRegressor(**params).fit(X, y)
    first.save_model(tmp_path / "first.json")
    ours = BoostRegressor(**params).fit(X, y,
                                        xgb_model=tmp_path / "first.json")
    theirs = xgb.XGBRegressor(**params).fit(X, y,
                                            xgb_model=first.get_booster())
    assert ours.n_estimators_ == 10
    _close(ours.predict(X), theirs.predict(X), rtol=1e-5, atol=1e-5)
