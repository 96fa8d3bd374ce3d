"""Data-flow edges of `while` and `case` (ops whose regions are outlined into functions).

Shardy keeps the regions inline and treats these ops as data-flow ops: result k of a `while` is
the owner of one edge whose *targets* (result k, cond argument k, body argument k) hold one
sharding and whose *sources* are operand k and body return operand k; result k of a `case` has
the return operand k of every branch as sources. A value a region reads from the enclosing
scope (a capture) is simply the same value inside and outside.

shardc outlines the regions, so:

- the targets of an edge are *linked*: setting one sets all (`Regions.linked`);
- a captured operand and the function arguments it feeds are linked too, and they count as one
  value when uses are counted (`live_uses`);
- each edge is a worklist item (`RegionEdge`), visited after the region functions' ops, as
  Shardy visits its `sdy.data_flow_edge` ops after the region; propagating through it is an
  identity rule from the sources to the targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import VerifyError
from shardc.ir.ops.control import REGION_ATTRS, branch_symbols, num_carried
from shardc.ir.ops.registry import attr

REGION_OPS = tuple(REGION_ATTRS)


class RegionEdge:
    """Shardy's `sdy.data_flow_edge` of result `index` of a `while` or `case` op (identity
    hashed: a worklist item)."""

    __slots__ = ("op", "index")

    def __init__(self, op: Operation, index: int):
        self.op = op
        self.index = index

    @property
    def target(self) -> Value:
        """The edge owner: result `index` (its linked targets share its sharding)."""
        return self.op.results[self.index]

    def sources(self, module: Module) -> list[Value]:
        """while: operand k and body return operand k; case: return operand k of every branch."""
        k = self.index
        if self.op.name == "while":
            out = [self.op.operand(k)]
            body = module.lookup_function(attr(self.op, "body").name)
            if body is not None and body.return_op is not None:
                out.append(body.return_op.operand(k))
            return out
        out = []
        for sym in branch_symbols(self.op):
            branch = module.lookup_function(sym.name)
            if branch is not None and branch.return_op is not None:
                out.append(branch.return_op.operand(k))
        return out

    def __repr__(self) -> str:
        return f"<RegionEdge {self.op.name} result {self.index}>"


def capture_args(module: Module | None, user: Operation, index: int) -> list[Value] | None:
    """The region-function arguments operand `index` of `user` feeds when it is a capture
    (None: not a capture, e.g. a carried operand or the case index)."""
    if module is None:
        return None
    if user.name == "while":
        n = num_carried(user)
        if index < n:
            return None
        out = []
        for key in ("cond", "body"):
            f = module.lookup_function(attr(user, key).name)
            if f is not None and index < len(f.args):
                out.append(f.args[index])
        return out
    if user.name == "case":
        if index == 0:
            return None
        out = []
        for sym in branch_symbols(user):
            f = module.lookup_function(sym.name)
            if f is not None and index - 1 < len(f.args):
                out.append(f.args[index - 1])
        return out
    return None


def _module_of(v: Value) -> Module | None:
    owner = v.owner
    func = owner if isinstance(owner, Function) else owner.function
    return func.module if func is not None else None


def live_uses(v: Value, erased: set[int] | frozenset[int]) -> int:
    """Uses of `v` by ops not in `erased`, a captured value's uses inside the regions included
    (it is one value in Shardy) and its capture operands excluded."""
    module = None
    n = 0
    for u in v.uses:
        if id(u.op) in erased:
            continue
        if u.op.name in REGION_OPS:
            module = module or _module_of(v)
            args = capture_args(module, u.op, u.index)
            if args is not None:
                n += sum(live_uses(a, erased) for a in args)
                continue
        n += 1
    return n


@dataclass
class Regions:
    """The region structure of a module, built once per propagation."""

    # id(value) -> the values that share its sharding (itself included), when it has partners.
    links: dict[int, list[Value]] = field(default_factory=dict)
    # id(while/case op) -> its edges, one per result.
    edges: dict[int, list[RegionEdge]] = field(default_factory=dict)
    # id(value) -> the edge whose target it is (results, cond and body arguments k).
    edge_of_target: dict[int, RegionEdge] = field(default_factory=dict)
    # body/branch function name -> the edges its return operands feed (operand k: edge k).
    returns: dict[str, list[RegionEdge]] = field(default_factory=dict)
    # Names of the functions some op runs as a region.
    functions: set[str] = field(default_factory=set)

    def linked(self, v: Value) -> list[Value]:
        return self.links.get(id(v)) or [v]

    def edge_for_use(self, user: Operation, index: int) -> RegionEdge | None:
        """The edge a use of a value by `user` feeds: while carried operand k -> edge k."""
        if user.name == "while" and index < num_carried(user):
            return self.edges[id(user)][index]
        return None

    def return_edges(self, func: Function, index: int) -> list[RegionEdge]:
        return [e for e in self.returns.get(func.name, ()) if e.index == index]

    def _link(self, values: list[Value]) -> None:
        merged: dict[int, Value] = {}
        for v in values:
            for m in self.linked(v):
                merged[id(m)] = m
        group = list(merged.values())
        for m in group:
            self.links[id(m)] = group


def build_regions(module: Module) -> Regions:
    """Edges and links of every `while`/`case` of `module`; a linked set starts with the one
    sharding any member has (different ones are an error at the op)."""
    out = Regions()
    for op in module.walk():
        if op.name not in REGION_OPS:
            continue
        if op.name == "while":
            cond = module.lookup_function(attr(op, "cond").name)
            body = module.lookup_function(attr(op, "body").name)
            funcs = [f for f in (cond, body) if f is not None]
            edges = [RegionEdge(op, k) for k in range(num_carried(op))]
            for k, e in enumerate(edges):
                out._link([op.results[k], *(f.args[k] for f in funcs)])
                for v in out.linked(op.results[k]):
                    out.edge_of_target[id(v)] = e
            for j in range(num_carried(op), op.num_operands):
                out._link([op.operand(j), *(f.args[j] for f in funcs)])
            if body is not None:
                out.returns.setdefault(body.name, []).extend(edges)
        else:
            funcs = [
                f for f in (module.lookup_function(s.name) for s in branch_symbols(op)) if f
            ]
            edges = [RegionEdge(op, k) for k in range(len(op.results))]
            for k, e in enumerate(edges):
                out.edge_of_target[id(op.results[k])] = e
            for j in range(1, op.num_operands):
                out._link([op.operand(j), *(f.args[j - 1] for f in funcs)])
            for f in funcs:
                out.returns.setdefault(f.name, []).extend(edges)
        out.edges[id(op)] = edges
        out.functions.update(f.name for f in funcs)
        _unify(op, out)
    return out


def _unify(op: Operation, regions: Regions) -> None:
    values = [*op.operands, *op.results]
    for v in values:
        group = regions.linked(v)
        shardings = {m.mapping for m in group if m.mapping is not None}
        if len(shardings) > 1:
            texts = ", ".join(sorted(str(s) for s in shardings))
            raise VerifyError(
                f"'{op.name}' op: {v.label} and the region arguments it stands for have different "
                f"shardings ({texts}); a loop-carried or captured value has one sharding",
                op.loc,
            )
        if shardings:
            (mapping,) = shardings
            for m in group:
                m.set_mapping(mapping)
