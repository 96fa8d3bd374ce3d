"""Shardy's propagation debugging: `debug-sharding-origins` and `debug-propagation-edge-sharding`
(Shardy's `transforms/propagation/debugging/source_sharding.cc`), recorded as shardc propagates.

    shardc opt m.mlir -p 'sdy-add-data-flow-edges,
        sdy-apply-sharding-constraints{debug-sharding-origins=true},
        sdy-aggressive-propagate{debug-sharding-origins=true debug-propagation-edge-sharding=true},
        sdy-sink-data-flow-edges{sink-debug-sharding-origins=true}'

A *step* is one propagation through an op, a data-flow edge or the entry function's results that
changed a sharding (numbered across the passes of a pipeline: a pass starts after the largest
step already written). In a step, each axis a tensor gains came from a *source*: the first
operand, then result, whose axes for that factor start with the new ones (`source_map`). So
an edge is (axis, source value -> target value, step), and the origin of an axis is the origin
of the same axis on its source: in the end, a user annotation (`OriginSharding`): `input: i`,
`output: j`, `constraint_N` (the Nth sharding_constraint of the module, post-order),
`mc_M_input: i`, `mc_M_output: j` (the Mth manual computation).

The API (for tools that explain a program; `ctx.data["shardy_debug"]` after a pass with an
option on is the last pass's recorder):

- `ShardyDebugInfo.edges_of(item)` -> [PropagationEdge]: what propagation through an op (a
  `data_flow_edge` op, or a data-flow edge owner without one) did, in step order; `item` a
  `Function` gives the edges of its results (Shardy keeps them all on result 0);
- `ShardyDebugInfo.value_of(item, ref)`: the value an edge's `("operand" | "result", i)` is;
- `ShardyDebugInfo.origins_of(value)` -> {AxisRef: OriginSharding}: where each axis came from;
- `ShardyDebugInfo.edges()` -> every (item, [PropagationEdge]), `.steps` the steps so far.

`shardy_debug_saving.save(info)` writes Shardy's attributes (their text: shardy_debug_text.py).
The driver calls the `record_*` hooks only on its changed path and only when the state has a
recorder, so a run without the options does no more work than before
(benchmarks/propagation.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.axis_refs import PrefixStatus, can_merge, contains, merge, prefix_status
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.ops.control import region_functions
from shardc.ir.ops.data_flow import EDGE, explicit_edge
from shardc.ir.ops.manual import body_of
from shardc.passes.propagation.data_flow import RegionEdge, build_regions
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.factor_propagation import propagate_factors
from shardc.passes.propagation.projection import ShardingProjection, common_mesh
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.propagation.shardy_debug_text import max_step
from shardc.passes.propagation.strategy import PropagationStrategy

NAME = "sdy.sharding_origin_name"
OPERAND, RESULT = "operand", "result"
ValueRef = tuple[str, int]  # ("operand" | "result", index) in the op's operands or results
# Ops whose regions (outlined as functions) Shardy's post-order walk enters where they stand.
BODY_OPS = ("named_computation", "manual_computation")


@dataclass(frozen=True)
class OriginSharding:
    """A user annotation an axis came from (Shardy's `OriginSharding`): `kind` is `input`,
    `output`, `constraint`, `mc_input` or `mc_output`; `index` the argument, result or operand
    index; `source_id` the N of `constraint_N` / M of `mc_M`."""

    kind: str
    index: int = 0
    source_id: int = 0

    @property
    def name(self) -> str:
        if self.kind in ("input", "output"):
            return f"{self.kind}: {self.index}"
        if self.kind == "constraint":
            return f"constraint_{self.source_id}"
        side = self.kind.removeprefix("mc_")
        return f"mc_{self.source_id}_{side}: {self.index}"


@dataclass(frozen=True)
class PropagationEdge:
    """In `step`, `axis` went from the op's `source` value to its `target` value."""

    axis: AxisRef
    source: ValueRef
    target: ValueRef
    step: int


AxisSources = dict[AxisRef, ValueRef]


def source_map(
    old: ShardingProjection, new: ShardingProjection, rule: OpShardingRule, mesh: DeviceMesh | None
) -> tuple[list[AxisSources], list[AxisSources]]:
    """Shardy's `createSourceMap`: for each operand and result, each axis that propagation
    introduced (old -> new projection) and the value it came from.

    Per dim, factor by factor: the new axes of a changed factor came from the first operand,
    else result, whose old axes for that factor start with them; the axes recorded are the
    ones past the old axes (and the old last axis if it grew into a larger sub-axis). A factor's
    last new axis merges with the previous changed factor's last axis when they are adjacent
    sub-axes of one axis (`"c":(1)2` + `"c":(2)2` is `"c":(1)4`), replacing its entry."""
    def find(axes: tuple[AxisRef, ...], factor: int) -> ValueRef | None:
        for kind, group in ((OPERAND, old.operands), (RESULT, old.results)):
            for i, t in enumerate(group):
                fs = t.factors.get(factor)
                if fs is not None and prefix_status(axes, fs.axes) != PrefixStatus.NOT_A_PREFIX:
                    return kind, i
        return None

    def visit(o, n, dims) -> AxisSources:
        out: AxisSources = {}
        for dim in dims:
            prev = None
            for f in dim:
                old_axes, new_axes = o.factors[f].axes, n.factors[f].axes
                if old_axes == new_axes:
                    continue
                last = new_axes[-1]
                if prev is not None and can_merge(prev, last):
                    out.pop(prev, None)
                    last = merge(prev, last, mesh)
                prev = new_axes[-1]
                source = find(new_axes, f)
                if source is None:
                    continue
                introduced = list(new_axes)
                introduced[-1] = last
                k = len(old_axes) - 1
                if old_axes and old_axes[k] != introduced[k]:
                    out.setdefault(introduced[k], source)
                for a in introduced[len(old_axes):]:
                    out.setdefault(a, source)
        return out

    return (
        [visit(o, n, d) for o, n, d in zip(old.operands, new.operands, rule.operands)],
        [visit(o, n, d) for o, n, d in zip(old.results, new.results, rule.results)],
    )


class ShardyDebugInfo:
    """What one pass with Shardy's debugging options records (see the module doc)."""

    def __init__(self, module: Module, origins: bool, edges: bool):
        self.module = module
        self.record_origins, self.record_edges = origins, edges
        self.first_step = max_step(module.walk()) + 1 if edges else 0
        self.step = self.first_step
        # Edges per item: id -> (item, [PropagationEdge]); an item is an op, a Function (its
        # results) or a data-flow edge owner (a Value) with no data_flow_edge op.
        self._edges: dict[int, tuple[object, list[PropagationEdge]]] = {}
        # id(item) -> the values its edges' operand-i / result-i refer to
        self._refs: dict[int, tuple[tuple[Value, ...], tuple[Value, ...]]] = {}
        self._origins: dict[int, tuple[Value, dict[AxisRef, OriginSharding]]] = {}
        # id(op) -> the annotation it is itself: a constraint, a manual computation's edge op
        # (origins that name it read `self` there).
        self.self_names: dict[int, str] = {}
        self.regions = build_regions(module, unify=False)
        self.bodies = set(self.regions.functions) | {
            attr(op, "body").name for op in module.walk() if op.name == "manual_computation"
        }
        if origins:
            self._seed()

    # ----- the API --------------------------------------------------------------------------

    @property
    def steps(self) -> int:
        """The steps this pass recorded."""
        return self.step - self.first_step

    def edges_of(self, item: Operation | Function | Value) -> list[PropagationEdge]:
        entry = self._edges.get(id(item))
        return list(entry[1]) if entry is not None else []

    def value_of(self, item: object, ref: ValueRef) -> Value:
        """The value `operand-i` / `result-i` of `item`'s edges stands for (for a data-flow
        edge, operands are its sources; for a function's results, both are the value returned)."""
        operands, results = self._refs[id(item)]
        kind, index = ref
        return operands[index] if kind == OPERAND else results[index]

    def edges(self) -> list[tuple[object, list[PropagationEdge]]]:
        return [(item, list(edges)) for item, edges in self._edges.values()]

    def origins_of(self, v: Value) -> dict[AxisRef, OriginSharding]:
        entry = self._origins.get(id(self.shardable(v)))
        return dict(entry[1]) if entry is not None else {}

    def origins(self) -> list[tuple[Value, dict[AxisRef, OriginSharding]]]:
        return [(v, dict(axes)) for v, axes in self._origins.values()]

    def top_functions(self) -> list[Function]:
        """The functions that are no op's region or body."""
        return [f for f in self.module.functions.values() if f.name not in self.bodies]

    # ----- values -----------------------------------------------------------------------------

    def shardable(self, v: Value) -> Value:
        """The value holding `v`'s sharding in Shardy: a data-flow edge target's edge (its
        `data_flow_edge` result if any), a value captured by a region for its uses inside."""
        edge = self.regions.edge_of_target.get(id(v))
        if edge is not None:
            return edge.holder
        if v.is_argument and v.owner.name in self.bodies:  # type: ignore[union-attr]
            for m in self.regions.linked(v):
                if not (m.is_argument and m.owner.name in self.bodies):  # type: ignore[union-attr]
                    return m
        return v

    def _add_origin(self, v: Value, axis: AxisRef, origin: OriginSharding) -> None:
        entry = self._origins.get(id(v))
        if entry is None:
            entry = self._origins[id(v)] = (v, {})
        entry[1].setdefault(axis, origin)  # the first origin of an axis stays

    def _seed_value(self, v: Value, mapping: NamedMapping | None, origin: OriginSharding) -> None:
        if mapping is None:
            return
        v = self.shardable(v)
        for d in mapping.dims:  # dim axes only: replicated axes have no origin
            for a in d.axes:
                self._add_origin(v, a, origin)

    def post_order(self) -> list[Operation]:
        """The module's ops in Shardy's post-order walk: a region's ops (outlined functions here)
        before the op that holds them, top-level functions in module order."""
        out: list[Operation] = []
        seen: set[str] = set()

        def visit(func: Function) -> None:
            seen.add(func.name)
            for op in func.body:
                names = region_functions(op) if op.name in ("while", "case") else (
                    [attr(op, "body").name] if op.name in BODY_OPS else [])
                for name in names:
                    callee = self.module.lookup_function(name)
                    if callee is not None and name not in seen:
                        visit(callee)
                out.append(op)

        for func in self.top_functions():
            if func.name not in seen:
                visit(func)
        return out

    def _seed(self) -> None:
        """Shardy's `prepareShardingOriginsHandler`: constraints, then manual computations, then
        the top-level functions' arguments and results (first origin of an axis wins)."""
        ops = self.post_order()
        constraints = [op for op in ops if op.name == "sharding_constraint"]
        for n, op in enumerate(constraints):
            origin = OriginSharding("constraint", 0, n)
            self._seed_value(op.results[0], op.results[0].mapping, origin)
            x = op.operand(0)
            self._seed_value(x, x.mapping, origin)
            op.attributes[NAME] = OpaqueAttr(f'"{origin.name}"')
            self.self_names[id(op)] = origin.name
        manual = [op for op in ops if op.name == "manual_computation"]
        for m, op in enumerate(manual):
            body = body_of(op)
            for i, sharding in enumerate(attr(op, "in_shardings")):
                origin = OriginSharding("mc_input", i, m)
                if body is not None:
                    self._seed_edge(body.args[i], sharding, origin)
                x = op.operand(i)
                self._seed_value(x, x.mapping, origin)
            for j, sharding in enumerate(attr(op, "out_shardings")):
                self._seed_edge(op.results[j], sharding, OriginSharding("mc_output", j, m))
            op.attributes[NAME] = OpaqueAttr(f'"mc_{m}"')
        for func in self.top_functions():
            for a in func.args:
                self._seed_value(a, a.mapping, OriginSharding("input", a.index))
            ret = func.return_op
            if ret is None:
                continue
            for j, v in enumerate(ret.operands):  # a result's sharding seeds what it returns
                mapping = getattr(func.result_types[j], "mapping", None)
                self._seed_value(v, mapping, OriginSharding("output", j))

    def _seed_edge(self, owner: Value, sharding: NamedMapping, origin: OriginSharding) -> None:
        edge = explicit_edge(owner)
        holder = edge.results[0] if edge is not None else owner
        self._seed_value(holder, sharding, origin)
        # the annotation the edge op (or, without one, the owner) is itself
        self.self_names[id(edge if edge is not None else owner)] = origin.name

    def _lookup(self, v: Value, axis: AxisRef) -> OriginSharding | None:
        """The origin of `axis` on `v`, else of an axis of `v` containing or inside it."""
        entry = self._origins.get(id(self.shardable(v)))
        if entry is None:
            return None  # Shardy looks up a missing value here (undefined); shardc skips it
        axes = entry[1]
        origin = axes.get(axis)
        if origin is not None:
            return origin
        for other, origin in axes.items():
            if contains(other, axis) or contains(axis, other):
                return origin
        return None

    # ----- steps ------------------------------------------------------------------------------

    def record(
        self,
        item: object,
        operands: Sequence[Value],
        results: Sequence[Value],
        old: ShardingProjection,
        new: ShardingProjection,
        rule: OpShardingRule,
        mesh: DeviceMesh | None,
    ) -> None:
        """One step: `item` (an op, a Function for its results, or an edge owner) changed from
        the `old` projection of its `operands` and `results` to `new`."""
        step = self.step
        self.step += 1
        operand_map, result_map = source_map(old, new, rule, mesh)
        for kind, values, maps in ((OPERAND, operands, operand_map), (RESULT, results, result_map)):
            for i, (v, axes) in enumerate(zip(values, maps)):
                for axis, source in axes.items():
                    if self.record_edges:
                        entry = self._edges.get(id(item))
                        if entry is None:
                            entry = self._edges[id(item)] = (item, [])
                            self._refs[id(item)] = (tuple(operands), tuple(results))
                        entry[1].append(PropagationEdge(axis, source, (kind, i), step))
                    if self.record_origins:
                        src = operands[source[1]] if source[0] == OPERAND else results[source[1]]
                        origin = self._lookup(src, axis)
                        if origin is not None:
                            self._add_origin(self.shardable(v), axis, origin)

    @staticmethod
    def item_for(target: Value) -> Operation | Value:
        """Where a data-flow edge's steps are kept: its `data_flow_edge` op, else its owner."""
        d = target.defining_op
        return d if d is not None and d.name == EDGE else target

    def record_visit(
        self,
        current: object,
        op: Operation,
        operands: Sequence[Value],
        results: Sequence[Value],
        rule: OpShardingRule,
        directions: Sequence[PropagationDirection],
        shardings: tuple[Sequence[NamedMapping | None], Sequence[NamedMapping | None]],
        strategy: PropagationStrategy,
        elementwise: bool,
        conservative: bool,
        tensor_sizes: Sequence[int],
    ) -> None:
        """The driver changed something through `op`'s rule (or `current`, a data-flow edge):
        factor propagation again, on a projection of the `shardings` it started from, gives the
        new projection exactly as Shardy compares it."""
        item: object = op
        if isinstance(current, RegionEdge):
            item = self.item_for(current.holder)
        in_ops, in_res = shardings
        mesh = common_mesh((*in_ops, *in_res))
        old = ShardingProjection.build(in_ops, in_res, rule, mesh)
        new = ShardingProjection.build(in_ops, in_res, rule, mesh)
        propagate_factors(new, rule, direction=tuple(directions), strategy=strategy, mesh=mesh,
                          elementwise=elementwise, conservative=conservative,
                          tensor_sizes=tensor_sizes)
        self.record(item, operands, results, old, new, rule, mesh)

    def record_identity(
        self,
        item: object,
        source: Value,
        target: Value,
        shardings: tuple[NamedMapping | None, NamedMapping | None],
        rule: OpShardingRule,
        directions: Sequence[PropagationDirection] | PropagationDirection,
        strategy: PropagationStrategy,
    ) -> None:
        """A step through an identity edge from `source` to `target` (a manual computation's
        edge, seen from the source; an entry function's returned value and its result, both
        `source` and `target` then) that started from `shardings`."""
        src, dst = shardings
        mesh = common_mesh((src, dst))
        old = ShardingProjection.build([src], [dst], rule, mesh)
        new = ShardingProjection.build([src], [dst], rule, mesh)
        size = target.type.num_elements
        direction = directions if isinstance(directions, PropagationDirection) else tuple(
            directions)
        propagate_factors(new, rule, direction=direction, strategy=strategy, mesh=mesh,
                          tensor_sizes=(size, size))
        self.record(item, [source], [target], old, new, rule, mesh)

    def record_constraint(self, op: Operation, x: Value, rule: OpShardingRule) -> None:
        """`apply-sharding-constraints` gave the constraint `op`'s sharding to its unsharded
        input `x`: a step when that changed its projection (closing a dim counts)."""
        m = op.results[0].mapping
        assert m is not None
        old = ShardingProjection.build([None], [m], rule, m.mesh)
        new = ShardingProjection.build([m], [m], rule, m.mesh)
        if old.operands != new.operands or old.results != new.results:
            self.record(op, [x], [op.results[0]], old, new, rule, m.mesh)
