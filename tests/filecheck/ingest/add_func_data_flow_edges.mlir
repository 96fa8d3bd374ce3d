// add-func-data-flow-edges / sink-func-data-flow-edges: explicit edges for the arguments of every
// function but main and for every call result, and back. Expected text is what jaxlib's passes
// print for the same input.
// RUN: shardc opt %s -p 'sdy-add-func-data-flow-edges' | filecheck %s --check-prefix=ADD
// RUN: shardc opt %s -p 'sdy-add-func-data-flow-edges,sdy-sink-func-data-flow-edges' | filecheck %s --check-prefix=BACK

sdy.mesh @m = <["x"=2, "y"=4]>

// The callee's edges open its body, in argument order, with the arguments' shardings; the
// token gets none.
// ADD-LABEL: func private @scale
// ADD-NEXT: %[[E0:.*]] = sdy.func_data_flow_edge %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {?}]>]>} : tensor<8x8xf32>
// ADD-NEXT: %[[E1:.*]] = sdy.func_data_flow_edge %arg1 : tensor<8x8xf32>
// ADD-NEXT: %[[M:.*]] = stablehlo.multiply %[[E0]], %[[E1]]
// ADD-NEXT: return %[[M]], %[[E1]], %arg2
// BACK-LABEL: func private @scale
// BACK-SAME: %arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {?}]>}, %arg1: tensor<8x8xf32>, %arg2: !stablehlo.token
// BACK-NEXT: %[[M:.*]] = stablehlo.multiply %arg0, %arg1
func.func private @scale(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {?}]>}, %arg1: tensor<8x8xf32>, %arg2: !stablehlo.token) -> (tensor<8x8xf32>, tensor<8x8xf32>, !stablehlo.token) {
  %0 = stablehlo.multiply %arg0, %arg1 : tensor<8x8xf32>
  return %0, %arg1, %arg2 : tensor<8x8xf32>, tensor<8x8xf32>, !stablehlo.token
}

// Main's arguments get no edge; each tensor result of the call gets one after it, holding the
// call's sharding of that result (the second result is open there: it has none of its own).
// ADD-LABEL: func @main
// ADD-NEXT: %[[C:.*]]:3 = call @scale(%arg0, %arg0, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"y"}]>, <@m, [{?}, {?}]>, <@m, []>]>}
// ADD-NEXT: %[[F0:.*]] = sdy.func_data_flow_edge %[[C]]#0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"y"}]>]>}
// ADD-NEXT: %[[F1:.*]] = sdy.func_data_flow_edge %[[C]]#1 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{?}, {?}]>]>}
// ADD-NEXT: %[[A:.*]] = stablehlo.add %[[F0]], %[[F1]]
// BACK-LABEL: func @main
// BACK-NEXT: %[[C:.*]]:3 = call @scale(%arg0, %arg0, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"y"}]>, <@m, [{?}, {?}]>, <@m, []>]>}
// BACK-NEXT: %[[A:.*]] = stablehlo.add %[[C]]#0, %[[C]]#1
func.func @main(%arg0: tensor<8x8xf32>, %arg1: !stablehlo.token) -> tensor<8x8xf32> {
  %0:3 = call @scale(%arg0, %arg0, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"y"}]>, <@m, [{?}, {?}]>, <@m, []>]>} : (tensor<8x8xf32>, tensor<8x8xf32>, !stablehlo.token) -> (tensor<8x8xf32>, tensor<8x8xf32>, !stablehlo.token)
  %1 = stablehlo.add %0#0, %0#1 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
