"""passes/propagation/rules/registry.py: Shardy's op sharding rules, checked verbatim against Shardy's text.

Unit cases are translated from openxla/shardy
`transforms/propagation/test/op_sharding_rule_registry.mlir` (and `..._conservative.mlir`),
updated to the current registry (factor kinds, the reshape factorisation, gather/scatter
reduction and index-vector factors, concat permutation vs need_replication). The corpus
cross-check compares every op of the JAX programs in tests/data/stablehlo/extras/*.rules.mlir
with the `sdy.sharding_rule` Shardy attached to it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from shardc.ir.attributes import Symbol
from shardc.ir.core import Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.ops import OPS
from shardc.ir.parser import parse_module
from shardc.ir.types import TensorType
from shardc.passes.propagation.rules.registry import (
    NO_RULE,
    RULES,
    SHARDING_RULE_ATTR,
    rule_for,
    rule_query,
)

EXTRAS = Path(__file__).parent.parent / "data" / "stablehlo" / "extras"


def _rules(args: str, body: str, result: str, *, conservative: bool = False) -> list[str | None]:
    """Rules of every op of `func @main(args) -> result { body; return <last value> }`."""
    last = re.findall(r"^\s*(%\w+)\s*=", body, re.M)[-1]
    text = f"func @main({args}) -> {result} {{\n{body}\n  return {last}\n}}\n"
    module = parse_module(text)
    out: list[str | None] = []
    for op in module.main.ops:
        if op.name != "return":
            rule = rule_for(op, conservative=conservative)
            out.append(None if rule is None else str(rule))
    return out


def _rule(args: str, op: str, result: str, *, conservative: bool = False) -> str | None:
    """The rule of the single op `%0 = op : result`."""
    return _rules(args, f"  %0 = {op} : {result}", result, conservative=conservative)[-1]


def R(body: str) -> str:
    return f"#sdy.op_sharding_rule<{body}>"


# ----- element-wise ---------------------------------------------------------------------------


def test_pointwise_binary_with_size_one_dim() -> None:
    got = _rule("%a: tensor<2x1x4xf32>", "add %a, %a", "tensor<2x1x4xf32>")
    assert got == R("([i, j, k], [i, j, k])->([i, j, k]) {i=2, j=1, k=4}")


def test_pointwise_scalar_has_no_factors() -> None:
    assert _rule("%a: tensor<f32>", "add %a, %a", "tensor<f32>") == R("([], [])->([])")
    assert _rule("%a: tensor<f32>", "sqrt %a", "tensor<f32>") == R("([])->([])")


def test_unary_compare_convert_is_finite() -> None:
    t = "tensor<16x32xf32>"
    assert _rule(f"%a: {t}", "tanh %a", t) == R("([i, j])->([i, j]) {i=16, j=32}")
    got = _rule(f"%a: {t}", "compare %a, %a {comparison_direction = GT}", "tensor<16x32xi1>")
    assert got == R("([i, j], [i, j])->([i, j]) {i=16, j=32}")
    got = _rule(f"%a: {t}", "convert %a", "tensor<16x32xbf16>")
    assert got == R("([i, j])->([i, j]) {i=16, j=32}")
    assert _rule(f"%a: {t}", "is_finite %a", "tensor<16x32xi1>") == R(
        "([i, j])->([i, j]) {i=16, j=32}"
    )


def test_select_and_select_with_scalar_predicate() -> None:
    args = "%p: tensor<4x8xi1>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>"
    assert _rule(args, "select %p, %a, %b", "tensor<4x8xf32>") == R(
        "([i, j], [i, j], [i, j])->([i, j]) {i=4, j=8}"
    )
    args = "%p: tensor<i1>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>"
    assert _rule(args, "select %p, %a, %b", "tensor<4x8xf32>") == R(
        "([], [i, j], [i, j])->([i, j]) {i=4, j=8}"
    )


def test_clamp_and_clamp_with_scalar_bounds() -> None:
    args = "%lo: tensor<4x8xf32>, %x: tensor<4x8xf32>, %hi: tensor<4x8xf32>"
    assert _rule(args, "clamp %lo, %x, %hi", "tensor<4x8xf32>") == R(
        "([i, j], [i, j], [i, j])->([i, j]) {i=4, j=8}"
    )
    args = "%lo: tensor<f32>, %x: tensor<4x8xf32>, %hi: tensor<f32>"
    assert _rule(args, "clamp %lo, %x, %hi", "tensor<4x8xf32>") == R(
        "([], [i, j], [])->([i, j]) {i=4, j=8}"
    )


def test_sharding_ops_are_identities() -> None:
    mesh = 'mesh @mesh = <["x"=2]>\n'
    text = (
        mesh + "func @main(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
        '  %0 = sharding_constraint %a : tensor<8x4xf32, <@mesh, [{"x"}, {}]>>\n'
        "  %1 = propagation_barrier %0 {allowed_direction = FORWARD} : tensor<8x4xf32>\n"
        '  %2 = reshard %1 : tensor<8x4xf32, <@mesh, [{}, {"x"}]>>\n'
        "  sharding_group %2 {group_id = 0}\n"
        "  return %2\n}\n"
    )
    ops = list(parse_module(text).main.ops)
    want = R("([i, j])->([i, j]) {i=8, j=4}")
    assert [str(rule_for(op)) for op in ops[:3]] == [want] * 3
    assert rule_for(ops[3]) is None  # sharding_group


# ----- shape ops ------------------------------------------------------------------------------


def test_broadcast_in_dim() -> None:
    got = _rule(
        "%a: tensor<2x13x1xf32>",
        "broadcast_in_dim %a {broadcast_dimensions = [0, 2, 3]}",
        "tensor<2x64x13x1xf32>",
    )
    assert got == R("([i, k, l])->([i, j, k, l]) {i=2, j=64, k=13, l=1}")


def test_broadcast_in_dim_from_scalar() -> None:
    got = _rule(
        "%a: tensor<f32>", "broadcast_in_dim %a {broadcast_dimensions = []}", "tensor<2x1x13xf32>"
    )
    assert got == R("([])->([i, j, k]) {i=2, j=1, k=13}")


def test_broadcast_in_dim_expands_size_one_dim() -> None:
    got = _rule(
        "%a: tensor<2x1x13xf32>",
        "broadcast_in_dim %a {broadcast_dimensions = [0, 1, 2]}",
        "tensor<2x64x13xf32>",
    )
    assert got == R("([i, j, l])->([i, k, l]) {i=2, j=1, k=64, l=13}")
    got = _rule(
        "%a: tensor<1x32xf32>",
        "broadcast_in_dim %a {broadcast_dimensions = [0, 1]}",
        "tensor<8x32xf32>",
    )
    assert got == R("([i, k])->([j, k]) {i=1, j=8, k=32}")


def test_transpose() -> None:
    got = _rule(
        "%a: tensor<4x8x16xf32>", "transpose %a {permutation = [2, 1, 0]}", "tensor<16x8x4xf32>"
    )
    assert got == R("([k, j, i])->([i, j, k]) {i=16, j=8, k=4}")
    got = _rule(
        "%a: tensor<4x4x8x16xf32>",
        "transpose %a {permutation = [0, 3, 1, 2]}",
        "tensor<4x16x4x8xf32>",
    )
    assert got == R("([i, k, l, j])->([i, j, k, l]) {i=4, j=16, k=4, l=8}")


@pytest.mark.parametrize(
    "src, dst, want",
    [
        ("1x1", "", "([i, j])->([]) {i=1, j=1}"),
        ("2x4", "8", "([i, j])->([ij]) {i=2, j=4}"),
        ("8", "2x4", "([ij])->([i, j]) {i=2, j=4}"),
        ("4x12", "4x2x3x2", "([i, jkl])->([i, j, k, l]) {i=4, j=2, k=3, l=2}"),
        ("8x4x5", "2x16x5", "([ij, k, l])->([i, jk, l]) {i=2, j=4, k=4, l=5}"),
        ("1x8x4", "8x1x4x1", "([i, j, l])->([j, k, l, m]) {i=1, j=8, k=1, l=4, m=1}"),
        ("8x4", "32x1", "([i, j])->([ij, k]) {i=8, j=4, k=1}"),
        ("32x1", "8x4", "([ij, k])->([i, j]) {i=8, j=4, k=1}"),
        ("32", "8x1x4", "([ik])->([i, j, k]) {i=8, j=1, k=4}"),
        ("8x64", "2x4x8x8", "([ij, kl])->([i, j, k, l]) {i=2, j=4, k=8, l=8}"),
        ("8x16x1", "8x16x1x1", "([i, j, k])->([i, j, l, m]) {i=8, j=16, k=1, l=1, m=1}"),
        # Non-divisible splits/merges: the current algorithm (not the one the old Shardy test
        # file describes) adds the factor of the side that is behind, major to minor.
        ("3x2", "2x3", "([i, l])->([j, k]) {i=3, j=2, k=3, l=2}"),
        ("6x4", "4x6", "([ij, mn])->([ik, ln]) {i=2, j=3, k=2, l=3, m=2, n=2}"),
        (
            "5x2x5x3",
            "5x3x5x2",
            "([i, j, l, n])->([i, k, m, o]) {i=5, j=2, k=3, l=5, m=5, n=3, o=2}",
        ),
    ],
)
def test_reshape(src: str, dst: str, want: str) -> None:
    got = _rule(f"%a: tensor<{src}xf32>", "reshape %a", f"tensor<{dst + 'x' if dst else ''}f32>")
    assert got == R(want)


def test_reshape_non_divisible_keeps_sizes_consistent() -> None:
    # 6x10 -> 4x15: no dim of one side divides a dim of the other; the common gcd factors (i, n)
    # are shared and every dim's factors still multiply to its size.
    module = parse_module(
        "func @main(%a: tensor<6x10xf32>) -> tensor<4x15xf32> {\n"
        "  %0 = reshape %a : tensor<4x15xf32>\n  return %0\n}\n"
    )
    rule = rule_for(next(iter(module.main.ops)))
    assert str(rule) == R("([ij, mn])->([ik, ln]) {i=2, j=3, k=2, l=3, m=2, n=5}")
    assert rule is not None
    assert rule.dim_sizes(rule.operands[0]) == (6, 10)
    assert rule.dim_sizes(rule.results[0]) == (4, 15)


def test_reshape_of_empty_tensor_has_no_rule() -> None:
    assert _rule("%a: tensor<4x0xf32>", "reshape %a", "tensor<0x8xf32>") is None


def test_concatenate_of_unrelated_operands_needs_replication() -> None:
    got = _rule(
        "%a: tensor<4x3x256xf32>, %b: tensor<4x5x256xf32>",
        "concatenate %a, %b {dimension = 1}",
        "tensor<4x8x256xf32>",
    )
    assert got == R("([i, j, k], [i, j, k])->([i, j, k]) {i=4, j=8, k=256} need_replication={j}")


def test_concatenate_of_slices_or_one_value_and_its_slices_is_permutation() -> None:
    body = (
        "  %0 = slice %a {start_indices = [0, 0], limit_indices = [2, 8]} : tensor<2x8xf32>\n"
        "  %1 = slice %a {start_indices = [2, 0], limit_indices = [4, 8]} : tensor<2x8xf32>\n"
        "  %2 = concatenate %1, %0 {dimension = 0} : tensor<4x8xf32>\n"
        "  %3 = concatenate %0, %a, %1 {dimension = 0} : tensor<8x8xf32>\n"
        "  %4 = concatenate %a, %a {dimension = 1} : tensor<4x16xf32>"
    )
    got = _rules("%a: tensor<4x8xf32>", body, "tensor<4x16xf32>")
    assert got[2] == R("([i, j], [i, j])->([i, j]) {i=4, j=8} permutation={i}")
    assert got[3] == R("([i, j], [i, j], [i, j])->([i, j]) {i=8, j=8} permutation={i}")
    # The same value twice, no slice: need_replication, as jaxlib's registry says.
    assert got[4] == R("([i, j], [i, j])->([i, j]) {i=4, j=16} need_replication={j}")


def test_concatenate_conservative_has_no_concat_factor() -> None:
    got = _rule(
        "%a: tensor<4x3x256xf32>, %b: tensor<4x5x256xf32>",
        "concatenate %a, %b {dimension = 1}",
        "tensor<4x8x256xf32>",
        conservative=True,
    )
    assert got == R("([i, k, j], [i, l, j])->([i, m, j]) {i=4, j=256, k=1, l=1, m=1}")


def test_slice_pad_reverse_are_permutations() -> None:
    got = _rule(
        "%a: tensor<32x4x8xf32>",
        "slice %a {start_indices = [0, 1, 4], limit_indices = [32, 2, 8], strides = [1, 1, 2]}",
        "tensor<32x1x2xf32>",
    )
    assert got == R("([i, j, k])->([i, j, k]) {i=32, j=4, k=8} permutation={j, k}")
    got = _rule(
        "%a: tensor<28x28x16xf32>, %v: tensor<f32>",
        "pad %a, %v {edge_padding_low = [1, -1, 0], edge_padding_high = [1, -1, 0]}",
        "tensor<30x26x16xf32>",
    )
    assert got == R("([i, j, k], [])->([i, j, k]) {i=28, j=28, k=16} permutation={i, j}")
    got = _rule(
        "%a: tensor<4x32x8x2xf32>", "reverse %a {dimensions = [1, 3]}", "tensor<4x32x8x2xf32>"
    )
    assert got == R("([i, j, k, l])->([i, j, k, l]) {i=4, j=32, k=8, l=2} permutation={j, l}")


def test_slice_and_pad_conservative_block_the_changed_dims() -> None:
    got = _rule(
        "%a: tensor<16x32xf32>, %v: tensor<f32>",
        "pad %a, %v {edge_padding_low = [0, 1], edge_padding_high = [0, 2],"
        " interior_padding = [0, 1]}",
        "tensor<16x66xf32>",
        conservative=True,
    )
    assert got == R("([i, j], [])->([i, j]) {i=16, j=32} permutation={j} blocked_propagation={j}")


# ----- contractions ---------------------------------------------------------------------------


def test_dot_general_matmul() -> None:
    got = _rule(
        "%a: tensor<8x32xf32>, %b: tensor<32x16xf32>",
        "dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0]}",
        "tensor<8x16xf32>",
    )
    assert got == R("([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}")


def test_dot_general_batching_dims() -> None:
    got = _rule(
        "%a: tensor<4x8x32xf32>, %b: tensor<4x32x16xf32>",
        "dot_general %a, %b {lhs_batching_dims = [0], rhs_batching_dims = [0],"
        " lhs_contracting_dims = [2], rhs_contracting_dims = [1]}",
        "tensor<4x8x16xf32>",
    )
    assert got == R("([i, j, l], [i, l, k])->([i, j, k]) {i=4, j=8, k=16, l=32} reduction={l}")


def test_dot_general_many_mixed_dims() -> None:
    got = _rule(
        "%a: tensor<2x4x8x4x64x32xf32>, %b: tensor<16x32x64x4x2xf32>",
        "dot_general %a, %b {lhs_batching_dims = [0, 1], rhs_batching_dims = [4, 3],"
        " lhs_contracting_dims = [5, 4], rhs_contracting_dims = [1, 2]}",
        "tensor<2x4x8x4x16xf32>",
    )
    assert got == R(
        "([i, j, k, l, o, n], [m, n, o, j, i])->([i, j, k, l, m]) "
        "{i=2, j=4, k=8, l=4, m=16, n=32, o=64} reduction={n, o}"
    )


def test_dot_general_attention_scores() -> None:
    # From attention.rules.mlir: batching [0, 2] x [0, 2], contracting [3] x [3].
    got = _rule(
        "%q: tensor<4x16x4x8xf32>, %k: tensor<4x16x4x8xf32>",
        "dot_general %q, %k {lhs_batching_dims = [0, 2], rhs_batching_dims = [0, 2],"
        " lhs_contracting_dims = [3], rhs_contracting_dims = [3]}",
        "tensor<4x4x16x16xf32>",
    )
    assert got == R(
        "([i, k, j, m], [i, l, j, m])->([i, j, k, l]) {i=4, j=4, k=16, l=16, m=8} reduction={m}"
    )


def test_reduce() -> None:
    got = _rule(
        "%a: tensor<2x64x13xf32>, %z: tensor<f32>",
        "reduce %a, %z {dimensions = [1], kind = add}",
        "tensor<2x13xf32>",
    )
    assert got == R("([i, j, k], [])->([i, k]) {i=2, j=64, k=13} reduction={j}")
    got = _rule(
        "%a: tensor<2x64x1x13xf32>, %z: tensor<f32>",
        "reduce %a, %z {dimensions = [1], kind = add}",
        "tensor<2x1x13xf32>",
    )
    assert got == R("([i, j, k, l], [])->([i, k, l]) {i=2, j=64, k=1, l=13} reduction={j}")
    got = _rule(
        "%a: tensor<8x32xf32>, %z: tensor<f32>",
        "reduce %a, %z {dimensions = [0, 1], kind = maximum}",
        "tensor<f32>",
    )
    assert got == R("([i, j], [])->([]) {i=8, j=32} reduction={i, j}")


# ----- windows and dynamic slices (expected rules printed by jaxlib 0.10.2's Shardy) ------------

_CONV_1D = (
    "input_batch_dimension = 0, input_feature_dimension = 2, input_spatial_dimensions = [1], "
    "kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 2, "
    "kernel_spatial_dimensions = [0], output_batch_dimension = 0, output_feature_dimension = 2, "
    "output_spatial_dimensions = [1]"
)


@pytest.mark.parametrize(
    "conservative, want",
    [
        (False, "([i, jk, lm], [k, m, ln])->([i, j, ln]) {i=4, j=4, k=2, l=4, m=2, n=3} "
                "reduction={k, m} permutation={j}"),
        (True, "([i, m, jk], [n, k, jl])->([i, o, jl]) {i=4, j=4, k=2, l=3, m=1, n=1, o=1} "
               "reduction={k}"),
    ],
)
def test_convolution_with_feature_groups(conservative: bool, want: str) -> None:
    got = _rule(
        "%x: tensor<4x9x8xf32>, %k: tensor<3x2x12xf32>",
        f"convolution %x, %k {{{_CONV_1D}, window_strides = [2], feature_group_count = 4}}",
        "tensor<4x4x12xf32>",
        conservative=conservative,
    )
    assert got == R(want)


@pytest.mark.parametrize(
    "conservative, want",
    [
        (False, "([ij, k, l], [n, l, im])->([j, k, im]) {i=2, j=3, k=3, l=3, m=2, n=1} "
                "reduction={l} permutation={k}"),
        (True, "([ij, m, k], [n, k, il])->([j, o, il]) {i=2, j=3, k=3, l=2, m=1, n=1, o=1} "
               "reduction={k}"),
    ],
)
def test_convolution_with_batch_groups(conservative: bool, want: str) -> None:
    got = _rule(
        "%x: tensor<6x5x3xf32>, %k: tensor<3x3x4xf32>",
        f"convolution %x, %k {{{_CONV_1D}, batch_group_count = 2}}",
        "tensor<3x3x4xf32>",
        conservative=conservative,
    )
    assert got == R(want)


@pytest.mark.parametrize(
    "conservative, want",
    [
        (False, "([i, j], [])->([i, j]) {i=16, j=32} permutation={i}"),
        (True, "([i, j], [])->([i, j]) {i=16, j=32} permutation={i} blocked_propagation={i}"),
    ],
)
def test_reduce_window_cumsum(conservative: bool, want: str) -> None:
    # jnp.cumsum along dim 0: the sizes match, but the window moves data along dim 0.
    got = _rule(
        "%x: tensor<16x32xf32>, %z: tensor<f32>",
        "reduce_window %x, %z {kind = add, padding = [[15, 0], [0, 0]], "
        "window_dimensions = [16, 1]}",
        "tensor<16x32xf32>",
        conservative=conservative,
    )
    assert got == R(want)


def test_dynamic_slices() -> None:
    got = _rule(
        "%x: tensor<16x32xf32>, %i: tensor<i32>",
        "dynamic_slice %x, %i, %i {slice_sizes = [4, 32]}",
        "tensor<4x32xf32>",
    )
    assert got == R("([i, j], [], [])->([i, j]) {i=16, j=32} need_replication={i} "
                    "blocked_propagation={i}")
    got = _rule(
        "%x: tensor<16x32xf32>, %u: tensor<4x32xf32>, %i: tensor<i32>",
        "dynamic_update_slice %x, %u, %i, %i",
        "tensor<16x32xf32>",
    )
    assert got == R("([i, k], [j, k], [], [])->([i, k]) {i=16, j=4, k=32} need_replication={j}")


def test_ops_shardy_gives_no_rule() -> None:
    module = parse_module(
        "func @main(%x: tensor<16x32xf32>) -> tensor<16x3xf32> {\n"
        "  %0, %1 = top_k %x {k = 3} : tensor<16x3xf32>, tensor<16x3xi32>\n"
        "  %2, %3 = optimization_barrier %x, %0 : tensor<16x32xf32>, tensor<16x3xf32>\n"
        "  return %3\n}\n"
    )
    assert [rule_for(op) for op in list(module.main.ops)[:2]] == [None, None]


# ----- gather / scatter -----------------------------------------------------------------------


def test_gather_embedding_lookup() -> None:
    # From embedding_lookup.rules.mlir (jnp.take(table, ids, axis=0)).
    got = _rule(
        "%t: tensor<64x32xf32>, %ids: tensor<8x16x1xi32>",
        "gather %t, %ids {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0],"
        " index_vector_dim = 2, slice_sizes = [1, 32]}",
        "tensor<8x16x32xf32>",
    )
    assert got == R(
        "([l, k], [i, j, m])->([i, j, k]) {i=8, j=16, k=32, l=64, m=1} "
        "reduction={l} need_replication={m}"
    )


def test_gather_with_batching_dims() -> None:
    # From embedding_logits_xent.rules.mlir (take_along_axis).
    got = _rule(
        "%x: tensor<8x16x64xf32>, %ids: tensor<8x16x1x1xi32>",
        "gather %x, %ids {offset_dims = [], collapsed_slice_dims = [2],"
        " operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1],"
        " start_index_map = [2], index_vector_dim = 3, slice_sizes = [1, 1, 1]}",
        "tensor<8x16x1xf32>",
    )
    assert got == R(
        "([i, j, l], [i, j, k, m])->([i, j, k]) {i=8, j=16, k=1, l=64, m=1} "
        "reduction={l} need_replication={m}"
    )


def test_gather_sliced_offset_dim_is_blocked() -> None:
    # Shardy's @gather case (3x4x2 operand, slices of 1x2x2).
    got = _rule(
        "%a: tensor<3x4x2xf32>, %ids: tensor<2x3x2xi64>",
        "gather %a, %ids {offset_dims = [2, 3], collapsed_slice_dims = [0],"
        " start_index_map = [1, 0], index_vector_dim = 2, slice_sizes = [1, 2, 2]}",
        "tensor<2x3x2x2xf32>",
    )
    assert got == R(
        "([m, k, l], [i, j, n])->([i, j, k, l]) {i=2, j=3, k=4, l=2, m=3, n=2} "
        "reduction={m} need_replication={k, n} blocked_propagation={k}"
    )


def test_scatter() -> None:
    # Shardy's @scatter_single_input case.
    got = _rule(
        "%a: tensor<3x4x2xf32>, %ids: tensor<2x3x2xi64>, %u: tensor<2x3x2x2xf32>",
        "scatter %a, %ids, %u {update_window_dims = [2, 3], inserted_window_dims = [0],"
        " scatter_dims_to_operand_dims = [1, 0], index_vector_dim = 2, kind = add}",
        "tensor<3x4x2xf32>",
    )
    assert got == R(
        "([n, k, m], [i, j, o], [i, j, l, m])->([n, k, m]) "
        "{i=2, j=3, k=4, l=2, m=2, n=3, o=2} reduction={i, j} need_replication={k, l, o}"
    )


# ----- custom calls, existing rules, ops without rules ----------------------------------------


def test_custom_call_einsum_rule() -> None:
    got = _rule(
        "%a: tensor<8x32xf32>, %b: tensor<32x16xf32>",
        'custom_call %a, %b {call_target_name = "my_matmul", sharding_rule = "ik,kj->ij"}',
        "tensor<8x16xf32>",
    )
    assert got == R("([i, j], [j, k])->([i, k]) {i=8, j=32, k=16} reduction={j}, custom")


def test_custom_call_without_rule() -> None:
    assert (
        _rule("%a: tensor<8x2xf32>", 'custom_call %a {call_target_name = "foo"}', "tensor<8x2xf32>")
        is None
    )
    got = _rule(
        "%a: tensor<8x2xf32>", 'custom_call %a {call_target_name = "MoveToHost"}', "tensor<8x2xf32>"
    )
    assert got == R("([i, j])->([i, j]) {i=8, j=2}")


def test_custom_call_bad_einsum_is_a_located_error() -> None:
    with pytest.raises(ShardcError, match="sharding_rule"):
        _rule(
            "%a: tensor<8x2xf32>",
            'custom_call %a {call_target_name = "f", sharding_rule = "ijk->ij"}',
            "tensor<8x2xf32>",
        )


def test_existing_sharding_rule_attribute_wins() -> None:
    text = R("([i, j])->([j, i]) {i=4, j=2}, custom")
    got = _rule(
        "%a: tensor<4x2xf32>",
        f'custom_call %a {{call_target_name = "foo", {SHARDING_RULE_ATTR} = #opaque<"{text}">}}',
        "tensor<2x4xf32>",
    )
    assert got == text


def test_ops_without_rules() -> None:
    assert _rule("%a: tensor<f32>", "constant {value = dense<0.0>}", "tensor<4xf32>") is None
    assert _rule("%a: tensor<f32>", "iota {iota_dimension = 0}", "tensor<4xi32>") is None


def test_every_op_is_covered() -> None:
    # `spmd.*` ops live in per-device programs, after sharding is decided: they need no rule.
    global_ops = {name for name in OPS if not name.startswith("spmd.")}
    uncovered = global_ops - set(RULES) - set(NO_RULE) - {"custom_call"}
    assert not uncovered
    assert not set(RULES) & set(NO_RULE)


def test_zero_sized_dim_is_a_size_zero_factor() -> None:
    got = _rule("%a: tensor<2x0xf32>", "add %a, %a", "tensor<2x0xf32>")
    assert got == R("([i, j], [i, j])->([i, j]) {i=2, j=0}")
    # A reshape of no elements has none (Shardy's factorisation needs elements).
    assert _rule("%a: tensor<2x0xf32>", "reshape %a", "tensor<0x2xf32>") is None


def test_rules_are_memoised_by_query() -> None:
    body = "  %0 = tanh %a : tensor<8x4xf32>\n  %1 = tanh %0 : tensor<8x4xf32>"
    module = parse_module(
        f"func @main(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {{\n{body}\n  return %1\n}}\n"
    )
    a, b = list(module.main.ops)[:2]
    assert rule_query(a) == rule_query(b)
    assert rule_for(a) is rule_for(b)


# ----- corpus cross-check against Shardy's own rules ------------------------------------------

# StableHLO op name -> shardc op name, for ops shardc's IR has.
_SHLO_NAMES = {
    **{n: n for n in RULES if n in OPS},
    "exponential": "exponential",
}
_OP_RE = re.compile(r'^\s*(?:%[\w#:, %]+=\s*)?"?(stablehlo\.\w+|sdy\.\w+)"?')
_TENSOR_RE = re.compile(r"tensor<([^<>]*)>")
_SSA_RE = re.compile(r"%[\w#]+")


def _rule_text(line: str) -> str | None:
    """The `#sdy.op_sharding_rule<...>` on the line (`->` inside is not a closing `>`)."""
    start = line.find("#sdy.op_sharding_rule<")
    if start < 0:
        return None
    depth, i = 0, start + len("#sdy.op_sharding_rule")
    while i < len(line):
        if line.startswith("->", i):
            i += 2
            continue
        if line[i] == "<":
            depth += 1
        elif line[i] == ">":
            depth -= 1
            if depth == 0:
                return line[start : i + 1]
        i += 1
    return None


def _tensor(text: str) -> TensorType:
    parts = text.split("x")
    return TensorType(tuple(int(p) for p in parts[:-1]), parts[-1])


def _types(line: str, rule_end: int) -> tuple[list[TensorType], list[TensorType]] | None:
    """Operand and result types from the trailing `: ...` of an op line."""
    tail = line[rule_end:]
    colon = tail.find(" : ")
    if colon < 0:
        return None
    sig = tail[colon + 3 :]
    if "->" in sig:
        lhs, rhs = sig.split("->", 1)
        return [_tensor(t) for t in _TENSOR_RE.findall(lhs)], [
            _tensor(t) for t in _TENSOR_RE.findall(rhs)
        ]
    types = [_tensor(t) for t in _TENSOR_RE.findall(sig)]
    return types, types[-1:]


def _ints(pattern: str, text: str) -> tuple[int, ...] | None:
    m = re.search(pattern, text)
    if m is None:
        return None
    return tuple(int(x) for x in re.findall(r"-?\d+", m.group(1)))


class _CorpusOp:
    """One op line of a rules file turned into a shardc `Operation` (or a reason it can't be)."""

    def __init__(self, file: str, line: str, producers: dict[str, tuple[str, str | None]]):
        self.file = file
        self.line = line
        self.shardy = _rule_text(line) or ""
        m = _OP_RE.match(line)
        self.shlo = m.group(1) if m else "?"
        self.op: Operation | None = None
        self.skip = ""
        try:
            self._build(producers)
        except (ValueError, IndexError, ShardcError) as e:
            self.skip = f"cannot extract: {e}"

    def _build(self, producers: dict[str, tuple[str, str | None]]) -> None:
        short = self.shlo.split(".", 1)[1]
        name = "reshard" if self.shlo == "sdy.reshard" else _SHLO_NAMES.get(short)
        if name is None or self.shlo.startswith("sdy.") and name != "reshard":
            self.skip = "op not in shardc IR"
            return
        head = self.line[: self.line.find("{sdy.")] if "{sdy." in self.line else self.line
        if " {" in head:
            head = head[: head.find(" {")]
        rule_end = self.line.find(self.shardy) + len(self.shardy)
        types = _types(self.line, rule_end)
        if types is None:
            self.skip = "no types"
            return
        operand_types, result_types = types
        names = _SSA_RE.findall(head.split(self.shlo, 1)[1])
        if len(operand_types) == 1 and len(names) > 1 and name != "select":
            operand_types = operand_types * len(names)
        if name == "select" and len(operand_types) == 2:
            operand_types = [operand_types[0], operand_types[1], operand_types[1]]
        attrs: dict = {}
        if name == "dot_general":
            lb = _ints(r"batching_dims = (\[[^\]]*\]) x", head) or ()
            rb = _ints(r"batching_dims = \[[^\]]*\] x (\[[^\]]*\])", head) or ()
            lc = _ints(r"contracting_dims = (\[[^\]]*\]) x", head) or ()
            rc = _ints(r"contracting_dims = \[[^\]]*\] x (\[[^\]]*\])", head) or ()
            attrs = {
                "lhs_batching_dims": lb,
                "rhs_batching_dims": rb,
                "lhs_contracting_dims": lc,
                "rhs_contracting_dims": rc,
            }
        elif name == "broadcast_in_dim":
            attrs = {"broadcast_dimensions": _ints(r"dims = (\[[^\]]*\])", head)}
        elif name == "transpose":
            attrs = {"permutation": _ints(r"dims = (\[[^\]]*\])", head)}
        elif name == "reverse":
            attrs = {"dimensions": _ints(r"dims = (\[[^\]]*\])", head)}
        elif name == "concatenate":
            attrs = {"dimension": _ints(r"dim = (\d+)", head)[0]}  # type: ignore[index]
        elif name == "dynamic_slice":
            attrs = {"slice_sizes": _ints(r"sizes = (\[[^\]]*\])", head)}
        elif name == "convolution":
            self.skip = "dimension numbers are checked through the importer"
            return
        elif name == "reduce":
            attrs = {"dimensions": _ints(r"dimensions = (\[[^\]]*\])", self.line)}
            if len(operand_types) == 2:
                names = names[:2]
            else:  # variadic: `(%x init: %a), (%y init: %b)`, a body function in shardc
                names = names[0::2] + names[1::2]
                attrs["body"] = Symbol("body")
        elif name == "gather":
            dn = self.line
            attrs = {
                "offset_dims": _ints(r"offset_dims = (\[[^\]]*\])", dn) or (),
                "collapsed_slice_dims": _ints(r"collapsed_slice_dims = (\[[^\]]*\])", dn) or (),
                "operand_batching_dims": _ints(r"operand_batching_dims = (\[[^\]]*\])", dn) or (),
                "start_indices_batching_dims": _ints(
                    r"start_indices_batching_dims = (\[[^\]]*\])", dn
                )
                or (),
                "index_vector_dim": _ints(r"index_vector_dim = (\d+)", dn)[0],  # type: ignore[index]
            }
        # Operands: fresh values; a concat operand produced by a slice gets a slice owner whose
        # operand is shared per source name (the concat rule looks at that).
        sources: dict[str, Value] = {}
        operands: list[Value] = []
        for i, t in enumerate(operand_types):
            ssa = names[i] if i < len(names) else f"%anon{i}"
            producer = producers.get(ssa)
            if name == "concatenate" and producer is not None and producer[0] == "stablehlo.slice":
                src = producer[1] or ssa
                base = sources.setdefault(src, Value(t, None, 0))  # type: ignore[arg-type]
                owner = Operation("slice", [base], [t])
                operands.append(owner.results[0])
            else:
                operands.append(sources.setdefault(ssa, Value(t, None, i)))  # type: ignore[arg-type]
        self.op = Operation(name, operands, result_types, attrs)


def _sort_op(opening: str, closing: str) -> Operation:
    """A `sort` from its region's opening line (dimension) and closing line (types)."""
    types = _types(closing, closing.find("#sdy.op_sharding_rule"))
    assert types is not None, closing
    operands = [Value(t, None, i) for i, t in enumerate(types[0])]  # type: ignore[arg-type]
    dimension = _ints(r"dimension = (-?\d+)", opening)[0]  # type: ignore[index]
    attrs = {"dimension": dimension, "comparator": Symbol("cmp")}
    return Operation("sort", operands, types[1], attrs)


def corpus_ops() -> list[_CorpusOp]:
    out: list[_CorpusOp] = []
    for path in sorted(EXTRAS.glob("*.rules.mlir")):
        producers: dict[str, tuple[str, str | None]] = {}
        region_ops: list[tuple[str, str]] = []  # ops whose region is open; their attrs follow its `})`
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(%[\w#]+)\s*=\s*\"?(stablehlo\.\w+|sdy\.\w+)\"?\s*(%[\w#]+)?", line)
            if m:
                producers[m.group(1)] = (m.group(2), m.group(3))
                if line.rstrip().endswith("({"):
                    region_ops.append((m.group(2), line))
            if "sdy.sharding_rule = #sdy.op_sharding_rule<" in line:
                if line.lstrip().startswith("})"):
                    c = _CorpusOp(path.name, line, producers)
                    c.shlo, opening = region_ops.pop() if region_ops else ("?", "")
                    c.op, c.skip = None, "op with a region: not in shardc IR"
                    if c.shlo == "stablehlo.sort":
                        c.op, c.skip = _sort_op(opening, line), ""
                    out.append(c)
                else:
                    out.append(_CorpusOp(path.name, line, producers))
    return out


def corpus_agreement() -> tuple[Counter, Counter, list[tuple[str, str, str, str]], Counter]:
    """Per StableHLO op: (agree, disagree, mismatches, skipped)."""
    agree: Counter = Counter()
    disagree: Counter = Counter()
    skipped: Counter = Counter()
    mismatches: list[tuple[str, str, str, str]] = []
    for c in corpus_ops():
        if c.op is None:
            skipped[c.shlo] += 1
            continue
        rule = rule_for(c.op)
        got = "None" if rule is None else str(rule)
        if got == c.shardy:
            agree[c.shlo] += 1
        else:
            disagree[c.shlo] += 1
            mismatches.append((c.file, c.shlo, c.shardy, got))
    return agree, disagree, mismatches, skipped


def test_corpus_rules_match_shardy() -> None:
    agree, disagree, mismatches, skipped = corpus_agreement()
    assert sum(agree.values()) >= 450, (agree, skipped)
    assert not mismatches, "\n".join(
        f"{f}: {op}\n  shardy {s}\n  shardc {g}" for f, op, s, g in mismatches
    )
    # Every op kind shardc has was exercised at least once in the corpus.
    for shlo in (
        "stablehlo.dot_general",
        "stablehlo.reshape",
        "stablehlo.gather",
        "stablehlo.concatenate",
        "stablehlo.pad",
        "stablehlo.slice",
        "stablehlo.sort",
        "sdy.reshard",
    ):
        assert agree[shlo] > 0, shlo


def importer_agreement() -> tuple[Counter, list[tuple[str, str, str, str]], list[str]]:
    """Import each rules file with the StableHLO importer (skipping files with ops shardc's IR
    lacks), drop Shardy's `sdy.sharding_rule` from every op and rebuild it with `rule_for`.
    Returns (agreements per shardc op, mismatches, files not importable)."""
    from shardc.stablehlo.importer import import_stablehlo

    agree: Counter = Counter()
    mismatches: list[tuple[str, str, str, str]] = []
    not_imported: list[str] = []
    for path in sorted(EXTRAS.glob("*.rules.mlir")):
        try:
            module = import_stablehlo(path.read_text(), str(path))
        except ShardcError as e:
            if "unsupported op" not in e.message and "does not import" not in e.message:
                raise
            not_imported.append(path.name)
            continue
        for op in module.walk():
            want = op.attributes.pop(SHARDING_RULE_ATTR, None)
            if want is None:
                continue
            want_text = getattr(want, "text", want)
            if want_text.endswith(", custom>"):
                continue  # given by JAX (a custom_call's rule), not built by Shardy
            got = rule_for(op)
            if str(got) == want_text:
                agree[op.name] += 1
            else:
                mismatches.append((path.name, op.name, want_text, str(got)))
    return agree, mismatches, not_imported


def test_corpus_via_importer_when_available() -> None:
    pytest.importorskip("shardc.stablehlo.importer")
    agree, mismatches, _ = importer_agreement()
    assert sum(agree.values()) >= 300, agree
    assert not mismatches, "\n".join(
        f"{f}: {op}\n  shardy {s}\n  shardc {g}" for f, op, s, g in mismatches
    )


if __name__ == "__main__":
    agree_, disagree_, mismatches_, skipped_ = corpus_agreement()
    for op_name in sorted(set(agree_) | set(disagree_) | set(skipped_)):
        print(
            f"{op_name:36} agree {agree_[op_name]:4}  differ {disagree_[op_name]:3}"
            f"  not checked {skipped_[op_name]:3}"
        )
    for f, op_name, s, g in mismatches_:
        print(f"{f}: {op_name}\n  shardy {s}\n  shardc {g}")
    imported, imported_mismatches, not_imported = importer_agreement()
    print("via importer:", dict(imported), "mismatches:", len(imported_mismatches))
    print("files the importer rejects:", not_imported)


def _window_ops(window: str, stride: str, padding: str = "") -> list[Operation]:
    text = f"""func @main(%x: tensor<4x12xf32>, %g: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x12xf32>) {{
  %z = constant {{value = dense<0.0>}} : tensor<f32>
  %y = reduce_window %x, %z {{window_dimensions = {window}, window_strides = {stride}{padding}, kind = maximum}} : tensor<4x6xf32>
  %dx = select_and_scatter %x, %g, %z {{select = @ge, kind = add, window_dimensions = {window}, window_strides = {stride}{padding}}} : tensor<4x12xf32>
  return %y, %dx
}}
func private @ge(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {{
  %0 = compare %a, %b {{comparison_direction = GE}} : tensor<i1>
  return %0
}}
"""
    return [op for op in parse_module(text).main.ops if op.name != "constant"][:2]


def test_lowering_rules_split_a_tiled_window_dim_into_windows_and_within_stride() -> None:
    """Windows of 2 with stride 2 over 12 tile it: 6 windows (shardable) x 2 (replicated);
    Shardy's rule, which propagation keeps, has one permutation factor."""
    from shardc.passes.propagation.rules.registry import lowering_rule

    pool, grad = _window_ops("[1, 2]", "[1, 2]")
    assert str(lowering_rule(pool)) == (
        "#sdy.op_sharding_rule<([i, jk], [])->([i, j]) {i=4, j=6, k=2} need_replication={k}>"
    )
    assert str(lowering_rule(grad)) == (
        "#sdy.op_sharding_rule<([i, jk], [i, j], [])->([i, jk]) {i=4, j=6, k=2} "
        "need_replication={k}>"
    )
    assert "permutation={j}" in str(rule_for(pool))


@pytest.mark.parametrize("window, stride, padding", [
    ("[1, 3]", "[1, 2]", ", padding = [[0, 0], [1, 0]]"),  # windows overlap: 3 > 2
    ("[1, 2]", "[1, 2]", ", padding = [[0, 0], [1, 0]]"),  # padded: windows shifted by 1
])
def test_lowering_rules_keep_shardys_rule_where_windows_straddle(window, stride, padding) -> None:
    from shardc.passes.propagation.rules.registry import lowering_rule

    for op in _window_ops(window, stride, padding):
        assert lowering_rule(op) == rule_for(op)
