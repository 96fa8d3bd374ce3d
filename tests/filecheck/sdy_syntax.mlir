// Shardy's textual forms, StableHLO + sdy in and out (docs/interop.md): meshes, inline meshes,
// unreduced reductions, shardings of ops without results, tokens, named and nested manual
// computations, and the collectives with several parameters or a reduction. Each case prints
// back as Shardy prints it, and printing is a fixed point.
// RUN: shardc opt %s --split-input-file | filecheck %s
// RUN: shardc opt %s --split-input-file | shardc opt - --split-input-file | filecheck %s

// CHECK: sdy.mesh @empty = <[]>
// CHECK-NEXT: sdy.mesh @maximal = <[], device_ids=[5]>
// CHECK-NEXT: sdy.mesh @one = <["a"=1]>
// CHECK-NEXT: sdy.mesh @iota = <["a"=2, "b"=2]>
// CHECK-NEXT: sdy.mesh @ids = <["a"=2], device_ids=[1, 0]>
sdy.mesh @empty = <[]>
sdy.mesh @maximal = <[], device_ids=[5]>
sdy.mesh @one = <["a"=1], device_ids=[0]>
sdy.mesh @iota = <["a"=2, "b"=2], device_ids=[0, 1, 2, 3]>
sdy.mesh @ids = <["a"=2], device_ids=[1, 0]>

// -----

// The mesh attribute with its dialect prefix (`#sdy.mesh<...>`) is the same mesh; it prints in
// the short form, as MLIR prints it.
// CHECK: sdy.mesh @long = <["x"=2, "y"=2]>
// CHECK-NEXT: sdy.mesh @long_ids = <["x"=2], device_ids=[1, 0]>
// CHECK-LABEL: func.func @uses_long
// CHECK-SAME: sdy.sharding = #sdy.sharding<@long, [{"x"}, {"y"}]>
sdy.mesh @long = #sdy.mesh<["x"=2, "y"=2]>
sdy.mesh @long_ids = #sdy.mesh<["x"=2], device_ids=[1, 0]>
func.func @uses_long(%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@long, [{"x"}, {"y"}]>}) -> tensor<8x2xf32> {
  return %arg0 : tensor<8x2xf32>
}

// -----

// An inline mesh (its iota device ids dropped), a named one next to it, and a reduction of
// the unreduced axes written before the set.
// CHECK-LABEL: func.func @inline
// CHECK-NEXT: %[[B:.*]]:2 = stablehlo.optimization_barrier {sdy.sharding = #sdy.sharding_per_value<[<mesh<["x"=2]>, [{"x"}, {}]>, <@m, [{}, {}], unreduced=max{"a"}>]>} %arg0, %arg1 : tensor<8x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: return %[[B]]#0, %[[B]]#1
sdy.mesh @m = <["a"=2]>
func.func @inline(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0:2 = stablehlo.optimization_barrier {sdy.sharding = #sdy.sharding_per_value<[<mesh<["x"=2], device_ids=[0, 1]>, [{"x"}, {}]>, <@m, [{}, {}], unreduced=max{"a"}>]>} %arg0, %arg1 : tensor<8x8xf32>, tensor<8x8xf32>
  return %0#0, %0#1 : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// An op without results keeps one maximal sharding; a return keeps its (empty) list, written
// before its operands.
// CHECK-LABEL: func.func @no_results
// CHECK-NEXT: stablehlo.custom_call @log(%arg0) {has_side_effect = true, sdy.sharding = #sdy.sharding_per_value<[<@maximal, []>]>} : (tensor<8xf32>) -> ()
// CHECK-NEXT: return {sdy.sharding = #sdy.sharding_per_value<[]>} %arg0 : tensor<8xf32>
sdy.mesh @maximal = <[], device_ids=[0]>
func.func @no_results(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  stablehlo.custom_call @log(%arg0) {has_side_effect = true, sdy.sharding = #sdy.sharding_per_value<[<@maximal, []>]>} : (tensor<8xf32>) -> ()
  return {sdy.sharding = #sdy.sharding_per_value<[]>} %arg0 : tensor<8xf32>
}

// -----

// A named computation with shardings and a token through it.
// CHECK-LABEL: func.func @named
// CHECK-NEXT: %[[N:.*]]:2 = sdy.named_computation<"block">(%arg0, %arg1) in_shardings=[<@m, [{"a"}, {}]>, <@m, []>] out_shardings=[<@m, [{}, {"a"}]>, <@m, []>] (%arg2: tensor<8x4xf32>, %arg3: !stablehlo.token) {
// CHECK-NEXT:   %[[T:.*]] = stablehlo.tanh %arg2 : tensor<8x4xf32>
// CHECK-NEXT:   %[[J:.*]] = stablehlo.after_all %arg3, %arg3 : !stablehlo.token
// CHECK-NEXT:   sdy.return %[[T]], %[[J]] : tensor<8x4xf32>, !stablehlo.token
// CHECK-NEXT: } : (tensor<8x4xf32>, !stablehlo.token) -> (tensor<8x4xf32>, !stablehlo.token)
// CHECK-NEXT: return %[[N]]#0, %[[N]]#1
sdy.mesh @m = <["a"=2]>
func.func @named(%arg0: tensor<8x4xf32>, %arg1: !stablehlo.token) -> (tensor<8x4xf32>, !stablehlo.token) {
  %0:2 = sdy.named_computation<"block">(%arg0, %arg1) in_shardings=[<@m, [{"a"}, {}]>, <@m, []>] out_shardings=[<@m, [{}, {"a"}]>, <@m, []>] (%arg2: tensor<8x4xf32>, %arg3: !stablehlo.token) {
    %1 = stablehlo.tanh %arg2 : tensor<8x4xf32>
    %2 = stablehlo.after_all %arg3, %arg3 : !stablehlo.token
    sdy.return %1, %2 : tensor<8x4xf32>, !stablehlo.token
  } : (tensor<8x4xf32>, !stablehlo.token) -> (tensor<8x4xf32>, !stablehlo.token)
  return %0#0, %0#1 : tensor<8x4xf32>, !stablehlo.token
}

// -----

// A manual computation inside another's body, and one without operands, results or a mesh.
// CHECK-LABEL: func.func @nested
// CHECK-NEXT: %[[O:.*]] = sdy.manual_computation(%arg0) in_shardings=[<@m, [{"a"}, {}]>] out_shardings=[<@m, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
// CHECK-NEXT:   %[[I:.*]] = sdy.manual_computation(%arg1) in_shardings=[<@m, [{}, {"b"}]>] out_shardings=[<@m, [{}, {"b"}]>] manual_axes={"b"} (%arg2: tensor<4x4xf32>) {
// CHECK-NEXT:     %[[A:.*]] = stablehlo.abs %arg2 : tensor<4x4xf32>
// CHECK-NEXT:     sdy.return %[[A]] : tensor<4x4xf32>
// CHECK-NEXT:   } : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:   sdy.return %[[I]] : tensor<4x8xf32>
// CHECK-NEXT: } : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: sdy.manual_computation() in_shardings=[] out_shardings=[] manual_axes={"p", "q"} () {
// CHECK-NEXT:   sdy.return
// CHECK-NEXT: } : () -> ()
// CHECK-NEXT: return %[[O]]
sdy.mesh @m = <["a"=2, "b"=2]>
func.func @nested(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@m, [{"a"}, {}]>] out_shardings=[<@m, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
    %1 = sdy.manual_computation(%arg1) in_shardings=[<@m, [{}, {"b"}]>] out_shardings=[<@m, [{}, {"b"}]>] manual_axes={"b"} (%arg2: tensor<4x4xf32>) {
      %2 = stablehlo.abs %arg2 : tensor<4x4xf32>
      sdy.return %2 : tensor<4x4xf32>
    } : (tensor<4x8xf32>) -> tensor<4x8xf32>
    sdy.return %1 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  sdy.manual_computation() in_shardings=[] out_shardings=[] manual_axes={"p", "q"} () {
    sdy.return
  } : () -> ()
  return %0 : tensor<8x8xf32>
}

// -----

// Collectives: an all_to_all with two moves, sharded/replicated_to_unreduced, an all_reduce
// and a reduce_scatter with a reduction, an all_reduce over an axis the operand is whole on.
// CHECK-LABEL: func.func @collectives
// CHECK-NEXT: %[[A:.*]] = sdy.all_to_all [{"x"}: 0->2, {"y"}: 1->3] %arg0 out_sharding=<@m, [{}, {}, {"x"}, {"y"}]> : tensor<4x4x4x4xf32>
// CHECK-NEXT: %[[S:.*]] = sdy.sharded_to_unreduced [{}, {}, {"x"}, {}] %[[A]] out_sharding=<@m, [{}, {}, {}, {"y"}], unreduced={"x"}> : tensor<4x4x4x4xf32>
// CHECK-NEXT: %[[R:.*]] = sdy.reduce_scatter [{"x"}, {}, {}, {}] %[[S]] out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
// CHECK-NEXT: %[[U:.*]] = sdy.replicated_to_unreduced {"z"} %[[R]] out_sharding=<@m, [{"x"}, {}, {}, {"y"}], unreduced={"z"}> : tensor<4x4x4x4xf32>
// CHECK-NEXT: %[[M:.*]] = sdy.all_reduce {"z"} %[[U]] out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
// CHECK-NEXT: %[[X:.*]] = sdy.all_reduce max {"z"} %[[M]] out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
// CHECK-NEXT: return %[[X]]
sdy.mesh @m = <["x"=2, "y"=2, "z"=2]>
func.func @collectives(%arg0: tensor<4x4x4x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {"y"}, {}, {}]>}) -> tensor<4x4x4x4xf32> {
  %0 = sdy.all_to_all [{"x"}: 0->2, {"y"}: 1->3] %arg0 out_sharding=<@m, [{}, {}, {"x"}, {"y"}]> : tensor<4x4x4x4xf32>
  %1 = sdy.sharded_to_unreduced [{}, {}, {"x"}, {}] %0 out_sharding=<@m, [{}, {}, {}, {"y"}], unreduced={"x"}> : tensor<4x4x4x4xf32>
  %2 = sdy.reduce_scatter [{"x"}, {}, {}, {}] %1 out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
  %3 = sdy.replicated_to_unreduced {"z"} %2 out_sharding=<@m, [{"x"}, {}, {}, {"y"}], unreduced={"z"}> : tensor<4x4x4x4xf32>
  %4 = sdy.all_reduce {"z"} %3 out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
  %5 = sdy.all_reduce max {"z"} %4 out_sharding=<@m, [{"x"}, {}, {}, {"y"}]> : tensor<4x4x4x4xf32>
  return %5 : tensor<4x4x4x4xf32>
}

// -----

// Complex constants, as JAX lowers `1j * x` and a complex array: (real,imag) per element, each
// part printed as MLIR prints its float type (NaN as its bits), splat and nested.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: tensor<2x2xf32>) -> tensor<2x2xcomplex<f32>>
// CHECK: %[[C:.*]] = stablehlo.constant dense<(0.000000e+00,1.000000e+00)> : tensor<complex<f32>>
// CHECK-NEXT: %[[T:.*]] = stablehlo.constant dense<{{\[}}[(1.000000e+00,2.000000e+00), (-0.000000e+00,-5.000000e-01)], [(9.99999993E-9,0.000000e+00), (0x7FC00000,1.000000e+00)]]> : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[B:.*]] = stablehlo.broadcast_in_dim %[[C]], dims = [] : (tensor<complex<f32>>) -> tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[Z:.*]] = stablehlo.convert %[[X]] : (tensor<2x2xf32>) -> tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[M:.*]] = stablehlo.multiply %[[B]], %[[Z]] : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: %[[S:.*]] = stablehlo.add %[[M]], %[[T]] : tensor<2x2xcomplex<f32>>
// CHECK-NEXT: return %[[S]]
module {
  func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xcomplex<f32>> {
    %c = stablehlo.constant dense<(0.000000e+00,1.000000e+00)> : tensor<complex<f32>>
    %t = stablehlo.constant dense<[[(1.000000e+00,2.000000e+00), (-0.000000e+00,-5.000000e-01)], [(9.99999993E-9,0.000000e+00), (0x7FC00000,1.000000e+00)]]> : tensor<2x2xcomplex<f32>>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<complex<f32>>) -> tensor<2x2xcomplex<f32>>
    %1 = stablehlo.convert %arg0 : (tensor<2x2xf32>) -> tensor<2x2xcomplex<f32>>
    %2 = stablehlo.multiply %0, %1 : tensor<2x2xcomplex<f32>>
    %3 = stablehlo.add %2, %t : tensor<2x2xcomplex<f32>>
    return %3 : tensor<2x2xcomplex<f32>>
  }
}
