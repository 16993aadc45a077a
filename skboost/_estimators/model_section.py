"""The estimator's section of a model file: what a file records of the
estimator around its booster (class, parameters, features, classes,
categories, early stopping's best round), written and checked here, by the
estimator layer; the file layer (``skboost/_io/model_file.py``) writes and
validates the booster and the format, and never imports an estimator.

``save_estimator`` / ``dumps_estimator`` write an estimator's file;
``load_estimator`` / ``loads_estimator`` read one into an estimator: the
booster and section from the file layer, then the section checked against
the estimator's class (its parameters valid for it, the objective one it
trains, classes for a classifier only) and installed.
"""

import os

import numpy as np
from sklearn.base import is_classifier

from .._io.model_file import (categories_to_json, classes_to_json,
                              decode_param, dumps_model, invalid_file,
                              loads_model, optional_float, optional_int,
                              params_to_json, read_model_file, write_model)
from .._io.validation import ModelFileError as _Invalid
from .._io.validation import (check_classes_fit_objective,
                              check_objective_params_match,
                              check_runtime_params)
from .conformal import CLASSIFICATION_METHODS, REGRESSION_METHODS
from ..objectives import (CLASSIFICATION_OBJECTIVES, OBJECTIVES,
                          RANKING_OBJECTIVES, REGRESSION_OBJECTIVES,
                          SURVIVAL_OBJECTIVES,
                          CallableObjective)


def estimator_section(estimator):
    """The section of ``estimator``'s model file, as JSON values."""
    params, unsaved = params_to_json(estimator.get_params(deep=False))
    names = getattr(estimator, "feature_names_in_", None)
    return {
        "estimator": type(estimator).__name__,
        "params": params,
        "unsaved_params": unsaved,
        "n_features_in": int(estimator.n_features_in_),
        "feature_names": None if names is None else [str(n) for n in names],
        "classes": classes_to_json(getattr(estimator, "classes_", None)),
        "categories": categories_to_json(
            getattr(estimator, "_category_map_", None)),
        "best_iteration": optional_int(getattr(estimator, "best_iteration",
                                               None)),
        "best_score": optional_float(getattr(estimator, "best_score", None)),
        "conformal": _conformal_section(estimator),
    }


def _conformal_section(estimator):
    """The calibration of ``conformalize`` (method and sorted scores), or
    None; of cv+, the residuals, the fold of each row and each fold
    model's booster (a Booster: the file layer writes it), categories and
    best round."""
    calibration = getattr(estimator, "conformal_", None)
    if calibration is None:
        return None
    section = {"method": calibration["method"],
               "scores": [float(s) for s in calibration["scores"]]}
    if calibration["method"] == "cv+":
        section["fold_of_row"] = [int(k) for k in calibration["fold_of_row"]]
        section["folds"] = [
            {"booster": model.booster_,
             "categories": categories_to_json(
                 getattr(model, "_category_map_", None)),
             "best_iteration": optional_int(getattr(
                 model.booster_, "best_iteration", None))}
            for model in calibration["models"]]
    return section


def dumps_estimator(estimator):
    """The model file's text of a fitted estimator."""
    return dumps_model(estimator.booster_, estimator_section(estimator))


def save_estimator(estimator, fname, file_format="skboost"):
    """Write a fitted estimator's model file (atomically; JSON or UBJSON by
    the suffix; skboost's format or XGBoost's)."""
    write_model(fname, estimator.booster_, estimator_section(estimator),
                file_format)


def load_estimator(estimator, fname):
    """Read ``fname`` into ``estimator`` (parameters and fitted state)."""
    fname = os.fspath(fname)
    return loads_estimator(estimator, read_model_file(fname),
                           source=repr(fname),
                           binary=fname.lower().endswith(".ubj"))


def loads_estimator(estimator, data, source="the model", binary=False,
                    saved_as=None):
    """Fill ``estimator`` from a model file's text or bytes ``data``;
    ``saved_as`` the class name the file may hold when it is not the
    estimator's (a Dask estimator's file read by its single-node twin)."""
    booster, section = loads_model(data, source, binary)
    with invalid_file(source):
        params = checked_section(estimator, booster, section, saved_as)
    install_section(estimator, booster, section, params)
    return estimator


def checked_section(estimator, booster, section, saved_as):
    """The section's parameters, checked against ``estimator``'s class and
    the booster (nothing installed yet)."""
    name = saved_as or type(estimator).__name__
    foreign = section.get("source_format")
    if foreign is None:
        _expect(section["estimator"] == name,
                f"it holds a {section['estimator']!r}, not a {name!r}")
    else:   # another library's model: any estimator of its objective
        _check_objective(estimator, booster.objective, booster.objective,
                         None)
    params = _params_from_json(estimator, section["params"],
                               section["unsaved_params"])
    classes = section["classes"]
    n_classes = None if classes is None else classes.shape[0]
    if is_classifier(estimator):
        _expect(classes is not None and n_classes >= 2,
                "a classifier needs at least 2 classes")
    else:
        _expect(classes is None, "only a classifier has classes")
    # a multi-label model's labels are binary problems each (its classes,
    # the labels 0 .. n_targets-1, are checked below)
    classes_per_output = n_classes if booster.n_targets == 1 else 2
    check_classes_fit_objective(booster.objective, booster.objective_params,
                                classes_per_output, is_classifier(estimator))
    unsaved = section["unsaved_params"]
    if "objective" not in unsaved:
        check_objective_params_match(
            type(estimator)(**params)._objective_params(),
            booster.objective_params)
    objective_param = (None if "objective" in unsaved
                       else estimator._saved_objective(params))
    _check_objective(estimator, objective_param, booster.objective, n_classes)
    _check_conformal(estimator, section.get("conformal"))
    _expect(booster.n_targets == 1 or not is_classifier(estimator)
            or np.array_equal(classes, np.arange(booster.n_targets)),
            f"a multi-label classifier of {booster.n_targets} labels has the "
            f"classes 0 .. {booster.n_targets - 1}")
    return params


def _check_conformal(estimator, calibration):
    """A saved calibration is one of this kind of estimator's methods."""
    if calibration is None:
        return
    methods = (CLASSIFICATION_METHODS if is_classifier(estimator)
               else REGRESSION_METHODS)
    _expect(hasattr(estimator, "conformalize")
            and calibration["method"] in methods,
            f"a {type(estimator).__name__} has no conformal method "
            f"{calibration['method']!r}")


def _expect(condition, message):
    if not condition:
        raise _Invalid(message)


def _params_from_json(estimator, params, unsaved):
    _expect(isinstance(params, dict), "'params' must be a JSON object")
    _expect(isinstance(unsaved, list) and all(isinstance(u, str) for u in unsaved),
            "'unsaved_params' must be a list of names")
    known = estimator.get_params(deep=False)
    unknown = (set(params) | set(unsaved)) - set(known)
    _expect(not unknown, f"unknown parameters {sorted(unknown)} for "
                         f"{type(estimator).__name__}")
    decoded = {name: decode_param(value) for name, value in params.items()
               if name not in unsaved}
    probe = type(estimator)(**{**known, **decoded})
    try:
        probe._validate_params()
    except (ValueError, TypeError) as exc:
        raise _Invalid(f"invalid saved parameter: {exc}") from None
    check_runtime_params(decoded)
    return decoded


def _check_objective(estimator, objective_param, booster_objective, n_classes):
    """The booster's objective is one ``fit`` trains for this estimator and
    its ``objective`` parameter (None when it was a callable, not saved)."""
    kind = type(estimator).__name__
    # by the first estimator class it derives from (the forests: theirs)
    allowed = next(
        (objectives for cls in type(estimator).__mro__
         for name, objectives in (("BoostClassifier", CLASSIFICATION_OBJECTIVES),
                                  ("BoostRegressor", REGRESSION_OBJECTIVES
                                   | SURVIVAL_OBJECTIVES),
                                  ("BoostRanker", RANKING_OBJECTIVES))
         if cls.__name__ == name), frozenset(OBJECTIVES))
    _expect(booster_objective in allowed | {CallableObjective.name},
            f"a {kind} does not train the objective {booster_objective!r}")
    if objective_param is None or booster_objective == CallableObjective.name:
        _expect(objective_param is None
                and booster_objective == CallableObjective.name,
                f"the booster's objective {booster_objective!r} does not match "
                f"the parameter objective={objective_param!r}")
        return
    if booster_objective == objective_param:
        return
    # a classifier switches binary:logistic to multi:softprob for > 2 classes
    _expect(is_classifier(estimator) and objective_param == "binary:logistic"
            and booster_objective == "multi:softprob" and n_classes > 2,
            f"the booster's objective {booster_objective!r} does not match "
            f"the parameter objective={objective_param!r}")


def install_section(estimator, booster, section, params):
    """Set the validated parameters and fitted attributes on ``estimator``."""
    for name in list(vars(estimator)):
        if name.endswith("_") and not name.startswith("__"):
            delattr(estimator, name)  # fitted state of an earlier fit
    estimator.set_params(**params)
    estimator.n_features_in_ = section["n_features_in"]
    if section["feature_names"] is not None:
        estimator.feature_names_in_ = section["feature_names"]
    if section["classes"] is not None:
        estimator.classes_ = section["classes"]
        estimator.n_classes_ = section["classes"].shape[0]
    estimator.booster_ = booster
    estimator._category_map_ = section["categories"]
    # what an absent sparse entry means is a parameter of the estimator
    if getattr(estimator, "sparse_absent", "missing") == "zero":
        estimator.booster_.absent_value = 0.0
    for name in ("best_iteration", "best_score"):
        if section[name] is not None:
            _set_attribute(estimator, name, section[name])
    if section.get("conformal") is not None:
        estimator.conformal_ = _installed_calibration(estimator,
                                                      section["conformal"])


def _installed_calibration(estimator, calibration):
    """The calibration as ``conformalize`` leaves it: for cv+, the fold
    models rebuilt as estimators of the loaded one's class, parameters
    and features, each with its booster, categories and best round."""
    calibration = dict(calibration)
    folds = calibration.pop("folds", None)
    if folds is None:
        return calibration
    models = []
    for fold in folds:
        model = type(estimator)(**estimator.get_params(deep=False))
        model.n_features_in_ = estimator.n_features_in_
        if hasattr(estimator, "feature_names_in_"):
            model.feature_names_in_ = estimator.feature_names_in_
        booster = fold["booster"]
        booster.category_map = fold["categories"]
        booster.feature_names = getattr(estimator.booster_, "feature_names",
                                        None)
        booster.absent_value = estimator.booster_.absent_value
        if fold["best_iteration"] is not None:
            booster.best_iteration = fold["best_iteration"]
        model.booster_ = booster
        model._category_map_ = fold["categories"]
        models.append(model)
    calibration["models"] = models
    return calibration


def _set_attribute(estimator, name, value):
    try:
        setattr(estimator, name, value)
    except AttributeError:  # a read-only property computed from the booster
        setattr(estimator.booster_, name, value)
