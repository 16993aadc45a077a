"""DART (``booster="dart"``, issue 37).

Oracles: the gbtree model (``rate_drop=0`` must be it bit for bit); the
paper's weight recurrence in closed form (``rate_drop=1`` drops every tree,
so every round fits the gradients at the base margin and the weights
follow ``k / (k + lr)`` and ``1 / (k + lr)``); a naive sum of the trees at
their weights; SHAP's local accuracy; XGBoost's DART on the same data (test
accuracy within noise, over seeds); onnxruntime on the export.
"""

import json
import pickle

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, make_friedman1

from skboost import BoostClassifier, BoostRegressor

DART = dict(booster="dart", rate_drop=0.2, random_state=0)


def _regression(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + 0.3 * rng.normal(size=n)
    return X, y


def _naive_margins(booster, X):
    """base margin + sum of every tree's output times its weight, tree by
    tree through a one-tree booster (no weights involved)."""
    from skboost._model.train import single_tree_booster

    X32 = np.ascontiguousarray(X, dtype=np.float32)
    out = np.tile(booster.base_margin, (X.shape[0], 1))
    for tree, group, weight in zip(booster.trees, booster.tree_group,
                                   booster.tree_weights):
        out[:, group] += weight * single_tree_booster(
            tree, X32).predict_raw(X32)[:, 0]
    return out


@pytest.mark.parametrize("params", [
    dict(tree_method="hist"), dict(tree_method="exact"),
    dict(tree_method="approx", subsample=0.7, colsample_bynode=0.6),
    dict(num_parallel_tree=2, subsample=0.8),
])
def test_rate_drop_zero_is_gbtree_bit_for_bit(params):
    X, y = _regression()
    yc = (y > np.median(y)).astype(int) + (y > 1.0).astype(int)
    for cls, target in [(BoostRegressor, y), (BoostClassifier, yc)]:
        common = dict(n_estimators=12, max_depth=4, random_state=1, **params)
        gbtree = cls(**common).fit(X, target)
        dart = cls(booster="dart", rate_drop=0.0, skip_drop=0.3,
                   **common).fit(X, target)
        assert np.array_equal(gbtree.predict(X), dart.predict(X))
        for a, b in zip(gbtree.get_booster().trees,
                        dart.get_booster().trees):
            assert np.array_equal(a.value, b.value)


@pytest.mark.parametrize("normalize_type", ["tree", "forest"])
def test_dropping_every_tree_follows_the_weight_recurrence(normalize_type):
    """rate_drop=1: every earlier tree dropped each round, so each round's
    gradients are those at the base margin, every tree is the first one,
    and the weights follow the recurrence in closed form."""
    X, y = _regression(300)
    eta, rounds = 0.3, 6
    model = BoostRegressor(n_estimators=rounds, max_depth=3,
                           learning_rate=eta, base_score=0.5,
                           normalize_type=normalize_type,
                           **dict(DART, rate_drop=1.0)).fit(X, y)
    booster = model.get_booster()
    expected = [1.0]
    for k in range(1, rounds):      # k trees dropped in round k
        if normalize_type == "tree":
            expected = [w * k / (k + eta) for w in expected] + [1 / (k + eta)]
        else:
            expected = [w / (1 + eta) for w in expected] + [1 / (1 + eta)]
    np.testing.assert_allclose(booster.tree_weights, expected, rtol=1e-12)
    first = booster.trees[0]
    for tree in booster.trees[1:]:
        assert np.array_equal(tree.value, first.value)
        assert np.array_equal(tree.feature, first.feature)
    np.testing.assert_allclose(model.predict(X, output_margin=True),
                               _naive_margins(booster, X)[:, 0], rtol=1e-12)


def test_predictions_are_the_trees_at_their_weights():
    X, y = _regression()
    model = BoostRegressor(n_estimators=30, max_depth=3, **DART).fit(X, y)
    booster = model.get_booster()
    assert len(set(booster.tree_weights)) > 3     # the weights did change
    np.testing.assert_allclose(model.predict(X, output_margin=True),
                               _naive_margins(booster, X)[:, 0], rtol=1e-9)
    # iteration_range: the first rounds at their final weights (XGBoost's)
    head = _naive_margins(booster[:10], X)[:, 0]
    np.testing.assert_allclose(
        model.predict(X, output_margin=True, iteration_range=(0, 10)), head,
        rtol=1e-9)


def test_eval_log_follows_the_weights():
    """The eval-set margins, updated round by round as trees are dropped
    and rescaled, end where the final model's predictions are."""
    X, y = _regression(800)
    model = BoostRegressor(n_estimators=25, max_depth=3, eval_metric="rmse",
                           **DART).fit(X[:600], y[:600],
                                       eval_set=[(X[600:], y[600:])])
    rmse = np.sqrt(np.mean((model.predict(X[600:]) - y[600:]) ** 2))
    assert model.evals_result_["validation_0"]["rmse"][-1] == pytest.approx(
        rmse, rel=1e-9)


def test_same_model_whatever_the_threads():
    X, y = _regression()
    models = [BoostRegressor(n_estimators=20, n_jobs=n, **DART).fit(X, y)
              for n in (1, 2)]
    assert np.array_equal(models[0].predict(X), models[1].predict(X))
    assert models[0].get_booster().tree_weights == \
        models[1].get_booster().tree_weights


def test_one_drop_and_skip_drop():
    X, y = _regression(200)
    # one_drop with a tiny rate: a tree dropped in every round after the first
    model = BoostRegressor(n_estimators=8, booster="dart", rate_drop=1e-9,
                           one_drop=True, random_state=0).fit(X, y)
    assert all(w != 1.0 for w in model.get_booster().tree_weights[1:])
    # skip_drop=1: no round drops anything (gbtree's weights)
    model = BoostRegressor(n_estimators=8, booster="dart", rate_drop=0.9,
                           skip_drop=1.0, random_state=0).fit(X, y)
    assert model.get_booster().tree_weights == [1.0] * 8


def test_saved_and_pickled_with_their_weights(tmp_path):
    X, y = _regression()
    model = BoostClassifier(n_estimators=15, **DART).fit(X, y > 0)
    for suffix in (".json", ".ubj"):
        model.save_model(tmp_path / f"m{suffix}")
        loaded = BoostClassifier.load(tmp_path / f"m{suffix}")
        assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
        assert loaded.get_booster().tree_weights == \
            model.get_booster().tree_weights
    assert np.array_equal(
        pickle.loads(pickle.dumps(model)).predict_proba(X),
        model.predict_proba(X))


@pytest.mark.parametrize("weights, match", [
    ([1.0], "one per tree"), ("x", "one per tree"),
    (None, "numbers"), (-1.0, "finite and >= 0"), ("nan", "finite")])
def test_damaged_tree_weights_are_refused(tmp_path, weights, match):
    X, y = _regression(100)
    model = BoostRegressor(n_estimators=3, **DART).fit(X, y)
    model.save_model(tmp_path / "m.json")
    document = json.loads((tmp_path / "m.json").read_text())
    stored = document["model"]["booster"]["tree_weights"]
    if isinstance(weights, list) or weights == "x":
        document["model"]["booster"]["tree_weights"] = weights
    else:
        stored[1] = weights
    document["checksum"] = None   # the reader checks the fields first
    from skboost._io.model_file import _checksum

    document["checksum"] = _checksum(document["model"])
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=match):
        BoostRegressor.load(tmp_path / "bad.json")


def test_shap_values_add_up_to_the_weighted_margins():
    X, y = _regression(300)
    model = BoostRegressor(n_estimators=20, max_depth=3, **DART).fit(X, y)
    contributions = model.get_booster().predict(
        X.astype(np.float32), pred_contribs=True)
    np.testing.assert_allclose(contributions.sum(axis=1),
                               model.predict(X, output_margin=True),
                               rtol=1e-6, atol=1e-6)


def test_onnx_export_weights_the_trees():
    rt = pytest.importorskip("onnxruntime")
    from skboost.onnx import to_onnx

    X, y = _regression(300)
    model = BoostRegressor(n_estimators=20, max_depth=3, **DART).fit(X, y)
    onnx_model = to_onnx(model, X[:1].astype(np.float32))
    session = rt.InferenceSession(onnx_model.SerializeToString(),
                                  providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    out = session.run(None, {name: X.astype(np.float32)})[0].ravel()
    np.testing.assert_allclose(out, model.predict(X), rtol=1e-4, atol=1e-4)


def test_early_stopping_and_slices_keep_the_weights():
    X, y = _regression(800)
    model = BoostRegressor(n_estimators=200, early_stopping_rounds=5,
                           learning_rate=0.5, **DART).fit(
        X[:600], y[:600], eval_set=[(X[600:], y[600:])])
    booster = model.get_booster()
    best = model.best_iteration
    assert best < 199
    np.testing.assert_allclose(
        model.predict(X[600:], output_margin=True),
        _naive_margins(booster[:best + 1], X[600:])[:, 0], rtol=1e-9)


def test_refused_where_it_cannot_run():
    X, y = _regression(100)
    with pytest.raises(ValueError, match="multi_output_tree"):
        BoostClassifier(booster="dart", multi_strategy="multi_output_tree",
                        n_estimators=2).fit(X, np.digitize(y, [-1, 1]))
    with pytest.raises(ValueError, match="booster"):
        BoostRegressor(booster="gblinear").fit(X, y)
    # (on Dask: tests/test_dask_objectives.py)


# -- accuracy beside XGBoost's DART --------------------------------------------

def _data_sets():
    X1, y1 = load_diabetes(return_X_y=True)
    X2, y2 = make_friedman1(n_samples=1500, noise=1.0, random_state=0)
    X3, y3 = load_breast_cancer(return_X_y=True)
    return [("diabetes", X1, y1, "regression"),
            ("friedman1", X2, y2, "regression"),
            ("breast_cancer", X3, y3, "classification")]


@pytest.mark.parametrize("name", ["diabetes", "friedman1", "breast_cancer"])
def test_accuracy_within_noise_of_xgboost_dart(name):
    """Test error (RMSE, or log-loss) over 5 seeds (the seed drives the
    drops and the split): the mean difference from XGBoost's DART within
    twice its standard error."""
    xgb = pytest.importorskip("xgboost")
    from sklearn.metrics import log_loss, mean_squared_error
    from sklearn.model_selection import train_test_split

    _, X, y, task = next(d for d in _data_sets() if d[0] == name)
    params = dict(n_estimators=60, max_depth=3, learning_rate=0.2,
                  booster="dart", rate_drop=0.1, skip_drop=0.5)
    differences = []
    for seed in range(5):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=seed)
        if task == "regression":
            ours = BoostRegressor(**params, random_state=seed).fit(X_tr, y_tr)
            theirs = xgb.XGBRegressor(**params, random_state=seed).fit(X_tr,
                                                                       y_tr)
            errors = [mean_squared_error(y_te, m.predict(X_te)) ** 0.5
                      for m in (ours, theirs)]
        else:
            ours = BoostClassifier(**params, random_state=seed).fit(X_tr, y_tr)
            theirs = xgb.XGBClassifier(**params, random_state=seed).fit(X_tr,
                                                                        y_tr)
            errors = [log_loss(y_te, m.predict_proba(X_te))
                      for m in (ours, theirs)]
        differences.append(errors[0] - errors[1])
    mean, spread = np.mean(differences), np.std(differences, ddof=1)
    assert mean <= 2 * spread / np.sqrt(5) + 1e-3 * abs(np.mean(
        [abs(d) for d in differences]) + 1)
