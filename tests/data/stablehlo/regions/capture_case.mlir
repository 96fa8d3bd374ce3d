module @jit_capture_case attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<i32> {sdy.sharding = #sdy.sharding<@mesh, []>}) -> (tensor<16x32xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<16x32xf32>
    %1 = stablehlo.cosine %arg0 : tensor<16x32xf32>
    %2 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %3 = stablehlo.clamp %c, %2, %c_0 : tensor<i32>
    %4 = "stablehlo.case"(%3) ({
      %5 = stablehlo.add %0, %1 : tensor<16x32xf32>
      stablehlo.return %5 : tensor<16x32xf32>
    }, {
      %5 = stablehlo.multiply %0, %1 : tensor<16x32xf32>
      stablehlo.return %5 : tensor<16x32xf32>
    }, {
      stablehlo.return %0 : tensor<16x32xf32>
    }) : (tensor<i32>) -> tensor<16x32xf32>
    return %4 : tensor<16x32xf32>
  }
}
