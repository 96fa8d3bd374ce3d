module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>, sdy.sharding_origins = {dp = "constraint_0"}}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>, sdy.sharding_origins = {tp = "constraint_0"}}) -> (tensor<16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_origins = [{dp = "constraint_0", tp = "constraint_0"}]} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %1 = sdy.reshard %0 <@mesh, [{"dp"}, {"tp"}]> {sdy.sharding_origin_name = "constraint_0", sdy.sharding_origins = {dp = "self", tp = "self"}} : tensor<16x64xf32>
    %2 = stablehlo.sine %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : tensor<16x64xf32>
    %3 = sdy.reshard %2 <@mesh, [{}, {}]> {sdy.sharding_origin_name = "constraint_1"} : tensor<16x64xf32>
    %4 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%3 init: %4) applies stablehlo.add across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
    return %5 : tensor<16xf32>
  }
}
