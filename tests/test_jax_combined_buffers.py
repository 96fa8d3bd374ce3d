"""The JAX executor's combined all-gathers and reduce-scatters (jax_collectives.py), as XLA:CPU
compiles them: the values of the uncombined collectives (numpy executor), one collective each,
and the buffer they pack built inside a fusion, so that XLA compiles one kernel for all the
layers that pack alike rather than a concatenate kernel of its own per collective."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from shardc.executors.jax_arrays import JaxArrayProgram  # noqa: E402
from shardc.executors.numpy_exec import NumpyExecutor  # noqa: E402
from shardc.ir.parser import parse_module  # noqa: E402

# Rows of 256 and 512 elements: XLA:CPU keeps a concatenate on the minor dim from 128 elements
# out of fusions. Two "layers" pack alike (same shapes, same collectives).
INS = [[8, 64], [4, 128], [8, 64], [4, 128]]
OUTS = [[8, 16], [4, 32], [4, 64], [2, 128], [8, 16], [4, 32], [8, 256], [4, 512]]


def _attrs() -> str:
    """An SPMD program's signature: every value replicated (its block is the whole)."""
    def shardings(shapes: list[list[int]]) -> str:
        return ", ".join(f"<@m, [{', '.join('{}' for _ in s)}]>" for s in shapes)

    return (f"mesh = @m, in_shapes = {INS}, in_shardings = [{shardings(INS)}], "
            f"out_shapes = {OUTS}, out_shardings = [{shardings(OUTS)}]")


WIDE = f"""
mesh @m = <["y"=2, "x"=4]>
func @main(%a: tensor<8x64xf32>, %b: tensor<4x128xf32>, %c: tensor<8x64xf32>, %d: tensor<4x128xf32>) -> (tensor<8x16xf32>, tensor<4x32xf32>, tensor<4x64xf32>, tensor<2x128xf32>, tensor<8x16xf32>, tensor<4x32xf32>, tensor<8x256xf32>, tensor<4x512xf32>) attributes {{{_attrs()}}} {{
  %r0, %r1 = spmd.reduce_scatter %a, %b {{axes = ["x"], dim = 1, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]}} : tensor<8x16xf32>, tensor<4x32xf32>
  %s0, %s1 = spmd.reduce_scatter %a, %b {{axes = ["y"], dim = 0, groups = [[0, 4], [1, 5], [2, 6], [3, 7]]}} : tensor<4x64xf32>, tensor<2x128xf32>
  %t0, %t1 = spmd.reduce_scatter %c, %d {{axes = ["x"], dim = 1, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]}} : tensor<8x16xf32>, tensor<4x32xf32>
  %g0, %g1 = spmd.all_gather %a, %b {{axes = ["x"], dim = 1, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]}} : tensor<8x256xf32>, tensor<4x512xf32>
  return %r0, %r1, %s0, %s1, %t0, %t1, %g0, %g1
}}
"""


def _entry(hlo: str) -> list[str]:
    """The instructions of the compiled module's entry computation."""
    lines = hlo.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return [line for line in lines[start + 1:end] if " = " in line]


def test_combined_buffers_are_packed_in_fusions_with_the_values_of_numpy() -> None:
    module = parse_module(WIDE)
    rng = np.random.default_rng(0)
    blocks = [{d: rng.standard_normal(a.type.shape).astype(np.float32) for d in range(8)}
              for a in module.main.args]
    expected = NumpyExecutor(module).run_blocks(blocks)
    ex = JaxArrayProgram(module, devices=jax.devices()[:8]).executor
    spec = jax.sharding.PartitionSpec(ex.names)
    # Device d's block of each argument stacked in mesh order: one block per device.
    fn = jax.jit(jax.shard_map(
        lambda *xs: tuple(o[None] for o in ex.call(ex.func, [x[0] for x in xs])),
        mesh=ex.mesh, in_specs=(spec,) * len(blocks), out_specs=(spec,) * len(expected)))
    ids = module.meshes["m"].all_device_ids()
    args = [np.stack([b[d] for d in ids]) for b in blocks]
    got = [np.asarray(o) for o in fn(*args)]
    for i, out in enumerate(expected):
        for p, d in enumerate(ids):
            np.testing.assert_allclose(got[i][p], out[d], rtol=1e-5, atol=1e-5)
    entry = _entry(fn.lower(*args).compile().as_text())
    assert sum(" reduce-scatter(" in line for line in entry) == 3
    assert sum(" all-gather(" in line or " all-gather-start(" in line for line in entry) == 1
    # No buffer is a concatenate of its own: each is built inside a fusion.
    assert not [line for line in entry if " concatenate(" in line]
