"""Every code block in docs/ and README.md is executed: `mlir` blocks must parse and round-trip,
`python` blocks run, `sh` blocks whose lines start with `shardc` run and must succeed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import load_all_passes

ROOT = Path(__file__).parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def blocks(kind: str) -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        if not path.exists():
            continue
        for i, m in enumerate(BLOCK.finditer(path.read_text())):
            if m.group(1) == kind:
                out.append((f"{path.name}#{i}", m.group(2)))
    return out


@pytest.mark.parametrize("name, text", blocks("mlir"), ids=[n for n, _ in blocks("mlir")])
def test_mlir_blocks_round_trip(name: str, text: str) -> None:
    load_all_passes()  # registers the spmd.* ops of per-device programs
    if "stablehlo." in text or "func.func" in text or "sdy." in text:
        from shardc.stablehlo import import_stablehlo

        import_stablehlo(text, name)
        return
    module = parse_module(text, name)
    assert print_module(module) == text


# Blocks that import these need the `[ecosystem]` extra; without it they are skipped.
OPTIONAL = {"flax": "ecosystem", "optax": "ecosystem", "equinox": "ecosystem"}
IMPORT = re.compile(r"^(?:import|from) (\w+)", re.M)


@pytest.mark.parametrize("name, text", blocks("python"), ids=[n for n, _ in blocks("python")])
def test_python_blocks_run(name: str, text: str) -> None:
    for module in IMPORT.findall(text):
        if module in OPTIONAL:
            pytest.importorskip(module, reason=f"{name} needs {module}: pip install "
                                               f"'shardc[{OPTIONAL[module]}]'")
    code = compile(text, name, "exec")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(code, {"__name__": "__docs__"})
    finally:
        os.chdir(cwd)


def shell_commands() -> list[tuple[str, str]]:
    out = []
    for name, text in blocks("sh"):
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("shardc "):
                out.append((name, line))
    return out


@pytest.mark.parametrize("name, command", shell_commands(), ids=[c for _, c in shell_commands()])
def test_shell_commands_succeed(name: str, command: str, tmp_path) -> None:
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    args = shlex.split(command)
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
