module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}, %arg1: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<32xf32> {jax.result_info = "result[0]"}, tensor<8x32xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}, tensor<f32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<32xf32>) -> tensor<1x32xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1x32xf32>) -> tensor<8x32xf32>
    %2 = stablehlo.add %1, %arg1 : tensor<8x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x32xf32>, tensor<f32>) -> tensor<32xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.reduce(%2 init: %cst_0) applies stablehlo.maximum across dimensions = [1] : (tensor<8x32xf32>, tensor<f32>) -> tensor<8xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %cst_1 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %6 = stablehlo.reduce(%arg1 init: %cst_1) applies stablehlo.minimum across dimensions = [0, 1] : (tensor<8x32xf32>, tensor<f32>) -> tensor<f32>
    %7 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x32xf32>
    %8 = stablehlo.subtract %2, %7 : tensor<8x32xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%2 init: %cst_2) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x32xf32>, tensor<f32>) -> tensor<f32>
    %cst_3 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %10 = stablehlo.divide %9, %cst_3 : tensor<f32>
    return %3, %8, %6, %10 : tensor<32xf32>, tensor<8x32xf32>, tensor<f32>, tensor<f32>
  }
}
