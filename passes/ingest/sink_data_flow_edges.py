"""`sink-data-flow-edges` (Shardy's `sdy-sink-data-flow-edges`): every explicit
`data_flow_edge` op gives its sharding back to its owner and goes.

    %1 = data_flow_edge %0#1 : tensor<8xf32, <@m, [{"x", ?}]>>   ->   (%0#1 takes the sharding;
    %2 = add %1, %1                                                  %2 = add %0#1, %0#1)

An edge without a sharding leaves its owner's as it is. A manual computation's attributes take
the shardings of its body arguments and results again afterwards.

`sink-debug-sharding-origins` and `sink-debug-propagation-edge-sharding` keep what Shardy's
debugging options wrote on the edge ops (passes/propagation/shardy_debug.py): each data-flow op
gets `sdy.{block_arg,result}_sharding_origins` and `sdy.{block_arg,result}_propagation_edges`,
one entry per edge owner whose edge op has one (a data-flow op without edge ops keeps those a
propagation wrote on it).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Module, Operation
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops.data_flow import EDGE, explicit_edge
from shardc.ir.ops.manual import body_of, sync_all
from shardc.ir.propagation_edges import parse_edges
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

DATA_FLOW_OPS = ("while", "case", "optimization_barrier", "named_computation",
                 "manual_computation")
ORIGINS, PROPAGATION_EDGES = "sdy.sharding_origins", "sdy.propagation_edges"


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


def keep_debug_info(module: Module, origins: bool, edges: bool) -> None:
    """Shardy's `saveDebugInfoDictsFromDataFlowEdges`, for every data-flow op, before its edge
    ops go."""
    for op in list(module.walk()):
        if op.name not in DATA_FLOW_OPS:
            continue
        owners = {"block_arg": [], "result": list(op.results)}
        if op.name in ("named_computation", "manual_computation"):
            body = body_of(op)
            owners["block_arg"] = list(body.args) if body is not None else []
        edge_ops = {
            kind: [e for e in (explicit_edge(v) for v in values) if e is not None]
            for kind, values in owners.items()
        }
        if not any(edge_ops.values()):
            continue  # what a propagation without edge ops wrote on the op stays
        for kind, ops in edge_ops.items():
            if origins:
                texts = [t for e in ops if (t := _text(e.attributes.get(ORIGINS)))]
                op.attributes[f"sdy.{kind}_sharding_origins"] = OpaqueAttr(_array(texts))
            if edges:
                texts = [
                    t for e in ops
                    if (t := _text(e.attributes.get(PROPAGATION_EDGES))) and parse_edges(t)
                ]
                op.attributes[f"sdy.{kind}_propagation_edges"] = OpaqueAttr(_array(texts))


def _text(value: object) -> str | None:
    return value.text if isinstance(value, OpaqueAttr) else None


def _array(texts: list[str]) -> str:
    return "[" + ", ".join(texts) + "]"


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

    sink_debug_sharding_origins: bool = False
    sink_debug_propagation_edge_sharding: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        origins = self.sink_debug_sharding_origins
        edges = self.sink_debug_propagation_edge_sharding
        if origins or edges:
            keep_debug_info(module, origins, edges)
        sink_data_flow_edges(module)


register_alias("sdy-sink-data-flow-edges", "sink-data-flow-edges")
