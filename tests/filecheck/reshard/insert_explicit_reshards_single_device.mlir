// sdy-insert-explicit-reshards on an op whose result is placed on one device (a maximal mesh):
// its operands are resharded onto that device (through the global mesh, replicated, unless
// already replicated there), its results back to the global mesh, and every result of the op
// is then on the device (a token stays replicated on the global mesh).
// RUN: shardc opt %s -p sdy-insert-explicit-reshards --split-input-file | filecheck %s

sdy.mesh @m = <["a"=2, "b"=2]>
sdy.mesh @dev3 = <[], device_ids=[3]>

// One result on device 3, the other written tiled: both become device 3's, the tiled one is
// resharded back to its written sharding through the replicated global mesh.
// CHECK-LABEL: func.func @two_results
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {{.*}}, %[[Y:.*]]: tensor<4x8xf32> {{.*}})
// CHECK-NEXT: %[[XR:.*]] = sdy.reshard %[[X]] <@m, [{}, {}]>
// CHECK-NEXT: %[[XD:.*]] = sdy.reshard %[[XR]] <@dev3, []>
// CHECK-NEXT: %[[YD:.*]] = sdy.reshard %[[Y]] <@dev3, []>
// CHECK-NEXT: %[[P:.*]]:2 = stablehlo.custom_call @pair(%[[XD]], %[[YD]]) {sdy.sharding = #sdy.sharding_per_value<[<@dev3, []>, <@dev3, []>]>}
// CHECK-NEXT: %[[R0:.*]] = sdy.reshard %[[P]]#0 <@m, [{}, {}]>
// CHECK-NEXT: %[[R1:.*]] = sdy.reshard %[[P]]#1 <@m, [{}, {}]>
// CHECK-NEXT: %[[T1:.*]] = sdy.reshard %[[R1]] <@m, [{}, {"a"}]>
// CHECK-NEXT: return %[[R0]], %[[T1]]
func.func @two_results(%x: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {"b"}]>}, %y: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}]>}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0:2 = stablehlo.custom_call @pair(%x, %y) {sdy.sharding = #sdy.sharding_per_value<[<@dev3, []>, <@m, [{}, {"a"}]>]>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

sdy.mesh @m = <["a"=2]>
sdy.mesh @dev1 = <[], device_ids=[1]>

// A token operand is not moved; a token result is replicated on the global mesh.
// CHECK-LABEL: func.func @token
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32> {{.*}}, %[[T:.*]]: !stablehlo.token)
// CHECK-NEXT: %[[XD:.*]] = sdy.reshard %[[X]] <@dev1, []>
// CHECK-NEXT: %[[IO:.*]]:2 = stablehlo.custom_call @io(%[[XD]], %[[T]]) {sdy.sharding = #sdy.sharding_per_value<[<@dev1, []>, <@m, []>]>}
// CHECK-NEXT: %[[R:.*]] = sdy.reshard %[[IO]]#0 <@m, [{}]>
// CHECK-NEXT: return %[[R]], %[[IO]]#1
func.func @token(%x: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}]>}, %t: !stablehlo.token) -> (tensor<4xf32>, !stablehlo.token) {
  %0:2 = stablehlo.custom_call @io(%x, %t) {sdy.sharding = #sdy.sharding_per_value<[<@dev1, []>, <@dev1, []>]>} : (tensor<4xf32>, !stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
  return %0#0, %0#1 : tensor<4xf32>, !stablehlo.token
}

// -----

sdy.mesh @dev1 = <[], device_ids=[1]>
sdy.mesh @dev0 = <[], device_ids=[0]>

// Without a global mesh (only single devices) nothing is resharded.
// CHECK-LABEL: func.func @only_devices
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[N:.*]] = stablehlo.negate %[[X]] {sdy.sharding = #sdy.sharding_per_value<[<@dev1, []>]>}
// CHECK-NEXT: %[[E:.*]] = stablehlo.exponential %[[N]] {sdy.sharding = #sdy.sharding_per_value<[<@dev0, []>]>}
// CHECK-NEXT: return %[[E]]
func.func @only_devices(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x {sdy.sharding = #sdy.sharding_per_value<[<@dev1, []>]>} : tensor<4xf32>
  %1 = stablehlo.exponential %0 {sdy.sharding = #sdy.sharding_per_value<[<@dev0, []>]>} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

