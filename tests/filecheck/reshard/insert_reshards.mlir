// insert-reshards: every op computes locally; data movement becomes explicit `reshard`s.
// RUN: shardc opt %s -p insert-reshards --split-input-file | filecheck %s

// Megatron MLP: column- then row-parallel. Both dots compute locally; the second leaves its
// result unreduced on "tp" and the only reshard is the reduction before the return.
// CHECK-LABEL: func @megatron
// CHECK-NEXT: %[[H:.*]] = dot_general %x, %w1 {{.*}} : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
// CHECK-NEXT: %[[A:.*]] = tanh %[[H]] : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
// CHECK-NEXT: %[[Y:.*]] = dot_general %[[A]], %w2 {{.*}} : tensor<16x64xf32, <@mesh, [{"dp"}, {}], unreduced={"tp"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[Y]] : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: return %[[R]]
mesh @mesh = <["dp"=2, "tp"=4]>
func @megatron(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {
  %h = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
  %a = tanh %h : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
  %y = dot_general %a, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32, <@mesh, [{"dp"}, {?}]>>
  return %y
}

// -----

// Data parallel + tensor parallel, already compatible: nothing to insert; open dims close.
// CHECK-LABEL: func @dp_tp
// CHECK-NEXT: %[[D:.*]] = dot_general %x, %w {{.*}} : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
// CHECK-NEXT: %[[B:.*]] = add %[[D]], %[[D]] : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
// CHECK-NEXT: return %[[B]]
// CHECK-NOT: reshard
mesh @mesh = <["dp"=2, "tp"=4]>
func @dp_tp(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>) -> tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32, <@mesh, [{"dp", ?}, {"tp", ?}]>>
  %1 = add %0, %0 : tensor<16x256xf32, <@mesh, [{"dp"}, {"tp"}]>>
  return %1
}

// -----

// Conflicting operand shardings: the factor the larger tensors agree on wins, so the smaller
// operand %b is the one resharded.
// CHECK-LABEL: func @conflict
// CHECK-NEXT: %[[RB:.*]] = reshard %b : tensor<8x32xf32, <@m, [{}, {}]>>
// CHECK-NEXT: %[[D:.*]] = dot_general %a, %[[RB]] {{.*}} : tensor<64x8xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: return %[[D]]
mesh @m = <["x"=4, "y"=2]>
func @conflict(%a: tensor<64x32xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x32xf32, <@m, [{}, {"x"}]>>) -> tensor<64x8xf32, <@m, [{"x"}, {}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [1]} : tensor<64x8xf32, <@m, [{"x"}, {}]>>
  return %0
}

// -----

// Element-wise ops with conflicting operands: the operand that disagrees with the result and
// the other operand is resharded (an axis moving dims).
// CHECK-LABEL: func @elementwise_conflict
// CHECK-NEXT: %[[RB:.*]] = reshard %b : tensor<16x64xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %[[S:.*]] = add %a, %[[RB]] : tensor<16x64xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=4, "y"=2]>
func @elementwise_conflict(%a: tensor<16x64xf32, <@m, [{"x"}, {}]>>, %b: tensor<16x64xf32, <@m, [{}, {"x"}]>>) -> tensor<16x64xf32, <@m, [{"x"}, {}]>> {
  %0 = add %a, %b : tensor<16x64xf32, <@m, [{"x"}, {}]>>
  return %0
}

// -----

// Shardy's dot_incompatible_same_non_contracting_dims_out_empty: k="y" (both operands) wins,
// then j="x"; the lhs loses "x", the result is unreduced on "y".
// CHECK-LABEL: func @dot_incompatible
// CHECK-NEXT: %[[L:.*]] = reshard %arg0 : tensor<8x32xf32, <@m, [{}, {"y"}]>>
// CHECK-NEXT: %[[D:.*]] = dot_general %[[L]], %arg1 {{.*}} : tensor<8x16xf32, <@m, [{}, {"x"}], unreduced={"y"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[D]] : tensor<8x16xf32, <@m, [{}, {}]>>
// CHECK-NEXT: return %[[R]]
mesh @m = <["x"=4, "y"=2]>
func @dot_incompatible(%arg0: tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>, %arg1: tensor<32x16xf32, <@m, [{"y"}, {"x"}]>>) -> tensor<8x16xf32, <@m, [{}, {}]>> {
  %0 = dot_general %arg0, %arg1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{}, {}]>>
  return %0
}

// -----

// One value used twice with two different layouts gets two reshards.
// CHECK-LABEL: func @a_times_a
// CHECK-NEXT: %[[L:.*]] = reshard %a : tensor<16x16xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %[[R:.*]] = reshard %a : tensor<16x16xf32, <@m, [{}, {"y"}]>>
// CHECK-NEXT: %[[D:.*]] = dot_general %[[L]], %[[R]] {{.*}} : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: return %[[D]]
mesh @m = <["x"=4, "y"=2]>
func @a_times_a(%a: tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<16x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = dot_general %a, %a {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
  return %0
}

// -----

// A sharded contracting dim whose result is wanted sharded on the same axis: the dot result
// stays unreduced and the consumer reshards it directly (a reduce_scatter once lowered).
// CHECK-LABEL: func @unreduced_to_sharded
// CHECK-NEXT: %[[D:.*]] = dot_general %a, %b {{.*}} : tensor<8x16xf32, <@m, [{"x"}, {}], unreduced={"y"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[D]] : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: %[[T:.*]] = tanh %[[R]] : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: return %[[T]]
mesh @m = <["x"=4, "y"=2]>
func @unreduced_to_sharded(%a: tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>, %b: tensor<32x16xf32, <@m, [{"y"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  %1 = tanh %0 : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %1
}

// -----

// Two consumers that need the same reduced layout share one reshard.
// CHECK-LABEL: func @shared_reduction
// CHECK-NEXT: %[[D:.*]] = dot_general {{.*}} unreduced={"y"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[D]] : tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %[[T:.*]] = tanh %[[R]]
// CHECK-NEXT: %[[S:.*]] = add %[[T]], %[[R]]
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=4, "y"=2]>
func @shared_reduction(%a: tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>, %b: tensor<32x16xf32, <@m, [{"y"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  %1 = tanh %0 : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  %2 = add %1, %0 : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  return %2
}

// -----

// Function results honour their declared shardings.
// CHECK-LABEL: func @result_reshard
// CHECK-NEXT: %[[T:.*]] = tanh %a : tensor<16x64xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[T]] : tensor<16x64xf32, <@m, [{}, {"x"}]>>
// CHECK-NEXT: return %[[R]], %[[T]]
mesh @m = <["x"=4, "y"=2]>
func @result_reshard(%a: tensor<16x64xf32, <@m, [{"x"}, {}]>>) -> (tensor<16x64xf32, <@m, [{}, {"x"}]>>, tensor<16x64xf32, <@m, [{"x"}, {}]>>) {
  %0 = tanh %a : tensor<16x64xf32, <@m, [{"x"}, {}]>>
  return %0, %0
}

// -----

// sharding_constraint becomes a reshard, or disappears when it changes nothing; sharding
// groups and propagation barriers are dropped.
// CHECK-LABEL: func @constraints
// CHECK-NEXT: %[[C:.*]] = reshard %a : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: %[[T:.*]] = tanh %[[C]] : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: return %[[T]]
mesh @m = <["x"=4, "y"=2]>
func @constraints(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = sharding_constraint %a : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
  %1 = sharding_constraint %0 : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
  sharding_group %1 {group_id = 0}
  %2 = propagation_barrier %1 {allowed_direction = FORWARD} : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
  %3 = tanh %2 : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
  return %3
}

// -----

// Permutation factors must be unsharded: a slice along a sharded dim gathers it first.
// CHECK-LABEL: func @slice
// CHECK-NEXT: %[[R:.*]] = reshard %a : tensor<16x8xf32, <@m, [{}, {"y"}]>>
// CHECK-NEXT: %[[S:.*]] = slice %[[R]] {{.*}} : tensor<8x8xf32, <@m, [{}, {"y"}]>>
// CHECK-NEXT: %[[B:.*]] = reshard %[[S]] : tensor<8x8xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: return %[[B]]
mesh @m = <["x"=4, "y"=2]>
func @slice(%a: tensor<16x8xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8x8xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = slice %a {start_indices = [0, 0], limit_indices = [8, 8], strides = [1, 1]} : tensor<8x8xf32, <@m, [{"x"}, {"y"}]>>
  return %0
}

// -----

// Sub-axes: a reshape splits "x" across two dims; the result is then sharded further.
// CHECK-LABEL: func @sub_axes
// CHECK-NEXT: %[[R:.*]] = reshape %a : tensor<32xf32, <@m, [{"x"}]>>
// CHECK-NEXT: %[[S:.*]] = reshard %[[R]] : tensor<32xf32, <@m, [{"x":(1)2}]>>
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=4, "y"=2]>
func @sub_axes(%a: tensor<2x16xf32, <@m, [{"x":(1)2}, {"x":(2)2}]>>) -> tensor<32xf32, <@m, [{"x":(1)2}]>> {
  %0 = reshape %a : tensor<32xf32, <@m, [{"x"}]>>
  return %0
}

// -----

// An op without a sharding rule computes on replicated operands and gives a replicated result.
// CHECK-LABEL: func @no_rule
// CHECK-NEXT: %[[R:.*]] = reshard %a : tensor<16xf32, <@m, [{}]>>
// CHECK-NEXT: %[[C:.*]] = custom_call %[[R]] {{.*}} : tensor<16xf32, <@m, [{}]>>
// CHECK-NEXT: %[[S:.*]] = reshard %[[C]] : tensor<16xf32, <@m, [{"x"}]>>
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=4, "y"=2]>
func @no_rule(%a: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {
  %0 = custom_call %a {call_target_name = "opaque"} : tensor<16xf32, <@m, [{"x"}]>>
  return %0
}

// -----

// Calls: operands are resharded to the callee's argument shardings; the call produces the
// callee's result sharding and its users reshard from that.
// CHECK-LABEL: func private @callee
// CHECK-LABEL: func @caller
// CHECK-NEXT: %[[A:.*]] = reshard %a : tensor<16xf32, <@m, [{"y"}]>>
// CHECK-NEXT: %[[C:.*]] = call %[[A]] {callee = @callee} : tensor<16xf32, <@m, [{"y"}]>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[C]] : tensor<16xf32, <@m, [{"x"}]>>
// CHECK-NEXT: return %[[R]]
mesh @m = <["x"=4, "y"=2]>
func private @callee(%v: tensor<16xf32, <@m, [{"y"}]>>) -> tensor<16xf32, <@m, [{"y"}]>> {
  %0 = tanh %v : tensor<16xf32, <@m, [{"y"}]>>
  return %0
}
func @caller(%a: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {
  %0 = call %a {callee = @callee} : tensor<16xf32, <@m, [{"x"}]>>
  return %0
}

// -----

// A dynamic_slice's sliced dim must be replicated: its operand is gathered along "dp" first.
// top_k along its tp-sharded last dim is a tree: each device's top 2 of its 8 columns (rows
// kept on dp), the 4 local winners gathered along tp, the top 2 of those 8; the winners'
// indices are their column in the block plus 8 times the block.
// CHECK: func @main(%[[X:.*]]: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %[[I:.*]]: tensor<i32, <@mesh, []>>)
// CHECK-NEXT: %[[R:.*]] = reshard %[[X]] : tensor<16x32xf32, <@mesh, [{}, {"tp"}]>>
// CHECK-NEXT: %[[S:.*]] = dynamic_slice %[[R]], %[[I]], %[[I]] {slice_sizes = [4, 32]} : tensor<4x32xf32, <@mesh, [{}, {"tp"}]>>
// CHECK-NEXT: %[[B:.*]] = reshape %[[X]] : tensor<16x4x8xf32, <@mesh, [{"dp"}, {"tp"}, {}]>>
// CHECK-NEXT: %[[LV:.*]], %[[LI:.*]] = top_k %[[B]] {k = 2} : tensor<16x4x2xf32, <@mesh, [{"dp"}, {"tp"}, {}]>>, tensor<16x4x2xi32, <@mesh, [{"dp"}, {"tp"}, {}]>>
// CHECK-NEXT: %[[BLK:.*]] = iota {iota_dimension = 1} : tensor<16x4x2xi32
// CHECK-NEXT: %[[EIGHT:.*]] = constant {value = dense<8>} : tensor<i32>
// CHECK-NEXT: %[[EIGHTS:.*]] = broadcast_in_dim %[[EIGHT]]
// CHECK-NEXT: %[[OFF:.*]] = multiply %[[BLK]], %[[EIGHTS]]
// CHECK-NEXT: %[[GI:.*]] = add %[[LI]], %[[OFF]]
// CHECK-NEXT: %[[CV:.*]] = reshape %[[LV]] : tensor<16x8xf32, <@mesh, [{"dp"}, {"tp"}]>>
// CHECK-NEXT: %[[AV:.*]] = reshard %[[CV]] : tensor<16x8xf32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: %[[CI:.*]] = reshape %[[GI]] : tensor<16x8xi32, <@mesh, [{"dp"}, {"tp"}]>>
// CHECK-NEXT: %[[AI:.*]] = reshard %[[CI]] : tensor<16x8xi32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: %[[V:.*]], %[[W:.*]] = top_k %[[AV]] {k = 2} : tensor<16x2xf32, <@mesh, [{"dp"}, {}]>>, tensor<16x2xi32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: %[[W3:.*]] = reshape %[[W]] : tensor<16x2x1xi32
// CHECK-NEXT: %[[IX:.*]] = gather %[[AI]], %[[W3]]
// CHECK-NEXT: %[[OUT:.*]] = reshard %[[V]] : tensor<16x2xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: return %[[S]], %[[OUT]]
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %i: tensor<i32, <@mesh, []>>) -> (tensor<4x32xf32, <@mesh, [{}, {"tp"}]>>, tensor<16x2xf32, <@mesh, [{}, {}]>>) {
  %0 = dynamic_slice %x, %i, %i {slice_sizes = [4, 32]} : tensor<4x32xf32, <@mesh, [{}, {"tp"}]>>
  %1, %2 = top_k %x {k = 2} : tensor<16x2xf32, <@mesh, [{}, {}]>>, tensor<16x2xi32, <@mesh, [{}, {}]>>
  return %0, %1
}

// -----

// A cumulative sum along a dim sharded on tp (jnp.cumsum's reduce_window): a scan per block,
// each block's total, an all_gather of the 4 totals (not of the 16 elements), the totals of the
// blocks before each one, added back.
// CHECK: func @main(%[[X:.*]]: tensor<4x16xf32, <@m, [{}, {"tp"}]>>)
// CHECK: %[[X2:.*]] = reshape %[[X]] : tensor<4x4x4xf32, <@m, [{}, {"tp"}, {}]>>
// CHECK-NEXT: %[[SCAN:.*]] = reduce_window %[[X2]], %{{.*}} {window_dimensions = [1, 1, 4], padding = {{\[}}[0, 0], [0, 0], [3, 0]], kind = add} : tensor<4x4x4xf32, <@m, [{}, {"tp"}, {}]>>
// CHECK: %[[TOT:.*]] = reduce %[[X2]], %{{.*}} {dimensions = [2], kind = add} : tensor<4x4xf32, <@m, [{}, {"tp"}]>>
// CHECK-NEXT: %[[ALL:.*]] = reshard %[[TOT]] : tensor<4x4xf32, <@m, [{}, {}]>>
// CHECK-NEXT: %[[EX:.*]] = reduce_window %[[ALL]], %{{.*}} {window_dimensions = [1, 4], padding = {{\[}}[0, 0], [4, 0]], kind = add} : tensor<4x5xf32, <@m, [{}, {}]>>
// CHECK-NEXT: %[[BEFORE:.*]] = slice %[[EX]] {start_indices = [0, 0], limit_indices = [4, 4]}
// CHECK-NEXT: %[[MINE:.*]] = reshard %[[BEFORE]] : tensor<4x4xf32, <@m, [{}, {"tp"}]>>
// CHECK-NEXT: %[[B:.*]] = broadcast_in_dim %[[MINE]] {broadcast_dimensions = [0, 1]} : tensor<4x4x4xf32, <@m, [{}, {"tp"}, {}]>>
// CHECK-NEXT: %[[SUM:.*]] = add %[[SCAN]], %[[B]]
// CHECK-NEXT: %[[Y:.*]] = reshape %[[SUM]] : tensor<4x16xf32, <@m, [{}, {"tp"}]>>
// CHECK-NEXT: return %[[Y]]
mesh @m = <["tp"=4]>

func @main(%x: tensor<4x16xf32, <@m, [{}, {"tp"}]>>) -> tensor<4x16xf32, <@m, [{}, {"tp"}]>> {
  %zero = constant {value = dense<0.0>} : tensor<f32, <@m, []>>
  %0 = reduce_window %x, %zero {window_dimensions = [1, 16], padding = [[0, 0], [15, 0]], kind = add} : tensor<4x16xf32, <@m, [{}, {"tp"}]>>
  return %0
}

// -----

// Partial sums two consumers want in two layouts are reduced once: the second consumer reshards
// from the first's (reduced) layout instead of reducing again.
// CHECK: %[[P:.*]] = dot_general {{.*}} unreduced={"x"}>>
// CHECK-NEXT: %[[R1:.*]] = reshard %[[P]] : tensor<8x8xf32, <@m, [{"y"}, {}]>>
// CHECK-NEXT: %[[R2:.*]] = reshard %[[R1]] : tensor<8x8xf32, <@m, [{}, {"y"}]>>
// CHECK-NEXT: return %[[R1]], %[[R2]]
mesh @m = <["x"=2, "y"=2]>

func @main(%a: tensor<8x16xf32, <@m, [{}, {"x"}]>>, %b: tensor<16x8xf32, <@m, [{"x"}, {}]>>) -> (tensor<8x8xf32, <@m, [{"y"}, {}]>>, tensor<8x8xf32, <@m, [{}, {"y"}]>>) {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x8xf32, <@m, [{}, {}]>>
  return %0, %0
}

// -----

// A remat barrier is the identity on each value: operand k is laid out as result k (here %w
// moves from tp to replicated, %x passes as it is), never gathered wholesale.
// CHECK-LABEL: func @remat_barrier
// CHECK-NEXT: %[[W:.*]] = reshard %w : tensor<32x64xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: %[[X:.*]], %[[V:.*]] = optimization_barrier %x, %[[W]] : tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, tensor<32x64xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: %[[D:.*]] = dot_general %[[X]], %[[V]] {{.*}} : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: return %[[D]]
mesh @mesh = <["dp"=2, "tp"=4]>
func @remat_barrier(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, %w: tensor<32x64xf32, <@mesh, [{}, {"tp"}]>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {
  %bx, %bw = optimization_barrier %x, %w : tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, tensor<32x64xf32, <@mesh, [{}, {}]>>
  %d = dot_general %bx, %bw {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>
  return %d
}

// -----

// Max pooling and its gradient with the pooled dim sharded on "tp": the windows (size = stride,
// no padding) tile each device's block, so both compute locally and nothing is inserted. Windows
// of 3 with stride 2 straddle two blocks: that dim is gathered first.
// CHECK-LABEL: func @tiled_pool
// CHECK: %[[Y:.*]] = reduce_window %x, %{{.*}} : tensor<8x8x3xf32, <@m, [{"dp"}, {"tp"}, {}]>>
// CHECK-NEXT: %[[DX:.*]] = select_and_scatter %x, %g, %{{.*}} : tensor<8x16x6xf32, <@m, [{"dp"}, {"tp"}, {}]>>
// CHECK-NEXT: return %[[Y]], %[[DX]]
// CHECK-NOT: reshard
// CHECK-LABEL: func @straddling_pool
// CHECK: %[[ALL:.*]] = reshard %x : tensor<8x16xf32, <@m, [{"dp"}, {}]>>
// CHECK-NEXT: %[[P:.*]] = reduce_window %[[ALL]], %{{.*}} : tensor<8x7xf32, <@m, [{"dp"}, {}]>>
mesh @m = <["dp"=2, "tp"=4]>

func @tiled_pool(%x: tensor<8x16x6xf32, <@m, [{"dp"}, {"tp"}, {}]>>, %g: tensor<8x8x3xf32, <@m, [{"dp"}, {"tp"}, {}]>>) -> (tensor<8x8x3xf32, <@m, [{"dp"}, {"tp"}, {}]>>, tensor<8x16x6xf32, <@m, [{"dp"}, {"tp"}, {}]>>) {
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %y = reduce_window %x, %ninf {window_dimensions = [1, 2, 2], window_strides = [1, 2, 2], kind = maximum} : tensor<8x8x3xf32, <@m, [{"dp"}, {"tp"}, {}]>>
  %dx = select_and_scatter %x, %g, %zero {select = @ge, kind = add, window_dimensions = [1, 2, 2], window_strides = [1, 2, 2]} : tensor<8x16x6xf32, <@m, [{"dp"}, {"tp"}, {}]>>
  return %y, %dx
}

func @straddling_pool(%x: tensor<8x16xf32, <@m, [{"dp"}, {"tp"}]>>) -> tensor<8x7xf32, <@m, [{"dp"}, {}]>> {
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %y = reduce_window %x, %ninf {window_dimensions = [1, 3], window_strides = [1, 2], kind = maximum} : tensor<8x7xf32, <@m, [{"dp"}, {}]>>
  return %y
}

func private @ge(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {
  %0 = compare %a, %b {comparison_direction = GE} : tensor<i1>
  return %0
}

// -----

// A variadic scatter whose body adds every input (one reduction) with data-parallel updates:
// each device scatters its own, both results are partial sums on "dp". A body that is no
// reduction (a + b * b) cannot leave partial results: its updates are gathered along "dp".
// CHECK-LABEL: func @scatter_bodies
// CHECK-NEXT: %[[S:.*]], %[[T:.*]] = scatter %t, %n, %i, %u, %v {{.*}}body = @add_both} : tensor<12x8xf32, <@m, [{}, {"tp"}], unreduced={"dp"}>>, tensor<12x8xi32, <@m, [{}, {"tp"}], unreduced={"dp"}>>
// CHECK: %[[I:.*]] = reshard %i : tensor<8x5xi32, <@m, [{}, {}]>>
// CHECK-NEXT: %[[U:.*]] = reshard %u : tensor<8x5x8xf32, <@m, [{}, {}, {"tp"}]>>
// CHECK-NEXT: %[[G:.*]] = scatter %{{.*}}, %[[I]], %[[U]] {{.*}}body = @square_add} : tensor<12x8xf32, <@m, [{}, {"tp"}]>>
// CHECK-NEXT: %[[RS:.*]] = reshard %[[S]] : tensor<12x8xf32, <@m, [{}, {"tp"}]>>
// CHECK-NEXT: %[[RT:.*]] = reshard %[[T]] : tensor<12x8xi32, <@m, [{}, {"tp"}]>>
// CHECK-NEXT: return %[[RS]], %[[RT]], %[[G]]
mesh @m = <["dp"=2, "tp"=4]>

func @scatter_bodies(%t: tensor<12x8xf32, <@m, [{}, {"tp"}]>>, %n: tensor<12x8xi32, <@m, [{}, {"tp"}]>>, %i: tensor<8x5xi32, <@m, [{"dp"}, {}]>>, %u: tensor<8x5x8xf32, <@m, [{"dp"}, {}, {"tp"}]>>, %v: tensor<8x5x8xi32, <@m, [{"dp"}, {}, {"tp"}]>>) -> (tensor<12x8xf32, <@m, [{}, {"tp"}]>>, tensor<12x8xi32, <@m, [{}, {"tp"}]>>, tensor<12x8xf32, <@m, [{}, {"tp"}]>>) {
  %0, %1 = scatter %t, %n, %i, %u, %v {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, body = @add_both} : tensor<12x8xf32, <@m, [{}, {"tp"}]>>, tensor<12x8xi32, <@m, [{}, {"tp"}]>>
  %2 = scatter %t, %i, %u {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, body = @square_add} : tensor<12x8xf32, <@m, [{}, {"tp"}]>>
  return %0, %1, %2
}

func private @add_both(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %0 = add %a, %c : tensor<f32>
  %1 = add %b, %d : tensor<i32>
  return %0, %1
}

func private @square_add(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = multiply %b, %b : tensor<f32>
  %1 = add %a, %0 : tensor<f32>
  return %1
}

// -----

// The gradient of an embedding lookup in a private function (JAX outlines `jnp.take`), in a
// module that also declares JAX's axis-less `@empty_mesh`, so close-shardings left the values
// propagation did not reach without a sharding. The scatter-add of batch-sharded updates
// leaves partial sums on "dp"; the callee's result declares no sharding, which means
// replicated (the caller reads it so), so they are reduced before the return, not returned
// unreduced (the Flax NNX step's wrong embedding gradient).
// CHECK-LABEL: func @embedding_grad
// CHECK-NEXT: %[[G:.*]] = call %i, %u {callee = @take_grad} : tensor<16x8xf32>
// CHECK-NEXT: %[[P:.*]] = multiply %[[G]], %t : tensor<16x8xf32>
// CHECK-NEXT: return %[[P]]
// CHECK-LABEL: func private @take_grad
// CHECK: %[[Z:.*]] = broadcast_in_dim
// CHECK-NEXT: %[[S:.*]] = scatter %[[Z]], %i, %u {{.*}} : tensor<16x8xf32, <@mesh, [{}, {}], unreduced={"dp"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[S]] : tensor<16x8xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: return %[[R]]
mesh @empty_mesh = <[]>
mesh @mesh = <["dp"=2, "tp"=4]>

func @embedding_grad(%t: tensor<16x8xf32>, %i: tensor<4x6x1xi32, <@mesh, [{"dp"}, {}, {}]>>, %u: tensor<4x6x8xf32, <@mesh, [{"dp"}, {}, {}]>>) -> tensor<16x8xf32> {
  %0 = call %i, %u {callee = @take_grad} : tensor<16x8xf32>
  %1 = multiply %0, %t : tensor<16x8xf32>
  return %1
}

func private @take_grad(%i: tensor<4x6x1xi32, <@mesh, [{"dp"}, {}, {}]>>, %u: tensor<4x6x8xf32, <@mesh, [{"dp"}, {}, {}]>>) -> tensor<16x8xf32> {
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %0 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<16x8xf32>
  %1 = scatter %0, %i, %u {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, kind = add} : tensor<16x8xf32>
  return %1
}

// -----

// The same at the entry function: a contraction sharded on "tp" whose result nobody gave a
// sharding is reduced before the return (a result without a sharding is replicated).
// CHECK-LABEL: func @unreduced_to_undeclared_result
// CHECK-NEXT: %[[D:.*]] = dot_general %x, %w {{.*}} : tensor<16x4xf32, <@mesh, [{}, {}], unreduced={"tp"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[D]] : tensor<16x4xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: return %[[R]]
mesh @empty_mesh = <[]>
mesh @mesh = <["dp"=2, "tp"=4]>

func @unreduced_to_undeclared_result(%x: tensor<16x8xf32, <@mesh, [{}, {"tp"}]>>, %w: tensor<8x4xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x4xf32> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x4xf32>
  return %0
}

// -----

// A collective written against an operand propagation left without a sharding (replicated)
// gets it replicated, though the contraction producing it now leaves partial sums.
// CHECK-LABEL: func @collective_of_undeclared
// CHECK-NEXT: %[[D:.*]] = dot_general %x, %w {{.*}} : tensor<16x4xf32, <@mesh, [{}, {}], unreduced={"tp"}>>
// CHECK-NEXT: %[[R:.*]] = reshard %[[D]] : tensor<16x4xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: %[[S:.*]] = all_slice %[[R]] {slicing_axes = {{\[\[}}"dp"], []]} : tensor<16x4xf32, <@mesh, [{"dp"}, {}]>>
// CHECK-NEXT: return %[[S]]
mesh @mesh = <["dp"=2, "tp"=4]>

func @collective_of_undeclared(%x: tensor<16x8xf32, <@mesh, [{}, {"tp"}]>>, %w: tensor<8x4xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x4xf32, <@mesh, [{"dp"}, {}]>> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x4xf32>
  %1 = all_slice %0 {slicing_axes = [["dp"], []]} : tensor<16x4xf32, <@mesh, [{"dp"}, {}]>>
  return %1
}
