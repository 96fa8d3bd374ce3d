module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg1: tensor<32x64xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) -> (tensor<16x64xbf16> {jax.result_info = "result[0]"}, tensor<16x32xbf16> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xf32>
    %1 = stablehlo.convert %0 : (tensor<16x64xf32>) -> tensor<16x64xbf16>
    %cst = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<16x64xbf16>, tensor<bf16>) -> tensor<16xbf16>
    %cst_0 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<16xbf16>
    %4 = stablehlo.maximum %3, %2 : tensor<16xbf16>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<16xbf16>) -> tensor<16x1xbf16>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<16x1xbf16>) -> tensor<16x64xbf16>
    %7 = stablehlo.subtract %1, %6 : tensor<16x64xbf16>
    %8 = stablehlo.exponential %7 : tensor<16x64xbf16>
    %9 = stablehlo.convert %8 : (tensor<16x64xbf16>) -> tensor<16x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%9 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0] : (tensor<16xf32>) -> tensor<16x1xf32>
    %12 = stablehlo.convert %11 : (tensor<16x1xf32>) -> tensor<16x1xbf16>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1] : (tensor<16x1xbf16>) -> tensor<16x64xbf16>
    %14 = stablehlo.divide %8, %13 : tensor<16x64xbf16>
    %15 = stablehlo.convert %arg0 : (tensor<16x32xbf16>) -> tensor<16x32xf32>
    %cst_2 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %17 = stablehlo.multiply %15, %16 : tensor<16x32xf32>
    %18 = stablehlo.convert %17 : (tensor<16x32xf32>) -> tensor<16x32xbf16>
    return %14, %18 : tensor<16x64xbf16>, tensor<16x32xbf16>
  }
}
