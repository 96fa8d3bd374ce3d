"""Op-priority propagation (`sdy-op-priority-propagate`) against jaxlib's, in process: which ops
pass shardings through in the first stages (host offload custom calls both ways, dynamic slices
forward only, scalar operands not counted as uses)."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")

from shardc.api import opt  # noqa: E402
from shardc.stablehlo import export_stablehlo, import_stablehlo  # noqa: E402
from tests.shardy_compare import run_shardy  # noqa: E402

MESH = 'sdy.mesh @mesh = <["a"=2, "b"=2]>\n'

CASES = {
    # the offload calls pass "b" from the argument before the result's "a" arrives backward
    "offload_calls_pass_through": """
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}, {?}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) {
  %0 = stablehlo.negate %arg0 : tensor<8x4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = ""} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = stablehlo.custom_call @MoveToDevice(%1) {backend_config = ""} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %3 = stablehlo.multiply %2, %2 : tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}
""",
    # a dynamic_slice passes its operand's sharding forward before its users see the result's
    "dynamic_slice_forward_first": """
func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>}, %i: tensor<i32>) -> (tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"b"}]>}) {
  %0 = stablehlo.dynamic_slice %arg0, %i, %i, sizes = [16, 4] : (tensor<16x8xf32>, tensor<i32>, tensor<i32>) -> tensor<16x4xf32>
  %1 = stablehlo.exponential %0 : tensor<16x4xf32>
  %2 = stablehlo.sine %0 : tensor<16x4xf32>
  %3 = stablehlo.add %1, %2 : tensor<16x4xf32>
  return %3 : tensor<16x4xf32>
}
""",
    # a scalar used twice does not make its user wait for the multi-use stage
    "scalar_operand_uses_do_not_count": """
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, %s: tensor<f32>) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}, tensor<f32>) {
  %0 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<8x8xf32>
  %2 = stablehlo.negate %1 : tensor<8x8xf32>
  %3 = stablehlo.multiply %s, %s : tensor<f32>
  return %2, %3 : tensor<8x8xf32>, tensor<f32>
}
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_priority_matches_shardy(name: str) -> None:
    text = MESH + CASES[name]
    module = import_stablehlo(text, f"{name}.mlir")
    opt(module, "sdy-op-priority-propagate")
    expected = run_shardy(text, "builtin.module(sdy-op-priority-propagate)")
    assert export_stablehlo(module).rstrip("\n") == expected.rstrip("\n")
