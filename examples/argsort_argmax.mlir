mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>) -> (tensor<16x32xi32>, tensor<32xi32>) {
  %cols = iota {iota_dimension = 1} : tensor<16x32xi32>
  %rows = iota {iota_dimension = 0} : tensor<16x32xi32>
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %zero = constant {value = dense<0>} : tensor<i32>
  %sorted, %order = sort %x, %cols {comparator = @main_sort_cmp, dimension = 1, is_stable = true} : tensor<16x32xf32>, tensor<16x32xi32>
  %max, %argmax = reduce %x, %rows, %ninf, %zero {body = @main_reduce_body, dimensions = [0]} : tensor<32xf32>, tensor<32xi32>
  return %order, %argmax
}

func private @main_sort_cmp(%lhs0: tensor<f32>, %rhs0: tensor<f32>, %lhs1: tensor<i32>, %rhs1: tensor<i32>) -> tensor<i1> {
  %0 = compare %lhs0, %rhs0 {comparison_direction = LT, compare_type = TOTALORDER} : tensor<i1>
  return %0
}

func private @main_reduce_body(%acc0: tensor<f32>, %acc1: tensor<i32>, %x0: tensor<f32>, %x1: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %0 = compare %acc0, %x0 {comparison_direction = GT} : tensor<i1>
  %1 = compare %acc0, %acc0 {comparison_direction = NE} : tensor<i1>
  %2 = or %0, %1 : tensor<i1>
  %3 = compare %acc0, %x0 {comparison_direction = EQ} : tensor<i1>
  %4 = compare %acc1, %x1 {comparison_direction = LT} : tensor<i1>
  %5 = and %3, %4 : tensor<i1>
  %6 = or %2, %5 : tensor<i1>
  %7 = select %2, %acc0, %x0 : tensor<f32>
  %8 = select %6, %acc1, %x1 : tensor<i32>
  return %7, %8
}
