// inline-meshes: every sharding writes its mesh inline (device ids and maximal meshes kept) and
// the sdy.mesh declarations go. Expected text is what jaxlib's sdy-inline-meshes prints.
// RUN: shardc opt %s -p 'sdy-inline-meshes' | filecheck %s
// A round trip: lifting the inlined meshes names them again, in the order the shardings are met
// (arguments and results first, then ops).
// RUN: shardc opt %s -p 'sdy-inline-meshes,sdy-lift-inlined-meshes' | filecheck %s --check-prefix=LIFT

// CHECK-NOT: sdy.mesh
// LIFT: sdy.mesh @mesh = <["a"=2, "b"=2]>
// LIFT-NEXT: sdy.mesh @maximal_mesh_5 = <[], device_ids=[5]>
// LIFT-NEXT: sdy.mesh @mesh_0 = <["a"=2, "b"=2], device_ids=[3, 2, 1, 0]>
sdy.mesh @grid = <["a"=2, "b"=2]>
sdy.mesh @flipped = <["a"=2, "b"=2], device_ids=[3, 2, 1, 0]>
sdy.mesh @one = <[], device_ids=[5]>

// CHECK-LABEL: func @main
// CHECK-SAME: %arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>}
// CHECK-SAME: -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<[], device_ids=[5]>, []>})
// CHECK-NEXT: %[[R:.*]] = sdy.reshard %arg0 <mesh<["a"=2, "b"=2], device_ids=[3, 2, 1, 0]>, [{}, {"b"}]>
// CHECK-NEXT: %[[C:.*]] = sdy.sharding_constraint %[[R]] <mesh<["a"=2, "b"=2]>, [{"b"}, {}]>
// CHECK-NEXT: %[[M:.*]] = sdy.manual_computation(%[[C]]) in_shardings=[<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>] out_shardings=[<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>] manual_axes={"a"}
// CHECK: return %[[M]]
// LIFT-LABEL: func @main
// LIFT-SAME: {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}
// LIFT-SAME: {sdy.sharding = #sdy.sharding<@maximal_mesh_5, []>}
// LIFT-NEXT: sdy.reshard %arg0 <@mesh_0, [{}, {"b"}]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@grid, [{"a"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@one, []>}) {
  %0 = sdy.reshard %arg0 <@flipped, [{}, {"b"}]> : tensor<8x8xf32>
  %1 = sdy.sharding_constraint %0 <@grid, [{"b"}, {}]> : tensor<8x8xf32>
  %2 = sdy.manual_computation(%1) in_shardings=[<@grid, [{"a"}, {}]>] out_shardings=[<mesh<["a"=2, "b"=2]>, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
    %3 = stablehlo.negate %arg1 : tensor<4x8xf32>
    sdy.return %3 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
