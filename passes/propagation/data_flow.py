"""Data-flow edges: `while`, `case`, `optimization_barrier` and `named_computation`.

Shardy treats these as data-flow ops (`ShardableDataFlowOpInterface`): each edge has an *owner*,
*targets* that hold one sharding and *sources* that flow into them:

| op | edge owner | targets | sources |
|---|---|---|---|
| `while` | result k | result k, cond and body argument k | operand k, body return operand k |
| `case` | result k | result k | return operand k of every branch |
| `optimization_barrier` | result k | result k | operand k |
| `named_computation` | body argument k | body argument k | operand k |
| `named_computation` | result k | result k | body return operand k |

Propagating through an edge is an identity rule from its sources to its targets (`RegionEdge`,
a worklist item the driver visits where Shardy visits its `sdy.data_flow_edge` op). shardc
outlines regions into functions, so:

- the targets of an edge are *linked*: setting one sets all (`Regions.linked`);
- a value a `while`/`case` region reads from outside (a capture) and the function arguments it
  feeds are linked too, and count as one value when uses are counted (`live_uses`);
- when the program has explicit `data_flow_edge` ops (`sdy-add-data-flow-edges`), the edge op's
  result holds the targets' sharding instead of the owner (as in Shardy, the owner keeps the
  sharding it had until `sdy-sink-data-flow-edges`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import VerifyError
from shardc.ir.ops.control import branch_symbols, num_carried
from shardc.ir.ops.data_flow import EDGE, explicit_edge
from shardc.ir.ops.registry import attr

# Ops whose own visit does nothing: their edges are the worklist items.
DATA_FLOW_OPS = ("while", "case", "optimization_barrier", "named_computation")
REGION_OPS = ("while", "case")
RESULT, ARGUMENT = "result", "argument"


class RegionEdge:
    """The data-flow edge of result `index` (or, for a named computation, body argument `index`
    when `kind` is ARGUMENT) of a data-flow op (identity hashed: a worklist item)."""

    __slots__ = ("op", "index", "kind", "body", "holder", "queued", "order", "visit", "clean")

    def __init__(self, op: Operation, index: int, kind: str = RESULT, body: Function | None = None):
        self.op = op
        self.index = index
        self.kind = kind
        self.body = body  # named_computation: its body
        owner = self.owner
        edge = explicit_edge(owner)
        self.holder = edge.results[0] if edge is not None else owner
        self.queued = False  # on the driver's worklist
        self.order = -1  # its place in the driver's walk (-1: not in it)
        # What the driver visits it with, kept at its first visit (edges.py): the structure it
        # reads does not change while propagation runs.
        self.visit: tuple | None = None
        # The driver whose last visit of it changed nothing, until one of its values changes
        # (driver.py: a visit then would change nothing again).
        self.clean: object = None

    @property
    def owner(self) -> Value:
        if self.kind == ARGUMENT:
            assert self.body is not None
            return self.body.args[self.index]
        return self.op.results[self.index]

    @property
    def target(self) -> Value:
        """The value holding the targets' sharding (its linked targets share it)."""
        return self.holder

    def sources(self, module: Module) -> list[Value]:
        k, name = self.index, self.op.name
        if name == "optimization_barrier":
            return [self.op.operand(k)]
        if name == "named_computation":
            if self.kind == ARGUMENT:
                return [self.op.operand(k)]
            ret = self.body.return_op if self.body is not None else None
            return [ret.operand(k)] if ret is not None else []
        if name == "while":
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
        return f"<RegionEdge {self.op.name} {self.kind} {self.index}>"


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
    """The data-flow structure of a module, built once per propagation."""

    # id(value) -> the values that share its sharding (itself included), when it has partners.
    links: dict[int, list[Value]] = field(default_factory=dict)
    # id(data-flow op) -> its edges: results (while/case/barrier); named: arguments then results.
    edges: dict[int, list[RegionEdge]] = field(default_factory=dict)
    # id(value) -> the edge whose target it is (holders, while cond and body arguments k).
    edge_of_target: dict[int, RegionEdge] = field(default_factory=dict)
    # body/branch function name -> the edges its return operands feed (operand k: edge k).
    returns: dict[str, list[RegionEdge]] = field(default_factory=dict)
    # Names of the functions some op runs as a region or named-computation body.
    functions: set[str] = field(default_factory=set)

    def linked(self, v: Value) -> list[Value]:
        return self.links.get(id(v)) or [v]

    def edge_for_use(self, user: Operation, index: int) -> RegionEdge | None:
        """The edge a use of a value by `user` is a source of: while carried operand k, barrier
        operand k, named-computation operand k -> that edge."""
        edges = self.edges.get(id(user))
        if edges is None:
            return None
        if user.name == "while":
            return edges[index] if index < num_carried(user) else None
        if user.name in ("optimization_barrier", "named_computation"):
            return edges[index]
        return None

    def return_edges(self, func: Function, index: int) -> list[RegionEdge]:
        return [e for e in self.returns.get(func.name, ()) if e.index == index]

    def arg_edges(self, op: Operation) -> list[RegionEdge]:
        return [e for e in self.edges.get(id(op), ()) if e.kind == ARGUMENT]

    def result_edges(self, op: Operation) -> list[RegionEdge]:
        return [e for e in self.edges.get(id(op), ()) if e.kind == RESULT]

    def _link(self, values: list[Value]) -> None:
        merged: dict[int, Value] = {}
        for v in values:
            for m in self.linked(v):
                merged[id(m)] = m
        group = list(merged.values())
        for m in group:
            self.links[id(m)] = group

    def _targets(self, e: RegionEdge, others: list[Value]) -> None:
        """`e`'s holder and `others` are one sharding; each is a target of `e`."""
        self._link([e.holder, *others])
        for v in self.linked(e.holder):
            self.edge_of_target[id(v)] = e


def build_regions(module: Module, unify: bool = True) -> Regions:
    """Edges and links of every data-flow op of `module`; with `unify`, a linked set starts with
    the one sharding any member has (different ones are an error at the op)."""
    out = Regions()
    for op in module.walk():
        if op.name == "while":
            cond = module.lookup_function(attr(op, "cond").name)
            body = module.lookup_function(attr(op, "body").name)
            funcs = [f for f in (cond, body) if f is not None]
            edges = [RegionEdge(op, k) for k in range(num_carried(op))]
            for k, e in enumerate(edges):
                out._targets(e, [f.args[k] for f in funcs])
            for j in range(num_carried(op), op.num_operands):
                out._link([op.operand(j), *(f.args[j] for f in funcs)])
            if body is not None:
                out.returns.setdefault(body.name, []).extend(edges)
        elif op.name == "case":
            funcs = [
                f for f in (module.lookup_function(s.name) for s in branch_symbols(op)) if f
            ]
            edges = [RegionEdge(op, k) for k in range(len(op.results))]
            for e in edges:
                out._targets(e, [])
            for j in range(1, op.num_operands):
                out._link([op.operand(j), *(f.args[j - 1] for f in funcs)])
            for f in funcs:
                out.returns.setdefault(f.name, []).extend(edges)
        elif op.name == "optimization_barrier":
            funcs = []
            edges = [RegionEdge(op, k) for k in range(len(op.results))]
            for e in edges:
                out._targets(e, [])
        elif op.name == "named_computation":
            body = module.lookup_function(attr(op, "body").name)
            if body is None:
                continue
            funcs = [body]
            args = [RegionEdge(op, k, ARGUMENT, body) for k in range(len(body.args))]
            results = [RegionEdge(op, k, RESULT, body) for k in range(len(op.results))]
            edges = args + results
            for e in edges:
                out._targets(e, [])
            out.returns.setdefault(body.name, []).extend(results)
        else:
            continue
        out.edges[id(op)] = edges
        out.functions.update(f.name for f in funcs)
        if unify:
            _unify(op, out)
    return out


def _unify(op: Operation, regions: Regions) -> None:
    values = [*op.operands, *op.results, *(e.holder for e in regions.edges[id(op)])]
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


def edge_targets(module: Module) -> set[int]:
    """ids of the values that are targets of a data-flow edge (Shardy's `DataFlowEdgeOp::lookup`
    finds an edge for them): results of data-flow ops and of manual computations, `while` cond
    and body arguments of carried values, named and manual computation body arguments, and the
    results of explicit `data_flow_edge` ops. No IR is changed."""
    out: set[int] = set()
    for op in module.walk():
        name = op.name
        if name == EDGE or name in DATA_FLOW_OPS or name == "manual_computation":
            out.update(id(r) for r in op.results)
        if name == "while":
            for key in ("cond", "body"):
                f = module.lookup_function(attr(op, key).name)
                if f is not None:
                    out.update(id(a) for a in f.args[: num_carried(op)])
        elif name in ("named_computation", "manual_computation"):
            f = module.lookup_function(attr(op, "body").name)
            if f is not None:
                out.update(id(a) for a in f.args)
    return out
