// lower-collectives{planner=shardy}: shardc's pipeline with Shardy's reshard algorithm. Where the
// two planners differ, the shardy lines are what jaxlib's sdy-reshard-to-collectives prints for
// the same reshard (tests/export_compare.py), and the default lines are shardc's cheapest plan.
// RUN: shardc opt %s -p 'lower-collectives{planner=shardy}' | filecheck %s
// RUN: shardc opt %s -p lower-collectives | filecheck %s --check-prefix=CHEAP

mesh @m = <["x"=2, "y"=4]>

// Unreduced to sharded: Shardy reduces everything, then slices (twice the ring bytes of the
// reduce_scatter shardc's planner picks; `canonicalize` fuses the pair back).
// CHECK-LABEL: func @reduce_then_slice
// CHECK-NEXT: %[[AR:.*]] = all_reduce %u {reduction_axes = ["x"]} : tensor<16x64xf32, <@m, [{}, {}]>>
// CHECK-NEXT: %[[SL:.*]] = all_slice %[[AR]] {slicing_axes = [["x"], []]} : tensor<16x64xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: return %[[SL]]
// CHEAP-LABEL: func @reduce_then_slice
// CHEAP-NEXT: %[[RS:.*]] = reduce_scatter %u {scatter_axes = [["x"], []]} : tensor<16x64xf32, <@m, [{"x"}, {}]>>
// CHEAP-NEXT: return %[[RS]]
func @reduce_then_slice(%u: tensor<16x64xf32, <@m, [{}, {}], unreduced={"x"}>>) -> tensor<16x64xf32, <@m, [{"x"}, {}]>> {
  %0 = reshard %u : tensor<16x64xf32, <@m, [{"x"}, {}]>>
  return %0
}

// Swapping the axes of two dims: Shardy permutes devices so that part of "y" is in place, then
// one all_to_all; the cheapest plan is three all_to_alls of smaller buffers.
// CHECK-LABEL: func @swap
// CHECK-NEXT: %[[CP:.*]] = collective_permute %a : tensor<16x64xf32, <@m, [{"y":(1)2}, {"x", "y":(2)2}]>>
// CHECK-NEXT: %[[A2A:.*]] = all_to_all %[[CP]] {params = [{"y":(2)2}: 1->0]} : tensor<16x64xf32, <@m, [{"y"}, {"x"}]>>
// CHECK-NEXT: return %[[A2A]]
// CHEAP-LABEL: func @swap
// CHEAP-NEXT: %[[T0:.*]] = all_to_all %a {params = [{"x"}: 0->1]}
// CHEAP-NEXT: %[[T1:.*]] = all_to_all %[[T0]] {params = [{"y", "x"}: 1->0]}
// CHEAP-NEXT: %[[T2:.*]] = all_to_all %[[T1]] {params = [{"x"}: 0->1]} : tensor<16x64xf32, <@m, [{"y"}, {"x"}]>>
// CHEAP-NEXT: return %[[T2]]
func @swap(%a: tensor<16x64xf32, <@m, [{"x"}, {"y"}]>>) -> tensor<16x64xf32, <@m, [{"y"}, {"x"}]>> {
  %0 = reshard %a : tensor<16x64xf32, <@m, [{"y"}, {"x"}]>>
  return %0
}

// Moving a dim's axes to another dim in the other order: Shardy reorders first (a
// collective_permute), then moves them in one all_to_all; the cheapest plan moves them one by one.
// CHECK-LABEL: func @move_reordered
// CHECK-NEXT: %[[CP:.*]] = collective_permute %a : tensor<16x64xf32, <@m, [{"y", "x"}, {}]>>
// CHECK-NEXT: %[[A2A:.*]] = all_to_all %[[CP]] {params = [{"y", "x"}: 0->1]} : tensor<16x64xf32, <@m, [{}, {"y", "x"}]>>
// CHECK-NEXT: return %[[A2A]]
// CHEAP-LABEL: func @move_reordered
// CHEAP-NEXT: %[[T0:.*]] = all_to_all %a {params = [{"y"}: 0->1]} : tensor<16x64xf32, <@m, [{"x"}, {"y"}]>>
// CHEAP-NEXT: %[[T1:.*]] = all_to_all %[[T0]] {params = [{"x"}: 0->1]} : tensor<16x64xf32, <@m, [{}, {"y", "x"}]>>
// CHEAP-NEXT: return %[[T1]]
func @move_reordered(%a: tensor<16x64xf32, <@m, [{"x", "y"}, {}]>>) -> tensor<16x64xf32, <@m, [{}, {"y", "x"}]>> {
  %0 = reshard %a : tensor<16x64xf32, <@m, [{}, {"y", "x"}]>>
  return %0
}
