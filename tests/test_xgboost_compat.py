"""XGBoost's own tests and documented examples for DART, LearningRateScheduler,
TrainingCheckPoint, model slicing (``booster[a:b]``) and
``Booster.inplace_predict``, run against skboost with the import changed.

Each test names its source in the dmlc/xgboost repository (the test file and
function, or the demo) and keeps its assertions; where the original drives
``xgb.train`` with a ``DMatrix``, the same assertions run on the
scikit-learn interface (``XGBClassifier(...)`` -> ``BoostClassifier(...)``,
``xgb.train(params, dtrain, n)`` -> ``fit`` with ``n_estimators=n``, the
booster from ``get_booster()``, ``booster.predict(DMatrix(X))`` ->
``booster.predict(X)``). The oracle is XGBoost's test itself: its
thresholds and equalities, unchanged.

Not applicable (skboost has no ``DMatrix``, ``xgb.cv`` or ``gblinear``):

- ``test_callback.py::run_eta_decay``'s closing ``xgb.cv`` call (the rest
  of the test is ported), and ``test_with_sklearn.py::test_best_iteration``'s
  ``gblinear`` case (XGBoost deprecated gblinear in 3.3);
- ``test_basic_models.py::test_dart``'s binary DMatrix buffer
  (``dtest.save_binary``): the model file round trip it surrounds is ported;
- ``test_basic_models.py::run_slice``'s ``feature_types`` equality (skboost
  keeps categories per feature in the model, not XGBoost's type strings:
  the port checks ``feature_names``) and its ``save_raw("deprecated")``
  round trip (XGBoost's retired binary format; the UBJSON round trip is
  ported as skboost's own model file);
- ``test_basic_models.py::test_slice_multi`` (vector-leaf trees with a
  ``ResetStrategy`` callback that switches ``multi_strategy`` mid-training,
  which skboost does not allow);
- ``test_predict.py::TestInplacePredict::test_dtypes`` and
  ``test_pd_dtypes`` (they iterate over ``xgboost.testing``'s tables of
  dtypes built for DMatrix; skboost's input dtypes are tested in
  ``test_data.py`` and ``test_frames.py``).

Differences these tests found, fixed in skboost: a learning rate of 0 and
rates above 1 were refused (XGBoost's range is [0, inf): ``run_eta_decay``
starts from ``eta=0`` and its decay function returns 4); ``...`` as an open
end of a slice (``booster[3:...]``) was a TypeError; ``reg:quantileerror``
gave a row on its prediction the gradient ``-alpha`` where XGBoost (and
LightGBM) give ``1 - alpha``, so on 0/1 labels no tree ever split
(``run_eta_decay_leaf_output``); the errors of empty slices now use
XGBoost's words ("Empty slice", "Invalid").

Differences kept (documented in ``doc/user_guide/switching.rst``): a
negative index in a slice counts from the end as in Python (XGBoost raises
an error); ``TrainingCheckPoint`` takes ``interval`` (XGBoost 2.0+'s name;
the older ``iterations`` is not accepted) and writes skboost model files
``*.ubj`` (XGBoost 2.1+ writes ``.ubj`` too; earlier versions ``.json``).
"""

import os
import pickle

import numpy as np
import pytest
from scipy.special import logit
from sklearn.datasets import (load_breast_cancer, load_iris,
                              load_svmlight_file, make_classification,
                              make_regression)

from skboost import Booster, BoostClassifier, BoostRegressor
from skboost.callback import LearningRateScheduler, TrainingCheckPoint

from _shared_data import shared_data_path


def _agaricus():
    """XGBoost's demo data (demo/data/agaricus.txt.*), bundled gzipped."""
    X_train, y_train = load_svmlight_file(
        str(shared_data_path("agaricus.txt.train")), n_features=126)
    X_test, y_test = load_svmlight_file(
        str(shared_data_path("agaricus.txt.test")), n_features=126)
    return X_train, y_train, X_test, y_test


def _error(preds, labels):
    return sum(1 for p, label in zip(preds, labels)
               if int(p > 0.5) != label) / float(len(preds))


# --------------------------------------------------------------------------
# DART
# --------------------------------------------------------------------------

def test_dart(tmp_path):
    """tests/python/test_basic_models.py::TestModels::test_dart."""
    X_train, y_train, X_test, y_test = _agaricus()
    param = dict(max_depth=5, objective="binary:logistic",
                 eval_metric="logloss", booster="dart")
    num_round = 2
    bst = BoostClassifier(n_estimators=num_round, **param).fit(
        X_train, y_train, eval_set=[(X_test, y_test), (X_train, y_train)])
    preds = bst.predict_proba(X_test, iteration_range=(0, num_round))[:, 1]
    # error must be smaller than 10%
    assert _error(preds, y_test) < 0.1

    # the model file round trip gives the same predictions
    model_path = tmp_path / "xgboost.model.dart.ubj"
    bst.save_model(model_path)
    bst2 = BoostClassifier()
    bst2.load_model(model_path)
    preds2 = bst2.predict_proba(X_test, iteration_range=(0, num_round))[:, 1]
    assert np.sum(np.abs(preds2 - preds)) == 0

    # a custom evaluation metric does not change the model
    def my_logloss(y_true, y_score):
        return np.sum(np.log(np.where(y_true, y_score, 1 - y_score)))

    bst3 = BoostClassifier(n_estimators=num_round,
                           **{**param, "eval_metric": my_logloss}).fit(
        X_train, y_train, eval_set=[(X_test, y_test), (X_train, y_train)])
    preds3 = bst3.predict_proba(X_test, iteration_range=(0, num_round))[:, 1]
    assert all(preds3 == preds)

    # sample_type and normalize_type work: each of the four gives another
    # model, every one with an error below 10%
    num_round = 50
    param.update(learning_rate=0.1, rate_drop=0.1)
    preds_list = []
    for sample_type in ("uniform", "weighted"):
        for normalize_type in ("tree", "forest"):
            bst = BoostClassifier(n_estimators=num_round, **param,
                                  sample_type=sample_type,
                                  normalize_type=normalize_type).fit(
                X_train, y_train, eval_set=[(X_test, y_test)])
            preds = bst.predict_proba(
                X_test, iteration_range=(0, num_round))[:, 1]
            assert _error(preds, y_test) < 0.1
            preds_list.append(preds)
    for ii in range(len(preds_list)):
        for jj in range(ii + 1, len(preds_list)):
            assert np.sum(np.abs(preds_list[ii] - preds_list[jj])) > 0


@pytest.mark.parametrize("booster", ["gbtree", "dart"])
def test_best_iteration(booster):
    """tests/python/test_with_sklearn.py::test_best_iteration (gbtree and
    dart; its gblinear case is not applicable)."""
    X, y = load_iris(return_X_y=True)
    rounds = 4
    cls = BoostClassifier(n_estimators=rounds, num_parallel_tree=4,
                          booster=booster, early_stopping_rounds=3).fit(
        X, y, eval_set=[(X, y)])
    assert cls.best_iteration == rounds - 1
    # best_iteration is used by default
    cls.predict(X)


def test_sklearn_api_dart():
    """tests/python/test_with_sklearn.py::run_sklearn_api, with
    booster='dart' (XGBoost runs it for gbtree and gblinear)."""
    from sklearn.model_selection import train_test_split

    iris = load_iris()
    tr_d, te_d, tr_l, te_l = train_test_split(
        iris.data, iris.target, train_size=120, test_size=0.2,
        random_state=0)
    classifier = BoostClassifier(booster="dart", n_estimators=10)
    classifier.fit(tr_d, tr_l)
    preds = classifier.predict(te_d)
    err = sum(1 for p, label in zip(preds, te_l) if p != label) / len(te_l)
    assert err < 0.2


# --------------------------------------------------------------------------
# Learning-rate schedules
# --------------------------------------------------------------------------

def _errors_with(scheduler, tree_method, **params):
    """The eval set's error per round (XGBoost's ``evals_result['eval']
    ['error']``) of a fit on agaricus with the scheduler."""
    X_train, y_train, X_test, y_test = _agaricus()
    model = BoostClassifier(n_estimators=4, max_depth=2,
                            eval_metric="error", tree_method=tree_method,
                            callbacks=[scheduler], **params)
    model.fit(X_train, y_train, eval_set=[(X_test, y_test)])
    assert isinstance(model.get_booster(), Booster)
    return list(map(float, model.evals_result()["validation_0"]["error"]))


@pytest.mark.parametrize("tree_method", ["hist", "approx", "exact"])
def test_eta_decay(tree_method):
    """tests/python/test_callback.py::TestCallbacks::run_eta_decay (its
    final ``xgb.cv`` call is not applicable)."""
    num_round = 4
    # learning_rates as a list; init eta with 0 to check whether
    # learning_rates work: validation error should decrease
    errors_0 = _errors_with(LearningRateScheduler([0.8, 0.7, 0.6, 0.5]),
                            tree_method, learning_rate=0)
    assert errors_0[0] > errors_0[-1]
    # learning_rates override the default learning_rate: with all 0 the
    # validation error does not decrease
    errors_2 = _errors_with(LearningRateScheduler([0, 0, 0, 0]), tree_method)
    assert errors_2[0] == errors_2[-1]

    # learning_rates as a customised decay function
    def eta_decay(ithround, num_boost_round=num_round):
        return num_boost_round / (ithround + 1)

    errors_3 = _errors_with(LearningRateScheduler(eta_decay), tree_method)
    assert errors_3[0] == errors_2[0]
    for i in range(1, len(errors_0)):
        assert errors_3[i] != errors_2[i]


@pytest.mark.parametrize("tree_method,objective", [
    ("hist", "binary:logistic"), ("hist", "reg:absoluteerror"),
    ("hist", "reg:quantileerror"), ("approx", "binary:logistic"),
    ("approx", "reg:absoluteerror"), ("approx", "reg:quantileerror")])
def test_eta_decay_leaf_output(tree_method, objective):
    """tests/python/test_callback.py::TestCallbacks::run_eta_decay_leaf_output:
    the rate of a round scales that round's leaves (also the leaves that
    adaptive objectives refit), and a schedule changed from round 2 on
    changes trees from round 3 on only (XGBoost's scheduler sets the rate
    after each round)."""
    X_train, y_train, _, _ = _agaricus()
    num_round = 4
    estimator = (BoostClassifier if objective == "binary:logistic"
                 else BoostRegressor)
    extra = {"quantile_alpha": 0.3} if objective == "reg:quantileerror" \
        else {}

    def eta_decay_0(i):
        return num_round / (i + 1)

    def eta_decay_1(i):
        if i > 1:
            return 5.0
        return num_round / (i + 1)

    boosters = [estimator(n_estimators=num_round, max_depth=2,
                          objective=objective, tree_method=tree_method,
                          callbacks=[LearningRateScheduler(decay)],
                          **extra).fit(X_train, y_train).get_booster()
                for decay in (eta_decay_0, eta_decay_1)]
    tree_2 = [b.trees[2] for b in boosters]
    tree_3 = [b.trees[3] for b in boosters]
    np.testing.assert_array_equal(tree_2[0].value, tree_2[1].value)
    np.testing.assert_array_equal(tree_2[0].threshold, tree_2[1].threshold)
    assert not np.array_equal(tree_3[0].value, tree_3[1].value)


# --------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------

def test_check_point(tmp_path):
    """tests/python/test_callback.py::TestCallbacks::test_check_point
    (``iterations=1`` -> ``interval=1``; model files ``.ubj``, as XGBoost
    2.1+ writes by default)."""
    X, y = load_breast_cancer(return_X_y=True)
    check_point = TrainingCheckPoint(directory=tmp_path, interval=1,
                                     name="model")
    BoostClassifier(objective="binary:logistic", n_estimators=10,
                    callbacks=[check_point]).fit(X, y)
    for i in range(1, 10):
        assert os.path.exists(os.path.join(tmp_path, f"model_{i}.ubj"))

    check_point = TrainingCheckPoint(directory=tmp_path, interval=1,
                                     as_pickle=True, name="model")
    BoostClassifier(objective="binary:logistic", n_estimators=10,
                    callbacks=[check_point]).fit(X, y)
    for i in range(1, 10):
        path = os.path.join(tmp_path, f"model_{i}.pkl")
        assert os.path.exists(path)
    with open(path, "rb") as f:
        assert pickle.load(f).num_boosted_rounds() == 10


# --------------------------------------------------------------------------
# Model slicing
# --------------------------------------------------------------------------

def _run_slice(booster, X, num_parallel_tree, num_classes, num_boost_round,
               end=7):
    """tests/python/test_basic_models.py::TestModels::run_slice, on the
    booster of a scikit-learn estimator (``booster.predict(DMatrix(X))`` ->
    ``booster.predict(X)``; ``feature_types`` -> ``feature_names``)."""
    beg = 3
    sliced = booster[beg:end]
    assert sliced.feature_names == booster.feature_names

    def n_trees(b):
        return len(b.get_dump())

    sliced_trees = (end - beg) * num_parallel_tree * num_classes
    assert sliced_trees == n_trees(sliced)
    sliced_trees = sliced_trees // 2
    assert sliced_trees == n_trees(booster[beg:end:2])
    sliced_trees = (num_boost_round - beg) * num_parallel_tree * num_classes
    assert sliced_trees == n_trees(booster[beg:])
    assert sliced_trees == n_trees(booster[beg:...])
    sliced_trees = end * num_parallel_tree * num_classes
    assert sliced_trees == n_trees(booster[:end])
    assert sliced_trees == n_trees(booster[...:end])

    with pytest.raises(ValueError, match=r">= 0"):
        booster[-1:0]
    # we do not accept empty slice.
    with pytest.raises(ValueError, match="Empty slice"):
        booster[1:1]
    # stop can not be smaller than begin
    with pytest.raises(ValueError, match=r"Invalid.*"):
        booster[3:0]
    # XGBoost refuses a negative stop (booster[3:-1], "Invalid"); skboost
    # counts it from the end as Python does (a documented difference: code
    # written for XGBoost never passes one)
    assert booster[3:-1].num_boosted_rounds() == num_boost_round - 4
    # negative step is not supported; step can not be 0.
    with pytest.raises(ValueError, match=r".*>= 1.*"):
        booster[0:2:-1]
    with pytest.raises(ValueError, match=r".*>= 1.*"):
        booster[0:2:0]

    trees = [_ for _ in booster]
    assert len(trees) == num_boost_round

    with pytest.raises(TypeError):
        booster["wrong type"]
    with pytest.raises(IndexError):
        booster[: num_boost_round + 1]
    with pytest.raises(ValueError):
        booster[1, 2]  # too many dims
    # setitem is not implemented as model is immutable during slicing.
    with pytest.raises(TypeError):
        booster[:end] = booster

    sliced_0 = booster[1:3]
    np.testing.assert_allclose(booster.predict(X, iteration_range=(1, 3)),
                               sliced_0.predict(X))
    sliced_1 = booster[3:7]
    np.testing.assert_allclose(booster.predict(X, iteration_range=(3, 7)),
                               sliced_1.predict(X))
    # XGBoost subtracts its base score 0.5; skboost's multiclass base
    # margin is the centred log prior of each class
    base = booster.base_margin
    predt_0 = sliced_0.predict(X, output_margin=True)
    predt_1 = sliced_1.predict(X, output_margin=True)
    single = booster[1:7].predict(X, output_margin=True)
    np.testing.assert_allclose(predt_0 + predt_1 - base, single, atol=1e-6)

    predt_0 = booster[1:7:2].predict(X, output_margin=True)   # 1, 3, 5
    predt_1 = booster[2:8:2].predict(X, output_margin=True)   # 2, 4, 6
    single = booster[1:7].predict(X, output_margin=True)
    np.testing.assert_allclose(predt_0 + predt_1 - base, single, atol=1e-6)


@pytest.mark.parametrize("booster_name", ["gbtree", "dart"])
def test_slice(booster_name, tmp_path):
    """tests/python/test_basic_models.py::TestModels::test_slice."""
    num_classes = 3
    X, y = make_classification(n_samples=1000, n_informative=5,
                               n_classes=num_classes, random_state=0)
    num_parallel_tree = 4
    num_boost_round = 16
    total_trees = num_parallel_tree * num_classes * num_boost_round
    model = BoostClassifier(num_parallel_tree=num_parallel_tree,
                            subsample=0.5, booster=booster_name,
                            objective="multi:softprob",
                            n_estimators=num_boost_round,
                            random_state=0).fit(X, y)
    booster = model.get_booster()
    assert len(booster.get_dump()) == total_trees
    assert booster[...].num_boosted_rounds() == num_boost_round
    _run_slice(booster, X, num_parallel_tree, num_classes, num_boost_round)

    path = tmp_path / "model.ubj"
    booster.save_model(path)
    loaded = Booster()
    loaded.load_model(path)
    _run_slice(loaded, X, num_parallel_tree, num_classes, num_boost_round,
               end=np.int32(7))


def test_model_slices_demo():
    """demo/guide-python/individual_trees.py: predictions from the trees
    one at a time (``iteration_range``, then model slices ``booster[t]``),
    each round's margin fed to the next as the base margin, equal the
    model's prediction."""
    X_train, y_train, X_test, _ = _agaricus()
    n_rounds = 4
    base_score = 0.5
    model = BoostRegressor(max_depth=2, learning_rate=1,
                           objective="reg:logistic", tree_method="hist",
                           base_score=base_score,
                           n_estimators=n_rounds).fit(X_train, y_train)
    booster = model.get_booster()
    full = booster.predict(X_test, output_margin=False)

    # individual_tree(): iteration_range picks one tree
    scores = np.full((X_test.shape[0],), logit(base_score))
    for i in range(n_rounds):
        scores = model.predict(X_test, base_margin=scores,
                               iteration_range=(i, i + 1),
                               output_margin=i < n_rounds - 1)
    np.testing.assert_allclose(scores, full)

    # model_slices(): the same with the sliced boosters
    trees = [booster[t] for t in range(n_rounds)]
    scores = np.full((X_test.shape[0],), logit(base_score))
    for i, tree in enumerate(trees):
        scores = tree.inplace_predict(
            X_test, base_margin=scores,
            predict_type="margin" if i < n_rounds - 1 else "value")
    np.testing.assert_allclose(scores, full, rtol=1e-6)


# --------------------------------------------------------------------------
# inplace_predict
# --------------------------------------------------------------------------

def _boost_from_prediction_multi_class(estimator, tree_method, X, y,
                                       as_frame):
    """xgboost/testing/with_skl.py::run_boost_from_prediction_multi_clasas
    (the body of tests/python/test_with_sklearn.py::
    test_boost_from_prediction): 4 rounds, then 4 more from their
    ``inplace_predict`` margins, equal 8 rounds."""
    model_0 = estimator(learning_rate=0.3, random_state=0, n_estimators=4,
                        tree_method=tree_method).fit(X, y)
    margin = model_0.get_booster().inplace_predict(X, predict_type="margin")
    if as_frame is not None:
        margin = as_frame(margin)
    model_1 = estimator(learning_rate=0.3, random_state=0, n_estimators=4,
                        tree_method=tree_method).fit(X, y, base_margin=margin)
    # predict(DMatrix(X, base_margin=margin), output_margin=True): the
    # Booster takes a base margin in inplace_predict
    predictions_1 = model_1.get_booster().inplace_predict(
        X, base_margin=np.asarray(margin), predict_type="margin")
    model_2 = estimator(learning_rate=0.3, random_state=0, n_estimators=8,
                        tree_method=tree_method).fit(X, y)
    predictions_2 = model_2.get_booster().inplace_predict(
        X, predict_type="margin")
    np.testing.assert_allclose(predictions_1, predictions_2, atol=1e-6)


@pytest.mark.parametrize("tree_method", ["hist", "approx", "exact"])
def test_boost_from_prediction(tree_method):
    """tests/python/test_with_sklearn.py::test_boost_from_prediction, its
    multi-output cases (those that call ``inplace_predict``): iris with a
    classifier, numpy and pandas margins, and a 4-target regression."""
    pd = pytest.importorskip("pandas")
    X, y = load_iris(return_X_y=True)
    _boost_from_prediction_multi_class(BoostClassifier, tree_method, X, y,
                                       None)
    _boost_from_prediction_multi_class(BoostClassifier, tree_method, X, y,
                                       pd.DataFrame)
    X, y = make_regression(n_samples=100, n_targets=4, random_state=0)
    _boost_from_prediction_multi_class(BoostRegressor, tree_method, X, y,
                                       None)


class TestInplacePredict:
    """tests/python/test_predict.py::TestInplacePredict (test_predict,
    test_predict_pd, test_base_margin): ``xgb.train({"tree_method":
    "hist"}, DMatrix(X, y), 10)`` -> ``BoostRegressor(n_estimators=10)``;
    ``predict(DMatrix(X, missing=11))`` -> ``predict`` of X with the 11s
    as NaN; ``DMatrix(X, base_margin=m)`` -> the estimator's
    ``predict(X, base_margin=m)``."""

    rows, cols, missing, num_boost_round = 1000, 10, 11, 10

    @classmethod
    def setup_class(cls):
        rng = np.random.RandomState(1994)
        cls.rng = rng
        cls.X = rng.randn(cls.rows, cls.cols)
        cls.X[:, list(range(0, cls.cols, 4))] = cls.missing
        cls.y = rng.randn(cls.rows)
        cls.model = BoostRegressor(tree_method="hist",
                                   n_estimators=cls.num_boost_round).fit(
            cls.X, cls.y)
        cls.booster = cls.model.get_booster()
        test = cls.X[:10, ...].copy()
        test[test == cls.missing] = np.nan
        cls.test = test

    def test_predict(self):
        from concurrent.futures import ThreadPoolExecutor

        import scipy.sparse as sp

        booster, X, test = self.booster, self.X, self.test
        predt_from_array = booster.inplace_predict(X[:10, ...],
                                                   missing=self.missing)
        predt_from_dmatrix = booster.predict(test)
        X_obj = X.copy().astype(object)
        assert X_obj.dtype.hasobject is True
        np.testing.assert_allclose(booster.inplace_predict(X_obj),
                                   booster.inplace_predict(X))
        np.testing.assert_allclose(predt_from_dmatrix, predt_from_array)

        predt_from_array = booster.inplace_predict(
            X[:10, ...], iteration_range=(0, 4), missing=self.missing)
        predt_from_dmatrix = booster.predict(test, iteration_range=(0, 4))
        np.testing.assert_allclose(predt_from_dmatrix, predt_from_array)

        with pytest.raises(ValueError):
            booster.predict(test, iteration_range=(
                0, booster.num_boosted_rounds() + 2))
        default = booster.predict(test)
        np.testing.assert_allclose(booster.predict(
            test, iteration_range=(0, self.num_boost_round)), default)
        np.testing.assert_allclose(booster.predict(
            test, iteration_range=(0, booster.num_boosted_rounds())),
            default)

        # run_threaded_predict: 10 threads predicting 20-row blocks
        def threaded(predict_func):
            with ThreadPoolExecutor(max_workers=10) as executor:
                futures = [executor.submit(predict_func, X[i:i + 20, ...])
                           for i in range(0, self.rows, self.rows // 20)]
            assert all(f.result() for f in futures)

        def predict_dense(x):
            return np.all(booster.predict(x) == booster.inplace_predict(x))

        def predict_csr(x):
            return np.all(booster.predict(x)
                          == booster.inplace_predict(sp.csr_matrix(x)))

        for _ in range(10):
            threaded(predict_dense)
            threaded(predict_csr)

    # a frame's column names on a model fitted on an array: scikit-learn's
    # warning (XGBoost's booster says nothing); the predictions are the same
    @pytest.mark.filterwarnings("ignore:X has feature names")
    def test_predict_pd(self):
        pd = pytest.importorskip("pandas")
        X = self.X
        # column-major frame, as XGBoost's test builds it
        df = pd.DataFrame({str(i): X[:, i] for i in range(X.shape[1])})
        df_predt = self.booster.inplace_predict(df)
        arr_predt = self.booster.inplace_predict(X)
        dmat_predt = self.booster.predict(X)
        fort_predt = self.booster.inplace_predict(np.asfortranarray(
            df.values))
        np.testing.assert_allclose(dmat_predt, arr_predt)
        np.testing.assert_allclose(df_predt, arr_predt)
        np.testing.assert_allclose(fort_predt, arr_predt)

    def test_base_margin(self):
        base_margin = self.rng.randn(self.rows)
        from_inplace = self.booster.inplace_predict(data=self.X,
                                                    base_margin=base_margin)
        from_dmatrix = self.model.predict(self.X, base_margin=base_margin)
        np.testing.assert_allclose(from_dmatrix, from_inplace)
