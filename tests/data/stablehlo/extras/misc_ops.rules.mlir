module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<16x32xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<16x32xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<32xi32> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}, tensor<16x32xf32> {jax.result_info = "result[4]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = call @sort(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %1 = call @cumsum(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %2 = stablehlo.iota dim = 0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp"}]>]>} : tensor<32xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([j])->([i, j]) {i=1, j=32}>} : (tensor<32xf32>) -> tensor<1x32xf32>
    %4 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %6 = stablehlo.broadcast_in_dim %3, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k])->([j, k]) {i=1, j=16, k=32}>} : (tensor<1x32xf32>) -> tensor<16x32xf32>
    %7 = stablehlo.add %6, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %8 = sdy.constant dense<-1.000000e+00> : tensor<f32>
    %9 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %10 = call @clip(%arg0, %8, %9) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>, tensor<f32>, tensor<f32>) -> tensor<16x32xf32>
    %11 = call @argmin(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp"}]>]>} : (tensor<16x32xf32>) -> tensor<32xi32>
    %12 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %13 = stablehlo.broadcast_in_dim %9, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %14 = stablehlo.add %12, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %15 = stablehlo.rsqrt %14 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %16 = chlo.erf %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : tensor<16x32xf32> -> tensor<16x32xf32>
    %17 = stablehlo.multiply %7, %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %18 = stablehlo.compare GT, %arg0, %5, FLOAT {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xi1>
    %19 = call @_where(%18, %15, %16) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xi1>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
    return %0, %1, %17, %11, %19 : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xi32>, tensor<16x32xf32>
  }
  func.func private @sort(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = sdy.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.compare EQ, %arg1, %1, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.select %2, %1, %arg1 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<f32>
      %4 = stablehlo.compare NE, %arg1, %arg1, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = sdy.constant dense<0x7FC00000> : tensor<f32>
      %6 = stablehlo.select %4, %5, %3 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare EQ, %arg2, %1, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.select %7, %1, %arg2 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare NE, %arg2, %arg2, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %10 = stablehlo.select %9, %5, %8 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<f32>
      %11 = stablehlo.compare LT, %6, %10, TOTALORDER {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %11 : tensor<i1>
    }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32} need_replication={j}>} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
  func.func private @cumsum_0(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : (tensor<f32>) -> tensor<f32>
    %2 = "stablehlo.reduce_window"(%arg0, %1) <{base_dilations = array<i64: 1, 1>, padding = dense<[[15, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 16, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %3 = stablehlo.add %arg1, %arg2 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [])->([i, j]) {i=16, j=32} permutation={i}>} : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32>
    return %2 : tensor<16x32xf32>
  }
  func.func private @cumsum(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = call @cumsum_0(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
  func.func private @clip(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}, %arg2: tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = stablehlo.convert %arg1 {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %2 = stablehlo.maximum %1, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %3 = stablehlo.convert %arg2 {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %5 = stablehlo.minimum %4, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    return %5 : tensor<16x32xf32>
  }
  func.func private @argmin(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}) {
    %0 = stablehlo.iota dim = 0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : tensor<16x32xi32>
    %1 = sdy.constant dense<0x7F800000> : tensor<f32>
    %2 = sdy.constant dense<0> : tensor<i32>
    %3:2 = stablehlo.reduce(%arg0 init: %1), (%0 init: %2) across dimensions = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp"}]>, <@mesh, [{"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [], [])->([j], [j]) {i=16, j=32} reduction={i}>} : (tensor<16x32xf32>, tensor<16x32xi32>, tensor<f32>, tensor<i32>) -> (tensor<32xf32>, tensor<32xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %4 = stablehlo.compare LT, %arg1, %arg3, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = stablehlo.compare NE, %arg1, %arg1, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.or %4, %5 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i1>
      %7 = stablehlo.compare EQ, %arg1, %arg3, FLOAT {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.compare LT, %arg2, %arg4, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %9 = stablehlo.and %7, %8 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i1>
      %10 = stablehlo.or %6, %9 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<i1>
      %11 = stablehlo.select %6, %arg1, %arg3 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<f32>
      %12 = stablehlo.select %10, %arg2, %arg4 {sdy.sharding_rule = #sdy.op_sharding_rule<([], [], [])->([])>} : tensor<i1>, tensor<i32>
      stablehlo.return %11, %12 : tensor<f32>, tensor<i32>
    }
    return %3#1 : tensor<32xi32>
  }
  func.func private @_where(%arg0: tensor<16x32xi1> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg2: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = stablehlo.select %arg0, %arg1, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xi1>, tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
}
