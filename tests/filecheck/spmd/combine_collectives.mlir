// combine-collectives: independent per-device collectives of one kind, group and reduction become
// one op over several operands (docs/spmd.md, "Combined collectives").
// RUN: shardc opt %s -p combine-collectives --split-input-file | filecheck %s
// RUN: shardc opt %s -p combine-collectives --split-input-file | shardc opt - --split-input-file | filecheck %s
// RUN: shardc opt %s -p 'combine-collectives{threshold=100}' --split-input-file | filecheck %s --check-prefix=SMALL
// RUN: shardc opt %s -p 'combine-collectives{threshold=0}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: shardc opt %s -p 'combine-collectives{count=2}' --split-input-file | filecheck %s --check-prefix=COUNT
// RUN: not shardc opt %s -p 'combine-collectives{threshold=-1}' --split-input-file 2>&1 | filecheck %s --check-prefix=ERR

// ERR: error: in pass 'combine-collectives': combine-collectives: threshold must be 0 (off) or more bytes, not -1

// Three gradient all_reduces: the first two are independent and combine where the second stood;
// the multiply that uses the first one's result moves after the combined op. The third reads
// the first's result, so it starts a group of its own.
// CHECK-LABEL: func @main(
// CHECK-SAME: %[[A:[^:]*]]: tensor<16xf32>, %[[B:[^:]*]]: tensor<32xf32>
// CHECK-NEXT: %[[NA:.*]] = negate %[[A]] : tensor<16xf32>
// CHECK-NEXT: %[[NB:.*]] = negate %[[B]] : tensor<32xf32>
// CHECK-NEXT: %[[RA:.*]], %[[RB:.*]] = spmd.all_reduce %[[NA]], %[[NB]] {axes = ["x"], kind = add, groups = {{\[}}[0, 1]]} : tensor<16xf32>, tensor<32xf32>
// CHECK-NEXT: %[[M:.*]] = multiply %[[RA]], %[[RA]] : tensor<16xf32>
// CHECK-NEXT: %[[RM:.*]] = spmd.all_reduce %[[M]] {axes = ["x"], kind = add, groups = {{\[}}[0, 1]]} : tensor<16xf32>
// CHECK-NEXT: return %[[RM]], %[[RB]]
// SMALL-LABEL: func @main(
// SMALL: spmd.all_reduce %{{[^,]*}} {axes
// SMALL: spmd.all_reduce %{{[^,]*}} {axes
// SMALL: spmd.all_reduce %{{[^,]*}} {axes
// OFF-LABEL: func @main(
// OFF-COUNT-3: spmd.all_reduce %{{[^,]*}} {axes
mesh @m = <["x"=2]>

func @main(%a: tensor<16xf32>, %b: tensor<32xf32>) -> (tensor<16xf32>, tensor<32xf32>) attributes {mesh = @m, in_shapes = [[16], [32]], in_shardings = [<@m, [{}]>, <@m, [{}]>], out_shapes = [[16], [32]], out_shardings = [<@m, [{}]>, <@m, [{}]>]} {
  %na = negate %a : tensor<16xf32>
  %ra = spmd.all_reduce %na {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<16xf32>
  %m = multiply %ra, %ra : tensor<16xf32>
  %nb = negate %b : tensor<32xf32>
  %rb = spmd.all_reduce %nb {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<32xf32>
  %rm = spmd.all_reduce %m {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<16xf32>
  return %rm, %rb
}

// -----

// Only the same key combines: the all_reduces over "x" (sums), the all_gathers over "y" along
// dim 0 and the reduce_scatters over "x" along dim 1; the max, the all_reduce over "y" and the
// all_gather along dim 1 stay alone. Keys are combined in order of first appearance.
// CHECK-LABEL: func @keys(
// CHECK-SAME: %[[P:[^:]*]]: tensor<4x8xf32>, %[[Q:[^:]*]]: tensor<4x8xf32>
// CHECK-DAG: %[[S1:.*]], %[[S2:.*]] = spmd.all_reduce %[[P]], %[[Q]] {axes = ["x"], kind = add, groups = {{\[}}[0, 1], [2, 3]]} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-DAG: %[[MX:.*]] = spmd.all_reduce %[[P]] {axes = ["x"], kind = maximum, groups = {{\[}}[0, 1], [2, 3]]} : tensor<4x8xf32>
// CHECK-DAG: %[[SY:.*]] = spmd.all_reduce %[[P]] {axes = ["y"], kind = add, groups = {{\[}}[0, 2], [1, 3]]} : tensor<4x8xf32>
// CHECK-DAG: %[[G1:.*]], %[[G2:.*]] = spmd.all_gather %[[P]], %[[Q]] {axes = ["y"], dim = 0, groups = {{\[}}[0, 2], [1, 3]]} : tensor<8x8xf32>, tensor<8x8xf32>
// CHECK-DAG: %[[GD:.*]] = spmd.all_gather %[[Q]] {axes = ["y"], dim = 1, groups = {{\[}}[0, 2], [1, 3]]} : tensor<4x16xf32>
// CHECK-DAG: %[[R1:.*]], %[[R2:.*]] = spmd.reduce_scatter %[[P]], %[[Q]] {axes = ["x"], dim = 1, groups = {{\[}}[0, 1], [2, 3]]} : tensor<4x4xf32>, tensor<4x4xf32>
// CHECK: return %[[S1]], %[[S2]], %[[MX]], %[[SY]], %[[G1]], %[[G2]], %[[GD]], %[[R1]], %[[R2]]
mesh @m = <["y"=2, "x"=2]>

func @keys(%p: tensor<4x8xf32>, %q: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {mesh = @m, in_shapes = [[4, 8], [4, 8]], in_shardings = [<@m, [{}, {}]>, <@m, [{}, {}]>], out_shapes = [[4, 8], [4, 8], [4, 8], [4, 8], [8, 8], [8, 8], [4, 16], [4, 8], [4, 8]], out_shardings = [<@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {}]>, <@m, [{}, {"x"}]>, <@m, [{}, {"x"}]>]} {
  %s1 = spmd.all_reduce %p {axes = ["x"], kind = add, groups = [[0, 1], [2, 3]]} : tensor<4x8xf32>
  %mx = spmd.all_reduce %p {axes = ["x"], kind = maximum, groups = [[0, 1], [2, 3]]} : tensor<4x8xf32>
  %sy = spmd.all_reduce %p {axes = ["y"], kind = add, groups = [[0, 2], [1, 3]]} : tensor<4x8xf32>
  %g1 = spmd.all_gather %p {axes = ["y"], dim = 0, groups = [[0, 2], [1, 3]]} : tensor<8x8xf32>
  %gd = spmd.all_gather %q {axes = ["y"], dim = 1, groups = [[0, 2], [1, 3]]} : tensor<4x16xf32>
  %r1 = spmd.reduce_scatter %p {axes = ["x"], dim = 1, groups = [[0, 1], [2, 3]]} : tensor<4x4xf32>
  %s2 = spmd.all_reduce %q {axes = ["x"], kind = add, groups = [[0, 1], [2, 3]]} : tensor<4x8xf32>
  %g2 = spmd.all_gather %q {axes = ["y"], dim = 0, groups = [[0, 2], [1, 3]]} : tensor<8x8xf32>
  %r2 = spmd.reduce_scatter %q {axes = ["x"], dim = 1, groups = [[0, 1], [2, 3]]} : tensor<4x4xf32>
  return %s1, %s2, %mx, %sy, %g1, %g2, %gd, %r1, %r2
}

// -----

// An op with side effects that reads a member's result keeps the group before it: combining
// with the later all_reduce would move the custom_call past it.
// CHECK-LABEL: func @effects(
// CHECK: %[[R1:.*]] = spmd.all_reduce %{{[^,]*}} {axes
// CHECK-NEXT: custom_call %[[R1]]
// CHECK-NEXT: %[[R2:.*]] = spmd.all_reduce %{{[^,]*}} {axes
// CHECK-NEXT: return %[[R2]]
mesh @m = <["x"=2]>

func @effects(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {mesh = @m, in_shapes = [[4], [4]], in_shardings = [<@m, [{}]>, <@m, [{}]>], out_shapes = [[4]], out_shardings = [<@m, [{}]>]} {
  %r1 = spmd.all_reduce %a {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  custom_call %r1 {call_target_name = "log"}
  %r2 = spmd.all_reduce %b {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  return %r2
}

// -----

// At most `count` operands per combined op (XLA's combine_threshold_count, 256 by default).
// COUNT-LABEL: func @count(
// COUNT-NEXT: %[[A:.*]], %[[B:.*]] = spmd.all_reduce %arg0, %arg1 {axes
// COUNT-NEXT: %[[C:.*]], %[[D:.*]] = spmd.all_reduce %arg2, %arg3 {axes
// COUNT-NEXT: %[[E:.*]] = spmd.all_reduce %arg4 {axes
// COUNT-NEXT: return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]]
// CHECK-LABEL: func @count(
// CHECK-NEXT: %[[A:.*]], %[[B:.*]], %[[C:.*]], %[[D:.*]], %[[E:.*]] = spmd.all_reduce %arg0, %arg1, %arg2, %arg3, %arg4 {axes
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]]
mesh @m = <["x"=2]>

func @count(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>, %arg3: tensor<2xf32>, %arg4: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) attributes {mesh = @m, in_shapes = [[2], [2], [2], [2], [2]], in_shardings = [<@m, [{}]>, <@m, [{}]>, <@m, [{}]>, <@m, [{}]>, <@m, [{}]>], out_shapes = [[2], [2], [2], [2], [2]], out_shardings = [<@m, [{}]>, <@m, [{}]>, <@m, [{}]>, <@m, [{}]>, <@m, [{}]>]} {
  %0 = spmd.all_reduce %arg0 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<2xf32>
  %1 = spmd.all_reduce %arg1 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<2xf32>
  %2 = spmd.all_reduce %arg2 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<2xf32>
  %3 = spmd.all_reduce %arg3 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<2xf32>
  %4 = spmd.all_reduce %arg4 {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<2xf32>
  return %0, %1, %2, %3, %4
}

// -----

// A key whose first collective reads a member of an earlier key's group moves with the ops that
// do (to after the combined op); its collectives still combine, where the last of them stood.
// CHECK-LABEL: func @moved_first(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[C:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: %[[RA:.*]], %[[RB:.*]] = spmd.all_reduce %[[A]], %[[B]] {axes = ["x"], kind = add, groups = {{\[}}[0, 1]]} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[GA:.*]], %[[GC:.*]] = spmd.all_gather %[[RA]], %[[C]] {axes = ["x"], dim = 0, groups = {{\[}}[0, 1]]} : tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[GA]], %[[GC]], %[[RB]]
mesh @m = <["x"=2]>

func @moved_first(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>) attributes {mesh = @m, in_shapes = [[4], [4], [4]], in_shardings = [<@m, [{}]>, <@m, [{}]>, <@m, [{}]>], out_shapes = [[8], [8], [4]], out_shardings = [<@m, [{}]>, <@m, [{}]>, <@m, [{}]>]} {
  %ra = spmd.all_reduce %a {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  %ga = spmd.all_gather %ra {axes = ["x"], dim = 0, groups = [[0, 1]]} : tensor<8xf32>
  %rb = spmd.all_reduce %b {axes = ["x"], kind = add, groups = [[0, 1]]} : tensor<4xf32>
  %gc = spmd.all_gather %c {axes = ["x"], dim = 0, groups = [[0, 1]]} : tensor<8xf32>
  return %ga, %gc, %rb
}
