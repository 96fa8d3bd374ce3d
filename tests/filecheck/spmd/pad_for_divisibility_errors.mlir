// pad-for-divisibility: function boundaries must already be divisible (padding stays inside).
// RUN: not shardc opt %s -p sdy-pad-for-divisibility 2>&1 | filecheck %s

sdy.mesh @m = <["a"=3]>

// CHECK: pad_for_divisibility_errors.mlir:[[# @LINE + 1]]:1: error: in pass 'pad-for-divisibility': 'func.func' op result #1 has a non-divisible sharding
func.func @f(%arg0: tensor<6xf32>) -> (tensor<6xf32>, tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}]>}) {
  %0 = stablehlo.slice %arg0 [0:4] : (tensor<6xf32>) -> tensor<4xf32>
  return %arg0, %0 : tensor<6xf32>, tensor<4xf32>
}
