// tests/data/control/shardy/while_reshard.mlir, its while regions outlined: the body returns a
// value laid out otherwise than the loop carries it.
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>) -> tensor<16x32xf32, <@mesh, [{"dp"}, {}]>> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %arg0 {body = @main_while_body, cond = @main_while_cond} : tensor<i32>, tensor<16x32xf32>
  return %1
}

func private @main_while_cond(%i: tensor<i32>, %x: tensor<16x32xf32>) -> tensor<i1> {
  %c_2 = constant {value = dense<3>} : tensor<i32>
  %0 = compare %i, %c_2 {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @main_while_body(%i: tensor<i32>, %x: tensor<16x32xf32>) -> (tensor<i32>, tensor<16x32xf32>) {
  %0 = tanh %x : tensor<16x32xf32>
  %1 = sharding_constraint %0 : tensor<16x32xf32, <@mesh, [{}, {"tp"}]>>
  %c_2 = constant {value = dense<1>} : tensor<i32>
  %2 = add %i, %c_2 : tensor<i32>
  return %2, %1
}
