// What Shardy's verifier rejects in sdy ops and shardings, rejected where it is written
// (unreduced reduction kinds across a reshard, data-flow edge inputs, token shardings, the
// order of replicated and unreduced axes).
// RUN: not shardc opt %s --split-input-file 2>&1 | filecheck %s

sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @keeps_max_as_sum(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced=max{"a"}>}) -> tensor<4xf32> {
  // CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'reshard' op cannot change the reduction operator of kept unreduced axes from max to sum.
  %0 = sdy.reshard %arg0 <@mesh, [{}], unreduced={"a", "b"}> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @introduces_min(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}]>}) -> tensor<4xf32> {
  // CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'sharding_constraint' op cannot introduce 'min' unreduced axes. Expected 'sum'.
  %0 = sdy.sharding_constraint %arg0 <@mesh, [{}], unreduced=min{"a"}> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @edge_input_used_twice(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'data_flow_edge' op expected input of sdy.data_flow_edge to have a single user
  %0 = sdy.data_flow_edge %arg0 : tensor<4x8xf32>
  %1 = stablehlo.negate %arg0 : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

sdy.mesh @mesh = <["a"=2]>
func.func @edge_after_reshard(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = sdy.reshard %arg0 <@mesh, [{"a"}, {}]> : tensor<4x8xf32>
  // CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'data_flow_edge' op expected input of sdy.data_flow_edge to not be defined by an SdyDialect op
  %1 = sdy.data_flow_edge %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

sdy.mesh @mesh = <["a"=2]>
// CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'func.func' op arg 0 - non-shaped tensors can only have a sharding with rank 0 and no replicated or unreduced axes
func.func @token_replicated(%arg0: !stablehlo.token {sdy.sharding = #sdy.sharding<@mesh, [], replicated={"a"}>}) -> !stablehlo.token {
  return %arg0 : !stablehlo.token
}

// -----

sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @unordered(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: replicated axes are not ordered w.r.t. mesh
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], replicated={"c", "a"}>]>} : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A malformed long-form mesh attribute is an error at its declaration, as is another dialect's.
// CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: malformed mesh #sdy.mesh<["x"=2, "y"]>
sdy.mesh @bad_long = #sdy.mesh<["x"=2, "y"]>

// -----

// CHECK: sdy_verify_errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: unsupported mesh #other.mesh<["x"=2]>
sdy.mesh @other = #other.mesh<["x"=2]>
