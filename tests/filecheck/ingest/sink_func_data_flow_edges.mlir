// sink-func-data-flow-edges: each func_data_flow_edge's sharding onto its operand, and the edge
// gone. Expected text is what jaxlib's sdy-sink-func-data-flow-edges prints.
// RUN: shardc opt %s -p 'sdy-sink-func-data-flow-edges' | filecheck %s --check-prefix=SINK

sdy.mesh @m = <["x"=2, "y"=4]>

// An edge without a sharding opens its operand's sharding fully (replicated axes dropped).
// SINK-LABEL: func private @unsharded_edge
// SINK-SAME: %arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{?}, {?}]>}
// SINK-NEXT: %[[N:.*]] = stablehlo.negate %arg0
func.func private @unsharded_edge(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}], replicated={"y"}>}) -> tensor<8x8xf32> {
  %0 = sdy.func_data_flow_edge %arg0 : tensor<8x8xf32>
  %1 = stablehlo.negate %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// An edge's sharding replaces the call result's; the other result keeps its own.
// SINK-LABEL: func @main
// SINK-NEXT: %[[C:.*]]:2 = call @pair(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"y"}, {}]>, <@m, [{}, {"x"}]>]>}
// SINK-NEXT: %[[A:.*]] = stablehlo.add %[[C]]#0, %[[C]]#1
func.func private @pair(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  return %arg0, %arg0 : tensor<8x8xf32>, tensor<8x8xf32>
}

func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0:2 = call @pair(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}]>, <@m, [{}, {"x"}]>]>} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
  %1 = sdy.func_data_flow_edge %0#0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"y"}, {}]>]>} : tensor<8x8xf32>
  %2 = stablehlo.add %1, %0#1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
