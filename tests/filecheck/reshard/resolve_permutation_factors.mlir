// resolve-permutation-factors: every sharded permutation factor replicated (a reverse of
// evenly sharded dims: its operand resharded onto a device-reversed mesh). Expected text is
// what jaxlib 0.10.2's sdy-resolve-permutation-factors prints for the same input.
// RUN: shardc opt %s -p 'sdy-resolve-permutation-factors' | filecheck %s --check-prefixes=CHECK,HALO
// RUN: shardc opt %s -p 'sdy-resolve-permutation-factors{enable-halo-exchange=false}' | filecheck %s --check-prefixes=CHECK,REPL

// HALO: sdy.mesh @grid_reversed_0 = <["p"=4, "q"=2], device_ids=[6, 7, 4, 5, 2, 3, 0, 1]>
// HALO: sdy.mesh @grid_reversed = <["p"=4, "q"=2], device_ids=[1, 0, 3, 2, 5, 4, 7, 6]>
// CHECK: sdy.mesh @grid = <["p"=4, "q"=2]>
sdy.mesh @grid = <["p"=4, "q"=2]>

// The padded dim loses "p" for the pad and gets it back after; "q" (a pass-through dim) stays.
// CHECK-LABEL: func @pad_low_high
// CHECK: %[[C:.*]] = stablehlo.constant
// CHECK-NEXT: %[[IN:.*]] = sdy.reshard %arg0 <@grid, [{}, {"q"}]> : tensor<8x6xf32>
// CHECK-NEXT: %[[PAD:.*]] = stablehlo.pad %[[IN]], %[[C]], low = [2, 0], high = [-1, 0], interior = [1, 0] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{}, {"q"}]>]>}
// CHECK-NEXT: %[[OUT:.*]] = sdy.reshard %[[PAD]] <@grid, [{"p"}, {"q"}]> : tensor<16x6xf32>
// CHECK-NEXT: %[[NEG:.*]] = stablehlo.negate %[[OUT]]
func.func @pad_low_high(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@grid, [{"p"}, {"q"}]>}) -> tensor<16x6xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.pad %arg0, %c, low = [2, 0], high = [-1, 0], interior = [1, 0] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{"p"}, {"q"}]>]>} : (tensor<8x6xf32>, tensor<f32>) -> tensor<16x6xf32>
  %1 = stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{"p"}, {"q"}]>]>} : tensor<16x6xf32>
  return %1 : tensor<16x6xf32>
}

// A slice from 0, stride 1, that keeps each shard's size (ceil(16/4) == ceil(13/4)) needs no
// data from other devices; the sliced second dim does.
// CHECK-LABEL: func @slice_keeps_shards
// CHECK-NEXT: %[[IN:.*]] = sdy.reshard %arg0 <@grid, [{"p"}, {}]> : tensor<16x8xf32>
// CHECK-NEXT: %[[S:.*]] = stablehlo.slice %[[IN]] [0:13, 1:7] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{"p"}, {}]>]>}
// CHECK-NEXT: %[[OUT:.*]] = sdy.reshard %[[S]] <@grid, [{"p"}, {"q"}]> : tensor<13x6xf32>
// CHECK-NEXT: return %[[OUT]]
func.func @slice_keeps_shards(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@grid, [{"p"}, {"q"}]>}) -> tensor<13x6xf32> {
  %0 = stablehlo.slice %arg0 [0:13, 1:7] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{"p"}, {"q"}]>]>} : (tensor<16x8xf32>) -> tensor<13x6xf32>
  return %0 : tensor<13x6xf32>
}

// Reversing dim 1 (sharded by "q") reverses the device order along "q"; a reverse along "p"
// needs a second mesh, named with the next suffix and put first. A reverse of unsharded dims is
// left alone.
// CHECK-LABEL: func @reverse_even
// HALO-NEXT: %[[R1:.*]] = sdy.reshard %arg0 <@grid_reversed, [{}, {"q"}]> : tensor<4x8xf32>
// HALO-NEXT: %[[REV:.*]] = stablehlo.reverse %[[R1]], dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{}, {"q"}]>]>}
// HALO-NEXT: %[[R2:.*]] = sdy.reshard %arg1 <@grid_reversed_0, [{"p"}, {}]> : tensor<4x8xf32>
// HALO-NEXT: %[[REV2:.*]] = stablehlo.reverse %[[R2]], dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{"p"}, {}]>]>}
// REPL-NEXT: %[[R1:.*]] = sdy.reshard %arg0 <@grid, [{}, {}]> : tensor<4x8xf32>
// REPL-NEXT: %[[REV0:.*]] = stablehlo.reverse %[[R1]], dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{}, {}]>]>}
// REPL-NEXT: %[[REV:.*]] = sdy.reshard %[[REV0]] <@grid, [{}, {"q"}]> : tensor<4x8xf32>
// REPL-NEXT: %[[R2:.*]] = sdy.reshard %arg1 <@grid, [{}, {}]> : tensor<4x8xf32>
// REPL-NEXT: %[[REV1:.*]] = stablehlo.reverse %[[R2]], dims = [0]
// REPL-NEXT: %[[REV2:.*]] = sdy.reshard %[[REV1]] <@grid, [{"p"}, {}]> : tensor<4x8xf32>
// CHECK-NEXT: %[[REV3:.*]] = stablehlo.reverse %[[REV]], dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{}, {"q"}]>]>}
// CHECK-NEXT: return %[[REV3]], %[[REV2]]
func.func @reverse_even(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@grid, [{}, {"q"}]>}, %arg1: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@grid, [{"p"}, {}]>}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = stablehlo.reverse %arg0, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{}, {"q"}]>]>} : tensor<4x8xf32>
  %1 = stablehlo.reverse %arg1, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{"p"}, {}]>]>} : tensor<4x8xf32>
  %2 = stablehlo.reverse %0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@grid, [{}, {"q"}]>]>} : tensor<4x8xf32>
  return %2, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
