module @jit_nested attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c, %iterArg_1 = %arg1, %iterArg_2 = %arg0) : tensor<16x32xf32>, tensor<i32>, tensor<i32>, tensor<16x32xf32>
    cond {
      %1 = stablehlo.compare LT, %iterArg_0, %iterArg_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %iterArg_0, %c_3 : tensor<i32>
      %c_4 = stablehlo.constant dense<2> : tensor<i32>
      %2 = func.call @remainder(%iterArg_0, %c_4) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %c_5 = stablehlo.constant dense<0> : tensor<i32>
      %3 = stablehlo.compare EQ, %2, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %4 = stablehlo.convert %3 : (tensor<i1>) -> tensor<i32>
      %5 = "stablehlo.case"(%4) ({
        %7 = stablehlo.sine %iterArg_2 : tensor<16x32xf32>
        %8 = stablehlo.add %7, %iterArg : tensor<16x32xf32>
        stablehlo.return %8 : tensor<16x32xf32>
      }, {
        %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
        %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
        %8 = stablehlo.multiply %iterArg_2, %7 : tensor<16x32xf32>
        stablehlo.return %8 : tensor<16x32xf32>
      }) : (tensor<i32>) -> tensor<16x32xf32>
      %c_6 = stablehlo.constant dense<0> : tensor<i32>
      %c_7 = stablehlo.constant dense<0> : tensor<i32>
      %6:3 = stablehlo.while(%iterArg_8 = %c_7, %iterArg_9 = %c_6, %iterArg_10 = %5) : tensor<i32>, tensor<i32>, tensor<16x32xf32>
      cond {
        %c_11 = stablehlo.constant dense<2> : tensor<i32>
        %7 = stablehlo.compare LT, %iterArg_8, %c_11, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %7 : tensor<i1>
      } do {
        %7:2 = func.call @closed_call(%iterArg_9, %iterArg_10) : (tensor<i32>, tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>)
        %c_11 = stablehlo.constant dense<1> : tensor<i32>
        %8 = stablehlo.add %iterArg_8, %c_11 : tensor<i32>
        stablehlo.return %8, %7#0, %7#1 : tensor<i32>, tensor<i32>, tensor<16x32xf32>
      }
      stablehlo.return %iterArg, %1, %iterArg_1, %6#2 : tensor<16x32xf32>, tensor<i32>, tensor<i32>, tensor<16x32xf32>
    }
    return %0#3 : tensor<16x32xf32>
  }
  func.func private @remainder(%arg0: tensor<i32>, %arg1: tensor<i32>) -> tensor<i32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare EQ, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %1 = call @_where(%0, %c_0, %arg1) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %2 = stablehlo.remainder %arg0, %1 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.compare NE, %2, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare LT, %2, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.compare LT, %1, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.compare NE, %4, %5, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %7 = stablehlo.and %6, %3 : tensor<i1>
    %8 = stablehlo.add %2, %1 : tensor<i32>
    %9 = stablehlo.select %7, %8, %2 : tensor<i1>, tensor<i32>
    return %9 : tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.convert %arg0 : (tensor<i32>) -> tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %3 = stablehlo.add %arg1, %2 : tensor<16x32xf32>
    return %0, %3 : tensor<i32>, tensor<16x32xf32>
  }
}
