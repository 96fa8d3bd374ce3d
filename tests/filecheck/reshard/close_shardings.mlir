// close-shardings: open dims closed; a value without a sharding replicated on the module's mesh,
// which, beside JAX's axis-less @empty_mesh of 0-d arguments, is the mesh with axes (a 0-d
// argument keeps @empty_mesh). The per-device program then runs on @mesh, a 0-d result on
// @empty_mesh standing for its declared <@mesh, []> (an axis-less mesh goes with any other).
// RUN: shardc opt %s -p close-shardings | filecheck %s --check-prefix=CLOSE
// RUN: shardc opt %s -p close-shardings,insert-reshards,lower-collectives,spmd | filecheck %s --check-prefix=SPMD

mesh @empty_mesh = <[]>
mesh @mesh = <["dp"=2, "tp"=4]>

// CLOSE-LABEL: func @main(
// CLOSE-SAME: %x: tensor<8x16xf32, <@mesh, [{}, {}]>>, %c: tensor<i32, <@empty_mesh, []>>)
// CLOSE-SAME: -> (tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>, tensor<i32, <@mesh, []>>)
// CLOSE-NEXT: %[[CST:.*]] = constant {value = dense<1>} : tensor<i32, <@mesh, []>>
// CLOSE-NEXT: %[[SUM:.*]] = add %c, %[[CST]] : tensor<i32, <@mesh, []>>
// CLOSE-NEXT: %[[NEG:.*]] = negate %x : tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>
// CLOSE-NEXT: return %[[NEG]], %[[SUM]]

// SPMD-LABEL: func @main(
// SPMD-SAME: %x: tensor<8x16xf32>, %c: tensor<i32>) -> (tensor<4x16xf32>, tensor<i32>)
// SPMD-SAME: mesh = @mesh
// SPMD: %[[SUM:.*]] = add %c, %{{.*}} : tensor<i32>
// SPMD: return %{{.*}}, %[[SUM]]
func @main(%x: tensor<8x16xf32>, %c: tensor<i32, <@empty_mesh, []>>) -> (tensor<8x16xf32, <@mesh, [{"dp", ?}, {?}]>>, tensor<i32, <@mesh, []>>) {
  %cst = constant {value = dense<1>} : tensor<i32>
  %0 = add %c, %cst : tensor<i32>
  %1 = negate %x : tensor<8x16xf32, <@mesh, [{"dp", ?}, {?}]>>
  return %1, %0
}
