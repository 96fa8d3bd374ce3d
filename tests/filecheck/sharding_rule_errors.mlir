// A written sdy.sharding_rule is verified where it is read, against its op: an error at
// the op's line whether or not a pass would use the rule (issue 13).
// RUN: not shardc opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': 1 operand mapping for 2 operands
sdy.mesh @mesh = <["a"=2]>
func.func @case0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k])->([i, j]) {i=8, j=16, k=4} reduction={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': operand 1 maps 1 dim, but its rank is 2
sdy.mesh @mesh = <["a"=2]>
func.func @case1(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k])->([i, j]) {i=8, j=16, k=4} reduction={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: reduction: indices of special factors must be sorted
sdy.mesh @mesh = <["a"=2]>
func.func @case2(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={k, i}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: need_replication: indices of special factors must be unique
sdy.mesh @mesh = <["a"=2]>
func.func @case3(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} need_replication={k, k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: factor 'k' is in two kind sets
sdy.mesh @mesh = <["a"=2]>
func.func @case4(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={k} permutation={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: reduction factor j is in a result mapping
sdy.mesh @mesh = <["a"=2]>
func.func @case5(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={j}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: result 0 dim 1: a dim of several factors cannot have a factor of size 1
sdy.mesh @mesh = <["a"=2]>
func.func @case6(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, jl]) {i=8, j=16, k=4, l=1}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: factor l=2 is not used in any operand or result mapping
sdy.mesh @mesh = <["a"=2]>
func.func @case7(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4, l=2} reduction={k}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK: sharding_rule_errors.mlir:[[# @LINE + 3]]:3: error: 'dot_general' op attribute 'sdy.sharding_rule': op sharding rule: factor 'm' has no size
sdy.mesh @mesh = <["a"=2]>
func.func @case8(%arg0: tensor<8x4xf32>, %arg1: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=4} reduction={m}>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
