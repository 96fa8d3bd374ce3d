"""StableHLO's replica groups written over mesh axes (`#stablehlo.replica_group_mesh_axes`) import
as the device groups of those axes, as the dense form does; a bad one is a located error."""

from __future__ import annotations

import pytest

from shardc.ir.diagnostics import ShardcError
from shardc.stablehlo import import_stablehlo

PROGRAM = """sdy.mesh @mesh = <["dp"=2, "tp"=4]>
func.func @main(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = GROUPS, use_global_device_ids}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
"""


def _mesh_axes(mesh: str, *names: str) -> str:
    refs = ", ".join(f'#stablehlo.axis_ref<name = "{n}">' for n in names)
    return f"#stablehlo.replica_group_mesh_axes<mesh = @{mesh}, axes = [{refs}]>"


def _groups(groups: str):
    module = import_stablehlo(PROGRAM.replace("GROUPS", groups), "g.mlir")
    (op,) = [op for op in module.main.body if op.name == "xla.all_reduce"]
    return op.attributes["replica_groups"]


@pytest.mark.parametrize(
    "names, dense",
    [
        (("tp",), "dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>"),
        (("dp",), "dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>"),
        (("tp", "dp"), "dense<[[0, 4, 1, 5, 2, 6, 3, 7]]> : tensor<1x8xi64>"),
    ],
)
def test_mesh_axes_are_the_dense_groups(names: tuple[str, ...], dense: str) -> None:
    assert _groups(_mesh_axes("mesh", *names)) == _groups(dense)


@pytest.mark.parametrize(
    "groups, message",
    [
        (_mesh_axes("nope", "tp"), "unknown mesh @nope"),
        (_mesh_axes("mesh", "pp"), "need axes of mesh @mesh"),
    ],
)
def test_bad_mesh_axes_are_located(groups: str, message: str) -> None:
    with pytest.raises(ShardcError, match=message) as info:
        import_stablehlo(PROGRAM.replace("GROUPS", groups), "g.mlir")
    assert info.value.loc is not None and info.value.loc.line == 3
