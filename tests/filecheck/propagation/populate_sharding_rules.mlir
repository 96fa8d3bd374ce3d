// RUN: shardc opt %s -p populate-sharding-rules | filecheck %s
// A rule on an op is read back: the printed rules round-trip.
// RUN: shardc opt %s -p populate-sharding-rules | shardc opt - -p populate-sharding-rules | filecheck %s

// CHECK: %[[D:.*]] = dot_general %{{.*}}, %{{.*}} {lhs_contracting_dims = [1], rhs_contracting_dims = [0], sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>} : tensor<8x16xf32>
// CHECK-NEXT: %[[T:.*]] = tanh %[[D]] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=16}>} : tensor<8x16xf32>
// CHECK-NEXT: %[[R:.*]] = reshape %[[T]] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([ij]) {i=8, j=16}>} : tensor<128xf32>
// CHECK-NEXT: %[[TR:.*]] = transpose %[[T]] {permutation = [1, 0], sdy.sharding_rule = #sdy.op_sharding_rule<([j, i])->([i, j]) {i=16, j=8}>} : tensor<16x8xf32>
// CHECK-NEXT: return %[[R]], %[[TR]]
func @rules(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>) -> (tensor<128xf32>, tensor<16x8xf32>) {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x16xf32>
  %1 = tanh %0 : tensor<8x16xf32>
  %2 = reshape %1 : tensor<128xf32>
  %3 = transpose %1 {permutation = [1, 0]} : tensor<16x8xf32>
  return %2, %3
}
