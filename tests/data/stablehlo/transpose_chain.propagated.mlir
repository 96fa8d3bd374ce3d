module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}, {}]>}) -> (tensor<8x4x16xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {"tp"}]>}, tensor<32x16xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = stablehlo.transpose %arg0, dims = [2, 0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"dp"}, {"tp"}]>]>} : (tensor<8x16x4xf32>) -> tensor<4x8x16xf32>
    %1 = stablehlo.transpose %0, dims = [2, 1, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp"}, {"dp"}, {}]>]>} : (tensor<4x8x16xf32>) -> tensor<16x8x4xf32>
    %2 = stablehlo.transpose %1, dims = [1, 2, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : (tensor<16x8x4xf32>) -> tensor<8x4x16xf32>
    %3 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : (tensor<f32>) -> tensor<8x4x16xf32>
    %5 = stablehlo.add %2, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : tensor<8x4x16xf32>
    %6 = stablehlo.reshape %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp"}, {"dp"}]>]>} : (tensor<16x8x4xf32>) -> tensor<16x32xf32>
    %7 = stablehlo.transpose %6, dims = [1, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
    return %5, %7 : tensor<8x4x16xf32>, tensor<32x16xf32>
  }
}
