module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}, %arg1: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<32xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"tp", ?}]>}, tensor<8x32xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, tensor<f32> {jax.result_info = "result[2]"}, tensor<f32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"tp", ?}]>]>} : (tensor<32xf32>) -> tensor<1x32xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<1x32xf32>) -> tensor<8x32xf32>
    %2 = stablehlo.add %1, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<8x32xf32>
    %3 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%2 init: %3) applies stablehlo.add across dimensions = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", ?}]>]>} : (tensor<8x32xf32>, tensor<f32>) -> tensor<32xf32>
    %5 = sdy.constant dense<0xFF800000> : tensor<f32>
    %6 = stablehlo.reduce(%2 init: %5) applies stablehlo.maximum across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>]>} : (tensor<8x32xf32>, tensor<f32>) -> tensor<8xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8xf32>) -> tensor<8x1xf32>
    %8 = sdy.constant dense<0x7F800000> : tensor<f32>
    %9 = stablehlo.reduce(%arg1 init: %8) applies stablehlo.minimum across dimensions = [0, 1] : (tensor<8x32xf32>, tensor<f32>) -> tensor<f32>
    %10 = stablehlo.broadcast_in_dim %7, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<8x1xf32>) -> tensor<8x32xf32>
    %11 = stablehlo.subtract %2, %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<8x32xf32>
    %12 = stablehlo.reduce(%2 init: %3) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x32xf32>, tensor<f32>) -> tensor<f32>
    %13 = sdy.constant dense<2.560000e+02> : tensor<f32>
    %14 = stablehlo.divide %12, %13 : tensor<f32>
    return %4, %11, %9, %14 : tensor<32xf32>, tensor<8x32xf32>, tensor<f32>, tensor<f32>
  }
}
