module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg2: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<10x28xf32> {jax.result_info = "result[0]"}, tensor<16x66xf32> {jax.result_info = "result[1]"}, tensor<16x32xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 1 : (tensor<16x32xf32>, tensor<16x16xf32>) -> tensor<16x48xf32>
    %1 = stablehlo.slice %0 [2:10, 0:48:2] : (tensor<16x48xf32>) -> tensor<8x24xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = call @_pad(%1, %c) : (tensor<8x24xf32>, tensor<i32>) -> tensor<10x28xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.pad %arg0, %cst, low = [0, 1], high = [0, 2], interior = [0, 1] : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x66xf32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare LT, %arg2, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_1 = stablehlo.constant dense<16> : tensor<i32>
    %5 = stablehlo.add %arg2, %c_1 : tensor<i32>
    %6 = stablehlo.select %4, %5, %arg2 : tensor<i1>, tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.dynamic_slice %arg0, %6, %c_2, sizes = [4, 32] : (tensor<16x32xf32>, tensor<i32>, tensor<i32>) -> tensor<4x32xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x32xf32>
    %9 = stablehlo.multiply %7, %8 : tensor<4x32xf32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %10 = stablehlo.compare LT, %arg2, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<16> : tensor<i32>
    %11 = stablehlo.add %arg2, %c_5 : tensor<i32>
    %12 = stablehlo.select %10, %11, %arg2 : tensor<i1>, tensor<i32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %13 = stablehlo.dynamic_update_slice %arg0, %9, %12, %c_6 : (tensor<16x32xf32>, tensor<4x32xf32>, tensor<i32>, tensor<i32>) -> tensor<16x32xf32>
    %14 = call @_flip(%13) : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %2, %3, %14 : tensor<10x28xf32>, tensor<16x66xf32>, tensor<16x32xf32>
  }
  func.func private @_pad(%arg0: tensor<8x24xf32>, %arg1: tensor<i32>) -> tensor<10x28xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [1, 4], interior = [0, 0] : (tensor<8x24xf32>, tensor<f32>) -> tensor<10x28xf32>
    return %1 : tensor<10x28xf32>
  }
  func.func private @_flip(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
}
