// resolve-permutation-factors stops, located, where shardc does not build what jaxlib builds: the
// halo exchange of a reverse whose reversed dim does not divide by its shard count (7 over 2).
// RUN: not shardc opt %s -p 'sdy-resolve-permutation-factors' 2>&1 | filecheck %s
// Without halo exchange the same reverse is replicated.
// RUN: shardc opt %s -p 'sdy-resolve-permutation-factors{enable-halo-exchange=false}' | filecheck %s --check-prefix=REPL

// CHECK: resolve_permutation_factors_errors.mlir:[[# @LINE + 7]]:3: error: in pass 'resolve-permutation-factors': 'reverse' op: a reversed dim does not divide by its shard count; its halo exchange is not implemented in shardc (use enable-halo-exchange=false to replicate it)
// CHECK-NOT: Traceback
// REPL: %[[R:.*]] = sdy.reshard %arg0 <@m, [{}]> : tensor<7xf32>
// REPL-NEXT: %[[REV:.*]] = stablehlo.reverse %[[R]], dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>}
// REPL-NEXT: sdy.reshard %[[REV]] <@m, [{"x"}]> : tensor<7xf32>
sdy.mesh @m = <["x"=2]>
func.func @main(%arg0: tensor<7xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<7xf32> {
  %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}]>]>} : tensor<7xf32>
  return %0 : tensor<7xf32>
}
