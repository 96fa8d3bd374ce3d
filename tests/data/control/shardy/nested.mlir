module @nested {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]>
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {?}]>}, %arg1: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<16x32xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<16x32xf32>
    cond {
      %c_1 = stablehlo.constant dense<4> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_1 = stablehlo.constant dense<2> : tensor<i32>
      %1 = stablehlo.remainder %iterArg, %c_1 : tensor<i32>
      %2 = "stablehlo.case"(%1) ({
        %4 = stablehlo.dot_general %iterArg_0, %arg1, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
        stablehlo.return %4 : tensor<16x32xf32>
      }, {
        %4 = stablehlo.multiply %iterArg_0, %iterArg_0 : tensor<16x32xf32>
        stablehlo.return %4 : tensor<16x32xf32>
      }) : (tensor<i32>) -> tensor<16x32xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      stablehlo.return %3, %2 : tensor<i32>, tensor<16x32xf32>
    }
    %5 = stablehlo.sqrt %0#1 : tensor<16x32xf32>
    return %5 : tensor<16x32xf32>
  }
}
