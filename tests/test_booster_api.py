"""The booster object's XGBoost methods, the .ubj format, and the
parameters users carry over (verbosity, device, foreign keywords).

Oracles: XGBoost's Booster on the same trees (exact method: same splits),
py-ubjson (an independent UBJSON implementation, the one XGBoost's own
tests use) and XGBoost's own .ubj files, the JSON file of the same model.
"""

import json
import os
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost._io import ubjson as _ubjson
from skboost._model.booster import Booster


def frame_data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)).astype(np.float32),
                     columns=["age", "income", "score", "tenure"])
    y = (X["age"] + X["income"] * X["score"] > 0.2).astype(int)
    return X, y


# ------------------------------------------------------------ the methods

def test_booster_methods_match_xgboost():
    """Same trees (exact method, continuous features): XGBoost's Booster
    methods give the same numbers on both."""
    xgb = pytest.importorskip("xgboost")
    X, y = frame_data()
    params = dict(n_estimators=5, max_depth=3, tree_method="exact", n_jobs=1,
                  base_score=0.5)
    ours = BoostClassifier(**params).fit(X, y).get_booster()
    theirs = xgb.XGBClassifier(**params).fit(X, y).get_booster()
    assert ours.num_boosted_rounds() == theirs.num_boosted_rounds() == 5
    assert ours.feature_names == theirs.feature_names
    assert ours.num_features() == theirs.num_features()
    assert ours.get_fscore() == theirs.get_fscore()
    # XGBoost's gain is twice skboost's (the paper's factor 1/2)
    for kind, factor in (("weight", 1), ("cover", 1), ("total_cover", 1),
                         ("gain", 2), ("total_gain", 2)):
        a, b = ours.get_score(importance_type=kind), theirs.get_score(
            importance_type=kind)
        assert a.keys() == b.keys()
        np.testing.assert_allclose([factor * a[k] for k in a],
                                   [b[k] for k in a], rtol=1e-4)
    dmatrix = xgb.DMatrix(X)
    for kwargs in ({}, {"output_margin": True},
                   {"iteration_range": (1, 4)},
                   {"output_margin": True, "iteration_range": (0, 2)}):
        np.testing.assert_allclose(ours.predict(X, **kwargs),
                                   theirs.predict(dmatrix, **kwargs),
                                   atol=1e-5)
    assert len(ours.get_dump()) == len(theirs.get_dump()) == 5
    frame = ours.trees_to_dataframe()
    theirs_frame = theirs.trees_to_dataframe()
    assert list(frame["Tree"].value_counts().sort_index()) == list(
        theirs_frame["Tree"].value_counts().sort_index())


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
def test_booster_save_load_round_trip(suffix, tmp_path):
    X, y = frame_data(1)
    clf = BoostClassifier(n_estimators=6, max_depth=3).fit(X, y)
    booster = clf.get_booster()
    path = tmp_path / f"model{suffix}"
    booster.save_model(path)
    for loaded in (Booster(model_file=path), Booster().load_model(path)):
        np.testing.assert_array_equal(loaded.predict(X), booster.predict(X))
        np.testing.assert_array_equal(loaded.predict(X, output_margin=True),
                                      clf.decision_function(X))
        assert loaded.feature_names == list(X.columns)
        assert loaded.num_boosted_rounds() == 6
    # the estimators read the booster's file, and the other way round
    np.testing.assert_array_equal(BoostClassifier.load(path).predict_proba(X),
                                  clf.predict_proba(X))
    clf.save_model(tmp_path / f"estimator{suffix}")
    np.testing.assert_array_equal(
        Booster(model_file=tmp_path / f"estimator{suffix}").predict(X),
        booster.predict(X))


def test_booster_without_its_estimator_saves(tmp_path):
    """Unpickled on its own, a booster is saved as the estimator fit would
    have made for it (classes 0..K-1)."""
    X, y = frame_data(2)
    labels = np.digitize(X["age"], [-0.5, 0.5])
    for est, target in ((BoostClassifier(n_estimators=3), labels),
                        (BoostRegressor(n_estimators=3,
                                        objective="count:poisson"),
                         np.exp(X["age"]))):
        booster = pickle.loads(pickle.dumps(est.fit(X, target).get_booster()))
        booster.save_model(tmp_path / "alone.ubj")
        again = Booster(model_file=tmp_path / "alone.ubj")
        np.testing.assert_array_equal(again.predict(X), est.predict(X)
                                      if not hasattr(est, "predict_proba")
                                      else est.predict_proba(X))


def test_unknown_suffix_is_an_error(tmp_path):
    X, y = frame_data(3)
    clf = BoostClassifier(n_estimators=2).fit(X, y)
    for save in (clf.save_model, clf.get_booster().save_model):
        for name in ("model.bin", "model", "model.txt"):
            with pytest.raises(ValueError, match="'.json'.*'.ubj'"):
                save(tmp_path / name)
            assert not os.path.exists(tmp_path / name)


# ---------------------------------------------------------------- UBJSON

def test_ubj_file_is_the_json_document(tmp_path):
    """py-ubjson decodes our .ubj file to the document of our .json file."""
    ubjson = pytest.importorskip("ubjson")
    X, y = frame_data(4)
    reg = BoostRegressor(n_estimators=4).fit(X, X["age"] * 2)
    reg.save_model(tmp_path / "m.json")
    reg.save_model(tmp_path / "m.ubj")
    with open(tmp_path / "m.json") as f:
        document = json.load(f)
    with open(tmp_path / "m.ubj", "rb") as f:
        data = f.read()
    assert ubjson.loadb(data) == document
    assert _ubjson.loads(data) == document
    # and what py-ubjson writes of it loads as a model
    (tmp_path / "other.ubj").write_bytes(ubjson.dumpb(document))
    np.testing.assert_array_equal(
        BoostRegressor.load(tmp_path / "other.ubj").predict(X), reg.predict(X))


def test_ubjson_codec_against_py_ubjson():
    ubjson = pytest.importorskip("ubjson")
    rng = np.random.default_rng(5)
    document = {
        "floats": [float(v) for v in rng.normal(size=50)] + [-0.0, 1e308],
        "ints": [int(v) for v in rng.integers(-2 ** 40, 2 ** 40, size=20)],
        "small": [0, 1, 255], "negative": [-128, 127],
        "mixed": [1, "two", 3.5, None, True, False, {"k": []}],
        "text": "naïve – ✓", "empty": {}, "nested": [[[]]], "big": 2 ** 62,
    }
    ours = _ubjson.dumps(document)
    assert ubjson.loadb(ours) == document
    for options in ({}, {"container_count": True}):
        assert _ubjson.loads(ubjson.dumpb(document, **options)) == document


def test_ubjson_reads_xgboost_files(tmp_path):
    """XGBoost's .ubj model decodes to its .json model (float32 values)."""
    xgb = pytest.importorskip("xgboost")
    X, y = frame_data(6)
    model = xgb.XGBClassifier(n_estimators=3).fit(X, y)
    model.save_model(tmp_path / "x.json")
    model.save_model(tmp_path / "x.ubj")
    with open(tmp_path / "x.json") as f:
        expected = json.load(f)
    decoded = _ubjson.loads((tmp_path / "x.ubj").read_bytes())

    def same(a, b):
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, z) for x, z in zip(a, b))
        if isinstance(a, float) or isinstance(b, float):
            return np.float32(a) == np.float32(b)
        return a == b
    assert same(decoded, expected)


@pytest.mark.parametrize("data", [b"", b"{", b"[$D#L\x00\x00\x00\x00\x7f\xff\xff\xff",
                                  b"{L\x00\x00\x00\x00\x00\x00\x00\x01a", b"Q",
                                  b"SL\xff\xff\xff\xff\xff\xff\xff\xff",
                                  b"Z" + b"Z", b"[" * 1000])
def test_ubjson_rejects_broken_input(data):
    with pytest.raises(ValueError, match="UBJSON"):
        _ubjson.loads(data)


def test_corrupted_ubj_model_is_a_value_error(tmp_path):
    X, y = frame_data(7)
    BoostClassifier(n_estimators=2).fit(X, y).save_model(tmp_path / "m.ubj")
    data = (tmp_path / "m.ubj").read_bytes()
    (tmp_path / "cut.ubj").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a valid skboost model"):
        BoostClassifier.load(tmp_path / "cut.ubj")
    # a NaN written as a number (the format writes the string "nan")
    document = _ubjson.loads(data)
    document["model"]["booster"]["base_margin"] = [float("nan")]
    del document["checksum"]
    (tmp_path / "nan.ubj").write_bytes(_ubjson.dumps(document))
    with pytest.raises(ValueError, match="non-JSON number"):
        BoostClassifier.load(tmp_path / "nan.ubj")


# ------------------------------------------------------------ parameters

@pytest.mark.parametrize("keyword, advice", [
    ("nthread", "n_jobs"), ("seed", "random_state"), ("eta", "learning_rate"),
    ("num_leaves", "max_leaves"), ("min_child_samples", "not supported"),
    ("gpu_id", "not supported"), ("min_split_gain", "gamma"),
    ("lambda_l2", "reg_lambda"), ("bagging_fraction", "subsample"),
    ("tweedie_variance_power", "BoostRegressor"),
])
@pytest.mark.parametrize("Estimator", [BoostClassifier, BoostRanker])
def test_foreign_keywords_name_the_skboost_parameter(Estimator, keyword,
                                                     advice):
    with pytest.raises(TypeError, match=f"'{keyword}'.*{advice}"):
        Estimator(**{keyword: 1})
    with pytest.raises(ValueError, match=f"'{keyword}'.*{advice}"):
        Estimator().set_params(**{keyword: 1})


def test_misspelled_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="'n_estimator' is not a parameter"):
        BoostRegressor(n_estimator=3)


def test_subclass_passing_keywords_on():
    """scikit-learn's subclass pattern, ``__init__(self, *, extra=1, **kw)``
    passing the rest to the base: the base's keywords are accepted (and
    trained with: the oracle is the base class with the same keywords), a
    misspelled one is still a TypeError."""
    class WithExtra(BoostClassifier):
        def __init__(self, *, extra=1, **kwargs):
            self.extra = extra
            super().__init__(**kwargs)

    X, y = make_classification(n_samples=200, random_state=0)
    model = WithExtra(extra=2, n_estimators=5, max_depth=2).fit(X, y)
    assert (model.extra, model.n_estimators, model.max_depth) == (2, 5, 2)
    base = BoostClassifier(n_estimators=5, max_depth=2).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X),
                                  base.predict_proba(X))
    with pytest.raises(TypeError, match="'n_estimator' is not a parameter"):
        WithExtra(n_estimator=5)


def test_parameter_names_are_each_classes_own():
    """The constructor's names are cached per class: a subclass with its
    own parameter gets its own, and its base class keeps the base's
    (as scikit-learn reads them off each class's signature)."""
    class WithPrior(BoostClassifier):
        def __init__(self, prior=0.5, n_estimators=100):
            super().__init__(n_estimators=n_estimators)
            self.prior = prior

    assert BoostClassifier._get_param_names() == sorted(
        BoostClassifier().get_params())
    assert WithPrior._get_param_names() == ["n_estimators", "prior"]
    assert "prior" not in BoostClassifier._get_param_names()
    model = clone(WithPrior(prior=0.25, n_estimators=3))
    assert model.get_params() == {"n_estimators": 3, "prior": 0.25}
    with pytest.raises(TypeError, match="'max_depth' is not a parameter"):
        WithPrior(max_depth=2)
    # the cached list is a copy: changing it changes nothing
    BoostRegressor._get_param_names().append("extra")
    assert "extra" not in BoostRegressor._get_param_names()


def test_device_and_verbosity():
    X, y = frame_data(8)
    reference = BoostClassifier(n_estimators=2).fit(X, y).predict_proba(X)
    for params in ({"device": "cpu"}, {"device": "CPU"}, {"verbosity": 0},
                   {"verbosity": 3}):
        np.testing.assert_array_equal(
            BoostClassifier(n_estimators=2, **params).fit(X, y)
            .predict_proba(X), reference)
    for device in ("cuda", "cuda:0", "gpu"):
        with pytest.raises(ValueError, match="CPU only"):
            BoostClassifier(n_estimators=2, device=device).fit(X, y)
    with pytest.raises(ValueError, match="verbosity"):
        BoostClassifier(n_estimators=2, verbosity=5).fit(X, y)
