module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x16xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [0, 1] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([]) {i=16, j=16} reduction={i, j}>} : (tensor<16x16xf32>, tensor<f32>) -> tensor<f32>
    %2 = stablehlo.compare GT, %1, %0, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %3 = stablehlo.convert %2 {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : (tensor<i1>) -> tensor<i32>
    %4 = "stablehlo.case"(%3) ({
      %9 = sdy.constant dense<3.000000e+00> : tensor<f32>
      %10 = stablehlo.broadcast_in_dim %9, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=16}>} : (tensor<f32>) -> tensor<16x16xf32>
      %11 = stablehlo.multiply %arg0, %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=16}>} : tensor<16x16xf32>
      stablehlo.return %11 : tensor<16x16xf32>
    }, {
      %9 = sdy.constant dense<1.000000e+00> : tensor<f32>
      %10 = stablehlo.broadcast_in_dim %9, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=16}>} : (tensor<f32>) -> tensor<16x16xf32>
      %11 = stablehlo.add %arg0, %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=16}>} : tensor<16x16xf32>
      stablehlo.return %11 : tensor<16x16xf32>
    }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<i32>) -> tensor<16x16xf32>
    %5 = sdy.constant dense<0> : tensor<i32>
    %6 = sdy.constant dense<2> : tensor<i32>
    %7 = stablehlo.clamp %5, %arg1, %6 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i32>
    %8 = "stablehlo.case"(%7) ({
      %9 = stablehlo.sine %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=16}>} : tensor<16x16xf32>
      stablehlo.return %9 : tensor<16x16xf32>
    }, {
      %9 = stablehlo.cosine %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=16}>} : tensor<16x16xf32>
      stablehlo.return %9 : tensor<16x16xf32>
    }, {
      %9 = stablehlo.transpose %4, dims = [1, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp"}, {"dp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([j, i])->([i, j]) {i=16, j=16}>} : (tensor<16x16xf32>) -> tensor<16x16xf32>
      %10 = stablehlo.dot_general %4, %9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=16, j=16, k=16} reduction={k}>} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %11 = stablehlo.dot_general %10, %4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=16, j=16, k=16} reduction={k}>} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      stablehlo.return %11 : tensor<16x16xf32>
    }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<i32>) -> tensor<16x16xf32>
    return %8 : tensor<16x16xf32>
  }
}
