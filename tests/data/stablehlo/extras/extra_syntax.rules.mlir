module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func private @my.double(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %2 = stablehlo.multiply %arg0, %1 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    return %2 : tensor<16x32xf32>
  }
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<16x32xf32> {jax.result_info = "result[0]"}, tensor<16x3xf32> {jax.result_info = "result[1]"}, tensor<16x3xi32> {jax.result_info = "result[2]"}, tensor<4x4xf32> {jax.result_info = "result[3]"}, tensor<4xi32> {jax.result_info = "result[4]"}, tensor<16x32xf32> {jax.result_info = "result[5]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0 = sdy.constant dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<4x4xf32>
    %1 = sdy.constant dense<[true, false, true, true]> : tensor<4xi1>
    %2 = stablehlo.sine %arg0 {mhlo.frontend_attributes = {my_attr = "hello", n = "3"}, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    %3 = stablehlo.composite "my.double" %2 {decomposition = @my.double} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<16x32xf32> -> (tensor<16x3xf32>, tensor<16x3xi32>)
    %4 = stablehlo.iota dim = 0 : tensor<4xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i])->([i, j]) {i=4, j=1}>} : (tensor<4xf32>) -> tensor<4x1xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, k]) {i=4, j=1, k=4}>} : (tensor<4x1xf32>) -> tensor<4x4xf32>
    %7 = stablehlo.add %0, %6 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xf32>
    %8 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %9 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %10 = sdy.constant dense<0> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=4}>} : (tensor<i32>) -> tensor<4x4xi32>
    %12 = stablehlo.add %8, %11 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xi32>
    %13 = stablehlo.compare EQ, %12, %9, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %14 = stablehlo.convert %13 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=4}>} : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %15 = sdy.constant dense<4.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=4}>} : (tensor<f32>) -> tensor<4x4xf32>
    %17 = stablehlo.multiply %14, %16 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xf32>
    %18 = stablehlo.transpose %arg1, dims = [1, 0] {sdy.sharding_rule = #sdy.op_sharding_rule<([j, i])->([i, j]) {i=4, j=4}>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %19 = stablehlo.dot_general %arg1, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=4, j=4, k=4} reduction={k}>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %20 = stablehlo.add %17, %19 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xf32>
    %21 = call @cholesky(%20) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %22:2 = stablehlo.optimization_barrier %3, %values : tensor<16x32xf32>, tensor<16x3xf32>
    %23 = stablehlo.dot_general %7, %21, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=4, j=4, k=4} reduction={k}>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %24 = sdy.constant dense<1> : tensor<i32>
    %25 = sdy.constant dense<2> : tensor<i32>
    %26 = call @_where(%1, %24, %25) : (tensor<4xi1>, tensor<i32>, tensor<i32>) -> tensor<4xi32>
    %27 = sdy.constant dense<-1.000000e+00> : tensor<f32>
    %28 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %27, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %30 = stablehlo.broadcast_in_dim %28, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=32}>} : (tensor<f32>) -> tensor<16x32xf32>
    %31 = stablehlo.clamp %29, %arg0, %30 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [i, j])->([i, j]) {i=16, j=32}>} : tensor<16x32xf32>
    return %22#0, %22#1, %indices, %23, %26, %31 : tensor<16x32xf32>, tensor<16x3xf32>, tensor<16x3xi32>, tensor<4x4xf32>, tensor<4xi32>, tensor<16x32xf32>
  }
  func.func private @cholesky(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] {sdy.sharding_rule = #sdy.op_sharding_rule<([j, i])->([i, j]) {i=4, j=4}>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xf32>
    %2 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=4}>} : (tensor<f32>) -> tensor<4x4xf32>
    %4 = stablehlo.divide %1, %3 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xf32>
    %5:2 = stablehlo.custom_call @lapack_spotrf_ffi(%4) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>)
    %6 = sdy.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : (tensor<i32>) -> tensor<i32>
    %8 = stablehlo.compare EQ, %5#1, %7, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %9 = stablehlo.broadcast_in_dim %8, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=1, j=1}>} : (tensor<i1>) -> tensor<1x1xi1>
    %10 = sdy.constant dense<0x7FC00000> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=4}>} : (tensor<f32>) -> tensor<4x4xf32>
    %12 = stablehlo.broadcast_in_dim %9, dims = [0, 1] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k])->([j, l]) {i=1, j=4, k=1, l=4}>} : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %13 = stablehlo.select %12, %5#0, %11 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xi1>, tensor<4x4xf32>
    %14 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %15 = stablehlo.broadcast_in_dim %6, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=4}>} : (tensor<i32>) -> tensor<4x4xi32>
    %16 = stablehlo.add %14, %15 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xi32>
    %17 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %18 = stablehlo.compare GE, %16, %17, SIGNED {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=4, j=4}>} : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %19 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=4, j=4}>} : (tensor<f32>) -> tensor<4x4xf32>
    %21 = stablehlo.select %18, %13, %20 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [i, j])->([i, j]) {i=4, j=4}>} : tensor<4x4xi1>, tensor<4x4xf32>
    return %21 : tensor<4x4xf32>
  }
  func.func private @_where(%arg0: tensor<4xi1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<4xi32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i]) {i=4}>} : (tensor<i32>) -> tensor<4xi32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i]) {i=4}>} : (tensor<i32>) -> tensor<4xi32>
    %2 = stablehlo.select %arg0, %0, %1 {sdy.sharding_rule = #sdy.op_sharding_rule<([i], [i], [i])->([i]) {i=4}>} : tensor<4xi1>, tensor<4xi32>
    return %2 : tensor<4xi32>
  }
}
