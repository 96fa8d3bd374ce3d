"""Writing the choice back as ordinary shardings, so the normal pipeline runs after it.

    sources = write_choice(graph, chosen)     # chosen[node index] -> its Strategy

- every argument gets its chosen layout, every op result the layout its strategy makes (with
  partial sums reduced: `insert-reshards` makes the op produce them unreduced and reduces them
  where a consumer needs them, as the cost model assumed);
- where a consumer needs a value in another layout than it is written in, a
  `sharding_constraint` to that layout goes right before the first such consumer (one per value
  and layout, shared by the later consumers): `insert-reshards` turns it into the reshard the
  cost model priced, and the consumer then finds every operand as its strategy needs it, so it
  computes exactly that strategy;
- a function result declared with open dims gets the closed layout the cost model assumed;
- constant expressions are left unannotated: propagation gives them their consumers' layouts.

Every sharding is closed, so propagation adds nothing to them. The returned map names, per value
written, the axes auto-shard chose (the user's own axes are not in it): propagation's origin
tracker labels those `auto-shard` (`--explain`).
"""

from __future__ import annotations

from shardc.ir.builder import Builder
from shardc.ir.core import Module, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.propagation.autoshard.candidates import Strategy, reduced
from shardc.passes.propagation.autoshard.graph import RESHARDING, CostGraph, Node, NodeKind


def _chosen_axes(user: NamedMapping | None, layout: NamedMapping) -> frozenset[str]:
    mine = {str(a) for a in layout.used_axes()}
    if user is not None:
        mine -= {str(a) for a in user.used_axes()}
    return frozenset(mine)


def write_choice(
    module: Module, graph: CostGraph, chosen: list[Strategy]
) -> dict[Value, frozenset[str]]:
    """Write `chosen` (one strategy per node) into `module`'s copy of the graph's function: the
    module the graph was built from, or a clone of it (values are found by position)."""
    func = module.functions[graph.func.name]
    body = list(func.body)

    def values_of(node: Node) -> list[Value]:
        if node.op is None:
            return [func.args[node.values[0].index]]
        return list(body[node.position].results)

    sources: dict[Value, frozenset[str]] = {}
    written: dict[Value, NamedMapping] = {}
    for node in graph.nodes:
        s = chosen[node.index]
        if node.kind is NodeKind.FIXED and node.op is not None and node.op.name == (
            "manual_computation"
        ):
            continue
        for k, v in enumerate(values_of(node)):
            layout = reduced(s.results[k])
            v.set_mapping(layout)
            written[v] = layout
            if node.kind is not NodeKind.FIXED:
                sources[v] = _chosen_axes(node.user[k], layout)
    for ret, arg in graph.carries:  # carried state: back in its argument's layout
        t = func.result_types[ret.index]
        layout = reduced(chosen[arg.index].results[0])
        func.result_types[ret.index] = DistributedTensorType(t.shape, t.dtype, layout)
    for ret in graph.returns:  # open declared dims: fixed to what the cost model assumed
        if ret.declared is not None:
            t = func.result_types[ret.index]
            target = ret.target(chosen[ret.producer.index].results[ret.result])
            func.result_types[ret.index] = DistributedTensorType(t.shape, t.dtype, target)
    builder = Builder(module)
    constraints: dict[tuple[Value, NamedMapping], Value] = {}
    for u in graph.uses:
        c = u.consumer
        if c.kind is NodeKind.FIXED or (c.op is not None and c.op.name in RESHARDING):
            continue
        v = values_of(u.producer)[u.result]
        have = written.get(v, v.mapping)
        strategy = chosen[c.index]
        consumer = body[c.position]
        for i in u.operands:
            target = strategy.operands[i]
            if have is not None and same_layout(have, target):
                continue
            key = (v, target)
            pinned = constraints.get(key)
            if pinned is None:
                with builder.insertion_point(before=consumer):
                    pinned = builder.sharding_constraint(v, target)
                constraints[key] = pinned
                sources[pinned] = _chosen_axes(None, target)
            consumer.set_operand(i, pinned)
    return sources
