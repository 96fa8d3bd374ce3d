// insert-explicit-reshards: Shardy's explicit reshards and all-reduces. Expected text is what
// jaxlib's sdy-insert-explicit-reshards{enable-full-version=true} prints for the same input.
// RUN: shardc opt %s -p 'sdy-insert-explicit-reshards{enable-full-version=true}' | filecheck %s

sdy.mesh @m = <["a"=2, "b"=4]>

// A reduction over a sharded dim: the all_reduce follows the op at once, and reads the reduce's
// implicit partial sums (its result has no unreduced axes; the all_reduce verifier accepts it).
// CHECK-LABEL: func @reduce_sharded_dim
// CHECK: %[[R:.*]] = stablehlo.reduce(%arg0 init: %{{.*}}) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK-NEXT: %[[AR:.*]] = sdy.all_reduce {"b"} %[[R]] out_sharding=<@m, [{}]> : tensor<8xf32>
// CHECK-NEXT: return %[[AR]]
func.func @reduce_sharded_dim(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"b"}]>}) -> tensor<8xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
