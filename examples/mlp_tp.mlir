mesh @mesh = <["tp"=8]>

func @main(%x: tensor<16x64xf32, <@mesh, [{}, {}]>>, %w1_0: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2_0: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %0 = dot_general %x, %w1_0 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = constant {value = dense<0.0>} : tensor<f32>
  %2 = broadcast_in_dim %1 {broadcast_dimensions = []} : tensor<16x256xf32>
  %h_0 = maximum %0, %2 : tensor<16x256xf32>
  %y_0 = dot_general %h_0, %w2_0 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  return %y_0
}
