// sdy-convert-global-to-local: global shapes and sdy collectives -> local shapes and StableHLO
// collectives. Expected text is what jaxlib's sdy-convert-global-to-local prints for this input.
// RUN: shardc opt %s -p sdy-convert-global-to-local | filecheck %s
// RUN: shardc opt %s -p 'sdy-convert-global-to-local{per-dim-all-gather=true}' | filecheck %s --check-prefix=PERDIM
// RUN: shardc opt %s -p 'sdy-convert-global-to-local{enable-rgv3=true}' | filecheck %s --check-prefix=RGV3
// (enable-rgv3: the replica groups written as mesh axes; Shardy's current text, which jaxlib
// 0.10.2 prints as `#sdy<axis_ref"a">`.)
// RGV3-LABEL: func @gather_two_dims
// RGV3: "stablehlo.all_gather"({{.*}}replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @m, axes = [#stablehlo.axis_ref<name = "a">, #stablehlo.axis_ref<name = "b">]>, use_global_device_ids}>
// RGV3-LABEL: func @swap
// RGV3: source_target_pairs = dense<{{\[\[}}0, 0], [1, 2], [2, 1], [3, 3]]>

sdy.mesh @m = <["a"=2, "b"=2]>

// Gathering two dims: one all_gather of both axes on a new leading dim, then the blocks are
// moved into place (per-dim-all-gather: one all_gather per dim, the last dim first).
// CHECK-LABEL: func @gather_two_dims
// CHECK-SAME: (%arg0: tensor<4x3xf32> {{.*}}) -> (tensor<8x6xf32>
// CHECK-NEXT: %[[R0:.*]] = stablehlo.reshape %arg0 : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT: %[[G:.*]] = "stablehlo.all_gather"(%[[R0]]) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<1x4x3xf32>) -> tensor<4x4x3xf32>
// CHECK-NEXT: %[[R1:.*]] = stablehlo.reshape %[[G]] : (tensor<4x4x3xf32>) -> tensor<2x2x4x3xf32>
// CHECK-NEXT: %[[T:.*]] = stablehlo.transpose %[[R1]], dims = [0, 2, 1, 3]
// CHECK-NEXT: %[[R2:.*]] = stablehlo.reshape %[[T]] : (tensor<2x4x2x3xf32>) -> tensor<8x6xf32>
// CHECK-NEXT: return %[[R2]] : tensor<8x6xf32>
// PERDIM-LABEL: func @gather_two_dims
// PERDIM-NEXT: %[[G1:.*]] = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, {{.*}}replica_groups = dense<{{\[\[}}0, 1], [2, 3]]>{{.*}} -> tensor<4x6xf32>
// PERDIM-NEXT: %[[G0:.*]] = "stablehlo.all_gather"(%[[G1]]) <{all_gather_dim = 0 : i64, {{.*}}replica_groups = dense<{{\[\[}}0, 2], [1, 3]]>{{.*}} -> tensor<8x6xf32>
// PERDIM-NEXT: return %[[G0]]
func.func @gather_two_dims(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {"b"}]>}) -> (tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}]>}) {
  %0 = sdy.all_gather [{"a"}, {"b"}] %arg0 out_sharding=<@m, [{}, {}]> : tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// all_reduce keeps the local shape; all_slice reads this device's offset from a table indexed
// by partition_id.
// CHECK-LABEL: func @sum_then_slice
// CHECK-NEXT: %[[SUM:.*]] = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<f32>, %[[Y:.*]]: tensor<f32>):
// CHECK-NEXT: %[[ADD:.*]] = stablehlo.add %[[X]], %[[Y]] : tensor<f32>
// CHECK-NEXT: stablehlo.return %[[ADD]] : tensor<f32>
// CHECK-NEXT: }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[PID:.*]] = stablehlo.partition_id : tensor<ui32>
// CHECK-NEXT: %[[ID:.*]] = stablehlo.convert %[[PID]] : (tensor<ui32>) -> tensor<i64>
// CHECK-NEXT: %[[TABLE:.*]] = stablehlo.constant dense<[0, 2, 0, 2]> : tensor<4xi64>
// CHECK-NEXT: %[[ONE:.*]] = stablehlo.dynamic_slice %[[TABLE]], %[[ID]], sizes = [1]
// CHECK-NEXT: %[[OFF:.*]] = stablehlo.reshape %[[ONE]] : (tensor<1xi64>) -> tensor<i64>
// CHECK-NEXT: %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<i64>
// CHECK-NEXT: %[[S:.*]] = stablehlo.dynamic_slice %[[SUM]], %[[OFF]], %[[ZERO]], sizes = [2, 4] : (tensor<4x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xf32>
// CHECK-NEXT: return %[[S]] : tensor<2x4xf32>
func.func @sum_then_slice(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}]>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}, {}]>}) {
  %0 = sdy.all_reduce {"a"} %arg0 out_sharding=<@m, [{}, {}]> : tensor<4x4xf32>
  %1 = sdy.all_slice [{"b"}, {}] %0 out_sharding=<@m, [{"b"}, {}]> : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// An iota sharded along its dim: a local iota plus this device's offset.
// CHECK-LABEL: func @sharded_iota
// CHECK-NEXT: %[[IOTA:.*]] = stablehlo.iota dim = 1 : tensor<6x2xi32>
// CHECK: %[[TABLE:.*]] = stablehlo.constant dense<[0, 0, 2, 2]> : tensor<4xi64>
// CHECK: %[[OFF:.*]] = stablehlo.convert %{{.*}} : (tensor<i64>) -> tensor<i32>
// CHECK-NEXT: %[[B:.*]] = stablehlo.broadcast_in_dim %[[OFF]], dims = [] : (tensor<i32>) -> tensor<6x2xi32>
// CHECK-NEXT: %[[SUM:.*]] = stablehlo.add %[[IOTA]], %[[B]] : tensor<6x2xi32>
// CHECK-NEXT: return %[[SUM]]
func.func @sharded_iota() -> (tensor<6x4xi32> {sdy.sharding = #sdy.sharding<@m, [{}, {"a"}]>}) {
  %0 = stablehlo.iota dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"a"}]>]>} : tensor<6x4xi32>
  return %0 : tensor<6x4xi32>
}

// Swapping the axes of two dims: one collective_permute, devices 1 and 2 trade blocks.
// CHECK-LABEL: func @swap
// CHECK-NEXT: %[[P:.*]] = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, source_target_pairs = dense<{{\[\[}}0, 0], [1, 2], [2, 1], [3, 3]]> : tensor<4x2xi64>}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: return %[[P]] : tensor<2x2xf32>
func.func @swap(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {"b"}]>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}, {"a"}]>}) {
  %0 = sdy.collective_permute %arg0 out_sharding=<@m, [{"b"}, {"a"}]> : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
