module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = sdy.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %0, %iterArg_0 = %0, %iterArg_1 = %arg0) : tensor<i32>, tensor<i32>, tensor<16x32xf32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>, <@mesh, []>, <@mesh, [{"dp"}, {"tp"}]>]>}
    cond {
      %3 = sdy.constant dense<4> : tensor<i32>
      %4 = stablehlo.compare LT, %iterArg, %3, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %3:2 = func.call @closed_call(%iterArg_0, %iterArg_1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>, <@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<i32>, tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>)
      %4 = sdy.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg, %4 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i32>
      stablehlo.return %5, %3#0, %3#1 : tensor<i32>, tensor<i32>, tensor<16x32xf32>
    }
    %2:3 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %0, %iterArg_1 = %1#2) : tensor<i32>, tensor<i32>, tensor<16x32xf32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>, <@mesh, []>, <@mesh, [{"dp"}, {"tp"}]>]>}
    cond {
      %3 = stablehlo.compare LT, %iterArg_0, %iterArg, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %4 = sdy.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.reduce(%iterArg_1 init: %4) applies stablehlo.add across dimensions = [0, 1] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([]) {i=16, j=32} reduction={i, j}>} : (tensor<16x32xf32>, tensor<f32>) -> tensor<f32>
      %6 = sdy.constant dense<1.000000e+06> : tensor<f32>
      %7 = stablehlo.compare LT, %5, %6, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.and %3, %7 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i1>
      stablehlo.return %8 : tensor<i1>
    } do {
      %3 = sdy.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_0, %3 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i32>
      %5 = sdy.constant dense<2.000000e+00> : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
      %7 = stablehlo.multiply %iterArg_1, %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
      stablehlo.return %iterArg, %4, %7 : tensor<i32>, tensor<i32>, tensor<16x32xf32>
    }
    return %2#2 : tensor<16x32xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}, %arg1: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<i32>, tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = sdy.constant dense<1> : tensor<i32>
    %1 = stablehlo.add %arg0, %0 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i32>
    %2 = sdy.constant dense<5.000000e-01> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %4 = stablehlo.multiply %arg1, %3 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %5 = stablehlo.convert %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : (tensor<i32>) -> tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %7 = stablehlo.add %4, %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    return %1, %7 : tensor<i32>, tensor<16x32xf32>
  }
}
