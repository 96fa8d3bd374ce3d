// verify-unreduced-axes (Shardy's sdy-verify-unreduced-axes): an op may not drop, invent or
// re-kind unreduced axes; each fault is an error at the op's line. The last cases are valid and
// print unchanged.
// RUN: not shardc opt %s -p sdy-verify-unreduced-axes --split-input-file 2>&1 | filecheck %s

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @multiply_drops(%p: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"a"}], unreduced={"b"}>}, %q: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: in pass 'verify-unreduced-axes': 'multiply' op dropped unreduced axis 'b' without a blessed operation
  %0 = stablehlo.multiply %p, %q {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"a"}]>]>} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @negate_rekinds(%p: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced=min{"a"}>}) -> tensor<4xf32> {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'negate' op cannot change the reduction operator of kept unreduced axes from min to sum.
  %0 = stablehlo.negate %p {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}], unreduced={"a"}>]>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @dot_invents_min(%p: tensor<4x6xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"b"}]>}, %q: tensor<6x2xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}, {}]>}) -> tensor<4x2xf32> {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'dot_general' op cannot introduce 'min' unreduced axes. Expected 'sum'.
  %0 = stablehlo.dot_general %p, %q, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}], unreduced=min{"b"}>]>} : (tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @max_reduce_invents_sum(%p: tensor<6x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {}]>}) -> tensor<4xf32> {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'reduce' op cannot introduce 'sum' unreduced axes. Expected 'max'.
  %0 = stablehlo.reduce(%p init: %init) applies stablehlo.maximum across dimensions = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}], unreduced={"a"}>]>} : (tensor<6x4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func private @keeps(%x: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced={"a"}>}) -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced={"a"}>}) {
  return %x : tensor<4xf32>
}
func.func @caller_loses_unreduced(%p: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced={"a"}>}) -> tensor<4xf32> {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'call' op has unreduced axes mismatch for 'a' at call result 0.
  %0 = func.call @keeps(%p) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @return_invents(%p: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}]>}) -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}], unreduced={"a"}>}) {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'return' op has unreduced axes mismatch for 'a' at return value 0
  return %p : tensor<4xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @scatter_of_unsharded(%p: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'reduce_scatter' op operand must be sharded.
  %0 = sdy.reduce_scatter [{"a"}] %p out_sharding=<@m, [{"a"}]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

sdy.mesh @m = <["a"=2, "b"=4]>
func.func @global_all_reduce_rekinds(%p: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced=min{"b"}>}) -> tensor<8xf32> {
  // CHECK: verify_unreduced_axes.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: {{.*}}'xla.all_reduce' op cannot reduce 'min' unreduced axes. Expected 'sum'.
  %0 = "stablehlo.all_reduce"(%p) <{replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @m, axes = [#stablehlo.axis_ref<name = "b">]>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Valid: a reshard (seen through a barrier) reduces the axis, a sum reduction introduces one,
// and shardings on two meshes are not compared.
sdy.mesh @m = <["a"=2, "b"=4]>
sdy.mesh @n = <["c"=2]>
func.func @valid(%p: tensor<6x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {}], unreduced={"b"}>}) -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced={"a"}>}) {
  %r = sdy.reshard %p <@m, [{"a"}, {}]> : tensor<6x4xf32>
  %b = sdy.propagation_barrier %r allowed_direction=NONE : tensor<6x4xf32>
  %e = stablehlo.exponential %b {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"a"}, {}]>]>} : tensor<6x4xf32>
  %n = stablehlo.abs %p {sdy.sharding = #sdy.sharding_per_value<[<@n, [{}, {}], unreduced={"c"}>]>} : tensor<6x4xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %init) applies stablehlo.add across dimensions = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}], unreduced={"a"}>]>} : (tensor<6x4xf32>, tensor<f32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
// CHECK-LABEL: func.func @valid
// CHECK: %[[R:.*]] = sdy.reshard %arg0
// CHECK: %[[B:.*]] = sdy.propagation_barrier %[[R]]
// CHECK: %[[E:.*]] = stablehlo.exponential %[[B]]
// CHECK: stablehlo.reduce(%[[E]] init:
