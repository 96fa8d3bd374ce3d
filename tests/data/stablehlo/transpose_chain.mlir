module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}, {}]>}) -> (tensor<8x4x16xf32> {jax.result_info = "result[0]"}, tensor<32x16xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<8x16x4xf32>) -> tensor<4x8x16xf32>
    %1 = stablehlo.transpose %0, dims = [2, 1, 0] : (tensor<4x8x16xf32>) -> tensor<16x8x4xf32>
    %2 = stablehlo.transpose %1, dims = [1, 2, 0] : (tensor<16x8x4xf32>) -> tensor<8x4x16xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4x16xf32>
    %4 = stablehlo.add %2, %3 : tensor<8x4x16xf32>
    %5 = stablehlo.reshape %1 : (tensor<16x8x4xf32>) -> tensor<16x32xf32>
    %6 = stablehlo.transpose %5, dims = [1, 0] : (tensor<16x32xf32>) -> tensor<32x16xf32>
    return %4, %6 : tensor<8x4x16xf32>, tensor<32x16xf32>
  }
}
