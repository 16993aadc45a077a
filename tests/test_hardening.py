"""Hardening (issue 20): every case a careless or hostile user found ends in
a clear error naming the culprit, or works; every saved model loads back.

Cases that could crash the process run in child processes
(``_isolation``); the random searches are in ``test_fuzz.py``.
"""

import json
import os
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost._model.importance import dumps_indented
from skboost._model.limits import MAX_WEIGHT_SUM
from skboost._estimators.model_section import dumps_estimator, loads_estimator
from skboost.callback import TrainingCallback
from skboost.tree._tree import Tree
from skboost.tree.memory import (TrainingMemoryError, available_memory,
                                 check_presorted)

from _isolation import CaseWorker

_SNIPPET_RUNNER = """
def run(code):
    exec(code, {})
"""


def snippet_outcomes(prelude, snippets):
    """Outcome of running ``prelude + snippet`` for each snippet, in a
    child process with the whole package (a crash fails only its case):
    "returned", the exception's name, or "crashed"."""
    worker = CaseWorker(_SNIPPET_RUNNER, timeout=300.0)
    try:
        outcomes = [worker.outcome(prelude + snippet) for snippet in snippets]
    finally:
        worker.close()
    return [o[0] if o[0] != "raised" else o[1][0] for o in outcomes]

INVALID = "not a valid skboost model file"

# tools/sanitize.sh preloads AddressSanitizer, which reserves terabytes of
# address space: no address-space limit (RLIMIT_AS) can apply under it
address_space_limits = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="an address-space limit cannot apply under AddressSanitizer")


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _edited(est, edit):
    """The model file of ``est`` with ``edit(model)`` applied, checksum
    dropped (a hand-edited file)."""
    doc = json.loads(dumps_estimator(est))
    del doc["checksum"]
    edit(doc["model"])
    return json.dumps(doc)


def _load(cls, text):
    return loads_estimator(cls(), text)


# ---------------------------------------------------------- model files


def test_multi_quantile_model_loads_back():
    X, y = _data()
    est = BoostRegressor(n_estimators=4, objective="reg:quantileerror",
                         quantile_alpha=[0.1, 0.9]).fit(X, y)
    loaded = _load(BoostRegressor, dumps_estimator(est))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.quantile_alpha == [0.1, 0.9]
    # the lower quantile lies below the upper one (a real two-output model)
    assert np.mean(loaded.predict(X)[:, 0] < loaded.predict(X)[:, 1]) > 0.9


def test_binary_model_claiming_three_classes_is_rejected():
    X, y = _data()
    clf = BoostClassifier(n_estimators=2).fit(X, y > 0)
    text = _edited(clf, lambda m: m["classes"].update(dtype="int64",
                                                      values=[0, 1, 2]))
    with pytest.raises(ValueError, match="trains 2 classes, the file has 3"):
        _load(BoostClassifier, text)


def test_multiclass_model_with_fewer_classes_than_outputs_is_rejected():
    X, y = _data()
    clf = BoostClassifier(n_estimators=2).fit(X, np.digitize(y, [-1, 1]))
    text = _edited(clf, lambda m: m["classes"]["values"].pop())
    with pytest.raises(ValueError, match="has 2 outputs, 'base_margin' has 3"):
        _load(BoostClassifier, text)


def test_custom_objective_link_must_fit_the_estimator():
    X, y = _data()

    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    reg = BoostRegressor(n_estimators=2, objective=squared).fit(X, y)
    text = _edited(reg, lambda m: m["booster"]["objective_params"].update(
        link="logistic"))
    with pytest.raises(ValueError, match="'custom' trains 2 classes, the "
                                         "file has None"):
        _load(BoostRegressor, text)


def test_objective_parameters_are_checked_against_the_estimator():
    X, y = _data()
    est = BoostRegressor(n_estimators=2, objective="reg:quantileerror",
                         quantile_alpha=[0.1, 0.9]).fit(X, y)
    text = _edited(est, lambda m: m["params"].update(quantile_alpha=[0.2,
                                                                     0.9]))
    with pytest.raises(ValueError, match="quantile_alpha"):
        _load(BoostRegressor, text)
    text = _edited(est, lambda m: m["booster"]["objective_params"].update(
        quantile_alpha=[0.1, 1.5]))
    with pytest.raises(ValueError, match="numbers in \\(0, 1\\)"):
        _load(BoostRegressor, text)


def test_huge_feature_count_allocates_nothing_per_feature():
    """A file may say 10**8 features (a hashed sparse model can): loading,
    scores, dumps and the data frame are sized by the features used."""
    X, y = _data()
    est = BoostRegressor(n_estimators=3, max_depth=2).fit(X, y)
    big = 10 ** 8
    text = _edited(est, lambda m: (m.update(n_features_in=big),
                                   m["booster"].update(n_features=big)))
    tracemalloc.start()
    try:
        loaded = _load(BoostRegressor, text)
        booster = loaded.get_booster()
        score = booster.get_score(importance_type="gain")
        booster.get_dump()
        frame = booster.trees_to_dataframe()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2 ** 20        # 10**8 features: 800 MB a float array
    assert score == est.get_booster().get_score(importance_type="gain")
    assert len(frame) == sum(t.n_nodes for t in est.booster_.trees)


def test_feature_count_beyond_the_format_is_rejected():
    X, y = _data()
    est = BoostRegressor(n_estimators=1).fit(X, y)
    text = _edited(est, lambda m: (m.update(n_features_in=2 ** 31),
                                   m["booster"].update(n_features=2 ** 31)))
    with pytest.raises(ValueError, match="'n_features_in' must be an integer "
                                         "in \\[1, 2147483647\\]"):
        _load(BoostRegressor, text)


def test_leaf_values_whose_sum_overflows_are_rejected():
    X, y = _data()
    est = BoostRegressor(n_estimators=2, max_depth=1).fit(X, y)

    def huge_leaves(model):
        for tree in model["booster"]["trees"]:
            tree["value"] = [1e308] * len(tree["value"])

    with pytest.raises(ValueError, match="margin .* can overflow"):
        _load(BoostRegressor, _edited(est, huge_leaves))


def test_categorical_bitset_beyond_the_categories_is_rejected():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[:, 1] = rng.integers(0, 6, size=300)
    y = (X[:, 1] % 2 == 0) * 2.0 + X[:, 0]
    est = BoostRegressor(n_estimators=2, categorical_features=[1],
                         max_cat_to_onehot=1).fit(X, y)
    text = dumps_estimator(est)
    assert '"cat_bits":[' in text and '"cat_bits":[]' not in text.split(
        '"cat_bits":[', 1)[0]
    loaded = _load(BoostRegressor, text)       # the file itself is fine

    def extra_bit(model):
        tree = next(t for t in model["booster"]["trees"] if t["cat_bits"])
        tree["cat_bits"][0] |= 1 << 20        # category 20 of 6

    with pytest.raises(ValueError, match="beyond its feature's 6"):
        _load(BoostRegressor, _edited(est, extra_bit))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


_N_JOBS_PRELUDE = """
import resource, numpy as np
from skboost import BoostRegressor
rng = np.random.default_rng(0)
X = rng.normal(size=(100, 3)); y = X[:, 0]
"""


@address_space_limits
def test_thread_counts_from_arguments_and_files_cannot_crash(tmp_path):
    """n_jobs of any size trains, and a file's n_jobs (4096, 10**6) loads
    and predicts under a 2 GiB address-space limit (it goes through
    effective_n_threads, capped at the CPUs)."""
    path = str(tmp_path / "m.json")
    cases = [
        "BoostRegressor(n_estimators=2, n_jobs=100000).fit(X, y)",
        f"""
m = BoostRegressor(n_estimators=2).fit(X, y)
m.save_model({path!r})
import json
doc = json.load(open({path!r})); del doc["checksum"]
for n in (4096, 10**6, -10**6):
    doc["model"]["params"]["n_jobs"] = n
    json.dump(doc, open({path!r}, "w"))
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
    loaded = BoostRegressor.load({path!r})
    assert np.array_equal(loaded.predict(X), m.predict(X))
    loaded.get_booster().predict(X, pred_contribs=True)
""",
    ]
    assert snippet_outcomes(_N_JOBS_PRELUDE, cases) == ["returned"] * 2


def _deep_chain_tree(depth):
    """A chain of ``depth`` splits, each with a leaf on the right."""
    n = 2 * depth + 1
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    feature = np.full(n, -1, np.int32)
    threshold = np.zeros(n)
    for d in range(depth):
        left[2 * d], right[2 * d] = 2 * d + 1, 2 * d + 2
        feature[2 * d], threshold[2 * d] = d % 3, 0.5
    value = np.arange(n, dtype=np.float64) / n
    cover = np.ones(n)      # each split's cover: the sum of its children's
    for d in range(depth - 1, -1, -1):
        cover[2 * d] = cover[2 * d + 1] + cover[2 * d + 2]
    return Tree(left, right, feature, threshold, np.zeros(n, np.uint8),
                value, np.zeros(n), cover)


def _with_tree(tree):
    X, y = _data(50)
    est = BoostRegressor(n_estimators=1, max_depth=1).fit(X[:, :3], y)
    est.booster_.trees, est.booster_.tree_group = [tree], [0]
    est.booster_._forest = None
    return _load(BoostRegressor, dumps_estimator(est))


def test_deep_trees_dump_without_recursion():
    est = _with_tree(_deep_chain_tree(20000))
    booster = est.get_booster()
    text = booster.get_dump()[0].splitlines()
    assert len(text) == 40001
    assert text[-2] == "\t" * 20000 + "39999:leaf=" + format(39999 / 40001,
                                                            ".9g")
    assert booster.trees_to_dataframe().shape[0] == 40001
    assert booster.get_score() == {"f0": 6667.0, "f1": 6667.0, "f2": 6666.0}
    # the JSON dump's indentation is quadratic in the depth: refused
    with pytest.raises(ValueError, match="trees_to_dataframe"):
        booster.get_dump(dump_format="json")
    # a chain deeper than Python's recursion limit, within the size limit
    booster = _with_tree(_deep_chain_tree(1500)).get_booster()
    dump = booster.get_dump(dump_format="json")[0]
    assert dump.count('"nodeid"') == 3001
    assert dump.count('"children"') == 1500


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES)
def test_iterative_json_writer_matches_the_json_module(value):
    assert dumps_indented(value) == json.dumps(value, indent=2)


# ------------------------------------------------------------- arguments


def test_unknown_metric_is_named_with_a_suggestion():
    X, y = _data()
    with pytest.raises(ValueError, match="Unknown eval_metric 'rmsee'. Did "
                                         "you mean 'rmse'"):
        BoostRegressor(n_estimators=2, eval_metric="rmsee").fit(
            X, y, eval_set=[(X, y)])


@pytest.mark.parametrize("weight, message", [
    (1e300, "sample_weight sums to .*beyond the limit of 1e\\+100"),
    (MAX_WEIGHT_SUM, "sample_weight sums to 2e\\+102"),
])
def test_weights_beyond_the_limit_are_rejected(weight, message):
    X, y = _data()
    with pytest.raises(ValueError, match=message):
        BoostRegressor(n_estimators=2).fit(
            X, y, sample_weight=np.full(200, weight))


def test_weights_up_to_the_limit_train_like_unit_weights():
    """Scaling every weight by the same constant changes nothing but the
    scale of the sums (with min_child_weight scaled alike, lambda 0)."""
    X, y = _data()
    scale = MAX_WEIGHT_SUM / 400
    params = dict(n_estimators=3, reg_lambda=0.0, min_child_weight=0.0,
                  tree_method="exact")
    unit = BoostRegressor(**params).fit(X, y)
    heavy = BoostRegressor(**params).fit(X, y,
                                         sample_weight=np.full(200, scale))
    np.testing.assert_allclose(heavy.predict(X), unit.predict(X),
                               rtol=1e-5, atol=1e-5)


def test_eval_set_weights_are_checked_and_named():
    X, y = _data()
    with pytest.raises(ValueError, match="sample_weight_eval_set\\[0\\] sums"):
        BoostRegressor(n_estimators=2).fit(
            X, y, eval_set=[(X, y)],
            sample_weight_eval_set=[np.full(200, 1e300)])


@pytest.mark.parametrize("objective", ["reg:squarederror", "reg:gamma",
                                       "reg:pseudohubererror"])
def test_labels_beyond_the_limit_are_rejected(objective):
    X, y = _data()
    with pytest.raises(ValueError, match="y holds a label of magnitude "
                                         ".*limit of 1e\\+36"):
        BoostRegressor(n_estimators=2, objective=objective).fit(
            X, np.abs(y) * 1e300 + 1.0)


def test_base_score_and_poisson_step_beyond_their_limits_are_rejected():
    X, y = _data()
    with pytest.raises(ValueError, match="base_score=1e\\+300 is beyond"):
        BoostRegressor(n_estimators=2, base_score=1e300).fit(X, y)
    with pytest.raises(ValueError, match="max_delta_step=1000.0 .*count:poisson"):
        BoostRegressor(n_estimators=2, objective="count:poisson",
                       max_delta_step=1000.0).fit(X, np.abs(y))


@pytest.mark.parametrize("name", ["reg_lambda", "reg_alpha", "gamma",
                                  "min_child_weight", "max_delta_step"])
def test_regularisation_must_be_finite_and_any_finite_value_trains(name):
    X, y = _data()
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        BoostRegressor(n_estimators=2, **{name: np.inf}).fit(X, y)
    for method in ("hist", "exact"):
        pred = BoostRegressor(n_estimators=2, tree_method=method,
                              **{name: 1e300}).fit(X, y).predict(X)
        assert np.all(np.isfinite(pred))


def test_custom_objective_with_float32_overflowing_gradients_is_stopped():
    X, y = _data()

    def huge(y_true, y_pred):
        return np.full_like(y_pred, 1e300), np.ones_like(y_pred)

    with pytest.raises(ValueError, match="round 0: the objective 'custom' "
                                         "gave non-finite gradients"):
        BoostRegressor(n_estimators=2, objective=huge).fit(X, y)


def _csr(seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(60, 5))
    dense[rng.random(dense.shape) < 0.5] = 0.0
    return sp.csr_matrix(dense), dense[:, 0] + dense[:, 1]


def _broken(kind):
    X, _ = _csr()
    if kind == "decreasing indptr":
        X.indptr[10], X.indptr[20] = X.indptr[20], X.indptr[10]
    elif kind == "index out of range":
        X.indices[3] = 7
    elif kind == "negative index":
        X.indices[3] = -1
    elif kind == "duplicate index":
        row = int(np.argmax(np.diff(X.indptr) >= 2))
        X.indices[X.indptr[row] + 1] = X.indices[X.indptr[row]]
    elif kind == "indptr too short":
        X.indptr = X.indptr[:-1]
    elif kind == "indptr beyond data":
        X.indptr[-1] += 5
    return X


SPARSE_DEFECTS = {
    "decreasing indptr": "indptr must start at 0 and never decrease",
    "index out of range": "an index is outside \\[0, 5\\)",
    "negative index": "an index is outside",
    "duplicate index": "stores the same column twice",
    "indptr too short": "indptr has 60 entries for 60 rows",
    "indptr beyond data": "beyond its indices or data",
}

_SPARSE_PRELUDE = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
from test_hardening import _broken, _csr
from skboost import BoostRegressor
X_ok, y = _csr()
model = BoostRegressor(n_estimators=2).fit(X_ok, y)
"""


@pytest.mark.parametrize("defect", list(SPARSE_DEFECTS))
def test_malformed_sparse_matrices_are_rejected_before_any_kernel(defect):
    """At fit, predict and in a bare Booster; in a child process, since the
    defect used to crash inside scipy."""
    import os

    prelude = _SPARSE_PRELUDE.format(tests=os.path.dirname(__file__))
    message = SPARSE_DEFECTS[defect]
    cases = [
        f"""
try:
    BoostRegressor(n_estimators=2).fit(_broken({defect!r}), y)
except ValueError as exc:
    assert __import__("re").search({message!r}, str(exc)), exc
    raise
""",
        f"model.predict(_broken({defect!r}))",
        f"model.get_booster().predict(_broken({defect!r}))",
    ]
    assert snippet_outcomes(prelude, cases) == ["ValueError"] * 3


def test_unsorted_sparse_indices_are_valid_and_give_the_sorted_model():
    X, y = _csr()
    shuffled = X.copy()
    for row in range(X.shape[0]):   # reverse each row's entries
        begin, end = X.indptr[row], X.indptr[row + 1]
        shuffled.indices[begin:end] = X.indices[begin:end][::-1]
        shuffled.data[begin:end] = X.data[begin:end][::-1]
    shuffled.has_sorted_indices = False
    a = BoostRegressor(n_estimators=3).fit(X, y)
    b = BoostRegressor(n_estimators=3).fit(shuffled, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(shuffled))
    np.testing.assert_array_equal(
        a.get_booster().predict(shuffled), a.predict(X))


class _ReturnsString(TrainingCallback):
    def after_training(self, booster):
        return "done"


class _StopsWithText(TrainingCallback):
    def after_iteration(self, booster, iteration, evals_log):
        return "stop"


@pytest.mark.parametrize("callbacks, message", [
    ([_ReturnsString()], "_ReturnsString.after_training returned str"),
    ([_StopsWithText()], "_StopsWithText.after_iteration returned str"),
    ([print], "callbacks\\[0\\] = <built-in function print> is not a "
              "callback"),
    ([_ReturnsString], "is not a callback"),
])
def test_callbacks_of_the_wrong_type_are_named(callbacks, message):
    X, y = _data()
    with pytest.raises(TypeError, match=message):
        BoostRegressor(n_estimators=2, callbacks=callbacks).fit(X, y)


# ---------------------------------------------------------------- memory

_MEMORY_PRELUDE = """
import resource, numpy as np
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
from skboost import BoostRegressor
from skboost.tree.memory import TrainingMemoryError
rng = np.random.default_rng(0)
X = rng.normal(size=(20000, 40)).astype(np.float32); y = X[:, 0]
"""


@address_space_limits
@pytest.mark.parametrize("method", ["hist", "approx"])
def test_histograms_beyond_memory_raise_a_memory_error_naming_the_fix(method):
    """20,000 x 40 values, 65,535 bins each, 2**11 open nodes: 12 GiB of
    histograms under a 3 GiB address-space limit."""
    case = f"""
try:
    BoostRegressor(n_estimators=1, max_bin=65535, max_depth=12,
                   tree_method={method!r}).fit(X, y)
except TrainingMemoryError as exc:
    message = str(exc)
    assert "gradient histograms (1024 nodes x" in message, message
    assert "lower max_depth or max_leaves" in message and "max_bin" in message
    raise
"""
    assert snippet_outcomes(_MEMORY_PRELUDE, [
        case, "BoostRegressor(n_estimators=1, max_depth=4).fit(X, y)"]) == [
        "TrainingMemoryError", "returned"]


def test_presorted_blocks_are_estimated_against_available_memory():
    available = available_memory()
    assert available is not None and available > 0
    check_presorted(1000, 10)            # a few kilobytes fit
    with pytest.raises(TrainingMemoryError, match="presorted columns .* "
                                                  "tree_method='hist'"):
        check_presorted(available // 4, 10)  # 8 bytes an entry: 2x memory
    assert issubclass(TrainingMemoryError, MemoryError)


# ------------------------------------------ property: every model loads back

_REGRESSION = ["reg:squarederror", "reg:squaredlogerror",
               "reg:pseudohubererror", "reg:absoluteerror",
               "reg:quantileerror", "count:poisson", "reg:gamma",
               "reg:tweedie"]
_CLASSIFICATION = ["binary:logistic", "binary:logitraw", "binary:hinge",
                   "multi:softprob", "multi:softmax"]
_RANKING = ["rank:ndcg", "rank:map", "rank:pairwise"]


@st.composite
def fitted_model(draw):
    objective = draw(st.sampled_from(_REGRESSION + _CLASSIFICATION
                                     + _RANKING))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n = 120
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < draw(st.sampled_from([0.0, 0.2]))] = np.nan
    categorical = draw(st.booleans())
    if categorical:
        X[:, 3] = rng.integers(0, 7, size=n)
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
    params = dict(
        n_estimators=draw(st.integers(1, 4)),
        max_depth=draw(st.integers(1, 4)),
        tree_method=draw(st.sampled_from(["hist", "approx", "exact"])),
        grow_policy=draw(st.sampled_from(["depthwise", "lossguide"])),
        subsample=draw(st.sampled_from([1.0, 0.7])),
        colsample_bynode=draw(st.sampled_from([1.0, 0.6])),
        reg_alpha=draw(st.sampled_from([0.0, 0.5])),
        max_delta_step=draw(st.sampled_from([None, 0.5])),
        n_jobs=draw(st.sampled_from([None, 1, 100000])),
        random_state=0, objective=objective,
        categorical_features=[3] if categorical else None)
    if draw(st.booleans()):
        params.update(early_stopping_rounds=2, n_estimators=6)
    params["num_parallel_tree"] = draw(st.sampled_from([1, 2]))
    if objective == "reg:squarederror" and draw(st.booleans()):
        # several targets: a tree per target, or vector leaves (hist, dense)
        strategy = draw(st.sampled_from(["one_output_per_tree",
                                         "multi_output_tree"]))
        if strategy == "multi_output_tree":
            params.update(tree_method="hist", categorical_features=None)
            X[:, 3] = rng.normal(size=n)
        params["multi_strategy"] = strategy
        y = np.column_stack([signal, -signal, np.nan_to_num(X[:, 2])])
        return (BoostRegressor(**params), X, y, {},
                strategy == "one_output_per_tree" and draw(st.booleans()))
    if objective == "binary:logistic" and draw(st.booleans()):  # multi-label
        y = np.column_stack([signal > 0, np.nan_to_num(X[:, 2]) > 0,
                             signal > 1]).astype(int)
        return BoostClassifier(**params), X, y, {}, draw(st.booleans())
    if objective in _REGRESSION:
        y = np.exp(signal / 4) if objective in (
            "count:poisson", "reg:gamma", "reg:tweedie",
            "reg:squaredlogerror") else signal
        if objective == "reg:quantileerror":
            params["quantile_alpha"] = draw(st.sampled_from(
                [0.5, [0.1, 0.9], [0.05, 0.5, 0.95]]))
        return BoostRegressor(**params), X, y, {}, draw(st.booleans())
    if objective in _CLASSIFICATION:
        n_classes = 2 if objective.startswith("binary") else draw(
            st.sampled_from([2, 3, 4]))
        y = np.digitize(signal, np.quantile(signal, np.linspace(
            0, 1, n_classes + 1)[1:-1]))
        return BoostClassifier(**params), X, y, {}, draw(st.booleans())
    y = np.digitize(signal, [0.0] if objective == "rank:map" else [0.0, 1.0])
    return (BoostRanker(**params), X, y,
            {"qid": np.repeat(np.arange(12), 10)}, draw(st.booleans()))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(spec=fitted_model())
def test_every_saved_model_loads_back(spec):
    est, X, y, fit_kwargs, sparse = spec
    if sparse:
        X = sp.csr_matrix(np.nan_to_num(X, nan=0.0))
    est.fit(X, y, **fit_kwargs)
    loaded = loads_estimator(type(est)(), dumps_estimator(est))
    for method in ("predict", "predict_proba", "decision_function"):
        if hasattr(est, method):
            np.testing.assert_array_equal(getattr(loaded, method)(X),
                                          getattr(est, method)(X))
    np.testing.assert_array_equal(loaded.apply(X), est.apply(X))
    assert dumps_estimator(loaded) == dumps_estimator(est)


def test_margin_limit_check_for_per_row_base_margins():
    """The check per-row base margins of fit and predict go through: NaN,
    infinity and magnitudes beyond 1e36 named."""
    from skboost._model.limits import check_margin_limits

    check_margin_limits(np.array([[0.0, -1e36], [3.0, 1e36]]))
    for bad, message in ((np.array([0.0, np.nan]), "NaN or infinity"),
                         (np.array([np.inf]), "NaN or infinity"),
                         (np.array([1e37]), "magnitude 1e\\+37")):
        with pytest.raises(ValueError, match=f"base_margin .*{message}"):
            check_margin_limits(bad)
    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30.0)
    with pytest.raises(ValueError, match="base_margin holds a margin of "
                                         "magnitude 1e\\+37"):
        BoostRegressor(n_estimators=2).fit(X, y, base_margin=np.full(30, 1e37))
    est = BoostRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="base_margin contains NaN"):
        est.predict(X, base_margin=np.full(30, np.nan))
