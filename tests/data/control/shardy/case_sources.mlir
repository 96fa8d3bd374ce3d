module @case_sources {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]>
  func.func public @main(%arg0: tensor<i32>, %arg1: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg2: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg3: tensor<32x16xf32>) -> tensor<16x32xf32> {
    %0 = "stablehlo.case"(%arg0) ({
      %1 = stablehlo.multiply %arg1, %arg1 : tensor<16x32xf32>
      stablehlo.return %1 : tensor<16x32xf32>
    }, {
      %1 = stablehlo.add %arg2, %arg2 : tensor<16x32xf32>
      stablehlo.return %1 : tensor<16x32xf32>
    }, {
      %1 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
      stablehlo.return %1 : tensor<16x32xf32>
    }) : (tensor<i32>) -> tensor<16x32xf32>
    %2 = stablehlo.negate %0 : tensor<16x32xf32>
    return %2 : tensor<16x32xf32>
  }
}
