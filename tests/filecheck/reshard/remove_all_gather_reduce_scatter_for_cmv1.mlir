// remove-all-gather-reduce-scatter-for-cmv1: a dot reads the operands of the all_gathers it is
// the only user of, and takes the sharding of the reduce_scatter that is its only user. Expected
// text is what jaxlib's sdy-remove-all-gather-reduce-scatter-for-cmv1 prints.
// RUN: shardc opt %s -p 'sdy-remove-all-gather-reduce-scatter-for-cmv1' | filecheck %s

sdy.mesh @m = <["i"=2, "j"=4]>

// Both gathers go; the dot then keeps its reduce_scatter.
// CHECK-LABEL: func @gathers_feed_dot
// CHECK-NEXT: %[[D:.*]] = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}]>]>}
// CHECK-NEXT: %[[RS:.*]] = sdy.reduce_scatter [{"i"}, {}] %[[D]] out_sharding=<@m, [{"i"}, {}]>
// CHECK-NEXT: return %[[RS]]
func.func @gathers_feed_dot(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"j"}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"j"}, {}]>}) -> tensor<8x8xf32> {
  %0 = sdy.all_gather [{}, {"j"}] %arg0 out_sharding=<@m, [{}, {}]> : tensor<8x16xf32>
  %1 = sdy.all_gather [{"j"}, {}] %arg1 out_sharding=<@m, [{}, {}]> : tensor<16x8xf32>
  %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}]>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %3 = sdy.reduce_scatter [{"i"}, {}] %2 out_sharding=<@m, [{"i"}, {}]> : tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}

// A gather with a second user stays; the reduce_scatter goes and the dot takes its sharding.
// CHECK-LABEL: func @shared_gather
// CHECK-NEXT: %[[G:.*]] = sdy.all_gather [{"j"}, {}] %arg1 out_sharding=<@m, [{}, {}]>
// CHECK-NEXT: %[[D:.*]] = stablehlo.dot %arg0, %[[G]] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"i"}, {"j"}]>]>}
// CHECK-NEXT: return %[[D]], %[[G]]
func.func @shared_gather(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"j"}, {}]>}) -> (tensor<8x8xf32>, tensor<16x8xf32>) {
  %0 = sdy.all_gather [{"j"}, {}] %arg1 out_sharding=<@m, [{}, {}]> : tensor<16x8xf32>
  %1 = stablehlo.dot %arg0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}]>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %2 = sdy.reduce_scatter [{"i"}, {"j"}] %1 out_sharding=<@m, [{"i"}, {"j"}]> : tensor<8x8xf32>
  return %2, %0 : tensor<8x8xf32>, tensor<16x8xf32>
}

// An unreduced dot result keeps its reduce_scatter.
// CHECK-LABEL: func @unreduced_dot
// CHECK: %[[RS:.*]] = sdy.reduce_scatter [{"i"}, {}]
// CHECK-NEXT: return %[[RS]]
func.func @unreduced_dot(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"j"}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"j"}, {}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}], unreduced={"j"}>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %1 = sdy.reduce_scatter [{"i"}, {}] %0 out_sharding=<@m, [{"i"}, {}], unreduced={"j"}> : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
