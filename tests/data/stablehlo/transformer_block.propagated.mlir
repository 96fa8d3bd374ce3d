module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}]>}, %arg1: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg2: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg3: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg4: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg5: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg6: tensor<4x8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}, {}]>}, %arg7: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg8: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg9: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg10: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<4x16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}]>}) {
    %0 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %3 = sdy.constant dense<3.200000e+01> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<f32>) -> tensor<4x16x1xf32>
    %5 = stablehlo.divide %2, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %7 = stablehlo.subtract %arg0, %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %8 = chlo.square %7 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
    %9 = stablehlo.reduce(%8 init: %0) applies stablehlo.add across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %11 = stablehlo.divide %10, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %12 = stablehlo.broadcast_in_dim %5, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %13 = stablehlo.subtract %arg0, %12 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %14 = sdy.constant dense<9.99999974E-6> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<f32>) -> tensor<4x16x1xf32>
    %16 = stablehlo.add %11, %15 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %17 = stablehlo.rsqrt %16 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %19 = stablehlo.multiply %13, %18 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %20 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %22 = stablehlo.multiply %19, %21 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %23 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %25 = stablehlo.add %22, %24 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %26 = stablehlo.dot_general %25, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %27 = stablehlo.dot_general %25, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %28 = stablehlo.dot_general %25, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %29 = stablehlo.dot_general %26, %27, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<4x16x4x8xf32>, tensor<4x16x4x8xf32>) -> tensor<4x4x16x16xf32>
    %30 = sdy.constant dense<8.000000e+00> : tensor<f32>
    %31 = stablehlo.sqrt %30 : tensor<f32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<f32>) -> tensor<4x4x16x16xf32>
    %33 = stablehlo.divide %29, %32 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : tensor<4x4x16x16xf32>
    %34 = sdy.constant dense<0xFF800000> : tensor<f32>
    %35 = stablehlo.reduce(%33 init: %34) applies stablehlo.maximum across dimensions = [3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}]>]>} : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %36 = stablehlo.broadcast_in_dim %34, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}]>]>} : (tensor<f32>) -> tensor<4x4x16xf32>
    %37 = stablehlo.maximum %36, %35 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}]>]>} : tensor<4x4x16xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2, 3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %40 = stablehlo.subtract %33, %39 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : tensor<4x4x16x16xf32>
    %41 = stablehlo.exponential %40 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : tensor<4x4x16x16xf32>
    %42 = stablehlo.reduce(%41 init: %0) applies stablehlo.add across dimensions = [3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}]>]>} : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %43 = stablehlo.broadcast_in_dim %42, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [0, 1, 2, 3] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %45 = stablehlo.divide %41, %44 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : tensor<4x4x16x16xf32>
    %46 = stablehlo.dot_general %28, %45, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}, {}, {}]>]>} : (tensor<4x16x4x8xf32>, tensor<4x4x16x16xf32>) -> tensor<4x4x8x16xf32>
    %47 = stablehlo.transpose %46, dims = [0, 3, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}, {}]>]>} : (tensor<4x4x8x16xf32>) -> tensor<4x16x4x8xf32>
    %48 = stablehlo.dot_general %47, %arg6, contracting_dims = [2, 3] x [0, 1], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x4x8xf32>, tensor<4x8x32xf32>) -> tensor<4x16x32xf32>
    %49 = stablehlo.add %arg0, %48 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %50 = stablehlo.reduce(%49 init: %0) applies stablehlo.add across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %51 = stablehlo.broadcast_in_dim %50, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %52 = stablehlo.divide %51, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %53 = stablehlo.broadcast_in_dim %52, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %54 = stablehlo.subtract %49, %53 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %55 = chlo.square %54 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
    %56 = stablehlo.reduce(%55 init: %0) applies stablehlo.add across dimensions = [2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>} : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %57 = stablehlo.broadcast_in_dim %56, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %58 = stablehlo.divide %57, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %59 = stablehlo.broadcast_in_dim %52, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %60 = stablehlo.subtract %49, %59 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %61 = stablehlo.add %58, %15 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %62 = stablehlo.rsqrt %61 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x1xf32>
    %63 = stablehlo.broadcast_in_dim %62, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %64 = stablehlo.multiply %60, %63 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %65 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %66 = stablehlo.broadcast_in_dim %65, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %67 = stablehlo.multiply %64, %66 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %68 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %69 = stablehlo.broadcast_in_dim %68, dims = [0, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %70 = stablehlo.add %67, %69 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    %71 = stablehlo.dot_general %70, %arg9, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : (tensor<4x16x32xf32>, tensor<32x64xf32>) -> tensor<4x16x64xf32>
    %72 = call @relu(%71) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : (tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
    %73 = stablehlo.dot_general %72, %arg10, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : (tensor<4x16x64xf32>, tensor<64x32xf32>) -> tensor<4x16x32xf32>
    %74 = stablehlo.add %49, %73 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {}]>]>} : tensor<4x16x32xf32>
    return %74 : tensor<4x16x32xf32>
  }
  func.func private @relu(%arg0: tensor<4x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {"tp"}]>}) -> (tensor<4x16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {"tp"}]>}) {
    %0 = sdy.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : (tensor<f32>) -> tensor<4x16x64xf32>
    %2 = stablehlo.maximum %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}, {"tp"}]>]>} : tensor<4x16x64xf32>
    return %2 : tensor<4x16x64xf32>
  }
}
