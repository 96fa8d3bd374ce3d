// Shardy's propagation-edge debug attributes are kept as written, but an ill-formed one is
// an error at its op's line (issue 13).
// RUN: not shardc opt %s --split-input-file 2>&1 | filecheck %s

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': propagation edges have duplicate step index: 2
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case0(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-2 = [{"x" = operand-0 -> [result-0]}]}, {step-2 = [{"y" = operand-1 -> [result-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': propagation edges have negative step index: -1
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case1(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step--1 = [{"x" = operand-0 -> [result-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': propagation edges have a source that is the same as a target
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case2(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"x" = result-0 -> [operand-1, result-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': propagation edges have duplicate targets for step index: 4 and axis: y
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case3(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-4 = [{"y" = operand-0 -> [result-0, result-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': a propagation edge refers to operand 2, but the op has 2 operands
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case4(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"x" = result-0 -> [operand-2]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': propagation edge axis "w" is not an axis of mesh @mesh
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case5(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"w" = operand-0 -> [result-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': expected #sdy.propagation_edges<[...]>
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @case6(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = 7, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.propagation_edges': expected propagation edges attr to reference a sharding
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @unsharded(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.propagation_edges = #sdy.propagation_edges<[{step-0 = [{"x" = operand-0 -> [result-0]}]}]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// CHECK: propagation_edges_errors.mlir:[[# @LINE + 3]]:3: error: 'add' op attribute 'sdy.result_propagation_edges': expected an array of #sdy.propagation_edges<[...]>
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @not_an_array(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.result_propagation_edges = [3]} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
