"""JAX puts a scalar argument on `sdy.mesh @empty_mesh = <[]>`: a mesh without axes goes with any
other, as in Shardy's getCommonMesh, through propagation and into the SPMD program."""

from __future__ import annotations

import numpy as np

import shardc

PROGRAM = """\
mesh @mesh = <["dp"=2, "tp"=4]>
mesh @empty_mesh = <[]>

func @main(%x: tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>, %s: tensor<f32, <@empty_mesh, []>>) -> tensor<8x16xf32> {
  %0 = broadcast_in_dim %s {broadcast_dimensions = []} : tensor<8x16xf32>
  %1 = multiply %x, %0 : tensor<8x16xf32>
  return %1
}
"""


def test_scalar_on_the_empty_mesh_compiles_and_runs() -> None:
    result = shardc.compile(shardc.parse(PROGRAM, "empty_mesh.mlir"))
    main = result.module.main
    assert str(main.body.ops[-2].results[0].mapping) == '<@mesh, [{"dp"}, {}]>'
    assert main.args[1].mapping.mesh.name == "empty_mesh"  # kept as JAX wrote it
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    s = np.float32(0.5)
    (out,) = shardc.run(result, [x, s])
    np.testing.assert_array_equal(out, x * s)
