// tests/data/control/shardy/nested.mlir, its regions outlined: a case inside a loop body
// captures a loop-carried value and a value captured by the loop.
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<16x32xf32, <@mesh, [{"dp"}, {?}]>>, %arg1: tensor<32x32xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x32xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %arg0, %arg1 {body = @main_while_body, captures = 1, cond = @main_while_cond} : tensor<i32>, tensor<16x32xf32>
  %2 = sqrt %1 : tensor<16x32xf32>
  return %2
}

func private @main_while_cond(%i: tensor<i32>, %x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<i1> {
  %c_1 = constant {value = dense<4>} : tensor<i32>
  %0 = compare %i, %c_1 {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @main_while_body(%i: tensor<i32>, %x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> (tensor<i32>, tensor<16x32xf32>) {
  %c_1 = constant {value = dense<2>} : tensor<i32>
  %0 = remainder %i, %c_1 : tensor<i32>
  %1 = case %0, %x, %w {branches = [@main_while_body_case, @main_while_body_case_0]} : tensor<16x32xf32>
  %c_2 = constant {value = dense<1>} : tensor<i32>
  %2 = add %i, %c_2 : tensor<i32>
  return %2, %1
}

func private @main_while_body_case(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x32xf32>
  return %0
}

func private @main_while_body_case_0(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = multiply %x, %x : tensor<16x32xf32>
  return %0
}
