"""Rules for the per-device collectives (`spmd.*`) in the body of a `manual_computation`, where
they act on values that may still be sharded along free (non-manual) axes.

    spmd.all_reduce 8x64 -> 8x64                   ([i, j])->([i, j]) {i=8, j=64}
    spmd.all_gather {dim = 1} 8x16 -> 8x64         ([i, j])->([i, k]) {i=8, j=16, k=64}
                                                    need_replication={j, k}

All-reduce and collective-permute move whole blocks between devices that differ only along
manual axes, so every dim is pass-through (Shardy's rule for stablehlo.all_reduce inside
sdy.manual_computation). The dims an all_gather / all_slice / reduce_scatter / all_to_all
concatenates or splits get one need_replication factor per tensor instead: they must not be
split along free axes for the per-device collective to mean what it says (NOTE: Shardy gives
those ops a plain pointwise rule; shardc keeps them unsharded so the SPMD program stays exact).
"""

from __future__ import annotations

from shardc.passes.propagation.rules.builder import NULL, RuleBuilder, pointwise_rule
from shardc.passes.propagation.rules.query import RuleQuery
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

NEED = FactorKind.NEED_REPLICATION


def pointwise(q: RuleQuery) -> OpShardingRule:
    return pointwise_rule(q.operands, q.results)


def _moving(q: RuleQuery, dims: tuple[int, ...]) -> OpShardingRule:
    (operand,), (result,) = q.operands, q.results
    b = RuleBuilder(q.operands, q.results)
    for d, (n_in, n_out) in enumerate(zip(operand, result)):
        if d in dims:
            b.add_factor((d,), (NULL,), n_in, NEED)
            b.add_factor((NULL,), (d,), n_out, NEED)
        else:
            b.add_factor((d,), (d,), n_out)
    return b.build()


def one_dim(q: RuleQuery) -> OpShardingRule:
    """all_gather, all_slice, reduce_scatter: dim `dim` is gathered or split."""
    return _moving(q, (q.attr("dim"),))


def all_to_all(q: RuleQuery) -> OpShardingRule:
    return _moving(q, (q.attr("split_dim"), q.attr("concat_dim")))
