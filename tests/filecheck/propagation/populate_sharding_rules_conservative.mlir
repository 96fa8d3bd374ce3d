// populate-sharding-rules{conservative-propagation=true} (sdy-populate-op-sharding-rules with
// Shardy's option): a concatenated dim gets no shared factor (each tensor a size-1 factor of
// its own), and slice blocks propagation through the dim it shortens.
// RUN: shardc opt %s -p 'populate-sharding-rules{conservative-propagation=true}' | filecheck %s
// RUN: shardc opt %s -p populate-sharding-rules | filecheck %s --check-prefix=DEFAULT

// CHECK: %[[C:.*]] = concatenate %a, %b {dimension = 1, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, k])->([i, l]) {i=8, j=1, k=1, l=1}>}
// CHECK-NEXT: slice %[[C]] {{{.*}}sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=10} permutation={i} blocked_propagation={i}>}
// DEFAULT: %[[C:.*]] = concatenate %a, %b {dimension = 1, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=10} need_replication={j}>}
// DEFAULT-NEXT: slice %[[C]] {{{.*}}sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=10} permutation={i}>}
func @cons(%a: tensor<8x4xf32>, %b: tensor<8x6xf32>) -> (tensor<8x10xf32>, tensor<4x10xf32>) {
  %0 = concatenate %a, %b {dimension = 1} : tensor<8x10xf32>
  %1 = slice %0 {start_indices = [2, 0], limit_indices = [6, 10]} : tensor<4x10xf32>
  return %0, %1
}
