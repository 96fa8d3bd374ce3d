// canonicalize{enable-patterns=LABEL}: MLIR's canonicalizer with only Shardy's patterns of LABEL
// (what sdy-export-pipeline runs): dead pure ops go, constants are uniqued and hoisted.
// RUN: shardc opt %s -p 'canonicalize{enable-patterns=sdy-collective}' --split-input-file | filecheck %s
// RUN: shardc opt %s -p 'canonicalize{enable-patterns=sdy-reshard}' --split-input-file | filecheck %s --check-prefix=RESHARD

sdy.mesh @m = <["x"=2, "y"=4]>

// An all_reduce sliced on a prefix of its axes becomes a reduce_scatter, then an all_slice of
// the rest; the constants move to the top in reverse order, the duplicate and the dead op go.
// CHECK-LABEL: func @fuse
// CHECK-NEXT: %[[TWO:.*]] = stablehlo.constant dense<2.000000e+00>
// CHECK-NEXT: %[[ONE:.*]] = stablehlo.constant dense<1.000000e+00>
// CHECK-NEXT: %[[ADD:.*]] = stablehlo.add %arg0, %[[ONE]]
// CHECK-NEXT: %[[RS:.*]] = sdy.reduce_scatter [{"x"}, {}] %[[ADD]] out_sharding=<@m, [{"x"}, {}]>
// CHECK-NEXT: %[[AS:.*]] = sdy.all_slice [{"y"}, {}] %[[RS]] out_sharding=<@m, [{"x", "y"}, {}]>
// CHECK-NEXT: %[[MUL:.*]] = stablehlo.multiply %[[AS]], %[[TWO]]
// CHECK-NEXT: %[[MUL2:.*]] = stablehlo.multiply %[[MUL]], %[[ONE]]
// CHECK-NEXT: return %[[MUL2]]
// RESHARD-LABEL: func @fuse
// RESHARD: sdy.all_reduce {"x"}
// RESHARD: sdy.all_slice [{"x", "y"}, {}]
func.func @fuse(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}], unreduced={"x"}>}) -> tensor<8x8xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<8x8xf32>
  %a = stablehlo.add %arg0, %c {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}], unreduced={"x"}>]>} : tensor<8x8xf32>
  %0 = sdy.all_reduce {"x"} %a out_sharding=<@m, [{}, {}]> : tensor<8x8xf32>
  %1 = sdy.all_slice [{"x", "y"}, {}] %0 out_sharding=<@m, [{"x", "y"}, {}]> : tensor<8x8xf32>
  %d = stablehlo.constant dense<2.0> : tensor<8x8xf32>
  %dead = stablehlo.negate %d : tensor<8x8xf32>
  %e = stablehlo.constant dense<1.0> : tensor<8x8xf32>
  %2 = stablehlo.multiply %1, %d {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x", "y"}, {}]>]>} : tensor<8x8xf32>
  %3 = stablehlo.multiply %2, %e {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x", "y"}, {}]>]>} : tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}

// -----

sdy.mesh @m = <["x"=2, "y"=4]>

// A reshard of a single-use reshard reads the inner one's operand (sdy-reshard only); an
// all_gather that a matching all_slice undoes disappears (sdy-collective only); collectives are
// not erased when unused, an unused all_to_all is.
// CHECK-LABEL: func @chains
// CHECK-NEXT: %[[R1:.*]] = sdy.reshard %arg0 <@m, [{"y"}, {}]>
// CHECK-NEXT: %[[R2:.*]] = sdy.reshard %[[R1]] <@m, [{}, {"y"}]>
// CHECK-NEXT: %[[G:.*]] = sdy.all_gather [{"x"}, {}] %arg0
// CHECK-NEXT: %[[P:.*]] = sdy.replicated_to_unreduced {"y"} %arg0
// CHECK-NEXT: return %[[R2]], %arg0
// RESHARD-LABEL: func @chains
// RESHARD-NEXT: %[[R:.*]] = sdy.reshard %arg0 <@m, [{}, {"y"}]>
// RESHARD-NEXT: %[[G:.*]] = sdy.all_gather [{"x"}, {}] %arg0
// RESHARD-NEXT: %[[S:.*]] = sdy.all_slice [{"x"}, {}] %[[G]]
// RESHARD-NEXT: %[[A:.*]] = sdy.all_to_all
// RESHARD-NEXT: %[[P:.*]] = sdy.replicated_to_unreduced
// RESHARD-NEXT: %[[U:.*]] = sdy.all_reduce {"y"} %[[P]]
// RESHARD-NEXT: return %[[R]], %[[U]]
func.func @chains(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = sdy.reshard %arg0 <@m, [{"y"}, {}]> : tensor<8x8xf32>
  %1 = sdy.reshard %0 <@m, [{}, {"y"}]> : tensor<8x8xf32>
  %2 = sdy.all_gather [{"x"}, {}] %arg0 out_sharding=<@m, [{}, {}]> : tensor<8x8xf32>
  %3 = sdy.all_slice [{"x"}, {}] %2 out_sharding=<@m, [{"x"}, {}]> : tensor<8x8xf32>
  %4 = sdy.all_to_all [{"x"}: 0->1] %3 out_sharding=<@m, [{}, {"x"}]> : tensor<8x8xf32>
  %5 = sdy.replicated_to_unreduced {"y"} %3 out_sharding=<@m, [{"x"}, {}], unreduced={"y"}> : tensor<8x8xf32>
  %6 = sdy.all_reduce {"y"} %5 out_sharding=<@m, [{"x"}, {}]> : tensor<8x8xf32>
  return %1, %6 : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

sdy.mesh @m = <["x"=2, "y"=2]>

// Two all_to_alls on distinct dims, the first used once, become one with both moves by source
// dim; a third on a dim already moved stays.
// CHECK-LABEL: func @all_to_alls
// CHECK-NEXT: %[[A:.*]] = sdy.all_to_all [{"x"}: 0->2, {"y"}: 1->3] %arg0 out_sharding=<@m, [{}, {}, {"x"}, {"y"}]>
// CHECK-NEXT: %[[B:.*]] = sdy.all_to_all [{"x"}: 2->0] %[[A]]
// CHECK-NEXT: return %[[B]]
func.func @all_to_alls(%arg0: tensor<4x4x4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {"y"}, {}, {}]>}) -> tensor<4x4x4x4xf32> {
  %0 = sdy.all_to_all [{"y"}: 1->3] %arg0 out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
  %1 = sdy.all_to_all [{"x"}: 0->2] %0 out_sharding=<@m, [{}, {}, {"x"}, {"y"}]> : tensor<4x4x4x4xf32>
  %2 = sdy.all_to_all [{"x"}: 2->0] %1 out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
  return %2 : tensor<4x4x4x4xf32>
}
