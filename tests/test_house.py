"""The source tree keeps its shape: short files, no import circles, layers that point down.

`ir/` installs as `shardc.ir`, `passes/` as `shardc.passes`, `compiler/` as `shardc`. Layers,
bottom up: ir < passes < compiler. Every import counts, lazy ones inside functions included,
because a lazy import is still a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"ir": 0, "passes": 1, "compiler": 2}
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _folder_name(dotted: str) -> str:
    """`shardc.ir.types` -> `ir.types`; `shardc.jit` -> `compiler.jit` (as installed)."""
    head, _, rest = dotted.partition(".")
    if head != "shardc":
        return dotted
    if not rest:
        return "compiler"
    return rest if rest.split(".")[0] in LAYERS else f"compiler.{rest}"


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for layer in LAYERS
        for path in sorted((ROOT / layer).rglob("*.py"))
    }


def _imported_names(path: Path, module: str) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(_folder_name(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = _folder_name(node.module or "")
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@pytest.fixture(scope="module")
def import_graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for name in _imported_names(path, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph.add_edge(module, name)
    return graph


def test_no_source_file_over_the_limit():
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules().values()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}, f"files over {MAX_LINES} lines: split them by concept"


def test_no_import_circles(import_graph):
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph) if len(c) > 1]
    assert circles == []


def test_layers_point_down(import_graph):
    def layer(module: str) -> int:
        return LAYERS[module.split(".")[0]]

    upward = sorted((a, b) for a, b in import_graph.edges if layer(b) > layer(a))
    assert upward == []


def test_the_graph_sees_the_imports(import_graph):
    """The checks above mean something only if the graph has the edges we know exist."""
    assert import_graph.has_edge("compiler.cli", "compiler.commands.table")
    assert any(b.startswith("ir.") for a, b in import_graph.edges if a.startswith("passes."))
    assert any(b.startswith("passes.") for a, b in import_graph.edges if a.startswith("compiler."))
