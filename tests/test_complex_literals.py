"""Complex dense literals (`dense<(0.0,1.0)>`, as JAX lowers `1j * x` and complex arrays): read
by the StableHLO and native readers (the line reader and the grammar alike), printed back as
MLIR prints them, and run on both executors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import shardc
from shardc import formats
from shardc.ir.grammar_parser import parse_with_grammar


def _step(x):
    table = jnp.array([[1 + 2j, -0.5j], [3.25, 1e-8 - 7j]], jnp.complex64)
    rotated = jnp.exp(1j * x[:2, :2]) * jnp.conj(table)
    return jnp.real(rotated), jnp.imag(rotated * 2j)


X = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)


def test_constants_read_and_print_back_as_jax_printed_them():
    text = jax.jit(_step).lower(X).as_text()
    module = shardc.from_jax(_step, X)
    exported = formats.emit(module, "sdy")

    def constants(t: str) -> list[str]:
        return [line.split("=", 1)[1].split(" loc(")[0].strip()
                for line in t.splitlines() if "stablehlo.constant" in line]

    assert constants(exported) == constants(text) and any("(" in c for c in constants(text))
    native = formats.emit(module, "native")
    assert "dense<(0.0,1.0)>" in native
    # The native text reads back the same, through the line reader and the grammar.
    assert formats.emit(formats.parse(native, "a.mlir", "native"), "native") == native
    assert formats.emit(parse_with_grammar(native, "a.mlir"), "native") == native


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_complex_constants_run(backend):
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    f = shardc.jit(_step, mesh=mesh if backend == "jax" else mesh.abstract_mesh,
                   in_shardings=(P("dp", "tp"),), backend=backend)
    for got, want in zip(f(X), jax.jit(_step)(X), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
