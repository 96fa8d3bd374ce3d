// spmd refuses a `while` whose operands are not laid out as its region functions take them.
// RUN: not shardc opt %s -p spmd 2>&1 | filecheck %s

// A loop operand laid out otherwise than the body takes it: run insert-reshards first.
// CHECK: while_case_spmd_errors.mlir:[[# @LINE + 5]]:3: error: in pass 'spmd': 'while' op: operand 1 is laid out as <@m, [{}]>, but @bad_cond takes <@m, [{"x"}]>; run insert-reshards before spmd
mesh @m = <["x"=2]>

func @bad(%x: tensor<8xf32, <@m, [{}]>>) -> tensor<8xf32, <@m, [{"x"}]>> {
  %c = constant {value = dense<0>} : tensor<i32, <@m, []>>
  %0, %1 = while %c, %x {body = @bad_body, cond = @bad_cond} : tensor<i32, <@m, []>>, tensor<8xf32, <@m, [{"x"}]>>
  return %1
}

func private @bad_cond(%i: tensor<i32, <@m, []>>, %x: tensor<8xf32, <@m, [{"x"}]>>) -> tensor<i1, <@m, []>> {
  %0 = compare %i, %i {comparison_direction = LT} : tensor<i1, <@m, []>>
  return %0
}

func private @bad_body(%i: tensor<i32, <@m, []>>, %x: tensor<8xf32, <@m, [{"x"}]>>) -> (tensor<i32, <@m, []>>, tensor<8xf32, <@m, [{"x"}]>>) {
  return %i, %x
}
