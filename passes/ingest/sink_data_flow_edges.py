"""`sink-data-flow-edges` (Shardy's `sdy-sink-data-flow-edges`): every explicit
`data_flow_edge` op gives its sharding back to its owner and goes.

    %1 = data_flow_edge %0#1 : tensor<8xf32, <@m, [{"x", ?}]>>   ->   (%0#1 takes the sharding;
    %2 = add %1, %1                                                  %2 = add %0#1, %0#1)

An edge without a sharding leaves its owner's as it is. A manual computation's attributes take
the shardings of its body arguments and results again afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.data_flow import EDGE
from shardc.ir.ops.manual import sync_all
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def sink_edge(edge: Operation, open_unsharded: bool = False) -> None:
    """The edge's sharding onto its owner, and the edge gone. With `open_unsharded`, an edge
    without a sharding leaves its owner fully open on the owner's mesh (Shardy's
    `getFullyOpenLike`), not as it was."""
    owner, result = edge.operand(0), edge.results[0]
    if result.mapping is not None:
        owner.set_mapping(result.mapping)
    elif open_unsharded and owner.mapping is not None:
        owner.set_mapping(NamedMapping.fully_open(owner.mapping.mesh, owner.type.rank))
    result.replace_all_uses_with(owner)
    edge.erase()


def sink_data_flow_edges(module: Module) -> None:
    edges = [op for op in module.walk() if op.name == EDGE]
    for edge in edges:
        sink_edge(edge)
    if edges:
        sync_all(module)


@register_pass("sink-data-flow-edges")
@dataclass(frozen=True)
class SinkDataFlowEdges(Pass):
    """Move every explicit data-flow edge's sharding onto its owner and drop the edge op."""

    def run(self, module: Module, ctx: PassContext) -> None:
        sink_data_flow_edges(module)


register_alias("sdy-sink-data-flow-edges", "sink-data-flow-edges")
