module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<16x64xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}]>] out_shardings=[<@mesh, [{"dp"}, {}]>] manual_axes={"tp"} (%arg2: tensor<16x8xf32>, %arg3: tensor<8x64xf32>) {
      %4 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=16, j=64, k=8} reduction={k}>} : (tensor<16x8xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
      %5 = sdy.reshard %4 <@mesh, [{"dp"}, {}]> {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=64}>} : tensor<16x64xf32>
      %6 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %7 = stablehlo.add %arg4, %arg5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([], [])->([])>} : tensor<f32>
        %8 = sdy.reshard %7 <@mesh, []> {sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>} : tensor<f32>
        stablehlo.return %8 : tensor<f32>
      }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=16, j=64}>} : (tensor<16x64xf32>) -> tensor<16x64xf32>
      sdy.return %6 : tensor<16x64xf32>
    } : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %1 = sdy.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([])->([i, j]) {i=16, j=64}>} : (tensor<f32>) -> tensor<16x64xf32>
    %3 = stablehlo.add %0, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=16, j=64}>} : tensor<16x64xf32>
    return %3 : tensor<16x64xf32>
  }
}
