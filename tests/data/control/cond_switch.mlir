// tests/data/stablehlo/cond_switch.mlir by hand, its case regions outlined (ir/ops/control.py).
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<16x16xf32, <@mesh, [{"dp"}, {"tp"}]>>, %arg1: tensor<i32, <@mesh, []>>) -> tensor<16x16xf32> {
  %cst = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce %arg0, %cst {dimensions = [0, 1], kind = add} : tensor<f32>
  %cst_0 = constant {value = dense<0.0>} : tensor<f32>
  %1 = compare %0, %cst_0 {comparison_direction = GT} : tensor<i1>
  %2 = convert %1 : tensor<i32>
  %3 = case %2, %arg0 {branches = [@main_case, @main_case_0]} : tensor<16x16xf32>
  %c = constant {value = dense<0>} : tensor<i32>
  %c_1 = constant {value = dense<2>} : tensor<i32>
  %4 = clamp %c, %arg1, %c_1 : tensor<i32>
  %5 = case %4, %3 {branches = [@main_case_1, @main_case_2, @main_case_3]} : tensor<16x16xf32>
  return %5
}

func private @main_case(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %cst_2 = constant {value = dense<3.0>} : tensor<f32>
  %0 = broadcast_in_dim %cst_2 {broadcast_dimensions = []} : tensor<16x16xf32>
  %1 = multiply %arg0, %0 : tensor<16x16xf32>
  return %1
}

func private @main_case_0(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %cst_2 = constant {value = dense<1.0>} : tensor<f32>
  %0 = broadcast_in_dim %cst_2 {broadcast_dimensions = []} : tensor<16x16xf32>
  %1 = add %arg0, %0 : tensor<16x16xf32>
  return %1
}

func private @main_case_1(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = sine %x : tensor<16x16xf32>
  return %0
}

func private @main_case_2(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = cosine %x : tensor<16x16xf32>
  return %0
}

func private @main_case_3(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = transpose %x {permutation = [1, 0]} : tensor<16x16xf32>
  %1 = dot_general %x, %0 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x16xf32>
  %2 = dot_general %1, %x {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x16xf32>
  return %2
}
