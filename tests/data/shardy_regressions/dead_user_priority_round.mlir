// Random-testing regression (docs/propagation.md, "Agreement with Shardy").
// As dead_user_single_use.mlir with both shardings at user priority p1: %5 was erased in the p0
// round, so in the p1 round's stage 0 tanh's operand %1 has one use and the constraint wins.
// %y: [{?}, {"a2", "a0", ?}] (an erased op stops counting, just not within its stage).
mesh @mesh = <["a0"=2, "a2"=4]>

func @main(%x: tensor<6x2xf32, <@mesh, [{"a2", ?}p1, {}]>>, %y: tensor<6x2xf32>) -> (tensor<6x2xf32, <@mesh, [{}, {?}]>>) {
  %0 = negate %y : tensor<6x2xf32>
  %1 = transpose %0 {permutation = [1, 0]} : tensor<2x6xf32>
  %2 = multiply %x, %0 : tensor<6x2xf32>
  %3 = tanh %1 : tensor<2x6xf32>
  %4 = sharding_constraint %3 : tensor<2x6xf32, <@mesh, [{"a2", "a0", ?}p1, {}]>>
  %5 = negate %1 : tensor<2x6xf32>
  return %2
}
