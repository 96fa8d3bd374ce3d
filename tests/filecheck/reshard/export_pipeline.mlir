// export-pipeline: Shardy's export passes in order (what jaxlib's sdy-export-pipeline prints for
// this input; inline-meshes=false as jaxlib 0.10.2's older pipeline has no such step).
// RUN: shardc opt %s -p 'sdy-export-pipeline{inline-meshes=false}' | filecheck %s
// RUN: shardc opt %s -p 'sdy-export-pipeline{inline-meshes=false enable-insert-explicit-collectives=true}' | filecheck %s --check-prefix=COLL
// RUN: shardc opt %s -p sdy-export-pipeline | filecheck %s --check-prefix=INLINE
// RUN: shardc opt %s -p 'sdy-export-pipeline{inline-meshes=false enable-per-instruction-partitioning=true per-instruction-partitioning-filter=add,dot}' | filecheck %s --check-prefix=PIP

sdy.mesh @m = <["x"=2, "y"=4]>

// The argument's "y" does not divide 6: it keeps the sub-axis that does. The constraint becomes
// a reshard; without explicit collectives the dot keeps its operands.
// CHECK-LABEL: func @main(%arg0: tensor<6x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"y":(1)2}, {}]>}
// CHECK-NEXT: %[[C:.*]] = stablehlo.constant dense<1.000000e+00>
// CHECK-NEXT: %[[ADD:.*]] = stablehlo.add %arg1, %[[C]]
// CHECK-NEXT: %[[DOT:.*]] = stablehlo.dot_general %arg0, %[[ADD]]
// CHECK-NEXT: %[[R:.*]] = sdy.reshard %[[DOT]] <@m, [{}, {"y"}]>
// CHECK-NEXT: return %[[R]]
// With them: the contracting dim is sliced on "x", the partial sums all-reduced, and the result
// moved to the constraint's sharding.
// COLL-LABEL: func @main
// COLL:      %[[C:.*]] = sdy.all_slice [{"x"}, {}] %cst
// COLL-NEXT: %[[ADD:.*]] = stablehlo.add %arg1, %[[C]]
// COLL-NEXT: %[[LHS:.*]] = sdy.all_slice [{}, {"x"}] %arg0 out_sharding=<@m, [{"y":(1)2}, {"x"}]>
// COLL-NEXT: %[[DOT:.*]] = stablehlo.dot_general %[[LHS]], %[[ADD]]
// COLL-NEXT: %[[SUM:.*]] = sdy.all_reduce {"x"} %[[DOT]]
// COLL-NEXT: %[[S:.*]] = sdy.all_slice [{}, {"y":(2)2}] %[[SUM]]
// COLL-NEXT: %[[P:.*]] = sdy.collective_permute %[[S]] out_sharding=<@m, [{"y":(2)2}, {"y":(1)2}]>
// COLL-NEXT: %[[A:.*]] = sdy.all_to_all [{"y":(2)2}: 0->1] %[[P]] out_sharding=<@m, [{}, {"y"}]>
// COLL-NEXT: return %[[A]]
// By default the meshes end inlined in every sharding, the symbol gone.
// INLINE-NOT: sdy.mesh
// INLINE-LABEL: func.func @main(%arg0: tensor<6x16xf32> {sdy.sharding = #sdy.sharding<mesh<["x"=2, "y"=4]>, [{"y":(1)2}, {}]>}
// INLINE: %[[DOT:.*]] = stablehlo.dot_general
// INLINE-NEXT: %[[R:.*]] = sdy.reshard %[[DOT]] <mesh<["x"=2, "y"=4]>, [{}, {"y"}]>
// INLINE-NEXT: return %[[R]]
// With per-instruction partitioning (the add and the dot only): each runs alone on its devices
// inside a manual computation; the reshards between them stay global.
// PIP-LABEL: func.func @main
// PIP: %[[ADD:.*]] = sdy.manual_computation(%arg1, %{{.*}}) {{.*}} manual_axes={"x"}
// PIP-NEXT: stablehlo.add
// PIP: sdy.manual_computation(%{{.*}}, %[[ADD]]) {{.*}} manual_axes={"y", "x"}
// PIP-NEXT: stablehlo.dot_general
// PIP-NEXT: "stablehlo.all_reduce"
func.func @main(%arg0: tensor<6x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"y"}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}) -> (tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"y"}]>}) {
  %c = stablehlo.constant dense<1.0> : tensor<16x8xf32>
  %0 = stablehlo.add %arg1, %c {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : tensor<16x8xf32>
  %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {"y"}]>]>} : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %2 = sdy.sharding_constraint %1 <@m, [{}, {"y"}]> : tensor<6x8xf32>
  return %2 : tensor<6x8xf32>
}
