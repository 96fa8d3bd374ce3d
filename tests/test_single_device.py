"""Values placed on one device (a maximal mesh, `<@dev0, []>`): Shardy's
sdy-insert-explicit-reshards moves an op's operands onto its device and its results back
(passes/reshard/reshards/single_device.py; FileCheck cases in
tests/filecheck/reshard/insert_explicit_reshards_single_device.mlir), and `compile` computes such values
replicated on the global mesh, with a warning; either program computes the unsharded result."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.pipeline import compile
from shardc.stablehlo import export_stablehlo, import_stablehlo
from tests.export_compare import run_shardc

PROGRAM = """sdy.mesh @mesh = <["x"=2, "y"=2]>
sdy.mesh @dev0 = <[], device_ids=[0]>
sdy.mesh @dev3 = <[], device_ids=[3]>
func.func @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                %b: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
  %0 = stablehlo.tanh %a {sdy.sharding = #sdy.sharding_per_value<[<@dev0, []>]>} : tensor<8x4xf32>
  %1 = stablehlo.add %0, %b {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<8x4xf32>
  %2 = stablehlo.multiply %1, %1 {sdy.sharding = #sdy.sharding_per_value<[<@dev3, []>]>} : tensor<8x4xf32>
  %3 = stablehlo.exponential %2 {sdy.sharding = #sdy.sharding_per_value<[<@dev3, []>]>} : tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}
"""


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(2)]


@pytest.mark.parametrize("before", ["", "sdy-insert-explicit-reshards{enable-full-version=true}"])
def test_compile_computes_single_device_values_replicated(before: str) -> None:
    text = run_shardc(PROGRAM, before) if before else PROGRAM
    module = import_stablehlo(text, "in.mlir")
    want = run_reference(import_stablehlo(PROGRAM, "in.mlir"), _inputs())[0]
    result = compile(module)
    warnings = "\n".join(result.warnings)
    assert "values placed on one device (@dev0) are computed replicated" in warnings
    assert "(@dev3)" in warnings and warnings.count("placed on one device") == 2
    np.testing.assert_allclose(result.run(_inputs())[0], want, rtol=1e-6)
    # The op placed on @dev0 reads the whole of %a: gathered on both axes before the tanh.
    spmd = export_stablehlo(result.spmd)
    assert "all_gather" in spmd


def test_the_pass_moves_each_op_to_its_device_and_back() -> None:
    out = run_shardc(PROGRAM, "sdy-insert-explicit-reshards")
    # %a: tiled -> replicated on @mesh -> @dev0; the tanh's result back to @mesh, replicated.
    assert 'sdy.reshard %arg0 <@mesh, [{}, {}]>' in out
    assert 'sdy.reshard %0 <@dev0, []>' in out
    assert 'stablehlo.tanh %1 {sdy.sharding = #sdy.sharding_per_value<[<@dev0, []>]>}' in out
    assert 'sdy.reshard %2 <@mesh, [{}, {}]>' in out
    # Each operand of an op on @dev3 moves there on its own (the multiply's two uses of %1 take
    # two), and each op's result goes back to @mesh: Shardy does not chain two ops on a device.
    assert out.count("<@dev3, []> : tensor<8x4xf32>") == 3
    assert out.count("sdy.reshard %4 <@mesh, [{}, {}]>") == 2
