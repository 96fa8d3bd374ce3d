// insert-reshards refuses a loop whose carried value has two shardings (result and cond argument).
// RUN: not shardc opt %s -p insert-reshards 2>&1 | filecheck %s

// CHECK: while_case_insert_reshards_errors.mlir:[[# @LINE + 5]]:3: error: in pass 'insert-reshards': 'while' op: the values that stand for one loop-carried or captured value have different shardings (<@m, [{"x"}]>, <@m, [{}]>); give them one sharding (propagate does)
mesh @m = <["x"=2]>

func @bad(%x: tensor<8xf32, <@m, [{}]>>) -> tensor<8xf32> {
  %c = constant {value = dense<0>} : tensor<i32, <@m, []>>
  %0, %1 = while %c, %x {body = @bad_body, cond = @bad_cond} : tensor<i32, <@m, []>>, tensor<8xf32, <@m, [{"x"}]>>
  return %1
}

func private @bad_cond(%i: tensor<i32, <@m, []>>, %x: tensor<8xf32, <@m, [{}]>>) -> tensor<i1, <@m, []>> {
  %0 = compare %i, %i {comparison_direction = LT} : tensor<i1, <@m, []>>
  return %0
}

func private @bad_body(%i: tensor<i32, <@m, []>>, %x: tensor<8xf32, <@m, [{"x"}]>>) -> (tensor<i32, <@m, []>>, tensor<8xf32, <@m, [{"x"}]>>) {
  return %i, %x
}
