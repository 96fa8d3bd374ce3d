module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}, {}]>}, %arg1: tensor<3x3x4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}, {"tp"}]>}, %arg2: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}) -> (tensor<8x8x8x16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<8x16x16x4xf32>, tensor<3x3x4x16xf32>) -> tensor<8x16x16x16xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [3] : (tensor<16xf32>) -> tensor<1x1x1x16xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x1x16xf32>) -> tensor<8x16x16x16xf32>
    %3 = stablehlo.add %0, %2 : tensor<8x16x16x16xf32>
    %4 = call @relu(%3) : (tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %6 = "stablehlo.reduce_window"(%4, %5) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %9 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %9 : tensor<f32>
    }) : (tensor<8x16x16x16xf32>, tensor<f32>) -> tensor<8x8x8x16xf32>
    %cst_0 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x8x8x16xf32>
    %8 = stablehlo.divide %6, %7 : tensor<8x8x8x16xf32>
    return %8 : tensor<8x8x8x16xf32>
  }
  func.func private @relu(%arg0: tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16x16x16xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<8x16x16x16xf32>
    return %1 : tensor<8x16x16x16xf32>
  }
}
