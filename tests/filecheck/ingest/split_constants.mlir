// split-constants: a constant sub-computation gets one copy per user that is not constant. A
// call of a constant function (every op of it maps constants to constants) with constant
// operands is one too: each user gets its own call of its own copy of the callee, named as
// MLIR's symbol table names it and marked with the original name (jaxlib's splitter prints the
// same; tests/test_import_passes.py compares them). A helper holding a reduction is not constant.
// RUN: shardc opt %s -p 'sdy-constant-or-scalar-splitter' | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[T0:.*]] = call @table_0() : () -> tensor<8x4xf32>
// CHECK-NEXT: %[[T1:.*]] = call @table_1() : () -> tensor<8x4xf32>
// CHECK-NEXT: %[[N0:.*]] = stablehlo.negate %[[T0]]
// CHECK-NEXT: %[[N1:.*]] = stablehlo.negate %[[T1]]
// CHECK-NEXT: %[[S:.*]] = call @sum(%[[N0]])
// CHECK-NEXT: %[[A:.*]] = stablehlo.add %arg0, %[[N1]]
// CHECK-NEXT: %[[M0:.*]] = stablehlo.multiply %[[A]], %[[S]]
// CHECK-NEXT: %[[M1:.*]] = stablehlo.multiply %[[M0]], %[[S]]
// CHECK-NEXT: return %[[M1]]
func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = call @table() : () -> tensor<8x4xf32>
  %1 = stablehlo.negate %0 : tensor<8x4xf32>
  %2 = call @sum(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %3 = stablehlo.add %arg0, %1 : tensor<8x4xf32>
  %4 = stablehlo.multiply %3, %2 : tensor<8x4xf32>
  %5 = stablehlo.multiply %4, %2 : tensor<8x4xf32>
  return %5 : tensor<8x4xf32>
}
// The original stays (symbol-dce drops it in the pipelines); its copies come after everything.
// CHECK-LABEL: func.func private @table()
// CHECK-NEXT: %[[I:.*]] = stablehlo.iota dim = 0
// CHECK-NEXT: %[[C:.*]] = stablehlo.cosine %[[I]]
// CHECK-NEXT: return %[[C]]
func.func private @table() -> tensor<8x4xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<8x4xf32>
  %1 = stablehlo.cosine %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
// CHECK-LABEL: func.func private @sum(
// CHECK: stablehlo.reduce
func.func private @sum(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<8xf32>) -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
// CHECK-LABEL: func.func private @table_0() -> tensor<8x4xf32> attributes {sdy.original_func_name = "table"}
// CHECK-NEXT: stablehlo.iota
// CHECK-LABEL: func.func private @table_1() -> tensor<8x4xf32> attributes {sdy.original_func_name = "table"}
// CHECK-NEXT: stablehlo.iota
