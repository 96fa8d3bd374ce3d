// spmd refuses a `call` whose operands or results are not laid out as its callee takes and
// returns them: each device hands its blocks over as they are, so a partial sum the callee
// returns where the caller reads a replicated value would be used unreduced.
// RUN: not shardc opt %s -p spmd --split-input-file 2>&1 | filecheck %s

// The callee returns partial sums on "dp" (its result declares no sharding: the value's
// layout is returned); the caller reads the result replicated.
// CHECK: call_spmd_errors.mlir:[[# @LINE + 5]]:3: error: in pass 'spmd': 'call' op: result 0 is laid out as <@mesh, [{}, {}]>, but @take_grad returns <@mesh, [{}, {}], unreduced={"dp"}>; run insert-reshards before spmd
mesh @empty_mesh = <[]>
mesh @mesh = <["dp"=2, "tp"=4]>

func @embedding_grad(%i: tensor<4x6x1xi32, <@mesh, [{"dp"}, {}, {}]>>, %u: tensor<4x6x8xf32, <@mesh, [{"dp"}, {}, {}]>>) -> tensor<16x8xf32> {
  %0 = call %i, %u {callee = @take_grad} : tensor<16x8xf32>
  return %0
}

func private @take_grad(%i: tensor<4x6x1xi32, <@mesh, [{"dp"}, {}, {}]>>, %u: tensor<4x6x8xf32, <@mesh, [{"dp"}, {}, {}]>>) -> tensor<16x8xf32> {
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %0 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<16x8xf32, <@mesh, [{}, {}]>>
  %1 = scatter %0, %i, %u {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, kind = add} : tensor<16x8xf32, <@mesh, [{}, {}], unreduced={"dp"}>>
  return %1
}

// -----

// An operand laid out otherwise than the callee takes it.
// CHECK: call_spmd_errors.mlir:[[# @LINE + 4]]:3: error: in pass 'spmd': 'call' op: operand 0 is laid out as <@m, [{"x"}]>, but @callee takes <@m, [{}]>; run insert-reshards before spmd
mesh @m = <["x"=2]>

func @caller(%x: tensor<8xf32, <@m, [{"x"}]>>) -> tensor<8xf32, <@m, [{}]>> {
  %0 = call %x {callee = @callee} : tensor<8xf32, <@m, [{}]>>
  return %0
}

func private @callee(%x: tensor<8xf32, <@m, [{}]>>) -> tensor<8xf32, <@m, [{}]>> {
  %0 = negate %x : tensor<8xf32, <@m, [{}]>>
  return %0
}
