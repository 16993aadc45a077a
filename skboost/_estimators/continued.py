"""Continued training: the model a fit adds its rounds to.

``warm_start=True`` continues the estimator's own fitted model (scikit-learn's
convention: ``n_estimators`` is the total). ``fit(..., xgb_model=...)``
(XGBoost's name; ``init_model=`` is LightGBM's) continues a given model: a
fitted skboost estimator, its booster (``get_booster()``) or a path of a
saved model; ``n_estimators`` rounds are added to it (XGBoost's
convention). Either way the new booster keeps the model's base margin and
trees and boosts on from its margins, so that without row or column
sampling 8 rounds and then 8 more are bit for bit the 16-round model. Both
share the checks below: same features (and names), same categorical
features and categories, same objective, same classes.

Also here: the seed of a fit drawn from ``random_state``, which may be a
``numpy.random.Generator`` as well as what scikit-learn's
``check_random_state`` takes.
"""

import os

import numpy as np
from sklearn.utils import check_random_state

from .._input.categorical import recode


def continued_booster(estimator, model, objective, n_classes):
    """The Booster of ``model`` (estimator, Booster or path), checked to be
    one ``estimator`` can add rounds to on this fit's data."""
    from .._model.booster import Booster

    source = None
    if isinstance(model, Booster):
        booster = model
        source = getattr(model.input_binding, "estimator", None)
    elif isinstance(model, (str, os.PathLike)):
        source = _load(type(estimator), model)
        booster = source.booster_
    elif hasattr(model, "booster_") and hasattr(model, "get_booster"):
        source, booster = model, model.booster_
    else:
        raise TypeError(
            "xgb_model (init_model) must be a fitted skboost estimator, its "
            "booster (get_booster()) or the path of a saved model, got "
            f"{type(model).__name__}")
    problems = continuation_problems(estimator, booster, objective,
                                     "the given model")
    problems += _class_problems(estimator, source, booster, n_classes)
    if problems:
        raise ValueError("xgb_model (init_model) can not be continued on this "
                         "data: " + "; ".join(problems))
    return booster


def adopt_model_categories(estimator, X, model):
    """X coded with the categories of the model a fit continues when its
    category columns hold the same categories in another order (codes are
    matched by value, as at predict); X unchanged otherwise (the checks of
    ``continued_booster`` then say what differs). Only dense X can differ
    so: sparse and numeric categorical columns list their values sorted."""
    new_map = getattr(estimator, "_category_map_", None)
    if new_map is None or not isinstance(X, np.ndarray):
        return X
    fitted_map = getattr(_model_booster(estimator, model), "category_map",
                         None)
    recoding = new_map.recoding_to(fitted_map)
    if not recoding:
        return X
    estimator._category_map_ = fitted_map
    return recode(X, recoding)


def _model_booster(estimator, model):
    """The Booster of ``model`` (estimator, Booster or path), or None."""
    from .._model.booster import Booster

    if isinstance(model, Booster):
        return model
    if isinstance(model, (str, os.PathLike)):
        return (_load(type(estimator), model).booster_
                if os.path.exists(os.fspath(model)) else None)
    return getattr(model, "booster_", None)


def _load(estimator_class, path):
    """The estimator saved at ``path`` (a model file of this class)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"xgb_model (init_model): no model file {path!r}")
    return estimator_class().load_model(path)


def continuation_problems(estimator, booster, objective, what):
    """What keeps ``estimator`` (its fit's data already checked) from adding
    rounds to ``booster``: a list of messages, empty when nothing does."""
    name = getattr(objective, "name", objective)
    names = getattr(estimator, "feature_names_in_", None)
    names = None if names is None else list(names)
    problems = []
    if estimator.n_features_in_ != booster.n_features or names != getattr(
            booster, "feature_names", None):
        problems.append(f"X does not have the features of {what} "
                        f"({booster.n_features} features, names "
                        f"{getattr(booster, 'feature_names', None)})")
    fitted_map = getattr(booster, "category_map", None)
    new_map = getattr(estimator, "_category_map_", None)
    if (fitted_map is None) != (new_map is None) or (
            fitted_map is not None and not fitted_map.same_as(new_map)):
        problems.append("the categorical features or their categories "
                        f"differ from {what}'s")
    if name != booster.objective:
        problems.append(f"the objective is {name!r}, {what}'s "
                        f"{booster.objective!r}")
    return problems + _layout_problems(estimator, booster, objective, what)


def _layout_problems(estimator, booster, objective, what):
    """Targets, multi_strategy and trees per round of the data and the
    parameters against those of the model."""
    problems = []
    n_targets = getattr(objective, "n_targets", 1)
    if n_targets != booster.n_targets:
        problems.append(f"y has {n_targets} targets, {what} "
                        f"{booster.n_targets}")
    vector = (estimator.multi_strategy == "multi_output_tree"
              and booster.n_outputs > 1)
    if vector != booster.vector_leaf:
        problems.append(f"multi_strategy={estimator.multi_strategy!r}, "
                        f"{what}'s {booster.multi_strategy!r}")
    n_parallel = estimator._round_layout()[1]
    if n_parallel != booster.num_parallel_tree:
        problems.append(f"num_parallel_tree={n_parallel}, {what}'s "
                        f"{booster.num_parallel_tree}")
    return problems


def _class_problems(estimator, source, booster, n_classes):
    """Classes of the data against those of the model (when it knows
    them), and the number of outputs."""
    classes = getattr(estimator, "classes_", None)
    known = None if source is None else getattr(source, "classes_", None)
    if classes is not None and known is not None and not np.array_equal(
            classes, known):
        return [f"y has the classes {list(classes)}, the given model "
                f"{list(known)}"]
    if n_classes is not None and known is None:
        outputs = 1 if n_classes == 2 else n_classes
        if booster.n_outputs not in (outputs, n_classes):
            return [f"y has {n_classes} classes, the given model "
                    f"{booster.n_outputs} outputs"]
    return []


def legacy_random_state(random_state):
    """``random_state`` as scikit-learn's utilities take it: a
    ``numpy.random.Generator`` becomes a RandomState seeded from it."""
    if isinstance(random_state, np.random.Generator):
        return np.random.RandomState(
            random_state.integers(np.iinfo(np.int32).max))
    return random_state


def draw_seed(random_state):
    """The 31-bit seed of a fit: a fixed int gives a fixed seed; a
    RandomState or Generator instance (or None) a new one each fit."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    return int(check_random_state(random_state).randint(
        np.iinfo(np.int32).max))
