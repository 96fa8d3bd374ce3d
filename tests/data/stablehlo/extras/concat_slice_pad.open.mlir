module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, %arg2: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<10x28xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, tensor<16x66xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}, tensor<16x32xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xf32>, tensor<16x16xf32>) -> tensor<16x48xf32>
    %1 = stablehlo.slice %0 [2:10, 0:48:2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x48xf32>) -> tensor<8x24xf32>
    %2 = sdy.constant dense<0> : tensor<i32>
    %3 = call @_pad(%1, %2) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<8x24xf32>, tensor<i32>) -> tensor<10x28xf32>
    %4 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.pad %arg0, %4, low = [0, 1], high = [0, 2], interior = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xf32>, tensor<f32>) -> tensor<16x66xf32>
    %6 = stablehlo.compare LT, %arg2, %2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = sdy.constant dense<16> : tensor<i32>
    %8 = stablehlo.add %arg2, %7 : tensor<i32>
    %9 = stablehlo.select %6, %8, %arg2 : tensor<i1>, tensor<i32>
    %10 = stablehlo.dynamic_slice %arg0, %9, %2, sizes = [4, 32] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"tp", ?}]>]>} : (tensor<16x32xf32>, tensor<i32>, tensor<i32>) -> tensor<4x32xf32>
    %11 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<4x32xf32>
    %13 = stablehlo.multiply %10, %12 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"tp", ?}]>]>} : tensor<4x32xf32>
    %14 = stablehlo.compare LT, %arg2, %2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %15 = stablehlo.add %arg2, %7 : tensor<i32>
    %16 = stablehlo.select %14, %15, %arg2 : tensor<i1>, tensor<i32>
    %17 = stablehlo.dynamic_update_slice %arg0, %13, %16, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xf32>, tensor<4x32xf32>, tensor<i32>, tensor<i32>) -> tensor<16x32xf32>
    %18 = call @_flip(%17) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xf32>) -> tensor<16x32xf32>
    return %3, %5, %18 : tensor<10x28xf32>, tensor<16x66xf32>, tensor<16x32xf32>
  }
  func.func private @_pad(%arg0: tensor<8x24xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<10x28xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [1, 4], interior = [0, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<8x24xf32>, tensor<f32>) -> tensor<10x28xf32>
    return %1 : tensor<10x28xf32>
  }
  func.func private @_flip(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xf32>
    return %0 : tensor<16x32xf32>
  }
}
