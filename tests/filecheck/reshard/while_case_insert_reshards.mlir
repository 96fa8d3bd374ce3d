// insert-reshards on `while` and `case`: operands are laid out as the region functions'
// arguments, a loop body's result that differs from its carried sharding is resharded before
// the body's return (as in Shardy), the loop condition and a case index are replicated.
// RUN: shardc opt %s -p insert-reshards --split-input-file | filecheck %s

// The carried value is [{"x"}, {}]; the body's dot gives [{"x"}, {"y"}]: a reshard before the
// body's return. The operand [{}, {"y"}] is resharded before the loop.
// CHECK-LABEL: func @carry
// CHECK: %[[X0:[a-z0-9_]+]] = reshard %x : tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %{{.*}}, %[[R:[a-z0-9_]+]] = while %{{.*}}, %[[X0]], %w {body = @carry_body, captures = 1, cond = @carry_cond}
// CHECK: func private @carry_cond({{.*}}) -> tensor<i1, <@m, []>>
// CHECK: func private @carry_body({{.*}}) -> (tensor<i32, <@m, []>>, tensor<8x16xf32, <@m, [{"x"}, {}]>>)
// CHECK-NEXT: %[[D:[a-z0-9_]+]] = dot_general %x, %w {{.*}} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK: %[[B:[a-z0-9_]+]] = reshard %[[D]] : tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: return %{{.*}}, %[[B]]
mesh @m = <["x"=2, "y"=4]>

func @carry(%x: tensor<8x16xf32, <@m, [{}, {"y"}]>>, %w: tensor<16x16xf32, <@m, [{}, {"y"}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {}]>> {
  %c = constant {value = dense<0>} : tensor<i32, <@m, []>>
  %0, %1 = while %c, %x, %w {body = @carry_body, captures = 1, cond = @carry_cond} : tensor<i32, <@m, []>>, tensor<8x16xf32, <@m, [{"x"}, {}]>>
  return %1
}

func private @carry_cond(%i: tensor<i32>, %x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<i1> {
  %four = constant {value = dense<4>} : tensor<i32, <@m, []>>
  %0 = compare %i, %four {comparison_direction = LT} : tensor<i1, <@m, []>>
  return %0
}

func private @carry_body(%i: tensor<i32>, %x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<i32>, tensor<8x16xf32>) {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  %one = constant {value = dense<1>} : tensor<i32, <@m, []>>
  %1 = add %i, %one : tensor<i32, <@m, []>>
  return %1, %0
}

// -----

// An unreduced branch index is reduced before the case; a branch returning another layout than
// the case result is resharded before its return.
// CHECK-LABEL: func @index
// CHECK: %[[I:[a-z0-9_]+]] = reshard %{{.*}} : tensor<i32, <@m, []>>
// CHECK-NEXT: %{{.*}} = case %[[I]], %a {branches = [@same, @other]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK: func private @same(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: return %a
// CHECK: func private @other(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK: %[[T:[a-z0-9_]+]] = negate %{{.*}} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = reshard %[[T]] : tensor<8x16xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=2, "y"=4]>

func @index(%v: tensor<4xi32, <@m, [{"y"}]>>, %a: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {}]>> {
  %zero = constant {value = dense<0>} : tensor<i32, <@m, []>>
  %i = reduce %v, %zero {dimensions = [0], kind = add} : tensor<i32, <@m, [], unreduced={"y"}>>
  %0 = case %i, %a {branches = [@same, @other]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  return %0
}

func private @same(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %a
}

func private @other(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = negate %a : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %0
}
