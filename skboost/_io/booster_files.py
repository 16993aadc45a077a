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

This layer imports no estimator: the estimator classes register themselves
(``register_estimator_class``, called for every subclass of the estimators'
base), and this module registers its reader and writer with the Booster
(``Booster.save_model`` and ``load_model`` call them).
"""

import os

from .._model.booster import register_model_files
from ..objectives import CLASSIFICATION_OBJECTIVES, RANKING_OBJECTIVES
from .model_file import loads_model, model_format, read_model_file, write_model

# class name -> estimator class, filled as the estimator classes are made
ESTIMATOR_CLASSES = {}


def register_estimator_class(cls):
    """Let model files name ``cls`` (by its class name)."""
    ESTIMATOR_CLASSES[cls.__name__] = cls


def _registered(name, fname):
    if name in ESTIMATOR_CLASSES:
        return ESTIMATOR_CLASSES[name]
    # a Dask estimator's file is a single-node model file under the Dask
    # class's name: without skboost.dask imported, its single-node twin
    # reads it
    twin = name[len("Dask"):] if name.startswith("Dask") else None
    if twin in ESTIMATOR_CLASSES:
        return ESTIMATOR_CLASSES[twin]
    raise ValueError(f"{fname!r} holds a {name!r}, not a skboost "
                     "estimator this version knows")


class BoosterFiles:
    """The reader and writer ``Booster.save_model`` / ``load_model`` use."""

    @staticmethod
    def save(booster, fname, file_format="skboost"):
        """Write the booster (with its estimator) to ``fname``
        (.json/.ubj), in skboost's format or XGBoost's."""
        model_format(fname)  # the suffix is checked before any work
        binding = booster.input_binding
        estimator = getattr(binding, "estimator", None)
        if estimator is None or getattr(estimator, "booster_", None) is not booster:
            estimator = _estimator_class(booster).around_booster(booster)
        write_model(fname, booster, estimator.model_section(), file_format)

    @staticmethod
    def load(booster, fname):
        """Replace ``booster``'s content by the model saved in ``fname``;
        bound to the estimator the file describes."""
        fname = os.fspath(fname)
        binary = fname.lower().endswith(".ubj")
        loaded, section = loads_model(read_model_file(fname), repr(fname),
                                      binary)
        name = section["estimator"]
        estimator = _registered(name, fname).from_model_section(
            loaded, section, source=repr(fname), saved_as=name)
        booster.__dict__.clear()
        booster.__dict__.update(loaded.__dict__)
        estimator.booster_ = booster
        estimator.get_booster()   # binds the booster to its estimator
        return booster


def _estimator_class(booster):
    """The class ``fit`` would have made ``booster`` with (by objective)."""
    if booster.objective in CLASSIFICATION_OBJECTIVES:
        return ESTIMATOR_CLASSES["BoostClassifier"]
    if booster.objective.startswith("dist:"):
        return ESTIMATOR_CLASSES["BoostDistributionRegressor"]
    if booster.objective in RANKING_OBJECTIVES:
        return ESTIMATOR_CLASSES["BoostRanker"]
    return ESTIMATOR_CLASSES["BoostRegressor"]


register_model_files(BoosterFiles)
