"""`import shardc`: one import name for the public API, loaded lazily (JAX stays optional),
passes registered without `load_all_passes()`, and the shipped `shardc.jit` example run from
outside the checkout."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shardc
from shardc.ir.core import Module

ROOT = Path(__file__).resolve().parent.parent
MLP = (ROOT / "examples" / "mlp.mlir").read_text()


def fresh_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_every_public_name_resolves_to_its_module() -> None:
    for name in shardc.__all__:
        value = getattr(shardc, name)
        home = shardc._EXPORTS[name]
        assert getattr(importlib.import_module(home), name) is value, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        shardc.nope  # noqa: B018


def test_import_is_light_and_jax_stays_optional() -> None:
    # The IR, parse, compile and run (numpy) without importing JAX.
    proc = fresh_python(
        "import sys, shardc\n"
        "light = 'shardc.ir.core' not in sys.modules and 'numpy' not in sys.modules\n"
        "m = shardc.parse(open('examples/mlp.mlir').read())\n"
        "import numpy as np\n"
        "outs = shardc.run(m, [np.ones(a.type.shape, np.float32) for a in m.main.args])\n"
        "print(light, 'jax' in sys.modules, outs[0].shape, type(shardc.DeviceMesh).__name__)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False", "(16,", "64)", "type"]


def test_passes_register_on_first_lookup() -> None:
    proc = fresh_python(
        "import shardc\n"
        "m = shardc.parse(open('examples/mlp.mlir').read())\n"
        "ctx = shardc.opt(m, 'sdy-aggressive-propagate,close-shardings,insert-reshards')\n"
        "print(sorted(ctx.timings))\n"
        "import sys\n"
        "print('unnamed imported:', 'shardc.passes.spmd.pad_for_divisibility' in sys.modules)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "'insert-reshards'" in proc.stdout and "'sdy-aggressive-propagate'" in proc.stdout
    # Only the modules of the passes named (and those they run) are imported.
    assert "unnamed imported: False" in proc.stdout


def test_parse_detects_the_format() -> None:
    native = shardc.parse(MLP, "mlp.mlir")
    sdy = shardc.parse(shardc.export_stablehlo(native), "mlp_sdy.mlir")
    assert isinstance(sdy, Module)
    assert [a.type.shape for a in sdy.main.args] == [a.type.shape for a in native.main.args]
    with pytest.raises(shardc.ParseError):
        shardc.parse("func @main(", "bad.mlir")
    with pytest.raises(shardc.ShardcError, match="unknown format"):
        shardc.parse(MLP, format="onnx")


def test_run_takes_a_module_or_a_compile_result() -> None:
    module = shardc.parse(MLP)
    inputs = [np.full(a.type.shape, 0.5, np.float32) for a in module.main.args]
    (want,) = shardc.run_reference(module, inputs)
    (from_module,) = shardc.run(module, inputs, options=shardc.CompileOptions(strategy="basic"))
    result = shardc.compile(module)
    (from_result,) = shardc.run(result, inputs)
    np.testing.assert_allclose(from_module, want, rtol=1e-5)
    np.testing.assert_allclose(from_result, want, rtol=1e-5)
    with pytest.raises(shardc.ShardcError, match="options apply when compiling"):
        shardc.run(result, inputs, options=shardc.CompileOptions())
    with pytest.raises(shardc.ShardcError, match="takes a Module or a CompileResult"):
        shardc.run(MLP, inputs)


def test_compile_consume_compiles_the_module_itself() -> None:
    """`consume=True` (what `shardc.jit` does with its fresh import): the same programs, the
    module itself as the global one; by default the module is left as it was."""
    module = shardc.parse(MLP)
    before = shardc.print_module(module)
    copied = shardc.compile(module)
    assert shardc.print_module(module) == before and copied.module is not module
    consumed = shardc.compile(module, consume=True)
    assert consumed.module is module
    assert shardc.print_module(consumed.module) == shardc.print_module(copied.module)
    assert shardc.print_module(consumed.spmd) == shardc.print_module(copied.spmd)
    assert shardc.print_module(module) != before


def test_the_jit_example_from_outside_the_checkout(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    proc = fresh_python(
        "import importlib.util, runpy, sys\n"
        "print([importlib.util.find_spec(m) is None for m in ('ir', 'passes', 'compiler')])\n"
        f"sys.argv = ['jit_mlp.py']\n"
        f"runpy.run_path({str(ROOT / 'examples' / 'jit_mlp.py')!r}, run_name='__main__')\n",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("[True, True, True]\n")
    assert "shardc.jit vs jax.jit: max abs difference" in proc.stdout
    assert proc.stdout.rstrip().endswith("ok")
