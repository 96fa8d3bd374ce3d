module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x16xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x16xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.compare GT, %0, %cst_0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %2 = stablehlo.convert %1 : (tensor<i1>) -> tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %cst_2 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
      %7 = stablehlo.multiply %arg0, %6 : tensor<16x16xf32>
      stablehlo.return %7 : tensor<16x16xf32>
    }, {
      %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
      %7 = stablehlo.add %arg0, %6 : tensor<16x16xf32>
      stablehlo.return %7 : tensor<16x16xf32>
    }) : (tensor<i32>) -> tensor<16x16xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %4 = stablehlo.clamp %c, %arg1, %c_1 : tensor<i32>
    %5 = "stablehlo.case"(%4) ({
      %6 = stablehlo.sine %3 : tensor<16x16xf32>
      stablehlo.return %6 : tensor<16x16xf32>
    }, {
      %6 = stablehlo.cosine %3 : tensor<16x16xf32>
      stablehlo.return %6 : tensor<16x16xf32>
    }, {
      %6 = stablehlo.transpose %3, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
      %7 = stablehlo.dot_general %3, %6, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      %8 = stablehlo.dot_general %7, %3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      stablehlo.return %8 : tensor<16x16xf32>
    }) : (tensor<i32>) -> tensor<16x16xf32>
    return %5 : tensor<16x16xf32>
  }
}
