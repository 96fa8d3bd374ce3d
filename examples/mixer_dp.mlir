mesh @mesh = <["dp"=8]>

func @main(%x: tensor<8x16x32xf32, <@mesh, [{"dp"}, {}, {}]>>, %ln1_g_0: tensor<32xf32, <@mesh, [{}]>>, %ln1_b_0: tensor<32xf32, <@mesh, [{}]>>, %wt1_0: tensor<16x32xf32, <@mesh, [{}, {}]>>, %wt2_0: tensor<32x16xf32, <@mesh, [{}, {}]>>, %ln2_g_0: tensor<32xf32, <@mesh, [{}]>>, %ln2_b_0: tensor<32xf32, <@mesh, [{}]>>, %wc1_0: tensor<32x128xf32, <@mesh, [{}, {}]>>, %wc2_0: tensor<128x32xf32, <@mesh, [{}, {}]>>) -> tensor<8x16x32xf32> {
  %0 = constant {value = dense<0.03125>} : tensor<f32>
  %1 = broadcast_in_dim %0 {broadcast_dimensions = []} : tensor<8x16x32xf32>
  %2 = constant {value = dense<0.0>} : tensor<f32>
  %3 = reduce %x, %2 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %4 = broadcast_in_dim %3 {broadcast_dimensions = [0, 1]} : tensor<8x16x32xf32>
  %5 = multiply %4, %1 : tensor<8x16x32xf32>
  %6 = subtract %x, %5 : tensor<8x16x32xf32>
  %7 = multiply %6, %6 : tensor<8x16x32xf32>
  %8 = constant {value = dense<0.0>} : tensor<f32>
  %9 = reduce %7, %8 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %10 = broadcast_in_dim %9 {broadcast_dimensions = [0, 1]} : tensor<8x16x32xf32>
  %11 = multiply %10, %1 : tensor<8x16x32xf32>
  %12 = constant {value = dense<1e-05>} : tensor<f32>
  %13 = broadcast_in_dim %12 {broadcast_dimensions = []} : tensor<8x16x32xf32>
  %14 = add %11, %13 : tensor<8x16x32xf32>
  %15 = rsqrt %14 : tensor<8x16x32xf32>
  %16 = multiply %6, %15 : tensor<8x16x32xf32>
  %17 = broadcast_in_dim %ln1_g_0 {broadcast_dimensions = [2]} : tensor<8x16x32xf32>
  %18 = multiply %16, %17 : tensor<8x16x32xf32>
  %19 = broadcast_in_dim %ln1_b_0 {broadcast_dimensions = [2]} : tensor<8x16x32xf32>
  %20 = add %18, %19 : tensor<8x16x32xf32>
  %21 = transpose %20 {permutation = [0, 2, 1]} : tensor<8x32x16xf32>
  %22 = dot_general %21, %wt1_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x32x32xf32>
  %23 = constant {value = dense<0.0>} : tensor<f32>
  %24 = broadcast_in_dim %23 {broadcast_dimensions = []} : tensor<8x32x32xf32>
  %25 = maximum %22, %24 : tensor<8x32x32xf32>
  %tok_0 = dot_general %25, %wt2_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x32x16xf32>
  %26 = transpose %tok_0 {permutation = [0, 2, 1]} : tensor<8x16x32xf32>
  %res1_0 = add %x, %26 : tensor<8x16x32xf32>
  %27 = constant {value = dense<0.03125>} : tensor<f32>
  %28 = broadcast_in_dim %27 {broadcast_dimensions = []} : tensor<8x16x32xf32>
  %29 = constant {value = dense<0.0>} : tensor<f32>
  %30 = reduce %res1_0, %29 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %31 = broadcast_in_dim %30 {broadcast_dimensions = [0, 1]} : tensor<8x16x32xf32>
  %32 = multiply %31, %28 : tensor<8x16x32xf32>
  %33 = subtract %res1_0, %32 : tensor<8x16x32xf32>
  %34 = multiply %33, %33 : tensor<8x16x32xf32>
  %35 = constant {value = dense<0.0>} : tensor<f32>
  %36 = reduce %34, %35 {dimensions = [2], kind = add} : tensor<8x16xf32>
  %37 = broadcast_in_dim %36 {broadcast_dimensions = [0, 1]} : tensor<8x16x32xf32>
  %38 = multiply %37, %28 : tensor<8x16x32xf32>
  %39 = constant {value = dense<1e-05>} : tensor<f32>
  %40 = broadcast_in_dim %39 {broadcast_dimensions = []} : tensor<8x16x32xf32>
  %41 = add %38, %40 : tensor<8x16x32xf32>
  %42 = rsqrt %41 : tensor<8x16x32xf32>
  %43 = multiply %33, %42 : tensor<8x16x32xf32>
  %44 = broadcast_in_dim %ln2_g_0 {broadcast_dimensions = [2]} : tensor<8x16x32xf32>
  %45 = multiply %43, %44 : tensor<8x16x32xf32>
  %46 = broadcast_in_dim %ln2_b_0 {broadcast_dimensions = [2]} : tensor<8x16x32xf32>
  %47 = add %45, %46 : tensor<8x16x32xf32>
  %48 = dot_general %47, %wc1_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x128xf32>
  %49 = constant {value = dense<0.0>} : tensor<f32>
  %50 = broadcast_in_dim %49 {broadcast_dimensions = []} : tensor<8x16x128xf32>
  %51 = maximum %48, %50 : tensor<8x16x128xf32>
  %chan_0 = dot_general %51, %wc2_0 {lhs_contracting_dims = [2], rhs_contracting_dims = [0]} : tensor<8x16x32xf32>
  %res2_0 = add %res1_0, %chan_0 : tensor<8x16x32xf32>
  return %res2_0
}
