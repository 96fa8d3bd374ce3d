mesh @mesh = <["dp"=8]>

func @main(%x: tensor<8x16x64xf32, <@mesh, [{"dp"}p0, {}, {}]>>, %ln1_g_0: tensor<64xf32, <@mesh, [{}]>>, %ln1_b_0: tensor<64xf32, <@mesh, [{}]>>, %wq_0: tensor<64x8x8xf32, <@mesh, [{"dp"}p1, {}, {}]>>, %wk_0: tensor<64x8x8xf32, <@mesh, [{"dp"}p1, {}, {}]>>, %wv_0: tensor<64x8x8xf32, <@mesh, [{"dp"}p1, {}, {}]>>, %wo_0: tensor<8x8x64xf32, <@mesh, [{"dp"}p1, {}, {}]>>, %ln2_g_0: tensor<64xf32, <@mesh, [{}]>>, %ln2_b_0: tensor<64xf32, <@mesh, [{}]>>, %w1_0: tensor<64x256xf32, <@mesh, [{"dp"}p1, {}]>>, %w2_0: tensor<256x64xf32, <@mesh, [{"dp"}p1, {}]>>) -> tensor<8x16x64xf32> {
  %0 = constant {value = dense<0.015625>} : tensor<f32>
  %1 = broadcast_in_dim %0 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %2 = constant {value = dense<0.0>} : tensor<f32>
  %3 = reduce %x, %2 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %4 = broadcast_in_dim %3 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %5 = multiply %4, %1 : tensor<8x16x64xf32>
  %6 = subtract %x, %5 : tensor<8x16x64xf32>
  %7 = multiply %6, %6 : tensor<8x16x64xf32>
  %8 = constant {value = dense<0.0>} : tensor<f32>
  %9 = reduce %7, %8 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %10 = broadcast_in_dim %9 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %11 = multiply %10, %1 : tensor<8x16x64xf32>
  %12 = constant {value = dense<1e-05>} : tensor<f32>
  %13 = broadcast_in_dim %12 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %14 = add %11, %13 : tensor<8x16x64xf32>
  %15 = rsqrt %14 : tensor<8x16x64xf32>
  %16 = multiply %6, %15 : tensor<8x16x64xf32>
  %17 = broadcast_in_dim %ln1_g_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %18 = multiply %16, %17 : tensor<8x16x64xf32>
  %19 = broadcast_in_dim %ln1_b_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %20 = add %18, %19 : tensor<8x16x64xf32>
  %q_0 = dot_general %20, %wq_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8x8xf32>
  %k_0 = dot_general %20, %wk_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8x8xf32>
  %v_0 = dot_general %20, %wv_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8x8xf32>
  %21 = dot_general %q_0, %k_0 {lhs_batching_dims = [0, 2], rhs_batching_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [3]} : tensor<8x8x16x16xf32>
  %22 = constant {value = dense<0.35355339059327373>} : tensor<f32>
  %23 = broadcast_in_dim %22 {broadcast_dimensions = []} : tensor<8x8x16x16xf32>
  %scores_0 = multiply %21, %23 : tensor<8x8x16x16xf32>
  %24 = iota {iota_dimension = 0} : tensor<16x16xi32>
  %25 = iota {iota_dimension = 1} : tensor<16x16xi32>
  %26 = compare %24, %25 {comparison_direction = GE} : tensor<16x16xi1>
  %27 = broadcast_in_dim %26 {broadcast_dimensions = [2, 3]} : tensor<8x8x16x16xi1>
  %28 = constant {value = dense<-1000000000.0>} : tensor<f32>
  %29 = broadcast_in_dim %28 {broadcast_dimensions = []} : tensor<8x8x16x16xf32>
  %30 = select %27, %scores_0, %29 : tensor<8x8x16x16xf32>
  %31 = constant {value = dense<-inf>} : tensor<f32>
  %32 = reduce %30, %31 {dimensions = [3], kind = maximum} : tensor<8x8x16xf32>
  %33 = broadcast_in_dim %32 {broadcast_dimensions = [0, 1, 2]} : tensor<8x8x16x16xf32>
  %34 = subtract %30, %33 : tensor<8x8x16x16xf32>
  %35 = exponential %34 : tensor<8x8x16x16xf32>
  %36 = constant {value = dense<0.0>} : tensor<f32>
  %37 = reduce %35, %36 {dimensions = [3], kind = add} : tensor<8x8x16xf32>
  %38 = broadcast_in_dim %37 {broadcast_dimensions = [0, 1, 2]} : tensor<8x8x16x16xf32>
  %probs_0 = divide %35, %38 : tensor<8x8x16x16xf32>
  %attn_0 = dot_general %probs_0, %v_0 {lhs_batching_dims = [0, 1], rhs_batching_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [1]} : tensor<8x8x16x8xf32>
  %attn_out_0 = dot_general %attn_0, %wo_0 {lhs_contracting_dims = [1, 3], rhs_contracting_dims = [0, 1]} : tensor<8x16x64xf32>
  %res1_0 = add %x, %attn_out_0 : tensor<8x16x64xf32>
  %39 = constant {value = dense<0.015625>} : tensor<f32>
  %40 = broadcast_in_dim %39 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %41 = constant {value = dense<0.0>} : tensor<f32>
  %42 = reduce %res1_0, %41 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %43 = broadcast_in_dim %42 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %44 = multiply %43, %40 : tensor<8x16x64xf32>
  %45 = subtract %res1_0, %44 : tensor<8x16x64xf32>
  %46 = multiply %45, %45 : tensor<8x16x64xf32>
  %47 = constant {value = dense<0.0>} : tensor<f32>
  %48 = reduce %46, %47 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %49 = broadcast_in_dim %48 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %50 = multiply %49, %40 : tensor<8x16x64xf32>
  %51 = constant {value = dense<1e-05>} : tensor<f32>
  %52 = broadcast_in_dim %51 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %53 = add %50, %52 : tensor<8x16x64xf32>
  %54 = rsqrt %53 : tensor<8x16x64xf32>
  %55 = multiply %45, %54 : tensor<8x16x64xf32>
  %56 = broadcast_in_dim %ln2_g_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %57 = multiply %55, %56 : tensor<8x16x64xf32>
  %58 = broadcast_in_dim %ln2_b_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %59 = add %57, %58 : tensor<8x16x64xf32>
  %60 = dot_general %59, %w1_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x256xf32>
  %61 = constant {value = dense<0.0>} : tensor<f32>
  %62 = broadcast_in_dim %61 {broadcast_dimensions = []} : tensor<8x16x256xf32>
  %ff_0 = maximum %60, %62 : tensor<8x16x256xf32>
  %63 = dot_general %ff_0, %w2_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x64xf32>
  %res2_0 = add %res1_0, %63 : tensor<8x16x64xf32>
  return %res2_0
}
