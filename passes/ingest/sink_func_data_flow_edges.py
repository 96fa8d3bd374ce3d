"""`sink-func-data-flow-edges` (Shardy's `sdy-sink-func-data-flow-edges`): every
`func_data_flow_edge` op gives its sharding to its operand (a function argument or a call
result) and goes; the inverse of `add-func-data-flow-edges`.

    %0 = sdy.func_data_flow_edge %arg0 {sdy.sharding = <@m, [{"x", ?}]>}
    %1 = stablehlo.negate %0
 -> %1 = stablehlo.negate %arg0          (%arg0 takes <@m, [{"x", ?}]>)

An edge without a sharding leaves a sharded operand fully open on its mesh (unlike
`sink-data-flow-edges`, which leaves the owner's sharding as it was).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.ops.data_flow import FUNC_EDGE
from shardc.passes.ingest.sink_data_flow_edges import sink_edge
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def sink_func_data_flow_edges(module: Module) -> None:
    for edge in [op for op in module.walk() if op.name == FUNC_EDGE]:
        sink_edge(edge, open_unsharded=True)


@register_pass("sink-func-data-flow-edges")
@dataclass(frozen=True)
class SinkFuncDataFlowEdges(Pass):
    """Move every func_data_flow_edge's sharding onto its operand and drop the edge op."""

    def run(self, module: Module, ctx: PassContext) -> None:
        sink_func_data_flow_edges(module)


register_alias("sdy-sink-func-data-flow-edges", "sink-func-data-flow-edges")
