// Propagation through `while` and `case` (docs/propagation.md): Shardy's data-flow edges. A
// captured operand and the region arguments it feeds are one value; result k, cond argument k,
// body argument k and body result k of a loop share one sharding, fed by operand k and the
// body's return operand k; a case result by every branch's return operand.
// RUN: shardc opt %s -p propagate --split-input-file | filecheck %s

// The bias is sharded only by its use inside the body; the loop value gets "y" from the body.
// CHECK-LABEL: func @captures
// CHECK-SAME: %[[B:[a-z0-9_]+]]: tensor<16xf32, <@m, [{"y", ?}]>>)
// CHECK-SAME: -> tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK: %{{.*}}, %[[X:[a-z0-9_]+]] = while %{{.*}}, %{{.*}}, %{{.*}}, %[[B]] {body = @captures_body, captures = 2, cond = @captures_cond} : tensor<i32>, tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-NEXT: return %[[X]]
// CHECK: func private @captures_cond(%i: tensor<i32>, %x: tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>, %w: tensor<16x16xf32, <@m, [{}, {"y"}]>>, %b: tensor<16xf32, <@m, [{"y", ?}]>>) -> tensor<i1>
// CHECK: func private @captures_body(%i: tensor<i32>, %x: tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>, %w: tensor<16x16xf32, <@m, [{}, {"y"}]>>, %b: tensor<16xf32, <@m, [{"y", ?}]>>) -> (tensor<i32>, tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>)
// CHECK: %[[D:[a-z0-9_]+]] = dot_general %x, %w {{.*}} : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK: %[[E:[a-z0-9_]+]] = broadcast_in_dim %b {{.*}} : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @captures(%x: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %w: tensor<16x16xf32, <@m, [{}, {"y"}]>>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x, %w, %b {body = @captures_body, captures = 2, cond = @captures_cond} : tensor<i32>, tensor<8x16xf32>
  return %1
}

func private @captures_cond(%i: tensor<i32>, %x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<i1> {
  %four = constant {value = dense<4>} : tensor<i32>
  %0 = compare %i, %four {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @captures_body(%i: tensor<i32>, %x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> (tensor<i32>, tensor<8x16xf32>) {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  %1 = broadcast_in_dim %b {broadcast_dimensions = [1]} : tensor<8x16xf32>
  %2 = add %0, %1 : tensor<8x16xf32>
  %one = constant {value = dense<1>} : tensor<i32>
  %3 = add %i, %one : tensor<i32>
  return %3, %2
}

// -----

// A case result combines what its branches return (each dim from the branch that shards it),
// and the branches' values take it back; the index operand neither gives nor takes a sharding.
// CHECK-LABEL: func @branches
// CHECK-SAME: %[[I:[a-z0-9_]+]]: tensor<i32>, %[[A:[a-z0-9_]+]]: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %[[B:[a-z0-9_]+]]: tensor<8x16xf32, <@m, [{}, {"y"}]>>)
// CHECK: %[[R:[a-z0-9_]+]] = case %[[I]], %[[A]], %[[B]] {branches = [@left, @right]} : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK: func private @left(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x16xf32, <@m, [{}, {"y"}]>>) -> tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK-NEXT: %{{.*}} = negate %a : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
// CHECK: func private @right(
// CHECK-NEXT: %{{.*}} = exponential %b : tensor<8x16xf32, <@m, [{"x", ?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @branches(%i: tensor<i32>, %a: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x16xf32, <@m, [{}, {"y"}]>>) -> tensor<8x16xf32> {
  %0 = case %i, %a, %b {branches = [@left, @right]} : tensor<8x16xf32>
  return %0
}

func private @left(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = negate %a : tensor<8x16xf32>
  return %0
}

func private @right(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = exponential %b : tensor<8x16xf32>
  return %0
}

// -----

// Backward: a sharding used after the loop reaches the loop's operand through the carried edge.
// CHECK-LABEL: func @backward
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf32, <@m, [{?}, {"y", ?}]>>)
// CHECK: func private @backward_body(%i: tensor<i32>, %x: tensor<8x16xf32, <@m, [{?}, {"y", ?}]>>)
// CHECK-NEXT: %{{.*}} = tanh %x : tensor<8x16xf32, <@m, [{?}, {"y", ?}]>>
mesh @m = <["x"=2, "y"=4]>

func @backward(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x {body = @backward_body, cond = @backward_cond} : tensor<i32>, tensor<8x16xf32>
  %2 = sharding_constraint %1 : tensor<8x16xf32, <@m, [{?}, {"y"}]>>
  return %2
}

func private @backward_cond(%i: tensor<i32>, %x: tensor<8x16xf32>) -> tensor<i1> {
  %four = constant {value = dense<4>} : tensor<i32>
  %0 = compare %i, %four {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @backward_body(%i: tensor<i32>, %x: tensor<8x16xf32>) -> (tensor<i32>, tensor<8x16xf32>) {
  %0 = tanh %x : tensor<8x16xf32>
  %one = constant {value = dense<1>} : tensor<i32>
  %1 = add %i, %one : tensor<i32>
  return %1, %0
}
