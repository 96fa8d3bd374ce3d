// manual_computation (jax.shard_map): parse/print, propagation across the manual axes, and the
// per-device program with the body inlined (docs/ir.md, docs/propagation.md, docs/spmd.md).
// RUN: shardc opt %s --split-input-file | shardc opt - --split-input-file | filecheck %s --check-prefix=PRINT
// RUN: shardc opt %s -p propagation-pipeline --split-input-file | filecheck %s --check-prefix=PROP
// RUN: shardc opt %s -p propagation-pipeline,close-shardings,insert-reshards,lower-collectives,spmd --split-input-file | filecheck %s --check-prefix=SPMD
// RUN: shardc opt %s -p propagation-pipeline,close-shardings,insert-reshards,lower-collectives,spmd --split-input-file | shardc opt - --split-input-file | filecheck %s --check-prefix=SPMD

// jax.shard_map over both axes (tests/data/stablehlo/shard_map.mlir): a local matmul and a psum.
// PRINT-LABEL: func @main(
// PRINT: %[[MC:.*]] = manual_computation %{{.*}}, %w {body = @main_manual, in_shardings = [<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}]>], manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {}]>]} : tensor<16x64xf32>
// PRINT-NEXT: exponential %[[MC]]
// PRINT-LABEL: func private @main_manual(
// PRINT-SAME: %a: tensor<8x8xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32>
// PRINT: spmd.all_reduce %{{.*}} {axes = ["tp"], kind = add, groups = {{\[}}[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<8x64xf32>

// Shardy's decisions (extras/shard_map.open.mlir): the closed in_sharding applies to the unsharded
// add (like a constraint); a manual axis a sharding does not use becomes replicated; "dp" leaves
// through the result; nothing enters the fully manual body.
// PROP-LABEL: func @main(
// PROP-SAME: -> tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP: %[[B:.*]] = broadcast_in_dim {{.*}} : tensor<16x32xf32, <@mesh, [{"dp", ?}, {"tp", ?}]>>
// PROP-NEXT: %[[ADD:.*]] = add %x, %[[B]] : tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>
// PROP-NEXT: %[[MC:.*]] = manual_computation %[[ADD]], %w {body = @main_manual, in_shardings = [<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}], replicated={"dp"}>], manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {}], replicated={"tp"}>]} : tensor<16x64xf32, <@mesh, [{"dp"}, {}], replicated={"tp"}>>
// PROP-NEXT: %[[E:.*]] = exponential %[[MC]] : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP: multiply %[[E]], %{{.*}} : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-LABEL: func private @main_manual(
// PROP-SAME: %a: tensor<8x8xf32, <@mesh, [{}, {}]>>, %b: tensor<8x64xf32, <@mesh, [{}, {}]>>) -> tensor<8x64xf32, <@mesh, [{}, {}]>>
// PROP-NEXT: %[[D:.*]] = dot_general %a, %b {{.*}} : tensor<8x64xf32>
// PROP-NEXT: spmd.all_reduce %[[D]] {{.*}} : tensor<8x64xf32>

// The body is inlined into the per-device program: its types already are the local blocks.
// SPMD-LABEL: func @main(
// SPMD-SAME: %x: tensor<8x8xf32>, %w: tensor<8x64xf32>) -> tensor<8x64xf32>
// SPMD-SAME: out_shardings = [<@mesh, [{"dp"}, {}]>]}
// SPMD: %[[ADD:.*]] = add %x, %{{.*}} : tensor<8x8xf32>
// SPMD-NEXT: %[[D:.*]] = dot_general %[[ADD]], %w {{.*}} : tensor<8x64xf32>
// SPMD-NEXT: %[[R:.*]] = spmd.all_reduce %[[D]] {axes = ["tp"], kind = add, groups = {{\[}}[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<8x64xf32>
// SPMD-NEXT: %[[E:.*]] = exponential %[[R]] : tensor<8x64xf32>
// SPMD: return
// SPMD-NOT: @main_manual
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %w: tensor<32x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %cst = constant {value = dense<1.0>} : tensor<f32>
  %0 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<16x32xf32>
  %1 = add %x, %0 : tensor<16x32xf32>
  %2 = manual_computation %1, %w {body = @main_manual, in_shardings = [<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}]>], manual_axes = ["dp", "tp"], out_shardings = [<@mesh, [{"dp"}, {}]>]} : tensor<16x64xf32>
  %3 = exponential %2 : tensor<16x64xf32>
  %cst_0 = constant {value = dense<2.0>} : tensor<f32>
  %4 = broadcast_in_dim %cst_0 {broadcast_dimensions = []} : tensor<16x64xf32>
  %5 = multiply %3, %4 : tensor<16x64xf32>
  return %5
}

func private @main_manual(%a: tensor<8x8xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<8x64xf32>
  %1 = spmd.all_reduce %0 {axes = ["tp"], kind = add, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<8x64xf32>
  return %1
}

// -----

// Manual over "tp" only (tests/data/stablehlo/shard_map_partial.mlir): the open in/out shardings
// are filled by propagation; "dp" flows from %x into the body (over free axes only) and out of
// it, never "tp" (extras/shard_map_partial.open.mlir).
// PRINT-LABEL: func @main(
// PRINT: manual_computation %x, %w {body = @main_manual, in_shardings = [<@mesh, [{?}, {"tp", ?}]>, <@mesh, [{"tp", ?}, {?}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{?}, {?}]>]} : tensor<16x64xf32>

// PROP-LABEL: func @main(
// PROP-SAME: -> tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-NEXT: %[[MC:.*]] = manual_computation %x, %w {body = @main_manual, in_shardings = [<@mesh, [{"dp", ?}, {"tp", ?}]>, <@mesh, [{"tp", ?}, {?}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{"dp", ?}, {?}], replicated={"tp"}>]}
// PROP: add %[[MC]], %{{.*}} : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-LABEL: func private @main_manual(
// PROP-SAME: %a: tensor<16x8xf32, <@mesh, [{"dp", ?}, {?}]>>, %b: tensor<8x64xf32, <@mesh, [{?}, {?}]>>) -> tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-NEXT: %[[D:.*]] = dot_general %a, %b {{.*}} : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-NEXT: %[[C:.*]] = sharding_constraint %[[D]] : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-NEXT: %[[R:.*]] = spmd.all_reduce %[[C]] {{.*}} : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
// PROP-NEXT: return %[[R]]

// Per device: the body's 16x64 block is split over the free axis "dp" too.
// SPMD-LABEL: func @main(
// SPMD-SAME: %x: tensor<8x8xf32>, %w: tensor<8x64xf32>) -> tensor<8x64xf32>
// SPMD-NEXT: %[[D:.*]] = dot_general %x, %w {{.*}} : tensor<8x64xf32>
// SPMD-NEXT: %[[R:.*]] = spmd.all_reduce %[[D]] {axes = ["tp"], kind = add, groups = {{\[}}[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<8x64xf32>
// SPMD: add %[[R]], %{{.*}} : tensor<8x64xf32>
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %w: tensor<32x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %0 = manual_computation %x, %w {body = @main_manual, in_shardings = [<@mesh, [{?}, {"tp", ?}]>, <@mesh, [{"tp", ?}, {?}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{?}, {?}]>]} : tensor<16x64xf32>
  %cst = constant {value = dense<1.0>} : tensor<f32>
  %1 = broadcast_in_dim %cst {broadcast_dimensions = []} : tensor<16x64xf32>
  %2 = add %0, %1 : tensor<16x64xf32>
  return %2
}

func private @main_manual(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>) -> tensor<16x64xf32> {
  %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  %1 = sharding_constraint %0 : tensor<16x64xf32, <@mesh, [{?}, {?}]>>
  %2 = spmd.all_reduce %1 {axes = ["tp"], kind = add, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<16x64xf32>
  return %2
}

// -----

// An operand laid out otherwise is resharded to its in_sharding before the op; a free-axis
// reshard inside the body lowers to per-device collectives there.
// PROP-LABEL: func @reshard(
// SPMD-LABEL: func @reshard(
// SPMD-SAME: %x: tensor<4x16xf32>) -> tensor<4x16xf32>
// SPMD-NEXT: %[[G:.*]] = spmd.all_to_all %x {axes = ["x"], split_dim = 1, concat_dim = 0, groups = {{\[}}[0, 2, 4, 6], [1, 3, 5, 7]]} : tensor<16x4xf32>
// SPMD-NEXT: %[[N:.*]] = negate %[[G]] : tensor<16x4xf32>
// SPMD-NEXT: %[[A:.*]] = spmd.all_to_all %[[N]] {axes = ["x"], split_dim = 0, concat_dim = 1, groups = {{\[}}[0, 2, 4, 6], [1, 3, 5, 7]]} : tensor<4x16xf32>
// SPMD-NEXT: return %[[A]]
mesh @m = <["x"=4, "y"=2]>

func @reshard(%x: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{"x"}, {}]>> {
  %0 = manual_computation %x {body = @neg, in_shardings = [<@m, [{}, {"x"}]>], manual_axes = ["x"], out_shardings = [<@m, [{}, {"x"}]>]} : tensor<16x16xf32>
  return %0
}

func private @neg(%a: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %0 = negate %a : tensor<16x4xf32>
  return %0
}
