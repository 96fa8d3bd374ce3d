// Random-testing regression (docs/propagation.md, "Agreement with Shardy").
// %5 is dead: the second user of %1. When op-priority stage 0 first looks at tanh (once the
// constraint has sharded %3) %1 has two uses, so tanh is not a stage-0 op for the whole stage,
// though %5 is erased right after: %x's a2 reaches %1 first (multiply, stage 1) and the
// constraint's axes never do. %y: [{"a2", ?}, {?}].
mesh @mesh = <["a0"=2, "a2"=4]>

func @main(%x: tensor<6x2xf32, <@mesh, [{"a2", ?}, {}]>>, %y: tensor<6x2xf32>) -> (tensor<6x2xf32, <@mesh, [{}, {?}]>>) {
  %0 = negate %y : tensor<6x2xf32>
  %1 = transpose %0 {permutation = [1, 0]} : tensor<2x6xf32>
  %2 = multiply %x, %0 : tensor<6x2xf32>
  %3 = tanh %1 : tensor<2x6xf32>
  %4 = sharding_constraint %3 : tensor<2x6xf32, <@mesh, [{"a2", "a0", ?}, {}]>>
  %5 = negate %1 : tensor<2x6xf32>
  return %2
}
