// resolve-permutation-factors: the halo exchange of a reverse whose reversed dim does not divide
// by its shard count (the padding fits in one shard). Expected text is what jaxlib 0.10.2's
// sdy-resolve-permutation-factors prints for the same input (tests/reshard/test_halo_exchange.py).
// RUN: shardc opt %s -p 'sdy-resolve-permutation-factors' | filecheck %s
// RUN: shardc opt %s -p 'sdy-resolve-permutation-factors{enable-halo-exchange=false}' | filecheck %s --check-prefix=REPL

// CHECK: sdy.mesh @perm_reversed = <["x"=2, "y"=3], device_ids=[3, 4, 5, 0, 1, 2]>
// CHECK: sdy.mesh @quad_reversed = <["a"=4], device_ids=[2, 3, 0, 1]>
// CHECK: sdy.mesh @pq_reversed = <["p"=2, "q"=2], device_ids=[3, 2, 1, 0]>
// CHECK: sdy.mesh @m_reversed = <["x"=2], device_ids=[1, 0]>
sdy.mesh @m = <["x"=2]>
sdy.mesh @pq = <["p"=2, "q"=2]>
sdy.mesh @quad = <["a"=4]>
sdy.mesh @perm = <["x"=2, "y"=3], device_ids=[5, 4, 3, 2, 1, 0]>

// 7 over 2: pad to 8, each shard's last element goes to the next shard, the padding is now
// first; on the reversed mesh the local reverse is the global one; slice back to 7.
// CHECK-LABEL: func @one_dim
// CHECK-NEXT: %[[Z:.*]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[P:.*]] = stablehlo.pad %arg0, %[[Z]], low = [0], high = [1], interior = [0] {{.*}} -> tensor<8xf32>
// CHECK-NEXT: %[[H:.*]] = sdy.manual_computation(%[[P]]) in_shardings=[<@m, [{"x"}]>] out_shardings=[<@m, [{"x"}]>] manual_axes={"x"} (%[[L:.*]]: tensor<4xf32>) {
// CHECK-NEXT:   %[[T:.*]] = stablehlo.slice %[[L]] [3:4] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>}
// CHECK-NEXT:   %[[S:.*]] = "stablehlo.collective_permute"(%[[T]]) <{source_target_pairs = dense<{{\[\[}}0, 1]]> : tensor<1x2xi64>}>
// CHECK-NEXT:   %[[B:.*]] = stablehlo.slice %[[L]] [0:3]
// CHECK-NEXT:   %[[C:.*]] = stablehlo.concatenate %[[S]], %[[B]], dim = 0
// CHECK-NEXT:   sdy.return %[[C]] : tensor<4xf32>
// CHECK-NEXT: } : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[R:.*]] = sdy.reshard %[[H]] <@m_reversed, [{"x"}]> : tensor<8xf32>
// CHECK-NEXT: %[[REV:.*]] = stablehlo.reverse %[[R]], dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}]>]>} : tensor<8xf32>
// CHECK-NEXT: %[[OUT:.*]] = stablehlo.slice %[[REV]] [0:7]
// CHECK-NEXT: return %[[OUT]] : tensor<7xf32>
// REPL-LABEL: func @one_dim
// REPL-NEXT: %[[R:.*]] = sdy.reshard %arg0 <@m, [{}]> : tensor<7xf32>
// REPL-NEXT: %[[REV:.*]] = stablehlo.reverse %[[R]], dims = [0]
// REPL-NEXT: sdy.reshard %[[REV]] <@m, [{"x"}]> : tensor<7xf32>
func.func @one_dim(%arg0: tensor<7xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<7xf32> {
  %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}]>]>} : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Two padded dims: one shift per dim, in dim order, the second on the first's result; the
// pairs move along "p" (positions 0 -> 2) for dim 0 and along "q" (0 -> 1) for dim 1.
// CHECK-LABEL: func @two_dims
// CHECK: %[[P:.*]] = stablehlo.pad %arg0, %{{.*}} high = [1, 1], {{.*}} -> tensor<4x6xf32>
// CHECK-NEXT: %[[H:.*]] = sdy.manual_computation(%[[P]]) {{.*}} manual_axes={"p", "q"} (%[[L:.*]]: tensor<2x3xf32>) {
// CHECK-NEXT:   %[[T0:.*]] = stablehlo.slice %[[L]] [1:2, 0:3]
// CHECK-NEXT:   %[[S0:.*]] = "stablehlo.collective_permute"(%[[T0]]) <{source_target_pairs = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>}>
// CHECK-NEXT:   %[[B0:.*]] = stablehlo.slice %[[L]] [0:1, 0:3]
// CHECK-NEXT:   %[[C0:.*]] = stablehlo.concatenate %[[S0]], %[[B0]], dim = 0
// CHECK-NEXT:   %[[T1:.*]] = stablehlo.slice %[[C0]] [0:2, 2:3]
// CHECK-NEXT:   %[[S1:.*]] = "stablehlo.collective_permute"(%[[T1]]) <{source_target_pairs = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>}>
// CHECK-NEXT:   %[[B1:.*]] = stablehlo.slice %[[C0]] [0:2, 0:2]
// CHECK-NEXT:   %[[C1:.*]] = stablehlo.concatenate %[[S1]], %[[B1]], dim = 1
// CHECK-NEXT:   sdy.return %[[C1]]
// CHECK: sdy.reshard %[[H]] <@pq_reversed, [{"p"}, {"q"}]> : tensor<4x6xf32>
func.func @two_dims(%arg0: tensor<3x5xf32> {sdy.sharding = #sdy.sharding<@pq, [{"p"}, {"q"}]>}) -> tensor<3x5xf32> {
  %0 = stablehlo.reverse %arg0, dims = [0, 1] {sdy.sharding = #sdy.sharding_per_value<[<@pq, [{"p"}, {"q"}]>]>} : tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// Sub-axes: dim 0 is cut by "a":(1)2, whose next shard is two positions on; the whole "a" is
// manual, so dim 1 (cut by "a":(2)2) is local in the body too. An integer pads with 0.
// CHECK-LABEL: func @sub_axes
// CHECK-NEXT: %[[Z:.*]] = stablehlo.constant dense<0> : tensor<i32>
// CHECK-NEXT: %[[P:.*]] = stablehlo.pad %arg0, %[[Z]], low = [0, 0], high = [1, 0]
// CHECK-NEXT: sdy.manual_computation(%[[P]]) {{.*}} manual_axes={"a"} (%{{.*}}: tensor<3x4xi32>) {
// CHECK-NEXT:   stablehlo.slice %{{.*}} [2:3, 0:4] {sdy.sharding = #sdy.sharding_per_value<[<@quad, [{}, {}]>]>}
// CHECK-NEXT:   "stablehlo.collective_permute"(%{{.*}}) <{source_target_pairs = dense<{{\[\[}}0, 2], [1, 3]]>
// CHECK: <@quad_reversed, [{"a":(1)2}, {"a":(2)2}]>
func.func @sub_axes(%arg0: tensor<5x8xi32> {sdy.sharding = #sdy.sharding<@quad, [{"a":(1)2}, {"a":(2)2}]>}) -> tensor<5x8xi32> {
  %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@quad, [{"a":(1)2}, {"a":(2)2}]>]>} : tensor<5x8xi32>
  return %0 : tensor<5x8xi32>
}

// 5 over 4 pads 3, more than a shard of 2: replicated, as with enable-halo-exchange=false.
// CHECK-LABEL: func @too_much_padding
// CHECK-NEXT: %[[R:.*]] = sdy.reshard %arg0 <@quad, [{}]> : tensor<5xf32>
// CHECK-NEXT: stablehlo.reverse %[[R]], dims = [0]
func.func @too_much_padding(%arg0: tensor<5xf32> {sdy.sharding = #sdy.sharding<@quad, [{"a"}]>}) -> tensor<5xf32> {
  %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@quad, [{"a"}]>]>} : tensor<5xf32>
  return %0 : tensor<5xf32>
}

// Only "y" is manual; the body keeps "x" on dim 0. The pairs are device ids of the whole mesh:
// (x, y) sends to (x, y + 1), ids [5, 4, 3 | 2, 1, 0] (jaxlib 0.10.2 writes positions along "y"
// alone, docs/interop.md); the reversed mesh flips "y" in the device ids.
// CHECK-LABEL: func @device_ids
// CHECK: sdy.manual_computation(%{{.*}}) {{.*}} manual_axes={"y"} (%[[L:.*]]: tensor<4x3xf32>) {
// CHECK-NEXT:   %[[T:.*]] = stablehlo.slice %[[L]] [0:4, 1:3] {sdy.sharding = #sdy.sharding_per_value<[<@perm, [{"x"}, {}]>]>}
// CHECK-NEXT:   "stablehlo.collective_permute"(%[[T]]) <{source_target_pairs = dense<{{\[\[}}5, 4], [4, 3], [2, 1], [1, 0]]> : tensor<4x2xi64>}>
// CHECK: sdy.reshard %{{.*}} <@perm_reversed, [{"x"}, {"y"}]> : tensor<4x9xf32>
func.func @device_ids(%arg0: tensor<4x7xf32> {sdy.sharding = #sdy.sharding<@perm, [{"x"}, {"y"}]>}) -> tensor<4x7xf32> {
  %0 = stablehlo.reverse %arg0, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@perm, [{"x"}, {"y"}]>]>} : tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}
