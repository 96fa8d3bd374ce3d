module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg1: tensor<32x64xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) -> (tensor<16x64xbf16> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<16x32xbf16> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=16, j=64, k=32} reduction={k}>} : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xf32>
    %1 = stablehlo.convert %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=64}>} : (tensor<16x64xf32>) -> tensor<16x64xbf16>
    %2 = sdy.constant dense<0xFF80> : tensor<bf16>
    %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.maximum across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([i]) {i=16, j=64} reduction={j}>} : (tensor<16x64xbf16>, tensor<bf16>) -> tensor<16xbf16>
    %4 = stablehlo.broadcast_in_dim %2, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i]) {i=16}>} : (tensor<bf16>) -> tensor<16xbf16>
    %5 = stablehlo.maximum %4, %3 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i], [i])->([i]) {i=16}>} : tensor<16xbf16>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i])->([i, j]) {i=16, j=1}>} : (tensor<16xbf16>) -> tensor<16x1xbf16>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, k]) {i=16, j=1, k=64}>} : (tensor<16x1xbf16>) -> tensor<16x64xbf16>
    %8 = stablehlo.subtract %1, %7 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=64}>} : tensor<16x64xbf16>
    %9 = stablehlo.exponential %8 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=64}>} : tensor<16x64xbf16>
    %10 = stablehlo.convert %9 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=64}>} : (tensor<16x64xbf16>) -> tensor<16x64xf32>
    %11 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.reduce(%10 init: %11) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([i]) {i=16, j=64} reduction={j}>} : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i])->([i, j]) {i=16, j=1}>} : (tensor<16xf32>) -> tensor<16x1xf32>
    %14 = stablehlo.convert %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=1}>} : (tensor<16x1xf32>) -> tensor<16x1xbf16>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, k]) {i=16, j=1, k=64}>} : (tensor<16x1xbf16>) -> tensor<16x64xbf16>
    %16 = stablehlo.divide %9, %15 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=64}>} : tensor<16x64xbf16>
    %17 = stablehlo.convert %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32}>} : (tensor<16x32xbf16>) -> tensor<16x32xf32>
    %18 = sdy.constant dense<1.500000e+00> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %20 = stablehlo.multiply %17, %19 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %21 = stablehlo.convert %20 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32}>} : (tensor<16x32xf32>) -> tensor<16x32xbf16>
    return %16, %21 : tensor<16x64xbf16>, tensor<16x32xbf16>
  }
}
