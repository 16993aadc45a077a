"""Fuzzing: hostile model files and hostile fit/predict arguments.

Two hypothesis-driven properties, every case run in a child process
(``_isolation.CaseWorker``) so that a crash or a hang fails its case
instead of killing the test runner:

(a) model files: a saved model (several kinds: multiclass, categorical,
    several quantiles, ranking, early stopping) mutated structurally (a
    random entry anywhere in the file replaced by a hostile value, deleted,
    or its list lengthened or shortened) or byte by byte. Loading either
    raises ValueError, or gives a model whose margins are finite and equal
    to a naive Python walk of its trees, whose predictions hold no NaN,
    whose views (dumps, scores, data frame, importances, leaves, SHAP)
    work, and that saves and loads back to the same margins.
(b) arguments: fit and predict with hostile X, y (2-D where the estimator
    and objective take none), sample_weight, the ranker's query_weight and
    parameters (shapes, dtypes, NaN/inf/huge values, empty inputs, object
    columns, mismatched lengths, malformed sparse matrices, extreme
    parameters). Each call raises ValueError/TypeError (or the
    MemoryError-style TrainingMemoryError), or works and predicts finite
    margins; a case built to be invalid must raise.

The default run is short. For a long run set ``SKBOOST_FUZZ_EXAMPLES``
(hypothesis examples per test, default 30), e.g.::

    SKBOOST_FUZZ_EXAMPLES=3000 python -m pytest tests/test_fuzz.py -n 1 -s

``-s`` shows the counts of cases tried and their outcomes.
"""

import copy
import json
import os
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost._estimators.model_section import dumps_estimator

from _isolation import CaseWorker

N_EXAMPLES = int(os.environ.get("SKBOOST_FUZZ_EXAMPLES", "30"))
FUZZ_SETTINGS = settings(max_examples=N_EXAMPLES, deadline=None,
                         suppress_health_check=list(HealthCheck),
                         database=None)

# ---------------------------------------------------------------- workers

_MODEL_PRELUDE = r'''
import json, warnings
import numpy as np
warnings.simplefilter("ignore")
from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost._input.arrays import check_X
from skboost._estimators.model_section import dumps_estimator, loads_estimator

CLASSES = {c.__name__: c for c in (BoostClassifier, BoostRegressor,
                                   BoostRanker)}


def goes_left(tree, node, x):
    """Naive split rule: NaN follows default_left; a categorical split
    sends a category code whose bit is set left (anything that is not a
    code of the feature follows default_left); else x < threshold."""
    if np.isnan(x):
        return bool(tree.default_left[node])
    found = np.flatnonzero(tree.cat_node == node)
    if not found.size:
        return float(x) < tree.threshold[node]
    i = found[0]
    size = tree.cat_size[i]
    if not (0 <= x < size) or x != int(x):
        return bool(tree.default_left[node])
    c = int(x)
    words = tree.cat_bits[tree.cat_ptr[i]:tree.cat_ptr[i + 1]]
    return c < 32 * len(words) and bool((int(words[c // 32]) >> (c % 32)) & 1)


def naive_margins(booster, X):
    out = np.tile(booster.base_margin, (X.shape[0], 1))
    for tree, group in zip(booster.trees, booster.tree_group):
        for r in range(X.shape[0]):
            node = 0
            while tree.left_child[node] != -1:
                left = goes_left(tree, node, X[r, tree.feature[node]])
                node = tree.left_child[node] if left else tree.right_child[node]
            if tree.value.ndim == 2:   # a vector leaf: every output
                out[r] += tree.value[node]
            else:
                out[r, group] += tree.value[node]
    return out


def exercise(est, X):
    booster = est.get_booster()
    booster.get_dump(with_stats=True)
    booster.get_dump(dump_format="json")
    for kind in ("weight", "gain", "cover", "total_gain", "total_cover"):
        booster.get_score(importance_type=kind)
    booster.trees_to_dataframe()
    assert np.all(np.isfinite(est.feature_importances_))
    est.apply(X)
    contributions = est.predict_contributions(X)
    assert np.all(np.isfinite(contributions))


def run(case):
    kind, text, X = case
    est = CLASSES[kind]()
    try:
        loads_estimator(est, text)
    except ValueError as exc:
        return ("rejected", str(exc)[:300])
    category_map = est._category_map_
    if category_map is not None and category_map.from_dtype.any():
        # the file says: trained on a DataFrame with category columns, so
        # predict takes such a DataFrame only (a clean ValueError on X)
        try:
            check_X(est, X, reset=False)
        except ValueError as exc:
            assert "category dtype" in str(exc), exc
            return ("rejected", "a DataFrame model given an array")
        raise AssertionError("an array accepted for category columns")
    coded = check_X(est, X, reset=False)
    margins = est.booster_.predict_raw(coded)
    oracle = naive_margins(est.booster_, coded)
    predictions = est.predict(X)
    exercise(est, X)
    again = loads_estimator(CLASSES[kind](), dumps_estimator(est))
    same = np.array_equal(again.booster_.predict_raw(coded), margins)
    return ("loaded", bool(np.all(np.isfinite(margins))),
            float(np.max(np.abs(margins - oracle), initial=0.0)),
            float(np.max(np.abs(oracle), initial=0.0)),
            bool(np.any(np.isnan(np.asarray(predictions, dtype=float)))),
            same)
'''

_ARGUMENT_PRELUDE = r'''
import warnings
import numpy as np
warnings.simplefilter("ignore")
from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost.tree.memory import TrainingMemoryError

CLASSES = {c.__name__: c for c in (BoostClassifier, BoostRegressor,
                                   BoostRanker)}
CLEAN = (ValueError, TypeError, TrainingMemoryError)


def run(case):
    kind, params, X, y, fit_kwargs, X_new = case
    est = CLASSES[kind](**params)
    try:
        est.fit(X, y, **fit_kwargs)
    except CLEAN as exc:
        return ("fit rejected", type(exc).__name__, str(exc)[:300])
    try:
        if kind == "BoostClassifier":
            out = est.decision_function(X_new)
        else:
            out = est.predict(X_new, output_margin=True)
    except CLEAN as exc:
        return ("predict rejected", type(exc).__name__, str(exc)[:300])
    out = np.asarray(out, dtype=np.float64)
    return ("predicted", bool(np.all(np.isfinite(out))), out.shape[0],
            est.n_features_in_)
'''

_workers = {}
_counts = {"model files": Counter(), "arguments": Counter()}


def _worker(name, prelude):
    if name not in _workers:
        env = dict(os.environ, OMP_NUM_THREADS="1")
        _workers[name] = CaseWorker(prelude, timeout=120.0, env=env)
    return _workers[name]


@pytest.fixture(scope="module", autouse=True)
def _close_workers():
    yield
    for name, counts in _counts.items():
        if counts:
            print(f"\nfuzz {name}: {sum(counts.values())} cases, "
                  f"{dict(counts)}")
    for worker in _workers.values():
        worker.close()
    _workers.clear()


def _assert_clean(outcome, case_description):
    status, detail = outcome[0], outcome[1]
    assert status == "returned", (
        f"{case_description}: {status} {detail if status != 'raised' else detail[2]}")
    return detail


# ------------------------------------------------------------ base models


def _base_models():
    """(estimator class name, model file text, X to predict) per kind."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = X[:, 0] - X[:, 1]
    y[np.isnan(y)] = 0.0
    X_cat = X.copy()
    X_cat[:, 2] = rng.integers(0, 5, size=80)
    models = [
        BoostRegressor(n_estimators=3, max_depth=3).fit(X, y),
        BoostClassifier(n_estimators=2, max_depth=2, tree_method="exact").fit(
            X, np.digitize(y, [-1, 1])),
        BoostClassifier(n_estimators=3, max_depth=3, categorical_features=[2],
                        max_cat_to_onehot=1).fit(X_cat, y > 0),
        BoostRegressor(n_estimators=2, max_depth=2,
                       objective="reg:quantileerror",
                       quantile_alpha=[0.1, 0.9]).fit(X, y),
        BoostRegressor(n_estimators=6, max_depth=2, early_stopping_rounds=2,
                       tree_method="approx").fit(X, y),
        BoostRanker(n_estimators=2, max_depth=2).fit(
            X, (y > 0).astype(int), qid=np.repeat(np.arange(8), 10)),
    ]
    X_test = np.vstack([X[:15], X_cat[:15]])
    return [(type(m).__name__, dumps_estimator(m), X_test) for m in models]


_BASES = None


def _bases():
    global _BASES
    if _BASES is None:
        _BASES = _base_models()
    return _BASES


def _without_checksum(text):
    doc = json.loads(text)
    doc.pop("checksum", None)
    return doc


def _paths(value, prefix=()):
    """Every path to an entry of the JSON value."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, prefix + (i,))


HOSTILE_VALUES = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([2**31 - 1, 2**31, -2**31 - 1, 2**63, 10**8, 10**12,
                     4096, 100000]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["inf", "-inf", "nan", 1e308, -1e308, 5e-324, 0.5,
                     -0.0]),
    st.text(max_size=4), st.none(), st.booleans(),
    st.lists(st.one_of(st.integers(-3, 12), st.floats(-10, 10)), max_size=5),
    st.dictionaries(st.text(max_size=3), st.integers(-2, 2), max_size=2),
)


@st.composite
def structured_mutation(draw):
    kind, text, X = draw(st.sampled_from(_bases()))
    doc = _without_checksum(text)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc["model"]) if p]
        path = draw(st.sampled_from(paths))
        parent = doc["model"]
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        operation = draw(st.sampled_from(
            ["replace", "replace", "replace", "delete", "grow", "shrink"]))
        if operation == "replace":
            parent[last] = draw(HOSTILE_VALUES)
        elif operation == "delete":
            if isinstance(parent, dict):
                del parent[last]
            else:
                parent.pop(last)
        elif isinstance(parent[last], list) and parent[last]:
            if operation == "grow":
                parent[last].append(parent[last][-1])
            else:
                parent[last].pop()
    return kind, json.dumps(doc), X


@st.composite
def byte_mutation(draw):
    kind, text, X = draw(st.sampled_from(_bases()))
    data = bytearray(json.dumps(_without_checksum(text)).encode())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data) - 1))
        operation = draw(st.sampled_from(["set", "delete", "insert",
                                          "truncate"]))
        byte = draw(st.sampled_from(b'0123456789-.e,:[]{}"E+ a\x00\xff'))
        if operation == "set":
            data[position] = byte
        elif operation == "delete":
            del data[position:position + draw(st.integers(1, 8))]
        elif operation == "insert":
            data.insert(position, byte)
        else:
            del data[position:]
        if not data:
            data = bytearray(b"{")
    return kind, bytes(data), X


def _check_model_outcome(case):
    outcome = _worker("models", _MODEL_PRELUDE).outcome(case)
    result = _assert_clean(outcome, "model file")
    _counts["model files"][result[0]] += 1
    if result[0] == "rejected":
        return
    _, finite, error, scale, nan_predictions, same_after_saving = result
    assert finite, "a loaded model predicts non-finite margins"
    assert error <= 1e-9 * max(1.0, scale), (
        f"margins differ from the naive walk of the trees by {error}")
    assert not nan_predictions, "a loaded model predicts NaN"
    assert same_after_saving, "a loaded model does not save and load back"


@FUZZ_SETTINGS
@given(case=structured_mutation())
def test_structured_model_file_mutations(case):
    _check_model_outcome(case)


@FUZZ_SETTINGS
@given(case=byte_mutation())
def test_byte_level_model_file_mutations(case):
    _check_model_outcome(case)


def test_unmutated_base_models_load_and_match_the_naive_walk():
    """The baseline of the two properties: every base file loads."""
    for kind, text, X in _bases():
        outcome = _worker("models", _MODEL_PRELUDE).outcome((kind, text, X))
        result = _assert_clean(outcome, kind)
        assert result[0] == "loaded", result
        assert result[1] and result[2] == 0.0 and result[5], result


# ------------------------------------------- other libraries' model files
#
# XGBoost's JSON files and LightGBM's text files, read by the same loader
# (skboost/_io/xgboost_format.py, lightgbm_format.py), under the same
# property: rejected with a ValueError, or a model that predicts finite
# margins equal to the naive walk of the trees it was read into.


def _foreign_base_models():
    """(estimator class name, file text, X) of models XGBoost and LightGBM
    wrote (those installed)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0] - X[:, 1])
    X_codes = X.copy()
    X_codes[:, 2] = rng.integers(0, 5, size=80)
    bases = []
    try:
        import xgboost as xgb
    except ImportError:
        xgb = None
    if xgb is not None:
        regressor = xgb.XGBRegressor(n_estimators=3, max_depth=3).fit(X, y)
        classifier = xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(
            X, np.digitize(y, [-1, 1]))
        categorical = xgb.train(
            {"max_depth": 2, "max_cat_to_onehot": 1}, xgb.DMatrix(
                X_codes, y, feature_types=["q", "q", "c", "q"],
                enable_categorical=True), 3)
        bases += [
            ("BoostRegressor", regressor.get_booster().save_raw(
                "json").decode(), X),
            ("BoostClassifier", classifier.get_booster().save_raw(
                "json").decode(), X),
            ("BoostRegressor", categorical.save_raw("json").decode(),
             X_codes)]
    try:
        import lightgbm as lgb
    except ImportError:
        lgb = None
    if lgb is not None:
        common = dict(n_estimators=3, num_leaves=4, min_child_samples=5,
                      min_data_per_group=5, verbose=-1)
        regressor = lgb.LGBMRegressor(**common).fit(
            X_codes, y, categorical_feature=[2])
        classifier = lgb.LGBMClassifier(**common).fit(
            X, np.digitize(y, [-1, 1]))
        bases += [("BoostRegressor", regressor.booster_.model_to_string(),
                   X_codes),
                  ("BoostClassifier", classifier.booster_.model_to_string(),
                   X)]
    return bases


_FOREIGN = None


def _foreign_bases():
    global _FOREIGN
    if _FOREIGN is None:
        _FOREIGN = _foreign_base_models()
    if not _FOREIGN:
        pytest.skip("neither xgboost nor lightgbm is installed")
    return _FOREIGN


@st.composite
def foreign_structured_mutation(draw):
    """An XGBoost file with entries replaced, deleted, lengthened or
    shortened; a LightGBM file with tokens of its lines replaced, dropped
    or repeated."""
    kind, text, X = draw(st.sampled_from(_foreign_bases()))
    if text.startswith("tree"):
        return kind, _mutated_lightgbm(draw, text), X
    doc = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from([p for p in _paths(doc) if p]))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        operation = draw(st.sampled_from(["replace", "replace", "delete",
                                          "grow", "shrink"]))
        if operation == "replace":
            parent[last] = draw(st.one_of(HOSTILE_VALUES, st.sampled_from(
                ["[1E0,2E0]", "1e30", "-1", "4294967296", "c"])))
        elif operation == "delete":
            if isinstance(parent, dict):
                del parent[last]
            else:
                parent.pop(last)
        elif isinstance(parent[last], list) and parent[last]:
            if operation == "grow":
                parent[last].append(parent[last][-1])
            else:
                parent[last].pop()
    return kind, json.dumps(doc), X


def _mutated_lightgbm(draw, text):
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        key, sep, value = lines[i].partition("=")
        tokens = value.split(" ") if sep else [lines[i]]
        j = draw(st.integers(0, max(0, len(tokens) - 1)))
        operation = draw(st.sampled_from(["replace", "drop", "repeat"]))
        if operation == "replace":
            tokens[j:j + 1] = [draw(st.sampled_from(
                ["-1", "0", "7", "-9", "nan", "inf", "1e308", "x", "",
                 "4294967296", "2147483648", "15", "12", "-0"]))]
        elif operation == "drop":
            del tokens[j:j + 1]
        else:
            tokens.insert(j, tokens[j] if tokens else "0")
        lines[i] = key + sep + " ".join(tokens) if sep else " ".join(tokens)
    return "\n".join(lines)


@st.composite
def foreign_byte_mutation(draw):
    kind, text, X = draw(st.sampled_from(_foreign_bases()))
    data = bytearray(text.encode())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data) - 1))
        operation = draw(st.sampled_from(["set", "delete", "insert",
                                          "truncate"]))
        byte = draw(st.sampled_from(b'0123456789-.e,:[]{}"E+ =\n\x00\xff'))
        if operation == "set":
            data[position] = byte
        elif operation == "delete":
            del data[position:position + draw(st.integers(1, 8))]
        elif operation == "insert":
            data.insert(position, byte)
        else:
            del data[position:]
        if not data:
            data = bytearray(b"{")
    return kind, bytes(data), X


@FUZZ_SETTINGS
@given(case=foreign_structured_mutation())
def test_structured_foreign_model_file_mutations(case):
    _check_model_outcome(case)


@FUZZ_SETTINGS
@given(case=foreign_byte_mutation())
def test_byte_level_foreign_model_file_mutations(case):
    _check_model_outcome(case)


def test_unmutated_foreign_models_load_and_match_the_naive_walk():
    for kind, text, X in _foreign_bases():
        outcome = _worker("models", _MODEL_PRELUDE).outcome((kind, text, X))
        result = _assert_clean(outcome, kind)
        assert result[0] == "loaded", result
        assert result[1] and result[2] <= 1e-12 and result[5], result


# -------------------------------------------------------------- arguments

_PARAMS = {
    "n_estimators": st.integers(1, 3),
    "max_depth": st.sampled_from([0, 1, 3, 30, 10**6]),
    "max_bin": st.sampled_from([2, 3, 256, 257, 65535, 65536, 1, 0, -5]),
    "learning_rate": st.sampled_from([1e-300, 0.3, 1.0, 2.0, 0.0,
                                      float("nan")]),
    "reg_lambda": st.sampled_from([0.0, 1.0, 1e300, float("inf"),
                                   float("nan"), -1.0]),
    "reg_alpha": st.sampled_from([0.0, 1e300, float("inf")]),
    "gamma": st.sampled_from([0.0, 1e300, float("inf"), -1.0]),
    "min_child_weight": st.sampled_from([0.0, 1.0, 1e300, float("inf")]),
    "max_delta_step": st.sampled_from([None, 0.0, 1e-300, 1e300,
                                       float("inf")]),
    "subsample": st.sampled_from([1.0, 0.5, 1e-9, 0.0, 1.5]),
    "colsample_bynode": st.sampled_from([1.0, 0.3, 1e-9, 0.0]),
    "n_jobs": st.sampled_from([None, 1, 2, -1, -1000, 0, 10**6, 2**40, 1.5,
                               "2"]),
    "tree_method": st.sampled_from(["hist", "approx", "exact", "gpu"]),
    "grow_policy": st.sampled_from(["depthwise", "lossguide"]),
    "max_leaves": st.sampled_from([0, 1, 2, 10**9, -1]),
    "missing": st.sampled_from([float("nan"), 0.0, -1e300, float("inf"),
                                "x"]),
    "base_score": st.sampled_from([None, 0.5, 1e300, -1e-300, float("nan"),
                                   float("inf")]),
    "eval_metric": st.sampled_from([None, "rmse", "rmsee", "auc", "", 3,
                                    ["logloss", "bogus"]]),
    "monotone_constraints": st.sampled_from([None, "(1,-1)", [1, 2], "(",
                                             {"f9": 1}]),
    "max_cat_to_onehot": st.sampled_from([4, 1, 0]),
}

# valid but extreme: half of the cases train with these alone, so that the
# models of extreme settings are fitted and predict
_GENTLE_PARAMS = {
    "max_depth": st.sampled_from([0, 1, 30]),
    "max_bin": st.sampled_from([2, 256, 257, 65535]),
    "learning_rate": st.sampled_from([1e-300, 1e-3, 1.0]),
    "reg_lambda": st.sampled_from([0.0, 1e300]),
    "reg_alpha": st.sampled_from([0.0, 1e-300, 1e300]),
    "gamma": st.sampled_from([0.0, 1e300]),
    "min_child_weight": st.sampled_from([0.0, 1e300]),
    "max_delta_step": st.sampled_from([1e-300, 1e300]),
    "subsample": st.sampled_from([1e-9, 0.5]),
    "colsample_bynode": st.sampled_from([1e-9, 0.5]),
    "n_jobs": st.sampled_from([-1000, 10**6, 2**40]),
    "tree_method": st.sampled_from(["hist", "approx", "exact"]),
    "grow_policy": st.sampled_from(["depthwise", "lossguide"]),
    "max_leaves": st.sampled_from([1, 2, 10**9]),
    "missing": st.sampled_from([0.0, -1e30, float("inf")]),
}

_REGRESSION_OBJECTIVES = ["reg:squarederror", "reg:absoluteerror",
                          "reg:pseudohubererror", "count:poisson",
                          "reg:gamma", "reg:tweedie", "reg:squaredlogerror",
                          "reg:quantileerror", "reg:nonsense"]
_CLASSIFICATION_OBJECTIVES = ["binary:logistic", "multi:softprob",
                              "binary:hinge", "binary:logitraw"]

_VALUES = st.sampled_from([0.0, 1.0, -1.0, 1e300, -1e300, 3.5e38, 1e-320,
                           float("nan"), float("inf"), float("-inf"), 7.0])


_GENTLE_VALUES = st.sampled_from([0.0, 1.0, -1.0, 1e30, -1e30, 1e-320,
                                  float("nan"), 7.0])


@st.composite
def hostile_matrix(draw, n_rows, n_features, gentle=False):
    """A matrix-like argument: mostly well formed, sometimes hostile
    (``gentle``: valid, with extreme values)."""
    shape_kind = "ok" if gentle else draw(st.sampled_from(
        ["ok", "ok", "ok", "ok", "empty rows", "no features", "1-D", "3-D",
         "other features"]))
    shape = {"ok": (n_rows, n_features), "empty rows": (0, n_features),
             "no features": (n_rows, 0), "1-D": (n_rows,),
             "3-D": (n_rows, n_features, 2),
             "other features": (n_rows, n_features + 1)}[shape_kind]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=shape)
    n_hostile = draw(st.integers(0, 3))
    if X.size:
        for _ in range(n_hostile):
            X.flat[int(rng.integers(X.size))] = draw(
                _GENTLE_VALUES if gentle else _VALUES)
    form = draw(st.sampled_from(
        ["float64", "float32", "csr", "list", "bool"] if gentle else
        ["float64", "float64", "float32", "int", "object", "str", "complex",
         "bool", "csr", "csr", "bad csr", "list"]))
    # what no fit may accept (predict: also another feature count)
    invalid = shape_kind in ("empty rows", "no features", "1-D", "3-D") or (
        form in ("complex", "bad csr"))
    if form == "float32":
        with np.errstate(over="ignore"):
            X = X.astype(np.float32)
    elif form == "int":
        X = np.nan_to_num(X, posinf=9, neginf=-9).astype(np.int64)
    elif form == "object":
        X = X.astype(object)
    elif form == "str":
        X = X.astype(str)
    elif form == "complex":
        X = X + 1j
    elif form == "bool":
        X = X > 0
    elif form == "list":
        X = X.tolist()
    elif form in ("csr", "bad csr") and X.ndim == 2:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
        if form == "bad csr" and X.nnz:
            defect = draw(st.sampled_from(["indptr", "index", "duplicate"]))
            if defect == "indptr" and X.shape[0] > 2:
                X.indptr[1], X.indptr[-2] = X.indptr[-2] + 1, X.indptr[1]
            elif defect == "index":
                X.indices[0] = X.shape[1] + 3
            elif X.indptr[1] - X.indptr[0] >= 2:
                X.indices[1] = X.indices[0]
            else:
                invalid = shape_kind in ("empty rows", "no features")
        elif form == "bad csr":     # nothing stored: no defect to make
            invalid = shape_kind in ("empty rows", "no features")
    return X, invalid, _has_infinity(X)


def _has_infinity(X):
    if sp.issparse(X):
        return bool(np.any(np.isinf(X.data)))
    try:
        return bool(np.any(np.isinf(np.asarray(X, dtype=np.float64))))
    except (TypeError, ValueError, OverflowError):
        return False


@st.composite
def hostile_fit(draw):
    kind = draw(st.sampled_from(["BoostRegressor", "BoostClassifier",
                                 "BoostRanker"]))
    gentle = draw(st.booleans())
    n_rows = 40 if gentle else draw(st.sampled_from([1, 2, 5, 40]))
    n_features = draw(st.sampled_from([1, 3]))
    # a few parameters at a time: each hostile value gets its turn
    table = _GENTLE_PARAMS if gentle else _PARAMS
    params = {name: draw(values) for name, values in table.items()
              if draw(st.integers(0, 3)) == 0}
    params.setdefault("n_estimators", 2)
    if kind == "BoostRegressor" and draw(st.booleans()):
        params["objective"] = draw(st.sampled_from(_REGRESSION_OBJECTIVES))
    if kind == "BoostClassifier" and draw(st.booleans()):
        params["objective"] = draw(st.sampled_from(_CLASSIFICATION_OBJECTIVES))
    X, X_invalid, X_infinite = draw(hostile_matrix(n_rows, n_features,
                                                   gentle))
    X_new, _, _ = draw(hostile_matrix(draw(st.sampled_from([1, 7])) if gentle
                                      else draw(st.sampled_from([0, 1, 7])),
                                      n_features, gentle))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = rng.integers(0, 3, size=n_rows).astype(np.float64)
    y_kind = "ok" if gentle else draw(st.sampled_from(
        ["ok", "ok", "ok", "nan", "inf", "huge", "short", "2-D", "0/1 matrix",
         "column", "no column", "strings"]))
    if y_kind in ("nan", "inf", "huge"):
        y[0] = {"nan": np.nan, "inf": np.inf, "huge": 1e300}[y_kind]
    elif y_kind == "short":
        y = y[:-1]
    elif y_kind == "2-D":           # labels 0, 1, 2 in two columns
        y = y[:, None].repeat(2, axis=1)
        y[:, 1] = rng.integers(0, 3, size=n_rows)
    elif y_kind == "0/1 matrix":    # a multi-label indicator matrix
        y = rng.integers(0, 2, size=(n_rows, draw(st.sampled_from([2, 3]))))
        y = y.astype(np.float64)
    elif y_kind == "column":        # (n, 1): raveled with a warning
        y = y[:, None]
    elif y_kind == "no column":
        y = y[:, None][:, :0]
    elif y_kind == "strings":
        y = y.astype(str)
    fit_kwargs = {}
    w_kind = draw(st.sampled_from(
        ["none", "ok", "tiny", "large"] if gentle else
        ["none", "none", "ok", "negative", "nan", "inf", "huge", "zeros",
         "short"]))
    if w_kind != "none":
        w = np.ones(n_rows)
        if w_kind in ("negative", "nan", "inf", "huge"):
            w[0] = {"negative": -1.0, "nan": np.nan, "inf": np.inf,
                    "huge": 1e300}[w_kind]
        elif w_kind == "zeros":
            w[:] = 0.0
        elif w_kind in ("tiny", "large"):
            w[::2] = 1e-300 if w_kind == "tiny" else 1e90 / n_rows
        elif w_kind == "short":
            w = w[:-1]
        fit_kwargs["sample_weight"] = w
    q_kind = "none"
    if kind == "BoostRanker":
        # one query, or two with their rows interleaved
        n_queries = draw(st.sampled_from([1, 2])) if n_rows >= 2 else 1
        fit_kwargs["qid"] = np.arange(n_rows) % n_queries
        q_kind = draw(st.sampled_from(
            ["none", "ok", "tiny"] if gentle else
            ["none", "none", "ok", "negative", "nan", "inf", "huge",
             "zeros", "short", "2-D"]))
        if q_kind != "none":
            q = np.ones(n_queries)
            if q_kind in ("negative", "nan", "inf", "huge"):
                q[0] = {"negative": -1.0, "nan": np.nan, "inf": np.inf,
                        "huge": 1e300}[q_kind]
            elif q_kind == "tiny":
                q[0] = 1e-300
            elif q_kind == "zeros":
                q[:] = 0.0
            elif q_kind == "short":
                q = q[:-1]
            elif q_kind == "2-D":
                q = q[:, None]
            fit_kwargs["query_weight"] = q
    facts = dict(X_invalid=X_invalid, X_infinite=X_infinite, y_kind=y_kind,
                 w_kind=w_kind, q_kind=q_kind)
    return (kind, params, X, y, fit_kwargs, X_new), facts


def _y_rejected(kind, params, y):
    """Whether ``fit`` must reject the (otherwise valid, finite) labels
    ``y`` of this estimator and objective, by the shape of ``y``.

    - 1-D, or a column vector (n, 1) (raveled, with scikit-learn's
      DataConversionWarning): valid for every estimator.
    - (n, 0): no target, invalid for every estimator.
    - (n, k), k >= 2:

      - ``BoostRegressor``: valid (multi-output regression, one output per
        target) for any objective with one output per target; the
        objectives of the fuzz all have one (``reg:quantileerror`` is drawn
        with the default single ``quantile_alpha``).
      - ``BoostClassifier``: valid only as multi-label classification: a
        0/1 indicator matrix (scikit-learn's ``multilabel-indicator``) with
        a binary objective (the default ``binary:logistic``, any
        ``binary:*``); other labels (``multiclass-multioutput``) or a
        ``multi:*`` objective are invalid.
      - ``BoostRanker``: invalid (one relevance label per document).
    """
    y = np.asarray(y)
    if y.ndim != 2 or y.shape[1] == 1:
        return False
    if y.shape[1] == 0 or kind == "BoostRanker":
        return True
    if kind == "BoostClassifier":
        indicator = bool(np.isin(y, (0.0, 1.0)).all())
        objective = params.get("objective", "binary:logistic")
        return not indicator or objective.startswith("multi:")
    return False


def _must_fail(case, facts):
    """Whether ``fit`` must reject the case (an invalid X, y,
    sample_weight or query_weight); other cases may be rejected or work."""
    kind, params, _, y, _, _ = case
    y_kind, w_kind = facts["y_kind"], facts["w_kind"]
    infinity_is_missing = params.get("missing") == float("inf")
    return bool(
        facts["X_invalid"] or (facts["X_infinite"] and not infinity_is_missing)
        or y_kind in ("nan", "inf", "short")
        or (y_kind == "huge" and kind != "BoostClassifier")
        or _y_rejected(kind, params, y)
        or w_kind in ("negative", "nan", "inf", "huge", "short")
        or facts["q_kind"] in ("negative", "nan", "inf", "huge", "zeros",
                               "short", "2-D"))


# issue 43: a 2-D y (multi-output regression) fits; the stale rule said
# "must fail", and predicting on no rows is rejected
_ISSUE_43_CASE = (
    ("BoostRegressor", {"n_estimators": 2}, np.zeros((1, 1)),
     np.zeros((1, 2)), {}, np.zeros((0, 1))),
    dict(X_invalid=False, X_infinite=False, y_kind="2-D", w_kind="none",
         q_kind="none"))


_Y_SHAPES = {
    "1-D": np.array([0.0, 1.0, 1.0, 1.0, 0.0, 0.0]),
    "column": np.array([[0.0], [1.0], [1.0], [1.0], [0.0], [0.0]]),
    "no column": np.zeros((6, 0)),
    "0/1 matrix": np.array([[0, 1], [1, 0], [1, 1], [0, 0], [1, 0], [0, 1]],
                           dtype=float),
    "0/1 matrix, 3 labels": np.array([[0, 1, 1], [1, 0, 0], [1, 1, 0],
                                      [0, 0, 1], [1, 0, 1], [0, 1, 0]],
                                     dtype=float),
    "labels 0-2 in 2 columns": np.array([[0, 2], [1, 0], [2, 1], [1, 1],
                                         [0, 0], [2, 2]], dtype=float),
}
_Y_OBJECTIVES = (
    [("BoostRegressor", o) for o in _REGRESSION_OBJECTIVES
     if o not in ("reg:nonsense", "reg:gamma")]
    + [("BoostClassifier", o) for o in _CLASSIFICATION_OBJECTIVES]
    + [("BoostRanker", "rank:ndcg"), ("BoostRanker", "rank:pairwise")])


@pytest.mark.parametrize("y_shape", list(_Y_SHAPES))
@pytest.mark.parametrize("kind, objective", _Y_OBJECTIVES,
                         ids=[f"{k}-{o}" for k, o in _Y_OBJECTIVES])
def test_y_shape_rule_is_what_fit_does(kind, objective, y_shape):
    """The fuzz rule of y's shape (``_y_rejected``) is exact on clean data:
    what it calls invalid is rejected with a ValueError, the rest fits."""
    import warnings

    y = _Y_SHAPES[y_shape]
    X = np.arange(12.0).reshape(6, 2)
    est = {"BoostRegressor": BoostRegressor, "BoostClassifier":
           BoostClassifier, "BoostRanker": BoostRanker}[kind](
        n_estimators=2, objective=objective)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if _y_rejected(kind, {"objective": objective}, y):
            with pytest.raises(ValueError):
                est.fit(X, y)
        else:
            est.fit(X, y)
            assert np.all(np.isfinite(est.predict(X[:2], output_margin=True)
                                      if kind != "BoostClassifier"
                                      else est.decision_function(X[:2])))


@FUZZ_SETTINGS
@given(spec=hostile_fit())
@example(spec=_ISSUE_43_CASE)
def test_hostile_fit_and_predict_arguments(spec):
    case, facts = spec
    must_fail = _must_fail(case, facts)
    outcome = _worker("arguments", _ARGUMENT_PRELUDE).outcome(case)
    result = _assert_clean(outcome, f"fit/predict {case[0]} {case[1]}")
    _counts["arguments"][result[0]] += 1
    if must_fail:
        assert result[0] == "fit rejected", (
            f"an invalid X, y, sample_weight or query_weight was accepted: {result}")
    if result[0] == "predicted":
        _, finite, n_out, _ = result
        assert finite, f"non-finite margins from {case[1]}"
