module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg2: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<10x28xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<16x66xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, tensor<16x32xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = sdy.reshard %arg0 <@mesh, [{"dp", "tp"}, {}]> : tensor<16x32xf32>
    %1 = sdy.reshard %arg1 <@mesh, [{"dp", "tp"}, {}]> : tensor<16x16xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", "tp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=48} need_replication={j}>} : (tensor<16x32xf32>, tensor<16x16xf32>) -> tensor<16x48xf32>
    %3 = sdy.reshard %2 <@mesh, [{"dp"}, {"tp"}]> : tensor<16x48xf32>
    %4 = stablehlo.slice %3 [2:10, 0:48:2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=48} permutation={i, j}>} : (tensor<16x48xf32>) -> tensor<8x24xf32>
    %5 = sdy.constant dense<0> : tensor<i32>
    %6 = call @_pad(%4, %5) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<8x24xf32>, tensor<i32>) -> tensor<10x28xf32>
    %7 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.pad %arg0, %7, low = [0, 1], high = [0, 2], interior = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([i, j]) {i=16, j=32} permutation={j}>} : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x66xf32>
    %9 = stablehlo.compare LT, %arg2, %5, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = sdy.constant dense<16> : tensor<i32>
    %11 = stablehlo.add %arg2, %10 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i32>
    %12 = stablehlo.select %9, %11, %arg2 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<i32>
    %13 = stablehlo.dynamic_slice %arg0, %12, %5, sizes = [4, 32] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [], [])->([i, j]) {i=16, j=32} need_replication={i} blocked_propagation={i}>} : (tensor<16x32xf32>, tensor<i32>, tensor<i32>) -> tensor<4x32xf32>
    %14 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=32}>} : (tensor<f32>) -> tensor<4x32xf32>
    %16 = stablehlo.multiply %13, %15 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=32}>} : tensor<4x32xf32>
    %17 = stablehlo.compare LT, %arg2, %5, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %18 = stablehlo.add %arg2, %10 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i32>
    %19 = stablehlo.select %17, %18, %arg2 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<i32>
    %20 = stablehlo.dynamic_update_slice %arg0, %16, %19, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [j, k], [], [])->([i, k]) {i=16, j=4, k=32} need_replication={j}>} : (tensor<16x32xf32>, tensor<4x32xf32>, tensor<i32>, tensor<i32>) -> tensor<16x32xf32>
    %21 = call @_flip(%20) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %6, %8, %21 : tensor<10x28xf32>, tensor<16x66xf32>, tensor<16x32xf32>
  }
  func.func private @_pad(%arg0: tensor<8x24xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<10x28xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = stablehlo.convert %arg1 {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [1, 4], interior = [0, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([i, j]) {i=8, j=24} permutation={i, j}>} : (tensor<8x24xf32>, tensor<f32>) -> tensor<10x28xf32>
    return %1 : tensor<10x28xf32>
  }
  func.func private @_flip(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32} permutation={i}>} : tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
}
