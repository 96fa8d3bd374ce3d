// legalize-chlo: chlo.square becomes a multiply and chlo.erf_inv carries the element-wise rule
// of its expansion, as XLA legalizes a jax.jit program before Shardy propagates; chlo.erf stays
// without a rule. After propagation the "x" of %arg0 goes through the multiply and the
// erf_inv (XLA's behaviour) but not through erf, whose result gets no sharding.
// RUN: shardc opt %s --input-format sdy -p 'legalize-chlo' | filecheck %s
// RUN: shardc opt %s --input-format sdy -p 'legalize-chlo,propagation-pipeline' | filecheck %s --check-prefix=PROP
// RUN: shardc opt %s --input-format sdy -p 'propagation-pipeline' | filecheck %s --check-prefix=SHARDY

sdy.mesh @mesh = <["x"=2, "y"=4]>

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[SQ:.*]] = stablehlo.multiply %arg0, %arg0 : tensor<8x4xf32>
// CHECK-NEXT: %[[EI:.*]] = chlo.erf_inv %[[SQ]] {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=4}>}
// CHECK-NEXT: %[[E:.*]] = chlo.erf %[[EI]] : tensor<8x4xf32>
// CHECK-NEXT: %[[S:.*]] = stablehlo.multiply %[[E]], %[[E]] : tensor<8x4xf32>
// CHECK-NEXT: return %[[S]]
// PROP-LABEL: func.func @main
// PROP-NEXT: %[[SQ:.*]] = stablehlo.multiply %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>}
// PROP-NEXT: %[[EI:.*]] = chlo.erf_inv %[[SQ]] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>
// PROP-NEXT: %[[E:.*]] = chlo.erf %[[EI]] : tensor<8x4xf32>
// SHARDY-LABEL: func.func @main
// SHARDY-NEXT: %[[SQ:.*]] = chlo.square %arg0 : tensor<8x4xf32>
// SHARDY-NEXT: %[[EI:.*]] = chlo.erf_inv %[[SQ]] : tensor<8x4xf32>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x4xf32> {
  %0 = chlo.square %arg0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %1 = chlo.erf_inv %0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %2 = chlo.erf %1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %3 = chlo.square %2 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}
