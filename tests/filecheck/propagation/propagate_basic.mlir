// RUN: shardc opt %s -p 'propagate{strategy=basic}' --split-input-file | filecheck %s
// RUN: shardc opt %s -p sdy-basic-propagate --split-input-file | filecheck %s

// Under basic, a closed empty dim blocks its factor for every tensor of the op.
// CHECK-LABEL: func @closed_blocks
// CHECK-SAME: %{{.*}}: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %{{.*}}: tensor<8x16xf32, <@m, [{"x", ?}, {?}]>>
mesh @m = <["x"=2, "y"=4]>

func @closed_blocks(%a: tensor<8x16xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x16xf32, <@m, [{?}, {?}]>>) -> tensor<8x16xf32, <@m, [{"x", ?}, {"y"}]>> {
  %0 = add %a, %b : tensor<8x16xf32>
  return %0
}

// -----

// Conflicting operand shardings: only what both agree on (nothing) propagates.
// CHECK-LABEL: func @conflict
// CHECK: add %{{.*}}, %{{.*}} : tensor<8x8xf32>
mesh @m = <["x"=2, "y"=4]>

func @conflict(%a: tensor<8x8xf32, <@m, [{"x"}, {}]>>, %b: tensor<8x8xf32, <@m, [{"y"}, {}]>>) -> tensor<8x8xf32> {
  %0 = add %a, %b : tensor<8x8xf32>
  return %0
}

// -----

// A common prefix propagates: ["x"] and ["x", "y"] agree on ["x", "y"].
// CHECK-LABEL: func @prefix
// CHECK: add %{{.*}}, %{{.*}} : tensor<16x8xf32, <@m, [{"x", "y", ?}, {?}]>>
mesh @m = <["x"=2, "y"=4]>

func @prefix(%a: tensor<16x8xf32, <@m, [{"x", ?}, {?}]>>, %b: tensor<16x8xf32, <@m, [{"x", "y"}, {}]>>) -> tensor<16x8xf32> {
  %0 = add %a, %b : tensor<16x8xf32>
  return %0
}
