// reshard-to-collectives: each reshard becomes the collectives Shardy's algorithm picks.
// Expected text is what jaxlib's sdy-reshard-to-collectives prints for the same input.
// RUN: shardc opt %s -p sdy-reshard-to-collectives | filecheck %s
// RUN: shardc opt %s -p 'reshard-to-collectives{keep-redundant-reshards=true}' | filecheck %s --check-prefix=KEEP

sdy.mesh @m = <["a"=2, "b"=4]>
sdy.mesh @m3 = <["a"=2, "b"=2, "c"=2]>
sdy.mesh @m8 = <["a"=8]>

// A dim's axis moves to another dim: one all_to_all.
// CHECK-LABEL: func @move_axis
// CHECK-NEXT: %[[A2A:.*]] = sdy.all_to_all [{"b"}: 0->1] %arg0 out_sharding=<@m, [{}, {"b"}]>
// CHECK-NEXT: return %[[A2A]]
func.func @move_axis(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}, {}]>}) -> tensor<8x8xf32> {
  %0 = sdy.reshard %arg0 <@m, [{}, {"b"}]> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// Swapping the axes of two dims: one collective_permute, not two all_to_alls.
// CHECK-LABEL: func @swap_dims
// CHECK-NEXT: %[[CP:.*]] = sdy.collective_permute %arg0 out_sharding=<@m3, [{"b"}, {"a"}]>
// CHECK-NEXT: return %[[CP]]
func.func @swap_dims(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m3, [{"a"}, {"b"}]>}) -> tensor<8x8xf32> {
  %0 = sdy.reshard %arg0 <@m3, [{"b"}, {"a"}]> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// The free axis is sliced at the source dim first, so the all_to_all lands in order.
// CHECK-LABEL: func @slice_then_all_to_all
// CHECK-NEXT: %[[SLICE:.*]] = sdy.all_slice [{"b"}, {}] %arg0 out_sharding=<@m3, [{"a", "b"}, {}]>
// CHECK-NEXT: %[[A2A:.*]] = sdy.all_to_all [{"a", "b"}: 0->1] %[[SLICE]] out_sharding=<@m3, [{}, {"a", "b"}]>
// CHECK-NEXT: return %[[A2A]]
func.func @slice_then_all_to_all(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m3, [{"a"}, {}]>}) -> tensor<8x8xf32> {
  %0 = sdy.reshard %arg0 <@m3, [{}, {"a", "b"}]> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// A sub-axis leaves its dim: all_to_all of the minor part, then all_gather of the rest.
// CHECK-LABEL: func @sub_axes
// CHECK-NEXT: %[[A2A:.*]] = sdy.all_to_all [{"a":(4)2}: 0->1] %arg0 out_sharding=<@m8, [{"a":(1)4}, {"a":(4)2}]>
// CHECK-NEXT: %[[AG:.*]] = sdy.all_gather [{"a":(1)4}, {}] %[[A2A]] out_sharding=<@m8, [{}, {"a":(4)2}]>
// CHECK-NEXT: return %[[AG]]
func.func @sub_axes(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m8, [{"a"}, {}]>}) -> tensor<16x8xf32> {
  %0 = sdy.reshard %arg0 <@m8, [{}, {"a":(4)2}]> : tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// The reshard reads through the propagation barrier; a replicated target gathers everything.
// CHECK-LABEL: func @barrier_to_replicated
// CHECK-NEXT: sdy.propagation_barrier %arg0
// CHECK-NEXT: %[[AG:.*]] = sdy.all_gather [{"a"}, {"b"}] %arg0 out_sharding=<@m, [{}, {}]>
// CHECK-NEXT: return %[[AG]]
func.func @barrier_to_replicated(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {"b"}]>}) -> tensor<8x8xf32> {
  %0 = sdy.propagation_barrier %arg0 allowed_direction=NONE : tensor<8x8xf32>
  %1 = sdy.reshard %0 <@m, [{}, {}]> : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// Unreduced axes stay unreduced through the collectives.
// CHECK-LABEL: func @keeps_unreduced
// CHECK-NEXT: %[[A2A:.*]] = sdy.all_to_all [{"b"}: 0->1] %arg0 out_sharding=<@m, [{}, {"b"}], unreduced={"a"}>
// CHECK-NEXT: return %[[A2A]]
func.func @keeps_unreduced(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"b"}, {}], unreduced={"a"}>}) -> tensor<8x8xf32> {
  %0 = sdy.reshard %arg0 <@m, [{}, {"b"}], unreduced={"a"}> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// A reshard to the layout its operand has disappears (stays with keep-redundant-reshards).
// CHECK-LABEL: func @redundant
// CHECK-NEXT: return %arg0
// KEEP-LABEL: func @redundant
// KEEP-NEXT: %[[R:.*]] = sdy.reshard %arg0 <@m, [{"a"}, {}]>
// KEEP-NEXT: return %[[R]]
func.func @redundant(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {}]>}) -> tensor<8x8xf32> {
  %0 = sdy.reshard %arg0 <@m, [{"a"}, {}]> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// An operand without a sharding is replicated on the target's mesh: one all_slice, its operand
// printed without a sharding (as Shardy prints it).
// CHECK-LABEL: func @slice_unsharded
// CHECK-NEXT: %[[SL:.*]] = sdy.all_slice [{"b"}, {}] %arg0 out_sharding=<@m, [{"b"}, {}]>
// CHECK-NEXT: return %[[SL]]
func.func @slice_unsharded(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sdy.reshard %arg0 <@m, [{"b"}, {}]> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
