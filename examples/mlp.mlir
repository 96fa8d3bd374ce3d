mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x64xf32, <@mesh, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@mesh, [{}, {"tp"}]>>, %w2: tensor<256x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32, <@mesh, [{"dp"}, {}]>> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = constant {value = dense<0.0>} : tensor<f32>
  %2 = broadcast_in_dim %1 {broadcast_dimensions = []} : tensor<16x256xf32>
  %3 = maximum %0, %2 : tensor<16x256xf32>
  %4 = dot_general %3, %w2 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  return %4
}
