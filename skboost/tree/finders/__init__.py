"""Split finders: the ways of finding splits behind the one growth driver
(``tree/driver.py``). ``base.SplitFinder`` is the interface."""

import importlib

from .base import LeafRows, RowLeaves, SplitFinder, SplitLeafRows
from .hist import (GlobalApproxFinder, HistFinder, HistogramPool,
                   SparseHistFinder)

__all__ = ["SplitFinder", "ExactFinder", "HistFinder", "SparseHistFinder",
           "GlobalApproxFinder",
           "LocalApproxFinder", "ColumnScanFinder", "HistogramPool",
           "LeafRows", "RowLeaves", "SplitLeafRows"]

# Finders of the other methods, imported when first asked for: a fit with
# the default method (hist on dense data) never loads their modules and
# kernels (~3 ms of ``import skboost``).
_LAZY = {"ExactFinder": ".exact", "ColumnScanFinder": ".local",
         "LocalApproxFinder": ".local"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
