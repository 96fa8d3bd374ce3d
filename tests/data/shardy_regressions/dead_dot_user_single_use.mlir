// Random-testing regression (docs/propagation.md, "Agreement with Shardy").
// As dead_user_single_use.mlir, the dead user of %1 a dot_general that also uses %y.
mesh @mesh = <["a0"=2, "a2"=4]>

func @main(%x: tensor<6x2xf32, <@mesh, [{"a2", ?}, {}]>>, %y: tensor<6x2xf32>) -> (tensor<6x2xf32, <@mesh, [{}, {?}]>>) {
  %0 = negate %y : tensor<6x2xf32>
  %1 = transpose %0 {permutation = [1, 0]} : tensor<2x6xf32>
  %2 = multiply %x, %0 : tensor<6x2xf32>
  %3 = tanh %1 : tensor<2x6xf32>
  %4 = sharding_constraint %3 : tensor<2x6xf32, <@mesh, [{"a2", "a0", ?}, {}]>>
  %5 = dot_general %y, %1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<6x6xf32>
  return %2
}
