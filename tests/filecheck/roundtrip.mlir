// Parse -> print is the identity on canonical text, and printing is a fixed point.
// RUN: shardc opt %s --split-input-file | filecheck %s
// RUN: shardc opt %s --split-input-file | shardc opt - --split-input-file | filecheck %s

// CHECK: mesh @mesh = <["dp"=2, "tp"=4]>
// CHECK: func @main(%[[X:.*]]: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %[[W:.*]]: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>) -> tensor<16x256xf32> {
// CHECK-NEXT:   %[[D:.*]] = dot_general %[[X]], %[[W]] {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
// CHECK-NEXT:   %[[T:.*]] = tanh %[[D]] : tensor<16x256xf32>
// CHECK-NEXT:   return %[[T]]
// CHECK-NEXT: }
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>) -> tensor<16x256xf32> {
  %0 = dot_general %x, %w {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = tanh %0 : tensor<16x256xf32>
  return %1
}

// -----

// Open dims, priorities, sub-axes, replicated and unreduced axes, memory kinds.
// CHECK: mesh @m = <["x"=4, "y"=2]>
// CHECK: func @f(%[[A:.*]]: tensor<8x8xf32, <@m, [{"x":(1)2, ?}p1, {?}], replicated={"y"}>>, %{{.*}}: tensor<8xf32, <@m, [{}], unreduced=max{"x"}, memory_kind="pinned_host">>)
// CHECK-SAME: -> (tensor<8x8xf32, <@m, [{"y", "x":(2)2}, {}]>>, tensor<8xf32, <@m, [{}], unreduced=max{"x"}>>)
// CHECK-NEXT: %[[C:.*]] = sharding_constraint %[[A]] : tensor<8x8xf32, <@m, [{"y", "x":(2)2}, {}]>>
mesh @m = <["x"=4, "y"=2]>

func @f(%a: tensor<8x8xf32, <@m, [{"x":(1)2, ?}p1, {?}], replicated={"y"}>>, %b: tensor<8xf32, <@m, [{}], unreduced={"x"}, unreduced_op=max, memory_kind="pinned_host">>) -> (tensor<8x8xf32, <@m, [{"y", "x":(2)2}, {}]>>, tensor<8xf32, <@m, [{}], unreduced={"x"}, unreduced_op=max>>) {
  %0 = sharding_constraint %a : tensor<8x8xf32, <@m, [{"y", "x":(2)2}, {}]>>
  %1 = reshard %b : tensor<8xf32, <@m, [{}], unreduced={"x"}, unreduced_op=max>>
  return %0, %1
}

// -----

// Device ids, several meshes, private functions, calls, named values and locations.
// CHECK: mesh @a = <["x"=2]>
// CHECK-NEXT: mesh @ring = <["r"=4], device_ids=[3, 2, 1, 0]>
// CHECK: func private @relu(%[[V:.*]]: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   %[[Z:.*]] = constant {value = dense<0.0>} : tensor<4xf32>
// CHECK-NEXT:   %[[M:.*]] = maximum %[[V]], %[[Z]] : tensor<4xf32> loc("model.py":12:5)
// CHECK-NEXT:   return %[[M]]
// CHECK-NEXT: }
// CHECK: func @main(%[[IN:.*]]: tensor<4xf32, <@ring, [{"r"}]>> {jax.result_info = "x"}) -> (tensor<4xf32> {jax.result_info = "out"}) {
// CHECK-NEXT:   %[[R:.*]] = call %[[IN]] {callee = @relu} : tensor<4xf32>
// CHECK-NEXT:   return %[[R]]
mesh @a = <["x"=2]>
mesh @ring = <["r"=4], device_ids=[3, 2, 1, 0]>

func private @relu(%v: tensor<4xf32>) -> tensor<4xf32> {
  %zero = constant {value = dense<0.0>} : tensor<4xf32>
  %0 = maximum %v, %zero : tensor<4xf32> loc("model.py":12:5)
  return %0
}

func @main(%in: tensor<4xf32, <@ring, [{"r"}]>> {jax.result_info = "x"}) -> (tensor<4xf32> {jax.result_info = "out"}) {
  %0 = call %in {callee = @relu} : tensor<4xf32>
  return %0
}

// -----

// Every attribute kind: ints, arrays, keywords, dense literals (splat, nested, hex, bool).
// CHECK: %[[C0:.*]] = constant {value = dense<[[1, 2], [3, 4]]>} : tensor<2x2xi32>
// CHECK-NEXT: %[[C1:.*]] = constant {value = dense<"0x0000803F0000803F">} : tensor<2xf32>
// CHECK-NEXT: %[[C2:.*]] = constant {value = dense<true>} : tensor<i1>
// CHECK-NEXT: %[[C3:.*]] = constant {value = dense<-inf>} : tensor<f32>
// CHECK-NEXT: %[[CMP:.*]] = compare %[[C0]], %[[C0]] {comparison_direction = GE} : tensor<2x2xi1>
// CHECK-NEXT: %[[S:.*]] = slice %[[C0]] {start_indices = [0, 0], limit_indices = [2, 2], strides = [1, 2]} : tensor<2x1xi32>
// CHECK-NEXT: %[[IO:.*]] = iota {iota_dimension = 1} : tensor<2x3xi32>
// CHECK: %[[P:.*]] = pad %[[IO]], %{{.*}} {edge_padding_low = [0, 1], edge_padding_high = [1, 0], interior_padding = [0, 1]} : tensor<3x6xi32>
// CHECK-NEXT: %[[BAR:.*]] = propagation_barrier %[[P]] {allowed_direction = BACKWARD} : tensor<3x6xi32>
// CHECK-NEXT: sharding_group %[[BAR]] {group_id = 3}
// CHECK-NEXT: return %[[CMP]], %[[S]], %[[BAR]]
func @attrs() -> (tensor<2x2xi1>, tensor<2x1xi32>, tensor<3x6xi32>) {
  %0 = constant {value = dense<[[1, 2], [3, 4]]>} : tensor<2x2xi32>
  %1 = constant {value = dense<"0x0000803F0000803F">} : tensor<2xf32>
  %2 = constant {value = dense<true>} : tensor<i1>
  %3 = constant {value = dense<-inf>} : tensor<f32>
  %4 = compare %0, %0 {comparison_direction = GE} : tensor<2x2xi1>
  %5 = slice %0 {start_indices = [0, 0], limit_indices = [2, 2], strides = [1, 2]} : tensor<2x1xi32>
  %6 = iota {iota_dimension = 1} : tensor<2x3xi32>
  %7 = constant {value = dense<0>} : tensor<i32>
  %8 = pad %6, %7 {edge_padding_low = [0, 1], edge_padding_high = [1, 0], interior_padding = [0, 1]} : tensor<3x6xi32>
  %9 = propagation_barrier %8 {allowed_direction = BACKWARD} : tensor<3x6xi32>
  sharding_group %9 {group_id = 3}
  return %4, %5, %9
}

// -----

// Collectives carry the sharding they produce.
// CHECK: %[[G:.*]] = all_gather %[[IN:.*]] {gathering_axes = [["y"], []]} : tensor<8x8xf32, <@m, [{"x"}, {}]>>
// CHECK-NEXT: %[[SL:.*]] = all_slice %[[G]] {slicing_axes = [[], ["y"]]} : tensor<8x8xf32, <@m, [{"x"}, {"y"}]>>
// CHECK-NEXT: %[[A2A:.*]] = all_to_all %[[SL]] {params = [{"x"}: 0->1]} : tensor<8x8xf32, <@m, [{}, {"y", "x"}]>>
// CHECK-NEXT: %[[CP:.*]] = collective_permute %[[A2A]] : tensor<8x8xf32, <@m, [{}, {"x", "y"}]>>
// CHECK-NEXT: %[[AR:.*]] = all_reduce %[[U:.*]] {reduction_axes = ["x"]} : tensor<8x8xf32, <@m, [{}, {}], unreduced={"y"}>>
// CHECK-NEXT: %[[RS:.*]] = reduce_scatter %[[AR]] {scatter_axes = [["y"], []]} : tensor<8x8xf32, <@m, [{"y"}, {}]>>
mesh @m = <["x"=2, "y"=2]>

func @collectives(%in: tensor<8x8xf32, <@m, [{"x", "y"}, {}]>>, %u: tensor<8x8xf32, <@m, [{}, {}], unreduced={"x", "y"}>>) -> (tensor<8x8xf32, <@m, [{}, {"x", "y"}]>>, tensor<8x8xf32, <@m, [{"y"}, {}]>>) {
  %0 = all_gather %in {gathering_axes = [["y"], []]} : tensor<8x8xf32, <@m, [{"x"}, {}]>>
  %1 = all_slice %0 {slicing_axes = [[], ["y"]]} : tensor<8x8xf32, <@m, [{"x"}, {"y"}]>>
  %2 = all_to_all %1 {params = [{"x"}: 0->1]} : tensor<8x8xf32, <@m, [{}, {"y", "x"}]>>
  %3 = collective_permute %2 : tensor<8x8xf32, <@m, [{}, {"x", "y"}]>>
  %4 = all_reduce %u {reduction_axes = ["x"]} : tensor<8x8xf32, <@m, [{}, {}], unreduced={"y"}>>
  %5 = reduce_scatter %4 {scatter_axes = [["y"], []]} : tensor<8x8xf32, <@m, [{"y"}, {}]>>
  return %3, %5
}

// -----

// Shifts, dynamic slices, convolution, reduce_window, optimization_barrier, top_k, composite and
// custom_call: attributes print back as written.
// CHECK: func @main(%[[X:.*]]: tensor<8x16x16x4xf32>, %[[K:.*]]: tensor<3x3x4x16xf32>, %[[I:.*]]: tensor<i32>)
// CHECK-NEXT: %[[C:.*]] = convolution %[[X]], %[[K]] {input_batch_dimension = 0, {{.*}}, padding = {{\[}}[1, 1], [1, 1]], window_reversal = [false, false], feature_group_count = 1} : tensor<8x16x16x16xf32>
// CHECK-NEXT: %[[Z:.*]] = constant {value = dense<0.0>} : tensor<f32>
// CHECK-NEXT: %[[P:.*]] = reduce_window %[[C]], %[[Z]] {kind = add, window_dimensions = [1, 2, 2, 1], window_strides = [1, 2, 2, 1]} : tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[S:.*]] = dynamic_slice %[[P]], %[[I]], %[[I]], %[[I]], %[[I]] {slice_sizes = [2, 8, 8, 16]} : tensor<2x8x8x16xf32>
// CHECK-NEXT: %[[U:.*]] = dynamic_update_slice %[[P]], %[[S]], %[[I]], %[[I]], %[[I]], %[[I]] : tensor<8x8x8x16xf32>
// CHECK-NEXT: %[[B0:.*]], %[[B1:.*]] = optimization_barrier %[[U]], %[[S]] : tensor<8x8x8x16xf32>, tensor<2x8x8x16xf32>
// CHECK-NEXT: %[[V:.*]], %[[IX:.*]] = top_k %[[B0]] {k = 3} : tensor<8x8x8x3xf32>, tensor<8x8x8x3xi32>
// CHECK-NEXT: %[[D:.*]] = composite %[[V]] {decomposition = @double, name = "my.double", version = 1} : tensor<8x8x8x3xf32>
// CHECK-NEXT: %[[SH:.*]] = shift_left %[[I]], %[[I]] : tensor<i32>
// CHECK-NEXT: %[[CC:.*]] = custom_call %[[D]] {call_target_name = "foo", sharding_rule = "ijkl->ijkl"} : tensor<8x8x8x3xf32>
// CHECK-NEXT: return %[[CC]], %[[IX]], %[[SH]]
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<8x16x16x4xf32>, %k: tensor<3x3x4x16xf32>, %i: tensor<i32>) -> (tensor<8x8x8x3xf32>, tensor<8x8x8x3xi32>, tensor<i32>) {
  %0 = convolution %x, %k {input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2], padding = [[1, 1], [1, 1]], window_reversal = [false, false], feature_group_count = 1} : tensor<8x16x16x16xf32>
  %z = constant {value = dense<0.0>} : tensor<f32>
  %1 = reduce_window %0, %z {kind = add, window_dimensions = [1, 2, 2, 1], window_strides = [1, 2, 2, 1]} : tensor<8x8x8x16xf32>
  %2 = dynamic_slice %1, %i, %i, %i, %i {slice_sizes = [2, 8, 8, 16]} : tensor<2x8x8x16xf32>
  %3 = dynamic_update_slice %1, %2, %i, %i, %i, %i : tensor<8x8x8x16xf32>
  %4, %5 = optimization_barrier %3, %2 : tensor<8x8x8x16xf32>, tensor<2x8x8x16xf32>
  %6, %7 = top_k %4 {k = 3} : tensor<8x8x8x3xf32>, tensor<8x8x8x3xi32>
  %8 = composite %6 {decomposition = @double, name = "my.double", version = 1} : tensor<8x8x8x3xf32>
  %9 = shift_left %i, %i : tensor<i32>
  %10 = custom_call %8 {call_target_name = "foo", sharding_rule = "ijkl->ijkl"} : tensor<8x8x8x3xf32>
  return %10, %7, %9
}

func private @double(%a: tensor<8x8x8x3xf32>) -> tensor<8x8x8x3xf32> {
  %0 = add %a, %a : tensor<8x8x8x3xf32>
  return %0
}

// -----

// Complex constants: (real,imag) per element, splat and nested, printed back as written.
// CHECK: func @main(%[[X:.*]]: tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[C:.*]] = constant {value = dense<(0.0,1.5)>} : tensor<complex<f32>>
// CHECK-NEXT: %[[T:.*]] = constant {value = dense<{{\[}}[(1.0,-2.0), (-0.0,0.5)], [(1e-08,0.0), (nan,inf)]]>} : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[B:.*]] = broadcast_in_dim %[[C]] {broadcast_dimensions = []} : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[M:.*]] = multiply %[[X]], %[[B]] : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[S:.*]] = add %[[M]], %[[T]] : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: return %[[S]]
func @main(%x: tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>> {
  %c = constant {value = dense<(0.0,1.5)>} : tensor<complex<f32>>
  %t = constant {value = dense<[[(1.0,-2.0), (-0.0,0.5)], [(1e-08,0.0), (nan,inf)]]>} : tensor<2x2xcomplex<f32>>
  %0 = broadcast_in_dim %c {broadcast_dimensions = []} : tensor<2x2xcomplex<f32>>
  %1 = multiply %x, %0 : tensor<2x2xcomplex<f32>>
  %2 = add %1, %t : tensor<2x2xcomplex<f32>>
  return %2
}
