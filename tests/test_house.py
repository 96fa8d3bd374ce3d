"""The source tree keeps its shape: short files, no import circles, layers that point down.

`ir/` installs as `shardc.ir`, `passes/` as `shardc.passes`, `compiler/` as `shardc`. Layers,
bottom up: ir < passes < compiler. Every import counts, lazy ones inside functions included,
because a lazy import is still a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
import re
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


# ----- passes/ by stage (docs/architecture.md) ------------------------------------------------

STAGES = ("analysis", "ingest", "propagation", "reshard", "spmd")  # shardc.passes.STAGES
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def test_the_stage_list_is_the_package_s():
    import shardc.passes

    assert shardc.passes.STAGES == STAGES


def test_passes_top_holds_only_the_manager_and_the_stages():
    top = ROOT / "passes"
    modules = sorted(p.name for p in top.glob("*.py"))
    folders = sorted(p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert modules == ["__init__.py", "manager.py"]
    assert folders == sorted(STAGES)


def test_listing_passes_reads_as_the_pipeline():
    # `ls passes/` sorts by name; the stages must come out in pipeline order.
    assert sorted(STAGES) == list(STAGES)


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "passes" and len(parts) > 2 else None


def test_no_stage_imports_a_later_stage(import_graph):
    rank = {s: i for i, s in enumerate(STAGES)}
    later = sorted(
        (a, b)
        for a, b in import_graph.edges
        if _stage(a) and _stage(b) and rank[_stage(b)] > rank[_stage(a)]
    )
    assert later == [], "a stage names a later stage's passes (run_passes), never imports them"


def test_stages_do_import_earlier_stages(import_graph):
    """The check above means something only if stages do import one another."""
    assert import_graph.has_edge("passes.reshard.lower_collectives", "passes.analysis.collectives")
    assert import_graph.has_edge("passes.propagation.state", "passes.propagation.rules.registry")
    assert import_graph.has_edge("passes.spmd.spmd", "passes.spmd.lowering.local")


def test_every_pass_module_registers_a_pass_at_its_stage_s_top():
    """A module directly in a stage folder is a pass (or a helper the stage's passes share);
    every registered pass is defined in one of those modules, so load_all_passes finds it."""
    from shardc.passes.manager import PASSES, load_all_passes

    load_all_passes()
    homes = {tuple(cls.__module__.split(".")[2:]) for cls in PASSES.values()}
    assert all(len(home) == 2 and home[0] in STAGES for home in homes), sorted(homes)


def test_every_pass_name_is_found_where_it_is_registered():
    """`make_pass` imports only the module a name's `register_pass`/`register_alias` line is
    in (manager._pass_modules reads them): every name the registry holds after importing all
    must be found so, in the module that registered it."""
    from shardc.passes.manager import ALIASES, PASSES, _pass_modules, load_all_passes

    load_all_passes()
    index = _pass_modules()
    homes = {name: cls.__module__ for name, cls in PASSES.items()}
    assert {n: index.get(n) for n in homes} == homes
    assert sorted(n for n in ALIASES if n not in index) == []
    assert sorted(n for n in index if n not in PASSES and n not in ALIASES) == []


def test_architecture_page_names_what_is_there():
    text = ARCHITECTURE.read_text()
    named = set(re.findall(r"`((?:passes|ir|compiler|tests)/[\w/.]*)`", text))
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"
    packages = sorted(
        str(p.relative_to(ROOT)) + "/"
        for layer in ("passes", "compiler")
        for p in (ROOT / layer).rglob("*")
        if p.is_dir() and (p / "__init__.py").exists() and p != ROOT / layer
    )
    unnamed = [p for p in packages if p not in text and p.rstrip("/").split("/")[-1] + "/" not in text]
    assert unnamed == [], f"docs/architecture.md does not name these folders: {unnamed}"
    # The stage table lists the stages in order.
    rows = re.findall(r"^\| `passes/(\w+)/` \|", text, re.M)
    assert rows == list(STAGES)
