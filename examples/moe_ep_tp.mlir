mesh @mesh = <["ep"=4, "tp"=2]>

func @main(%x: tensor<8x16x32xf32, <@mesh, [{"ep"}, {}, {}]>>, %w_router: tensor<32x8xf32, <@mesh, [{}, {}]>>, %w1: tensor<8x32x64xf32, <@mesh, [{"ep"}, {}, {"tp"}]>>, %w2: tensor<8x64x32xf32, <@mesh, [{"ep"}, {"tp"}, {}]>>) -> tensor<8x16x32xf32> {
  %router_logits = dot_general %x, %w_router {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8xf32>
  %0 = constant {value = dense<-inf>} : tensor<f32>
  %1 = reduce %router_logits, %0 {dimensions = [2], kind = maximum} : tensor<8x16xf32>
  %2 = broadcast_in_dim %1 {broadcast_dimensions = [0, 1]} : tensor<8x16x8xf32>
  %3 = subtract %router_logits, %2 : tensor<8x16x8xf32>
  %4 = exponential %3 : tensor<8x16x8xf32>
  %5 = constant {value = dense<0.0>} : tensor<f32>
  %6 = reduce %4, %5 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %7 = broadcast_in_dim %6 {broadcast_dimensions = [0, 1]} : tensor<8x16x8xf32>
  %router_probs = divide %4, %7 : tensor<8x16x8xf32>
  %8 = constant {value = dense<0.0>} : tensor<f32>
  %9 = broadcast_in_dim %8 {broadcast_dimensions = []} : tensor<8x16x8xf32>
  %10 = constant {value = dense<1.0>} : tensor<f32>
  %11 = broadcast_in_dim %10 {broadcast_dimensions = []} : tensor<8x16x8xf32>
  %12 = compare %router_logits, %2 {comparison_direction = EQ} : tensor<8x16x8xi1>
  %chosen = select %12, %11, %9 : tensor<8x16x8xf32>
  %13 = multiply %router_probs, %chosen : tensor<8x16x8xf32>
  %14 = constant {value = dense<0.0>} : tensor<f32>
  %gate = reduce %13, %14 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %15 = iota {iota_dimension = 0} : tensor<16x16xi32>
  %16 = iota {iota_dimension = 1} : tensor<16x16xi32>
  %17 = compare %16, %15 {comparison_direction = LE} : tensor<16x16xi1>
  %18 = constant {value = dense<1.0>} : tensor<f32>
  %19 = broadcast_in_dim %18 {broadcast_dimensions = []} : tensor<16x16xf32>
  %20 = constant {value = dense<0.0>} : tensor<f32>
  %21 = broadcast_in_dim %20 {broadcast_dimensions = []} : tensor<16x16xf32>
  %22 = select %17, %19, %21 : tensor<16x16xf32>
  %23 = dot_general %chosen, %22 {lhs_contracting_dims = [1], rhs_contracting_dims = [1]} : tensor<8x8x16xf32>
  %24 = transpose %23 {permutation = [0, 2, 1]} : tensor<8x16x8xf32>
  %25 = subtract %24, %11 : tensor<8x16x8xf32>
  %26 = broadcast_in_dim %25 {broadcast_dimensions = [0, 1, 2]} : tensor<8x16x8x4xf32>
  %27 = iota {iota_dimension = 3} : tensor<8x16x8x4xf32>
  %28 = compare %26, %27 {comparison_direction = EQ} : tensor<8x16x8x4xi1>
  %29 = broadcast_in_dim %chosen {broadcast_dimensions = [0, 1, 2]} : tensor<8x16x8x4xf32>
  %30 = constant {value = dense<0.0>} : tensor<f32>
  %31 = broadcast_in_dim %30 {broadcast_dimensions = []} : tensor<8x16x8x4xf32>
  %dispatch = select %28, %29, %31 : tensor<8x16x8x4xf32>
  %32 = broadcast_in_dim %gate {broadcast_dimensions = [0, 1]} : tensor<8x16x8x4xf32>
  %combine = multiply %dispatch, %32 : tensor<8x16x8x4xf32>
  %33 = dot_general %dispatch, %x {lhs_batching_dims = [0], rhs_batching_dims = [0], lhs_contracting_dims = [1], rhs_contracting_dims = [1]} : tensor<8x8x4x32xf32>
  %expert_in = transpose %33 {permutation = [1, 0, 2, 3]} : tensor<8x8x4x32xf32>
  %34 = dot_general %expert_in, %w1 {lhs_batching_dims = [0], rhs_batching_dims = [0], lhs_contracting_dims = [3], rhs_contracting_dims = [1]} : tensor<8x8x4x64xf32>
  %35 = constant {value = dense<0.0>} : tensor<f32>
  %36 = broadcast_in_dim %35 {broadcast_dimensions = []} : tensor<8x8x4x64xf32>
  %expert_hidden = maximum %34, %36 : tensor<8x8x4x64xf32>
  %expert_out = dot_general %expert_hidden, %w2 {lhs_batching_dims = [0], rhs_batching_dims = [0], lhs_contracting_dims = [3], rhs_contracting_dims = [1]} : tensor<8x8x4x32xf32>
  %moe_out = dot_general %combine, %expert_out {lhs_batching_dims = [0], rhs_batching_dims = [1], lhs_contracting_dims = [2, 3], rhs_contracting_dims = [0, 2]} : tensor<8x16x32xf32>
  %out = add %x, %moe_out : tensor<8x16x32xf32>
  return %out
}
