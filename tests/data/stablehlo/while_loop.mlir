module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c_0, %iterArg_2 = %c, %iterArg_3 = %arg0) : tensor<i32>, tensor<i32>, tensor<16x32xf32>
    cond {
      %c_4 = stablehlo.constant dense<4> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2:2 = func.call @closed_call(%iterArg_2, %iterArg_3) : (tensor<i32>, tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>)
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_4 : tensor<i32>
      stablehlo.return %3, %2#0, %2#1 : tensor<i32>, tensor<i32>, tensor<16x32xf32>
    }
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %arg1, %iterArg_2 = %c_1, %iterArg_3 = %0#2) : tensor<i32>, tensor<i32>, tensor<16x32xf32>
    cond {
      %2 = stablehlo.compare LT, %iterArg_2, %iterArg, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %3 = stablehlo.reduce(%iterArg_3 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x32xf32>, tensor<f32>) -> tensor<f32>
      %cst_4 = stablehlo.constant dense<1.000000e+06> : tensor<f32>
      %4 = stablehlo.compare LT, %3, %cst_4, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %5 = stablehlo.and %2, %4 : tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg_2, %c_4 : tensor<i32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
      %4 = stablehlo.multiply %iterArg_3, %3 : tensor<16x32xf32>
      stablehlo.return %iterArg, %2, %4 : tensor<i32>, tensor<i32>, tensor<16x32xf32>
    }
    return %1#2 : tensor<16x32xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %2 = stablehlo.multiply %arg1, %1 : tensor<16x32xf32>
    %3 = stablehlo.convert %arg0 : (tensor<i32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %5 = stablehlo.add %2, %4 : tensor<16x32xf32>
    return %0, %5 : tensor<i32>, tensor<16x32xf32>
  }
}
