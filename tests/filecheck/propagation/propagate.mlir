// RUN: shardc opt %s -p propagate --split-input-file | filecheck %s

// Element-wise chains carry the sharding forward, and back to an unannotated argument.
// CHECK-LABEL: func @elementwise_chain
// CHECK-SAME: %[[A:.*]]: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>, %[[B:.*]]: tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-NEXT: %[[T:.*]] = tanh %[[A]] : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-NEXT: %[[S:.*]] = add %[[T]], %[[B]] : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=2, "y"=4]>

func @elementwise_chain(%a: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = tanh %a : tensor<8x16xf32>
  %1 = add %0, %b : tensor<8x16xf32>
  return %1
}

// -----

// Megatron MLP: column-parallel then row-parallel. The hidden activation is sharded on both
// axes; the output keeps only the batch axis (the contracting "tp" becomes a reduction).
// CHECK-LABEL: func @megatron
// CHECK: %[[H:.*]] = dot_general %{{.*}}, %{{.*}} {{.*}} : tensor<16x256xf32, <@m, [{"dp", ?}, {"tp", ?}]>>
// CHECK-NEXT: %[[G:.*]] = tanh %[[H]] : tensor<16x256xf32, <@m, [{"dp", ?}, {"tp", ?}]>>
// CHECK-NEXT: %[[O:.*]] = dot_general %[[G]], %{{.*}} {{.*}} : tensor<16x64xf32, <@m, [{"dp", ?}, {?}]>>
// CHECK-NEXT: return %[[O]]
mesh @m = <["dp"=2, "tp"=4]>

func @megatron(%x: tensor<16x64xf32, <@m, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@m, [{}, {"tp"}]>>, %w2: tensor<256x64xf32, <@m, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = tanh %0 : tensor<16x256xf32>
  %2 = dot_general %1, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  return %2
}

// -----

// Backward through a matmul: the result's sharding reaches both operands' free dims.
// CHECK-LABEL: func @matmul_backward
// CHECK-SAME: %{{.*}}: tensor<8x32xf32, <@m, [{"x", ?}, {?}]>>, %{{.*}}: tensor<32x16xf32, <@m, [{?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @matmul_backward(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  return %0
}

// -----

// Reshape 32 -> 4x8 splits "y" (4) and "x" (2) across the two new dims.
// CHECK-LABEL: func @reshape_split
// CHECK: reshape %{{.*}} : tensor<4x8xf32, <@m, [{"y", ?}, {"x", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @reshape_split(%a: tensor<32xf32, <@m, [{"y", "x"}]>>) -> tensor<4x8xf32> {
  %0 = reshape %a : tensor<4x8xf32>
  return %0
}

// -----

// Backward through a merge: 2x16 -> 32 sharded "y"=4 splits "y" into sub-axes.
// CHECK-LABEL: func @reshape_sub_axes
// CHECK-SAME: %{{.*}}: tensor<2x16xf32, <@m, [{"y":(1)2, ?}, {"y":(2)2, ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @reshape_sub_axes(%a: tensor<2x16xf32>) -> tensor<32xf32, <@m, [{"y"}]>> {
  %0 = reshape %a : tensor<32xf32>
  return %0
}

// -----

// broadcast_in_dim: forward along the mapped dim, the new dim stays open; backward too.
// CHECK-LABEL: func @broadcast
// CHECK: %[[B:.*]] = broadcast_in_dim %{{.*}} {broadcast_dimensions = [1]} : tensor<4x8xf32, <@m, [{?}, {"y", ?}]>>
// CHECK-LABEL: func @broadcast_backward
// CHECK-SAME: %{{.*}}: tensor<8xf32, <@m, [{"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @broadcast(%a: tensor<8xf32, <@m, [{"y"}]>>) -> tensor<4x8xf32> {
  %0 = broadcast_in_dim %a {broadcast_dimensions = [1]} : tensor<4x8xf32>
  return %0
}

func @broadcast_backward(%a: tensor<8xf32>) -> tensor<4x8xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = broadcast_in_dim %a {broadcast_dimensions = [1]} : tensor<4x8xf32>
  return %0
}

// -----

// A reduction keeps the kept dims' axes and drops the reduced dim's.
// CHECK-LABEL: func @reduce
// CHECK: reduce %{{.*}}, %{{.*}} {dimensions = [1], kind = add} : tensor<8xf32, <@m, [{"x", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @reduce(%a: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8xf32> {
  %z = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce %a, %z {dimensions = [1], kind = add} : tensor<8xf32>
  return %0
}

// -----

// Transpose permutes the dims' axes.
// CHECK-LABEL: func @transpose
// CHECK: transpose %{{.*}} {permutation = [1, 0]} : tensor<16x8xf32, <@m, [{"y", ?}, {"x", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @transpose(%a: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<16x8xf32> {
  %0 = transpose %a {permutation = [1, 0]} : tensor<16x8xf32>
  return %0
}

// -----

// Attention: batched dot_general (batch and heads) then softmax over the key dim.
// CHECK-LABEL: func @attention
// CHECK: %[[S:.*]] = dot_general %{{.*}}, %{{.*}} {{.*}} : tensor<2x4x8x8xf32, <@m, [{"dp", ?}, {"tp", ?}, {?}, {?}]>>
// CHECK: %[[MAX:.*]] = reduce %[[S]], %{{.*}} {dimensions = [3], kind = maximum} : tensor<2x4x8xf32, <@m, [{"dp", ?}, {"tp", ?}, {?}]>>
// CHECK: %[[E:.*]] = exponential %{{.*}} : tensor<2x4x8x8xf32, <@m, [{"dp", ?}, {"tp", ?}, {?}, {?}]>>
// CHECK: %[[P:.*]] = divide %[[E]], %{{.*}} : tensor<2x4x8x8xf32, <@m, [{"dp", ?}, {"tp", ?}, {?}, {?}]>>
// CHECK: dot_general %[[P]], %{{.*}} {{.*}} : tensor<2x4x8x16xf32, <@m, [{"dp", ?}, {"tp", ?}, {?}, {?}]>>
mesh @m = <["dp"=2, "tp"=4]>

func @attention(%q: tensor<2x4x8x16xf32, <@m, [{"dp"}, {"tp"}, {}, {}]>>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %0 = dot_general %q, %k {lhs_batching_dims = [0, 1], rhs_batching_dims = [0, 1], lhs_contracting_dims = [3], rhs_contracting_dims = [3]} : tensor<2x4x8x8xf32>
  %ninf = constant {value = dense<-inf>} : tensor<f32>
  %1 = reduce %0, %ninf {dimensions = [3], kind = maximum} : tensor<2x4x8xf32>
  %2 = broadcast_in_dim %1 {broadcast_dimensions = [0, 1, 2]} : tensor<2x4x8x8xf32>
  %3 = subtract %0, %2 : tensor<2x4x8x8xf32>
  %4 = exponential %3 : tensor<2x4x8x8xf32>
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %5 = reduce %4, %zero {dimensions = [3], kind = add} : tensor<2x4x8xf32>
  %6 = broadcast_in_dim %5 {broadcast_dimensions = [0, 1, 2]} : tensor<2x4x8x8xf32>
  %7 = divide %4, %6 : tensor<2x4x8x8xf32>
  %8 = dot_general %7, %v {lhs_batching_dims = [0, 1], rhs_batching_dims = [0, 1], lhs_contracting_dims = [3], rhs_contracting_dims = [2]} : tensor<2x4x8x16xf32>
  return %8
}

// -----

// User priorities: the p0 batch sharding of %x wins over the p1 sharding of %w on the same
// axis "x"; %w's dim 0 gets its own "x" only after p0 has settled.
// CHECK-LABEL: func @priorities
// CHECK: dot_general %{{.*}}, %{{.*}} {{.*}} : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @priorities(%x: tensor<8x32xf32, <@m, [{"x"}p0, {?}]>>, %w: tensor<32x16xf32, <@m, [{"x"}p1, {"y"}p0]>>) -> tensor<8x16xf32> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  return %0
}

// -----

// Closed dims never gain axes; open ones append minor axes. Under the aggressive strategy a
// closed operand is skipped, not a blocker: %b still gets "y" from the result.
// CHECK-LABEL: func @open_closed
// CHECK-SAME: %{{.*}}: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %{{.*}}: tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @open_closed(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x16xf32, <@m, [{?}, {?}]>>) -> tensor<8x16xf32, <@m, [{"x", ?}, {"y"}]>> {
  %0 = add %a, %b : tensor<8x16xf32>
  return %0
}

// -----

// Members of a sharding group end with one sharding.
// CHECK-LABEL: func @groups
// CHECK: %[[A:.*]] = tanh %{{.*}} : tensor<8x8xf32, <@m, [{"x", ?}, {?}]>>
// CHECK: %[[B:.*]] = negate %{{.*}} : tensor<8x8xf32, <@m, [{"x", ?}, {?}]>>
mesh @m = <["x"=2, "y"=4]>

func @groups(%a: tensor<8x8xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = tanh %a : tensor<8x8xf32>
  %1 = negate %b : tensor<8x8xf32>
  sharding_group %0 {group_id = 0}
  sharding_group %1 {group_id = 0}
  return %0, %1
}

// -----

// A forward-only barrier stops the result's sharding from flowing back.
// CHECK-LABEL: func @barrier
// CHECK-SAME: (%{{.*}}: tensor<8xf32>) -> tensor<8xf32, <@m, [{"y"}]>>
// CHECK: propagation_barrier %{{.*}} {allowed_direction = FORWARD} : tensor<8xf32, <@m, [{"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @barrier(%a: tensor<8xf32>) -> tensor<8xf32, <@m, [{"y"}]>> {
  %0 = propagation_barrier %a {allowed_direction = FORWARD} : tensor<8xf32>
  %1 = tanh %0 : tensor<8xf32>
  return %1
}

// -----

// A constraint pins a value mid-graph; its open dim lets propagation add more.
// CHECK-LABEL: func @constraint
// CHECK: %[[T:.*]] = tanh %{{.*}} : tensor<8x16xf32, <@m, [{"x", ?}, {?}]>>
// CHECK: %[[C:.*]] = sharding_constraint %[[T]] : tensor<8x16xf32, <@m, [{"y"}, {?}]>>
// CHECK: negate %[[C]] : tensor<8x16xf32, <@m, [{"y", ?}, {?}]>>
mesh @m = <["x"=2, "y"=4]>

func @constraint(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32> {
  %0 = tanh %a : tensor<8x16xf32>
  %1 = sharding_constraint %0 : tensor<8x16xf32, <@m, [{"y"}, {?}]>>
  %2 = negate %1 : tensor<8x16xf32>
  return %2
}

// -----

// Each call site is propagated on its own (a named computation of its own), then the calls are
// calls of functions again, the callees after their callers as Shardy's export leaves them:
// the callee's argument and result and the call's result agree.
// CHECK-LABEL: func @main
// CHECK: call %{{.*}} {callee = @relu} : tensor<8x8xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-LABEL: func private @relu
// CHECK-SAME: (%{{.*}}: tensor<8x8xf32, <@m, [{"x", ?}, {"y", ?}]>>) -> tensor<8x8xf32, <@m, [{"x", ?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func private @relu(%v: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = abs %v : tensor<8x8xf32>
  return %0
}

func @main(%a: tensor<8x8xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8x8xf32> {
  %0 = call %a {callee = @relu} : tensor<8x8xf32>
  return %0
}

// -----

// A function called at two sites with different shardings gets a copy per sharding, named as
// Shardy names them: the first layer's "y" does not reach the second layer's weights.
// CHECK-LABEL: func @two_layers
// CHECK: %[[H1:.*]] = call %{{.*}} {callee = @relu} : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK: %[[D:.*]] = dot_general %[[H1]], %w2
// CHECK: %[[H2:.*]] = call %[[D2:.*]] {callee = @relu_0} : tensor<8x16xf32, <@m, [{"x", ?}, {?}]>>
// CHECK: dot_general %[[H2]], %w4 {{.*}} : tensor<8x16xf32, <@m, [{"x", ?}, {?}]>>
// CHECK-LABEL: func private @relu(
// CHECK-SAME: <@m, [{"x", ?}, {"y", ?}]>>) -> tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-LABEL: func private @relu_0(
// CHECK-SAME: <@m, [{"x", ?}, {?}]>>) -> tensor<8x16xf32, <@m, [{"x", ?}, {?}]>>
mesh @m = <["x"=2, "y"=4]>

func @two_layers(%x: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %w1: tensor<16x16xf32, <@m, [{}, {"y"}]>>, %w2: tensor<16x16xf32, <@m, [{"y"}, {}]>>, %w3: tensor<16x16xf32, <@m, [{}, {}]>>, %w4: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  %1 = call %0 {callee = @relu} : tensor<8x16xf32>
  %2 = dot_general %1, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  %3 = dot_general %2, %w3 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  %4 = call %3 {callee = @relu} : tensor<8x16xf32>
  %5 = dot_general %4, %w4 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  return %5
}

func private @relu(%v: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = abs %v : tensor<8x16xf32>
  return %0
}

// -----

// Op priorities: a sharding_constraint is a pass-through op whose operand has one use, so it
// propagates (stage 0) before the transpose, whose operand has two uses (stage 1): "a2" is
// already taken on dim 0 when the transpose forwards dim 1, which keeps only "a2":(1)2.
// CHECK-LABEL: func @constraint_before_multi_use_transpose
// CHECK: %[[T:.*]] = transpose %{{.*}} {permutation = [1, 0]} : tensor<8x2xf32, <@mesh, [{"a2":(2)2, ?}, {"a0":(1)2, "a2":(1)2, ?}]>>
// CHECK-NEXT: sharding_constraint %[[T]] : tensor<8x2xf32, <@mesh, [{"a2":(2)2, ?}, {"a0":(1)2, "a2":(1)2, ?}]>>
mesh @mesh = <["a0"=4, "a2"=4]>

func @constraint_before_multi_use_transpose(%y: tensor<2x8xf32>) -> tensor<2x8xf32, <@mesh, [{"a0":(1)2, "a2", ?}, {}]>> {
  %0 = constant {value = dense<0.0>} : tensor<f32>
  %1 = reduce %y, %0 {dimensions = [0], kind = add} : tensor<8xf32>
  %2 = broadcast_in_dim %1 {broadcast_dimensions = [1]} : tensor<2x8xf32>
  %3 = transpose %2 {permutation = [1, 0]} : tensor<8x2xf32>
  %4 = sharding_constraint %3 : tensor<8x2xf32, <@mesh, [{"a2":(2)2, ?}, {?}]>>
  return %2
}

// -----

// dynamic_slice: the sliced dim is need_replication and blocked, the whole dim passes "tp";
// dynamic_update_slice keeps the operand's sharding (the partly covered update dim is its own
// factor); convolution passes the batch and output-feature shardings (Shardy's rules).
// CHECK: func @main(%[[X:.*]]: {{.*}}, %[[I:.*]]: tensor<i32>, %[[A:.*]]: {{.*}}, %[[K:.*]]: {{.*}})
// CHECK-NEXT: %[[S:.*]] = dynamic_slice %[[X]], %[[I]], %[[I]] {slice_sizes = [4, 32]} : tensor<4x32xf32, <@mesh, [{?}, {"tp", ?}]>>
// CHECK-NEXT: %[[U:.*]] = dynamic_update_slice %[[X]], %[[S]], %[[I]], %[[I]] : tensor<16x32xf32, <@mesh, [{"dp", ?}, {"tp", ?}]>>
// CHECK-NEXT: %[[C:.*]] = convolution %[[A]], %[[K]] {{.*}} : tensor<8x16x16x16xf32, <@mesh, [{"dp", ?}, {?}, {?}, {"tp", ?}]>>
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %i: tensor<i32>, %a: tensor<8x16x16x4xf32, <@mesh, [{"dp"}, {}, {}, {}]>>, %k: tensor<3x3x4x16xf32, <@mesh, [{}, {}, {}, {"tp"}]>>) -> (tensor<4x32xf32>, tensor<16x32xf32>, tensor<8x16x16x16xf32>) {
  %0 = dynamic_slice %x, %i, %i {slice_sizes = [4, 32]} : tensor<4x32xf32>
  %1 = dynamic_update_slice %x, %0, %i, %i : tensor<16x32xf32>
  %2 = convolution %a, %k {input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2], padding = [[1, 1], [1, 1]]} : tensor<8x16x16x16xf32>
  return %0, %1, %2
}

// -----

// A maximal sharding (`<@maximal, []>`) puts a tensor of any rank on one device; nothing
// propagates through an op whose operands' common mesh is maximal.
// CHECK-LABEL: func @maximal_any_rank
// CHECK-SAME: %[[A:.*]]: tensor<8x8xf32, <@maximal, []>>, %[[B:.*]]: tensor<8x8xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %[[S:.*]] = add %[[A]], %[[B]] : tensor<8x8xf32>
// CHECK-NEXT: %[[N:.*]] = negate %[[B]] : tensor<8x8xf32, <@m, [{"x", ?}, {?}]>>
// CHECK-NEXT: return %[[S]], %[[N]]
mesh @m = <["x"=2]>
mesh @maximal = <[], device_ids=[0]>

func @maximal_any_rank(%a: tensor<8x8xf32, <@maximal, []>>, %b: tensor<8x8xf32, <@m, [{"x"}, {}]>>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = add %a, %b : tensor<8x8xf32>
  %1 = negate %b : tensor<8x8xf32>
  return %0, %1
}
