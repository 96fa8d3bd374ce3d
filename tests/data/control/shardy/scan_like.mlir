module @scan_like {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]>
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg1: tensor<3x32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"tp"}]>}) -> (tensor<16x32xf32>, tensor<3x16xf32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x16xf32>
    %1:3 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0, %iterArg_1 = %0) : tensor<i32>, tensor<16x32xf32>, tensor<3x16xf32>
    cond {
      %c_2 = stablehlo.constant dense<3> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = stablehlo.iota dim = 0 : tensor<3xi32>
      %3 = stablehlo.broadcast_in_dim %iterArg, dims = [] : (tensor<i32>) -> tensor<3xi32>
      %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
      %5 = stablehlo.convert %4 : (tensor<3xi1>) -> tensor<3xf32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<3xf32>) -> tensor<3x32x32xf32>
      %7 = stablehlo.multiply %arg1, %6 : tensor<3x32x32xf32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %8 = stablehlo.reduce(%7 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<3x32x32xf32>, tensor<f32>) -> tensor<32x32xf32>
      %9 = stablehlo.dot_general %iterArg_0, %8, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
      %10 = stablehlo.tanh %9 : tensor<16x32xf32>
      %11 = stablehlo.reduce(%10 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<16x32xf32>, tensor<f32>) -> tensor<16xf32>
      %12 = stablehlo.broadcast_in_dim %11, dims = [1] : (tensor<16xf32>) -> tensor<3x16xf32>
      %13 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<3xf32>) -> tensor<3x16xf32>
      %14 = stablehlo.multiply %12, %13 : tensor<3x16xf32>
      %15 = stablehlo.add %iterArg_1, %14 : tensor<3x16xf32>
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %16 = stablehlo.add %iterArg, %c_3 : tensor<i32>
      stablehlo.return %16, %10, %15 : tensor<i32>, tensor<16x32xf32>, tensor<3x16xf32>
    }
    return %1#1, %1#2 : tensor<16x32xf32>, tensor<3x16xf32>
  }
}
