// The spmd pass: global-view program -> per-device program (docs/spmd.md).
// RUN: shardc opt %s -p spmd --split-input-file | filecheck %s
// RUN: shardc opt %s -p spmd --split-input-file | shardc opt - --split-input-file | filecheck %s

// Megatron on dp x tp: local shapes, one all_reduce over "tp" with its two device groups, and
// the global shapes and shardings recorded on the function.
// CHECK-LABEL: func @main(
// CHECK-SAME: %[[X:.*]]: tensor<4x16xf32>, %[[W1:.*]]: tensor<16x8xf32>, %[[W2:.*]]: tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-SAME: attributes {mesh = @m, in_shapes = {{\[}}[8, 16], [16, 32], [32, 16]],
// CHECK-SAME: in_shardings = [<@m, [{"dp"}, {}]>, <@m, [{}, {"tp"}]>, <@m, [{"tp"}, {}]>],
// CHECK-SAME: out_shapes = {{\[}}[8, 16]], out_shardings = [<@m, [{"dp"}, {}]>]}
// CHECK-NEXT: %[[H:.*]] = dot_general %[[X]], %[[W1]] {{.*}} : tensor<4x8xf32>
// CHECK-NEXT: %[[T:.*]] = tanh %[[H]] : tensor<4x8xf32>
// CHECK-NEXT: %[[P:.*]] = dot_general %[[T]], %[[W2]] {{.*}} : tensor<4x16xf32>
// CHECK-NEXT: %[[R:.*]] = spmd.all_reduce %[[P]] {axes = ["tp"], kind = add, groups = {{\[}}[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<4x16xf32>
// CHECK-NEXT: return %[[R]]
mesh @m = <["dp"=2, "tp"=4]>

func @main(%x: tensor<8x16xf32, <@m, [{"dp"}, {}]>>, %w1: tensor<16x32xf32, <@m, [{}, {"tp"}]>>, %w2: tensor<32x16xf32, <@m, [{"tp"}, {}]>>) -> tensor<8x16xf32, <@m, [{"dp"}, {}]>> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %1 = tanh %0 : tensor<8x32xf32, <@m, [{"dp"}, {"tp"}]>>
  %2 = dot_general %1, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"dp"}, {}], unreduced={"tp"}>>
  %3 = all_reduce %2 {reduction_axes = ["tp"]} : tensor<8x16xf32, <@m, [{"dp"}, {}]>>
  return %3
}

// -----

// 10 over 4 (blocks of 3, the last holding 1): all_gather concatenates 12 rows and slices the
// 10 real ones; all_slice and all_to_all pad the split dim (6 -> 8) to whole parts first.
// CHECK: func @main(%[[A:.*]]: tensor<3x6xf32>) -> (tensor<10x2xf32>, tensor<10x2xf32>)
// CHECK-NEXT: %[[G:.*]] = spmd.all_gather %[[A]] {axes = ["x"], dim = 0, groups = {{\[}}[0, 1, 2, 3]]} : tensor<12x6xf32>
// CHECK-NEXT: %[[S:.*]] = slice %[[G]] {start_indices = [0, 0], limit_indices = [10, 6]} : tensor<10x6xf32>
// CHECK-NEXT: %[[Z:.*]] = constant {value = dense<0.0>} : tensor<f32>
// CHECK-NEXT: %[[P:.*]] = pad %[[S]], %[[Z]] {edge_padding_low = [0, 0], edge_padding_high = [0, 2]} : tensor<10x8xf32>
// CHECK-NEXT: %[[SL:.*]] = spmd.all_slice %[[P]] {axes = ["x"], dim = 1, groups = {{\[}}[0, 1, 2, 3]]} : tensor<10x2xf32>
// CHECK-NEXT: %[[P2:.*]] = pad %[[A]], %[[Z]] {{.*}} : tensor<3x8xf32>
// CHECK-NEXT: %[[A2A:.*]] = spmd.all_to_all %[[P2]] {axes = ["x"], split_dim = 1, concat_dim = 0, groups = {{\[}}[0, 1, 2, 3]]} : tensor<12x2xf32>
// CHECK-NEXT: %[[S2:.*]] = slice %[[A2A]] {start_indices = [0, 0], limit_indices = [10, 2]} : tensor<10x2xf32>
// CHECK-NEXT: return %[[SL]], %[[S2]]
mesh @m = <["x"=4]>

func @main(%a: tensor<10x6xf32, <@m, [{"x"}, {}]>>) -> (tensor<10x6xf32, <@m, [{}, {"x"}]>>, tensor<10x6xf32, <@m, [{}, {"x"}]>>) {
  %0 = all_gather %a {gathering_axes = [["x"], []]} : tensor<10x6xf32, <@m, [{}, {}]>>
  %1 = all_slice %0 {slicing_axes = [[], ["x"]]} : tensor<10x6xf32, <@m, [{}, {"x"}]>>
  %2 = all_to_all %a {params = [{"x"}: 0->1]} : tensor<10x6xf32, <@m, [{}, {"x"}]>>
  return %1, %2
}

// -----

// An iota along a sharded dim counts from shard index * 3; the reduction masks the padding of
// the uneven dim with its identity, and the non-identity init is applied by device 0 only.
// CHECK: func @main(%[[A:.*]]: tensor<3x8xf32>) -> tensor<8xf32>
// CHECK: %[[IO:.*]] = iota {iota_dimension = 0} : tensor<3x8xf32>
// CHECK-NEXT: %[[IDX:.*]] = spmd.axis_index {axes = ["x"]} : tensor<i32>
// CHECK-NEXT: %[[THREE:.*]] = constant {value = dense<3>} : tensor<i32>
// CHECK-NEXT: %[[OFF:.*]] = multiply %[[IDX]], %[[THREE]] : tensor<i32>
// CHECK-NEXT: %[[OFFF:.*]] = convert %[[OFF]] : tensor<f32>
// CHECK-NEXT: %[[OFFB:.*]] = broadcast_in_dim %[[OFFF]] {broadcast_dimensions = []} : tensor<3x8xf32>
// CHECK-NEXT: %[[GI:.*]] = add %[[IO]], %[[OFFB]] : tensor<3x8xf32>
// CHECK-NEXT: %[[M:.*]] = multiply %[[A]], %[[GI]] : tensor<3x8xf32>
// CHECK-NEXT: %[[TEN:.*]] = constant {value = dense<10>} : tensor<i32>
// CHECK-NEXT: %[[LIM:.*]] = subtract %[[TEN]], %[[OFF]] : tensor<i32>
// CHECK-NEXT: %[[ROW:.*]] = iota {iota_dimension = 0} : tensor<3x8xi32>
// CHECK-NEXT: %[[LIMB:.*]] = broadcast_in_dim %[[LIM]] {{.*}} : tensor<3x8xi32>
// CHECK-NEXT: %[[OK:.*]] = compare %[[ROW]], %[[LIMB]] {comparison_direction = LT} : tensor<3x8xi1>
// CHECK-NEXT: %[[ZS:.*]] = constant {value = dense<0.0>} : tensor<3x8xf32>
// CHECK-NEXT: %[[MASKED:.*]] = select %[[OK]], %[[M]], %[[ZS]] : tensor<3x8xf32>
// CHECK: %[[FIRST:.*]] = compare %[[IDX]], %{{.*}} {comparison_direction = EQ} : tensor<i1>
// CHECK: %[[INIT:.*]] = select %[[FIRST]], %{{.*}}, %{{.*}} : tensor<f32>
// CHECK-NEXT: %[[SUM:.*]] = reduce %[[MASKED]], %[[INIT]] {dimensions = [0], kind = add} : tensor<8xf32>
// CHECK-NEXT: %[[AR:.*]] = spmd.all_reduce %[[SUM]] {axes = ["x"], kind = add, groups = {{\[}}[0, 1, 2, 3]]} : tensor<8xf32>
// CHECK-NEXT: return %[[AR]]
mesh @m = <["x"=4]>

func @main(%a: tensor<10x8xf32, <@m, [{"x"}, {}]>>) -> tensor<8xf32, <@m, [{}]>> {
  %one = constant {value = dense<1.0>} : tensor<f32, <@m, []>>
  %i = iota {iota_dimension = 0} : tensor<10x8xf32, <@m, [{"x"}, {}]>>
  %0 = multiply %a, %i : tensor<10x8xf32, <@m, [{"x"}, {}]>>
  %1 = reduce %0, %one {dimensions = [0], kind = add} : tensor<8xf32, <@m, [{}], unreduced={"x"}>>
  %2 = all_reduce %1 {reduction_axes = ["x"]} : tensor<8xf32, <@m, [{}]>>
  return %2
}

// -----

// An uneven contracting dim is zeroed on both operands before the local dot; reduce_scatter pads
// the scattered dim (6 -> 8) to whole parts.
// CHECK: func @main(%[[A:.*]]: tensor<6x3xf32>, %[[B:.*]]: tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[LA:.*]] = select %{{.*}}, %[[A]], %{{.*}} : tensor<6x3xf32>
// CHECK: %[[LB:.*]] = select %{{.*}}, %[[B]], %{{.*}} : tensor<3x4xf32>
// CHECK-NEXT: %[[D:.*]] = dot_general %[[LA]], %[[LB]] {{.*}} : tensor<6x4xf32>
// CHECK: %[[P:.*]] = pad %[[D]], %{{.*}} {edge_padding_low = [0, 0], edge_padding_high = [2, 0]} : tensor<8x4xf32>
// CHECK-NEXT: %[[RS:.*]] = spmd.reduce_scatter %[[P]] {axes = ["x"], dim = 0, groups = {{\[}}[0, 1, 2, 3]]} : tensor<2x4xf32>
// CHECK-NEXT: return %[[RS]]
mesh @m = <["x"=4]>

func @main(%a: tensor<6x10xf32, <@m, [{}, {"x"}]>>, %b: tensor<10x4xf32, <@m, [{"x"}, {}]>>) -> tensor<6x4xf32, <@m, [{"x"}, {}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<6x4xf32, <@m, [{}, {}], unreduced={"x"}>>
  %1 = reduce_scatter %0 {scatter_axes = [["x"], []]} : tensor<6x4xf32, <@m, [{"x"}, {}]>>
  return %1
}

// -----

// collective_permute names [source, target] device ids (device_ids respected).
// CHECK: func @main(%[[A:.*]]: tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[CP:.*]] = spmd.collective_permute %[[A]] {pairs = {{\[}}[3, 3], [0, 1], [1, 0], [2, 2]]} : tensor<2x2xf32>
// CHECK-NEXT: return %[[CP]]
mesh @m = <["x"=2, "y"=2], device_ids=[3, 1, 0, 2]>

func @main(%a: tensor<4x4xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<4x4xf32, <@m, [{"y"}, {"x"}]>> {
  %0 = collective_permute %a : tensor<4x4xf32, <@m, [{"y"}, {"x"}]>>
  return %0
}


// -----

// dynamic_update_slice with the operand's dim 0 sharded over "dp" (blocks of 8 rows) and a
// replicated 4-row update at a global start: each device cuts its part of the update out of
// the update padded by one block on each side, at block offset - clamped start + 8.
// CHECK: func @main(%[[X:.*]]: tensor<8x8xf32>, %[[U:.*]]: tensor<4x8xf32>, %[[I:.*]]: tensor<i32>) -> tensor<8x8xf32>
// CHECK: %[[PU:.*]] = pad %[[U]], %{{.*}} {edge_padding_low = [8, 0], edge_padding_high = [8, 0]} : tensor<20x8xf32>
// CHECK: %[[PM:.*]] = pad %{{.*}}, %{{.*}} {edge_padding_low = [8, 0], edge_padding_high = [8, 0]} : tensor<20x8xi1>
// CHECK: %[[S:.*]] = clamp %[[ZERO:.*]], %[[I]], %{{.*}} : tensor<i32>
// CHECK: %[[AX:.*]] = spmd.axis_index {axes = ["dp"]} : tensor<i32>
// CHECK: %[[T:.*]] = add %{{.*}}, %{{.*}} : tensor<i32>
// CHECK-NEXT: %[[PIECE:.*]] = dynamic_slice %[[PU]], %[[T]], %[[ZERO]] {slice_sizes = [8, 8]} : tensor<8x8xf32>
// CHECK-NEXT: %[[MASK:.*]] = dynamic_slice %[[PM]], %[[T]], %[[ZERO]] {slice_sizes = [8, 8]} : tensor<8x8xi1>
// CHECK-NEXT: %[[R:.*]] = select %[[MASK]], %[[PIECE]], %[[X]] : tensor<8x8xf32>
// CHECK-NEXT: return %[[R]]
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %u: tensor<4x32xf32, <@mesh, [{}, {"tp"}]>>, %i: tensor<i32, <@mesh, []>>) -> tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>> {
  %0 = dynamic_update_slice %x, %u, %i, %i : tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>
  return %0
}

// -----

// The gradient of an embedding lookup: a scatter-add of dp-sharded updates into a table whose
// vocab is on tp. The indices are shifted to this device's rows (others' land outside the block
// and are dropped); only the first device of each dp group adds into the operand, so the dp
// partial results (unreduced) sum to one copy of it.
// CHECK: func @main(
// CHECK-SAME: %[[IDS:.*]]: tensor<4x16xi32>, %[[G:.*]]: tensor<4x16x64xf32>) -> tensor<64x64xf32>
// CHECK: %[[T:.*]] = spmd.axis_index {axes = ["tp"]}
// CHECK: %[[FIRST:.*]] = multiply %[[T]], %{{.*}} : tensor<i32>
// CHECK: %[[B:.*]] = broadcast_in_dim %[[FIRST]] {{.*}} : tensor<4x16xi32>
// CHECK: %[[LOCAL:.*]] = subtract %[[IDS]], %[[B]] : tensor<4x16xi32>
// CHECK: %[[D:.*]] = spmd.axis_index {axes = ["dp"]}
// CHECK: %[[IS0:.*]] = compare %[[D]], %{{.*}} {comparison_direction = EQ}
// CHECK: %[[BASE:.*]] = select %[[IS0]], %[[ZERO:.*]], %{{.*}} : tensor<64x64xf32>
// CHECK: %[[S:.*]] = scatter %[[BASE]], %[[LOCAL]], %[[G]] {{.*}} kind = add} : tensor<64x64xf32>
// CHECK: return %[[S]]
mesh @m = <["dp"=2, "tp"=4]>

func @main(%ids: tensor<8x16xi32, <@m, [{"dp"}, {}]>>, %g: tensor<8x16x64xf32, <@m, [{"dp"}, {}, {}]>>) -> tensor<256x64xf32, <@m, [{"tp"}, {}], unreduced={"dp"}>> {
  %zero = constant {value = dense<0.0>} : tensor<256x64xf32, <@m, [{"tp"}, {}]>>
  %0 = scatter %zero, %ids, %g {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, kind = add} : tensor<256x64xf32, <@m, [{"tp"}, {}], unreduced={"dp"}>>
  return %0
}

// -----

// A vocab-parallel lookup: the index is clamped globally, shifted to this device's rows, and the
// rows another device owns are zeroed after the gather (a partial sum over tp).
// CHECK: func @main(
// CHECK-SAME: %[[T:.*]]: tensor<64x8xf32>, %[[IDS:.*]]: tensor<4x5xi32>) -> tensor<4x5x8xf32>
// CHECK: %[[C:.*]] = clamp %{{.*}}, %[[IDS]], %{{.*}} : tensor<4x5xi32>
// CHECK: %[[L:.*]] = subtract %[[C]], %{{.*}} : tensor<4x5xi32>
// CHECK: %[[OK:.*]] = and %{{.*}}, %{{.*}} : tensor<4x5xi1>
// CHECK: %[[GA:.*]] = gather %[[T]], %[[L]] {{.*}} : tensor<4x5x8xf32>
// CHECK: %[[M:.*]] = broadcast_in_dim %[[OK]] {broadcast_dimensions = [0, 1]} : tensor<4x5x8xi1>
// CHECK: %[[R:.*]] = select %[[M]], %[[GA]], %{{.*}} : tensor<4x5x8xf32>
// CHECK: return %[[R]]
mesh @m = <["tp"=4]>

func @main(%t: tensor<256x8xf32, <@m, [{"tp"}, {}]>>, %ids: tensor<4x5xi32, <@m, [{}, {}]>>) -> tensor<4x5x8xf32, <@m, [{}, {}, {}], unreduced={"tp"}>> {
  %0 = gather %t, %ids {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 8]} : tensor<4x5x8xf32, <@m, [{}, {}, {}], unreduced={"tp"}>>
  return %0
}

// -----

// A remat barrier stays in the per-device program, on each device's blocks.
// CHECK-LABEL: func @remat_barrier(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>)
// CHECK-NEXT: %[[X:.*]], %[[W:.*]] = optimization_barrier %x, %w : tensor<8x32xf32>, tensor<32x16xf32>
// CHECK-NEXT: %[[D:.*]] = dot_general %[[X]], %[[W]] {{.*}} : tensor<8x16xf32>
// CHECK-NEXT: return %[[D]]
mesh @mesh = <["dp"=2, "tp"=4]>
func @remat_barrier(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, %w: tensor<32x64xf32, <@mesh, [{}, {"tp"}]>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {"tp"}]>> {
  %bx, %bw = optimization_barrier %x, %w : tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, tensor<32x64xf32, <@mesh, [{}, {"tp"}]>>
  %d = dot_general %bx, %bw {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32, <@mesh, [{"dp"}, {"tp"}]>>
  return %d
}

// -----

// Logical and bitwise reductions pending over "x" (`jnp.any`, `lax.reduce` with bitwise_and)
// become an spmd.all_reduce of the same kind; the per-device reduce is kept as it was.
// CHECK: func @main(%[[A:.*]]: tensor<2x6xi1>, %[[B:.*]]: tensor<2x6xi32>) -> (tensor<6xi1>, tensor<6xi32>)
// CHECK: %[[F:.*]] = constant {value = dense<false>} : tensor<i1>
// CHECK-NEXT: %[[OR:.*]] = reduce %[[A]], %[[F]] {dimensions = [0], kind = or} : tensor<6xi1>
// CHECK-NEXT: %[[ANY:.*]] = spmd.all_reduce %[[OR]] {axes = ["x"], kind = or, groups = {{\[}}[0, 1, 2, 3]]} : tensor<6xi1>
// CHECK: %[[AND:.*]] = reduce %[[B]], %{{.*}} {dimensions = [0], kind = and} : tensor<6xi32>
// CHECK-NEXT: %[[ALL:.*]] = spmd.all_reduce %[[AND]] {axes = ["x"], kind = and, groups = {{\[}}[0, 1, 2, 3]]} : tensor<6xi32>
// CHECK-NEXT: return %[[ANY]], %[[ALL]]
mesh @m = <["x"=4]>

func @main(%a: tensor<8x6xi1, <@m, [{"x"}, {}]>>, %b: tensor<8x6xi32, <@m, [{"x"}, {}]>>) -> (tensor<6xi1, <@m, [{}]>>, tensor<6xi32, <@m, [{}]>>) {
  %f = constant {value = dense<false>} : tensor<i1>
  %0 = reduce %a, %f {dimensions = [0], kind = or} : tensor<6xi1, <@m, [{}], unreduced={"x"}, unreduced_op=or>>
  %1 = all_reduce %0 {reduction_axes = ["x"]} : tensor<6xi1, <@m, [{}]>>
  %m1 = constant {value = dense<-1>} : tensor<i32>
  %2 = reduce %b, %m1 {dimensions = [0], kind = and} : tensor<6xi32, <@m, [{}], unreduced={"x"}, unreduced_op=and>>
  %3 = all_reduce %2 {reduction_axes = ["x"]} : tensor<6xi32, <@m, [{}]>>
  return %1, %3
}
