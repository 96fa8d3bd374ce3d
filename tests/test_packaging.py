"""The distribution installs one import name, `shardc`: compiler/ is `shardc`, ir/ is
`shardc.ir`, passes/ is `shardc.passes` (pyproject's package-dir), and nothing else."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"compiler": "shardc", "ir": "shardc.ir", "passes": "shardc.passes"}


def _package_names_on_disk() -> set[str]:
    names = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            names.add(".".join((name, *rel)))
    return names


def test_pyproject_lists_every_package_folder():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {v: k for k, v in FOLDERS.items()}
    assert set(config["packages"]) == _package_names_on_disk()


def test_installed_names_outside_the_checkout(tmp_path):
    # From a folder that is not the checkout only `shardc` imports; the folder names do not.
    code = (
        "import importlib.util, shardc, shardc.ir.core, shardc.passes.manager\n"
        "print([importlib.util.find_spec(m) is None for m in ('ir', 'passes', 'compiler')])\n"
        "print(shardc.ir.core.__name__, shardc.passes.manager.__name__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [
        "[True, True, True]",
        "shardc.ir.core shardc.passes.manager",
    ]


def test_no_module_imports_the_folder_names():
    # Every import inside the project goes through `shardc`; `import ir` would load a second
    # copy of the IR (other class identities) when run from the checkout.
    offenders = []
    for path in ROOT.rglob("*.py"):
        if ".venv" in path.parts or ".git" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] in FOLDERS
            ]
    assert offenders == []
