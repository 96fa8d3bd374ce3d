// auto-shard inlines main's calls; a helper called twice whose loop body calls another function
// (JAX's threefry random bits: a while whose body calls `closed_call`) must give each inlined
// loop its own body function. Sharing one made import-func-calls meet the inner call twice and
// fail with a traceback (the Flax NNX step under auto_shard=True).
// RUN: shardc opt %s -p auto-shard | filecheck %s
// RUN: shardc compile %s --emit spmd | filecheck %s --check-prefix=SPMD

// Two loops, two body functions, each calling the inner function on its own (the first loop
// keeps the original body); the helper is gone.
// CHECK-LABEL: func @main
// CHECK: %{{.*}}, %[[L1:[a-z0-9_]+]] = while %{{.*}}, %x {body = @[[B1:[a-z0-9_]+]], captures = 0, cond = @{{[a-z0-9_]+}}}
// CHECK: %{{.*}}, %[[L2:[a-z0-9_]+]] = while %{{.*}}, %[[L1]] {body = @[[B2:[a-z0-9_]+]], captures = 0, cond = @{{[a-z0-9_]+}}}
// CHECK: return
// CHECK-NOT: func private @twice(
// CHECK-DAG: func private @[[B1]](
// CHECK-DAG: func private @[[B2]](
// The per-device program: spmd's inline-calls does the same with the helper's copies.
// SPMD-LABEL: func @main
// SPMD: %{{.*}}, %[[L1:[a-z0-9_]+]] = while %{{.*}}, %x {body = @[[B1:[a-z0-9_]+]], captures = 0, cond = @{{[a-z0-9_]+}}}
// SPMD: %{{.*}}, %[[L2:[a-z0-9_]+]] = while %{{.*}}, %[[L1]] {body = @[[B2:[a-z0-9_]+]], captures = 0, cond = @{{[a-z0-9_]+}}}
// SPMD-DAG: func private @[[B1]](
// SPMD-DAG: func private @[[B2]](
// SPMD-NOT: func private @{{[a-z0-9_]*}}twice
mesh @m = <["x"=2, "y"=4]>

func @main(%x: tensor<8x16xf32, <@m, [{"x"}, {}]>>) -> tensor<8x16xf32> {
  %a = call %x {callee = @twice} : tensor<8x16xf32>
  %b = call %a {callee = @twice} : tensor<8x16xf32>
  %s = add %a, %b : tensor<8x16xf32>
  return %s
}

func private @twice(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c = constant {value = dense<0>} : tensor<i32>
  %0, %1 = while %c, %x {body = @loop_body, captures = 0, cond = @loop_cond} : tensor<i32>, tensor<8x16xf32>
  return %1
}

func private @loop_cond(%i: tensor<i32>, %x: tensor<8x16xf32>) -> tensor<i1> {
  %four = constant {value = dense<4>} : tensor<i32>
  %0 = compare %i, %four {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @loop_body(%i: tensor<i32>, %x: tensor<8x16xf32>) -> (tensor<i32>, tensor<8x16xf32>) {
  %0 = call %x {callee = @inner} : tensor<8x16xf32>
  %one = constant {value = dense<1>} : tensor<i32>
  %1 = add %i, %one : tensor<i32>
  return %1, %0
}

func private @inner(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = tanh %x : tensor<8x16xf32>
  return %0
}
