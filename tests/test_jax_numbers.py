"""Every importable JAX corpus program runs to JAX's own numbers.

For each case of tests/data/stablehlo/generate.py: JAX runs `jax.jit(f, in_shardings=...)` on
random inputs; shardc imports the stored text of the same function and runs it on the reference
interpreter (unsharded) and compiled on the numpy SPMD executor (8 simulated devices).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests.shardy_compare import importable_corpus

jax = pytest.importorskip("jax")

DATA = Path(__file__).parent / "data" / "stablehlo"


def _generate():
    spec = importlib.util.spec_from_file_location("corpus_generate", DATA / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_GEN = None


def _case(name: str):
    global _GEN
    if _GEN is None:
        _GEN = _generate()
    for case_name, _, builder in _GEN.CASES:
        if case_name == name:
            return _GEN.lower(builder)
    raise KeyError(name)


def _inputs(args, rng) -> list[np.ndarray]:
    out = []
    for a in args:
        dtype = np.dtype(a.dtype)
        if np.issubdtype(dtype, np.floating) or dtype.name == "bfloat16":
            out.append(rng.standard_normal(a.shape).astype(dtype))
        else:
            out.append(rng.integers(0, 4, a.shape).astype(dtype))
    return out


def _close(got, want, tol: float) -> None:
    g64, w64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert g64.shape == w64.shape
    scale = max(float(np.max(np.abs(w64))), 1.0) if w64.size else 1.0
    np.testing.assert_allclose(g64, w64, rtol=0, atol=tol * scale)


@pytest.mark.parametrize("name", importable_corpus())
def test_imported_program_runs_to_jax_numbers(name: str) -> None:
    from shardc.executors.reference import run_reference
    from shardc.pipeline import compile
    from shardc.stablehlo import import_stablehlo

    fn, args, kw = _case(name)
    inputs = _inputs(args, np.random.default_rng(1))
    want = jax.jit(fn, **kw)(*inputs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    module = import_stablehlo((DATA / f"{name}.mlir").read_text(), name)
    tol = 2e-2 if any(np.dtype(a.dtype).name == "bfloat16" for a in args) else 1e-4
    reference = run_reference(module, inputs)
    for g, w in zip(reference, want, strict=True):
        _close(g, w, tol)
    for g, w in zip(compile(module).run(inputs), want, strict=True):
        _close(g, w, tol)
