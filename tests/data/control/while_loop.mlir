// tests/data/stablehlo/while_loop.mlir by hand, its while regions outlined (ir/ops/control.py).
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %arg1: tensor<i32, <@mesh, []>>) -> tensor<16x32xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %c_0 = constant {value = dense<0>} : tensor<i32>
  %0, %1, %2 = while %c_0, %c, %arg0 {body = @main_while_body, cond = @main_while_cond} : tensor<i32>, tensor<i32>, tensor<16x32xf32>
  %c_1 = constant {value = dense<0>} : tensor<i32>
  %3, %4, %5 = while %arg1, %c_1, %2 {body = @main_while_body_0, cond = @main_while_cond_0} : tensor<i32>, tensor<i32>, tensor<16x32xf32>
  return %5
}

func private @main_while_cond(%i: tensor<i32>, %j: tensor<i32>, %x: tensor<16x32xf32>) -> tensor<i1> {
  %c_4 = constant {value = dense<4>} : tensor<i32>
  %0 = compare %i, %c_4 {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @main_while_body(%i: tensor<i32>, %j: tensor<i32>, %x: tensor<16x32xf32>) -> (tensor<i32>, tensor<i32>, tensor<16x32xf32>) {
  %0, %1 = call %j, %x {callee = @closed_call} : tensor<i32>, tensor<16x32xf32>
  %c_4 = constant {value = dense<1>} : tensor<i32>
  %2 = add %i, %c_4 : tensor<i32>
  return %2, %0, %1
}

func private @main_while_cond_0(%i: tensor<i32>, %j: tensor<i32>, %x: tensor<16x32xf32>) -> tensor<i1> {
  %0 = compare %j, %i {comparison_direction = LT} : tensor<i1>
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %1 = reduce %x, %cst {dimensions = [0, 1], kind = add} : tensor<f32>
  %cst_4 = constant {value = dense<1.0e6>} : tensor<f32>
  %2 = compare %1, %cst_4 {comparison_direction = LT} : tensor<i1>
  %3 = and %0, %2 : tensor<i1>
  return %3
}

func private @main_while_body_0(%i: tensor<i32>, %j: tensor<i32>, %x: tensor<16x32xf32>) -> (tensor<i32>, tensor<i32>, tensor<16x32xf32>) {
  %c_4 = constant {value = dense<1>} : tensor<i32>
  %0 = add %j, %c_4 : tensor<i32>
  %cst = constant {value = dense<2.0>} : tensor<f32>
  %1 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<16x32xf32>
  %2 = multiply %x, %1 : tensor<16x32xf32>
  return %i, %0, %2
}

func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>) {
  %c = constant {value = dense<1>} : tensor<i32>
  %0 = add %arg0, %c : tensor<i32>
  %cst = constant {value = dense<0.5>} : tensor<f32>
  %1 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<16x32xf32>
  %2 = multiply %arg1, %1 : tensor<16x32xf32>
  %3 = convert %arg0 : tensor<f32>
  %4 = broadcast_in_dim %3 {broadcast_dimensions = []} : tensor<16x32xf32>
  %5 = add %2, %4 : tensor<16x32xf32>
  return %0, %5
}
