// pad-for-divisibility: values whose sharding does not divide a dim grow to a shape it divides.
// RUN: shardc opt %s -p sdy-pad-for-divisibility | filecheck %s

sdy.mesh @m = <["a"=3, "b"=2]>

// A fresh zero padding follows the value through the collective and an element-wise op; the
// gather slices the padding off again.
// CHECK-LABEL: func @slice_compute_gather
// CHECK-NEXT: %[[Z:.*]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[P:.*]] = stablehlo.pad %arg0, %[[Z]], low = [0, 0], high = [2, 0], interior = [0, 0] : (tensor<10x4xf32>, tensor<f32>) -> tensor<12x4xf32>
// CHECK-NEXT: %[[S:.*]] = sdy.all_slice [{"a", "b"}, {}] %[[P]] out_sharding=<@m, [{"a", "b"}, {}]> : tensor<12x4xf32>
// CHECK-NEXT: %[[E:.*]] = stablehlo.exponential %[[S]] {{.*}} : tensor<12x4xf32>
// CHECK-NEXT: %[[G:.*]] = sdy.all_gather [{"a", "b"}, {}] %[[E]] out_sharding=<@m, [{}, {}]> : tensor<12x4xf32>
// CHECK-NEXT: %[[T:.*]] = stablehlo.slice %[[G]] [0:10, 0:4] {{.*}} : (tensor<12x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT: return %[[T]]
func.func @slice_compute_gather(%arg0: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %0 = sdy.all_slice [{"a", "b"}, {}] %arg0 out_sharding=<@m, [{"a", "b"}, {}]> : tensor<10x4xf32>
  %1 = stablehlo.exponential %0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"a", "b"}, {}]>]>} : tensor<10x4xf32>
  %2 = sdy.all_gather [{"a", "b"}, {}] %1 out_sharding=<@m, [{}, {}]> : tensor<10x4xf32>
  return %2 : tensor<10x4xf32>
}

// exp(0) is not 0: the contracting dim's padding is masked back to zero before the dot.
// CHECK-LABEL: func @mask_before_contraction
// CHECK:      %[[LHS:.*]] = stablehlo.exponential
// CHECK:      %[[IOTA:.*]] = stablehlo.iota dim = 1 {{.*}} : tensor<2x6xi32>
// CHECK-NEXT: %[[N:.*]] = stablehlo.constant dense<5> : tensor<i32>
// CHECK-NEXT: %[[NS:.*]] = stablehlo.broadcast_in_dim %[[N]], dims = []
// CHECK-NEXT: %[[OK:.*]] = stablehlo.compare LT, %[[IOTA]], %[[NS]]
// CHECK-NEXT: %[[ZS:.*]] = stablehlo.broadcast_in_dim %[[ZERO:.*]], dims = []
// CHECK-NEXT: %[[SEL:.*]] = stablehlo.select %[[OK]], %[[LHS]], %[[ZS]]
// CHECK-NEXT: %[[DOT:.*]] = stablehlo.dot_general %[[SEL]], %[[RHS:.*]], contracting_dims = [1] x [0] {{.*}} : (tensor<2x6xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
func.func @mask_before_contraction(%arg0: tensor<2x5xf32>, %arg1: tensor<5x4xf32>) -> tensor<2x4xf32> {
  %0 = sdy.all_slice [{}, {"a"}] %arg0 out_sharding=<@m, [{}, {"a"}]> : tensor<2x5xf32>
  %1 = stablehlo.exponential %0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"a"}]>]>} : tensor<2x5xf32>
  %2 = sdy.all_slice [{"a"}, {}] %arg1 out_sharding=<@m, [{"a"}, {}]> : tensor<5x4xf32>
  %3 = stablehlo.dot_general %1, %2, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}]>]>} : (tensor<2x5xf32>, tensor<5x4xf32>) -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// Known zero padding needs no mask: the dot reads the slices directly.
// CHECK-LABEL: func @known_zero_padding
// CHECK-NOT:  stablehlo.select
// CHECK:      %[[L:.*]] = sdy.all_slice [{}, {"b"}] %{{.*}} : tensor<4x4xf32>
// CHECK:      %[[R:.*]] = sdy.all_slice [{"b"}, {}] %{{.*}} : tensor<4x2xf32>
// CHECK-NEXT: stablehlo.dot_general %[[L]], %[[R]]
func.func @known_zero_padding(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %0 = sdy.all_slice [{}, {"b"}] %arg0 out_sharding=<@m, [{}, {"b"}]> : tensor<4x3xf32>
  %1 = sdy.all_slice [{"b"}, {}] %arg1 out_sharding=<@m, [{"b"}, {}]> : tensor<3x2xf32>
  %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}]>]>} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}
