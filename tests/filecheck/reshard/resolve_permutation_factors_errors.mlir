// resolve-permutation-factors stops, located, where Shardy's pass checks its input: a slice
// whose operand and result shardings differ (jaxlib aborts on a failed check).
// RUN: not shardc opt %s -p 'sdy-resolve-permutation-factors' 2>&1 | filecheck %s

// CHECK: resolve_permutation_factors_errors.mlir:[[# @LINE + 4]]:3: error: in pass 'resolve-permutation-factors': 'slice' op: its operand and result shardings differ
// CHECK-NOT: Traceback
sdy.mesh @m = <["x"=2]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<3xf32> {
  %0 = stablehlo.slice %arg0 [1:4] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : (tensor<8xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
