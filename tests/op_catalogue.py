"""One small program per op kind whose rule has reduction, need-replication or permutation factors
or indexed dims, with a hole for each argument's sharding (tests/test_sharded_factors.py fills
them at random): the ops a training step adds to a forward pass (the gradient of a gather is a
scatter-add, of a cumulative sum a reversed one, ...).

`OpKind.text` is native IR with `{mesh}` (the mesh line) and `{s0}`, `{s1}`, ... (`, <@mesh, ...>`
or nothing) after each argument's element type; `ints` gives the range of each integer argument
(`unique`: a permutation, for a `replace` scatter whose result is defined only then).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class IntRange:
    low: int
    high: int  # exclusive
    unique: bool = False


@dataclass(frozen=True)
class OpKind:
    name: str
    text: str
    ints: dict[int, IntRange] = field(default_factory=dict)
    positive: bool = False  # float inputs in [0.5, 1.5] (products stay finite)
    numpy_only: bool = False  # a scatter body the JAX executor cannot run (a located error)


_ARGMAX_BODY = """
func private @argmax(%a0: tensor<f32>, %a1: tensor<i32>, %b0: tensor<f32>, %b1: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
  %0 = compare %a0, %b0 {comparison_direction = GT} : tensor<i1>
  %1 = compare %a0, %b0 {comparison_direction = EQ} : tensor<i1>
  %2 = compare %a1, %b1 {comparison_direction = LT} : tensor<i1>
  %3 = and %1, %2 : tensor<i1>
  %4 = or %0, %3 : tensor<i1>
  %5 = select %0, %a0, %b0 : tensor<f32>
  %6 = select %4, %a1, %b1 : tensor<i32>
  return %5, %6
}
"""

_SORT_CMP = """
func private @less(%a0: tensor<f32>, %b0: tensor<f32>, %a1: tensor<i32>, %b1: tensor<i32>) -> tensor<i1> {
  %0 = compare %a0, %b0 {comparison_direction = LT, compare_type = TOTALORDER} : tensor<i1>
  return %0
}
"""

_GE_SELECT = """
func private @ge(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {
  %0 = compare %a, %b {comparison_direction = GE} : tensor<i1>
  return %0
}
"""


def _scatter(kind: str, unique: bool = False) -> OpKind:
    """The gradient of an embedding lookup: rows of `%u` added (or max-ed, ...) into a table."""
    return OpKind(
        f"scatter_{kind}",
        """{mesh}
func @main(%t: tensor<12x6xf32{s0}>, %i: tensor<4x5xi32{s1}>, %u: tensor<4x5x6xf32{s2}>) -> tensor<12x6xf32> {
  %0 = scatter %t, %i, %u {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, kind = KIND} : tensor<12x6xf32>
  return %0
}
""".replace("KIND", kind),
        {1: IntRange(-1, 30, True) if unique else IntRange(-1, 13)},
        positive=kind == "multiply",
    )


CATALOGUE: list[OpKind] = [
    OpKind(
        "gather_embedding",
        """{mesh}
func @main(%t: tensor<12x6xf32{s0}>, %i: tensor<4x5xi32{s1}>) -> tensor<4x5x6xf32> {
  %0 = gather %t, %i {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 6]} : tensor<4x5x6xf32>
  return %0
}
""",
        {1: IntRange(-2, 14)},
    ),
    OpKind(
        "gather_take_along_axis",
        """{mesh}
func @main(%x: tensor<4x6x10xf32{s0}>, %i: tensor<4x6x1xi32{s1}>) -> tensor<4x6xf32> {
  %0 = gather %x, %i {offset_dims = [], collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1], start_index_map = [2], index_vector_dim = 2, slice_sizes = [1, 1, 1]} : tensor<4x6xf32>
  return %0
}
""",
        {1: IntRange(0, 10)},
    ),
    OpKind(
        "gather_unit_offset",
        """{mesh}
func @main(%x: tensor<6x10xf32{s0}>, %i: tensor<6x1xi32{s1}>) -> tensor<6x6x1xf32> {
  %0 = gather %x, %i {offset_dims = [1, 2], start_index_map = [1], index_vector_dim = 1, slice_sizes = [6, 1]} : tensor<6x6x1xf32>
  return %0
}
""",
        {1: IntRange(-1, 11)},
    ),
    OpKind(
        "gather_two_indices",
        """{mesh}
func @main(%x: tensor<8x6x4xf32{s0}>, %i: tensor<5x2xi32{s1}>) -> tensor<5x4xf32> {
  %0 = gather %x, %i {offset_dims = [1], collapsed_slice_dims = [0, 1], start_index_map = [1, 0], index_vector_dim = 1, slice_sizes = [1, 1, 4]} : tensor<5x4xf32>
  return %0
}
""",
        {1: IntRange(0, 6)},
    ),
    OpKind(
        "gather_unindexed_collapsed",
        """{mesh}
func @main(%x: tensor<6x8xf32{s0}>, %i: tensor<5x1xi32{s1}>) -> tensor<5xf32> {
  %0 = gather %x, %i {offset_dims = [], collapsed_slice_dims = [0, 1], start_index_map = [1], index_vector_dim = 1, slice_sizes = [1, 1]} : tensor<5xf32>
  return %0
}
""",
        {1: IntRange(0, 8)},
    ),
    _scatter("add"),
    _scatter("maximum"),
    _scatter("minimum"),
    _scatter("multiply"),
    _scatter("replace", unique=True),
    *[
        OpKind(
            f"scatter_body_{name}",
            """{mesh}
func @main(%t: tensor<12x6xf32{s0}>, %i: tensor<4x5xi32{s1}>, %u: tensor<4x5x6xf32{s2}>) -> tensor<12x6xf32> {
  %0 = scatter %t, %i, %u {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, body = @combine} : tensor<12x6xf32>
  return %0
}
func private @combine(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
BODY
}
""".replace("BODY", body),
            {1: IntRange(-1, 13)},
            numpy_only=name == "general",
        )
        for name, body in (
            # a known reduction written as a body; then a + b*b (no reduction: replicated)
            ("add", "  %0 = add %b, %a : tensor<f32>\n  return %0"),
            ("general", "  %0 = multiply %b, %b : tensor<f32>\n  %1 = add %a, %0 : tensor<f32>\n"
                        "  return %1"),
        )
    ],
    *[
        OpKind(
            f"scatter_variadic_{name}",
            """{mesh}
func @main(%t: tensor<12x6xf32{s0}>, %n: tensor<12x6xi32{s1}>, %i: tensor<4x5xi32{s2}>, %u: tensor<4x5x6xf32{s3}>, %v: tensor<4x5x6xi32{s4}>) -> (tensor<12x6xf32>, tensor<12x6xi32>) {
  %0, %1 = scatter %t, %n, %i, %u, %v {update_window_dims = [2], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 2, body = @combine} : tensor<12x6xf32>, tensor<12x6xi32>
  return %0, %1
}
func private @combine(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
BODY
}
""".replace("BODY", body),
            {1: IntRange(0, 100), 2: IntRange(-1, 13), 4: IntRange(0, 100)},
            numpy_only=name == "keep_max",
        )
        for name, body in (
            ("add", "  %0 = add %a, %c : tensor<f32>\n  %1 = add %b, %d : tensor<i32>\n"
                    "  return %0, %1"),
            # keep the larger value and the index that came with it (ties: the earlier one)
            ("keep_max", "  %0 = maximum %a, %c : tensor<f32>\n"
                         "  %1 = compare %a, %c {comparison_direction = GE} : tensor<i1>\n"
                         "  %2 = select %1, %b, %d : tensor<i32>\n  return %0, %2"),
        )
    ],
    OpKind(
        "scatter_take_along_axis",
        """{mesh}
func @main(%x: tensor<4x6x10xf32{s0}>, %i: tensor<4x6x1xi32{s1}>, %u: tensor<4x6xf32{s2}>) -> tensor<4x6x10xf32> {
  %0 = scatter %x, %i, %u {update_window_dims = [], inserted_window_dims = [2], input_batching_dims = [0, 1], scatter_indices_batching_dims = [0, 1], scatter_dims_to_operand_dims = [2], index_vector_dim = 2, kind = add} : tensor<4x6x10xf32>
  return %0
}
""",
        {1: IntRange(0, 10)},
    ),
    OpKind(
        "scatter_partial_window",
        """{mesh}
func @main(%x: tensor<6x12xf32{s0}>, %i: tensor<3x1xi32{s1}>, %u: tensor<3x6x4xf32{s2}>) -> tensor<6x12xf32> {
  %0 = scatter %x, %i, %u {update_window_dims = [1, 2], scatter_dims_to_operand_dims = [1], index_vector_dim = 1, kind = add} : tensor<6x12xf32>
  return %0
}
""",
        {1: IntRange(0, 10)},
    ),
    OpKind(
        "scatter_unindexed_inserted",
        """{mesh}
func @main(%x: tensor<6x8xf32{s0}>, %i: tensor<5x1xi32{s1}>, %u: tensor<5xf32{s2}>) -> tensor<6x8xf32> {
  %0 = scatter %x, %i, %u {update_window_dims = [], inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [1], index_vector_dim = 1, kind = add} : tensor<6x8xf32>
  return %0
}
""",
        {1: IntRange(0, 8)},
    ),
    *[
        OpKind(
            f"reduce_{kind}",
            """{mesh}
func @main(%x: tensor<6x8x5xf32{s0}>) -> tensor<8xf32> {
  %init = constant {value = dense<INIT>} : tensor<f32>
  %0 = reduce %x, %init {dimensions = [0, 2], kind = KIND} : tensor<8xf32>
  return %0
}
""".replace("KIND", kind).replace("INIT", init),
            positive=kind == "multiply",
        )
        for kind, init in (
            ("add", "0.5"),
            ("maximum", "0xFF800000"),
            ("minimum", "0x7F800000"),
            ("multiply", "1.0"),
        )
    ],
    OpKind(
        "reduce_argmax",
        """{mesh}
func @main(%x: tensor<12x6xf32{s0}>, %n: tensor<12x6xi32{s1}>) -> (tensor<6xf32>, tensor<6xi32>) {
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %zero = constant {value = dense<0>} : tensor<i32>
  %m, %a = reduce %x, %n, %ninf, %zero {body = @argmax, dimensions = [0]} : tensor<6xf32>, tensor<6xi32>
  return %m, %a
}
"""
        + _ARGMAX_BODY,
        {1: IntRange(0, 100)},
    ),
    OpKind(
        "dot_general",
        """{mesh}
func @main(%a: tensor<4x6x10xf32{s0}>, %b: tensor<4x10x7xf32{s1}>) -> tensor<4x6x7xf32> {
  %0 = dot_general %a, %b {lhs_batching_dims = [0], rhs_batching_dims = [0], lhs_contracting_dims = [2], rhs_contracting_dims = [1]} : tensor<4x6x7xf32>
  return %0
}
""",
    ),
    OpKind(
        "cumsum",
        """{mesh}
func @main(%x: tensor<6x12xf32{s0}>) -> tensor<6x12xf32> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce_window %x, %zero {window_dimensions = [1, 12], padding = [[0, 0], [11, 0]], kind = add} : tensor<6x12xf32>
  return %0
}
""",
    ),
    OpKind(
        "reverse_cummax_with_init",
        """{mesh}
func @main(%x: tensor<6x12xf32{s0}>) -> tensor<6x12xf32> {
  %init = constant {value = dense<0.25>} : tensor<f32>
  %0 = reduce_window %x, %init {window_dimensions = [1, 12], padding = [[0, 0], [0, 11]], kind = maximum} : tensor<6x12xf32>
  return %0
}
""",
    ),
    OpKind(
        "cumprod_leading_dim",
        """{mesh}
func @main(%x: tensor<8x5xf32{s0}>) -> tensor<8x5xf32> {
  %one = constant {value = dense<1.0>} : tensor<f32>
  %0 = reduce_window %x, %one {window_dimensions = [8, 1], padding = [[7, 0], [0, 0]], kind = multiply} : tensor<8x5xf32>
  return %0
}
""",
        positive=True,
    ),
    OpKind(
        "max_pool",
        """{mesh}
func @main(%x: tensor<4x12x6xf32{s0}>) -> tensor<4x6x6xf32> {
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %0 = reduce_window %x, %ninf {window_dimensions = [1, 2, 1], window_strides = [1, 2, 1], kind = maximum} : tensor<4x6x6xf32>
  return %0
}
""",
    ),
    OpKind(
        "max_pool_grad",
        """{mesh}
func @main(%x: tensor<4x12x6xf32{s0}>, %g: tensor<4x6x3xf32{s1}>) -> tensor<4x12x6xf32> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = select_and_scatter %x, %g, %zero {select = @ge, kind = add, window_dimensions = [1, 2, 2], window_strides = [1, 2, 2]} : tensor<4x12x6xf32>
  return %0
}
"""
        + _GE_SELECT,
    ),
    OpKind(
        "pool_window_within_stride",
        """{mesh}
func @main(%x: tensor<6x12xf32{s0}>) -> tensor<6x4xf32> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = reduce_window %x, %zero {window_dimensions = [1, 2], window_strides = [1, 3], kind = add} : tensor<6x4xf32>
  return %0
}
""",
    ),
    OpKind(
        "pool_windows_straddle",
        """{mesh}
func @main(%x: tensor<6x12xf32{s0}>) -> tensor<6x5xf32> {
  %ninf = constant {value = dense<0xFF800000>} : tensor<f32>
  %0 = reduce_window %x, %ninf {window_dimensions = [1, 3], window_strides = [1, 2], kind = maximum} : tensor<6x5xf32>
  return %0
}
""",
    ),
    OpKind(
        "pool_grad_windows_straddle",
        """{mesh}
func @main(%x: tensor<6x11xf32{s0}>, %g: tensor<6x5xf32{s1}>) -> tensor<6x11xf32> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = select_and_scatter %x, %g, %zero {select = @ge, kind = add, window_dimensions = [1, 3], window_strides = [1, 2]} : tensor<6x11xf32>
  return %0
}
"""
        + _GE_SELECT,
    ),
    OpKind(
        "sort",
        """{mesh}
func @main(%x: tensor<6x10xf32{s0}>, %n: tensor<6x10xi32{s1}>) -> (tensor<6x10xf32>, tensor<6x10xi32>) {
  %s, %o = sort %x, %n {comparator = @less, dimension = 1, is_stable = true} : tensor<6x10xf32>, tensor<6x10xi32>
  return %s, %o
}
"""
        + _SORT_CMP,
        {1: IntRange(0, 100)},
    ),
    OpKind(
        "top_k",
        """{mesh}
func @main(%x: tensor<6x12xf32{s0}>) -> (tensor<6x3xf32>, tensor<6x3xi32>) {
  %v, %i = top_k %x {k = 3} : tensor<6x3xf32>, tensor<6x3xi32>
  return %v, %i
}
""",
    ),
    OpKind(
        "convolution",
        """{mesh}
func @main(%x: tensor<4x10x6xf32{s0}>, %k: tensor<3x6x8xf32{s1}>) -> tensor<4x10x8xf32> {
  %0 = convolution %x, %k {input_batch_dimension = 0, input_feature_dimension = 2, input_spatial_dimensions = [1], kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [0], output_batch_dimension = 0, output_feature_dimension = 2, output_spatial_dimensions = [1], padding = [[1, 1]]} : tensor<4x10x8xf32>
  return %0
}
""",
    ),
    OpKind(
        "convolution_weight_gradient",
        """{mesh}
func @main(%x: tensor<6x12x4xf32{s0}>, %g: tensor<6x10x8xf32{s1}>) -> tensor<4x3x8xf32> {
  %0 = convolution %x, %g {input_batch_dimension = 2, input_feature_dimension = 0, input_spatial_dimensions = [1], kernel_input_feature_dimension = 0, kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [1], output_batch_dimension = 0, output_feature_dimension = 2, output_spatial_dimensions = [1]} : tensor<4x3x8xf32>
  return %0
}
""",
    ),
    OpKind(
        "dynamic_slice",
        """{mesh}
func @main(%x: tensor<12x6xf32{s0}>, %i: tensor<i32{s1}>) -> tensor<4x6xf32> {
  %z = constant {value = dense<0>} : tensor<i32>
  %0 = dynamic_slice %x, %i, %z {slice_sizes = [4, 6]} : tensor<4x6xf32>
  return %0
}
""",
        {1: IntRange(-2, 12)},
    ),
    OpKind(
        "dynamic_update_slice",
        """{mesh}
func @main(%x: tensor<12x6xf32{s0}>, %u: tensor<4x6xf32{s1}>, %i: tensor<i32{s2}>) -> tensor<12x6xf32> {
  %z = constant {value = dense<0>} : tensor<i32>
  %0 = dynamic_update_slice %x, %u, %i, %z : tensor<12x6xf32>
  return %0
}
""",
        {2: IntRange(-2, 12)},
    ),
    OpKind(
        "concatenate_pad_slice_reverse",
        """{mesh}
func @main(%x: tensor<6x8xf32{s0}>, %y: tensor<6x4xf32{s1}>) -> tensor<6x10xf32> {
  %zero = constant {value = dense<0.0>} : tensor<f32>
  %0 = concatenate %x, %y {dimension = 1} : tensor<6x12xf32>
  %1 = reverse %0 {dimensions = [1]} : tensor<6x12xf32>
  %2 = pad %1, %zero {edge_padding_low = [0, 1], edge_padding_high = [0, 0]} : tensor<6x13xf32>
  %3 = slice %2 {start_indices = [0, 2], limit_indices = [6, 12]} : tensor<6x10xf32>
  return %3
}
""",
    ),
]
