module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<16x64xf32> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{?}, {"tp", ?}]>, <@mesh, [{"tp", ?}, {?}]>] out_shardings=[<@mesh, [{?}, {?}]>] manual_axes={"tp"} (%arg2: tensor<16x8xf32>, %arg3: tensor<8x64xf32>) {
      %3 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
      %4 = sdy.sharding_constraint %3 <@mesh, [{?}, {?}]> : tensor<16x64xf32>
      %5 = "stablehlo.all_reduce"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %6 = stablehlo.add %arg4, %arg5 : tensor<f32>
        %7 = sdy.sharding_constraint %6 <@mesh, []> : tensor<f32>
        stablehlo.return %7 : tensor<f32>
      }) : (tensor<16x64xf32>) -> tensor<16x64xf32>
      sdy.return %5 : tensor<16x64xf32>
    } : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x64xf32>
    %2 = stablehlo.add %0, %1 : tensor<16x64xf32>
    return %2 : tensor<16x64xf32>
  }
}
