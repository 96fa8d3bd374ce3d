"""A `sdy.sharding_rule` written on a StableHLO op is parsed and checked against the op when
the module imports (passes/propagation/rules/rule_check.py): a located error, never a rule that propagation
would later trip over."""

from __future__ import annotations

import pytest

from shardc.ir.diagnostics import ShardcError, VerifyError
from shardc.passes.propagation.rules.rule_check import check_rule_on
from shardc.passes.propagation.rules.rule_parser import parse_rule
from shardc.stablehlo import import_stablehlo


def _add(rule: str, shape: str = "2x8") -> str:
    t = f"tensor<{shape}xf32>"
    return (f"func.func @main(%arg0: {t}) -> {t} {{\n"
            f"  %0 = stablehlo.add %arg0, %arg0 {{sdy.sharding_rule = {rule}}} : {t}\n"
            f"  return %0 : {t}\n}}\n")


@pytest.mark.parametrize(("rule", "message"), [
    ("#sdy.op_sharding_rule<([i, j], [i])->([i, j]) {i=2, j=8}>",
     "operand 1 - mapping rank must match: 1 != 2"),
    ("#sdy.op_sharding_rule<([i, j], [i, j])->([i]) {i=2, j=8}>",
     "result - mapping rank must match: 1 != 2"),
    ("#sdy.op_sharding_rule<([i, j])->([i, j]) {i=2, j=8}>",
     "number of operands and mappings must match: 2 != 1"),
    ("#sdy.op_sharding_rule<([i, j], [i, j])->([i, j], [i, j]) {i=2, j=8}>",
     "number of results and mappings must match: 1 != 2"),
    ("#sdy.op_sharding_rule<([i, jk], [i, j])->([i, j]) {i=2, j=8, k=1}>",
     "operand 0 - dim mapping can't have a factor of size 1 if there are multiple factors"),
    ("#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=2, j=8, k=2}>",
     "has factor k=2 that isn't used in operand and result mappings"),
    ("#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=2, j=8} reduction={j}>",
     "reduction factor cannot be in result mappings"),
    ("#sdy.op_sharding_rule<([i, j], [i, j])->([i j]) {i=2, j=8}>", "expected ']'"),
    ("1 : i64", "should have a sharding rule attribute of type OpShardingRuleAttr"),
])
def test_a_rule_that_does_not_fit_the_op_is_a_located_error(rule: str, message: str) -> None:
    with pytest.raises(ShardcError) as info:
        import_stablehlo(_add(rule), "r.mlir")
    assert message in info.value.message
    assert info.value.loc is not None and info.value.loc.line == 2
    assert info.value.render().startswith("r.mlir:2:")


def test_a_rule_that_fits_is_kept_and_used() -> None:
    from shardc.passes.propagation.state import rule_for

    rule = "#sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=2, j=8} need_replication={j}>"
    module = import_stablehlo(_add(rule))
    op = next(iter(module.main.ops))
    assert rule_for(op).text() == rule


def test_check_rule_on_shapes() -> None:
    rule = parse_rule("([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}")
    check_rule_on(rule, [(8, 32), (32, 16)], [(8, 16)])  # Shardy does not compare dim sizes
    with pytest.raises(VerifyError, match="operand 1 - expected a ranked tensor"):
        check_rule_on(rule, [(8, 32), None], [(8, 16)])
    scalar = parse_rule("([])->([])")
    check_rule_on(scalar, [()], [()])
    with pytest.raises(VerifyError, match="number of operands mappings cannot be 0"):
        check_rule_on(parse_rule("()->([])"), [], [()])
