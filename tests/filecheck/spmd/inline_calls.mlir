// inline-calls: a call between per-device functions becomes its callee's body, nested calls too,
// so the collectives inside can combine with the caller's; callees no op names any more go.
// RUN: shardc opt %s -p inline-calls | filecheck %s
// RUN: shardc opt %s -p inline-calls,combine-collectives | filecheck %s --check-prefix=COMBINED

// CHECK-LABEL: func @main(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: %[[RA:.*]] = spmd.all_reduce %[[A]] {axes = ["x"]
// CHECK-NEXT: %[[T:.*]] = tanh %[[RA]] : tensor<4xf32>
// CHECK-NEXT: %[[E:.*]] = exponential %[[T]] : tensor<4xf32>
// CHECK-NEXT: %[[RB:.*]] = spmd.all_reduce %[[B]] {axes = ["x"]
// CHECK-NEXT: %[[S:.*]] = add %[[E]], %[[RB]] : tensor<4xf32>
// CHECK-NEXT: return %[[S]]
// CHECK-NOT: func private @outer
// CHECK-NOT: func private @inner
// CHECK: func private @kept(
// COMBINED: %[[RA:.*]], %[[RB:.*]] = spmd.all_reduce %{{.*}}, %{{.*}} {axes = ["x"]
// COMBINED-NEXT: %[[T:.*]] = tanh %[[RA]]
// COMBINED-NEXT: %[[E:.*]] = exponential %[[T]]
// COMBINED-NEXT: add %[[E]], %[[RB]]
mesh @m = <["x"=2]>

func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[4], [4]], in_shardings = [<@m, [{}]>, <@m, [{}]>], out_shapes = [[4]], out_shardings = [<@m, [{}]>]} {
  %0 = call %a {callee = @outer} : tensor<4xf32>
  %1 = spmd.all_reduce %b {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  %2 = add %0, %1 : tensor<4xf32>
  return %2
}

func private @outer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[4]], in_shardings = [<@m, [{}]>], out_shapes = [[4]], out_shardings = [<@m, [{}]>]} {
  %0 = call %x {callee = @inner} : tensor<4xf32>
  %1 = exponential %0 : tensor<4xf32>
  return %1
}

func private @inner(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[4]], in_shardings = [<@m, [{}]>], out_shapes = [[4]], out_shardings = [<@m, [{}]>]} {
  %0 = spmd.all_reduce %x {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  %1 = tanh %0 : tensor<4xf32>
  return %1
}

// A function that is not an SPMD program (no in_shapes) is not inlined.
func private @kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tanh %x : tensor<4xf32>
  return %0
}

func @other(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[4]], in_shardings = [<@m, [{}]>], out_shapes = [[4]], out_shardings = [<@m, [{}]>]} {
  // CHECK-LABEL: func @other(
  // CHECK-NEXT: call %{{.*}} {callee = @kept}
  %0 = call %x {callee = @kept} : tensor<4xf32>
  return %0
}
