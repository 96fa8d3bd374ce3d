// tests/data/control/shardy/scan_like.mlir, its while regions outlined: a scan over stacked
// weights without dynamic_slice (a one-hot selects layer i).
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, %arg1: tensor<3x32x32xf32, <@mesh, [{}, {}, {"tp"}]>>) -> (tensor<16x32xf32>, tensor<3x16xf32>) {
  %c = constant {value = dense<0>} : tensor<i32>
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %0 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<3x16xf32>
  %1, %2, %3 = while %c, %arg0, %0, %arg1 {body = @main_while_body, captures = 1, cond = @main_while_cond} : tensor<i32>, tensor<16x32xf32>, tensor<3x16xf32>
  return %2, %3
}

func private @main_while_cond(%i: tensor<i32>, %x: tensor<16x32xf32>, %ys: tensor<3x16xf32>, %ws: tensor<3x32x32xf32>) -> tensor<i1> {
  %c_2 = constant {value = dense<3>} : tensor<i32>
  %0 = compare %i, %c_2 {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @main_while_body(%i: tensor<i32>, %x: tensor<16x32xf32>, %ys: tensor<3x16xf32>, %ws: tensor<3x32x32xf32>) -> (tensor<i32>, tensor<16x32xf32>, tensor<3x16xf32>) {
  %0 = iota {iota_dimension = 0} : tensor<3xi32>
  %1 = broadcast_in_dim %i {broadcast_dimensions = []} : tensor<3xi32>
  %2 = compare %0, %1 {comparison_direction = EQ} : tensor<3xi1>
  %3 = convert %2 : tensor<3xf32>
  %4 = broadcast_in_dim %3 {broadcast_dimensions = [0]} : tensor<3x32x32xf32>
  %5 = multiply %ws, %4 : tensor<3x32x32xf32>
  %cst_2 = constant {value = dense<0.0>} : tensor<f32>
  %6 = reduce %5, %cst_2 {dimensions = [0], kind = add} : tensor<32x32xf32>
  %7 = dot_general %x, %6 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x32xf32>
  %8 = tanh %7 : tensor<16x32xf32>
  %9 = reduce %8, %cst_2 {dimensions = [1], kind = add} : tensor<16xf32>
  %10 = broadcast_in_dim %9 {broadcast_dimensions = [1]} : tensor<3x16xf32>
  %11 = broadcast_in_dim %3 {broadcast_dimensions = [0]} : tensor<3x16xf32>
  %12 = multiply %10, %11 : tensor<3x16xf32>
  %13 = add %ys, %12 : tensor<3x16xf32>
  %c_3 = constant {value = dense<1>} : tensor<i32>
  %14 = add %i, %c_3 : tensor<i32>
  return %14, %8, %13
}
