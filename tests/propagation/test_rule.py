"""OpShardingRule: Shardy's printed form, its parser, validation and einsum-style rules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardc.ir.diagnostics import ParseError, VerifyError
from shardc.passes.propagation.rules.einsum import rule_from_einsum
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule, factor_symbol
from shardc.passes.propagation.rules.rule_check import check_rule_on
from shardc.passes.propagation.rules.rule_parser import parse_rule

MATMUL = "#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}>"


def matmul_rule() -> OpShardingRule:
    return OpShardingRule(
        (8, 16, 32),
        (((0,), (2,)), ((2,), (1,))),
        (((0,), (1,)),),
        (FactorKind.PASS_THROUGH, FactorKind.PASS_THROUGH, FactorKind.REDUCTION),
    )


# ----- printing -------------------------------------------------------------------------------


def test_factor_symbols_follow_shardy_naming():
    assert [factor_symbol(i) for i in (0, 1, 2, 17, 18, 19, 30)] == [
        "i",
        "j",
        "k",
        "z",
        "z_1",
        "z_2",
        "z_13",
    ]


def test_matmul_prints_like_shardy():
    assert str(matmul_rule()) == MATMUL


def test_reshape_prints_compound_dim():
    rule = OpShardingRule((8, 4), (((0, 1),),), (((0,), (1,)),))
    assert rule.text() == "#sdy.op_sharding_rule<([ij])->([i, j]) {i=8, j=4}>"


def test_scalar_custom_rule_prints_empty_mappings_and_no_sizes():
    rule = OpShardingRule((), ((),), ((),), is_custom=True)
    assert rule.text() == "#sdy.op_sharding_rule<([])->([]), custom>"


def test_all_kind_sets_print_in_shardy_order():
    kinds = (
        FactorKind.NEED_REPLICATION,
        FactorKind.REDUCTION,
        FactorKind.PERMUTATION,
        FactorKind.NEED_REPLICATION,
    )
    rule = OpShardingRule(
        (2, 3, 5, 7),
        (((0,), (1,), (2,), (3,)),),
        (((0,), (2,), (3,)),),
        kinds,
        blocked=(3,),
        is_custom=True,
    )
    assert rule.body_text() == (
        "([i, j, k, l])->([i, k, l]) {i=2, j=3, k=5, l=7} reduction={j} need_replication={i, l} "
        "permutation={k} blocked_propagation={l}, custom"
    )


def test_pad_rule_with_permutation_and_blocked():
    text = (
        "#sdy.op_sharding_rule<([i, j, k], [])->([i, j, k]) {i=28, j=28, k=16} "
        "permutation={i, j} blocked_propagation={i, j}>"
    )
    rule = parse_rule(text)
    assert rule.factors_of_kind(FactorKind.PERMUTATION) == (0, 1)
    assert rule.blocked == (0, 1)
    assert rule.is_pass_through(2) and not rule.is_pass_through(0)
    assert rule.operands[1] == ()
    assert str(rule) == text


def test_blocked_factor_keeps_its_kind():
    rule = parse_rule("([i, j])->([i, j]) {i=4, j=4} blocked_propagation={j}")
    assert rule.is_blocked(1) and rule.is_pass_through(1)


# ----- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        MATMUL,
        "#sdy.op_sharding_rule<([ij])->([i, j]) {i=8, j=4}>",
        "#sdy.op_sharding_rule<([])->([]), custom>",
        "#sdy.op_sharding_rule<([i, j, k])->([i, j, k]) {i=8, j=8, k=8} need_replication={j, k} "
        "blocked_propagation={i, k}, custom>",
        "#sdy.op_sharding_rule<([ij, kl, mn, o], [l, n, o, ip])->([j, k, m, ip]) {i=4, j=2, "
        "k=112, l=2, m=112, n=2, o=192, p=64} reduction={l, n, o} permutation={k, m}>",
    ],
)
def test_parse_print_round_trip(text: str):
    rule = parse_rule(text)
    assert rule.text() == text
    assert parse_rule(rule.text()) == rule


def test_parse_without_wrapper_and_with_loose_spacing():
    rule = parse_rule(" ( [i,k] , [k,j] ) -> ( [i,j] ) { i = 8 , j = 16 , k = 32 } reduction = {k}")
    assert rule == matmul_rule()


def test_parse_factor_beyond_z():
    sizes = ", ".join(f"{factor_symbol(f)}=2" for f in range(20))
    dims = ", ".join(factor_symbol(f) for f in range(20))
    rule = parse_rule(f"([{dims}])->([z_1z_2]) {{{sizes}}}")
    assert rule.results[0] == ((18, 19),)
    assert rule.num_factors == 20


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("([i])->([i]) {i=4", "expected '}'"),
        ("([i])->([i]) {j=4}", "must be listed in order"),
        ("([i])->([j]) {i=4}", "uses factor index 1"),
        ("([i])->([i]) {i=4} reduction={j}", "has no size"),
        ("([i])->([i]) {i=4} reduction={i} need_replication={i}", "two kind sets"),
        ("([i, i])->([i]) {i=4}", "twice"),
        ("([A])->([i]) {i=4}", "expected a factor symbol"),
        ("#sdy.op_sharding_rule<([i])->([i]) {i=4}", "expected '>'"),
        ("([i])->([i]) {i=4} extra", "unexpected text"),
        ("([i])->([i]) {i=4},", "expected 'custom'"),
        ("([i])->([i]) {i=4}, customs", "expected 'custom'"),
        ("([i, j])->([i, j]) {i=4, j=2} need_replication={j, i}", "must be sorted"),
        ("([i, j])->([i, j]) {i=4, j=2} permutation={j, j}", "must be unique"),
        ("#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=2} need_replication={i} reduction={j}>",
         "expected '>'"),
        ("([i, z_0])->([i]) {i=4}", "without leading zeros. Received: '0'"),
        ("([i, z_07])->([i]) {i=4}", "without leading zeros. Received: '07'"),
        ("([z_])->([i]) {i=4}", "expecting integer after 'z_'"),
        ("([z_9223372036854775808])->([i]) {i=4}", "<=2^63-1"),
    ],
)
def test_parse_errors_name_the_problem(text: str, message: str):
    with pytest.raises(ParseError) as info:
        parse_rule(text)
    assert message in str(info.value)


def test_kind_sets_in_shardys_order_then_custom():
    text = ("([i, j, k, l])->([i, l]) {i=2, j=3, k=5, l=7} reduction={j} need_replication={k} "
            "blocked_propagation={i}, custom")
    rule = parse_rule(text)
    assert rule.kind(1) is FactorKind.REDUCTION and rule.kind(2) is FactorKind.NEED_REPLICATION
    assert rule.blocked == (0,) and rule.is_custom
    assert parse_rule(rule.text()) == rule


def test_parse_error_renders_a_caret():
    with pytest.raises(ParseError) as info:
        parse_rule("([i])->([i]) {i=4")
    rendered = info.value.render()
    assert rendered.splitlines()[-1].endswith("^")
    assert "<rule>:1:" in rendered


# ----- validation -----------------------------------------------------------------------------


def test_rule_rejects_bad_factor_index():
    with pytest.raises(VerifyError, match="factor index 3"):
        OpShardingRule((2,), (((3,),),), ())


def test_rule_rejects_dim_without_factor():
    with pytest.raises(VerifyError, match="maps to no factor"):
        OpShardingRule((2,), (((),),), ())


def test_rule_rejects_negative_size():
    with pytest.raises(VerifyError, match="size -1"):
        OpShardingRule((-1,), (((0,),),), ())


def test_rule_accepts_zero_size():
    # Shardy builds rules over size-0 dims too (a tensor<0x4xf32> operand); such a factor is kept.
    rule = OpShardingRule((0, 4), (((0,), (1,)),), ())
    assert rule.dim_sizes(rule.operands[0]) == (0, 4)


def test_rule_queries():
    rule = matmul_rule()
    assert rule.num_factors == 3 and rule.num_operands == 2 and rule.num_results == 1
    assert rule.tensor_sizes() == (8 * 32, 32 * 16, 8 * 16)
    assert rule.is_reduction(2) and rule.kind(0) is FactorKind.PASS_THROUGH
    assert rule.dim_sizes(rule.operands[0]) == (8, 32)
    assert rule.mappings == rule.operands + rule.results


# ----- einsum ---------------------------------------------------------------------------------


def test_einsum_matmul_infers_sizes_and_reduction():
    rule = rule_from_einsum("ik,kj->ij", [(8, 32), (32, 16)], [(8, 16)], is_custom=False)
    # Factors are numbered in order of first appearance: i, k, j.
    assert str(rule) == (
        "#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=32, k=16} reduction={j}>"
    )


def test_einsum_default_is_custom():
    rule = rule_from_einsum("ab->ab", [(2, 3)], [(2, 3)])
    assert rule.is_custom and str(rule).endswith(", custom>")


def test_einsum_compound_dim_infers_the_unknown_factor():
    rule = rule_from_einsum("(ab)->ab", [(32,)], [(8, 4)])
    assert rule.factor_sizes == (8, 4)
    assert rule.operands == (((0, 1),),)


def test_einsum_compound_dim_needs_sizes_when_ambiguous():
    with pytest.raises(ParseError, match="cannot infer"):
        rule_from_einsum("(ab)->(ab)", [(32,)], [(32,)])
    rule = rule_from_einsum("(ab)->(ab)", [(32,)], [(32,)], sizes={"a": 4})
    assert rule.factor_sizes == (4, 8)


def test_einsum_kinds_and_blocked():
    rule = rule_from_einsum(
        "abc->ac", [(2, 3, 5)], [(2, 5)], need_replication="a", permutation="c", blocked="c"
    )
    assert rule.kinds == (
        FactorKind.NEED_REPLICATION,
        FactorKind.REDUCTION,
        FactorKind.PERMUTATION,
    )
    assert rule.blocked == (2,)


def test_einsum_scalar_operand():
    rule = rule_from_einsum(",ab->ab", [(), (2, 3)], [(2, 3)])
    assert rule.operands[0] == ()
    assert rule.text() == "#sdy.op_sharding_rule<([], [i, j])->([i, j]) {i=2, j=3}, custom>"


@pytest.mark.parametrize(
    ("spec", "operands", "results", "message"),
    [
        ("ab", [(2, 3)], [(2, 3)], "needs '->'"),
        ("ab->ab", [(2, 3), (2, 3)], [(2, 3)], "names 1 operands"),
        ("ab->a", [(2,)], [(2,)], "has 2 dims in the rule"),
        ("ab,ab->ab", [(2, 3), (2, 4)], [(2, 3)], "has size 4 but its factors give 3"),
        ("a-b->ab", [(2, 3)], [(2, 3)], "unexpected '-'"),
        ("(ab->ab", [(2,)], [(2, 3)], "unclosed"),
    ],
)
def test_einsum_errors(spec, operands, results, message):
    with pytest.raises(ParseError, match=message):
        rule_from_einsum(spec, operands, results)


def test_einsum_kind_conflict():
    with pytest.raises(ParseError, match="already reduction"):
        rule_from_einsum("ab->a", [(2, 3)], [(2,)], permutation="b")


# ----- properties -----------------------------------------------------------------------------


@st.composite
def rules(draw) -> OpShardingRule:
    n = draw(st.integers(0, 22))
    sizes = tuple(draw(st.lists(st.integers(1, 64), min_size=n, max_size=n)))

    def mapping():
        if n == 0:
            return ()
        factors = draw(st.permutations(range(n)))
        used = factors[: draw(st.integers(0, n))]
        dims, i = [], 0
        while i < len(used):
            k = draw(st.integers(1, min(3, len(used) - i)))
            dims.append(tuple(used[i : i + k]))
            i += k
        return tuple(dims)

    operands = tuple(mapping() for _ in range(draw(st.integers(0, 3))))
    results = tuple(mapping() for _ in range(draw(st.integers(1, 2))))
    kinds = tuple(draw(st.lists(st.sampled_from(FactorKind), min_size=n, max_size=n)))
    if draw(st.integers(0, 3)):  # mostly a rule Shardy's verifier accepts
        used = {f for m in (*operands, *results) for dim in m for f in dim}
        unused = tuple((f,) for f in range(n) if f not in used)
        results = (results[0] + unused, *results[1:])
        in_results = {f for m in results for dim in m for f in dim}
        kinds = tuple(
            FactorKind.PASS_THROUGH if k is FactorKind.REDUCTION and f in in_results else k
            for f, k in enumerate(kinds)
        )
        multi = {f for m in (*operands, *results) for dim in m if len(dim) > 1 for f in dim}
        sizes = tuple(max(size, 2) if f in multi else size for f, size in enumerate(sizes))
    blocked = tuple(draw(st.sets(st.integers(0, n - 1))) if n else ())
    return OpShardingRule(sizes, operands, results, kinds, blocked, draw(st.booleans()))


def _shardy_accepts(rule: OpShardingRule) -> bool:
    """Shardy's verifier on a written rule: every factor used, no size-1 factor in a dim of
    several, no reduction factor in a result."""
    used = {f for m in rule.mappings for dim in m for f in dim}
    in_results = {f for m in rule.results for dim in m for f in dim}
    return (
        used == set(range(rule.num_factors))
        and not any(
            len(dim) > 1 and any(rule.factor_sizes[f] == 1 for f in dim)
            for m in rule.mappings
            for dim in m
        )
        and not in_results & set(rule.factors_of_kind(FactorKind.REDUCTION))
    )


@given(rules())
def test_property_parse_print_round_trip(rule: OpShardingRule):
    parsed = parse_rule(rule.text())  # what the rule alone must satisfy holds by construction
    if not _shardy_accepts(rule):  # on an op of its shapes, an invalid rule: a VerifyError
        def shapes(mappings):
            return [tuple(math.prod(rule.factor_sizes[f] for f in dim) for dim in m)
                    for m in mappings]

        with pytest.raises(VerifyError):
            check_rule_on(parsed, shapes(rule.operands), shapes(rule.results))
        return
    assert parsed == rule
    assert parse_rule(rule.body_text()) == rule
