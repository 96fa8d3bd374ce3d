module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}]>}, %arg1: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg2: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg3: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg4: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg5: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}, {}]>}, %arg6: tensor<4x8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}, {}]>}, %arg7: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg8: tensor<32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg9: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}, %arg10: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<4x16x32xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}, {}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_0 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<4x16x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<4x16x32xf32>
    %6 = chlo.square %5 : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_2 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %10 = stablehlo.divide %8, %9 : tensor<4x16x1xf32>
    %11 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %12 = stablehlo.subtract %arg0, %11 : tensor<4x16x32xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %14 = stablehlo.add %10, %13 : tensor<4x16x1xf32>
    %15 = stablehlo.rsqrt %14 : tensor<4x16x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %17 = stablehlo.multiply %12, %16 : tensor<4x16x32xf32>
    %18 = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %20 = stablehlo.multiply %17, %19 : tensor<4x16x32xf32>
    %21 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %23 = stablehlo.add %20, %22 : tensor<4x16x32xf32>
    %24 = stablehlo.dot_general %23, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %25 = stablehlo.dot_general %23, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %26 = stablehlo.dot_general %23, %arg5, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x4x8xf32>) -> tensor<4x16x4x8xf32>
    %27 = stablehlo.dot_general %24, %25, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<4x16x4x8xf32>, tensor<4x16x4x8xf32>) -> tensor<4x4x16x16xf32>
    %cst_4 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %28 = stablehlo.sqrt %cst_4 : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [] : (tensor<f32>) -> tensor<4x4x16x16xf32>
    %30 = stablehlo.divide %27, %29 : tensor<4x4x16x16xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %31 = stablehlo.reduce(%30 init: %cst_5) applies stablehlo.maximum across dimensions = [3] : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %32 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<4x4x16xf32>
    %33 = stablehlo.maximum %32, %31 : tensor<4x4x16xf32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1, 2] : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [0, 1, 2, 3] : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %36 = stablehlo.subtract %30, %35 : tensor<4x4x16x16xf32>
    %37 = stablehlo.exponential %36 : tensor<4x4x16x16xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %38 = stablehlo.reduce(%37 init: %cst_7) applies stablehlo.add across dimensions = [3] : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2] : (tensor<4x4x16xf32>) -> tensor<4x4x16x1xf32>
    %40 = stablehlo.broadcast_in_dim %39, dims = [0, 1, 2, 3] : (tensor<4x4x16x1xf32>) -> tensor<4x4x16x16xf32>
    %41 = stablehlo.divide %37, %40 : tensor<4x4x16x16xf32>
    %42 = stablehlo.dot_general %26, %41, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3], precision = [DEFAULT, DEFAULT] : (tensor<4x16x4x8xf32>, tensor<4x4x16x16xf32>) -> tensor<4x4x8x16xf32>
    %43 = stablehlo.transpose %42, dims = [0, 3, 1, 2] : (tensor<4x4x8x16xf32>) -> tensor<4x16x4x8xf32>
    %44 = stablehlo.dot_general %43, %arg6, contracting_dims = [2, 3] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<4x16x4x8xf32>, tensor<4x8x32xf32>) -> tensor<4x16x32xf32>
    %45 = stablehlo.add %arg0, %44 : tensor<4x16x32xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %46 = stablehlo.reduce(%45 init: %cst_8) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_9 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %49 = stablehlo.divide %47, %48 : tensor<4x16x1xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %51 = stablehlo.subtract %45, %50 : tensor<4x16x32xf32>
    %52 = chlo.square %51 : tensor<4x16x32xf32> -> tensor<4x16x32xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %53 = stablehlo.reduce(%52 init: %cst_10) applies stablehlo.add across dimensions = [2] : (tensor<4x16x32xf32>, tensor<f32>) -> tensor<4x16xf32>
    %54 = stablehlo.broadcast_in_dim %53, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x1xf32>
    %cst_11 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %55 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %56 = stablehlo.divide %54, %55 : tensor<4x16x1xf32>
    %57 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %58 = stablehlo.subtract %45, %57 : tensor<4x16x32xf32>
    %cst_12 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<4x16x1xf32>
    %60 = stablehlo.add %56, %59 : tensor<4x16x1xf32>
    %61 = stablehlo.rsqrt %60 : tensor<4x16x1xf32>
    %62 = stablehlo.broadcast_in_dim %61, dims = [0, 1, 2] : (tensor<4x16x1xf32>) -> tensor<4x16x32xf32>
    %63 = stablehlo.multiply %58, %62 : tensor<4x16x32xf32>
    %64 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %65 = stablehlo.broadcast_in_dim %64, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %66 = stablehlo.multiply %63, %65 : tensor<4x16x32xf32>
    %67 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %68 = stablehlo.broadcast_in_dim %67, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<4x16x32xf32>
    %69 = stablehlo.add %66, %68 : tensor<4x16x32xf32>
    %70 = stablehlo.dot_general %69, %arg9, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x32xf32>, tensor<32x64xf32>) -> tensor<4x16x64xf32>
    %71 = call @relu(%70) : (tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
    %72 = stablehlo.dot_general %71, %arg10, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16x64xf32>, tensor<64x32xf32>) -> tensor<4x16x32xf32>
    %73 = stablehlo.add %45, %72 : tensor<4x16x32xf32>
    return %73 : tensor<4x16x32xf32>
  }
  func.func private @relu(%arg0: tensor<4x16x64xf32>) -> tensor<4x16x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x16x64xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4x16x64xf32>
    return %1 : tensor<4x16x64xf32>
  }
}
