"""Conformal intervals and prediction sets (``_estimators/conformal.py``).

Oracles: the exchangeability guarantee itself (the coverage of split
conformal given its calibration set is Beta(k, n + 1 - k) distributed,
k = ceil((n + 1)(1 - alpha)): the mean coverage over many independent
draws is checked against k / (n + 1) within a tolerance derived from that
Beta distribution and the binomial test rows), a brute-force order
statistic, and MAPIE 1.6 computing the intervals of the very same models.
The draws use a fresh seed each run (printed on failure): the tolerance is
4.5 standard deviations, a false failure about once in 150,000 runs.
"""

import math
import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skboost import BoostClassifier, BoostRegressor, conformal
from skboost._estimators.conformal import conformal_threshold

ALPHA = 0.1
N_CAL = 49          # (n + 1)(1 - alpha) = 45: exact rank, coverage 0.9
N_TEST = 200
N_DRAWS = 200


def _regression(n, rng):
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, 2.0 * X[:, 0] + np.exp(X[:, 1]) * rng.normal(size=n)


def _classification(n, rng):
    X = rng.normal(size=(n, 4))
    logits = np.column_stack([X[:, 0], X[:, 1], 0.5 * X[:, 0] - X[:, 2]]) * 4
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return X, (rng.uniform(size=(n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)


def _beta_tolerance(n, alpha, n_test, n_draws, sds=4.5):
    """The expected coverage k/(n+1) of split conformal with continuous
    scores and the tolerance of a mean over ``n_draws`` independent draws
    of a calibration set and ``n_test`` test rows: per draw, coverage is
    Binomial(n_test, C) / n_test with C ~ Beta(k, n + 1 - k)."""
    k = math.ceil((n + 1) * (1 - alpha))
    a, b = k, n + 1 - k
    mean = a / (a + b)
    var_c = a * b / ((a + b) ** 2 * (a + b + 1))
    var = var_c + (mean - (var_c + mean ** 2)) / n_test
    return mean, sds * math.sqrt(var / n_draws)


def _mean_coverage(model, draw, n_draws, covered):
    seed = np.random.SeedSequence().entropy
    rng = np.random.default_rng(seed)
    coverages = []
    for _ in range(n_draws):
        X_cal, y_cal = draw(N_CAL, rng)
        X_test, y_test = draw(N_TEST, rng)
        model.conformalize(X_cal, y_cal, **model._test_method)
        coverages.append(np.mean(covered(model, X_test, y_test)))
    return float(np.mean(coverages)), seed


def _in_interval(model, X, y):
    lower, upper = model.predict_interval(X, ALPHA)
    return (lower <= y) & (y <= upper)


@pytest.mark.parametrize("method", ["split", "cqr"])
def test_split_and_cqr_coverage_is_the_beta_distributions(method):
    rng = np.random.default_rng()
    X, y = _regression(500, rng)
    kwargs = (dict(objective="reg:quantileerror", quantile_alpha=[0.05, 0.95])
              if method == "cqr" else {})
    model = BoostRegressor(n_estimators=30, max_depth=3, learning_rate=0.2,
                           **kwargs).fit(X, y)
    model._test_method = {"method": method}
    mean, seed = _mean_coverage(model, _regression, N_DRAWS, _in_interval)
    expected, tolerance = _beta_tolerance(N_CAL, ALPHA, N_TEST, N_DRAWS)
    # the guarantee: 1 - alpha <= expected <= 1 - alpha + 1 / (n + 1)
    assert 1 - ALPHA <= expected <= 1 - ALPHA + 1 / (N_CAL + 1)
    assert abs(mean - expected) <= tolerance, (mean, expected, seed)


def test_aps_coverage_is_the_beta_distributions():
    """The APS score of a row, written here from its definition (the
    probability of the classes at least as likely as the label), is within
    the threshold with the split-conformal (Beta) coverage; the set holds
    the label exactly then, or when the label is the most probable class."""
    rng = np.random.default_rng()
    X, y = _classification(1000, rng)
    model = BoostClassifier(n_estimators=20, max_depth=3).fit(X, y)
    model._test_method = {}

    def in_set(model, X, y):
        proba = model.predict_proba(X)
        own = proba[np.arange(len(y)), y]
        score = np.array([p[p >= o].sum() for p, o in zip(proba, own)])
        threshold = conformal_threshold(model.conformal_["scores"], ALPHA)
        within = score <= threshold
        in_set = model.predict_set(X, ALPHA)[np.arange(len(y)), y]
        differ = in_set != (within | (y == np.argmax(proba, axis=1)))
        # a sum in another order may round across the threshold
        assert np.all(np.abs(score[differ] - threshold) < 1e-12)
        return within
    mean, seed = _mean_coverage(model, _classification, N_DRAWS, in_set)
    expected, tolerance = _beta_tolerance(N_CAL, ALPHA, N_TEST, N_DRAWS)
    assert abs(mean - expected) <= tolerance, (mean, expected, seed)
    sizes = model.predict_set(X, ALPHA).sum(axis=1)
    assert sizes.min() >= 1 and sizes.mean() < 3


def test_threshold_is_the_order_statistic_by_brute_force():
    rng = np.random.default_rng(0)
    for n in (1, 5, 9, 19, 49, 100):
        scores = np.sort(rng.normal(size=n))
        for alpha in (0.01, 0.05, 0.1, 0.2, 0.5, 0.9):
            # the smallest score s with #{scores <= s} >= (1-alpha)(n+1)
            candidates = [s for s in scores
                          if np.sum(scores <= s) >= (1 - alpha) * (n + 1)]
            expected = min(candidates) if candidates else np.inf
            assert conformal_threshold(scores, alpha) == expected


class _Column(RegressorMixin, BaseEstimator):
    """One quantile column of a fitted multi-quantile model, as MAPIE's
    prefit CQR takes its three regressors."""

    def __init__(self, model=None, column=0):
        self.model = model
        self.column = column

    def fit(self, X, y):
        return self

    def predict(self, X):
        return self.model.predict(X)[:, self.column]

    def __sklearn_is_fitted__(self):
        return True


def _split_data(seed=0):
    rng = np.random.default_rng(seed)
    X, y = _regression(900, rng)
    return (X[:500], y[:500]), (X[500:700], y[500:700]), (X[700:], y[700:])


def test_split_intervals_are_mapies():
    mapie = pytest.importorskip("mapie.regression")
    (X, y), (X_cal, y_cal), (X_test, _) = _split_data()
    model = BoostRegressor(n_estimators=30, max_depth=3).fit(X, y)
    lower, upper = model.conformalize(X_cal, y_cal).predict_interval(X_test, ALPHA)
    reference = mapie.SplitConformalRegressor(
        model, confidence_level=1 - ALPHA, prefit=True).conformalize(
            X_cal, y_cal)
    _, bounds = reference.predict_interval(X_test)
    np.testing.assert_allclose(lower, bounds[:, 0, 0], rtol=1e-12)
    np.testing.assert_allclose(upper, bounds[:, 1, 0], rtol=1e-12)


def test_cqr_intervals_are_mapies_symmetric_cqr():
    mapie = pytest.importorskip("mapie.regression")
    (X, y), (X_cal, y_cal), (X_test, _) = _split_data(1)
    model = BoostRegressor(objective="reg:quantileerror",
                           quantile_alpha=[0.05, 0.95, 0.5], n_estimators=30,
                           max_depth=3).fit(X, y)
    lower, upper = model.conformalize(X_cal, y_cal, method="cqr") \
        .predict_interval(X_test, ALPHA)
    reference = mapie.ConformalizedQuantileRegressor(
        [_Column(model, 0), _Column(model, 1), _Column(model, 2)],
        confidence_level=1 - ALPHA, prefit=True).conformalize(X_cal, y_cal)
    _, bounds = reference.predict_interval(X_test, symmetric_correction=True)
    np.testing.assert_allclose(lower, bounds[:, 0, 0], rtol=1e-10)
    np.testing.assert_allclose(upper, bounds[:, 1, 0], rtol=1e-10)


def test_cv_plus_intervals_are_mapies():
    mapie = pytest.importorskip("mapie.regression")
    (X, y), _, (X_test, _) = _split_data(2)
    X, y = X[:150], y[:150]
    params = dict(n_estimators=15, max_depth=3)
    model = BoostRegressor(**params).fit(X, y)
    lower, upper = model.conformalize(X, y, method="cv+", cv=KFold(5)) \
        .predict_interval(X_test, ALPHA)
    reference = mapie.CrossConformalRegressor(
        BoostRegressor(**params), confidence_level=1 - ALPHA, method="plus",
        cv=KFold(5)).fit_conformalize(X, y)
    _, bounds = reference.predict_interval(X_test)
    np.testing.assert_allclose(lower, bounds[:, 0, 0], rtol=1e-9)
    np.testing.assert_allclose(upper, bounds[:, 1, 0], rtol=1e-9)


def test_calibration_is_saved_and_cleared(tmp_path):
    (X, y), (X_cal, y_cal), (X_test, _) = _split_data(3)
    model = BoostRegressor(n_estimators=10).fit(X, y).conformalize(X_cal, y_cal)
    bounds = model.predict_interval(X_test, 0.2)
    for suffix in ("json", "ubj"):
        model.save_model(tmp_path / f"m.{suffix}")
        loaded = BoostRegressor.load(tmp_path / f"m.{suffix}")
        for a, b in zip(loaded.predict_interval(X_test, 0.2), bounds):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(pickle.loads(pickle.dumps(model)).predict_interval(
            X_test, 0.2), bounds):
        np.testing.assert_array_equal(a, b)
    model.fit(X, y)   # a new model: the old scores do not apply
    with pytest.raises(ValueError, match="not conformalized"):
        model.predict_interval(X_test)
    # cv+ keeps its fold models: in pickles and in model files
    model.conformalize(X[:60], y[:60], method="cv+", cv=3)
    expected = model.predict_interval(X_test)
    restored = [pickle.loads(pickle.dumps(model))]
    for suffix in ("json", "ubj"):
        model.save_model(tmp_path / f"cv.{suffix}")
        restored.append(BoostRegressor.load(tmp_path / f"cv.{suffix}"))
    for other in restored:
        for a, b in zip(other.predict_interval(X_test), expected):
            np.testing.assert_array_equal(a, b)


def test_cv_plus_in_a_file_with_categories_and_early_stopping(tmp_path):
    """Fold models whose categories (coded from the values of their own
    rows) and best rounds differ from the model's: each is restored."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(7)
    n = 150
    frame = pd.DataFrame({"x": rng.normal(size=n),
                          "c": rng.integers(0, 6, size=n).astype(float)})
    frame.loc[:9, "c"] = 9.0   # a category only the first fold's rows have
    y = frame["x"].to_numpy() + (frame["c"].to_numpy() % 3)
    model = BoostRegressor(n_estimators=30, categorical_features=["c"],
                           early_stopping_rounds=3, random_state=0)
    model.fit(frame, y).conformalize(frame, y, method="cv+", cv=3)
    folds = model.conformal_["models"]
    assert any(f._category_map_.categories[0].size
               != model._category_map_.categories[0].size for f in folds)
    model.save_model(tmp_path / "cv.json")
    loaded = BoostRegressor.load(tmp_path / "cv.json")
    for a, b in zip(loaded.predict_interval(frame, 0.2),
                    model.predict_interval(frame, 0.2)):
        np.testing.assert_array_equal(a, b)
    for ours, theirs in zip(loaded.conformal_["models"], folds):
        assert ours.best_iteration == theirs.best_iteration


def test_damaged_calibration_in_a_file_is_rejected(tmp_path):
    (X, y), (X_cal, y_cal), _ = _split_data(4)
    model = BoostRegressor(n_estimators=5).fit(X, y).conformalize(X_cal, y_cal)
    path = tmp_path / "m.json"
    model.save_model(path)
    text = path.read_text()
    for old, new in (('"method":"split"', '"method":"magic"'),
                     ('"method":"split"', '"method":"aps"'),
                     ('"scores":[', '"scores":[1e300,')):
        bad = tmp_path / "bad.json"
        bad.write_text(text.replace(old, new, 1))
        with pytest.raises(ValueError):
            BoostRegressor.load(bad)


def _damaged_copies(path, edits):
    """The file at ``path`` with each edit applied to its JSON (the
    checksum recomputed: the damage must be caught by the checks of the
    content, not by the checksum)."""
    import json

    from skboost._io.model_file import _checksum

    for edit in edits:
        doc = json.loads(path.read_text())
        edit(doc["model"]["conformal"])
        doc["checksum"] = _checksum(doc["model"])
        yield json.dumps(doc)


def test_damaged_cv_plus_calibration_in_a_file_is_rejected(tmp_path):
    (X, y), _, _ = _split_data(8)
    model = BoostRegressor(n_estimators=4).fit(X[:90], y[:90])
    model.conformalize(X[:90], y[:90], method="cv+", cv=3)
    path = tmp_path / "cv.json"
    model.save_model(path)

    def tree_child(c):   # a child index out of the tree
        c["folds"][1]["booster"]["trees"][0]["left_child"][0] = 10 ** 6

    edits = [lambda c: c["fold_of_row"].__setitem__(0, 3),     # no fold 3
             lambda c: c["fold_of_row"].pop(),                 # one short
             lambda c: c["scores"].__setitem__(0, -1.0),       # negative
             lambda c: c["folds"].clear(),
             lambda c: c["folds"][0].__setitem__("best_iteration", 99),
             lambda c: c["folds"][0].pop("categories"),
             tree_child]
    for text in _damaged_copies(path, edits):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match="not a valid skboost model"):
            BoostRegressor.load(bad)


def test_classifier_sets_round_trip_and_pipelines(tmp_path):
    rng = np.random.default_rng(5)
    X, y = _classification(900, rng)
    labels = np.array(["a", "b", "c"])[y]
    pipe = make_pipeline(StandardScaler(), BoostClassifier(n_estimators=10))
    pipe.fit(X[:500], labels[:500])
    conformal.conformalize(pipe, X[500:700], labels[500:700])
    sets = conformal.predict_set(pipe, X[700:], ALPHA)
    # the same as the last step on the transformed rows
    step = pipe[-1]
    np.testing.assert_array_equal(
        sets, step.predict_set(pipe[0].transform(X[700:]), ALPHA))
    step.save_model(tmp_path / "c.json")
    np.testing.assert_array_equal(
        BoostClassifier.load(tmp_path / "c.json").predict_set(
            pipe[0].transform(X[700:]), ALPHA), sets)
    with pytest.raises(ValueError, match="labels the model does not know"):
        step.conformalize(X[:5], ["a", "b", "z", "a", "a"])
    reg = make_pipeline(StandardScaler(), BoostRegressor(n_estimators=5))
    (Xr, yr), (Xc, yc), (Xt, _) = _split_data(6)
    reg.fit(Xr, yr)
    lower, upper = conformal.predict_interval(
        conformal.conformalize(reg, Xc, yc), Xt, 0.2)
    assert np.all(lower < upper)


def test_bad_arguments_are_named():
    (X, y), (X_cal, y_cal), _ = _split_data(7)
    model = BoostRegressor(n_estimators=5).fit(X, y)
    with pytest.raises(ValueError, match="method must be one of"):
        model.conformalize(X_cal, y_cal, method="jackknife")
    with pytest.raises(ValueError, match="reg:quantileerror"):
        model.conformalize(X_cal, y_cal, method="cqr")
    model.conformalize(X_cal, y_cal)
    for alpha in (0.0, 1.0, -0.1, "0.1", True):
        with pytest.raises(ValueError, match="alpha"):
            model.predict_interval(X_cal, alpha)
    with pytest.raises(ValueError, match="rows"):
        model.conformalize(X_cal, y_cal[:-1])
    # a tiny calibration set for a small alpha: the whole line, as the
    # guarantee requires
    model.conformalize(X_cal[:5], y_cal[:5])
    lower, upper = model.predict_interval(X_cal, 0.1)
    assert np.all(np.isinf(lower)) and np.all(np.isinf(upper))
