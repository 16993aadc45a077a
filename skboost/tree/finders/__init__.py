"""Split finders: the ways of finding splits behind the one growth driver
(``tree/driver.py``). ``base.SplitFinder`` is the interface."""

from .base import LeafRows, RowLeaves, SplitFinder
from .exact import ExactFinder
from .hist import GlobalApproxFinder, HistFinder, HistogramPool
from .local import ColumnScanFinder, LocalApproxFinder

__all__ = ["SplitFinder", "ExactFinder", "HistFinder", "GlobalApproxFinder",
           "LocalApproxFinder", "ColumnScanFinder", "HistogramPool",
           "LeafRows", "RowLeaves"]
