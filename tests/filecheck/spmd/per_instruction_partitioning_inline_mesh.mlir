// sdy-per-instruction-partitioning on shardings with an inline mesh: the manual computation names
// a declared mesh, `@mesh` made for it (Shardy's getOrCreateMeshSymbol), or an equal declared one.
// RUN: shardc opt %s -p sdy-per-instruction-partitioning | filecheck %s

// CHECK:      sdy.mesh @mesh = <["x"=2]>
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[M:.*]] = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%[[A:.*]]: tensor<4xf32>) {
// CHECK-NEXT:   %[[N:.*]] = stablehlo.negate %[[A]] : tensor<4xf32>
// CHECK-NEXT:   sdy.return %[[N]] : tensor<4xf32>
// CHECK-NEXT: } : (tensor<8xf32>) -> tensor<8xf32>
// The second op finds the mesh the first one declared.
// CHECK-NEXT: sdy.manual_computation(%[[M]]) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{}]>] manual_axes={"x"}
// CHECK-NEXT:   "stablehlo.all_gather"
// CHECK-NOT:  sdy.mesh
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<mesh<["x"=2]>, [{"x"}]>}) -> tensor<8xf32> {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<mesh<["x"=2]>, [{"x"}]>]>} : tensor<8xf32>
  %1 = sdy.reshard %0 <mesh<["x"=2]>, [{}]> : tensor<8xf32>
  return %1 : tensor<8xf32>
}
