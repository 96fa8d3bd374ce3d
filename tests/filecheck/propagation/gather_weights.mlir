// gather-weights: a weight whose contracted dim shares a mesh axis with another argument is
// gathered once where it is defined, for all its uses (FSDP; docs/spmd.md, "Gathering
// weights (FSDP)").
// RUN: shardc opt %s -p gather-weights --split-input-file | filecheck %s
// RUN: shardc opt %s -p gather-weights,propagation-pipeline --split-input-file | filecheck %s --check-prefix=PROP
// RUN: shardc opt %s -p 'gather-weights{tables=false}' --split-input-file | filecheck %s --check-prefix=NOTAB

// FSDP on "dp": both weights' contracted dims and the batch on "dp". Each weight is gathered
// to its sharding without "dp" (w1 keeps "tp") right after the arguments, and every use,
// forward and backward, reads the gathered value; `return` still returns the argument. The
// batch, not on "dp", stays as it is.
// CHECK-LABEL: func @fsdp
// CHECK-NEXT: %[[G1:.*]] = reshard %w1 : tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>
// CHECK-NEXT: %[[G2:.*]] = reshard %w2 : tensor<256x64xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: %[[H:.*]] = dot_general %x, %[[G1]]
// CHECK-NEXT: %[[Y:.*]] = dot_general %[[H]], %[[G2]]
// CHECK-NEXT: %[[G:.*]] = dot_general %[[H]], %[[Y]]
// CHECK-NEXT: %[[U:.*]] = subtract %[[G2]], %[[G]]
// CHECK-NEXT: return %[[U]], %w1
// With tables=false the same: no weight here is only indexed.
// NOTAB-LABEL: func @fsdp
// NOTAB-NEXT: reshard %w1
// NOTAB-NEXT: reshard %w2
// Propagation then shards the activations by the batch; the gathered weights stay gathered.
// PROP-LABEL: func @fsdp
// PROP: %[[G2:.*]] = reshard %w2 : tensor<256x64xf32, <@mesh, [{}, {}]>>
// PROP-NEXT: %[[H:.*]] = dot_general %x, %{{.*}} : tensor<16x256xf32, <@mesh, [{"dp", ?}, {"tp", ?}]>>
// PROP-NEXT: %[[Y:.*]] = dot_general %[[H]], %[[G2]] {{.*}} : tensor<16x64xf32, <@mesh, [{"dp", ?}, {?}]>>
mesh @mesh = <["dp"=2, "tp"=2]>
func @fsdp(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{"dp"}, {"tp"}]>>, %w2: tensor<256x64xf32, <@mesh, [{"dp"}, {}]>>) -> (tensor<256x64xf32>, tensor<64x256xf32>) {
  %h = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %y = dot_general %h, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  %g = dot_general %h, %y {lhs_contracting_dims = [0], rhs_contracting_dims = [0]} : tensor<256x64xf32>
  %u = subtract %w2, %g : tensor<256x64xf32>
  return %u, %w1
}

// -----

// Tensor parallelism: the weights' sharded dims are on "tp", no other argument uses "tp",
// so there is no conflict and nothing is gathered.
// CHECK-LABEL: func @megatron
// CHECK-NEXT: %[[H:.*]] = dot_general %x, %w1
// PROP-LABEL: func @megatron
// PROP-NOT: reshard
mesh @mesh = <["dp"=2, "tp"=2]>
func @megatron(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %h = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %y = dot_general %h, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  return %y
}

// -----

// An embedding table sharded by rows on the batch's axis, indexed by a `gather` inside a
// called function: gathered where it is defined, the call reads the gathered table. The ids
// (not contracted or indexed: the gather's indices) stay on "dp".
// CHECK-LABEL: func @embed
// CHECK-NEXT: %[[T:.*]] = reshard %table : tensor<256x64xf32, <@mesh, [{}, {}]>>
// CHECK-NEXT: %[[E:.*]] = call %[[T]], %ids {callee = @take}
// CHECK-NEXT: return %[[E]]
// PROP-LABEL: func @embed
// PROP-NEXT: reshard %table
// With tables=false a table only gathers index stays sharded: the lookup then moves the rows
// it reads.
// NOTAB-LABEL: func @embed
// NOTAB-NEXT: %[[E:.*]] = call %table, %ids {callee = @take}
mesh @mesh = <["dp"=2, "tp"=2]>
func @embed(%table: tensor<256x64xf32, <@mesh, [{"dp"}, {}]>>, %ids: tensor<8x1xi32, <@mesh, [{"dp"}, {}]>>) -> tensor<8x64xf32> {
  %e = call %table, %ids {callee = @take} : tensor<8x64xf32>
  return %e
}
func private @take(%t: tensor<256x64xf32>, %i: tensor<8x1xi32>) -> tensor<8x64xf32> {
  %g = gather %t, %i {offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 64], indices_are_sorted = false} : tensor<8x64xf32>
  return %g
}
