// remove-all-gather-reduce-scatter-for-cmv1: a dot reads what its single-use all_gathers read,
// and a dot feeding only a reduce_scatter takes its sharding instead.
// RUN: shardc opt %s -p sdy-remove-all-gather-reduce-scatter-for-cmv1 | filecheck %s

sdy.mesh @m = <["x"=2, "y"=2]>

// CHECK-LABEL: func @gathered_operand
// CHECK-NEXT: %[[DOT:.*]] = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0]
// CHECK-NEXT: %[[RS:.*]] = sdy.reduce_scatter [{}, {"y"}] %[[DOT]]
// CHECK-NEXT: return %[[RS]]
func.func @gathered_operand(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"y"}, {}]>}) -> tensor<8x8xf32> {
  %0 = sdy.all_gather [{"y"}, {}] %arg1 out_sharding=<@m, [{}, {}]> : tensor<16x8xf32>
  %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %2 = sdy.reduce_scatter [{}, {"y"}] %1 out_sharding=<@m, [{"x"}, {"y"}]> : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}

// CHECK-LABEL: func @scattered_result
// CHECK-NEXT: %[[DOT:.*]] = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {"y"}]>]>}
// CHECK-NEXT: return %[[DOT]]
func.func @scattered_result(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}, %arg1: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %1 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %2 = sdy.reduce_scatter [{}, {"y"}] %1 out_sharding=<@m, [{"x"}, {"y"}]> : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
