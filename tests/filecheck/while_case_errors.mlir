// Errors of `while` and `case`: located at the op, naming the region function and what differs.
// RUN: not shardc opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: while_case_errors.mlir:[[# @LINE + 3]]:3: error: 'while' op body @nope is not defined in this module
func @missing(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x {body = @nope, cond = @c} : tensor<i32>, tensor<4xf32>
  return %1
}

func private @c(%i: tensor<i32>, %x: tensor<4xf32>) -> tensor<i1> {
  %0 = compare %i, %i {comparison_direction = LT} : tensor<i1>
  return %0
}

// -----

// CHECK: error: 'while' op cond @c result 0 has type tensor<i32>, expected tensor<i1>
func @cond_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x {body = @b, cond = @c} : tensor<i32>, tensor<4xf32>
  return %1
}

func private @c(%i: tensor<i32>, %x: tensor<4xf32>) -> tensor<i32> {
  return %i
}

func private @b(%i: tensor<i32>, %x: tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>) {
  return %i, %x
}

// -----

// CHECK: while_case_errors.mlir:[[# @LINE + 3]]:3: error: 'while' op body @b result 1 has type tensor<8xf32>, expected tensor<4xf32>
func @body_type(%x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<4xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x, %y {body = @b, captures = 1, cond = @c} : tensor<i32>, tensor<4xf32>
  return %1
}

func private @c(%i: tensor<i32>, %x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<i1> {
  %0 = compare %i, %i {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @b(%i: tensor<i32>, %x: tensor<4xf32>, %y: tensor<8xf32>) -> (tensor<i32>, tensor<8xf32>) {
  return %i, %y
}

// -----

// CHECK: error: 'while' op has 2 results, so it takes 2 carried operands + 0 captured, got 3 operands
func @captures(%x: tensor<4xf32>, %y: tensor<8xf32>) -> tensor<4xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x, %y {body = @b, cond = @c} : tensor<i32>, tensor<4xf32>
  return %1
}

// -----

// CHECK: error: 'while' op carried operand 1 has type tensor<4xf32> but result 1 has type tensor<4xf16>
func @carried(%x: tensor<4xf32>) -> tensor<4xf16> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x {body = @b, cond = @c} : tensor<i32>, tensor<4xf16>
  return %1
}

// -----

// CHECK: while_case_errors.mlir:[[# @LINE + 2]]:3: error: 'case' op branch index must be tensor<i32>, got tensor<i64>
func @index(%i: tensor<i64>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = case %i, %x {branches = [@f]} : tensor<4xf32>
  return %0
}

func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x
}

// -----

// CHECK: error: 'case' op branch 1 @g argument 0 has type tensor<8xf32>, expected tensor<4xf32>
func @branch_args(%i: tensor<i32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = case %i, %x {branches = [@f, @g]} : tensor<4xf32>
  return %0
}

func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x
}

func private @g(%x: tensor<8xf32>) -> tensor<4xf32> {
  %0 = slice %x {start_indices = [0], limit_indices = [4]} : tensor<4xf32>
  return %0
}

// -----

// CHECK: error: 'case' op attribute 'branches' must be a non-empty array of symbols, e.g. [@f]
func @branches(%i: tensor<i32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = case %i, %x {branches = ["f"]} : tensor<4xf32>
  return %0
}
