// sdy-explicit-gather-scatter-batching: an iota-indexed leading dim becomes a batching dim; the
// index vector loses the iota's component (a concatenate input dropped, or slices around it).
// RUN: shardc opt %s -p sdy-explicit-gather-scatter-batching --split-input-file | filecheck %s

// Three components, the iota in the middle of a concatenate of one input per component.
// CHECK-LABEL: func.func @middle
// CHECK-SAME: (%[[X:.*]]: tensor<4x8x5xf32>, %[[A:.*]]: tensor<4x1xi32>, %[[B:.*]]: tensor<4x1xi32>)
// CHECK-NEXT: %[[IDX:.*]] = stablehlo.concatenate %[[A]], %[[B]], dim = 1
// CHECK-NEXT: %[[R:.*]] = "stablehlo.gather"(%[[X]], %[[IDX]]) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1, 2], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1, 2], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}>
// CHECK-NEXT: return %[[R]]
func.func @middle(%x: tensor<4x8x5xf32>, %a: tensor<4x1xi32>, %b: tensor<4x1xi32>) -> tensor<4xf32> {
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  %iota = stablehlo.broadcast_in_dim %i, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
  %idx = stablehlo.concatenate %a, %iota, %b, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x3xi32>
  %r = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1, 2], start_index_map = [1, 0, 2], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 1>}> : (tensor<4x8x5xf32>, tensor<4x3xi32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The whole index vector is one iota: it is sliced around the batch component and stays.
// CHECK-LABEL: func.func @sliced
// CHECK-NEXT: %[[IOTA:.*]] = stablehlo.iota dim = 0 : tensor<4x3xi32>
// CHECK-NEXT: %[[LO:.*]] = stablehlo.slice %[[IOTA]] [0:4, 0:1]
// CHECK-NEXT: %[[HI:.*]] = stablehlo.slice %[[IOTA]] [0:4, 2:3]
// CHECK-NEXT: %[[IDX:.*]] = stablehlo.concatenate %[[LO]], %[[HI]], dim = 1
// CHECK-NEXT: "stablehlo.scatter"(%arg0, %[[IDX]], %arg1)
// CHECK-SAME: input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1, 2]
func.func @sliced(%x: tensor<4x8x8xf32>, %u: tensor<4xf32>) -> tensor<4x8x8xf32> {
  %idx = stablehlo.iota dim = 0 : tensor<4x3xi32>
  %r = "stablehlo.scatter"(%x, %idx, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1, 2], scatter_dims_to_operand_dims = [1, 0, 2], index_vector_dim = 1>}> ({
  ^bb0(%p: tensor<f32>, %q: tensor<f32>):
    %s = stablehlo.add %p, %q : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x8x8xf32>, tensor<4x3xi32>, tensor<4xf32>) -> tensor<4x8x8xf32>
  return %r : tensor<4x8x8xf32>
}

// -----

// Left alone: the iota runs along dim 1, so row i does not read operand row i.
// CHECK-LABEL: func.func @not_rows
// CHECK: start_index_map = [0, 1]
// CHECK-NOT: batching_dims
func.func @not_rows(%x: tensor<4x8xf32>, %col: tensor<4x1xi32>) -> tensor<4xf32> {
  %iota = stablehlo.iota dim = 1 : tensor<4x1xi32>
  %idx = stablehlo.concatenate %iota, %col, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
  %r = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>}> : (tensor<4x8xf32>, tensor<4x2xi32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
