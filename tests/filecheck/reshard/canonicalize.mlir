// canonicalize: local rewrites of reshards and collectives, to a fixed point.
// RUN: shardc opt %s -p canonicalize --split-input-file | filecheck %s

// reshard(reshard(x)) -> reshard(x); the inner one is dead and goes.
// CHECK-LABEL: func @chain
// CHECK-NEXT: %[[R:.*]] = reshard %a : tensor<16x16xf32, <@m, [{}, {"x"}]>>
// CHECK-NEXT: return %[[R]]
mesh @m = <["x"=4, "y"=2]>
func @chain(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{}, {"x"}]>> {
  %0 = reshard %a : tensor<16x16xf32, <@m, [{}, {}]>>
  %1 = reshard %0 : tensor<16x16xf32, <@m, [{"y"}, {}]>>
  %2 = reshard %1 : tensor<16x16xf32, <@m, [{}, {"x"}]>>
  return %2
}

// -----

// A chain whose middle value has another user is kept (folding would move its data twice).
// CHECK-LABEL: func @chain_shared
// CHECK-NEXT: %[[A:.*]] = reshard %a : tensor<16x16xf32, <@m, [{}, {}]>>
// CHECK-NEXT: %[[B:.*]] = reshard %[[A]] : tensor<16x16xf32, <@m, [{}, {"x"}]>>
// CHECK-NEXT: return %[[A]], %[[B]]
mesh @m = <["x"=4, "y"=2]>
func @chain_shared(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> (tensor<16x16xf32, <@m, [{}, {}]>>, tensor<16x16xf32, <@m, [{}, {"x"}]>>) {
  %0 = reshard %a : tensor<16x16xf32, <@m, [{}, {}]>>
  %1 = reshard %0 : tensor<16x16xf32, <@m, [{}, {"x"}]>>
  return %0, %1
}

// -----

// No-op reshards and collectives with empty axes disappear.
// CHECK-LABEL: func @noops
// CHECK-NEXT: %[[T:.*]] = tanh %a
// CHECK-NEXT: return %[[T]]
mesh @m = <["x"=4, "y"=2]>
func @noops(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{"x"}, {}]>> {
  %0 = reshard %a : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %1 = all_gather %0 {gathering_axes = [[], []]} : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %2 = all_slice %1 {slicing_axes = [[], []]} : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %3 = tanh %2 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  return %3
}

// -----

// all_reduce then all_slice over the same axes -> reduce_scatter.
// CHECK-LABEL: func @reduce_scatter
// CHECK-NEXT: %[[RS:.*]] = reduce_scatter %u {scatter_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: return %[[RS]]
mesh @m = <["x"=4, "y"=2]>
func @reduce_scatter(%u: tensor<8x16xf32, <@m, [{"x"}, {}], unreduced={"y"}>>) -> tensor<8x16xf32, <@m, [{"x"}, {"y"}]>> {
  %0 = all_reduce %u {reduction_axes = ["y"]} : tensor<8x16xf32, <@m, [{"x"}, {}]>>
  %1 = all_slice %0 {slicing_axes = [[], ["y"]]} : tensor<8x16xf32, <@m, [{"x"}, {"y"}]>>
  return %1
}

// -----

// Slicing fewer axes than were reduced: all_reduce the rest, reduce_scatter the sliced ones.
// CHECK-LABEL: func @partial_reduce_scatter
// CHECK-NEXT: %[[AR:.*]] = all_reduce %u {reduction_axes = ["x"]} : tensor<8x16xf32, <@m, [{}, {}], unreduced={"y"}>>
// CHECK-NEXT: %[[RS:.*]] = reduce_scatter %[[AR]] {scatter_axes = [["y"], []]} : tensor<8x16xf32, <@m, [{"y"}, {}]>>
// CHECK-NEXT: return %[[RS]]
mesh @m = <["x"=4, "y"=2]>
func @partial_reduce_scatter(%u: tensor<8x16xf32, <@m, [{}, {}], unreduced={"x", "y"}>>) -> tensor<8x16xf32, <@m, [{"y"}, {}]>> {
  %0 = all_reduce %u {reduction_axes = ["x", "y"]} : tensor<8x16xf32, <@m, [{}, {}]>>
  %1 = all_slice %0 {slicing_axes = [["y"], []]} : tensor<8x16xf32, <@m, [{"y"}, {}]>>
  return %1
}

// -----

// all_gather and all_slice of the same axes cancel, in either order.
// CHECK-LABEL: func @cancel
// CHECK-NEXT: %[[T:.*]] = tanh %a
// CHECK-NEXT: %[[U:.*]] = tanh %[[T]]
// CHECK-NEXT: return %[[U]]
mesh @m = <["x"=4, "y"=2]>
func @cancel(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{"x"}, {}]>> {
  %0 = all_gather %a {gathering_axes = [["x"], []]} : tensor<16x16xf32, <@m, [{}, {}]>>
  %1 = all_slice %0 {slicing_axes = [["x"], []]} : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %2 = tanh %1 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %3 = all_slice %2 {slicing_axes = [[], ["y"]]} : tensor<16x16xf32, <@m, [{"x"}, {"y"}]>>
  %4 = all_gather %3 {gathering_axes = [[], ["y"]]} : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %5 = tanh %4 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  return %5
}

// -----

// Gathering other axes than were sliced does not cancel.
// CHECK-LABEL: func @no_cancel
// CHECK-NEXT: %[[G:.*]] = all_gather %a
// CHECK-NEXT: %[[S:.*]] = all_slice %[[G]]
// CHECK-NEXT: return %[[S]]
mesh @m = <["x"=4, "y"=2]>
func @no_cancel(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{"y"}, {}]>> {
  %0 = all_gather %a {gathering_axes = [["x"], []]} : tensor<16x16xf32, <@m, [{}, {}]>>
  %1 = all_slice %0 {slicing_axes = [["y"], []]} : tensor<16x16xf32, <@m, [{"y"}, {}]>>
  return %1
}

// -----

// Dead ops go, unless they have side effects (custom_call).
// CHECK-LABEL: func @dead
// CHECK-NEXT: %[[C:.*]] = custom_call %a
// CHECK-NEXT: return %a
mesh @m = <["x"=4, "y"=2]>
func @dead(%a: tensor<16xf32, <@m, [{"x"}]>>) -> tensor<16xf32, <@m, [{"x"}]>> {
  %0 = tanh %a : tensor<16xf32, <@m, [{"x"}]>>
  %1 = all_gather %0 {gathering_axes = [["x"]]} : tensor<16xf32, <@m, [{}]>>
  %2 = constant {value = dense<0.0>} : tensor<16xf32>
  %3 = custom_call %a {call_target_name = "print"} : tensor<16xf32, <@m, [{"x"}]>>
  return %a
}
