module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xf32> {jax.result_info = "result[0]"}, tensor<16x32xf32> {jax.result_info = "result[1]"}, tensor<16x32xf32> {jax.result_info = "result[2]"}, tensor<32xi32> {jax.result_info = "result[3]"}, tensor<16x32xf32> {jax.result_info = "result[4]"}) {
    %0 = call @sort(%arg0) : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %1 = call @cumsum(%arg0) : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %2 = stablehlo.iota dim = 0 : tensor<32xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<32xf32>) -> tensor<1x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1x32xf32>) -> tensor<16x32xf32>
    %6 = stablehlo.add %5, %4 : tensor<16x32xf32>
    %cst_0 = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = call @clip(%arg0, %cst_0, %cst_1) : (tensor<16x32xf32>, tensor<f32>, tensor<f32>) -> tensor<16x32xf32>
    %8 = call @argmin(%arg0) : (tensor<16x32xf32>) -> tensor<32xi32>
    %9 = stablehlo.abs %arg0 : tensor<16x32xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %11 = stablehlo.add %9, %10 : tensor<16x32xf32>
    %12 = stablehlo.rsqrt %11 : tensor<16x32xf32>
    %13 = chlo.erf %arg0 : tensor<16x32xf32> -> tensor<16x32xf32>
    %14 = stablehlo.multiply %6, %7 : tensor<16x32xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %16 = stablehlo.compare GT, %arg0, %15, FLOAT : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xi1>
    %17 = call @_where(%16, %12, %13) : (tensor<16x32xi1>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
    return %0, %1, %14, %8, %17 : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xi32>, tensor<16x32xf32>
  }
  func.func private @sort(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.compare EQ, %arg1, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.select %1, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %4 = stablehlo.select %3, %cst_1, %2 : tensor<i1>, tensor<f32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.compare EQ, %arg2, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %6 = stablehlo.select %5, %cst_3, %arg2 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %8 = stablehlo.select %7, %cst_4, %6 : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare LT, %4, %8, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
  func.func private @cumsum(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = call @cumsum_0(%arg0) : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
  func.func private @cumsum_0(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1>, padding = dense<[[15, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 16, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x32xf32>
    return %1 : tensor<16x32xf32>
  }
  func.func private @clip(%arg0: tensor<16x32xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<16x32xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<16x32xf32>
    %3 = stablehlo.convert %arg2 : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<16x32xf32>
    return %5 : tensor<16x32xf32>
  }
  func.func private @argmin(%arg0: tensor<16x32xf32>) -> tensor<32xi32> {
    %0 = stablehlo.iota dim = 0 : tensor<16x32xi32>
    %cst = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [0] : (tensor<16x32xf32>, tensor<16x32xi32>, tensor<f32>, tensor<i32>) -> (tensor<32xf32>, tensor<32xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare LT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<32xi32>
  }
  func.func private @_where(%arg0: tensor<16x32xi1>, %arg1: tensor<16x32xf32>, %arg2: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<16x32xi1>, tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
}
