// spmd on `while` and `case`: the ops stay and run their region functions, which are lowered
// like every function (local types, spmd.* collectives, their global signature recorded).
// RUN: shardc opt %s -p spmd --split-input-file | filecheck %s
// RUN: shardc opt %s -p spmd --split-input-file | shardc opt - --split-input-file | filecheck %s

// CHECK-LABEL: func @loop
// CHECK-SAME: (%x: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %{{.*}}, %[[R:[a-z0-9_]+]] = while %{{.*}}, %x {body = @loop_body, cond = @loop_cond} : tensor<i32>, tensor<4x4xf32>
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = case %{{.*}}, %[[R]] {branches = [@keep, @flip]} : tensor<4x4xf32>
// CHECK: func private @loop_cond(%i: tensor<i32>, %x: tensor<4x4xf32>) -> tensor<i1> attributes {mesh = @m, in_shapes = [[], [8, 16]], in_shardings = [<@m, []>, <@m, [{"x"}, {"y"}]>], out_shapes = [[]], out_shardings = [<@m, []>]}
// CHECK: func private @loop_body(%i: tensor<i32>, %x: tensor<4x4xf32>) -> (tensor<i32>, tensor<4x4xf32>)
// CHECK: %[[G:[a-z0-9_]+]] = spmd.all_gather %x {axes = ["y"], dim = 1, groups = {{\[\[}}0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<4x16xf32>
// CHECK-NEXT: %[[V:[a-z0-9_]+]] = reverse %[[G]] {dimensions = [1]} : tensor<4x16xf32>
// CHECK-NEXT: %[[L:[a-z0-9_]+]] = spmd.all_slice %[[V]] {axes = ["y"], dim = 1, groups = {{\[\[}}0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[L]]
// CHECK: func private @flip(%x: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: negate %x : tensor<4x4xf32>
mesh @m = <["x"=2, "y"=4]>

func @loop(%x: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %c = constant {value = dense<0>} : tensor<i32, <@m, []>>
  %0, %1 = while %c, %x {body = @loop_body, cond = @loop_cond} : tensor<i32, <@m, []>>, tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  %2 = case %0, %1 {branches = [@keep, @flip]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %2
}

func private @loop_cond(%i: tensor<i32, <@m, []>>, %x: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<i1, <@m, []>> {
  %three = constant {value = dense<3>} : tensor<i32, <@m, []>>
  %0 = compare %i, %three {comparison_direction = LT} : tensor<i1, <@m, []>>
  return %0
}

func private @loop_body(%i: tensor<i32, <@m, []>>, %x: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> (tensor<i32, <@m, []>>, tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) {
  %0 = all_gather %x {gathering_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  %1 = reverse %0 {dimensions = [1]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  %2 = all_slice %1 {slicing_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  %one = constant {value = dense<1>} : tensor<i32, <@m, []>>
  %3 = add %i, %one : tensor<i32, <@m, []>>
  return %3, %2
}

func private @keep(%x: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  return %x
}

func private @flip(%x: tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = negate %x : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %0
}
