// `while` and `case` (regions outlined into private functions) parse, print and re-parse.
// RUN: shardc opt %s --split-input-file | filecheck %s
// RUN: shardc opt %s --split-input-file | shardc opt - --split-input-file | filecheck %s

// CHECK-LABEL: func @loop
// CHECK: %[[I:[a-z0-9_]+]], %[[X:[a-z0-9_]+]] = while %{{.*}}, %[[A:[a-z0-9_]+]], %[[N:[a-z0-9_]+]], %[[W:[a-z0-9_]+]] {body = @loop_body, captures = 2, cond = @loop_cond} : tensor<i32>, tensor<16x32xf32, <@mesh, [{"dp"}, {?}]>>
// CHECK-NEXT: %[[S:[a-z0-9_]+]] = case %[[N]], %[[X]] {branches = [@case_0, @case_1]} : tensor<16x32xf32>
// CHECK-NEXT: return %[[S]]
// CHECK: func private @loop_cond(%i: tensor<i32>, %x: tensor<16x32xf32>, %n: tensor<i32>, %w: tensor<32xf32>) -> tensor<i1>
// CHECK: func private @loop_body(%i: tensor<i32>, %x: tensor<16x32xf32>, %n: tensor<i32>, %w: tensor<32xf32>) -> (tensor<i32>, tensor<16x32xf32>)
// CHECK: func private @case_0(%x: tensor<16x32xf32>) -> tensor<16x32xf32>
mesh @mesh = <["dp"=2, "tp"=4]>

func @loop(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %n: tensor<i32>, %w: tensor<32xf32>) -> tensor<16x32xf32> {
  %c0 = constant {value = dense<0>} : tensor<i32>
  %r0, %r1 = while %c0, %x, %n, %w {body = @loop_body, captures = 2, cond = @loop_cond} : tensor<i32>, tensor<16x32xf32, <@mesh, [{"dp"}, {?}]>>
  %s = case %n, %r1 {branches = [@case_0, @case_1]} : tensor<16x32xf32>
  return %s
}

func private @loop_cond(%i: tensor<i32>, %x: tensor<16x32xf32>, %n: tensor<i32>, %w: tensor<32xf32>) -> tensor<i1> {
  %0 = compare %i, %n {comparison_direction = LT} : tensor<i1>
  return %0
}

func private @loop_body(%i: tensor<i32>, %x: tensor<16x32xf32>, %n: tensor<i32>, %w: tensor<32xf32>) -> (tensor<i32>, tensor<16x32xf32>) {
  %one = constant {value = dense<1>} : tensor<i32>
  %0 = add %i, %one : tensor<i32>
  %1 = broadcast_in_dim %w {broadcast_dimensions = [1]} : tensor<16x32xf32>
  %2 = add %x, %1 : tensor<16x32xf32>
  return %0, %2
}

func private @case_0(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = sine %x : tensor<16x32xf32>
  return %0
}

func private @case_1(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = cosine %x : tensor<16x32xf32>
  return %0
}

// -----

// A case without captures: each branch takes no argument.
// CHECK-LABEL: func @no_captures
// CHECK: %[[R:[a-z0-9_]+]] = case %{{.*}} {branches = [@zero, @one]} : tensor<4xf32>
// CHECK: func private @zero() -> tensor<4xf32>
func @no_captures(%i: tensor<i32>) -> tensor<4xf32> {
  %0 = case %i {branches = [@zero, @one]} : tensor<4xf32>
  return %0
}

func private @zero() -> tensor<4xf32> {
  %0 = constant {value = dense<0.0>} : tensor<4xf32>
  return %0
}

func private @one() -> tensor<4xf32> {
  %0 = constant {value = dense<1.0>} : tensor<4xf32>
  return %0
}
