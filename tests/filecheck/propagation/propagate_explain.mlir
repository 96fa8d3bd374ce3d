// RUN: shardc opt %s -p propagate --explain | filecheck %s

// Every decided axis names the annotation it came from and the op it travelled through.
// CHECK: func @main(%{{.*}}: tensor<16x64xf32, <@m, [{"dp"}, {}]>> {shardc.origin = "{\"dp\" = input: 0}"}
// The constraint reaches the matmul first (stage 0: it and tanh are pass-through ops with a
// single use), so "tp" on the matmul's result comes from the constraint, not from %w1.
// CHECK: dot_general {{.*}}shardc.origin = "{\"dp\" = input: 0 via dot_general (priority 0, op stage 2), \"tp\" = constraint %c via tanh (priority 0, op stage 0)}"
// CHECK: tanh {{.*}}shardc.origin = "{\"dp\" = input: 0 via tanh
// CHECK: sharding_constraint {{.*}}\"tp\" = constraint %c}"
mesh @m = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x64xf32, <@m, [{"dp"}, {}]>>, %w1: tensor<64x256xf32, <@m, [{}, {"tp"}]>>) -> tensor<16x256xf32> {
  %0 = dot_general %x, %w1 {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : tensor<16x256xf32>
  %1 = tanh %0 : tensor<16x256xf32>
  %c = sharding_constraint %1 : tensor<16x256xf32, <@m, [{?}, {"tp"}]>>
  return %c
}
