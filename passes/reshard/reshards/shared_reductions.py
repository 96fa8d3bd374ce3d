"""One reduction for an unreduced value that several consumers need in different layouts.

insert-reshards lets each consumer reshard an unreduced value straight to the layout it wants
(so the planner may pick a reduce_scatter). With two consumers wanting two layouts, that reduces
the value twice: a gradient used by the forward combine and by the backward pass, say

    %y = dot_general ... : tensor<8x8x4x32xf32, <@m, [{"ep"}, {}, {}, {}], unreduced={"tp"}>>
    %a = reshard %y : <@m, [{}, {"ep"}, {}, {}]>      # all_to_all + all_reduce
    %b = reshard %y : <@m, [{"ep"}, {}, {}, {}]>      # all_reduce again

`share_reductions` prices both ways with the reshard planner (ring model, then bytes) and, when
one shared reduced layout is cheaper, reshards the value there once and the consumers from it:

    %r = reshard %y : <@m, [{"ep"}, {}, {}, {}]>      # all_reduce, once
    %a = reshard %r : <@m, [{}, {"ep"}, {}, {}]>      # all_to_all

The shared layout is the value's own without its unreduced axes, or one of the consumers'.
"""

from __future__ import annotations

from shardc.ir.builder import Builder
from shardc.ir.core import Function, Operation, Value
from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import NamedMapping
from shardc.passes.analysis.collectives.planner import plan_reshard
from shardc.passes.analysis.collectives.steps import same_layout

Cost = tuple[int, int]


def _cost(v: Value, src: NamedMapping, dst: NamedMapping) -> Cost:
    if same_layout(src, dst):
        return (0, 0)
    shape, dtype = v.type.shape, v.type.dtype
    return (
        plan_reshard(shape, dtype, src, dst, cost="ring").cost,
        plan_reshard(shape, dtype, src, dst, cost="bytes").cost,
    )


def _total(costs: list[Cost]) -> Cost:
    return (sum(c[0] for c in costs), sum(c[1] for c in costs))


def _distinct(layouts: list[NamedMapping]) -> list[NamedMapping]:
    out: list[NamedMapping] = []
    for m in layouts:
        if not any(same_layout(m, o) for o in out):
            out.append(m)
    return out


def _best_shared(v: Value, src: NamedMapping, targets: list[NamedMapping]) -> NamedMapping | None:
    """The shared reduced layout when it beats resharding per consumer, else None."""
    try:
        separate = _total([_cost(v, src, t) for t in targets])
        best: tuple[Cost, NamedMapping] | None = None
        for r in _distinct([src.replace(unreduced=()), *targets]):
            total = _total([_cost(v, src, r), *(_cost(v, r, t) for t in targets)])
            if best is None or total < best[0]:
                best = (total, r)
    except ShardingError:
        return None
    assert best is not None
    return best[1] if best[0] < separate else None


def share_reductions(func: Function, builder: Builder) -> int:
    """Route the consumers of each unreduced value that several reshards reduce into different
    layouts through one shared reshard when that is cheaper; returns how many were added."""
    order = {id(op): i for i, op in enumerate(func.body)}
    values: list[Value] = list(func.args) + [r for op in func.body for r in op.results]
    added = 0
    for v in values:
        src = v.mapping
        if src is None or not src.unreduced:
            continue
        users = [u for u in v.users if u.name == "reshard" and u.operand(0) is v]
        if any(u.result.mapping is None or u.result.mapping.unreduced for u in users):
            continue
        targets = _distinct([u.result.mapping for u in users])
        if len(targets) < 2:
            continue
        shared = _best_shared(v, src, targets)
        if shared is None:
            continue
        first: Operation = min(users, key=lambda u: order[id(u)])
        with builder.insertion_point(before=first):
            r = builder.reshard(v, shared)
        added += 1
        for u in users:
            if same_layout(u.result.mapping, shared):
                u.result.replace_all_uses_with(r)
                u.erase()
            else:
                u.set_operand(0, r)
    return added
