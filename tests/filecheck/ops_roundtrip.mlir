// The ops beyond the original set in native text: parse -> print is the identity, and each
// gets Shardy's sharding rule (populate-sharding-rules; the rules are also checked against
// jaxlib's in tests/propagation/test_rules_jaxlib.py). See docs/ir.md.
// RUN: shardc opt %s | filecheck %s
// RUN: shardc opt %s | shardc opt - | filecheck %s
// RUN: shardc opt %s -p populate-sharding-rules | filecheck %s --check-prefix=RULE

// CHECK: func @main(%[[A:.*]]: tensor<8x32xf32>, %[[B:.*]]: tensor<32x16xf32>, %[[S:.*]]: tensor<2x4x4xf32>, %[[R:.*]]: tensor<2x4x3xf32>, %[[C:.*]]: tensor<8x16xcomplex<f32>>, %[[K:.*]]: tensor<2xui64>, %[[F:.*]]: tensor<8x16xf32>, %[[X:.*]]: tensor<4x8xf32>, %[[T:.*]]: tensor<token>, %[[G:.*]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[D:.*]] = dot %[[A]], %[[B]] : tensor<8x16xf32>
// CHECK-NEXT: %[[L:.*]] = cholesky %[[S]] {lower = true} : tensor<2x4x4xf32>
// CHECK-NEXT: %[[TS:.*]] = triangular_solve %[[L]], %[[R]] {left_side = true, lower = true, unit_diagonal = false, transpose_a = NO_TRANSPOSE} : tensor<2x4x3xf32>
// CHECK-NEXT: %[[FT:.*]] = fft %[[C]] {fft_type = FFT, fft_length = [16]} : tensor<8x16xcomplex<f32>>
// CHECK-NEXT: %[[NS:.*]], %[[BITS:.*]] = rng_bit_generator %[[K]] {rng_algorithm = DEFAULT} : tensor<2xui64>, tensor<4x8xui32>
// CHECK-NEXT: %[[P:.*]] = reduce_precision %[[F]] {exponent_bits = 5, mantissa_bits = 10} : tensor<8x16xf32>
// CHECK-NEXT: %[[BC:.*]] = bitcast_convert %[[P]] : tensor<8x16xi32>
// CHECK-NEXT: %[[RE:.*]] = real %[[FT]] : tensor<8x16xf32>
// CHECK-NEXT: %[[Z:.*]] = constant {value = dense<0.0>} : tensor<f32>
// CHECK-NEXT: %[[SS:.*]] = select_and_scatter %[[X]], %[[G]], %[[Z]] {select = @main_select, kind = add, window_dimensions = [2, 2], window_strides = [2, 2]} : tensor<4x8xf32>
// CHECK-NEXT: %[[AA:.*]] = after_all %[[T]] : tensor<token>
// CHECK-NEXT: return %[[D]], %[[L]], %[[TS]], %[[FT]], %[[BITS]], %[[P]], %[[BC]], %[[RE]], %[[SS]], %[[AA]]

// RULE: dot {{.*}}sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>
// RULE-NEXT: cholesky {{.*}}#sdy.op_sharding_rule<([i, j, k])->([i, j, k]) {i=2, j=4, k=4} need_replication={j, k}>
// RULE-NEXT: triangular_solve {{.*}}#sdy.op_sharding_rule<([i, j, l], [i, j, k])->([i, l, k]) {i=2, j=4, k=3, l=4} need_replication={j, k, l}>
// RULE-NEXT: fft {{.*}}#sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=16} need_replication={j}>
// RULE-NEXT: rng_bit_generator {{.*}}#sdy.op_sharding_rule<([i])->([i], [j, k]) {i=2, j=4, k=8} need_replication={i} blocked_propagation={i}>
// RULE-NEXT: reduce_precision {{.*}}#sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=16}>
// RULE-NEXT: bitcast_convert {{.*}}#sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=16}>
// RULE-NEXT: real {{.*}}#sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=16}>
// RULE-NEXT: constant
// RULE-NEXT: select_and_scatter {{.*}}#sdy.op_sharding_rule<([j, l], [i, k], [])->([j, l]) {i=2, j=4, k=4, l=8} need_replication={i, k} permutation={j, l}>
// RULE-NEXT: after_all %{{[^{]*}} : tensor<token>
mesh @m = <["x"=2]>

func @main(%arg0: tensor<8x32xf32>, %arg1: tensor<32x16xf32>, %arg2: tensor<2x4x4xf32>, %arg3: tensor<2x4x3xf32>, %arg4: tensor<8x16xcomplex<f32>>, %arg5: tensor<2xui64>, %arg6: tensor<8x16xf32>, %arg7: tensor<4x8xf32>, %arg8: tensor<token>, %arg11: tensor<2x4xf32>) -> (tensor<8x16xf32>, tensor<2x4x4xf32>, tensor<2x4x3xf32>, tensor<8x16xcomplex<f32>>, tensor<4x8xui32>, tensor<8x16xf32>, tensor<8x16xi32>, tensor<8x16xf32>, tensor<4x8xf32>, tensor<token>) {
  %0 = dot %arg0, %arg1 : tensor<8x16xf32>
  %1 = cholesky %arg2 {lower = true} : tensor<2x4x4xf32>
  %2 = triangular_solve %1, %arg3 {left_side = true, lower = true, unit_diagonal = false, transpose_a = NO_TRANSPOSE} : tensor<2x4x3xf32>
  %3 = fft %arg4 {fft_type = FFT, fft_length = [16]} : tensor<8x16xcomplex<f32>>
  %output_state, %output = rng_bit_generator %arg5 {rng_algorithm = DEFAULT} : tensor<2xui64>, tensor<4x8xui32>
  %4 = reduce_precision %arg6 {exponent_bits = 5, mantissa_bits = 10} : tensor<8x16xf32>
  %5 = bitcast_convert %4 : tensor<8x16xi32>
  %6 = real %3 : tensor<8x16xf32>
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %7 = select_and_scatter %arg7, %arg11, %cst {select = @main_select, kind = add, window_dimensions = [2, 2], window_strides = [2, 2]} : tensor<4x8xf32>
  %8 = after_all %arg8 : tensor<token>
  return %0, %1, %2, %3, %output, %4, %5, %6, %7, %8
}

func private @main_select(%arg9: tensor<f32>, %arg10: tensor<f32>) -> tensor<i1> {
  %0 = compare %arg9, %arg10 {comparison_direction = GE} : tensor<i1>
  return %0
}
