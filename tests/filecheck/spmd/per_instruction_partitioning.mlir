// sdy-per-instruction-partitioning: each selected op alone through the partitioner sub-pipeline,
// its device-local code wrapped in a manual computation over the axes its shardings use.
// RUN: shardc opt %s -p sdy-per-instruction-partitioning | filecheck %s
// RUN: shardc opt %s -p 'sdy-per-instruction-partitioning{filter=slice,dot}' | filecheck %s --check-prefix=NAMES
// RUN: shardc opt %s -p "sdy-per-instruction-partitioning{filter='selectHigh=1, selectLow=1'}" | filecheck %s --check-prefix=RANGE
// RUN: shardc opt %s -p 'sdy-per-instruction-partitioning{filter=selectLow=2,add}' | filecheck %s --check-prefix=BOTH

sdy.mesh @m = <["x"=2, "y"=2]>

// The dot's contracting dim is cut by "y": the body all-reduces the partial sums over "y"
// (devices 0,1 and 2,3). The negate has no sharded value: no candidate, left global.
// CHECK-LABEL: func.func @main
// CHECK:      %[[DOT:.*]] = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@m, [{"x"}, {"y"}]>, <@m, [{"y"}, {}]>] out_shardings=[<@m, [{"x"}, {}]>] manual_axes={"x", "y"} (%[[L:.*]]: tensor<4x8xf32>, %[[R:.*]]: tensor<8x4xf32>) {
// CHECK-NEXT:   %[[P:.*]] = stablehlo.dot_general %[[L]], %[[R]], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:   %[[S:.*]] = "stablehlo.all_reduce"(%[[P]]) {{.*}}replica_groups = dense<{{\[\[}}0, 1], [2, 3]]>
// CHECK:        sdy.return %[[S]] : tensor<4x4xf32>
// CHECK-NEXT: } : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: %[[NEG:.*]] = stablehlo.negate %arg2 : tensor<4xf32>
// Only "x" is used: only "x" is manual.
// CHECK-NEXT: %[[ADD:.*]] = sdy.manual_computation(%[[DOT]], %[[DOT]]) {{.*}} manual_axes={"x"} (%[[A:.*]]: tensor<4x4xf32>, %[[B:.*]]: tensor<4x4xf32>) {
// CHECK-NEXT:   %[[SUM:.*]] = stablehlo.add %[[A]], %[[B]] : tensor<4x4xf32>
// CHECK-NEXT:   sdy.return %[[SUM]]
// The slice's 3 rows do not divide by 2: its result is padded to 4 rows (the limit grows by one)
// and sliced back after the manual computation.
// CHECK:      %[[SL:.*]] = sdy.manual_computation(%[[ADD]]) in_shardings=[<@m, [{"x"}, {}]>] out_shardings=[<@m, [{"x"}, {}]>] manual_axes={"x"}
// CHECK-NEXT:   %[[G:.*]] = "stablehlo.all_gather"
// CHECK-NEXT:   %{{.*}} = stablehlo.slice %[[G]] [1:5, 0:4]
// CHECK:      } : (tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[BACK:.*]] = stablehlo.slice %[[SL]] [0:3, 0:4] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : (tensor<4x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[ADD]], %[[BACK]], %[[NEG]]

// By name: the dot and the slice; the add stays global.
// NAMES:      %[[DOT:.*]] = sdy.manual_computation(%arg0, %arg1)
// NAMES:      %[[ADD:.*]] = stablehlo.add %[[DOT]], %[[DOT]] {sdy.sharding
// NAMES-NEXT: %{{.*}} = sdy.manual_computation(%[[ADD]])
// NAMES:      stablehlo.slice %[[G:.*]] [1:5, 0:4]

// By position among the candidates (dot 0, add 1, slice 2; the negate is none): the add alone.
// RANGE:      %[[DOT:.*]] = stablehlo.dot_general %arg0, %arg1
// RANGE:      %[[ADD:.*]] = sdy.manual_computation(%[[DOT]], %[[DOT]])
// RANGE:      %{{.*}} = stablehlo.slice %[[ADD]] [1:4, 0:4]
// RANGE-NOT:  sdy.manual_computation

// From position 2 on, and named add: nothing is both (the slice is not an add).
// BOTH-NOT: sdy.manual_computation
func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {"y"}]>}, %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"y"}, {}]>}, %arg2: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<3x4xf32>, tensor<4xf32>) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.negate %arg2 : tensor<4xf32>
  %2 = stablehlo.add %0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : tensor<8x4xf32>
  %3 = stablehlo.slice %2 [1:4, 0:4] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : (tensor<8x4xf32>) -> tensor<3x4xf32>
  return %2, %3, %1 : tensor<8x4xf32>, tensor<3x4xf32>, tensor<4xf32>
}
