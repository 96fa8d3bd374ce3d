// Shardy's debug-sharding-origins (passes/propagation/shardy_debug.py): each axis names the user
// annotation it came from: `input: i`, `output: j`, `constraint_N`, `mc_M_input: i`,
// `mc_M_output: j`, or `self` where the value is that annotation. The pipeline is the one of
// Shardy's debugging lit tests; tests/propagation/test_shardy_debug_live.py checks the same
// output against jaxlib's Shardy on other programs.
// RUN: shardc opt %s --split-input-file -p 'sdy-add-data-flow-edges,sdy-apply-sharding-constraints{debug-sharding-origins=true},sdy-aggressive-propagate{debug-sharding-origins=true},sdy-sink-data-flow-edges{sink-debug-sharding-origins=true}' | filecheck %s

// An argument's own axes are `self`; the first matmul's axes come from the two arguments; the
// constraint is applied to its input first (it is `constraint_0`), which gives the weight of the
// second matmul its "tp"; the second matmul's "dp" comes back from the declared result.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[X:.*]]: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>, sdy.sharding_origins = {dp = "self"}}
// CHECK-SAME: %[[W1:.*]]: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>, sdy.sharding_origins = {tp = "self"}}
// CHECK-SAME: %[[W2:.*]]: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp", ?}, {?}]>, sdy.sharding_origins = {tp = "constraint_0"}}
// CHECK-SAME: -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>, sdy.sharding_origins = {dp = "self"}})
// CHECK-NEXT: %[[H:.*]] = stablehlo.dot_general %[[X]], %[[W1]], {{.*}}sdy.sharding_origins = [{dp = "input: 0", tp = "input: 1"}]
// CHECK-NEXT: %[[A:.*]] = stablehlo.tanh %[[H]] {{.*}}sdy.sharding_origins = [{dp = "constraint_0", tp = "constraint_0"}]
// CHECK-NEXT: %[[C:.*]] = sdy.sharding_constraint %[[A]] <@mesh, [{"dp"}, {"tp"}]> {sdy.sharding_origin_name = "constraint_0", sdy.sharding_origins = {dp = "self", tp = "self"}}
// CHECK-NEXT: %[[Y:.*]] = stablehlo.dot_general %[[C]], %[[W2]], {{.*}}sdy.sharding_origins = [{dp = "output: 0"}]
// CHECK-NEXT: return %[[Y]]
sdy.mesh @mesh = <["dp"=2, "tp"=4]>

func.func @mlp(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>},
               %w1: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>},
               %w2: tensor<32x16xf32>) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) {
  %h = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = stablehlo.tanh %h : tensor<8x32xf32>
  %c = sdy.sharding_constraint %a <@mesh, [{"dp"}, {"tp"}]> : tensor<8x32xf32>
  %y = stablehlo.dot_general %c, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A manual computation is `mc_0`: its in_sharding reaches the operand and the body
// (without the manual "dp"), its out_sharding the users of its result. Its edges' own origins
// are `self`, sunk onto the op.
// CHECK-LABEL: func.func @shard_map
// CHECK-SAME: %[[X:.*]]: tensor<8x16xf32> {{{.*}}sdy.sharding_origins = {dp = "mc_0_input: 0"}}
// CHECK-SAME: -> (tensor<8x16xf32> {{{.*}}sdy.sharding_origins = {dp = "mc_0_output: 0", tp = "mc_0_output: 0"}})
// CHECK-NEXT: %[[MC:.*]] = sdy.manual_computation(%[[X]])
// CHECK-NEXT: %[[E:.*]] = stablehlo.exponential %[[B:.*]] {{{.*}}sdy.sharding_origins = [{tp = "mc_0_input: 0"}]}
// CHECK-NEXT: sdy.return %[[E]]
// CHECK-NEXT: } {sdy.block_arg_sharding_origins = [{dp = "self", tp = "self"}], sdy.result_sharding_origins = [{dp = "self", tp = "self"}], sdy.sharding_origin_name = "mc_0"}
// CHECK-NEXT: %[[N:.*]] = stablehlo.negate %[[MC]] {{{.*}}sdy.sharding_origins = [{dp = "mc_0_output: 0", tp = "mc_0_output: 0"}]}
// CHECK-NEXT: return %[[N]]
sdy.mesh @mesh = <["dp"=2, "tp"=4]>

func.func @shard_map(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x16xf32> {
  %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"dp"}, {"tp"}]>] out_shardings=[<@mesh, [{"dp"}, {"tp"}]>] manual_axes={"dp"} (%b: tensor<4x16xf32>) {
    %1 = stablehlo.exponential %b : tensor<4x16xf32>
    sdy.return %1 : tensor<4x16xf32>
  } : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = stablehlo.negate %0 : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// -----

// A loop: the carried value's axes ("tp" from the argument, "dp" back from the constraint after
// the loop) are on its edge, sunk onto the while as `sdy.result_sharding_origins` (the counter,
// never sharded, has no entry), and on the body's ops. The constraint's "tp" is not its own.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: -> (tensor<8x16xf32> {{{.*}}sdy.sharding_origins = {dp = "constraint_0", tp = "input: 0"}})
// CHECK: %[[W:.*]]:2 = stablehlo.while
// CHECK-SAME: sdy.block_arg_sharding_origins = [], sdy.result_sharding_origins = [{dp = "constraint_0", tp = "input: 0"}]
// CHECK: %[[S:.*]] = stablehlo.sine %[[V:.*]] {{{.*}}sdy.sharding_origins = [{dp = "constraint_0", tp = "input: 0"}]}
// CHECK-NEXT: stablehlo.return %{{.*}}, %[[S]]
// CHECK: %[[R:.*]] = sdy.sharding_constraint %[[W]]#1 {{.*}}sdy.sharding_origin_name = "constraint_0", sdy.sharding_origins = {dp = "self", tp = "input: 0"}}
// CHECK-NEXT: return %[[R]]
sdy.mesh @mesh = <["dp"=2, "tp"=4]>

func.func @loop(%x: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x16xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<8x16xf32>
    cond {
      %c4 = stablehlo.constant dense<4> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %c4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %s = stablehlo.sine %v : tensor<8x16xf32>
      stablehlo.return %n, %s : tensor<i32>, tensor<8x16xf32>
    }
  %r = sdy.sharding_constraint %0#1 <@mesh, [{"dp", ?}, {?}]> : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
