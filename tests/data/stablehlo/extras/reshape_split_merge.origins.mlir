module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}, {}]>, sdy.sharding_origins = {dp = "self", tp = "self"}}, %arg1: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", "tp"}, {}]>, sdy.sharding_origins = {dp = "self", tp = "self"}}) -> (tensor<2x4x8x8xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {"tp"}, {}]>, sdy.sharding_origins = {dp = "input: 0", tp = "input: 0"}}, tensor<32x16xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", "tp"}, {}]>, sdy.sharding_origins = {dp = "input: 1", tp = "input: 1"}}) {
    %0 = stablehlo.reshape %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_origins = [{dp = "input: 0", tp = "input: 0"}]} : (tensor<8x16x4xf32>) -> tensor<8x64xf32>
    %1 = stablehlo.reshape %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>, sdy.sharding_origins = [{dp = "input: 0", tp = "input: 0"}]} : (tensor<8x64xf32>) -> tensor<2x4x8x8xf32>
    %2 = stablehlo.reshape %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", "tp":(1)2}, {"tp":(2)2}, {}]>]>, sdy.sharding_origins = [{dp = "input: 1", "tp:(1)2" = "input: 1", "tp:(2)2" = "input: 1"}]} : (tensor<32x16xf32>) -> tensor<4x8x16xf32>
    %3 = stablehlo.reshape %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", "tp"}, {}]>]>, sdy.sharding_origins = [{dp = "input: 1", tp = "input: 1"}]} : (tensor<4x8x16xf32>) -> tensor<32x16xf32>
    %4 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>, sdy.sharding_origins = [{dp = "input: 0", tp = "input: 0"}]} : (tensor<f32>) -> tensor<2x4x8x8xf32>
    %6 = stablehlo.multiply %1, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>, sdy.sharding_origins = [{dp = "input: 0", tp = "input: 0"}]} : tensor<2x4x8x8xf32>
    %7 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", "tp"}, {}]>]>, sdy.sharding_origins = [{dp = "input: 1", tp = "input: 1"}]} : (tensor<f32>) -> tensor<32x16xf32>
    %9 = stablehlo.add %3, %8 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", "tp"}, {}]>]>, sdy.sharding_origins = [{dp = "input: 1", tp = "input: 1"}]} : tensor<32x16xf32>
    return %6, %9 : tensor<2x4x8x8xf32>, tensor<32x16xf32>
  }
}
