mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, %w: tensor<32x64xf32, <@mesh, [{"tp"}, {}]>>) -> tensor<16x64xf32> {
  %0 = manual_computation %x, %w {body = @local_matmul, in_shardings = [<@mesh, [{?}, {"tp", ?}]>, <@mesh, [{"tp", ?}, {?}]>], manual_axes = ["tp"], out_shardings = [<@mesh, [{?}, {?}]>]} : tensor<16x64xf32>
  %1 = tanh %0 : tensor<16x64xf32>
  return %1
}

func private @local_matmul(%xb: tensor<16x8xf32>, %wb: tensor<8x64xf32>) -> tensor<16x64xf32> {
  %0 = dot_general %xb, %wb {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x64xf32>
  %1 = spmd.all_reduce %0 {axes = ["tp"], kind = add, groups = [[0, 1, 2, 3], [4, 5, 6, 7]]} : tensor<16x64xf32>
  return %1
}
