"""The graph auto-shard decides over: one node per argument and per op of the entry function.

    graph = build_graph(module, options)
    graph.nodes     # Node: an argument or an op with its candidate strategies
    graph.uses      # Use: a value flowing from a producer node to a consumer node
    graph.returns   # what the function returns, and the layout it is declared with

Three kinds of node:

- ARG: a function argument; its strategies are its layouts (`candidates.layouts`).
- OP: an op with a factor rule; its strategies come from the rule (`candidates.op_strategies`),
  or, for `sharding_constraint`/`reshard`/`propagation_barrier`, are the layouts the user's
  sharding allows (the op is an identity).
- FIXED: an op auto-shard does not choose for (no rule, control flow, `manual_computation`):
  one strategy, replicated operands and results (a `manual_computation` its own in/out
  shardings), as `insert-reshards` lays out such ops.

Dead ops (whose results reach neither the return nor an op with side effects) are not in the
graph: `canonicalize` erases them. Constant expressions (`constant`, `iota` and what is
computed from them only) and broadcasts of scalars are not nodes either: every device can
build any block of them, so they take whatever layout their user needs (propagation gives it
to them after auto-shard) and only count for memory: each of their values is a `Constant`,
held from its op to its last reader (constants.py gives its layout under each plan).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import COLLECTIVE, ELEMENTWISE, attr, get_op_def
from shardc.ir.ops.effects import SIDE_EFFECTS
from shardc.ir.ops.scalar_bodies import is_body_reduce, sort_dimension
from shardc.ir.types import DistributedTensorType
from shardc.passes.ingest.split_constants import _is_constant_expression, _is_scalar_expansion
from shardc.passes.propagation.autoshard.candidates import (
    HEAVY_OPS,
    Coupling,
    Strategy,
    allows,
    layouts,
    op_strategies,
    reduced,
)
from shardc.passes.propagation.layouts import closed, reduce_op_of
from shardc.passes.propagation.rules.registry import rule_for
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

# Identity ops that carry a user's sharding on their result: each is the reshard to it.
RESHARDING = ("sharding_constraint", "reshard")
_IDENTITY = (*RESHARDING, "propagation_barrier")


class NodeKind(enum.Enum):
    ARG = "arg"
    OP = "op"
    FIXED = "fixed"


@dataclass(eq=False)
class Node:
    """An argument or op of the entry function and its candidate strategies.

    `position` is the op's index in the function body (-1 for arguments); `user[k]` is the
    sharding the user wrote on value k (None: free). `follows` is set by graph simplification
    when the node's strategies are derived from another node's (see simplify.py)."""

    index: int
    kind: NodeKind
    op: Operation | None
    values: tuple[Value, ...]
    position: int
    strategies: list[Strategy]
    user: tuple[NamedMapping | None, ...]
    pointwise: bool = False
    depth: int = 0

    @property
    def label(self) -> str:
        if self.op is None:
            return self.values[0].label
        return f"'{self.op.name}' ({', '.join(v.label for v in self.values) or 'no results'})"


@dataclass(eq=False)
class Use:
    """Value `result` of `producer` read by `consumer` at operand positions `operands`."""

    producer: Node
    result: int
    consumer: Node
    operands: tuple[int, ...]


@dataclass(eq=False)
class Return:
    """Function result `index` is value `result` of `producer`; `declared` is the sharding the
    function's signature gives it (None: whatever the value has)."""

    producer: Node
    result: int
    index: int
    declared: NamedMapping | None

    def target(self, produced: NamedMapping) -> NamedMapping:
        """The layout the return needs when the producer makes `produced`: the declared
        sharding, or the (reduced) produced layout if the declared one allows it (open dims)."""
        mine = reduced(produced)
        if self.declared is None or allows(self.declared, mine):
            return mine
        return closed(self.declared)  # type: ignore[return-value]


@dataclass(eq=False)
class Constant:
    """Result `result` of `op` (at `position`), an op that is not a node: held from its op to its
    last reader (`last_use`: a position, `len(body)` if returned, `position` if unread).
    `reader` is its one reader: a node (reading it at `operand`) or the `Constant` of another
    such op's result; None when several ops (or the return) read it."""

    op: Operation
    result: int
    position: int
    last_use: int
    reader: Node | Constant | None = None
    operand: int = -1
    readers: int = 0

    @property
    def value(self) -> Value:
        return self.op.results[self.result]


@dataclass
class CostGraph:
    func: Function
    mesh: DeviceMesh
    nodes: list[Node]
    uses: list[Use]
    returns: list[Return]
    # the values of constant expressions and broadcast scalars, in program order
    constants: list[Constant] = field(default_factory=list)
    # (node index, result index) -> position of its last use (returned: len(body))
    last_use: dict[tuple[int, int], int] = field(default_factory=dict)
    coupled: Coupling = ()  # the axis pairs every strategy keeps (candidates.Coupling)
    # state carried to the next step: (return, argument node) whose layouts must match
    carries: list[tuple[Return, Node]] = field(default_factory=list)

    def carry_pairs(self) -> None:
        """Pair results with the arguments whose state they carry to the next step: result i
        with argument i + d when both have one shape and dtype and the result has no declared
        sharding, d the shift that pairs the most results (ties: the smallest |d|, then d >= 0).
        `step(params, opt) -> (params', opt', loss)` pairs at d = 0, the zoo's
        `step(x, target, params...) -> (loss, params'...)` at d = 1."""
        args = {n.values[0].index: n for n in self.nodes if n.kind is NodeKind.ARG}
        kinds = [(a.type.shape, a.type.dtype) for a in self.func.args]
        free = [r for r in self.returns if r.declared is None]
        keys = [(v.type.shape, v.type.dtype) for v in (r.producer.values[r.result] for r in free)]

        def pairs(d: int) -> list[tuple[Return, Node]]:
            return [(r, args[r.index + d]) for r, k in zip(free, keys)
                    if r.index + d in args and kinds[r.index + d] == k]

        shifts = sorted(range(-len(self.func.result_types), len(kinds)),
                        key=lambda d: (abs(d), d < 0))
        best: list[tuple[Return, Node]] = []
        for d in shifts:
            found = pairs(d)
            if len(found) > len(best):
                best = found
        self.carries = best

    @property
    def ops(self) -> list[Node]:
        """Op nodes in program order."""
        return [n for n in self.nodes if n.kind is not NodeKind.ARG]


def single_mesh(module: Module) -> DeviceMesh:
    """The mesh auto-shard shards over: the module's one mesh with axes (JAX's axis-less
    `@empty_mesh` of 0-d arguments is not one, nor a host callback's one-device mesh)."""
    meshes = [m for m in module.meshes.values() if not (m.is_empty or m.is_maximal)]
    if len(meshes) != 1:
        found = "no mesh with axes" if not meshes else f"{len(meshes)} meshes with axes"
        raise PassError(
            f"auto-shard needs exactly one mesh with axes and the module declares {found}; "
            "declare one (or give --mesh)",
            module.main.loc if module.functions else None,
        )
    return meshes[0]


def is_free(op: Operation, constants: set[int]) -> bool:
    """A constant expression or a broadcast scalar: any layout of it is built locally."""
    if _is_constant_expression(op, constants):
        constants.add(id(op))
        return True
    return _is_scalar_expansion(op)


def _pointwise(op: Operation, rule: OpShardingRule | None) -> bool:
    """Element-wise with a rule that maps every non-scalar tensor's dim d to factor d."""
    op_def = get_op_def(op.name)
    if rule is None or op_def is None or not op_def.has(ELEMENTWISE) or op.result.type.rank == 0:
        return False
    ident = tuple((d,) for d in range(op.result.type.rank))
    return all(m == ident for m in rule.mappings if m) and all(
        rule.kind(f) is FactorKind.PASS_THROUGH for f in range(rule.num_factors)
    )


def _fixed_strategy(op: Operation, mesh: DeviceMesh) -> Strategy:
    if op.name == "manual_computation":
        ins = tuple(closed(m) for m in attr(op, "in_shardings"))
        outs = tuple(closed(m) for m in attr(op, "out_shardings"))
        return Strategy(ins, outs)  # type: ignore[arg-type]
    return Strategy(
        tuple(NamedMapping.fully_replicated(mesh, v.type.rank) for v in op.operands),
        tuple(NamedMapping.fully_replicated(mesh, r.type.rank) for r in op.results),
    )


def _op_node(index: int, op: Operation, position: int, mesh: DeviceMesh,
             coupled: Coupling = ()) -> Node:
    users = tuple(r.mapping for r in op.results)
    if op.name in _IDENTITY:
        user = users[0] if op.name in RESHARDING else None
        options = layouts(op.result.type.shape, mesh, user, coupled)
        strategies = [Strategy((m,), (m,)) for m in options]
        return Node(index, NodeKind.OP, op, tuple(op.results), position, strategies, users)
    op_def = get_op_def(op.name)
    if op_def is not None and op_def.has(COLLECTIVE) and not op.name.startswith("spmd."):
        raise PassError(
            f"auto-shard cannot decide around the explicit collective '{op.name}'; run it on the "
            "program before collectives are inserted",
            op.loc,
        )
    if op.name == "sharding_group":
        raise PassError(
            "auto-shard does not support sharding_group yet; drop the group or annotate its "
            "members",
            op.loc,
        )
    rule = rule_for(op)
    if rule is None or op.name in ("call", "while", "case", "manual_computation"):
        strategy = _fixed_strategy(op, mesh)
        return Node(index, NodeKind.FIXED, op, tuple(op.results), position, [strategy], users)
    strategies = op_strategies(rule, mesh, reduce_op_of(op), heavy=op.name in HEAVY_OPS,
                               coupled=coupled)
    strategies = [s for s in strategies if _locally_kept(op, rule, s)]
    kept = [
        s
        for s in strategies
        if all(allows(u, reduced(m)) for u, m in zip(users, s.results))
    ]
    if not kept:
        wanted = ", ".join(f"{r.label}: {u}" for r, u in zip(op.results, users) if u)
        raise PassError(
            f"auto-shard found no way to compute '{op.name}' locally with the sharding given to "
            f"its result ({wanted}); change or drop the annotation",
            op.loc,
        )
    node = Node(index, NodeKind.OP, op, tuple(op.results), position, kept, users)
    node.pointwise = _pointwise(op, rule) and all(u is None for u in users)
    return node


def _locally_kept(op: Operation, rule: OpShardingRule, s: Strategy) -> bool:
    """Strategies `insert-reshards` would change: a sharded sort dimension, or a sharded
    reduction of a reduce with a body (it is split into a local reduce and a collective)."""
    if op.name == "sort":
        d = sort_dimension(op)
        return not any(s.axes[f] for tm in rule.mappings for f in tm[d])
    if is_body_reduce(op):
        return not any(s.axes[f] for f in rule.factors_of_kind(FactorKind.REDUCTION))
    return True


def _needed(body: list[Operation]) -> set[int]:
    """Ids of the ops whose results reach the return or an op with side effects; the others
    are dead, and `canonicalize` erases them with any collective feeding them."""
    needed: set[int] = set()
    for op in reversed(body):
        if op.name in SIDE_EFFECTS or any(
            u.op is not None and id(u.op) in needed for r in op.results for u in r.uses
        ):
            needed.add(id(op))
    return needed


def build_graph(module: Module, func: Function, mesh: DeviceMesh,
                coupled: Coupling = ()) -> CostGraph:
    """The nodes, uses, returns and liveness of `func` (its constants already split). Dead ops
    are left out: nothing of them is left after `canonicalize`. `coupled` restricts every
    strategy (`candidates.Coupling`)."""
    nodes: list[Node] = []
    of_value: dict[Value, tuple[Node, int]] = {}
    for i, a in enumerate(func.args):
        node = Node(
            len(nodes), NodeKind.ARG, None, (a,), -1,
            [Strategy((), (m,)) for m in layouts(a.type.shape, mesh, a.mapping, coupled)],
            (a.mapping,),
        )
        if not node.strategies:
            raise PassError(f"argument {i} has no layout its sharding allows", func.loc)
        nodes.append(node)
        of_value[a] = (node, 0)
    constants: set[int] = set()
    uses: list[Use] = []
    held: dict[Value, Constant] = {}  # the values of ops that are not nodes
    last_use: dict[tuple[int, int], int] = {}
    body = list(func.body)
    needed = _needed(body)
    returns: list[Return] = []
    for position, op in enumerate(body):
        if id(op) not in needed:
            continue
        if op.name == "return":
            for i, v in enumerate(op.operands):
                if v in held:
                    _read(held[v], None, i, len(body))
                if v in of_value:
                    producer, k = of_value[v]
                    t = func.result_types[i]
                    declared = t.mapping if isinstance(t, DistributedTensorType) else None
                    returns.append(Return(producer, k, i, declared))
                    last_use[(producer.index, k)] = len(body)
            continue
        free = is_free(op, constants)
        for v in op.operands:  # liveness counts every reader, free ops included
            if v in of_value:
                producer, k = of_value[v]
                last_use[(producer.index, k)] = max(last_use.get((producer.index, k), -1), position)
        if free:
            mine = [Constant(op, k, position, position) for k in range(len(op.results))]
            for k, r in enumerate(op.results):
                held[r] = mine[k]
            for i, v in enumerate(op.operands):
                if v in held:  # (a free op of several results is no one's single reader)
                    _read(held[v], mine[0] if len(mine) == 1 else None, i, position)
            continue
        node = _op_node(len(nodes), op, position, mesh, coupled)
        nodes.append(node)
        readers: dict[Value, list[int]] = {}
        for i, v in enumerate(op.operands):
            if v in of_value:
                readers.setdefault(v, []).append(i)
            elif v in held:
                _read(held[v], node, i, position)
        for v, positions in readers.items():
            producer, k = of_value[v]
            uses.append(Use(producer, k, node, tuple(positions)))
        node.depth = 1 + max((of_value[v][0].depth for v in readers), default=0)
        for k, r in enumerate(op.results):
            of_value[r] = (node, k)
    return CostGraph(func, mesh, nodes, uses, returns, list(held.values()), last_use, coupled)


def _read(c: Constant, reader: Node | Constant | None, operand: int, position: int) -> None:
    """`reader` (None: the return) reads `c` at `operand`, at `position`."""
    c.last_use = max(c.last_use, position)
    if c.readers and c.reader is reader and reader is not None:
        return  # the same op at another operand: one reader still (the first operand's layout)
    c.readers += 1
    c.reader, c.operand = (reader, operand) if c.readers == 1 else (None, -1)
