// A written sdy.sharding_rule is verified where it is read, against its op: an error at
// the attribute on the op's line, whether or not a pass would use the rule (issue 13), in
// Shardy's verifier's words.
// RUN: not shardc opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op number of operands and mappings must match: 2 != 1
sdy.mesh @mesh = <["a"=2]>
func.func @case0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k])->([i, j]) {i=8, j=16, k=4} reduction={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op operand 1 - mapping rank must match: 1 != 2
sdy.mesh @mesh = <["a"=2]>
func.func @case1(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k])->([i, j]) {i=8, j=16, k=4} reduction={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op op sharding rule: indices of special factors must be sorted
sdy.mesh @mesh = <["a"=2]>
func.func @case2(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={k, i}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op op sharding rule: indices of special factors must be unique
sdy.mesh @mesh = <["a"=2]>
func.func @case3(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} need_replication={k, k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op op sharding rule: factor 'k' is in two kind sets; a factor can only be one of reduction, need_replication or permutation
sdy.mesh @mesh = <["a"=2]>
func.func @case4(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={k} permutation={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op reduction factor cannot be in result mappings
sdy.mesh @mesh = <["a"=2]>
func.func @case5(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={j}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op result - dim mapping can't have a factor of size 1 if there are multiple factors
sdy.mesh @mesh = <["a"=2]>
func.func @case6(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, jl]) {i=8, j=16, k=4, l=1}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op has factor l=2 that isn't used in operand and result mappings
sdy.mesh @mesh = <["a"=2]>
func.func @case7(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4, l=2} reduction={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:74: error: 'stablehlo.dot_general' op op sharding rule: index must be less than 3, got: 4 (factor 'm' has no size)
sdy.mesh @mesh = <["a"=2]>
func.func @case8(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={m}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
