mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%tokens: tensor<8x16xi32, <@mesh, [{"dp"}, {}]>>, %labels: tensor<8x16xi32, <@mesh, [{"dp"}, {}]>>, %table: tensor<512x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<f32> {
  %embed = gather %table, %tokens {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 64]} : tensor<8x16x64xf32>
  %logits = dot_general %embed, %table {lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : tensor<8x16x512xf32>
  %0 = constant {value = dense<-inf>} : tensor<f32>
  %1 = reduce %logits, %0 {dimensions = [2], kind = maximum} : tensor<8x16xf32>
  %2 = broadcast_in_dim %1 {broadcast_dimensions = [0, 1]} : tensor<8x16x512xf32>
  %3 = subtract %logits, %2 : tensor<8x16x512xf32>
  %4 = exponential %3 : tensor<8x16x512xf32>
  %5 = constant {value = dense<0.0>} : tensor<f32>
  %6 = reduce %4, %5 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %log_sum_exp = log %6 : tensor<8x16xf32>
  %7 = iota {iota_dimension = 2} : tensor<8x16x512xi32>
  %8 = broadcast_in_dim %labels {broadcast_dimensions = [0, 1]} : tensor<8x16x512xi32>
  %9 = compare %7, %8 {comparison_direction = EQ} : tensor<8x16x512xi1>
  %10 = constant {value = dense<0.0>} : tensor<f32>
  %11 = broadcast_in_dim %10 {broadcast_dimensions = []} : tensor<8x16x512xf32>
  %12 = select %9, %3, %11 : tensor<8x16x512xf32>
  %13 = constant {value = dense<0.0>} : tensor<f32>
  %label_logit = reduce %12, %13 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %token_loss = subtract %log_sum_exp, %label_logit : tensor<8x16xf32>
  %14 = constant {value = dense<0.0>} : tensor<f32>
  %15 = reduce %token_loss, %14 {dimensions = [0, 1], kind = add} : tensor<f32>
  %16 = constant {value = dense<0.0078125>} : tensor<f32>
  %loss = multiply %15, %16 : tensor<f32>
  return %loss
}
