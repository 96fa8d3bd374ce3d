"""Rules for element-wise and identity-like ops (Shardy's `buildPointwise` family).

add 8x16, 8x16 -> 8x16       ([i, j], [i, j])->([i, j]) {i=8, j=16}
select i1, 4x8, 4x8 -> 4x8   ([], [i, j], [i, j])->([i, j]) {i=4, j=8}
clamp f32, 4x8, f32 -> 4x8   ([], [i, j], [])->([i, j]) {i=4, j=8}
add f32, f32 -> f32          ([], [])->([])
"""

from __future__ import annotations

from shardc.passes.propagation.rules.builder import RuleBuilder, pointwise_rule
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import OpShardingRule


def pointwise(q: RuleQuery) -> OpShardingRule:
    """Every dim of every tensor maps to the factor of that dim of the first result. Used for
    unary/binary ops, compare, convert, is_finite and sharding_constraint (as in Shardy), and for
    reshard / propagation_barrier (identity on data; see registry.py)."""
    return pointwise_rule(q.operands, q.results)


def select(q: RuleQuery) -> OpShardingRule:
    """Pointwise over the result shape; a scalar predicate maps to `[]`."""
    return RuleBuilder(q.operands, q.results).add_pointwise(q.results[0]).build()


def clamp(q: RuleQuery) -> OpShardingRule:
    """Pointwise over the operand `x` (operand 1); scalar `min`/`max` map to `[]`."""
    return RuleBuilder(q.operands, q.results).add_pointwise(q.operands[1]).build()
