"""A rule written on an op (`sdy.sharding_rule = #sdy.op_sharding_rule<...>`) checked against
the op's operand and result types, as Shardy's verifier checks it:

    check_rule_on(rule, [(2, 4), (2, 4)], [(2, 4)])    # raises VerifyError, or returns None

- one mapping per operand and per result, and at least one of each;
- each mapping has its tensor's rank (the tensor must have a static shape);
- a dim that maps to several factors has none of size 1;
- every factor is used by some operand or result; a reduction factor is on no result.

What the rule alone must satisfy (factor indices in range, a factor at most once per tensor, one
kind per factor) is checked when it is built (rule.py) or parsed (rule_parser.py). Shardy does
not check that a dim's size is the product of its factors' sizes, and neither does this.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.diagnostics import VerifyError
from shardc.passes.propagation.rules.rule import (
    FactorKind,
    OpShardingRule,
    TensorMapping,
    factor_symbol,
)

Shape = tuple[int, ...] | None  # None: not a tensor with a static shape


def _check_mappings(rule: OpShardingRule, shapes: Sequence[Shape],
                    mappings: Sequence[TensorMapping], what: str, used: set[int]) -> None:
    if len(shapes) != len(mappings):
        raise VerifyError(f"number of {what}s and mappings must match: "
                          f"{len(shapes)} != {len(mappings)}")
    if not mappings:
        raise VerifyError(f"number of {what}s mappings cannot be 0. Op sharding rules can only "
                          "be defined on operations with at least one operand and result.")
    for t, (shape, mapping) in enumerate(zip(shapes, mappings)):
        where = what if len(shapes) == 1 else f"{what} {t}"
        if shape is None:
            raise VerifyError(f"{where} - expected a ranked tensor with a static shape")
        if len(mapping) != len(shape):
            raise VerifyError(f"{where} - mapping rank must match: {len(mapping)} != {len(shape)}")
        for dim in mapping:
            if len(dim) > 1 and any(rule.factor_sizes[f] == 1 for f in dim):
                raise VerifyError(f"{where} - dim mapping can't have a factor of size 1 if there "
                                  "are multiple factors")
            used.update(dim)


def check_rule_on(rule: OpShardingRule, operand_shapes: Sequence[Shape],
                  result_shapes: Sequence[Shape]) -> None:
    """Raise a `VerifyError` (Shardy's wording) when `rule` does not fit these tensors."""
    in_operands: set[int] = set()
    in_results: set[int] = set()
    _check_mappings(rule, operand_shapes, rule.operands, "operand", in_operands)
    _check_mappings(rule, result_shapes, rule.results, "result", in_results)
    for f, size in enumerate(rule.factor_sizes):
        if f not in in_operands and f not in in_results:
            raise VerifyError(f"has factor {factor_symbol(f)}={size} that isn't used in operand "
                              "and result mappings")
        if rule.kinds[f] is FactorKind.REDUCTION and f in in_results:
            raise VerifyError("reduction factor cannot be in result mappings")
