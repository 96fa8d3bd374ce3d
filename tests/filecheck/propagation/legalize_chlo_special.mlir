// legalize-chlo on the special functions (chlo.lgamma, chlo.asin, the binary chlo.zeta): each
// carries the element-wise rule of XLA's expansion, so after propagation the "x" of %arg0 goes
// through all three (as under jax.jit); jaxlib's Shardy pipeline alone has no rule for them and
// the "x" stops at the first. The binary form prints back with its `T, T -> T` signature.
// RUN: shardc opt %s --input-format sdy -p 'legalize-chlo' | filecheck %s
// RUN: shardc opt %s --input-format sdy -p 'legalize-chlo,propagation-pipeline' | filecheck %s --check-prefix=PROP
// RUN: shardc opt %s --input-format sdy -p 'propagation-pipeline' | filecheck %s --check-prefix=SHARDY

sdy.mesh @mesh = <["x"=2, "y"=4]>

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[L:.*]] = chlo.lgamma %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=4}>} : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[A:.*]] = chlo.asin %[[L]] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=4}>}
// CHECK-NEXT: %[[Z:.*]] = chlo.zeta %[[A]], %[[L]] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=4}>} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: return %[[Z]]
// PROP-LABEL: func.func @main
// PROP-NEXT: %[[L:.*]] = chlo.lgamma %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>
// PROP-NEXT: %[[A:.*]] = chlo.asin %[[L]] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>
// PROP-NEXT: %[[Z:.*]] = chlo.zeta %[[A]], %[[L]] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>
// SHARDY-LABEL: func.func @main
// SHARDY-NEXT: %[[L:.*]] = chlo.lgamma %arg0 : tensor<8x4xf32> -> tensor<8x4xf32>
// SHARDY-NEXT: %[[A:.*]] = chlo.asin %[[L]] : tensor<8x4xf32> -> tensor<8x4xf32>
// SHARDY-NEXT: %[[Z:.*]] = chlo.zeta %[[A]], %[[L]] : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x4xf32> {
  %0 = chlo.lgamma %arg0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %1 = chlo.asin %0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %2 = chlo.zeta %1, %0 : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}
