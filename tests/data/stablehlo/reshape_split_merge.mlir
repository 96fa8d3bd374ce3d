module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}, {}]>}, %arg1: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", "tp"}, {}]>}) -> (tensor<2x4x8x8xf32> {jax.result_info = "result[0]"}, tensor<32x16xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.reshape %arg0 : (tensor<8x16x4xf32>) -> tensor<8x64xf32>
    %1 = stablehlo.reshape %0 : (tensor<8x64xf32>) -> tensor<2x4x8x8xf32>
    %2 = stablehlo.reshape %arg1 : (tensor<32x16xf32>) -> tensor<4x8x16xf32>
    %3 = stablehlo.reshape %2 : (tensor<4x8x16xf32>) -> tensor<32x16xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4x8x8xf32>
    %5 = stablehlo.multiply %1, %4 : tensor<2x4x8x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<32x16xf32>
    %7 = stablehlo.add %3, %6 : tensor<32x16xf32>
    return %5, %7 : tensor<2x4x8x8xf32>, tensor<32x16xf32>
  }
}
