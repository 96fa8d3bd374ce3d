// sdy-per-instruction-partitioning stops, located at the op, where it cannot partition it.
// RUN: not shardc opt %s --split-input-file -p sdy-per-instruction-partitioning 2>&1 | filecheck %s

// CHECK: per_instruction_partitioning_errors.mlir:[[# @LINE + 5]]:3: error: in pass 'per-instruction-partitioning': 'stablehlo.negate' op: its operands and results are on different meshes
// CHECK-NOT: Traceback
sdy.mesh @m = <["x"=2]>
sdy.mesh @n = <["x"=2], device_ids=[1, 0]>
func.func @meshes(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<8xf32> {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@n, [{"x"}]>]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// An unreduced operand would be unreduced on a manual axis.
// CHECK: per_instruction_partitioning_errors.mlir:[[# @LINE + 3]]:3: error: in pass 'per-instruction-partitioning': 'sdy.reshard' op: operand 0 is unreduced on "x", which would be a manual axis; a manual_computation's manual axes cannot be unreduced
sdy.mesh @m = <["x"=2]>
func.func @unreduced(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced={"x"}>}) -> tensor<8xf32> {
  %0 = sdy.reshard %arg0 <@m, [{}]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// The operand is padded from 6 to 8 for its sharding, the result (replicated) is not: an add of
// unequal types (Shardy pads operands and results each for its own sharding).
// CHECK: per_instruction_partitioning_errors.mlir:[[# @LINE + 3]]:3: error: in pass 'per-instruction-partitioning': 'stablehlo.add' op: with its operands and results padded for their indivisible shardings the op is invalid
sdy.mesh @m = <["x"=4]>
func.func @padding(%arg0: tensor<6xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<6xf32> {
  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// A sub-pipeline pass that refuses the op says so at the op.
// CHECK: per_instruction_partitioning_errors.mlir:[[# @LINE + 3]]:3: error: in pass 'resolve-permutation-factors': 'slice' op: its operand and result shardings differ
sdy.mesh @m = <["x"=2]>
func.func @sub_pipeline(%arg0: tensor<6xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<4xf32> {
  %0 = stablehlo.slice %arg0 [0:4] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : (tensor<6xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: per_instruction_partitioning_errors.mlir:[[# @LINE + 4]]:3: error: in pass 'per-instruction-partitioning': 'stablehlo.while' op: partitioning an op with regions is not supported
sdy.mesh @m = <["x"=2]>
func.func @regions(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<8xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<8xf32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@m, []>, <@m, [{"x"}]>]>}
  cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %n = stablehlo.negate %x : tensor<8xf32>
    stablehlo.return %i, %n : tensor<i32>, tensor<8xf32>
  }
  return %0#1 : tensor<8xf32>
}
