// tests/data/control/shardy/while_captures.mlir, its while regions outlined.
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, %arg1: tensor<32x32xf32, <@mesh, [{}, {"tp"}]>>, %arg2: tensor<32xf32>) -> (tensor<16x32xf32>, tensor<f32>) {
  %c = constant {value = dense<0>} : tensor<i32>
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %0, %1, %2 = while %c, %arg0, %cst, %arg1, %arg2 {body = @main_while_body, captures = 2, cond = @main_while_cond} : tensor<i32>, tensor<16x32xf32>, tensor<f32>
  return %1, %2
}

func private @main_while_cond(%i: tensor<i32>, %x: tensor<16x32xf32>, %acc: tensor<f32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>) -> tensor<i1> {
  %c_2 = constant {value = dense<3>} : tensor<i32>
  %0 = compare %i, %c_2 {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @main_while_body(%i: tensor<i32>, %x: tensor<16x32xf32>, %acc: tensor<f32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>) -> (tensor<i32>, tensor<16x32xf32>, tensor<f32>) {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x32xf32>
  %1 = broadcast_in_dim %b {broadcast_dimensions = [1]} : tensor<16x32xf32>
  %2 = add %0, %1 : tensor<16x32xf32>
  %3 = tanh %2 : tensor<16x32xf32>
  %cst_2 = constant {value = dense<0.0>} : tensor<f32>
  %4 = reduce %3, %cst_2 {dimensions = [0, 1], kind = add} : tensor<f32>
  %5 = add %acc, %4 : tensor<f32>
  %c_2 = constant {value = dense<1>} : tensor<i32>
  %6 = add %i, %c_2 : tensor<i32>
  return %6, %3, %5
}
