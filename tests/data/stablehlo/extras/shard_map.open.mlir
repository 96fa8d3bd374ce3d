module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<16x64xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}) {
    %0 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<f32>) -> tensor<16x32xf32>
    %2 = stablehlo.add %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : tensor<16x32xf32>
    %3 = sdy.manual_computation(%2, %arg1) in_shardings=[<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}], replicated={"dp"}>] out_shardings=[<@mesh, [{"dp"}, {}], replicated={"tp"}>] manual_axes={"dp", "tp"} (%arg2: tensor<8x8xf32>, %arg3: tensor<8x64xf32>) {
      %8 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
      %9 = "stablehlo.all_reduce"(%8) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %10 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %10 : tensor<f32>
      }) : (tensor<8x64xf32>) -> tensor<8x64xf32>
      sdy.return %9 : tensor<8x64xf32>
    } : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %4 = stablehlo.exponential %3 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<16x64xf32>
    %5 = sdy.constant dense<2.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<f32>) -> tensor<16x64xf32>
    %7 = stablehlo.multiply %4, %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : tensor<16x64xf32>
    return %7 : tensor<16x64xf32>
  }
}
