"""The package's import structure: one package per problem above a shared core, no circles.

Read from the source with :mod:`ast` (every ``import``, also those inside functions, since a
lazy import closes a circle just as well), so the rules hold without importing anything:

* the shared core (``errors``, ``scoring``, ``model``, ``statistics``, ``gotoh``, ``striped``, ``version``,
  ``traceback/``, ``runtime/``, ``io/``) imports no problem package and no CLI module;
* a problem package (``pairwise/``, ``batch/``, ``syntenic/``, ``search/``, ``align3/``,
  ``fold/``, ``compare/``) imports the shared core, its own modules, and of another problem
  only its ``api`` module; never the CLI;
* no module imports itself back through any chain of imports.

The package's ``__init__`` (the public facade that re-exports every ``api``) is left out as an
importer; importing a submodule names the submodule, not the facade.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gpualign_plugin"
CORE = {"errors", "scoring", "model", "statistics", "gotoh", "striped", "version", "traceback", "runtime",
        "io"}
PROBLEMS = {"pairwise", "batch", "syntenic", "search", "align3", "fold", "compare"}
TOP = {"cli"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of the package that ``path`` imports (``from a import b`` names ``a.b`` if a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                     else node.module for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules and name != "gpualign_plugin")
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) for name, path in modules.items()
            if name != "gpualign_plugin"}


def _area(module: str) -> str:
    """The first component below the package: ``pairwise`` for ``gpualign_plugin.pairwise.cpu``."""
    return module.split(".")[1]


def test_every_area_is_classified():
    areas = {_area(name) for name in _graph()}
    assert areas <= CORE | PROBLEMS | TOP, f"unclassified: {sorted(areas - CORE - PROBLEMS - TOP)}"


def test_the_shared_core_imports_no_problem_and_no_cli():
    upward = [f"{importer} imports {imported}" for importer, targets in _graph().items()
              if _area(importer) in CORE for imported in targets
              if _area(imported) not in CORE]
    assert upward == []


def test_problems_import_other_problems_only_through_their_api_and_never_the_cli():
    wrong = []
    for importer, targets in _graph().items():
        own = _area(importer)
        if own not in PROBLEMS:
            continue
        for imported in targets:
            area = _area(imported)
            if area in TOP or (area in PROBLEMS and area != own
                               and imported != f"gpualign_plugin.{area}.api"):
                wrong.append(f"{importer} imports {imported}")
    assert wrong == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, or with a self-import (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles():
    assert _cycles(_graph()) == []


def test_the_circle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["e"]]


def test_kernel_sources_sit_beside_the_python_that_launches_them():
    for source in PACKAGE.rglob("*.cu"):
        launcher = source.parent / "gpu.py"
        assert launcher.exists(), f"{source} has no gpu.py beside it"
        assert f'"{source.parent.name}/{source.name}"' in launcher.read_text(), \
            f"{launcher} does not name {source.name}"
