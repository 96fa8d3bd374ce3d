module @jit__attention attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}]>}, %arg1: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg2: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg3: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg4: tensor<4x8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}, {}]>}) -> (tensor<4x16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}, {?}]>]>} : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %1 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}, {?}]>]>} : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %2 = stablehlo.dot_general %arg0, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}, {?}]>]>} : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %3 = stablehlo.dot_general %0, %1, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<4x16x4x8xf32>, tensor<4x16x4x8xf32>) -> tensor<4x4x16x16xf32>
    %4 = sdy.constant dense<8.000000e+00> : tensor<f32>
    %5 = stablehlo.sqrt %4 : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<f32>) -> tensor<4x4x16x16xf32>
    %7 = stablehlo.divide %3, %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : tensor<4x4x16x16xf32>
    %8 = sdy.constant dense<0xFF800000> : tensor<f32>
    %9 = stablehlo.reduce(%7 init: %8) applies stablehlo.maximum across dimensions = [3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}]>]>} : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %10 = stablehlo.broadcast_in_dim %8, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}]>]>} : (tensor<f32>) -> tensor<4x4x16xf32>
    %11 = stablehlo.maximum %10, %9 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}]>]>} : tensor<4x4x16xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1, 2, 3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %14 = stablehlo.subtract %7, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : tensor<4x4x16x16xf32>
    %15 = stablehlo.exponential %14 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : tensor<4x4x16x16xf32>
    %16 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %17 = stablehlo.reduce(%15 init: %16) applies stablehlo.add across dimensions = [3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}]>]>} : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2, 3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %20 = stablehlo.divide %15, %19 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : tensor<4x4x16x16xf32>
    %21 = stablehlo.dot_general %2, %20, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}, {?}, {?}]>]>} : (tensor<4x16x4x8xf32>, tensor<4x4x16x16xf32>) -> tensor<4x4x8x16xf32>
    %22 = stablehlo.transpose %21, dims = [0, 3, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {"tp", ?}, {?}]>]>} : (tensor<4x4x8x16xf32>) -> tensor<4x16x4x8xf32>
    %23 = stablehlo.dot_general %22, %arg4, contracting_dims = [2, 3] x [0, 1], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}, {?}]>]>} : (tensor<4x16x4x8xf32>, tensor<4x8x32xf32>) -> tensor<4x16x32xf32>
    return %23 : tensor<4x16x32xf32>
  }
}
