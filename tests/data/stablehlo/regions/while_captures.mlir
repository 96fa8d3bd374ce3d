module @m {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<i32>) -> tensor<8x16xf32> {
    %0:2 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %arg0) : tensor<i32>, tensor<8x16xf32>
    cond {
      %c = stablehlo.constant dense<0> : tensor<i32>
      %2 = stablehlo.compare GT, %iterArg, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %c = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.subtract %iterArg, %c : tensor<i32>
      %3 = stablehlo.add %iterArg_0, %arg0 : tensor<8x16xf32>
      stablehlo.return %2, %3 : tensor<i32>, tensor<8x16xf32>
    }
    %1:2 = "stablehlo.case"(%arg1) ({
      stablehlo.return %0#1, %arg0 : tensor<8x16xf32>, tensor<8x16xf32>
    }, {
      %2 = stablehlo.negate %0#1 : tensor<8x16xf32>
      stablehlo.return %2, %2 : tensor<8x16xf32>, tensor<8x16xf32>
    }) : (tensor<i32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
    return %1#1 : tensor<8x16xf32>
  }
}
