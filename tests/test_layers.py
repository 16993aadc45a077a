"""The package's layers stay layers: no import cycle among skboost's
modules (imports inside functions counted), the Booster imports no
estimator and no model file, and the Dask and Spark code import no
private name of another module.

Oracle: the import statements of the sources themselves, read by
``tools/import_graph.py`` (nothing is imported), and a naive cycle search
(depth-first, every path) on a small graph to check its Tarjan search.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from import_graph import cycles, import_graph, source_modules  # noqa: E402


def test_no_import_cycle():
    found = cycles(import_graph())
    assert found == [], f"import cycles among skboost modules: {found}"


def test_the_booster_is_a_leaf():
    graph = import_graph()
    upward = {name for name in graph["skboost._model.booster"]
              if name.startswith(("skboost._estimators", "skboost._io",
                                  "skboost.dask"))}
    assert upward == set()


# each distributed engine's own modules (its private names are its own)
ENGINE_MODULES = {"skboost.dask": ("", "train", "reduce", "links", "memory",
                                   "fit"),
                  "skboost.spark": ("", "task", "estimator")}


@pytest.mark.parametrize("engine", sorted(ENGINE_MODULES))
def test_engines_import_no_private_name(engine):
    modules = source_modules()
    offending = []
    for name, path in modules.items():
        if not name.startswith(engine):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level <= 1 and (
                    node.module or "").split(".")[0] in ENGINE_MODULES[engine]:
                continue   # the engine's own modules
            if isinstance(node, ast.ImportFrom):
                offending += [f"{name}: {alias.name}" for alias in node.names
                              if alias.name.startswith("_")]
    assert offending == []


def _naive_cycle_members(graph):
    """Modules on some cycle: v reaches itself (a search from every v)."""
    members = set()
    for start in graph:
        stack, seen = list(graph[start]), set()
        while stack:
            v = stack.pop()
            if v == start:
                members.add(start)
                break
            if v not in seen:
                seen.add(v)
                stack.extend(graph.get(v, ()))
    return members


def test_cycle_search_against_a_naive_search():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"},
             "e2": {"f"}, "f": {"e"}, "g": set()}
    found = cycles(graph)
    assert {v for component in found for v in component} == \
        _naive_cycle_members(graph)
    assert sorted(found) == [["a", "b", "c"], ["e", "e2", "f"]]
