"""Rules for dot_general and reduce (Shardy's op_sharding_rule_registry.cc, same factor order).

dot_general 8x32, 32x16 {contracting [1] x [0]}
    ([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}
reduce 2x64x13 {dimensions=[1]}
    ([i, j, k], [])->([i, k]) {i=2, j=64, k=13} reduction={j}
"""

from __future__ import annotations

from shardc.passes.propagation.rules.builder import NULL, RuleBuilder
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule


def dot_general(q: RuleQuery) -> OpShardingRule:
    """Factors in order: batching dims, lhs non-contracting, rhs non-contracting (these three in
    result dim order), then contracting dims as reduction factors."""
    lhs, rhs = q.operands
    lhs_batch, rhs_batch = q.attr("lhs_batching_dims"), q.attr("rhs_batching_dims")
    lhs_contract, rhs_contract = q.attr("lhs_contracting_dims"), q.attr("rhs_contracting_dims")
    b = RuleBuilder(q.operands, q.results)
    out = 0
    for lhs_dim, rhs_dim in zip(lhs_batch, rhs_batch):
        b.add_factor((lhs_dim, rhs_dim), (out,), lhs[lhs_dim])
        out += 1
    for d, size in enumerate(lhs):
        if d not in lhs_contract and d not in lhs_batch:
            b.add_factor((d, NULL), (out,), size)
            out += 1
    for d, size in enumerate(rhs):
        if d not in rhs_contract and d not in rhs_batch:
            b.add_factor((NULL, d), (out,), size)
            out += 1
    for lhs_dim, rhs_dim in zip(lhs_contract, rhs_contract):
        b.add_factor((lhs_dim, rhs_dim), (NULL,), lhs[lhs_dim], FactorKind.REDUCTION)
    return b.build()


def reduce(q: RuleQuery) -> OpShardingRule:
    """One factor per input dim, in input order; reduced dims are reduction factors (only the
    inputs have them); the init values map to `[]`. Variadic (`body`) reduces map the factor to
    every input and every result: `([i, j], [i, j], [], [])->([j], [j]) ... reduction={i}`."""
    dims = q.attr("dimensions")
    n = len(q.results)
    b = RuleBuilder(q.operands, q.results)
    out = 0
    for d, size in enumerate(q.operands[0]):
        if d in dims:
            b.add_factor((d,) * n + (NULL,) * n, (NULL,) * n, size, FactorKind.REDUCTION)
        else:
            b.add_factor((d,) * n + (NULL,) * n, (out,) * n, size)
            out += 1
    return b.build()
