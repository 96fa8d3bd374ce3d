module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xi32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, tensor<16xi32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}]>}, tensor<16x16xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {?}]>}, tensor<32xi8> {jax.result_info = "result[3]", sdy.sharding = #sdy.sharding<@mesh, [{"tp", ?}]>}) {
    %0 = sdy.constant dense<3> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %2 = stablehlo.multiply %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %3 = stablehlo.add %2, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %4 = sdy.constant dense<7> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %6 = stablehlo.compare GT, %3, %5, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %7 = sdy.constant dense<2> : tensor<i32>
    %8 = call @floor_divide(%3, %7) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<i32>) -> tensor<16x32xi32>
    %9 = sdy.constant dense<5> : tensor<i32>
    %10 = call @remainder(%3, %9) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<i32>) -> tensor<16x32xi32>
    %11 = call @_where_1(%6, %8, %10) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi1>, tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi32>
    %12 = sdy.constant dense<255> : tensor<i32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %14 = stablehlo.and %11, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %15 = stablehlo.xor %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %16 = stablehlo.or %14, %15 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %17 = sdy.constant dense<1> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %19 = stablehlo.shift_left %16, %18 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %20 = stablehlo.shift_right_arithmetic %19, %18 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %21 = call @argmax(%20) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>]>} : (tensor<16x32xi32>) -> tensor<16xi32>
    %22 = stablehlo.transpose %arg1, dims = [1, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", ?}, {"dp", ?}]>]>} : (tensor<16x32xi32>) -> tensor<32x16xi32>
    %23 = stablehlo.dot_general %arg0, %22, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<16x32xi32>, tensor<32x16xi32>) -> tensor<16x16xi32>
    %24 = stablehlo.convert %23 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {?}]>]>} : (tensor<16x16xi32>) -> tensor<16x16xf32>
    %25 = sdy.constant dense<0> : tensor<i32>
    %26 = stablehlo.reduce(%20 init: %25) applies stablehlo.add across dimensions = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<i32>) -> tensor<32xi32>
    %27 = stablehlo.convert %26 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"tp", ?}]>]>} : (tensor<32xi32>) -> tensor<32xi8>
    return %20, %21, %24, %27 : tensor<16x32xi32>, tensor<16xi32>, tensor<16x16xf32>, tensor<32xi8>
  }
  func.func private @floor_divide(%arg0: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %2 = stablehlo.divide %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %3 = stablehlo.sign %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %4 = stablehlo.sign %0 : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %6 = stablehlo.compare NE, %3, %5, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %7 = stablehlo.remainder %arg0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %8 = sdy.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %10 = stablehlo.compare NE, %7, %9, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %11 = stablehlo.and %6, %10 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi1>
    %12 = sdy.constant dense<1> : tensor<i32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %14 = stablehlo.subtract %2, %13 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %15 = call @_where_1(%11, %14, %2) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi1>, tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi32>
    return %15 : tensor<16x32xi32>
  }
  func.func private @_where_0(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @remainder(%arg0: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = sdy.constant dense<0> : tensor<i32>
    %2 = stablehlo.compare EQ, %0, %1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = sdy.constant dense<1> : tensor<i32>
    %4 = call @_where_0(%2, %3, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %6 = stablehlo.remainder %arg0, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %7 = stablehlo.broadcast_in_dim %1, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i32>) -> tensor<16x32xi32>
    %8 = stablehlo.compare NE, %6, %7, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %9 = stablehlo.compare LT, %6, %7, SIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %10 = stablehlo.compare LT, %4, %1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %11 = stablehlo.broadcast_in_dim %10, dims = [] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<i1>) -> tensor<16x32xi1>
    %12 = stablehlo.compare NE, %9, %11, UNSIGNED {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : (tensor<16x32xi1>, tensor<16x32xi1>) -> tensor<16x32xi1>
    %13 = stablehlo.and %12, %8 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi1>
    %14 = stablehlo.add %6, %5 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %15 = stablehlo.select %13, %14, %6 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi1>, tensor<16x32xi32>
    return %15 : tensor<16x32xi32>
  }
  func.func private @_where_1(%arg0: tensor<16x32xi1> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, %arg1: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}, %arg2: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) -> (tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) {
    %0 = stablehlo.select %arg0, %arg1, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi1>, tensor<16x32xi32>
    return %0 : tensor<16x32xi32>
  }
  func.func private @argmax(%arg0: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}, {"tp", ?}]>}) -> (tensor<16xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp", ?}]>}) {
    %0 = stablehlo.iota dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}, {"tp", ?}]>]>} : tensor<16x32xi32>
    %1 = sdy.constant dense<-2147483648> : tensor<i32>
    %2 = sdy.constant dense<0> : tensor<i32>
    %3:2 = stablehlo.reduce(%arg0 init: %1), (%0 init: %2) across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"dp", ?}]>, <@mesh, [{"dp", ?}]>]>} : (tensor<16x32xi32>, tensor<16x32xi32>, tensor<i32>, tensor<i32>) -> (tensor<16xi32>, tensor<16xi32>)
     reducer(%arg1: tensor<i32>, %arg3: tensor<i32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %4 = stablehlo.compare GT, %arg1, %arg3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %5 = stablehlo.compare NE, %arg1, %arg1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %6 = stablehlo.or %4, %5 : tensor<i1>
      %7 = stablehlo.compare EQ, %arg1, %arg3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %8 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %9 = stablehlo.and %7, %8 : tensor<i1>
      %10 = stablehlo.or %6, %9 : tensor<i1>
      %11 = stablehlo.select %6, %arg1, %arg3 : tensor<i1>, tensor<i32>
      %12 = stablehlo.select %10, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %11, %12 : tensor<i32>, tensor<i32>
    }
    return %3#1 : tensor<16xi32>
  }
}
