module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x32xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> (tensor<16x32xi32> {jax.result_info = "result[0]"}, tensor<16xi32> {jax.result_info = "result[1]"}, tensor<16x16xf32> {jax.result_info = "result[2]"}, tensor<32xi8> {jax.result_info = "result[3]"}) {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<16x32xi32>
    %2 = stablehlo.add %1, %arg1 : tensor<16x32xi32>
    %c_0 = stablehlo.constant dense<7> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %4 = stablehlo.compare GT, %2, %3, SIGNED : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %5 = call @floor_divide(%2, %c_1) : (tensor<16x32xi32>, tensor<i32>) -> tensor<16x32xi32>
    %c_2 = stablehlo.constant dense<5> : tensor<i32>
    %6 = call @remainder(%2, %c_2) : (tensor<16x32xi32>, tensor<i32>) -> tensor<16x32xi32>
    %7 = call @_where(%4, %5, %6) : (tensor<16x32xi1>, tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi32>
    %c_3 = stablehlo.constant dense<255> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %9 = stablehlo.and %7, %8 : tensor<16x32xi32>
    %10 = stablehlo.xor %arg0, %arg1 : tensor<16x32xi32>
    %11 = stablehlo.or %9, %10 : tensor<16x32xi32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %13 = stablehlo.shift_left %11, %12 : tensor<16x32xi32>
    %c_5 = stablehlo.constant dense<1> : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %15 = stablehlo.shift_right_arithmetic %13, %14 : tensor<16x32xi32>
    %16 = call @argmax(%15) : (tensor<16x32xi32>) -> tensor<16xi32>
    %17 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<16x32xi32>) -> tensor<32x16xi32>
    %18 = stablehlo.dot_general %arg0, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x32xi32>, tensor<32x16xi32>) -> tensor<16x16xi32>
    %19 = stablehlo.convert %18 : (tensor<16x16xi32>) -> tensor<16x16xf32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %20 = stablehlo.reduce(%15 init: %c_6) applies stablehlo.add across dimensions = [0] : (tensor<16x32xi32>, tensor<i32>) -> tensor<32xi32>
    %21 = stablehlo.convert %20 : (tensor<32xi32>) -> tensor<32xi8>
    return %15, %16, %19, %21 : tensor<16x32xi32>, tensor<16xi32>, tensor<16x16xf32>, tensor<32xi8>
  }
  func.func private @floor_divide(%arg0: tensor<16x32xi32>, %arg1: tensor<i32>) -> tensor<16x32xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %2 = stablehlo.divide %arg0, %1 : tensor<16x32xi32>
    %3 = stablehlo.sign %arg0 : tensor<16x32xi32>
    %4 = stablehlo.sign %0 : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %6 = stablehlo.compare NE, %3, %5, SIGNED : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %7 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %8 = stablehlo.remainder %arg0, %7 : tensor<16x32xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %10 = stablehlo.compare NE, %8, %9, SIGNED : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %11 = stablehlo.and %6, %10 : tensor<16x32xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %13 = stablehlo.subtract %2, %12 : tensor<16x32xi32>
    %14 = call @_where(%11, %13, %2) : (tensor<16x32xi1>, tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi32>
    return %14 : tensor<16x32xi32>
  }
  func.func private @_where(%arg0: tensor<16x32xi1>, %arg1: tensor<16x32xi32>, %arg2: tensor<16x32xi32>) -> tensor<16x32xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<16x32xi1>, tensor<16x32xi32>
    return %0 : tensor<16x32xi32>
  }
  func.func private @remainder(%arg0: tensor<16x32xi32>, %arg1: tensor<i32>) -> tensor<16x32xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where_0(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<16x32xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<16x32xi32>, tensor<16x32xi32>) -> tensor<16x32xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<16x32xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<16x32xi1>, tensor<16x32xi1>) -> tensor<16x32xi1>
    %12 = stablehlo.and %11, %6 : tensor<16x32xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<16x32xi32>
    %14 = stablehlo.add %4, %13 : tensor<16x32xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<16x32xi1>, tensor<16x32xi32>
    return %15 : tensor<16x32xi32>
  }
  func.func private @_where_0(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @argmax(%arg0: tensor<16x32xi32>) -> tensor<16xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<16x32xi32>
    %c = stablehlo.constant dense<-2147483648> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %c), (%0 init: %c_0) across dimensions = [1] : (tensor<16x32xi32>, tensor<16x32xi32>, tensor<i32>, tensor<i32>) -> (tensor<16xi32>, tensor<16xi32>)
     reducer(%arg1: tensor<i32>, %arg3: tensor<i32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<i32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<i32>, tensor<i32>
    }
    return %1#1 : tensor<16xi32>
  }
}
