module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg2: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}]>}, %arg3: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}, %arg4: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) -> (tensor<8x16x32xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<64xf32>) -> tensor<1x1x64xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<1x1x64xf32>) -> tensor<8x16x64xf32>
    %3 = stablehlo.add %0, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %4 = stablehlo.multiply %3, %3 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %5 = stablehlo.multiply %4, %3 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %6 = sdy.constant dense<4.471500e-02> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<8x16x64xf32>
    %8 = stablehlo.multiply %7, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %9 = stablehlo.add %3, %8 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %10 = sdy.constant dense<0.797884583> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<8x16x64xf32>
    %12 = stablehlo.multiply %11, %9 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %13 = stablehlo.tanh %12 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %14 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<8x16x64xf32>
    %16 = stablehlo.add %15, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %17 = sdy.constant dense<5.000000e-01> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<8x16x64xf32>
    %19 = stablehlo.multiply %18, %16 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %20 = stablehlo.multiply %3, %19 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}, {"tp", ?}]>]>} : tensor<8x16x64xf32>
    %21 = stablehlo.dot_general %20, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16x64xf32>, tensor<64x32xf32>) -> tensor<8x16x32xf32>
    %22 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<8x16x32xf32>
    %24 = stablehlo.add %21, %23 : tensor<8x16x32xf32>
    return %24 : tensor<8x16x32xf32>
  }
}
