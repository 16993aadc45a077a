"""What the exporters (``skboost.onnx``, ``skboost.treelite``) read from a
fitted estimator: the trees that ``predict`` uses, the base margin, the
link from margins to predictions, the classes, and how each split reads
the raw input.

Both exporters walk the same :class:`ExportedModel`, so the rules below hold
for both:

- the trees are those of the rounds ``predict`` uses (up to
  ``best_iteration`` after early stopping);
- a numeric split sends ``x < threshold`` left and a missing value to its
  learned default side;
- a categorical split is stored on category *codes*, but an exported model
  reads the raw category *values* (the estimator re-codes them by value at
  predict, and a value unseen in training follows the default side). Its
  test is therefore written as "x is one of the values on the side opposite
  to the default": every other value (unseen, or missing) then lands on
  the default side, exactly as skboost predicts (:func:`category_test`).
"""

from dataclasses import dataclass

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from ..tree._tree import float32_threshold  # noqa: F401 (the exporters')

# Link from margins to what is exported: the regressor's and ranker's
# ``predict``, the classifier's ``predict_proba``.
_REGRESSION_LINKS = {
    "reg:logistic": "sigmoid", "count:poisson": "exp", "reg:gamma": "exp",
    "reg:tweedie": "exp", "survival:cox": "exp",
    "survival:aft": "exp"}                # any other: identity
_CLASSIFICATION_LINKS = {
    "binary:logistic": "sigmoid", "binary:logitraw": "sigmoid",
    "binary:hinge": "hinge", "multi:softprob": "softmax",
    "multi:softmax": "softmax"}


@dataclass
class ExportedModel:
    """A fitted estimator as the exporters see it.

    Attributes
    ----------
    kind : {"regressor", "classifier", "ranker"}
    trees : list of Tree
        The trees ``predict`` uses, round by round.
    groups : ndarray of int
        Output (class, quantile) of each tree.
    base_margin : ndarray of shape (n_outputs,)
    link : {"identity", "sigmoid", "exp", "hinge", "softmax"}
        Margins to predictions (regressor, ranker) or to the probability
        of the positive class / of every class (classifier).
    n_features : int
    classes : ndarray or None
        The classifier's ``classes_``.
    missing : float
        The estimator's ``missing`` marker (NaN: only NaN is missing).
    marker_features : ndarray of bool
        Features to which a non-NaN ``missing`` marker applies (all but
        pandas ``category`` columns).
    category_values : dict
        ``{feature: float64 ndarray of its training category values in code
        order}`` for each categorical feature with numeric categories, or
        ``{feature: None}`` when its categories are not numbers.
    feature_labels : list of str
        Names of the features for messages (column names, else ``f<i>``).
    multilabel : bool
        A multi-label classifier (fitted on a 2-D y): one output per label,
        each label's probability through ``link`` on its own margin.
    """

    kind: str
    trees: list
    groups: np.ndarray
    base_margin: np.ndarray
    link: str
    n_features: int
    classes: np.ndarray | None
    missing: float
    marker_features: np.ndarray
    category_values: dict
    feature_labels: list
    multilabel: bool = False

    @property
    def n_outputs(self):
        return self.base_margin.shape[0]


def exported_model(estimator):
    """The :class:`ExportedModel` of a fitted skboost estimator.

    Raises
    ------
    TypeError
        For an object that is not a skboost estimator.
    ValueError
        For a model trained with a callable objective (its link function
        is not known to the exporters).
    """
    from .base import _BoostBase
    from .ranker import BoostRanker

    if not isinstance(estimator, _BoostBase):
        raise TypeError("expected a fitted BoostClassifier, BoostRegressor "
                        f"or BoostRanker, got {type(estimator).__name__}")
    check_is_fitted(estimator)
    booster = estimator.booster_
    if booster.objective == "custom":
        raise ValueError(
            "this model was trained with a callable objective: its link "
            "from margins to predictions is not known, so it can not be "
            "exported; train it with a named objective")
    first, last = booster.scalar_slice(
        *booster._tree_slice(estimator._iteration_range(None)))
    trees, groups = booster.scalar_trees()
    if is_classifier(estimator):
        kind, link = "classifier", _CLASSIFICATION_LINKS[booster.objective]
    else:
        kind = "ranker" if isinstance(estimator, BoostRanker) else "regressor"
        link = _REGRESSION_LINKS.get(booster.objective, "identity")
    category_map = getattr(booster, "category_map", None)
    labels = _feature_labels(estimator)
    return ExportedModel(
        kind=kind, trees=trees[first:last],
        groups=np.asarray(groups[first:last], dtype=np.int64),
        base_margin=booster.base_margin.copy(), link=link,
        n_features=booster.n_features,
        classes=getattr(estimator, "classes_", None),
        missing=float(estimator.missing),
        marker_features=_marker_features(category_map, booster.n_features),
        category_values=_category_values(category_map),
        feature_labels=labels,
        multilabel=is_classifier(estimator) and booster.n_targets > 1)


def _feature_labels(estimator):
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(name) for name in names]
    return [f"f{i}" for i in range(estimator.n_features_in_)]


def _marker_features(category_map, n_features):
    """The ``missing`` marker applies to every feature but pandas
    ``category`` columns (whose categories are not values)."""
    marked = np.ones(n_features, dtype=bool)
    if category_map is not None:
        marked[category_map.features[category_map.from_dtype]] = False
    return marked


def _category_values(category_map):
    if category_map is None:
        return {}
    out = {}
    for feature, categories in zip(category_map.features,
                                   category_map.categories):
        numeric = categories.dtype != object
        out[int(feature)] = (categories.astype(np.float64) if numeric
                             else None)
    return out


@dataclass
class CategoryTest:
    """A categorical split as "x is one of ``values``".

    Rows whose value is one of ``values`` go left when ``members_left``
    (else right); any other value, and a missing one, goes to the other
    side, which is the split's default side.
    """

    values: np.ndarray        # float64, the raw category values
    codes: np.ndarray         # int64, their category codes
    members_left: bool


def category_test(model, tree, node):
    """The :class:`CategoryTest` of categorical split ``node`` of ``tree``.

    Raises
    ------
    ValueError
        When the feature's categories are not numbers (the exported model
        reads a float matrix), naming the feature.
    """
    feature = int(tree.feature[node])
    values = model.category_values.get(feature)
    if values is None:
        raise ValueError(
            f"feature {model.feature_labels[feature]!r} is categorical with "
            "non-numeric categories: an exported model reads numbers, so "
            "encode the column as numbers first (for example an "
            "OrdinalEncoder in the pipeline, with the estimator's "
            "categorical_features naming the column)")
    n_categories = values.shape[0]
    left = np.zeros(n_categories, dtype=bool)
    codes = tree.left_categories(node)
    left[codes[codes < n_categories]] = True
    members_left = not bool(tree.default_left[node])
    member_codes = np.flatnonzero(left if members_left else ~left)
    return CategoryTest(values=values[member_codes], codes=member_codes,
                        members_left=members_left)
