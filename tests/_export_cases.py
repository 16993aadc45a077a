"""Models and data shared by the export tests (test_onnx.py,
test_treelite.py): every estimator and objective, trained on data with
missing values, and test rows that send a missing value down both default
directions."""

import numpy as np

from skboost import BoostClassifier, BoostRanker, BoostRegressor

N_ROWS, N_FEATURES = 600, 5

REGRESSION_OBJECTIVES = [
    "reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror",
    "reg:absoluteerror", "reg:quantileerror", "reg:logistic",
    "count:poisson", "reg:gamma", "reg:tweedie"]
CLASSIFICATION_OBJECTIVES = ["binary:logistic", "binary:logitraw",
                             "binary:hinge", "multi:softprob",
                             "multi:softmax"]


def make_data(seed=0, n_rows=N_ROWS):
    """X (float32, 15% NaN) and a score that depends on the missingness."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, N_FEATURES)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    filled = np.nan_to_num(X, nan=-1.5)
    score = 2 * filled[:, 0] + filled[:, 1] ** 2 - filled[:, 2] \
        + 0.3 * rng.normal(size=n_rows)
    return X, score, rng


def test_rows(X, rng):
    """X, plus rows missing every feature, and rows missing one feature."""
    single = np.repeat(X[:40], N_FEATURES, axis=0)
    single[np.arange(single.shape[0]), np.tile(np.arange(N_FEATURES),
                                               40)] = np.nan
    return np.vstack([X, np.full((5, N_FEATURES), np.nan, np.float32),
                      single]).astype(np.float32)


def regression_target(objective, score):
    if objective in ("count:poisson", "reg:tweedie"):
        return np.round(np.exp(score / 3))
    if objective == "reg:gamma":
        return np.exp(score / 3) + 0.1
    if objective == "reg:squaredlogerror":
        return np.abs(score)
    if objective == "reg:logistic":
        return 1 / (1 + np.exp(-score))
    return score


def fit_regressor(objective, seed=0, **params):
    X, score, rng = make_data(seed)
    y = regression_target(objective, score)
    if objective == "reg:quantileerror":
        params.setdefault("quantile_alpha", [0.2, 0.5, 0.9])
    weight = rng.uniform(0.5, 2.0, size=X.shape[0])
    model = BoostRegressor(objective=objective, n_estimators=25, max_depth=4,
                           **params).fit(X, y, sample_weight=weight)
    return model, test_rows(X, rng)


def fit_classifier(objective, labels, seed=0, **params):
    """``labels``: the class labels to use (2 for binary objectives)."""
    X, score, rng = make_data(seed)
    bins = np.quantile(score, np.linspace(0, 1, len(labels) + 1)[1:-1])
    y = np.asarray(labels)[np.digitize(score, bins)]
    weight = rng.uniform(0.5, 2.0, size=X.shape[0])
    model = BoostClassifier(objective=objective, n_estimators=20,
                            max_depth=4, **params).fit(X, y,
                                                       sample_weight=weight)
    return model, test_rows(X, rng)


MULTILABEL_OBJECTIVES = ["binary:logistic", "binary:hinge"]


def fit_multilabel(objective, seed=0, **params):
    """A multi-label classifier (a 2-D 0/1 y of three labels, each from
    its own function of the features, missing values included)."""
    X, score, rng = make_data(seed)
    filled = np.nan_to_num(X, nan=-1.5)
    Y = np.column_stack([score > np.median(score), filled[:, 3] > 0.2,
                         filled[:, 1] * filled[:, 4] > 0]).astype(int)
    weight = rng.uniform(0.5, 2.0, size=X.shape[0])
    model = BoostClassifier(objective=objective, n_estimators=20,
                            max_depth=4, **params).fit(X, Y,
                                                       sample_weight=weight)
    return model, test_rows(X, rng)


def fit_ranker(seed=0, **params):
    X, score, rng = make_data(seed)
    y = np.digitize(score, np.quantile(score, [0.5, 0.8, 0.95]))
    qid = np.repeat(np.arange(X.shape[0] // 20), 20)
    model = BoostRanker(n_estimators=20, max_depth=4, **params).fit(
        X, y, qid=qid)
    return model, test_rows(X, rng)


def default_directions_hit(model, X):
    """The default directions (0 = right, 1 = left) that rows of X with a
    missing value take in the model's trees, by a naive walk."""
    hit = set()
    for tree in model.booster_.trees:
        for row in X:
            node = 0
            while tree.left_child[node] >= 0:
                value = row[tree.feature[node]]
                if np.isnan(value):
                    hit.add(int(tree.default_left[node]))
                    node = (tree.left_child[node] if tree.default_left[node]
                            else tree.right_child[node])
                elif tree.left_categories(node) is not None:
                    break   # categorical: not needed for this check
                else:
                    node = (tree.left_child[node]
                            if value < tree.threshold[node]
                            else tree.right_child[node])
    return hit


def make_categorical_data(seed=0, values=None):
    """X whose last column is categorical with the given category values
    (12 by default, non-integer) and a target that depends on it
    non-monotonically; rows with unseen values in the test rows."""
    rng = np.random.default_rng(seed)
    values = (np.arange(12) * 1.5 - 3 if values is None
              else np.asarray(values, dtype=np.float64))
    X, score, _ = make_data(seed)
    codes = rng.integers(0, len(values), X.shape[0])
    category = values[codes].astype(np.float32)
    category[rng.random(X.shape[0]) < 0.1] = np.nan
    effect = np.sin(codes * 1.7) * 3
    X = np.column_stack([X, category]).astype(np.float32)
    X_test = X.copy()
    unseen = np.array([values.max() + 7, values.min() + 0.25, 1000.0])
    X_test[:60, -1] = np.repeat(unseen, 20)
    return X, score + effect, X_test
