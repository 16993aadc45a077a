"""``Booster.save_model`` / ``Booster.load_model``: a booster in a model file.

A model file always holds a whole estimator (its classes, feature names,
categories and parameters are what turn a DataFrame into the booster's
input, and margins into labels). A booster from ``get_booster()`` is saved
as its estimator's file; a booster without its estimator (one unpickled on
its own, or built by ``train``) as the file of the estimator ``fit`` would
have made for it: its objective decides the class (classifier, regressor,
ranker), its number of outputs the classes (``0 .. K-1``). Loading reads
any skboost model file, ``.json`` or ``.ubj``, into the booster and binds
it to the estimator the file describes, so that ``predict`` reads
DataFrames again.
"""

import os

import numpy as np


def save_booster(booster, fname):
    """Write the booster (with its estimator) to ``fname`` (.json/.ubj)."""
    from .model_file import model_format, save_estimator

    model_format(fname)  # the suffix is checked before any work
    estimator = getattr(booster, "_input_estimator", None)
    if estimator is None or getattr(estimator, "booster_", None) is not booster:
        estimator = estimator_for(booster)
    save_estimator(estimator, fname)


def load_booster(booster, fname):
    """Replace ``booster``'s content by the model saved in ``fname``."""
    from .. import BoostClassifier
    from .. import BoostRanker
    from .. import BoostRegressor
    from .model_file import estimator_name, read_model_file

    fname = os.fspath(fname)
    binary = fname.lower().endswith(".ubj")
    data = read_model_file(fname)
    classes = {cls.__name__: cls for cls in (BoostClassifier, BoostRegressor,
                                             BoostRanker)}
    name = estimator_name(data, binary, source=repr(fname))
    if name not in classes:
        raise ValueError(f"{fname!r} holds a {name!r}, not a skboost "
                         "estimator this version knows")
    from .model_file import loads_estimator

    estimator = loads_estimator(classes[name](), data, source=repr(fname),
                                binary=binary)
    loaded = estimator.booster_
    booster.__dict__.clear()
    booster.__dict__.update(loaded.__dict__)
    estimator.booster_ = booster
    booster._input_estimator = estimator
    return booster


def estimator_for(booster):
    """A fitted estimator around a booster that has none: the class its
    objective trains, classes ``0 .. K-1``, its feature names and
    categories, objective parameters as estimator parameters."""
    from .. import BoostClassifier
    from .. import BoostRanker
    from .. import BoostRegressor
    from ..objectives import (CLASSIFICATION_OBJECTIVES, RANKING_OBJECTIVES,
                             CallableObjective)

    if booster.objective == CallableObjective.name:
        raise ValueError(
            "this booster was trained with a custom objective and has lost "
            "its estimator: save the estimator (estimator.save_model), whose "
            "file records the link of the objective")
    if booster.objective in CLASSIFICATION_OBJECTIVES:
        estimator = BoostClassifier(objective=booster.objective)
        n_classes = 2 if booster.n_outputs == 1 else booster.n_outputs
        estimator.classes_ = np.arange(n_classes)
        estimator.n_classes_ = n_classes
    elif booster.objective in RANKING_OBJECTIVES:
        estimator = BoostRanker(objective=booster.objective)
    else:
        estimator = BoostRegressor(objective=booster.objective)
    params = estimator.get_params()
    estimator.set_params(**{name: value for name, value
                            in getattr(booster, "objective_params", {}).items()
                            if name in params and value is not None})
    if getattr(booster, "absent_value", np.nan) == 0.0:
        estimator.set_params(sparse_absent="zero")
    estimator.n_features_in_ = booster.n_features
    if booster.feature_names is not None:
        estimator.feature_names_in_ = np.asarray(booster.feature_names,
                                                 dtype=object)
    estimator._category_map_ = getattr(booster, "category_map", None)
    estimator.booster_ = booster
    return estimator
