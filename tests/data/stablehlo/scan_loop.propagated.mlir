module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg1: tensor<3x32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"tp"}]>}) -> (tensor<16x32xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<3xf32> {jax.result_info = "result[1]"}) {
    %0 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %2 = sdy.constant dense<0> : tensor<i32>
    %3:4 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %2, %iterArg_1 = %arg0, %iterArg_2 = %1) : tensor<3x32x32xf32>, tensor<i32>, tensor<16x32xf32>, tensor<3xf32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}, {"tp"}]>, <@mesh, []>, <@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{}]>]>}
    cond {
      %4 = sdy.constant dense<3> : tensor<i32>
      %5 = stablehlo.compare LT, %iterArg_0, %4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %4 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"tp"}]>]>} : (tensor<3x32x32xf32>, tensor<i32>) -> tensor<32x32xf32>
      %5:2 = func.call @closed_call(%iterArg_1, %4) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>, <@mesh, []>]>} : (tensor<16x32xf32>, tensor<32x32xf32>) -> (tensor<16x32xf32>, tensor<f32>)
      %6 = func.call @dynamic_update_index_in_dim(%iterArg_2, %5#1, %iterArg_0) : (tensor<3xf32>, tensor<f32>, tensor<i32>) -> tensor<3xf32>
      %7 = sdy.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg_0, %7 : tensor<i32>
      stablehlo.return %iterArg, %8, %5#0, %6 : tensor<3x32x32xf32>, tensor<i32>, tensor<16x32xf32>, tensor<3xf32>
    }
    return %3#2, %3#3 : tensor<16x32xf32>, tensor<3xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<3x32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) {
    %0 = sdy.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_slice %arg0, %arg1, %0, %0, sizes = [1, 32, 32] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}, {"tp"}]>]>} : (tensor<3x32x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x32x32xf32>
    %2 = stablehlo.reshape %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"tp"}]>]>} : (tensor<1x32x32xf32>) -> tensor<32x32xf32>
    return %2 : tensor<32x32xf32>
  }
  func.func private @closed_call(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, tensor<f32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
    %1 = stablehlo.tanh %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : tensor<16x32xf32>
    %2 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x32xf32>, tensor<f32>) -> tensor<f32>
    return %1, %3 : tensor<16x32xf32>, tensor<f32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<3xf32>, %arg1: tensor<f32>, %arg2: tensor<i32>) -> tensor<3xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2 : (tensor<3xf32>, tensor<1xf32>, tensor<i32>) -> tensor<3xf32>
    return %1 : tensor<3xf32>
  }
}
