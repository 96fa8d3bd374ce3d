// lower-collectives: each reshard becomes the planner's cheapest sequence of collectives.
// RUN: shardc opt %s -p lower-collectives --split-input-file | filecheck %s
// RUN: shardc opt %s -p insert-reshards,lower-collectives --split-input-file | filecheck %s --check-prefix=PIPE
// RUN: shardc opt %s -p lower-collectives --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

// Megatron MLP through insert-reshards and lower-collectives: exactly one all_reduce (on "tp",
// within each "dp" group) in the forward block, no other collective.
// PIPE-LABEL: func @megatron
// PIPE-NOT: all_
// PIPE: %[[Y:.*]] = dot_general {{.*}} unreduced={"tp"}>>
// PIPE-NEXT: %[[AR:.*]] = all_reduce %[[Y]] {reduction_axes = ["tp"]} : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
// PIPE-NEXT: return %[[AR]]
// CHECK-LABEL: func @megatron
// CHECK-NOT: all_
// CHECK: return
mesh @mesh = <["dp"=2, "tp"=4]>
func @megatron(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {
  %h = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
  %a = tanh %h : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
  %y = dot_general %a, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
  return %y
}

// -----

// An unreduced value resharded to plain: all_reduce.
// CHECK-LABEL: func @all_reduce
// CHECK-NEXT: %[[AR:.*]] = all_reduce %u {reduction_axes = ["tp"]} : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: return %[[AR]]
mesh @mesh = <["dp"=2, "tp"=4]>
func @all_reduce(%u: tensor<16x64xf32, <@mesh, [{"dp"}, {}], unreduced={"tp"}>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {
  %0 = reshard %u : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
  return %0
}

// -----

// An axis moving from one dim to another: all_to_all.
// CHECK-LABEL: func @all_to_all
// CHECK-NEXT: %[[T:.*]] = all_to_all %a {params = [{"x"}: 0->1]} : tensor<16x64xf32, <@m, [{}, {"x"}]>>
// CHECK-NEXT: return %[[T]]
mesh @m = <["x"=4, "y"=2]>
func @all_to_all(%a: tensor<16x64xf32, <@m, [{"x"}, {}]>>) -> tensor<16x64xf32, <@m, [{}, {"x"}]>> {
  %0 = reshard %a : tensor<16x64xf32, <@m, [{}, {"x"}]>>
  return %0
}

// -----

// Unreduced on "y" to sharded on "y": one reduce_scatter, not all_reduce + all_slice.
// PIPE-LABEL: func @reduce_scatter
// PIPE-NEXT: %[[D:.*]] = dot_general {{.*}} unreduced={"y"}>>
// PIPE-NEXT: %[[RS:.*]] = reduce_scatter %[[D]] {scatter_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// PIPE-NEXT: return %[[RS]]
// CHECK-LABEL: func @reduce_scatter
// CHECK-NEXT: %[[D:.*]] = dot_general
// CHECK-NEXT: %[[RS:.*]] = reduce_scatter %[[D]] {scatter_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: return %[[RS]]
mesh @m = <["x"=4, "y"=2]>
func @reduce_scatter(%a: tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>, %b: tensor<32x16xf32, <@m, [{"y"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"x"}, {}], unreduced={"y"}>>
  %1 = reshard %0 : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %1
}

// -----

// Sub-axes: dropping the minor half of "x" is an all_gather of the sub-axis "x":(2)2; moving
// the major half to another dim an all_to_all of "x":(1)2.
// CHECK-LABEL: func @sub_axes
// CHECK-NEXT: %[[G:.*]] = all_gather %a {gathering_axes = [[], ["x":(2)2]]} : tensor<2x16xf32, <@m, [{"x":(1)2}, {}]>>
// CHECK-NEXT: %[[T:.*]] = all_to_all %[[G]] {params = [{"x":(1)2}: 0->1]} : tensor<2x16xf32, <@m, [{}, {"x":(1)2}]>>
// CHECK-NEXT: return %[[G]], %[[T]]
mesh @m = <["x"=4, "y"=2]>
func @sub_axes(%a: tensor<2x16xf32, <@m, [{"x":(1)2}, {"x":(2)2}]>>) -> (tensor<2x16xf32, <@m, [{"x":(1)2}, {}]>>, tensor<2x16xf32, <@m, [{}, {"x":(1)2}]>>) {
  %0 = reshard %a : tensor<2x16xf32, <@m, [{"x":(1)2}, {}]>>
  %1 = reshard %0 : tensor<2x16xf32, <@m, [{}, {"x":(1)2}]>>
  return %0, %1
}

// -----

// Same shard count, different devices: "x" to "y" on 2-way sub-axis is a collective_permute.
// CHECK-LABEL: func @sub_axis_permute
// CHECK-NEXT: %[[P:.*]] = collective_permute %a : tensor<32xf32, <@m, [{"x":(1)2, "y"}]>>
// CHECK-NEXT: return %[[P]]
mesh @m = <["x"=4, "y"=2]>
func @sub_axis_permute(%a: tensor<32xf32, <@m, [{"x"}]>>) -> tensor<32xf32, <@m, [{"x":(1)2, "y"}]>> {
  %0 = reshard %a : tensor<32xf32, <@m, [{"x":(1)2, "y"}]>>
  return %0
}

// -----

// Same shard counts, different device order: collective_permute (on a mesh with device ids).
// CHECK-LABEL: func @permute
// CHECK-NEXT: %[[P:.*]] = collective_permute %a : tensor<16x16xf32, <@ring, [{"y", "x"}, {}]>>
// CHECK-NEXT: return %[[P]]
mesh @ring = <["x"=4, "y"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>
func @permute(%a: tensor<16x16xf32, <@ring, [{"x", "y"}, {}]>>) -> tensor<16x16xf32, <@ring, [{"y", "x"}, {}]>> {
  %0 = reshard %a : tensor<16x16xf32, <@ring, [{"y", "x"}, {}]>>
  return %0
}

// -----

// Uneven dims (10 over 4): slicing needs no communication.
// CHECK-LABEL: func @uneven
// CHECK-NEXT: %[[S:.*]] = all_slice %a {slicing_axes = [["x"]]} : tensor<10xf32, <@m, [{"x"}]>>
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=4, "y"=2]>
func @uneven(%a: tensor<10xf32, <@m, [{}]>>) -> tensor<10xf32, <@m, [{"x"}]>> {
  %0 = reshard %a : tensor<10xf32, <@m, [{"x"}]>>
  return %0
}

// -----

// A no-op reshard disappears.
// CHECK-LABEL: func @noop
// CHECK-NEXT: return %a
mesh @m = <["x"=4, "y"=2]>
func @noop(%a: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {
  %0 = reshard %a : tensor<16xf32, <@m, [{"x"}]>>
  return %0
}

// -----

// A reshard between two meshes cannot be planned: it stays, with a warning naming it.
// WARN: warning: 'reshard' of %a from <@a, [{"x"}]> to <@b, [{"x"}]> is kept: the planner cannot express it
// CHECK-LABEL: func @two_meshes
// CHECK-NEXT: %[[R:.*]] = reshard %a : tensor<16xf32, <@b, [{"x"}]>>
// CHECK-NEXT: return %[[R]]
mesh @a = <["x"=4]>
mesh @b = <["x"=4], device_ids=[3, 2, 1, 0]>
func @two_meshes(%a: tensor<16xf32, <@a, [{"x"}]>>) -> tensor<16xf32, <@b, [{"x"}]>> {
  %0 = reshard %a : tensor<16xf32, <@b, [{"x"}]>>
  return %0
}
