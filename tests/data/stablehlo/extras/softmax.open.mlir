module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = sdy.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.maximum across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>]>} : (tensor<16x32xf32>, tensor<f32>) -> tensor<16xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>]>} : (tensor<f32>) -> tensor<16xf32>
    %3 = stablehlo.maximum %2, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>]>} : tensor<16xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<16xf32>) -> tensor<16x1xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x1xf32>) -> tensor<16x32xf32>
    %6 = stablehlo.subtract %arg0, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xf32>
    %7 = stablehlo.exponential %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xf32>
    %8 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%7 init: %8) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>]>} : (tensor<16x32xf32>, tensor<f32>) -> tensor<16xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<16xf32>) -> tensor<16x1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x1xf32>) -> tensor<16x32xf32>
    %12 = stablehlo.divide %7, %11 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xf32>
    return %12 : tensor<16x32xf32>
  }
}
