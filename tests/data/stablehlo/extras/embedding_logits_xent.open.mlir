module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}, %arg1: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg2: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) -> (tensor<f32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, []>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0 = call @_take(%arg0, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<64x32xf32>, tensor<8x16xi32>) -> tensor<8x16x32xf32>
    %1 = stablehlo.dot_general %0, %arg0, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x32xf32>, tensor<64x32xf32>) -> tensor<8x16x64xf32>
    %2 = call @log_softmax(%1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
    %3 = stablehlo.broadcast_in_dim %arg2, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16xi32>) -> tensor<8x16x1xi32>
    %4 = call @take_along_axis(%2, %3) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16x64xf32>, tensor<8x16x1xi32>) -> tensor<8x16x1xf32>
    %5 = stablehlo.reshape %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16x1xf32>) -> tensor<8x16xf32>
    %6 = stablehlo.negate %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<8x16xf32>
    %7 = call @_one_hot(%arg2) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16xi32>) -> tensor<8x16x64xf32>
    %8 = stablehlo.multiply %7, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %9 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%8 init: %9) applies stablehlo.add across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16x64xf32>, tensor<f32>) -> tensor<8x16xf32>
    %11 = stablehlo.negate %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<8x16xf32>
    %12 = stablehlo.reduce(%6 init: %9) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<f32>
    %13 = sdy.constant dense<1.280000e+02> : tensor<f32>
    %14 = stablehlo.divide %12, %13 : tensor<f32>
    %15 = stablehlo.reduce(%11 init: %9) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<f32>
    %16 = stablehlo.divide %15, %13 : tensor<f32>
    return %14, %16 : tensor<f32>, tensor<f32>
  }
  func.func private @_where(%arg0: tensor<8x16xi1> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}, %arg1: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}, %arg2: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}) -> (tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}) {
    %0 = stablehlo.select %arg0, %arg1, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<8x16xi1>, tensor<8x16xi32>
    return %0 : tensor<8x16xi32>
  }
  func.func private @_take(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp", ?}, {?}]>}, %arg1: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}) -> (tensor<8x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {?}]>}) {
    %0 = sdy.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<i32>) -> tensor<8x16xi32>
    %2 = stablehlo.compare LT, %arg1, %1, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi1>
    %3 = sdy.constant dense<64> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<i32>) -> tensor<8x16xi32>
    %5 = stablehlo.add %arg1, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<8x16xi32>
    %6 = call @_where(%2, %5, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16xi1>, tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x16xi32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16xi32>) -> tensor<8x16x1xi32>
    %8 = sdy.constant dense<63> : tensor<1xi32>
    %9 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<i32>) -> tensor<8x16x1xi32>
    %10 = stablehlo.compare GE, %7, %9, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16x1xi32>, tensor<8x16x1xi32>) -> tensor<8x16x1xi1>
    %11 = stablehlo.broadcast_in_dim %8, dims = [2] : (tensor<1xi32>) -> tensor<1x1x1xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<1x1x1xi32>) -> tensor<8x16x1xi32>
    %13 = stablehlo.compare LE, %7, %12, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16x1xi32>, tensor<8x16x1xi32>) -> tensor<8x16x1xi1>
    %14 = stablehlo.and %10, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : tensor<8x16x1xi1>
    %15 = sdy.constant dense<true> : tensor<i1>
    %16 = stablehlo.reduce(%14 init: %15) applies stablehlo.and across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16x1xi1>, tensor<i1>) -> tensor<8x16xi1>
    %17 = "stablehlo.gather"(%arg0, %7) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 32>}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<64x32xf32>, tensor<8x16x1xi32>) -> tensor<8x16x32xf32>
    %18 = stablehlo.broadcast_in_dim %16, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16xi1>) -> tensor<8x16x32xi1>
    %19 = sdy.constant dense<0x7FC00000> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<f32>) -> tensor<8x16x32xf32>
    %21 = stablehlo.select %18, %17, %20 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : tensor<8x16x32xi1>, tensor<8x16x32xf32>
    return %21 : tensor<8x16x32xf32>
  }
  func.func private @log_softmax(%arg0: tensor<8x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>}) -> (tensor<8x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>}) {
    %0 = sdy.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.maximum across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16x64xf32>, tensor<f32>) -> tensor<8x16xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<f32>) -> tensor<8x16xf32>
    %3 = stablehlo.maximum %2, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<8x16xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16xf32>) -> tensor<8x16x1xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x1xf32>) -> tensor<8x16x64xf32>
    %6 = stablehlo.subtract %arg0, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %7 = stablehlo.exponential %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %8 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%7 init: %8) applies stablehlo.add across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<8x16x64xf32>, tensor<f32>) -> tensor<8x16xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16xf32>) -> tensor<8x16x1xf32>
    %11 = stablehlo.log %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : tensor<8x16x1xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x1xf32>) -> tensor<8x16x64xf32>
    %13 = stablehlo.subtract %6, %12 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    return %13 : tensor<8x16x64xf32>
  }
  func.func private @take_along_axis(%arg0: tensor<8x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>}, %arg1: tensor<8x16x1xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {?}]>}) -> (tensor<8x16x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {?}]>}) {
    %0 = sdy.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<i32>) -> tensor<8x16x1xi32>
    %2 = stablehlo.compare LT, %arg1, %1, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16x1xi32>, tensor<8x16x1xi32>) -> tensor<8x16x1xi1>
    %3 = sdy.constant dense<64> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<i32>) -> tensor<8x16x1xi32>
    %5 = stablehlo.add %arg1, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : tensor<8x16x1xi32>
    %6 = stablehlo.select %2, %5, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : tensor<8x16x1xi1>, tensor<8x16x1xi32>
    %7 = stablehlo.reshape %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}, {?}]>]>} : (tensor<8x16x1xi32>) -> tensor<8x16x1x1xi32>
    %8 = sdy.constant dense<63> : tensor<1xi32>
    %9 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}, {?}]>]>} : (tensor<i32>) -> tensor<8x16x1x1xi32>
    %10 = stablehlo.compare GE, %7, %9, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}, {?}]>]>} : (tensor<8x16x1x1xi32>, tensor<8x16x1x1xi32>) -> tensor<8x16x1x1xi1>
    %11 = stablehlo.broadcast_in_dim %8, dims = [3] : (tensor<1xi32>) -> tensor<1x1x1x1xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2, 3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}, {?}]>]>} : (tensor<1x1x1x1xi32>) -> tensor<8x16x1x1xi32>
    %13 = stablehlo.compare LE, %7, %12, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}, {?}]>]>} : (tensor<8x16x1x1xi32>, tensor<8x16x1x1xi32>) -> tensor<8x16x1x1xi1>
    %14 = stablehlo.and %10, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}, {?}]>]>} : tensor<8x16x1x1xi1>
    %15 = sdy.constant dense<true> : tensor<i1>
    %16 = stablehlo.reduce(%14 init: %15) applies stablehlo.and across dimensions = [3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16x1x1xi1>, tensor<i1>) -> tensor<8x16x1xi1>
    %17 = "stablehlo.gather"(%arg0, %7) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1], start_index_map = [2], index_vector_dim = 3>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16x64xf32>, tensor<8x16x1x1xi32>) -> tensor<8x16x1xf32>
    %18 = sdy.constant dense<0x7FC00000> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<f32>) -> tensor<8x16x1xf32>
    %20 = stablehlo.select %16, %17, %19 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : tensor<8x16x1xi1>, tensor<8x16x1xf32>
    return %20 : tensor<8x16x1xf32>
  }
  func.func private @_one_hot(%arg0: tensor<8x16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}) -> (tensor<8x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>}) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<8x16xi32>) -> tensor<8x16x1xi32>
    %1 = stablehlo.iota dim = 2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<1x1x64xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x1xi32>) -> tensor<8x16x64xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<1x1x64xi32>) -> tensor<8x16x64xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x64xi32>, tensor<8x16x64xi32>) -> tensor<8x16x64xi1>
    %5 = stablehlo.convert %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x64xi1>) -> tensor<8x16x64xf32>
    return %5 : tensor<8x16x64xf32>
  }
}
