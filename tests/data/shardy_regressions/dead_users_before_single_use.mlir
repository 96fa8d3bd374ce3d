// Random-testing regression (docs/propagation.md, "Agreement with Shardy").
// The dead dot_general (%3) and then the transpose (%2) are erased in op-priority stage 0 before
// tanh is first looked at, so tanh (operand %1) is a single-use stage-0 op: the result sharding
// reaches %1 and %0 before %y's does (stage 1).
mesh @mesh = <["a0"=1, "a1"=4, "a2"=4], device_ids=[12, 5, 13, 7, 8, 9, 0, 11, 2, 14, 3, 1, 10, 15, 6, 4]>

func @main(%x: tensor<4x4xf32>, %y: tensor<4x4xf32, <@mesh, [{"a1":(1)2, "a0", ?}, {}]>>) -> tensor<4x4xf32, <@mesh, [{"a2":(1)2, "a0"}p0, {"a1":(1)2, ?}p0]>> {
  %0 = reshape %y : tensor<16xf32>
  %1 = reshape %0 : tensor<4x4xf32>
  %2 = transpose %1 {permutation = [1, 0]} : tensor<4x4xf32>
  %3 = dot_general %y, %2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<4x4xf32>
  %4 = tanh %1 : tensor<4x4xf32>
  return %4
}
