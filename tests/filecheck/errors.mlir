// Errors are located (file:line:col), say what is wrong, and show the line with a caret.
// RUN: not shardc opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: errors.mlir:[[# @LINE + 3]]:13: error: use of undefined value %nope
// CHECK-NEXT: %0 = tanh %nope : tensor<4xf32>
func @undefined(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tanh %nope : tensor<4xf32>
  return %0
}

// -----

// CHECK: errors.mlir:[[# @LINE + 3]]:34: error: axis "x" is used twice in one sharding (dim 0 and dim 1)
mesh @m = <["x"=2]>

func @twice(%a: tensor<4x4xf32, <@m, [{"x"}, {"x"}]>>) -> tensor<4x4xf32> {
  return %a
}

// -----

// CHECK: errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op contracting dims lhs 1 (size 8) and rhs 0 (size 4) differ
// CHECK-NEXT: %0 = dot_general
func @shapes(%a: tensor<4x8xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<4x4xf32>
  return %0
}

// -----

// CHECK: errors.mlir:[[# @LINE + 1]]:18: error: unexpected '%b'; expected ':'
func @syntax( %a %b) {
  return
}

// -----

// An all_reduce may reduce axes its operand is not unreduced on (Shardy's implicit partials),
// but not axes that shard a dim of it.
// CHECK: errors.mlir:[[# @LINE + 4]]:3: error: 'all_reduce' op reduction axes overlap the operand's dim shardings
mesh @m = <["x"=2, "y"=2]>

func @all_reduce_sharded_axis(%a: tensor<4x4xf32, <@m, [{"x"}, {}]>>) -> tensor<4x4xf32> {
  %0 = all_reduce %a {reduction_axes = ["x"]} : tensor<4x4xf32, <@m, [{"x"}, {}]>>
  return %0
}

// -----

// A later chunk still parses after earlier errors.
// CHECK: func @fine
func @fine(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a
}
