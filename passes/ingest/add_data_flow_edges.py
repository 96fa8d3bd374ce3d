"""`add-data-flow-edges` (Shardy's `sdy-add-data-flow-edges`): an explicit `data_flow_edge` op
for every edge owner of every data-flow op, holding the owner's sharding.

    %0:2 = while %i, %x {...}         ->   %0:2 = while %i, %x {...}
    %1 = add %0#1, %0#1                    %1 = data_flow_edge %0#0 : tensor<i32>
                                           %2 = data_flow_edge %0#1 : tensor<8xf32, <...>>
                                           %3 = add %2, %2

Owners: the results of `while`, `case`, `optimization_barrier`, `named_computation` and
`manual_computation`, and the body arguments of the last two. A result's edges follow its op, a
body argument's edges open the body, in order; every other use of the owner goes through the
edge. Propagation then keeps the targets' sharding on the edge op and leaves the owner's as it
was, until `sink-data-flow-edges`. (shardc's own pipeline does not need explicit edges: its
driver visits every edge anyway.)
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.data_flow import EDGE
from shardc.ir.types import DistributedTensorType, TensorType
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

RESULT_OWNERS = ("while", "case", "optimization_barrier", "named_computation",
                 "manual_computation")
BODY_OWNERS = ("named_computation", "manual_computation")


def _edge_for(owner: Value, kind: str) -> Operation | None:
    """An edge op of `kind` (`data_flow_edge`, `func_data_flow_edge`) holding `owner`'s
    sharding; None when the owner has one already or is not a tensor (a token)."""
    t = owner.type
    if any(u.op.name == kind for u in owner.uses) or not isinstance(t, TensorType) or (
        t.dtype == "token"
    ):
        return None
    return Operation(
        kind, [owner], [DistributedTensorType(t.shape, t.dtype, owner.mapping)],
        loc=owner.defining_op.loc if owner.defining_op is not None else None,
    )


def _redirect(owner: Value, edge: Operation) -> None:
    owner.replace_uses_if(edge.results[0], lambda use: use.op is not edge)


def add_result_edges(op: Operation, kind: str = EDGE) -> None:
    """An edge after `op` for each of its results, in order."""
    anchor = op
    assert op.parent is not None
    for r in op.results:
        edge = _edge_for(r, kind)
        if edge is None:
            continue
        op.parent.insert_after(anchor, edge)
        anchor = edge
        _redirect(r, edge)


def add_body_edges(body: Function, kind: str = EDGE) -> None:
    """An edge for each argument of `body`, in order, before its first op."""
    first = body.body.first
    for a in body.args:
        edge = _edge_for(a, kind)
        if edge is None:
            continue
        if first is None:
            body.body.append(edge)
        else:
            body.body.insert_before(first, edge)
        _redirect(a, edge)


def add_named_computation_edges(module: Module, op: Operation) -> None:
    body = module.lookup_function(op.attributes["body"].name)
    if body is not None:
        add_body_edges(body)
    add_result_edges(op)


def add_data_flow_edges(module: Module) -> None:
    for func in list(module.functions.values()):
        for op in list(func.body):
            if op.name in BODY_OWNERS:
                body = module.lookup_function(op.attributes["body"].name)
                if body is not None:
                    add_body_edges(body)
            if op.name in RESULT_OWNERS:
                add_result_edges(op)


@register_pass("add-data-flow-edges")
@dataclass(frozen=True)
class AddDataFlowEdges(Pass):
    """Make every data-flow edge an explicit `data_flow_edge` op."""

    def run(self, module: Module, ctx: PassContext) -> None:
        add_data_flow_edges(module)


register_alias("sdy-add-data-flow-edges", "add-data-flow-edges")
