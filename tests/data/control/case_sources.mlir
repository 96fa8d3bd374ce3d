// tests/data/control/shardy/case_sources.mlir, its case regions outlined.
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%arg0: tensor<i32>, %arg1: tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>, %arg2: tensor<16x32xf32, <@mesh, [{}, {"tp"}]>>, %arg3: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %0 = case %arg0, %arg1, %arg2, %arg3 {branches = [@main_case, @main_case_0, @main_case_1]} : tensor<16x32xf32>
  %1 = negate %0 : tensor<16x32xf32>
  return %1
}

func private @main_case(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %c: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %0 = multiply %a, %a : tensor<16x32xf32>
  return %0
}

func private @main_case_0(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %c: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %0 = add %b, %b : tensor<16x32xf32>
  return %0
}

func private @main_case_1(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %c: tensor<32x16xf32>) -> tensor<16x32xf32> {
  %0 = transpose %c {permutation = [1, 0]} : tensor<16x32xf32>
  return %0
}
