// auto-shard's carry=auto: a result that is the state its argument carries to the next step (same
// position and type, no declared sharding) comes back in that argument's layout, the reshard
// before the return priced like any other (docs/autoshard.md).
// RUN: shardc opt %s -p 'auto-shard{carry=auto}' --split-input-file | filecheck %s
// RUN: shardc opt %s -p auto-shard --split-input-file | filecheck %s --check-prefix=NONE
// RUN: not shardc opt %s -p 'auto-shard{carry=all}' 2>&1 | filecheck %s --check-prefix=BAD

// The update reads the state transposed. With carry the state is columns-on-both-axes on the way
// in and on the way out: one all_to_all of the transposed copy before the add, and %s2 is
// returned in %s's layout.
// CHECK-LABEL: func @step
// CHECK-SAME: %s: tensor<64x64xf32, <@mesh, [{}, {"dp", "tp"}]>>
// CHECK-SAME: -> tensor<64x64xf32, <@mesh, [{}, {"dp", "tp"}]>>
// CHECK: %[[T:.*]] = transpose %s {{.*}} : tensor<64x64xf32, <@mesh, [{"dp", "tp"}, {}]>>
// CHECK: %[[C:.*]] = sharding_constraint %[[T]] : tensor<64x64xf32, <@mesh, [{}, {"dp", "tp"}]>>
// CHECK: %[[S2:.*]] = add %[[C]], %{{.*}} : tensor<64x64xf32, <@mesh, [{}, {"dp", "tp"}]>>
// CHECK-NEXT: return %[[S2]]
// Without it (carry=none, the default) the state comes in whole and goes out split: the next
// step would start from another layout than this one assumed.
// NONE-LABEL: func @step
// NONE-SAME: %s: tensor<64x64xf32, <@mesh, [{}, {}]>>
// NONE-SAME: -> tensor<64x64xf32> {
// NONE: %[[S2:.*]] = add {{.*}} : tensor<64x64xf32, <@mesh, [{}, {"dp", "tp"}]>>
// NONE-NEXT: return %[[S2]]
// BAD: error: auto-shard: carry must be none or auto (got 'all')
mesh @mesh = <["dp"=2, "tp"=4]>
func @step(%s: tensor<64x64xf32>, %x: tensor<16x64xf32>) -> tensor<64x64xf32> {
  %y = dot_general %x, %s {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  %t = transpose %s {permutation = [1, 0]} : tensor<64x64xf32>
  %g = dot_general %x, %y {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : tensor<64x64xf32>
  %s2 = add %t, %g : tensor<64x64xf32>
  return %s2
}

// -----

// A declared result keeps what the user wrote: it is not carried (%s takes its own layout).
// CHECK-LABEL: func @declared
// CHECK-SAME: -> tensor<64x64xf32, <@mesh, [{"dp"}, {}]>>
mesh @mesh = <["dp"=2, "tp"=4]>
func @declared(%s: tensor<64x64xf32>, %x: tensor<16x64xf32>) -> tensor<64x64xf32, <@mesh, [{"dp"}, {}]>> {
  %y = dot_general %x, %s {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  %t = transpose %s {permutation = [1, 0]} : tensor<64x64xf32>
  %g = dot_general %x, %y {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : tensor<64x64xf32>
  %s2 = add %t, %g : tensor<64x64xf32>
  return %s2
}

// -----

// No argument has the result's type: nothing is carried, the result keeps no sharding.
// CHECK-LABEL: func @not_state
// CHECK-SAME: -> tensor<16x32xf32> {
mesh @mesh = <["dp"=2, "tp"=4]>
func @not_state(%s: tensor<64x32xf32>, %x: tensor<16x64xf32>) -> tensor<16x32xf32> {
  %y = dot_general %x, %s {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x32xf32>
  return %y
}
