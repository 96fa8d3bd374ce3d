// Random-testing regression (docs/propagation.md, "Agreement with Shardy"): three transposes of
// one argument sharded on sub-axes, a prioritised result sharding and constraints. Diverged
// while the single-use test of op-priority stage 0 was re-evaluated on every visit.
mesh @mesh = <["a0"=4, "a1"=4, "a2"=4]>

func @main(%x: tensor<6x2xf32, <@mesh, [{"a2":(2)2, "a1":(1)2}, {"a0":(1)2, ?}]>>, %y: tensor<6x2xf32>) -> (tensor<6x2xf32, <@mesh, [{}, {"a1":(2)2, "a0":(2)2, ?}p0]>>, tensor<2x6xf32, <@mesh, [{"a0":(2)2, "a1"}, {"a2":(1)2, ?}p1]>>) {
  %0 = minimum %x, %x : tensor<6x2xf32>
  %1 = transpose %x {permutation = [1, 0]} : tensor<2x6xf32>
  %2 = sharding_constraint %1 : tensor<2x6xf32, <@mesh, [{?}, {}]>>
  %3 = transpose %x {permutation = [1, 0]} : tensor<2x6xf32>
  %4 = negate %y : tensor<6x2xf32>
  %5 = sharding_constraint %4 : tensor<6x2xf32, <@mesh, [{"a0":(2)2}p1, {"a1"}p1]>>
  %6 = transpose %3 {permutation = [1, 0]} : tensor<6x2xf32>
  %7 = transpose %x {permutation = [1, 0]} : tensor<2x6xf32>
  %8 = sharding_constraint %7 : tensor<2x6xf32, <@mesh, [{"a2":(2)2, "a1":(2)2}, {}]>>
  %9 = logistic %0 : tensor<6x2xf32>
  %10 = subtract %0, %y : tensor<6x2xf32>
  %11 = sharding_constraint %10 : tensor<6x2xf32, <@mesh, [{"a2":(2)2, "a1":(2)2}, {}]>>
  %12 = dot_general %3, %x {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<2x2xf32>
  %13 = reshape %5 : tensor<12xf32>
  %14 = reshape %13 : tensor<6x2xf32>
  return %6, %2
}
