"""Rules for StableHLO's collectives in a global program (`xla.*`, ir/ops/replica_collectives.py),
as Shardy's registry builds them: element-wise, except the gathered, scattered, split and
concatenated dims, which need replication on both sides (as separate operand and result
factors: their sizes differ).

all_gather dim 1, 2x2 -> 2x4      ([i, j], [i, j])->([i, k], [i, k]) {i=2, j=2, k=4}
                                      need_replication={j, k}
"""

from __future__ import annotations

from shardc.passes.propagation.rules.builder import RuleBuilder
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

NEED = FactorKind.NEED_REPLICATION


def _changing_dims(q: RuleQuery, dims: tuple[int, ...]) -> OpShardingRule:
    operand, result = q.operands[0], q.results[0]
    b = RuleBuilder(q.operands, q.results)
    b.add_pointwise_if(operand, lambda d: d not in dims)
    for d in dict.fromkeys(dims):
        b.add_factor_same_for_all_operands(d, operand[d], NEED)
        b.add_factor_same_for_all_results(d, result[d], NEED)
    return b.build()


def all_gather(q: RuleQuery) -> OpShardingRule:
    return _changing_dims(q, (q.attr("all_gather_dim"),))


def reduce_scatter(q: RuleQuery) -> OpShardingRule:
    return _changing_dims(q, (q.attr("scatter_dimension"),))


def all_to_all(q: RuleQuery) -> OpShardingRule:
    return _changing_dims(q, (q.attr("split_dimension"), q.attr("concat_dimension")))
