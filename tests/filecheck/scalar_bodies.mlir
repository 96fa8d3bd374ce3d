// sort and reduce with a body function (ir/ops/scalar_bodies.py): round trip, Shardy's rules,
// propagation (the body functions' scalars stay unsharded), insert-reshards and spmd.
// RUN: shardc opt %s | shardc opt - | filecheck %s --check-prefix=ROUND
// RUN: shardc opt %s -p populate-sharding-rules | filecheck %s --check-prefix=RULES
// RUN: shardc opt %s -p propagate | filecheck %s --check-prefix=PROP
// RUN: shardc opt %s -p propagate,insert-reshards | filecheck %s --check-prefix=RESHARD
// RUN: shardc opt %s -p propagate,insert-reshards,lower-collectives,spmd | filecheck %s --check-prefix=SPMD

// ROUND-LABEL: func @main(
// ROUND: %[[S:.*]], %[[P:.*]] = sort %x, %iota {comparator = @main_sort_cmp, dimension = 1, is_stable = true} : tensor<16x32xf32>, tensor<16x32xi32>
// ROUND: %m, %i = reduce %x, %iota, %inf, %zero {body = @main_reduce_body, dimensions = [0]} : tensor<32xf32>, tensor<32xi32>
// ROUND: func private @main_sort_cmp(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1>

// RULES: sort {{.*}}sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j], [i, j]) {i=16, j=32} need_replication={j}>}
// RULES: reduce {{.*}}sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j], [], [])->([j], [j]) {i=16, j=32} reduction={i}>}
// RULES: compare %a, %b {{.*}}#sdy.op_sharding_rule<([], [])->([])>

// PROP: sort {{.*}} : tensor<16x32xf32, <@mesh, [{"dp", ?}, {"tp", ?}]>>, tensor<16x32xi32, <@mesh, [{"dp", ?}, {"tp", ?}]>>
// PROP: %m, %i = reduce {{.*}} : tensor<32xf32, <@mesh, [{"tp", ?}]>>, tensor<32xi32, <@mesh, [{"tp", ?}]>>
// PROP: func private @main_sort_cmp(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1> {
// PROP-NEXT: compare %a, %b {{.*}} : tensor<i1>

// The sort dim is gathered (need_replication); argmin over the "dp"-sharded dim 0 is a tree:
// each device reduces its 8 rows, the (value, index) partials are gathered and reduced again.
// RESHARD: %[[XS:.*]] = reshard %x : tensor<16x32xf32, <@mesh, [{"dp"}, {}]>>
// RESHARD: %[[IS:.*]] = reshard %iota : tensor<16x32xi32, <@mesh, [{"dp"}, {}]>>
// RESHARD: sort %[[XS]], %[[IS]]
// RESHARD: %[[X2:.*]] = reshape %x : tensor<2x8x32xf32, <@mesh, [{"dp"}, {}, {"tp"}]>>
// RESHARD: %[[I2:.*]] = reshape %iota : tensor<2x8x32xi32, <@mesh, [{"dp"}, {}, {"tp"}]>>
// RESHARD: %[[PM:.*]], %[[PI:.*]] = reduce %[[X2]], %[[I2]], %inf, %zero {body = @main_reduce_body, dimensions = [1]} : tensor<2x32xf32, <@mesh, [{"dp"}, {"tp"}]>>, tensor<2x32xi32, <@mesh, [{"dp"}, {"tp"}]>>
// RESHARD: %[[GM:.*]] = reshard %[[PM]] : tensor<2x32xf32, <@mesh, [{}, {"tp"}]>>
// RESHARD: %[[GI:.*]] = reshard %[[PI]] : tensor<2x32xi32, <@mesh, [{}, {"tp"}]>>
// RESHARD: %m, %i = reduce %[[GM]], %[[GI]], %inf, %zero {body = @main_reduce_body, dimensions = [0]} : tensor<32xf32, <@mesh, [{"tp"}]>>, tensor<32xi32, <@mesh, [{"tp"}]>>

// SPMD: %[[XG:.*]] = spmd.all_gather %x {axes = ["tp"], dim = 1, {{.*}}} : tensor<8x32xf32>
// SPMD: sort %[[XG]], {{.*}} : tensor<8x32xf32>, tensor<8x32xi32>
// SPMD: %[[L:.*]] = reshape %x : tensor<1x8x8xf32>
// SPMD: %[[PM:.*]], %[[PI:.*]] = reduce %[[L]], {{.*}} {body = @main_reduce_body, dimensions = [1]} : tensor<1x8xf32>, tensor<1x8xi32>
// SPMD: %[[GM:.*]] = spmd.all_gather %[[PM]] {axes = ["dp"], dim = 0, {{.*}}} : tensor<2x8xf32>
// SPMD: %[[GI:.*]] = spmd.all_gather %[[PI]] {axes = ["dp"], dim = 0, {{.*}}} : tensor<2x8xi32>
// SPMD: %m, %i = reduce %[[GM]], %[[GI]], %inf, %zero {body = @main_reduce_body, dimensions = [0]} : tensor<8xf32>, tensor<8xi32>
mesh @mesh = <["dp"=2, "tp"=4]>

func @main(%x: tensor<16x32xf32, <@mesh, [{"dp"}, {"tp"}]>>) -> (tensor<16x32xf32>, tensor<16x32xi32>, tensor<32xi32>) {
  %iota = iota {iota_dimension = 0} : tensor<16x32xi32>
  %inf = constant {value = dense<0x7F800000>} : tensor<f32>
  %zero = constant {value = dense<0>} : tensor<i32>
  %s, %p = sort %x, %iota {comparator = @main_sort_cmp, dimension = 1, is_stable = true} : tensor<16x32xf32>, tensor<16x32xi32>
  %m, %i = reduce %x, %iota, %inf, %zero {body = @main_reduce_body, dimensions = [0]} : tensor<32xf32>, tensor<32xi32>
  return %s, %p, %i
}

func private @main_sort_cmp(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>) -> tensor<i1> {
  %0 = compare %a, %b {comparison_direction = LT, compare_type = TOTALORDER} : tensor<i1>
  return %0
}

func private @main_reduce_body(%av: tensor<f32>, %ai: tensor<i32>, %xv: tensor<f32>, %xi: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %0 = compare %av, %xv {comparison_direction = LT} : tensor<i1>
  %1 = compare %av, %av {comparison_direction = NE} : tensor<i1>
  %2 = or %0, %1 : tensor<i1>
  %3 = compare %av, %xv {comparison_direction = EQ} : tensor<i1>
  %4 = compare %ai, %xi {comparison_direction = LT} : tensor<i1>
  %5 = and %3, %4 : tensor<i1>
  %6 = or %2, %5 : tensor<i1>
  %7 = select %2, %av, %xv : tensor<f32>
  %8 = select %6, %ai, %xi : tensor<i32>
  return %7, %8
}
