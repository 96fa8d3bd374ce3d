// cse: a pure op repeating an earlier one (name, operands, attributes, result types and
// shardings) goes and its uses read the earlier op; chains merge op by op. Collectives, random
// numbers and ops with side effects stay; constants differing only in -0.0 stay apart.
// RUN: shardc opt %s -p cse | filecheck %s

mesh @m = <["x"=2]>

// CHECK-LABEL: func @main(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: %[[I:.*]] = iota {iota_dimension = 0} : tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = cosine %[[I]] : tensor<4xf32>
// CHECK-NEXT: %[[Z:.*]] = constant {value = dense<0.0>} : tensor<f32>
// CHECK-NEXT: %[[N:.*]] = constant {value = dense<-0.0>} : tensor<f32>
// CHECK-NEXT: %[[BZ:.*]] = broadcast_in_dim %[[Z]] {broadcast_dimensions = []} : tensor<4xf32>
// CHECK-NEXT: %[[BN:.*]] = broadcast_in_dim %[[N]] {broadcast_dimensions = []} : tensor<4xf32>
// CHECK-NEXT: %[[M1:.*]] = multiply %[[C]], %[[A]] : tensor<4xf32>
// CHECK-NEXT: %[[S1:.*]] = subtract %[[C]], %[[A]] : tensor<4xf32>
// CHECK-NEXT: %[[R1:.*]] = spmd.all_reduce %[[M1]]
// CHECK-NEXT: %[[R2:.*]] = spmd.all_reduce %[[M1]]
// CHECK-NEXT: %[[T1:.*]] = add %[[M1]], %[[M1]] : tensor<4xf32>
// CHECK-NEXT: %[[T2:.*]] = add %[[T1]], %[[S1]] : tensor<4xf32>
// CHECK-NEXT: %[[T3:.*]] = add %[[T2]], %[[BZ]] : tensor<4xf32>
// CHECK-NEXT: %[[T4:.*]] = add %[[T3]], %[[BN]] : tensor<4xf32>
// CHECK-NEXT: %[[T5:.*]] = add %[[R1]], %[[R2]] : tensor<4xf32>
// CHECK-NEXT: %[[T6:.*]] = add %[[T4]], %[[T5]] : tensor<4xf32>
// CHECK-NEXT: return %[[T6]]
func @main(%a: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[4]], in_shardings = [<@m, [{}]>], out_shapes = [[4]], out_shardings = [<@m, [{}]>]} {
  %0 = iota {iota_dimension = 0} : tensor<4xf32>
  %1 = cosine %0 : tensor<4xf32>
  %2 = iota {iota_dimension = 0} : tensor<4xf32>
  %3 = cosine %2 : tensor<4xf32>
  %z0 = constant {value = dense<0.0>} : tensor<f32>
  %z1 = constant {value = dense<-0.0>} : tensor<f32>
  %z2 = constant {value = dense<0.0>} : tensor<f32>
  %b0 = broadcast_in_dim %z0 {broadcast_dimensions = []} : tensor<4xf32>
  %b1 = broadcast_in_dim %z1 {broadcast_dimensions = []} : tensor<4xf32>
  %b2 = broadcast_in_dim %z2 {broadcast_dimensions = []} : tensor<4xf32>
  %4 = multiply %1, %a : tensor<4xf32>
  %5 = multiply %3, %a : tensor<4xf32>
  %6 = subtract %1, %a : tensor<4xf32>
  %7 = subtract %3, %a : tensor<4xf32>
  %r0 = spmd.all_reduce %4 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  %r1 = spmd.all_reduce %5 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  %8 = add %4, %5 : tensor<4xf32>
  %9 = add %8, %7 : tensor<4xf32>
  %10 = add %9, %b2 : tensor<4xf32>
  %11 = add %10, %b1 : tensor<4xf32>
  %12 = add %r0, %r1 : tensor<4xf32>
  %13 = add %11, %12 : tensor<4xf32>
  return %13
}

// Shardings are part of the type: copies sharded differently stay apart (Shardy's splitter
// made them for that), copies sharded alike merge.
// CHECK-LABEL: func @global(
// CHECK-NEXT: %[[I0:.*]] = iota {iota_dimension = 0} : tensor<8xf32, <@m, [{"x"}]>>
// CHECK-NEXT: %[[I1:.*]] = iota {iota_dimension = 0} : tensor<8xf32, <@m, [{}]>>
// CHECK-NEXT: %[[S:.*]] = add %[[I0]], %[[I0]]
// CHECK-NEXT: return %[[S]], %[[I1]]
func @global() -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = iota {iota_dimension = 0} : tensor<8xf32, <@m, [{"x"}]>>
  %1 = iota {iota_dimension = 0} : tensor<8xf32, <@m, [{}]>>
  %2 = iota {iota_dimension = 0} : tensor<8xf32, <@m, [{"x"}]>>
  %3 = add %0, %2 : tensor<8xf32, <@m, [{"x"}]>>
  return %3, %1
}
