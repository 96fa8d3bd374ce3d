module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) -> (tensor<16x64xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<f32>) -> tensor<16x32xf32>
    %2 = stablehlo.multiply %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<16x32xf32>
    %3 = sdy.reshard %2 <@mesh, [{"dp"}, {?}]> : tensor<16x32xf32>
    %4 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<32x64xf32>
    %6 = stablehlo.add %arg1, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"tp", ?}]>]>} : tensor<32x64xf32>
    %7 = sdy.reshard %6 <@mesh, [{?}, {"tp"}]> : tensor<32x64xf32>
    %8 = stablehlo.dot_general %3, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    return %8 : tensor<16x64xf32>
  }
}
