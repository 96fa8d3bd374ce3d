"""StableHLO's collectives by replica groups and partition_id in per-device code
(compiler/executors/replica_groups.py): a manual computation's body on simulated devices whose
ids are not the mesh positions, so groups and ids are device ids, not positions."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.diagnostics import ExecutionError
from shardc.stablehlo import import_stablehlo

CH = "channel_handle = #stablehlo.channel_handle<handle = {}, type = 1>"
BODY = """
sdy.mesh @m = <["x"=2, "y"=2], device_ids=[3, 1, 0, 2]>
func.func @main(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xui32>) {
  %0:3 = sdy.manual_computation(%arg0) in_shardings=[<@m, [{"x"}, {"y"}]>] out_shardings=[<@m, [{"x"}, {}]>, <@m, [{"x"}, {"y"}]>, <@m, [{"x", "y"}]>] manual_axes={"x", "y"} (%a: tensor<2x4xf32>) {
    %g = "stablehlo.all_gather"(%a) <{all_gather_dim = 1 : i64, CH1, replica_groups = dense<[[3, 1], [0, 2]]> : tensor<2x2xi64>, use_global_device_ids}> : (tensor<2x4xf32>) -> tensor<2x8xf32>
    %s = "stablehlo.reduce_scatter"(%g) <{scatter_dimension = 1 : i64, CH2, replica_groups = dense<[[3, 0], [1, 2]]> : tensor<2x2xi64>, use_global_device_ids}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %r = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %r : tensor<f32>
    }) : (tensor<2x8xf32>) -> tensor<2x4xf32>
    %i = stablehlo.partition_id : tensor<ui32>
    %b = stablehlo.reshape %i : (tensor<ui32>) -> tensor<1xui32>
    sdy.return %g, %s, %b : tensor<2x8xf32>, tensor<2x4xf32>, tensor<1xui32>
  } : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xui32>)
  return %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xui32>
}
""".replace("CH1", CH.format(1)).replace("CH2", CH.format(2))


def test_groups_and_partition_id_are_device_ids() -> None:
    module = import_stablehlo(BODY, "body.mlir")
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    gathered, scattered, ids = run_reference(module, [x])
    # Devices 3 and 1 hold the two "y" halves of the first rows: the gather makes them whole.
    np.testing.assert_array_equal(gathered, x)
    # Devices 3 and 0 (the two "x" blocks) sum their rows; 3 keeps the first half, 0 the second.
    total = x[0:2] + x[2:4]
    want = np.concatenate([np.tile(total[:, :4], 2), np.tile(total[:, 4:], 2)])
    np.testing.assert_array_equal(scattered, want)
    # Each device its own id, in mesh order.
    assert ids.tolist() == [3, 1, 0, 2]


def test_groups_that_miss_a_device_are_a_located_error() -> None:
    text = BODY.replace("dense<[[3, 1], [0, 2]]>", "dense<[[3, 1], [0, 5]]>")
    module = import_stablehlo(text, "body.mlir")
    with pytest.raises(ExecutionError, match="must cover every device of mesh @m once") as info:
        run_reference(module, [np.zeros((4, 8), np.float32)])
    assert info.value.loc is not None and info.value.loc.line == 5
