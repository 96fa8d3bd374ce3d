"""The data-flow edges of a `manual_computation` (Shardy's `sdy.data_flow_edge`s of an
sdy.manual_computation, and its `transformTargetSharding`).

Each operand i and body argument i form one edge, each body result j and result j another. An
edge is an identity rule between its source and its target, where the target is seen from the
source's side:

- operand i -> body argument i: the argument's sharding plus the manual axes of
  `in_shardings[i]` (the global view), over the argument's (local) shape. So the operand may
  receive the in_sharding (and give its free axes to an open one), and the argument then gets
  the result without the manual axes: propagation inside the body never sees a manual axis.
- body result j -> result j: the result's sharding (= `out_shardings[j]`) without its manual
  axes, over the result's (global) shape; the result gets the manual axes back.

Visiting order follows Shardy's walk: the argument edges where the op stands, then the body,
then the result edges.
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import attr
from shardc.ir.ops.data_flow import explicit_edge
from shardc.ir.ops.manual import body_of, body_view, manual_names, with_free_axes


def holder(owner: Value) -> Value:
    """The value holding the sharding of `owner`'s edge targets."""
    edge = explicit_edge(owner)
    return edge.results[0] if edge is not None else owner


class ManualEdge:
    """A worklist item of the driver: edge `index` of `op` (`is_result`: body result -> op
    result, else operand -> body argument). Not an op: it has no results and is never dead."""

    __slots__ = ("op", "index", "is_result", "queued", "order")
    name = "manual_computation edge"
    results: tuple = ()

    def __init__(self, op: Operation, index: int, is_result: bool):
        self.op = op
        self.index = index
        self.is_result = is_result
        self.queued = False  # on the driver's worklist
        self.order = -1  # its place in the driver's walk (-1: not in it)

    def endpoints(self) -> tuple[Value, Value] | None:
        """(source, target), or None when the body is missing. The target is the edge's owner
        (result j, body argument i), or its explicit `data_flow_edge` op's result if it has one
        (sdy-add-data-flow-edges): that op holds the sharding then."""
        body = body_of(self.op)
        if body is None:
            return None
        if self.is_result:
            ret = body.return_op
            if ret is None:
                return None
            return ret.operand(self.index), holder(self.op.results[self.index])
        return self.op.operand(self.index), holder(body.args[self.index])

    def target_view(self, target: Value) -> NamedMapping | None:
        """The target's sharding as the source sees it (`kBeforeEdgePropagation`)."""
        manual = manual_names(self.op)
        if self.is_result:
            return None if target.mapping is None else body_view(target.mapping, manual)
        outer = attr(self.op, "in_shardings")[self.index]
        return with_free_axes(outer, target.mapping, manual)

    def target_value(self, new: NamedMapping, target: Value) -> NamedMapping:
        """The target's sharding from its view (`kAfterEdgePropagation`)."""
        manual = manual_names(self.op)
        if self.is_result:
            outer = target.mapping or attr(self.op, "out_shardings")[self.index]
            return with_free_axes(outer, new, manual)
        return body_view(new, manual)

    def __repr__(self) -> str:
        kind = "result" if self.is_result else "operand"
        return f"<ManualEdge {kind} {self.index}>"


class ManualEdges:
    """The edges of every manual_computation of a module, by op."""

    def __init__(self, module: Module):
        self.args: dict[int, list[ManualEdge]] = {}
        self.results: dict[int, list[ManualEdge]] = {}
        self.bodies: dict[str, list[Operation]] = {}
        # id(explicit data_flow_edge result) -> the edge it holds the target sharding of.
        self.explicit: dict[int, ManualEdge] = {}
        for func in module.functions.values():
            for op in func.body:
                if op.name != "manual_computation":
                    continue
                self.args[id(op)] = [ManualEdge(op, i, False) for i in range(op.num_operands)]
                self.results[id(op)] = [ManualEdge(op, j, True) for j in range(len(op.results))]
                self.bodies.setdefault(attr(op, "body").name, []).append(op)
                body = body_of(op)
                owners = [*(body.args if body is not None else ()), *op.results]
                for edge, owner in zip([*self.args[id(op)], *self.results[id(op)]], owners):
                    explicit = explicit_edge(owner)
                    if explicit is not None:
                        self.explicit[id(explicit.results[0])] = edge

    def is_body(self, func: Function) -> bool:
        return func.name in self.bodies

    def walk(self, op: Operation, visit_body: Callable[[Function], None], out: list) -> None:
        """Append `op`'s argument edges, its body (through `visit_body`), its result edges."""
        out.extend(self.args.get(id(op), ()))
        body = body_of(op)
        if body is not None:
            visit_body(body)
        out.extend(self.results.get(id(op), ()))

    def of_operand(self, op: Operation, index: int) -> ManualEdge:
        return self.args[id(op)][index]

    def of_result(self, op: Operation, index: int) -> ManualEdge:
        return self.results[id(op)][index]
