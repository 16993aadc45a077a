"""The import graph of the ``skboost`` package, imports inside functions
included, read from the sources (nothing is imported).

``python tools/import_graph.py`` prints every cycle it finds (strongly
connected components of more than one module); ``tests/test_layers.py``
asserts there are none.
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "skboost"


def module_name(path):
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def source_modules():
    """{module name: path} of every .py and .pyx file of the package."""
    found = {}
    for path in sorted(ROOT.rglob("*")):
        if path.suffix in (".py", ".pyx") and "_build" not in path.parts:
            found[module_name(path)] = path
    return found


def _resolve(current, is_package, node, known):
    """Absolute module names an ImportFrom/Import node names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = current.split(".") if is_package else current.split(".")[:-1]
    if node.level:
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # "from . import _objectives" names a submodule, not the package's
    # own namespace; any other name comes from the module ``prefix``
    names = [f"{prefix}.{alias.name}" for alias in node.names]
    if not all(name in known for name in names):
        names.append(prefix)
    return names


def _python_imports(text):
    """The Python-level import statements of a Cython file, as Python
    source (cimports and prose left out)."""
    lines, kept, i = text.splitlines(), [], 0
    while i < len(lines):
        statement = lines[i].strip()
        i += 1
        if not statement.startswith(("import ", "from ")) or "cimport" in statement:
            continue
        while statement.count("(") > statement.count(")") and i < len(lines):
            statement += " " + lines[i].strip()
            i += 1
        try:
            ast.parse(statement)
        except SyntaxError:
            continue  # a docstring's sentence that begins with "from"
        kept.append(statement)
    return "\n".join(kept)


def imports_of(name, path, known):
    """The skboost modules ``name`` imports (any level of nesting)."""
    text = path.read_text()
    if path.suffix == ".pyx":
        text = _python_imports(text)
    tree = ast.parse(text)
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _resolve(name, is_package, node, known):
                if target in known and target != name:
                    found.add(target)
    return found


def import_graph():
    modules = source_modules()
    return {name: imports_of(name, path, modules)
            for name, path in modules.items()}


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


if __name__ == "__main__":
    found = cycles(import_graph())
    for component in found:
        print(len(component), " ".join(component))
    print(f"{len(found)} cycles")
