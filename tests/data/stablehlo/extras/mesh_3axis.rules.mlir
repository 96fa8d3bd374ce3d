module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}, {name = "z", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y", "z"}]>}) -> (tensor<8x64xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"z"}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}, {"y", "z"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, l], [l, k])->([i, j, k]) {i=8, j=16, k=64, l=32} reduction={l}>} : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
    %1 = call @relu(%0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}, {"y", "z"}]>]>} : (tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
    %2 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"z"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [])->([i, k]) {i=8, j=16, k=64} reduction={j}>} : (tensor<8x16x64xf32>, tensor<f32>) -> tensor<8x64xf32>
    return %3 : tensor<8x64xf32>
  }
  func.func private @relu(%arg0: tensor<8x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y", "z"}]>}) -> (tensor<8x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y", "z"}]>}) {
    %0 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}, {"y", "z"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j, k]) {i=8, j=16, k=64}>} : (tensor<f32>) -> tensor<8x16x64xf32>
    %2 = stablehlo.maximum %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}, {"y", "z"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [i, j, k])->([i, j, k]) {i=8, j=16, k=64}>} : tensor<8x16x64xf32>
    return %2 : tensor<8x16x64xf32>
  }
}
