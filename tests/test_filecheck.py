"""Runs every FileCheck test in tests/filecheck/ (a pass's file sits in its stage's folder): each `// RUN:` line is a shell pipeline.

`%s` is the test file; `not CMD` succeeds when CMD fails. Lines are run with bash and
`set -o pipefail`, with the environment's `shardc` and `filecheck` on PATH.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "filecheck"
FILES = sorted(HERE.rglob("*.mlir"))


def run_lines(path: Path) -> list[str]:
    lines, current = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("// RUN:"):
            part = stripped[len("// RUN:") :].strip()
            if part.endswith("\\"):
                current += part[:-1] + " "
                continue
            lines.append(current + part)
            current = ""
    return lines


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(HERE)) for p in FILES])
def test_filecheck(path: Path) -> None:
    commands = run_lines(path)
    assert commands, f"{path.name} has no RUN line"
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    assert shutil.which("shardc", path=env["PATH"]), "shardc is not installed in this environment"
    for command in commands:
        script = 'set -o pipefail\nnot() { "$@"; [ $? -ne 0 ]; }\n' + command.replace(
            "%s", shlex.quote(str(path))
        )
        proc = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, env=env, cwd=path.parent
        )
        assert proc.returncode == 0, (
            f"RUN: {command}\nexit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
