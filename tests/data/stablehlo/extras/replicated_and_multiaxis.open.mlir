module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", "tp"}, {}]>}, %arg1: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp", "dp"}, {}]>}) -> (tensor<32x16xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", "tp"}, {}]>}, tensor<32xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", "tp", ?}, {?}]>]>} : tensor<32x16xf32>
    %1 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", "dp", ?}, {?}]>]>} : (tensor<f32>) -> tensor<32x16xf32>
    %3 = stablehlo.multiply %arg2, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", "dp", ?}, {?}]>]>} : tensor<32x16xf32>
    %4 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%3 init: %4) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", "dp", ?}]>]>} : (tensor<32x16xf32>, tensor<f32>) -> tensor<32xf32>
    return %0, %5 : tensor<32x16xf32>, tensor<32xf32>
  }
}
