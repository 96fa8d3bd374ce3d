"""The back end (close-shardings, insert-reshards, lower-collectives, canonicalize) run on the
part of a program a change reached, instead of on all of it.

After a re-propagation (passes/propagation/incremental.py) only some values have a new
sharding. insert-reshards decides an op's reshards from its own values' decided shardings, and
the layout an op produces from them too; a reshard sits right in front of the op it serves. So
the collectives that can change are those on the uses of the values `U` of the ops `O` that
touch a changed value: every such use is an *edge* `(consumer op, operand)` whose operand is in
`U`. `Region` copies the ops that touch `U` (`R`: `O`, the ops making `U`, all of `U`'s users)
into a one-function module, the values they read from elsewhere as its arguments, and runs the
back end on it. The collectives it puts on `U`'s edges are the ones the whole program would get
(their consumers and producers are all in the copy); those on other edges are not counted (the
arguments stand in for producers outside the copy), and the whole program keeps its own there.

Ops whose rewrite reaches beyond themselves (regions, calls, sort, top_k, scans and reductions
with a body, custom calls) are not handled: `Region` raises `Unsupported` and the caller
recompiles instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.ops.scalar_bodies import is_body_reduce
from shardc.passes.analysis.cost import COLLECTIVES, collective_entry
from shardc.passes.manager import Pass, PassContext, PassManager
from shardc.passes.reshard.reshards.cumulative import cumulative_dim
from shardc.passes.reshard.reshards.provenance import ReshardCause

# Ops insert-reshards rewrites with more than reshards in front of them, or across functions.
_UNSUPPORTED = frozenset({
    "sort", "top_k", "while", "case", "call", "named_computation", "manual_computation",
    "optimization_barrier", "custom_call", "sharding_group", "propagation_barrier",
    "data_flow_edge", "func_data_flow_edge",
})


class Unsupported(Exception):
    """The change reached something `Region` does not handle (see the module docstring)."""


@dataclass
class Chain:
    """A collective on an edge: the op, the edge's consumer (an op of the propagated program)
    and operand, its place in front of the consumer, and its bytes per device."""

    op: Operation
    consumer: Operation
    operand: int
    seq: int
    comm: int
    ring: int


def edge_of(op: Operation, to_propagated) -> tuple[Operation, int] | None:
    """The (consumer op of the propagated program, operand) a back-end collective serves."""
    cause = op.cause
    if not isinstance(cause, ReshardCause):
        return None
    consumer, index = cause.consumers[0]
    mapped = to_propagated(consumer)
    return None if mapped is None else (mapped, index)


def chains_of(func: Function, to_propagated, is_original, skip=lambda op: False) -> list[Chain]:
    """Every collective the back end put in `func`, with its edge (see `Chain`), but those
    serving an op `skip` names."""
    out: list[Chain] = []
    seq = 0
    for op in func.body:
        if is_original(op) or op.name not in COLLECTIVES:
            continue
        edge = edge_of(op, to_propagated)
        if edge is None:
            cause = op.cause
            if isinstance(cause, ReshardCause) and skip(cause.consumer):
                continue
            raise Unsupported(f"a collective without a reshard cause ({op.name})")
        entry = collective_entry(op, "")
        out.append(Chain(op, edge[0], edge[1], seq, entry["bytes_per_device"],
                         entry["ring_bytes_per_device"]))
        seq += 1
    return out


def region_ops(changed: list[Value], extra: list[Operation]
               ) -> tuple[list[Operation], dict[int, Value]]:
    """(`R`, ids of `U`) for the changed values and the ops `extra` (see the module docstring),
    `R` unordered."""
    touched: dict[int, Operation] = {id(op): op for op in extra}
    for v in changed:
        d = v.defining_op
        if d is not None:
            touched[id(d)] = d
        for u in v.uses:
            touched[id(u.op)] = u.op
    values: dict[int, Value] = {}
    for op in touched.values():
        for x in (*op.operands, *op.results):
            values[id(x)] = x
    region = dict(touched)
    for x in values.values():
        d = x.defining_op
        if d is not None:
            region[id(d)] = d
        for u in x.uses:
            region[id(u.op)] = u.op
    for op in region.values():
        if op.name in _UNSUPPORTED or is_body_reduce(op) or cumulative_dim(op) is not None:
            raise Unsupported(f"the change reaches '{op.name}'")
        func = op.function
        if func is None or func.module is None or len(func.module.functions) > 1:
            raise Unsupported("a program of several functions")
    return list(region.values()), values


class Region:
    """The copy of `R` and its back end (see the module docstring)."""

    def __init__(self, func: Function, region: list[Operation], back_end: list[Pass]):
        module = func.module
        assert module is not None
        inside = {id(op) for op in region}
        ordered = [op for op in func.body if id(op) in inside]
        self.to_copy: dict[int, Value] = {}
        args: list[Value] = []
        for op in ordered:
            for x in op.operands:
                d = x.defining_op
                if (d is None or id(d) not in inside) and id(x) not in self.to_copy:
                    self.to_copy[id(x)] = x  # filled below
                    args.append(x)
        ret = func.return_op
        returns = ret is not None and id(ret) in inside
        outside = [r for op in ordered if op is not ret for r in op.results
                   if any(id(u.op) not in inside for u in r.uses)]
        result_types = list(func.result_types) if returns else []
        result_types += [r.type for r in outside]
        copy = Function("main", [a.type for a in args], result_types)
        self.module = Module()
        self.module.meshes = dict(module.meshes)
        self.module.add_function(copy)
        for a, c in zip(args, copy.args, strict=True):
            self.to_copy[id(a)] = c
        self.original: dict[int, Operation] = {}  # id(copied op) -> op of `func`
        for op in ordered:
            if op is ret:
                continue
            c = op.clone([self.to_copy[id(x)] for x in op.operands])
            copy.body.append(c)
            self.original[id(c)] = op
            for r, cr in zip(op.results, c.results, strict=True):
                self.to_copy[id(r)] = cr
        operands = [self.to_copy[id(x)] for x in ret.operands] if returns and ret else []
        final = Operation("return", operands + [self.to_copy[id(r)] for r in outside], [])
        copy.body.append(final)
        if returns:
            self.original[id(final)] = ret
        PassManager(back_end, verify_each=False).run(self.module, PassContext(verify_each=False))
        alive = {id(op) for op in copy.body}
        for cid, op in self.original.items():
            if cid not in alive and op.name != "sharding_constraint":
                raise Unsupported("the back end rewrote an op of the change's region")
        for op in copy.body:
            if op.name == "reshard":
                raise Unsupported("a reshard the planner keeps")
            if id(op) not in self.original and op.name not in COLLECTIVES and op is not final:
                raise Unsupported(f"the back end made a '{op.name}'")
        self.func = copy
        self.final = final

    def chains(self) -> list[Chain]:
        """The collectives on the copy's edges, but those of the values it returns only to
        stand for their users outside it."""
        return chains_of(self.func, lambda op: self.original.get(id(op)),
                         lambda op: id(op) in self.original,
                         lambda op: op is self.final and id(op) not in self.original)
