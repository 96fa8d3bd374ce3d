// insert-explicit-reshards refuses what Shardy's pass refuses: a single-device (maximal) sharding
// on a function's argument or result, and an op whose results sit on two different devices.
// RUN: not shardc opt %s --split-input-file -p 'sdy-insert-explicit-reshards{enable-full-version=true}' 2>&1 | filecheck %s

sdy.mesh @dev3 = <[], device_ids=[3]>
sdy.mesh @m = <["x"=4]>
// CHECK: insert_explicit_reshards_errors.mlir:[[# @LINE + 1]]:1: error: in pass 'insert-explicit-reshards': 'func.func' op function argument 1 cannot have a single-device (maximal) sharding attribute
func.func @arg_on_one_device(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}, %arg1: tensor<4xf32> {sdy.sharding = #sdy.sharding<@dev3, []>}) -> tensor<4xf32> {
  %0 = stablehlo.subtract %arg0, %arg1 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @dev0 = <[], device_ids=[0]>
// CHECK: insert_explicit_reshards_errors.mlir:[[# @LINE + 1]]:1: error: in pass 'insert-explicit-reshards': 'func.func' op function result 0 cannot have a single-device (maximal) sharding attribute
func.func @result_on_one_device(%arg0: tensor<2x2xf32>) -> (tensor<2x2xf32> {sdy.sharding = #sdy.sharding<@dev0, []>}) {
  return %arg0 : tensor<2x2xf32>
}

// -----

sdy.mesh @dev2 = <[], device_ids=[2]>
sdy.mesh @dev5 = <[], device_ids=[5]>
sdy.mesh @also2 = <[], device_ids=[2]>
func.func @results_on_two_devices(%arg0: tensor<6xf32>) -> tensor<6xf32> {
  // Two meshes of one device each, but the same device: no conflict.
  %0:2 = stablehlo.custom_call @Same(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@dev2, []>, <@also2, []>]>} : (tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  // CHECK: insert_explicit_reshards_errors.mlir:[[# @LINE + 1]]:3: error: in pass 'insert-explicit-reshards': 'custom_call' op has conflicting single-device result shardings
  %1:2 = stablehlo.custom_call @Split(%0#0) {sdy.sharding = #sdy.sharding_per_value<[<@dev5, []>, <@dev2, []>]>} : (tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  return %1#1 : tensor<6xf32>
}
