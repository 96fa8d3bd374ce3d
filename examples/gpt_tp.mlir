mesh @mesh = <["tp"=8]>

func @main(%tokens: tensor<8x16xi32, <@mesh, [{}, {}]>>, %labels: tensor<8x16xi32, <@mesh, [{}, {}]>>, %table: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>, %pos: tensor<16x64xf32, <@mesh, [{}, {}]>>, %ln1_g_0: tensor<64xf32, <@mesh, [{}]>>, %ln1_b_0: tensor<64xf32, <@mesh, [{}]>>, %wq_0: tensor<64x8x8xf32, <@mesh, [{}, {"tp"}, {}]>>, %wk_0: tensor<64x8x8xf32, <@mesh, [{}, {"tp"}, {}]>>, %wv_0: tensor<64x8x8xf32, <@mesh, [{}, {"tp"}, {}]>>, %wo_0: tensor<8x8x64xf32, <@mesh, [{"tp"}, {}, {}]>>, %ln2_g_0: tensor<64xf32, <@mesh, [{}]>>, %ln2_b_0: tensor<64xf32, <@mesh, [{}]>>, %w1_0: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2_0: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>, %lnf_g: tensor<64xf32, <@mesh, [{}]>>, %lnf_b: tensor<64xf32, <@mesh, [{}]>>) -> tensor<f32> {
  %0 = gather %table, %tokens {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 64]} : tensor<8x16x64xf32>
  %1 = broadcast_in_dim %pos {broadcast_dimensions = [1, 2]} : tensor<8x16x64xf32>
  %embed = add %0, %1 : tensor<8x16x64xf32>
  %2 = constant {value = dense<0.015625>} : tensor<f32>
  %3 = broadcast_in_dim %2 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %4 = constant {value = dense<0.0>} : tensor<f32>
  %5 = reduce %embed, %4 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %6 = broadcast_in_dim %5 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %7 = multiply %6, %3 : tensor<8x16x64xf32>
  %8 = subtract %embed, %7 : tensor<8x16x64xf32>
  %9 = multiply %8, %8 : tensor<8x16x64xf32>
  %10 = constant {value = dense<0.0>} : tensor<f32>
  %11 = reduce %9, %10 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %12 = broadcast_in_dim %11 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %13 = multiply %12, %3 : tensor<8x16x64xf32>
  %14 = constant {value = dense<1e-05>} : tensor<f32>
  %15 = broadcast_in_dim %14 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %16 = add %13, %15 : tensor<8x16x64xf32>
  %17 = rsqrt %16 : tensor<8x16x64xf32>
  %18 = multiply %8, %17 : tensor<8x16x64xf32>
  %19 = broadcast_in_dim %ln1_g_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %20 = multiply %18, %19 : tensor<8x16x64xf32>
  %21 = broadcast_in_dim %ln1_b_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %22 = add %20, %21 : tensor<8x16x64xf32>
  %q_0 = dot_general %22, %wq_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8x8xf32>
  %k_0 = dot_general %22, %wk_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8x8xf32>
  %v_0 = dot_general %22, %wv_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x8x8xf32>
  %23 = dot_general %q_0, %k_0 {lhs_batching_dims = [0, 2], rhs_batching_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [3]} : tensor<8x8x16x16xf32>
  %24 = constant {value = dense<0.35355339059327373>} : tensor<f32>
  %25 = broadcast_in_dim %24 {broadcast_dimensions = []} : tensor<8x8x16x16xf32>
  %scores_0 = multiply %23, %25 : tensor<8x8x16x16xf32>
  %26 = iota {iota_dimension = 0} : tensor<16x16xi32>
  %27 = iota {iota_dimension = 1} : tensor<16x16xi32>
  %28 = compare %26, %27 {comparison_direction = GE} : tensor<16x16xi1>
  %29 = broadcast_in_dim %28 {broadcast_dimensions = [2, 3]} : tensor<8x8x16x16xi1>
  %30 = constant {value = dense<-1000000000.0>} : tensor<f32>
  %31 = broadcast_in_dim %30 {broadcast_dimensions = []} : tensor<8x8x16x16xf32>
  %32 = select %29, %scores_0, %31 : tensor<8x8x16x16xf32>
  %33 = constant {value = dense<-inf>} : tensor<f32>
  %34 = reduce %32, %33 {dimensions = [3], kind = maximum} : tensor<8x8x16xf32>
  %35 = broadcast_in_dim %34 {broadcast_dimensions = [0, 1, 2]} : tensor<8x8x16x16xf32>
  %36 = subtract %32, %35 : tensor<8x8x16x16xf32>
  %37 = exponential %36 : tensor<8x8x16x16xf32>
  %38 = constant {value = dense<0.0>} : tensor<f32>
  %39 = reduce %37, %38 {dimensions = [3], kind = add} : tensor<8x8x16xf32>
  %40 = broadcast_in_dim %39 {broadcast_dimensions = [0, 1, 2]} : tensor<8x8x16x16xf32>
  %probs_0 = divide %37, %40 : tensor<8x8x16x16xf32>
  %attn_0 = dot_general %probs_0, %v_0 {lhs_batching_dims = [0, 1], rhs_batching_dims = [0, 2], lhs_contracting_dims = [3], rhs_contracting_dims = [1]} : tensor<8x8x16x8xf32>
  %attn_out_0 = dot_general %attn_0, %wo_0 {lhs_contracting_dims = [1, 3], rhs_contracting_dims = [0, 1]} : tensor<8x16x64xf32>
  %res1_0 = add %embed, %attn_out_0 : tensor<8x16x64xf32>
  %41 = constant {value = dense<0.015625>} : tensor<f32>
  %42 = broadcast_in_dim %41 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %43 = constant {value = dense<0.0>} : tensor<f32>
  %44 = reduce %res1_0, %43 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %45 = broadcast_in_dim %44 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %46 = multiply %45, %42 : tensor<8x16x64xf32>
  %47 = subtract %res1_0, %46 : tensor<8x16x64xf32>
  %48 = multiply %47, %47 : tensor<8x16x64xf32>
  %49 = constant {value = dense<0.0>} : tensor<f32>
  %50 = reduce %48, %49 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %51 = broadcast_in_dim %50 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %52 = multiply %51, %42 : tensor<8x16x64xf32>
  %53 = constant {value = dense<1e-05>} : tensor<f32>
  %54 = broadcast_in_dim %53 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %55 = add %52, %54 : tensor<8x16x64xf32>
  %56 = rsqrt %55 : tensor<8x16x64xf32>
  %57 = multiply %47, %56 : tensor<8x16x64xf32>
  %58 = broadcast_in_dim %ln2_g_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %59 = multiply %57, %58 : tensor<8x16x64xf32>
  %60 = broadcast_in_dim %ln2_b_0 {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %61 = add %59, %60 : tensor<8x16x64xf32>
  %62 = dot_general %61, %w1_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x256xf32>
  %63 = constant {value = dense<0.0>} : tensor<f32>
  %64 = broadcast_in_dim %63 {broadcast_dimensions = []} : tensor<8x16x256xf32>
  %ff_0 = maximum %62, %64 : tensor<8x16x256xf32>
  %65 = dot_general %ff_0, %w2_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x64xf32>
  %res2_0 = add %res1_0, %65 : tensor<8x16x64xf32>
  %66 = constant {value = dense<0.015625>} : tensor<f32>
  %67 = broadcast_in_dim %66 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %68 = constant {value = dense<0.0>} : tensor<f32>
  %69 = reduce %res2_0, %68 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %70 = broadcast_in_dim %69 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %71 = multiply %70, %67 : tensor<8x16x64xf32>
  %72 = subtract %res2_0, %71 : tensor<8x16x64xf32>
  %73 = multiply %72, %72 : tensor<8x16x64xf32>
  %74 = constant {value = dense<0.0>} : tensor<f32>
  %75 = reduce %73, %74 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %76 = broadcast_in_dim %75 {broadcast_dimensions = [0, 1]} : tensor<8x16x64xf32>
  %77 = multiply %76, %67 : tensor<8x16x64xf32>
  %78 = constant {value = dense<1e-05>} : tensor<f32>
  %79 = broadcast_in_dim %78 {broadcast_dimensions = []} : tensor<8x16x64xf32>
  %80 = add %77, %79 : tensor<8x16x64xf32>
  %81 = rsqrt %80 : tensor<8x16x64xf32>
  %82 = multiply %72, %81 : tensor<8x16x64xf32>
  %83 = broadcast_in_dim %lnf_g {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %84 = multiply %82, %83 : tensor<8x16x64xf32>
  %85 = broadcast_in_dim %lnf_b {broadcast_dimensions = [2]} : tensor<8x16x64xf32>
  %86 = add %84, %85 : tensor<8x16x64xf32>
  %logits = dot_general %86, %table {lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : tensor<8x16x256xf32>
  %87 = constant {value = dense<-inf>} : tensor<f32>
  %88 = reduce %logits, %87 {dimensions = [2], kind = maximum} : tensor<8x16xf32>
  %89 = broadcast_in_dim %88 {broadcast_dimensions = [0, 1]} : tensor<8x16x256xf32>
  %90 = subtract %logits, %89 : tensor<8x16x256xf32>
  %91 = exponential %90 : tensor<8x16x256xf32>
  %92 = constant {value = dense<0.0>} : tensor<f32>
  %93 = reduce %91, %92 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %log_sum_exp = log %93 : tensor<8x16xf32>
  %94 = iota {iota_dimension = 2} : tensor<8x16x256xi32>
  %95 = broadcast_in_dim %labels {broadcast_dimensions = [0, 1]} : tensor<8x16x256xi32>
  %96 = compare %94, %95 {comparison_direction = EQ} : tensor<8x16x256xi1>
  %97 = constant {value = dense<0.0>} : tensor<f32>
  %98 = broadcast_in_dim %97 {broadcast_dimensions = []} : tensor<8x16x256xf32>
  %99 = select %96, %90, %98 : tensor<8x16x256xf32>
  %100 = constant {value = dense<0.0>} : tensor<f32>
  %label_logit = reduce %99, %100 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %token_loss = subtract %log_sum_exp, %label_logit : tensor<8x16xf32>
  %101 = constant {value = dense<0.0>} : tensor<f32>
  %102 = reduce %token_loss, %101 {dimensions = [0, 1], kind = add} : tensor<f32>
  %103 = constant {value = dense<0.0078125>} : tensor<f32>
  %loss = multiply %102, %103 : tensor<f32>
  return %loss
}
