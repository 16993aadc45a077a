"""The module paths of earlier versions, importable again.

Pickles name the module of every class they hold (``skboost._booster.Booster``,
``skboost._categorical.CategoryMap``, ``skboost._forest.BoostRFClassifier``,
...). Those modules moved into subpackages (issue 34); this finder answers an
import of an old path with the module that lives there now, so that pickles
written by earlier versions keep loading. Nothing is imported until an old
path is asked for.
"""

import importlib
import importlib.abc
import importlib.util
import sys

# old module path -> where its contents live now
MOVED_MODULES = {
    "skboost._booster": "skboost._model.booster",
    "skboost._class_rounds": "skboost._model.class_rounds",
    "skboost._limits": "skboost._model.limits",
    "skboost._margins": "skboost._model.margins",
    "skboost._multi_output": "skboost._model.multi_output",
    "skboost._importance": "skboost._model.importance",
    "skboost._explain": "skboost._model.explain",
    "skboost._export": "skboost._estimators.export",
    "skboost._serialization": "skboost._io.model_file",
    "skboost._ubjson": "skboost._io.ubjson",
    "skboost._model_validation": "skboost._io.validation",
    "skboost._booster_io": "skboost._io.booster_files",
    "skboost._data": "skboost._input.arrays",
    "skboost._frames": "skboost._input.frames",
    "skboost._sparse_input": "skboost._input.sparse",
    "skboost._categorical": "skboost._input.categorical",
    "skboost._continue": "skboost._estimators.continued",
    "skboost._holdout": "skboost._estimators.holdout",
    "skboost._compat_params": "skboost._estimators.compat_params",
    "skboost._forest": "skboost._estimators.forest",
    "skboost._dask_train": "skboost.dask.train",
    "skboost._dask_reduce": "skboost.dask.reduce",
    "skboost._dask_links": "skboost.dask.links",
    "skboost._dask_memory": "skboost.dask.memory",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module that replaced it (the same module
    object under both names)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass  # already executed under its new name


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old module paths of ``MOVED_MODULES``."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


def install():
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
