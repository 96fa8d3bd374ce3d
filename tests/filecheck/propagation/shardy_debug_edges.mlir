// Shardy's debug-propagation-edge-sharding (passes/propagation/shardy_debug.py): each step that
// changed a sharding (numbered across passes) lists, per axis, the value it came from and the
// values it reached, on the op it went through. As in Shardy, every declared result's steps
// are on result 0, and an axis synced again at the end keeps its first step.
// tests/propagation/test_shardy_debug_live.py checks the same output against jaxlib's Shardy.
// RUN: shardc opt %s --split-input-file -p 'sdy-add-data-flow-edges,sdy-apply-sharding-constraints{debug-propagation-edge-sharding=true},sdy-aggressive-propagate{debug-propagation-edge-sharding=true},sdy-sink-data-flow-edges{sink-debug-propagation-edge-sharding=true}' | filecheck %s

// Step 0 is the constraint applied to its input (apply-sharding-constraints); propagation
// starts at 1: result 1's "dp" into what it returns (written on result 0), the add, the
// multiply, and the final sync of result 0 (result 1's "tp" at the end is the same edge, kept
// at step 4).
// CHECK-LABEL: func.func @two_results
// CHECK-SAME: %[[X:.*]]: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %[[Y:.*]]: tensor<8x16xf32>
// CHECK-SAME: -> (tensor<8x16xf32> {sdy.propagation_edges = #sdy.propagation_edges<[{step-1 = [{"dp" = result-0 -> [operand-0]}]}, {step-4 = [{"dp" = operand-0 -> [result-0]}, {"tp" = operand-0 -> [result-0]}]}]>, sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>})
// CHECK-NEXT: %[[C:.*]] = sdy.sharding_constraint %[[X]] <@mesh, [{"dp"}, {}]> {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"dp" = result-0 -> [operand-0]}]}]>}
// CHECK-NEXT: %[[S:.*]] = stablehlo.add %[[C]], %[[Y]] {sdy.propagation_edges = #sdy.propagation_edges<[{step-2 = [{"dp" = operand-0 -> [operand-1, result-0]}, {"tp" = operand-1 -> [result-0]}]}]>
// CHECK-NEXT: %[[M:.*]] = stablehlo.multiply %[[S]], %[[Y]] {sdy.propagation_edges = #sdy.propagation_edges<[{step-3 = [{"tp" = operand-0 -> [result-0]}]}]>
// CHECK-NEXT: return %[[S]], %[[M]]
sdy.mesh @mesh = <["dp"=2, "tp"=4]>

func.func @two_results(%x: tensor<8x16xf32>, %y: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"tp", ?}]>})
    -> (tensor<8x16xf32>, tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}) {
  %c = sdy.sharding_constraint %x <@mesh, [{"dp"}, {}]> : tensor<8x16xf32>
  %s = stablehlo.add %c, %y : tensor<8x16xf32>
  %m = stablehlo.multiply %s, %y : tensor<8x16xf32>
  return %s, %m : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// "c" splits over the reshape's two result dims: sub-axes, sorted by pre-size.
// CHECK-LABEL: func.func @split_axis
// CHECK-SAME: -> (tensor<4x8xf32> {sdy.propagation_edges = #sdy.propagation_edges<[{step-2 = [{"c":(1)4 = operand-0 -> [result-0]}, {"c":(4)2 = operand-0 -> [result-0]}]}]>
// CHECK-NEXT: %[[R:.*]] = stablehlo.reshape %{{.*}} {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"c":(1)4 = operand-0 -> [result-0]}, {"c":(4)2 = operand-0 -> [result-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"c":(1)4, ?}, {"c":(4)2, ?}]>]>}
// CHECK-NEXT: %[[N:.*]] = stablehlo.negate %[[R]] {sdy.propagation_edges = #sdy.propagation_edges<[{step-1 = [{"c":(1)4 = operand-0 -> [result-0]}, {"c":(4)2 = operand-0 -> [result-0]}]}]>
// CHECK-NEXT: return %[[N]]
sdy.mesh @mesh = <["c"=8]>

func.func @split_axis(%x: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c"}]>}) -> tensor<4x8xf32> {
  %r = stablehlo.reshape %x : (tensor<32xf32>) -> tensor<4x8xf32>
  %n = stablehlo.negate %r : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// A barrier's edges: result 0 takes "dp" from its operand (step 0), the add moves it to
// result 1 (step 1), whose edge gives it to %y (step 2); sunk onto the barrier, one entry per
// result.
// CHECK-LABEL: func.func @barrier
// CHECK-SAME: %[[X:.*]]: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %[[Y:.*]]: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}
// CHECK-NEXT: %[[B:.*]]:2 = stablehlo.optimization_barrier {sdy.block_arg_propagation_edges = [], sdy.result_propagation_edges = [#sdy.propagation_edges<[{step-0 = [{"dp" = operand-0 -> [result-0]}]}]>, #sdy.propagation_edges<[{step-2 = [{"dp" = result-0 -> [operand-0]}]}]>], {{.*}}} %[[X]], %[[Y]]
// CHECK-NEXT: %[[S:.*]] = stablehlo.add %[[B]]#0, %[[B]]#1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-1 = [{"dp" = operand-0 -> [operand-1, result-0]}]}]>
// CHECK-NEXT: return %[[S]]
sdy.mesh @mesh = <["dp"=2, "tp"=4]>

func.func @barrier(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %b:2 = stablehlo.optimization_barrier %x, %y : tensor<8x16xf32>, tensor<8x16xf32>
  %s = stablehlo.add %b#0, %b#1 : tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}
