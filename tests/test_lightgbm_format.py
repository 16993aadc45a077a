"""LightGBM's text model files read by skboost
(``skboost/_io/lightgbm_format.py``).

The oracle is the installed LightGBM: each case trains a model with it,
saves it with ``booster_.save_model``, and skboost's estimator loaded from
the file must predict what LightGBM predicts on the same float32 rows
(missing values among them, and rows whose values sit exactly on a split
threshold and on the float32 values next to it): raw scores within 1e-9
(both sum the leaf values in float64), probabilities and predictions alike;
SHAP values (``pred_contrib``) within 1e-6; ``apply`` reaching leaves of the
same values as LightGBM's ``pred_leaf``.
"""

import numpy as np
import pytest

from skboost import BoostClassifier, BoostRanker, BoostRegressor
from skboost._io.lightgbm_format import float32_at_most

lgb = pytest.importorskip("lightgbm")
pd = pytest.importorskip("pandas")

N_ROWS = 500


def _features(rng, n=N_ROWS, d=4, missing=0.1):
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < missing] = np.nan
    return X


def _signal(X):
    Z = np.nan_to_num(X)
    return Z[:, 0] + np.sin(2 * Z[:, 1]) + 0.5 * Z[:, 2] * Z[:, 3]


COMMON = dict(n_estimators=12, num_leaves=8, min_child_samples=5,
              verbose=-1)


def _regression(objective, **params):
    def fit(rng):
        X = _features(rng)
        s = _signal(X)
        y = {"poisson": np.round(np.exp(s / 2)), "gamma": np.exp(s / 2),
             "tweedie": np.exp(s / 2) * (rng.random(N_ROWS) < 0.8),
             "cross_entropy": 1 / (1 + np.exp(-s))}.get(objective, s)
        return lgb.LGBMRegressor(objective=objective, **COMMON,
                                 **params).fit(X, y), X
    return fit


def _classifier(n_classes):
    def fit(rng):
        X = _features(rng)
        y = np.digitize(_signal(X), np.quantile(
            _signal(X), np.linspace(0, 1, n_classes + 1)[1:-1]))
        return lgb.LGBMClassifier(**COMMON).fit(X, y), X
    return fit


def _ranker(rng):
    X = _features(rng)
    y = np.digitize(_signal(X), [-1, 0, 1])
    return lgb.LGBMRanker(**COMMON).fit(X, y, group=[20] * (N_ROWS // 20)), X


def _categorical_frame(rng):
    X = _features(rng, d=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    codes = rng.integers(0, 6, N_ROWS)
    frame["k"] = pd.Categorical(np.array(list("uvwxyz"))[codes])
    frame.loc[rng.random(N_ROWS) < 0.05, "k"] = np.nan
    y = _signal(np.c_[X, X[:, :1]]) + np.isin(codes, [1, 4]) * 2.0
    return lgb.LGBMRegressor(**COMMON, min_data_per_group=5,
                             cat_smooth=1).fit(frame, y), frame


def _categorical_codes(rng):
    X = _features(rng)
    X[:, 3] = rng.integers(0, 40, N_ROWS)
    y = np.nan_to_num(X[:, 0]) + np.isin(X[:, 3], [1, 4, 33, 35]) * 2.0
    return lgb.LGBMRegressor(**COMMON, min_data_per_group=5,
                             cat_smooth=1).fit(
        X, y, categorical_feature=[3]), X


def _no_missing_type(rng):
    """use_missing=False: missing type None, NaN read as 0.0."""
    X = _features(rng)
    return lgb.LGBMRegressor(**COMMON, use_missing=False).fit(
        X, _signal(X)), X


def _integer_features(rng):
    """Integer values: thresholds sit between them, rows equal to the
    split values."""
    X = rng.integers(-5, 6, size=(N_ROWS, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return lgb.LGBMRegressor(**COMMON).fit(X, _signal(X)), X


CASES = {
    "regression": _regression("regression"),
    "regression_l1": _regression("regression_l1"),
    "quantile": _regression("quantile", alpha=0.3),
    "poisson": _regression("poisson"),
    "gamma": _regression("gamma"),
    "tweedie": _regression("tweedie", tweedie_variance_power=1.3),
    "cross_entropy": _regression("cross_entropy"),
    "binary": _classifier(2),
    "multiclass": _classifier(4),
    "lambdarank": _ranker,
    "categorical_frame": _categorical_frame,
    "categorical_codes": _categorical_codes,
    "no_missing_type": _no_missing_type,
    "integer_features": _integer_features,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lightgbm_models")
    out = {}
    for index, (name, fit) in enumerate(sorted(CASES.items())):
        model, X = fit(np.random.default_rng(index))
        path = folder / f"{name}.txt"
        model.booster_.save_model(path)
        out[name] = model, X, path
    return out


def _loaded(model, path):
    if isinstance(model, lgb.LGBMClassifier):
        return BoostClassifier.load(path)
    if isinstance(model, lgb.LGBMRanker):
        return BoostRanker.load(path)
    return BoostRegressor.load(path)


def _on_thresholds(model, X):
    """X plus rows whose values are each numeric split's threshold, as
    float32, and the float32 values on either side of it."""
    frame = model.booster_.trees_to_dataframe()
    numeric = frame[frame["decision_type"] == "<="]
    rows = []
    names = list(model.booster_.feature_name())
    base = np.asarray(X[:1] if not hasattr(X, "iloc") else X.iloc[:1])
    for feature, threshold in zip(numeric["split_feature"],
                                  numeric["threshold"]):
        t = np.float32(threshold)
        for value in (np.nextafter(t, np.float32(-np.inf)), t,
                      np.nextafter(t, np.float32(np.inf))):
            row = base.copy()
            row[0, names.index(feature)] = value
            rows.append(row)
    if hasattr(X, "iloc"):
        extra = pd.DataFrame(np.concatenate(rows), columns=X.columns).astype(
            X.dtypes.to_dict()) if rows else X.iloc[:0]
        return pd.concat([X, extra], ignore_index=True)
    return np.concatenate([X, *rows]).astype(np.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_predictions_equal_lightgbm(models, name):
    model, X, path = models[name]
    ours = _loaded(model, path)
    rows = _on_thresholds(model, X)
    raw = model.predict(rows, raw_score=True)
    np.testing.assert_allclose(
        ours.get_booster().predict(rows, output_margin=True).reshape(
            raw.shape), raw, rtol=1e-9, atol=1e-9)
    if isinstance(model, lgb.LGBMClassifier):
        np.testing.assert_allclose(ours.predict_proba(rows),
                                   model.predict_proba(rows), atol=1e-9)
        np.testing.assert_array_equal(ours.predict(rows), model.predict(rows))
    else:
        np.testing.assert_allclose(ours.predict(rows), model.predict(rows),
                                   rtol=1e-9, atol=1e-9)


def test_rows_on_thresholds_are_tested(models):
    model, X, _ = models["regression"]
    assert _on_thresholds(model, X).shape[0] > X.shape[0] + 30


@pytest.mark.parametrize("name", sorted(CASES))
def test_contributions_and_leaves_equal_lightgbm(models, name):
    model, X, path = models[name]
    ours = _loaded(model, path)
    theirs = model.predict(X, pred_contrib=True)
    mine = ours.get_booster().predict(X, pred_contribs=True)
    np.testing.assert_allclose(np.asarray(mine).reshape(theirs.shape),
                               theirs, rtol=1e-6, atol=1e-6)
    leaves = model.predict(X, pred_leaf=True)
    dump = model.booster_.dump_model()["tree_info"]
    got = np.asarray(ours.apply(X))
    for t, tree in enumerate(ours.get_booster().trees):
        values = _leaf_values(dump[t]["tree_structure"])
        np.testing.assert_array_equal(tree.value[got[:, t]],
                                      values[leaves[:, t]])


def _leaf_values(root):
    """LightGBM's leaf values of a dumped tree, by leaf index."""
    values, stack = {}, [root]
    while stack:
        node = stack.pop()
        if "leaf_value" in node:
            values[node.get("leaf_index", 0)] = node["leaf_value"]
        else:
            stack += [node["left_child"], node["right_child"]]
    return np.array([values[i] for i in range(len(values))])


def test_float32_at_most_is_exact():
    """x <= t in double equals x < float32_at_most(t) for float32 x, on
    thresholds between float32 values, on them, and at the extremes."""
    rng = np.random.default_rng(0)
    thresholds = np.concatenate([rng.normal(size=200), [0.0, -0.0, 1e-35,
                                                        3.0, 1e38, -1e38]])
    for threshold in thresholds:
        t = np.float32(threshold)
        xs = np.array([np.nextafter(t, np.float32(-np.inf)), t,
                       np.nextafter(t, np.float32(np.inf))], dtype=np.float32)
        converted = np.float32(float32_at_most(float(threshold)))
        np.testing.assert_array_equal(xs.astype(np.float64) <= threshold,
                                      xs < converted)


def test_feature_names_and_categories(models):
    model, X, path = models["categorical_frame"]
    ours = BoostRegressor.load(path)
    assert list(ours.feature_names_in_) == ["a", "b", "c", "k"]
    assert list(ours.categories_["k"]) == list("uvwxyz")
    model, X, path = models["categorical_codes"]
    ours = BoostRegressor.load(path)
    assert not hasattr(ours, "feature_names_in_")
    assert list(ours.categories_[3]) == list(range(40))


# ------------------------------------------------------------ refusals


def test_linear_trees_and_forests_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = _features(rng, missing=0)
    y = _signal(X)
    linear = lgb.LGBMRegressor(linear_tree=True, n_estimators=3,
                               verbose=-1).fit(X, y)
    linear.booster_.save_model(tmp_path / "linear.txt")
    with pytest.raises(ValueError, match="linear tree"):
        BoostRegressor.load(tmp_path / "linear.txt")
    forest = lgb.LGBMRegressor(boosting_type="rf", n_estimators=3,
                               subsample=0.8, subsample_freq=1,
                               verbose=-1).fit(X, y)
    forest.booster_.save_model(tmp_path / "forest.txt")
    with pytest.raises(ValueError, match="random forest"):
        BoostRegressor.load(tmp_path / "forest.txt")


def test_unknown_objective_and_zero_as_missing(models, tmp_path):
    _, _, path = models["regression"]
    text = path.read_text()
    forged = tmp_path / "forged.txt"
    forged.write_text(text.replace("objective=regression",
                                   "objective=huber", 1))
    with pytest.raises(ValueError, match="'huber' has no skboost"):
        BoostRegressor.load(forged)
    rng = np.random.default_rng(1)
    X = _features(rng, missing=0)
    X[rng.random(X.shape) < 0.3] = 0.0
    model = lgb.LGBMRegressor(zero_as_missing=True, **COMMON).fit(
        X, _signal(X) + 3 * (X[:, 0] == 0))
    model.booster_.save_model(tmp_path / "zero.txt")
    try:
        ours = BoostRegressor.load(tmp_path / "zero.txt")
    except ValueError as exc:
        assert "zero_as_missing" in str(exc)
    else:   # every split's zeros compare to their missing side: exact
        np.testing.assert_allclose(ours.predict(X), model.predict(X),
                                   rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("damage", [
    ("num_leaves=8", "num_leaves=9"), ("left_child=", "left_child=7 "),
    ("decision_type=", "decision_type=12 "), ("end of trees", ""),
    ("max_feature_idx=3", "max_feature_idx=1"),
    ("leaf_value=", "leaf_value=nan "), ("threshold=", "threshold=x ")])
def test_forged_files(models, tmp_path, damage):
    _, _, path = models["regression"]
    old, new = damage
    forged = tmp_path / "forged.txt"
    forged.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(ValueError, match="not a valid LightGBM model file"):
        BoostRegressor.load(forged)
