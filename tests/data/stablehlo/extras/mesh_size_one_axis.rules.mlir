module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["pp"=1, "dp"=8]> {stablehlo.mesh = {axes = [{name = "pp", size = 1 : i64}, {name = "dp", size = 8 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) -> (tensor<16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) {
    %0 = stablehlo.cosine %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %1 = sdy.constant dense<3.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %3 = stablehlo.multiply %0, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    return %3 : tensor<16x32xf32>
  }
}
