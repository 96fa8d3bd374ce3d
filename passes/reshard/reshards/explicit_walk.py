"""The walk of Shardy's `sdy-insert-explicit-reshards` over one function (`ExplicitReshards`).

Ops are visited in order, an op's region functions (while/case/manual_computation bodies) before
the op itself, as MLIR's post-order walk visits nested ops first:

- data-flow ops (`while`, `case`, `optimization_barrier`, `manual_computation`): each source of an
  edge (an operand, a region's returned value) gets the edge owner's sharding, right after the
  source is defined;
- `call`: each operand gets the callee argument's sharding (full version always);
- a `reshard` that only adds unreduced axes becomes unreduced collectives;
- any other op: unreduced operands its result does not keep are all-reduced first; then, if the op
  has a rule (not a custom one) and its shardings share a mesh, the full version picks a sharding
  per factor (`common_axes.py`) and reshards the operands and results that differ (a reshape
  whose shardings overflow its factors redistributes the axes); without the full version only a
  dot whose result conflicts in one dim is changed (`dot.py`); then the sharded reduction factors
  the result does not keep unreduced are all-reduced; an op with a result on one device (a
  maximal mesh) gets its operands resharded there and its results back (`single_device.py`);
- finally the returned values get the function's result shardings.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.ops.control import region_functions
from shardc.passes.analysis.collectives.sub_axes import set_difference, sort_and_merge
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.propagation.rules.registry import rule_for
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule
from shardc.passes.reshard.reshards import factor_shardings as fsh
from shardc.passes.reshard.reshards.common_axes import (
    AxesPerFactor,
    common_axes,
    compatible_factor_axes,
    shardy_projection,
)
from shardc.passes.reshard.reshards.dot import reshard_dot_result
from shardc.passes.reshard.reshards.insertion import (
    Cursor,
    closed_replicated,
    dims_replicated,
    equivalent,
)
from shardc.passes.reshard.reshards.single_device import (
    is_single_device,
    no_single_device_signature,
    place_on_one_device,
    single_device_mesh,
)
from shardc.passes.reshard.reshards.unreduced_ops import (
    all_reduce_results,
    all_reduce_to,
    reshard_to_unreduced_collectives,
    unreduced_collectives,
)

DATA_FLOW = ("while", "case", "optimization_barrier", "manual_computation")


def erase_manual(m: NamedMapping, manual: Sequence[str]) -> NamedMapping:
    """Shardy's `eraseManualAxes`: the leading manual axes of every dim, and manual replicated and
    unreduced axes, dropped."""
    dims = []
    for d in m.dims:
        k = 0
        while k < len(d.axes) and d.axes[k].name in manual:
            k += 1
        dims.append(DimSharding(d.axes[k:], d.is_closed, d.priority))
    return NamedMapping(
        m.mesh, tuple(dims), tuple(a for a in m.replicated if a.name not in manual),
        tuple(a for a in m.unreduced if a.name not in manual), m.unreduced_op, m.memory_kind,
    )


def manual_axes(op: Operation) -> tuple[str, ...]:
    return tuple(a.name for a in attr(op, "manual_axes"))


class Regions:
    """Which op owns each region function, to find a block argument's sharding (Shardy reads it
    from the op that owns the block)."""

    def __init__(self, module: Module):
        self.module = module
        self.owner: dict[str, Operation] = {}
        for func in module.functions.values():
            for op in func.body:
                for name in self.names(op):
                    self.owner[name] = op

    @staticmethod
    def names(op: Operation) -> list[str]:
        if op.name == "manual_computation":
            return [attr(op, "body").name]
        return region_functions(op)

    def functions(self, op: Operation) -> list[Function]:
        return [f for n in self.names(op) if (f := self.module.lookup_function(n)) is not None]

    def sharding(self, v: Value) -> NamedMapping | None:
        """Shardy's `getSharding(v)` (through propagation barriers for op results)."""
        while v.defining_op is not None and v.defining_op.name == "propagation_barrier":
            v = v.defining_op.operand(0)
        if not v.is_argument:
            return v.mapping
        func = v.owner
        assert isinstance(func, Function)
        op = self.owner.get(func.name)
        if op is None:
            return v.mapping
        if op.name == "manual_computation":
            return erase_manual(attr(op, "in_shardings")[v.index], manual_axes(op))
        if op.name == "while" and v.index < len(op.results):
            return op.results[v.index].mapping
        offset = 1 if op.name == "case" else 0
        return self.sharding(op.operand(v.index + offset))


def common_mesh_ignoring_device_order(
    shardings: Sequence[NamedMapping | None],
) -> DeviceMesh | None:
    """Shardy's `getCommonMeshName(..., ignoreDeviceIds=true)`: the first mesh with axes that
    all others with axes equal up to device order (an iota one preferred), else None."""
    common: DeviceMesh | None = None
    for s in shardings:
        if s is None:
            continue
        if common is None or not common.axes:
            common = s.mesh
        elif not s.mesh.axes:
            continue
        elif s.mesh.axes != common.axes:
            return None
        elif s.mesh.device_ids is None:
            common = s.mesh
    return common


def get_mesh(shardings: Sequence[NamedMapping | None]) -> DeviceMesh | None:
    """Shardy's `getMesh`: the mesh the op's shardings share (ignoring device order, preferring
    the iota one), None when they have none, differ, or it is a single device; then the most
    common mesh among the sharded ones."""
    common = common_mesh_ignoring_device_order(shardings)
    if common is None or common.is_maximal:
        return None
    best, counts, best_count = common, {}, 0
    for s in shardings:
        if s is not None and not dims_replicated(s):
            counts[s.mesh.name] = counts.get(s.mesh.name, 0) + 1
            if counts[s.mesh.name] > best_count:
                best, best_count = s.mesh, counts[s.mesh.name]
    return best


class ExplicitReshards:
    """Shardy's insert-explicit-reshards on one function (see the module docstring)."""

    def __init__(self, module: Module, regions: Regions, full_version: bool):
        self.module = module
        self.regions = regions
        self.full_version = full_version

    def run(self, func: Function) -> None:
        no_single_device_signature(func)
        self.walk(func)
        ret = func.body.last
        if ret is not None and ret.name == "return":
            for i, t in enumerate(func.result_types):
                self.to_target((ret, i), getattr(t, "mapping", None), Cursor.before(ret),
                               self.full_version)

    def walk(self, func: Function) -> None:
        for op in list(func.body):
            if op.parent is None or op.name == "return":
                continue
            for region in self.regions.functions(op):
                self.walk(region)
            self.visit(op)

    # ----- one use ----------------------------------------------------------------------------

    def to_target(self, use: tuple[Operation, int], target: NamedMapping | None, cursor: Cursor,
                  full: bool) -> None:
        """Shardy's `insertExplicitReshardsToTargetSharding`."""
        op, i = use
        source = self.regions.sharding(op.operand(i))
        if source is not None:
            source = all_reduce_to(cursor, use, source, target)
        changed = unreduced_collectives(cursor, use, target)
        if changed is not None:
            source = changed
        if full and not equivalent(source, target):
            if target is None:
                assert source is not None
                target = closed_replicated(source)
            v = cursor.create("reshard", op.operand(i), target, {}, op)
            op.set_operand(i, v)

    # ----- ops --------------------------------------------------------------------------------

    def full(self, op: Operation) -> bool:
        if self.full_version or op.name == "call":
            return True
        if op.name == "concatenate":
            result = op.results[0].mapping
            return any(v.mapping != result for v in op.operands)
        return False

    def visit(self, op: Operation) -> None:
        full = self.full(op)
        if op.name in DATA_FLOW:
            self.data_flow(op, full)
            return
        if op.name == "call":
            self.call(op)
            return
        if reshard_to_unreduced_collectives(op):
            return
        self.all_reduce_operands(op)
        ins = [self.regions.sharding(v) for v in op.operands]
        outs = [r.mapping for r in op.results]
        device = single_device_mesh(op, outs)
        if device is not None:
            place_on_one_device(self.module, op, device, outs, self.regions.sharding)
            return
        rule = rule_for(op)
        if rule is None or rule.is_custom:
            return
        mesh = get_mesh([*ins, *outs])
        if mesh is None:
            return
        projection = shardy_projection(ins, outs, rule, mesh)
        axes = self.process(op, projection, ins, outs, rule, mesh, full)
        self.all_reduce_reduction_factors(op, projection, axes, rule, mesh, full)

    def data_flow(self, op: Operation, full: bool) -> None:
        """Every edge source gets its owner's sharding (results first, then block arguments)."""
        edges: list[tuple[NamedMapping | None, list[tuple[Operation, int]]]] = []
        bodies = self.regions.functions(op)
        if op.name == "manual_computation":
            manual = manual_axes(op)
            ret = bodies[0].body.last
            for j, m in enumerate(attr(op, "out_shardings")):
                edges.append((erase_manual(m, manual), [(ret, j)]))
            for i, m in enumerate(attr(op, "in_shardings")):
                edges.append((m, [(op, i)]))
        else:
            for j, r in enumerate(op.results):
                if op.name == "while":
                    sources = [(op, j), (bodies[1].body.last, j)]
                elif op.name == "case":
                    sources = [(b.body.last, j) for b in bodies]
                else:
                    sources = [(op, j)]
                edges.append((r.mapping, sources))
        for target, sources in edges:
            for use in sources:
                user, i = use
                cursor = Cursor.after_value(user.operand(i))
                self.to_target(use, target, cursor, full)

    def call(self, op: Operation) -> None:
        callee = self.module.lookup_function(op.attr("callee").name)
        assert callee is not None
        args = [a.mapping for a in callee.args]
        mesh = next((m.mesh for m in args if m is not None and not is_single_device(m)), None)
        if mesh is not None:
            targets = [m if m is not None else NamedMapping.fully_open(mesh, a.type.rank)
                       for m, a in zip(args, callee.args, strict=True)]
        else:
            shardings = [self.regions.sharding(v) for v in op.operands]
            mesh = next((m.mesh for m in shardings if m is not None and not is_single_device(m)),
                        None)
            if mesh is None:
                return
            targets = [NamedMapping.fully_replicated(mesh, v.type.rank) for v in op.operands]
        for i, target in enumerate(targets):
            self.to_target((op, i), target, Cursor.after_value(op.operand(i)), True)

    def all_reduce_operands(self, op: Operation) -> None:
        """Shardy's `insertAllReduceOnOpIfUnreducedToReplicated`."""
        if not op.results:
            return
        first = op.results[0].mapping
        cursor = Cursor.before(op)
        for i, v in enumerate(op.operands):
            source = self.regions.sharding(v)
            if source is not None:
                all_reduce_to(cursor, (op, i), source, first)

    # ----- factor shardings ---------------------------------------------------------------------

    def process(self, op: Operation, projection: ShardingProjection,
                ins: list[NamedMapping | None], outs: list[NamedMapping | None],
                rule: OpShardingRule, mesh: DeviceMesh, full: bool) -> AxesPerFactor:
        """Shardy's `processOp`: returns the factor shardings the op now computes under (empty
        without the full version)."""
        if not full:
            if op.name in ("dot_general", "dot"):
                reshard_dot_result(op, projection, outs, rule, mesh)
            return []
        update_in = [any(fs.overflow for fs in t.factors.values()) for t in projection.operands]
        update_out = [any(fs.overflow for fs in t.factors.values()) for t in projection.results]
        if op.name == "reshape" and (any(update_in) or any(update_out)):
            common, update_in, update_out = fsh.reshape_with_overflow(
                projection, ins, outs, rule, mesh)
            self.insert_reshards(op, projection, ins, outs, update_in, update_out, rule, mesh)
            return common
        sizes = [v.type.num_elements for v in (*op.operands, *op.results)]
        axes = common_axes(projection, rule, sizes, mesh)
        for f, a in enumerate(axes):
            changed_in, changed_out = fsh.update_factor(projection, f, a)
            update_in = [x or y for x, y in zip(update_in, changed_in, strict=True)]
            update_out = [x or y for x, y in zip(update_out, changed_out, strict=True)]
        self.insert_reshards(op, projection, ins, outs, update_in, update_out, rule, mesh)
        return axes

    def insert_reshards(self, op: Operation, projection: ShardingProjection,
                        ins: list[NamedMapping | None], outs: list[NamedMapping | None],
                        update_in: list[bool], update_out: list[bool],
                        rule: OpShardingRule, mesh: DeviceMesh) -> None:
        """Shardy's `insertExplicitReshards`: reshard the operands and results that changed (or
        that are sharded on the op's mesh under another device order)."""
        cursor = Cursor.before(op)
        for i, (m, t) in enumerate(zip(ins, projection.operands, strict=True)):
            if update_in[i] or _other_order(m, mesh):
                target = fsh.tensor_sharding(t, rule.operands[i], rule, mesh, m)
                v = cursor.create("reshard", op.operand(i), target, {}, op)
                op.set_operand(i, v)
        cursor = Cursor.after(op)
        for j, (m, t) in enumerate(zip(outs, projection.results, strict=True)):
            if update_out[j] or _other_order(m, mesh):
                r = op.results[j]
                new = fsh.tensor_sharding(t, rule.results[j], rule, mesh, m)
                original = m if m is not None else closed_replicated(
                    NamedMapping.fully_replicated(mesh, r.type.rank))
                v = cursor.create("reshard", r, original, {}, op)
                new_op = v.defining_op
                r.replace_uses_if(v, lambda use, new_op=new_op: use.op is not new_op)
                r.set_mapping(new)

    def all_reduce_reduction_factors(self, op: Operation, projection: ShardingProjection,
                                     axes: AxesPerFactor, rule: OpShardingRule,
                                     mesh: DeviceMesh, full: bool) -> None:
        """Shardy's `insertAllReducesForReductionFactors`."""
        if not op.results:
            return
        first = op.results[0].mapping
        reduction: list = []
        factors = rule.factors_of_kind(FactorKind.REDUCTION)
        if full:
            for f in factors:
                reduction.extend(axes[f])
        else:
            if first is None or not first.unreduced:
                return
            for f in factors:
                common = compatible_factor_axes(projection, f)
                if common is None:
                    raise_incompatible(op)
                reduction.extend(common)
        if not reduction:
            return
        kept = first.unreduced if first is not None else ()
        to_reduce = set_difference(reduction, kept, mesh)
        if to_reduce:
            all_reduce_results(op, sort_and_merge(to_reduce, mesh),
                               NamedMapping.fully_replicated(mesh, 0))


def raise_incompatible(op: Operation) -> None:
    from shardc.ir.diagnostics import PassError

    raise PassError(
        f"'{op.name}' op: the result is unreduced but the operands shard its reduction factors "
        "differently", op.loc
    )


def _other_order(m: NamedMapping | None, mesh: DeviceMesh) -> bool:
    """Shardy's `shouldReshardToCommonMesh`."""
    return not dims_replicated(m) and m is not None and m.mesh.device_ids != mesh.device_ids

