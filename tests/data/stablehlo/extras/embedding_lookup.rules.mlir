module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg1: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) -> (tensor<8x16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {"tp"}]>}) {
    %0 = call @_take(%arg0, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : (tensor<64x32xf32>, tensor<8x16xi32>) -> tensor<8x16x32xf32>
    return %0 : tensor<8x16x32xf32>
  }
  func.func private @_where(%arg0: tensor<8x16xi1> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg1: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg2: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) -> (tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) {
    %0 = stablehlo.select %arg0, %arg1, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [i, j])->([i, j]) {i=8, j=16}>} : tensor<8x16xi1>, tensor<8x16xi32>
    return %0 : tensor<8x16xi32>
  }
  func.func private @_take(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg1: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) -> (tensor<8x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {"tp"}]>}) {
    %0 = sdy.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=8, j=16}>} : (tensor<i32>) -> tensor<8x16xi32>
    %2 = stablehlo.compare LT, %arg1, %1, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=16}>} : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi1>
    %3 = sdy.constant dense<64> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=8, j=16}>} : (tensor<i32>) -> tensor<8x16xi32>
    %5 = stablehlo.add %arg1, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=16}>} : tensor<8x16xi32>
    %6 = call @_where(%2, %5, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>} : (tensor<8x16xi1>, tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j, k]) {i=8, j=16, k=1}>} : (tensor<8x16xi32>) -> tensor<8x16x1xi32>
    %8 = sdy.constant dense<63> : tensor<1xi32>
    %9 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j, k]) {i=8, j=16, k=1}>} : (tensor<i32>) -> tensor<8x16x1xi32>
    %10 = stablehlo.compare GE, %7, %9, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [i, j, k])->([i, j, k]) {i=8, j=16, k=1}>} : (tensor<8x16x1xi32>, tensor<8x16x1xi32>) -> tensor<8x16x1xi1>
    %11 = stablehlo.broadcast_in_dim %8, dims = [2] {sdy.sharding_rule = #sdy.op_sharding_rule<([k])->([i, j, k]) {i=1, j=1, k=1}>} : (tensor<1xi32>) -> tensor<1x1x1xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k, m])->([j, l, m]) {i=1, j=8, k=1, l=16, m=1}>} : (tensor<1x1x1xi32>) -> tensor<8x16x1xi32>
    %13 = stablehlo.compare LE, %7, %12, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [i, j, k])->([i, j, k]) {i=8, j=16, k=1}>} : (tensor<8x16x1xi32>, tensor<8x16x1xi32>) -> tensor<8x16x1xi1>
    %14 = stablehlo.and %10, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [i, j, k])->([i, j, k]) {i=8, j=16, k=1}>} : tensor<8x16x1xi1>
    %15 = sdy.constant dense<true> : tensor<i1>
    %16 = stablehlo.reduce(%14 init: %15) applies stablehlo.and across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [])->([i, j]) {i=8, j=16, k=1} reduction={k}>} : (tensor<8x16x1xi1>, tensor<i1>) -> tensor<8x16xi1>
    %17 = "stablehlo.gather"(%arg0, %7) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 32>}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([l, k], [i, j, m])->([i, j, k]) {i=8, j=16, k=32, l=64, m=1} reduction={l} need_replication={m}>} : (tensor<64x32xf32>, tensor<8x16x1xi32>) -> tensor<8x16x32xf32>
    %18 = stablehlo.broadcast_in_dim %16, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j, k]) {i=8, j=16, k=32}>} : (tensor<8x16xi1>) -> tensor<8x16x32xi1>
    %19 = sdy.constant dense<0x7FC00000> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j, k]) {i=8, j=16, k=32}>} : (tensor<f32>) -> tensor<8x16x32xf32>
    %21 = stablehlo.select %18, %17, %20 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [i, j, k], [i, j, k])->([i, j, k]) {i=8, j=16, k=32}>} : tensor<8x16x32xi1>, tensor<8x16x32xf32>
    return %21 : tensor<8x16x32xf32>
  }
}
