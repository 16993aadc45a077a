"""Saved models: JSON round trips are bit-identical, pickle and joblib too,
and loading validates everything (corrupted and hand-edited files raise a
ValueError; whatever loads predicts exactly what a naive walk over the
loaded trees gives)."""

import copy
import json
import pickle

import joblib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skboost import BoostClassifier, BoostRegressor
from skboost._io.model_file import FORMAT_VERSION
from skboost._estimators.model_section import dumps_estimator, loads_estimator

pd = pytest.importorskip("pandas")

INVALID = "not a valid skboost model file"


def _data(n=300, d=5, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < missing] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
    return X, signal, rng


def _assert_same_params(a, b):
    pa, pb = a.get_params(), b.get_params()
    assert pa.keys() == pb.keys()
    for key in pa:
        same_nan = isinstance(pa[key], float) and np.isnan(pa[key]) and np.isnan(pb[key])
        assert same_nan or pa[key] == pb[key], key


def _predictions(est, X):
    out = {"predict": est.predict(X), "apply": est.apply(X)}
    if hasattr(est, "predict_proba"):
        out["proba"] = est.predict_proba(X)
        out["margin"] = est.decision_function(X)
    else:
        out["margin"] = est.predict(X, output_margin=True)
    return out


def _assert_same_predictions(a, b, X):
    pa, pb = _predictions(a, X), _predictions(b, X)
    for key in pa:
        assert pa[key].dtype == pb[key].dtype, key
        # bit-identical, NaN-free outputs
        np.testing.assert_array_equal(pa[key], pb[key], err_msg=key)


def _fitted_models():
    X, signal, rng = _data()
    labels3 = np.digitize(signal, [0.3, 1.5])
    yield "regressor-exact", BoostRegressor(
        n_estimators=8, tree_method="exact").fit(X, signal), X
    yield "binary-hist", BoostClassifier(n_estimators=8).fit(
        X, (signal > 0.8).astype(int)), X
    yield "multiclass-approx", BoostClassifier(
        n_estimators=6, tree_method="approx").fit(X, labels3), X
    yield "string-labels", BoostClassifier(n_estimators=5).fit(
        X, np.array(["low", "mid", "high"])[labels3]), X
    yield "bool-labels", BoostClassifier(n_estimators=5).fit(
        X, signal > 0.8), X
    yield "float-labels", BoostClassifier(n_estimators=5).fit(
        X, np.array([-1.0, 0.0, 7.0])[labels3]), X
    df = pd.DataFrame(X, columns=[f"col {i}" for i in range(X.shape[1])])
    y = pd.Series(np.array(["a", "b"])[(signal > 0.8).astype(int)],
                  index=np.arange(100, 100 + len(df)))
    yield "dataframe-pandas-labels", BoostClassifier(
        n_estimators=5, missing=-999.0, random_state=3).fit(df, y), df


MODELS = list(_fitted_models())


@pytest.mark.parametrize("name, est, X", MODELS, ids=[m[0] for m in MODELS])
def test_json_round_trip_is_bit_identical(name, est, X, tmp_path):
    path = tmp_path / "model.json"
    est.save_model(path)
    loaded = type(est).load(path)
    _assert_same_predictions(est, loaded, X)
    _assert_same_params(loaded, est)
    assert loaded.n_features_in_ == est.n_features_in_
    if hasattr(est, "classes_"):
        assert loaded.classes_.dtype == est.classes_.dtype
        np.testing.assert_array_equal(loaded.classes_, est.classes_)
        assert loaded.n_classes_ == est.n_classes_
    if hasattr(est, "feature_names_in_"):
        np.testing.assert_array_equal(loaded.feature_names_in_,
                                      est.feature_names_in_)
    else:
        assert not hasattr(loaded, "feature_names_in_")
    for a, b in zip(est.booster_.trees, loaded.booster_.trees, strict=True):
        for field in vars(a):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    # saving the loaded model gives the same file
    assert dumps_estimator(loaded) == dumps_estimator(est)


@pytest.mark.parametrize("name, est, X", MODELS[:4], ids=[m[0] for m in MODELS[:4]])
def test_pickle_and_joblib_round_trips(name, est, X, tmp_path):
    est.predict(X)  # builds the packed forest, which is not pickled
    _assert_same_predictions(est, pickle.loads(pickle.dumps(est)), X)
    joblib.dump(est, tmp_path / "model.joblib")
    _assert_same_predictions(est, joblib.load(tmp_path / "model.joblib"), X)


def test_file_is_strict_json_with_infinite_thresholds_as_strings(tmp_path):
    """A feature present only where y is high makes the first split
    "present vs missing", at threshold +inf (hist: the last bin's; exact
    puts it at XGBoost's finite threshold): JSON has no infinity."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = (rng.random(200) < 0.5).astype(float)
    X[y == 0, 0] = np.nan
    reg = BoostRegressor(n_estimators=3, tree_method="hist").fit(X, y)
    assert np.isinf(reg.booster_.trees[0].threshold).any()
    reg.save_model(tmp_path / "m.json")
    text = (tmp_path / "m.json").read_text()

    def no_constants(name):
        raise AssertionError(f"non-JSON constant {name}")

    doc = json.loads(text, parse_constant=no_constants)
    assert doc["format"] == "skboost-model"
    assert doc["version"] == FORMAT_VERSION
    assert "inf" in doc["model"]["booster"]["trees"][0]["threshold"]
    loaded = BoostRegressor.load(tmp_path / "m.json")
    _assert_same_predictions(reg, loaded, X)


def test_best_iteration_is_saved_when_present(tmp_path):
    X, signal, rng = _data(n=400)
    y = signal + rng.normal(scale=1.0, size=signal.shape)
    reg = BoostRegressor(n_estimators=6).fit(X, y)
    reg.save_model(tmp_path / "plain.json")
    doc = json.loads((tmp_path / "plain.json").read_text())
    assert doc["model"]["best_iteration"] is None
    assert not hasattr(BoostRegressor.load(tmp_path / "plain.json"),
                       "best_iteration")
    # early stopping on noisy targets stops well before 200 rounds
    reg = BoostRegressor(n_estimators=200, learning_rate=0.5,
                         early_stopping_rounds=3).fit(
        X[:300], y[:300], eval_set=[(X[300:], y[300:])])
    assert reg.best_iteration < reg.booster_.n_rounds - 1
    reg.save_model(tmp_path / "best.json")
    loaded = BoostRegressor.load(tmp_path / "best.json")
    assert loaded.best_iteration == reg.best_iteration
    assert loaded.best_score == reg.best_score
    # predictions stop at the best round, before and after
    _assert_same_predictions(reg, loaded, X)
    full = (0, reg.booster_.n_rounds)
    np.testing.assert_array_equal(loaded.predict(X, iteration_range=full),
                                  reg.predict(X, iteration_range=full))


def test_objective_parameters_and_other_objectives_round_trip(tmp_path):
    X, signal, _ = _data()
    y = np.exp(signal / 2)
    for est in (BoostRegressor(n_estimators=4, objective="reg:tweedie",
                               tweedie_variance_power=1.2),
                BoostRegressor(n_estimators=4, objective="reg:quantileerror",
                               quantile_alpha=0.8)):
        est.fit(X, y)
        est.save_model(tmp_path / "m.json")
        loaded = BoostRegressor.load(tmp_path / "m.json")
        _assert_same_predictions(est, loaded, X)
        _assert_same_params(loaded, est)


def test_callable_objective_model_predicts_after_loading(tmp_path):
    """The function is not saved (its parameter is listed as unsaved); the
    link is, so the loaded model predicts the same probabilities."""
    X, signal, _ = _data()
    y = (signal > 0.8).astype(int)

    def logloss(y_true, margin):
        p = 1 / (1 + np.exp(-margin))
        return p - y_true, p * (1 - p)

    clf = BoostClassifier(n_estimators=4, objective=logloss).fit(X, y)
    clf.save_model(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert "objective" in doc["model"]["unsaved_params"]
    loaded = BoostClassifier.load(tmp_path / "m.json")
    _assert_same_predictions(clf, loaded, X)


def test_ranker_round_trip(tmp_path):
    from skboost import BoostRanker

    X, signal, _ = _data()
    relevance = np.digitize(signal, [0.3, 1.5])
    qid = np.repeat(np.arange(30), 10)
    ranker = BoostRanker(n_estimators=4).fit(X, relevance, qid=qid)
    ranker.save_model(tmp_path / "m.json")
    loaded = BoostRanker.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), ranker.predict(X))
    with pytest.raises(ValueError, match="holds a 'BoostRanker'"):
        BoostRegressor.load(tmp_path / "m.json")


def test_load_model_replaces_parameters_and_fitted_state(tmp_path):
    X, signal, _ = _data()
    source = BoostClassifier(n_estimators=4, max_depth=2).fit(
        X, np.digitize(signal, [0.3, 1.5]))
    source.save_model(tmp_path / "m.json")
    target = BoostClassifier(n_estimators=9, max_depth=5).fit(
        X[:, :5], signal > 0.8)
    assert target.load_model(tmp_path / "m.json") is target
    _assert_same_params(target, source)
    _assert_same_predictions(source, target, X)


def test_unsaved_parameters_are_listed(tmp_path):
    X, signal, _ = _data()
    reg = BoostRegressor(n_estimators=3,
                         random_state=np.random.RandomState(0)).fit(X, signal)
    reg.save_model(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["model"]["unsaved_params"] == ["random_state"]
    loaded = BoostRegressor.load(tmp_path / "m.json")
    assert loaded.random_state is None
    _assert_same_predictions(reg, loaded, X)


def test_saved_file_is_readable_like_an_ordinary_file(tmp_path):
    X, signal, _ = _data()
    reg = BoostRegressor(n_estimators=2).fit(X, signal)
    reg.save_model(tmp_path / "m.json")
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == 0o644
    (tmp_path / "m.json").chmod(0o600)
    reg.save_model(tmp_path / "m.json")  # replacing keeps the file's mode
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == 0o600


def test_unfitted_model_is_not_saved(tmp_path):
    with pytest.raises(NotFittedError):
        BoostRegressor().save_model(tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


def test_failed_save_leaves_the_existing_file_untouched(tmp_path):
    X, signal, _ = _data()
    path = tmp_path / "m.json"
    BoostRegressor(n_estimators=2).fit(X, signal).save_model(path)
    before = path.read_bytes()
    clf = BoostClassifier(n_estimators=2).fit(X, signal > 0.8)
    clf.classes_ = np.array([(1, 2), "x"], dtype=object)  # not storable
    with pytest.raises(TypeError, match="class labels"):
        clf.save_model(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_wrong_estimator_class_is_rejected(tmp_path):
    X, signal, _ = _data()
    BoostRegressor(n_estimators=2).fit(X, signal).save_model(tmp_path / "m.json")
    with pytest.raises(ValueError, match="holds a 'BoostRegressor', not a "
                                         "'BoostClassifier'"):
        BoostClassifier.load(tmp_path / "m.json")


# ----------------------------------------------------------- corruption


@pytest.fixture(scope="module")
def saved():
    """(estimator, X, file text) of a 3-class model with feature names."""
    X, signal, _ = _data(n=200, d=4)
    df = pd.DataFrame(X, columns=list("abcd"))
    clf = BoostClassifier(n_estimators=3, max_depth=3).fit(
        df, np.digitize(signal, [0.3, 1.5]))
    return clf, df, dumps_estimator(clf)


def _load(text):
    return loads_estimator(BoostClassifier(), text)


def test_every_truncation_is_rejected(saved):
    _, _, text = saved
    for end in sorted({0, 1, 10, len(text) - 1, *range(0, len(text), 97)}):
        with pytest.raises(ValueError, match=INVALID):
            _load(text[:end])


def test_every_byte_flip_is_caught(saved):
    """The checksum makes any change to a saved model an error: a flipped
    digit in a leaf value would otherwise predict silently wrong. A flip
    that leaves every number's value unchanged (the 17th digit of a float
    that needs 16) loads the very same model."""
    _, _, text = saved
    data = text.encode()
    rng = np.random.default_rng(0)
    n_same = 0
    for pos in rng.choice(len(data), size=300, replace=False):
        corrupted = bytearray(data)
        corrupted[pos] ^= 1 << int(rng.integers(8))
        try:
            loaded = _load(bytes(corrupted))
        except ValueError as exc:
            assert INVALID in str(exc)
            continue
        n_same += 1
        assert dumps_estimator(loaded) == text
    assert n_same < 10


def _edited(text, edit):
    """The file after a hand edit (which drops the checksum)."""
    doc = json.loads(text)
    del doc["checksum"]
    edit(doc["model"])
    return json.dumps(doc)


def _tree(model, i=0):
    return model["booster"]["trees"][i]


def _first_inner(tree):
    return next(i for i, c in enumerate(tree["left_child"]) if c != -1)


def _set(path, value):
    def edit(model):
        obj = model
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return edit


def _tree_edit(field, value, node="inner"):
    def edit(model):
        tree = _tree(model)
        i = _first_inner(tree) if node == "inner" else tree["left_child"].index(-1)
        tree[field][i] = value
    return edit


def _second_parent(model):
    """Node 1's right child becomes node 2's left child (numbered after
    both): that node has two parents and node 1's old right child none."""
    tree = _tree(model)
    assert tree["left_child"][1] != -1 and tree["left_child"][2] != -1
    tree["right_child"][1] = tree["left_child"][2]


def _orphan(model):
    tree = _tree(model)
    for f in tree:
        if not f.startswith("cat_"):   # the node arrays (not categorical splits)
            tree[f].append(tree[f][-1])  # a leaf nobody points to


HAND_EDITS = {
    "child beyond the tree": (_tree_edit("left_child", 10_000), "outside the tree"),
    "negative child": (_tree_edit("right_child", -5), "outside the tree"),
    "self loop": (_tree_edit("left_child", 0), "not after its parent"),
    "node reached twice": (_second_parent, "exactly one node"),
    "unreachable node": (_orphan, "exactly one node"),
    "feature beyond n_features": (_tree_edit("feature", 4), "outside \\[0, 4\\)"),
    "negative feature": (_tree_edit("feature", -2), "outside \\[0, 4\\)"),
    "leaf with a right child": (_tree_edit("right_child", 1, node="leaf"),
                                "right child but no left"),
    "leaf with a feature": (_tree_edit("feature", 1, node="leaf"),
                            "leaves have feature -1"),
    "nan threshold": (_tree_edit("threshold", "nan"), "finite or \\+inf"),
    "-inf threshold": (_tree_edit("threshold", "-inf"), "finite or \\+inf"),
    "infinite value": (_tree_edit("value", "inf", node="leaf"), "'value' must be finite"),
    "float child": (_tree_edit("left_child", 1.0), "list of integers"),
    "bool default_left": (_tree_edit("default_left", True), "list of integers"),
    "default_left 2": (_tree_edit("default_left", 2), "0 or 1"),
    "64-bit child": (_tree_edit("left_child", 2**40), "beyond 32 bits"),
    "string value": (_tree_edit("value", "1.5", node="leaf"), "must hold numbers"),
    "short array": (lambda m: _tree(m)["gain"].pop(), "different lengths"),
    "empty tree": (lambda m: _tree(m).update({f: [] for f in _tree(m)}),
                   "at least one node"),
    "missing node field": (lambda m: _tree(m).pop("cover"), "exactly the entries"),
    "tree is a list": (lambda m: m["booster"]["trees"].__setitem__(0, [1]),
                       "exactly the entries"),
    "partial round": (lambda m: m["booster"]["trees"].pop(), "whole number of rounds"),
    "short base_margin": (lambda m: m["booster"]["base_margin"].pop(),
                          "'base_margin' has 2"),
    "unknown objective": (_set(["booster", "objective"], "reg:gamma2"),
                          "unknown objective"),
    "regression objective in a classifier": (
        _set(["booster", "objective"], "reg:squarederror"), "outputs"),
    "ranking objective in a classifier": (
        lambda m: (m["booster"].update(objective="rank:ndcg"),
                   m["booster"]["base_margin"].__delitem__(slice(1, None)),
                   m["booster"]["trees"].__delitem__(slice(1, None))),
        "does not train the objective 'rank:ndcg'"),
    "unknown objective parameter": (
        _set(["booster", "objective_params", "eval"], 1),
        "unknown objective parameters"),
    "object objective parameter": (
        _set(["booster", "objective_params", "huber_slope"], {"a": 1}),
        "numbers, lists of numbers, strings"),
    "custom objective with a bad link": (
        lambda m: (m["booster"].update(objective="custom"),
                   m["booster"]["objective_params"].update(link="exp")),
        "'link' must be"),
    "n_features mismatch": (_set(["booster", "n_features"], 5), "features"),
    "n_features_in not int": (_set(["n_features_in"], "4"), "must be an integer"),
    "too few feature names": (lambda m: m["feature_names"].pop(), "3 feature names"),
    "duplicate feature names": (_set(["feature_names", 1], "a"), "unique"),
    "unsorted classes": (_set(["classes", "values"], [2, 1, 0]), "sorted"),
    "duplicate classes": (_set(["classes", "values"], [0, 0, 1]), "unique"),
    "float in int classes": (_set(["classes", "values"], [0, 1.5, 2]),
                             "do not fit dtype"),
    "object dtype classes": (_set(["classes", "dtype"], "|O"),
                             "unsupported class dtype"),
    "one class": (_set(["classes", "values"], [0]), "at least 2 classes"),
    "four classes": (_set(["classes", "values"], [0, 1, 2, 3]), "outputs"),
    "no classes": (_set(["classes"], None), "at least 2 classes"),
    "bad parameter value": (_set(["params", "max_depth"], -1), "max_depth"),
    "unknown parameter": (_set(["params", "eval_function"], "os.system"),
                          "unknown parameters"),
    "unknown unsaved parameter": (_set(["unsaved_params"], ["pickle"]),
                                  "unknown parameters"),
    # any other thread count is capped at the CPUs (test_hardening.py)
    "meaningless thread count": (_set(["params", "n_jobs"], 0), "n_jobs"),
    "best_iteration out of range": (_set(["best_iteration"], 3), "best_iteration"),
    "categories": (_set(["categories"], {"a": [1]}), "categorical"),
    "extra model entry": (_set(["pickle"], "gASV"), "unknown entries"),
    "missing model entry": (lambda m: m.pop("booster"), "lacks"),
}


@pytest.mark.parametrize("edit, message", HAND_EDITS.values(), ids=HAND_EDITS)
def test_hand_edited_files_are_validated(saved, edit, message):
    _, _, text = saved
    with pytest.raises(ValueError, match=INVALID) as info:
        _load(_edited(text, edit))
    assert info.match(message)


def test_hand_edited_valid_file_loads(saved):
    """Without its checksum a file loads when it is consistent: a new leaf
    value is taken as written."""
    clf, X, text = saved

    def edit(model):
        tree = _tree(model)
        tree["value"][tree["left_child"].index(-1)] += 1.0

    loaded = _load(_edited(text, edit))
    assert not np.array_equal(loaded.decision_function(X),
                              clf.decision_function(X))
    np.testing.assert_array_equal(loaded.decision_function(X),
                                  _naive_margins(loaded.booster_, X))


FILE_LEVEL = {
    "empty": "",
    "not json": "skboost",
    "a list": "[]",
    "NaN constant": '{"format": NaN}',
    "other format": '{"format": "xgboost", "version": 1, "model": {}}',
    "newer version": '{"format": "skboost-model", "version": 2, "model": {}}',
    "string version": '{"format": "skboost-model", "version": "1", "model": {}}',
    "no model": '{"format": "skboost-model", "version": 1}',
    "deep nesting": '{"format": "skboost-model", "version": 1, "model": '
                    + "[" * 100_000 + "]" * 100_000 + "}",
}


@pytest.mark.parametrize("text", FILE_LEVEL.values(), ids=FILE_LEVEL)
def test_malformed_files_are_rejected(text):
    with pytest.raises(ValueError, match=INVALID):
        _load(text)


def test_binary_garbage_and_directories_are_rejected(tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="UTF-8"):
        BoostClassifier.load(tmp_path / "bin.json")
    with pytest.raises(ValueError, match="directory"):
        BoostClassifier.load(tmp_path)


def test_newer_version_message_names_both_versions(saved):
    _, _, text = saved
    doc = json.loads(text)
    doc["version"] = FORMAT_VERSION + 1
    with pytest.raises(ValueError, match=f"version {FORMAT_VERSION + 1}.*"
                                         f"reads version {FORMAT_VERSION}"):
        _load(json.dumps(doc))


def _naive_margins(booster, X):
    """Oracle: walk every tree in Python (float32 inputs, as predict sees
    them), add leaf values to the base margin in tree order."""
    X = np.asarray(X, dtype=np.float32)
    out = np.tile(booster.base_margin, (X.shape[0], 1))
    for t, tree in enumerate(booster.trees):
        group = booster.tree_group[t]
        for r in range(X.shape[0]):
            node = 0
            while tree.left_child[node] != -1:
                x = X[r, tree.feature[node]]
                if np.isnan(x):
                    go_left = tree.default_left[node]
                else:
                    go_left = float(x) < tree.threshold[node]
                node = tree.left_child[node] if go_left else tree.right_child[node]
            out[r, group] += tree.value[node]
    return out if out.shape[1] > 1 else out[:, 0]


def test_random_hand_edits_raise_or_predict_what_the_file_says(saved):
    """Fuzz: random values written into random node entries. Each edited
    file either raises a ValueError or loads into a model whose predictions
    are exactly a naive walk over the loaded trees (never a crash, never an
    out-of-bounds read)."""
    clf, X, text = saved
    X = X[:40]
    base = json.loads(text)
    del base["checksum"]
    rng = np.random.default_rng(42)
    candidates = [-2, -1, 0, 1, 2, 3, 4, 5, 7, 100, 2**31, 0.5, -3.25, 1e300,
                  "inf", "-inf", "nan", True, None, "x", [], {}]
    n_loaded = n_rejected = 0
    for _ in range(400):
        doc = copy.deepcopy(base)
        for _ in range(int(rng.integers(1, 4))):
            trees = doc["model"]["booster"]["trees"]
            tree = trees[int(rng.integers(len(trees)))]
            # the node arrays (categorical splits: test_categorical.py)
            fields = [f for f in tree if not f.startswith("cat_")]
            field = fields[int(rng.integers(len(fields)))]
            node = int(rng.integers(len(tree[field])))
            tree[field][node] = candidates[int(rng.integers(len(candidates)))]
        try:
            loaded = _load(json.dumps(doc))
        except ValueError as exc:
            assert INVALID in str(exc)
            n_rejected += 1
            continue
        n_loaded += 1
        np.testing.assert_array_equal(loaded.decision_function(X),
                                      _naive_margins(loaded.booster_, X))
        loaded.apply(X)
    assert n_loaded > 20 and n_rejected > 100  # both paths exercised


def test_clone_of_loaded_model_is_unfitted(tmp_path, saved):
    clf, X, text = saved
    loaded = _load(text)
    fresh = clone(loaded)
    _assert_same_params(fresh, clf)
    with pytest.raises(NotFittedError):
        fresh.predict(X)


# ------------------------------------------------------ property: round trip


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1),
       method=st.sampled_from(["hist", "approx", "exact"]),
       n_classes=st.sampled_from([0, 2, 3]),
       scale=st.sampled_from([1e-30, 1.0, 1e30]),
       missing_fraction=st.sampled_from([0.0, 0.3, 0.9]),
       depth=st.integers(1, 5))
def test_round_trip_is_bit_identical_for_any_model(seed, method, n_classes,
                                                   scale, missing_fraction,
                                                   depth):
    """Extreme feature scales (tiny and huge thresholds), many missing
    values (+inf thresholds), every method and output count."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3)) * scale
    X[rng.random(X.shape) < missing_fraction] = np.nan
    signal = rng.normal(size=120)
    if n_classes:
        est = BoostClassifier(n_estimators=3, max_depth=depth, tree_method=method,
                              random_state=seed % 100, subsample=0.8)
        y = rng.integers(0, n_classes, size=120)
        y[:n_classes] = np.arange(n_classes)
    else:
        est = BoostRegressor(n_estimators=3, max_depth=depth, tree_method=method,
                             colsample_bynode=0.7, random_state=seed % 100)
        y = signal * 1e3
    est.fit(X, y)
    loaded = loads_estimator(type(est)(), dumps_estimator(est))
    X_new = np.vstack([X, rng.normal(size=(50, 3)) * scale])
    _assert_same_predictions(est, loaded, X_new)


def test_model_trained_on_sparse_input_round_trips(tmp_path):
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(5)
    X = sp.random(300, 20, density=0.2, format="csr", random_state=5)
    y = np.asarray(X[:, :3].sum(axis=1)).ravel() + rng.normal(scale=0.1, size=300)
    reg = BoostRegressor(n_estimators=5).fit(X, y)
    reg.save_model(tmp_path / "m.json")
    loaded = BoostRegressor.load(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    np.testing.assert_array_equal(loaded.predict(X.tocsc()), reg.predict(X))
