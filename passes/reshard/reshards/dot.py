"""The one change Shardy's `sdy-insert-explicit-reshards` makes without its full version: a dot
whose result conflicts with its operands in one dim, sharded there on the contraction's axes.

    %r = dot_general %a [{}, {"x"}], %b [{"x"}, {"y"}] : [{}, {"x"}]    # k on "x", j on "y"
  becomes
    %d = dot_general %a, %b : [{}, {"y"}]         # the operands' sharding: all-reduce over "x"
    %r = reshard %d [{}, {"x"}]                   # then a reshard of the (smaller) result

Conditions (Shardy's `processDot`): the operands agree on every factor they share; exactly one
result factor differs from the operand that has it, that operand's axes are not empty and the
result is not larger than it; and the result's axes for that factor are the reduction axes.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives.sub_axes import overlaps
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.reshard.reshards.common_axes import factor_axes
from shardc.passes.reshard.reshards.factor_shardings import tensor_sharding
from shardc.passes.reshard.reshards.insertion import Cursor


def reshard_dot_result(
    op: Operation, projection: ShardingProjection, outs: list[NamedMapping | None],
    rule: OpShardingRule, mesh: DeviceMesh,
) -> None:
    if not outs:
        return
    lhs, rhs = projection.operands[0], projection.operands[1]
    result = projection.results[0]
    lhs_size, rhs_size = (v.type.num_elements for v in op.operands[:2])
    result_size = op.results[0].type.num_elements
    conflicting: int | None = None
    conflicting_axes: tuple[AxisRef, ...] = ()
    reduction: list[AxisRef] = []
    seen: list[AxisRef] = []
    for f in range(rule.num_factors):
        la, ra = factor_axes(lhs, f), factor_axes(rhs, f)
        if la is not None and ra is not None:
            axes, largest = la, max(lhs_size, rhs_size)
            if la != ra:
                return
            if rule.is_reduction(f):
                reduction.extend(la)
                continue
        else:
            axes = la if la is not None else (ra or ())
            largest = lhs_size if la is not None else rhs_size
            for a in axes:
                if any(overlaps(a, b) for b in seen):
                    return
                seen.append(a)
        if factor_axes(result, f) != axes:
            if not axes or conflicting is not None or result_size > largest:
                return
            conflicting, conflicting_axes = f, axes
    if conflicting is None:
        return
    fs = result.factors[conflicting]
    if not fs.axes or list(fs.axes) != reduction:
        return
    fs.axes = conflicting_axes
    r = op.results[0]
    r.set_mapping(tensor_sharding(result, rule.results[0], rule, mesh, outs[0]))
    v = Cursor.after(op).create("reshard", r, outs[0], {}, op)
    new_op = v.defining_op
    r.replace_uses_if(v, lambda use: use.op is not new_op)
