"""insert-reshards' walk over one function: each op is rewritten so it computes locally, with
`reshard`s on the operands that differ (one per value and target, shared by its users)."""

from __future__ import annotations

from collections.abc import Sequence

from shardc.ir.builder import Builder
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import NamedMapping, axes_text, interned
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import attr
from shardc.ir.ops.control import region_signatures
from shardc.ir.ops.scalar_bodies import is_body_reduce
from shardc.ir.placements import ReduceOp
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.manager import PassContext
from shardc.passes.propagation.factor_axes import (
    choose_factor_axes,
    mapping_from_factors,
    unshard_one_sided,
    unshard_unspellable,
)
from shardc.passes.propagation.gather_weights import GatheredWeight
from shardc.passes.propagation.layouts import reduce_op_of, replicated
from shardc.passes.propagation.rules.memo import MISSING, RuleMemo
from shardc.passes.propagation.rules.registry import lowering_rule
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule
from shardc.passes.reshard.reshards import scalar_bodies
from shardc.passes.reshard.reshards.cumulative import cumulative_dim, split_cumulative
from shardc.passes.reshard.reshards.op_kinds import (
    LOCALLY_SHARDABLE_SOURCES,
    is_global_collective,
    needs_whole_operands,
)
from shardc.passes.reshard.reshards.provenance import FactorChoice, ReshardCause, ReshardReason
from shardc.passes.reshard.reshards.top_k import shard_top_k
from shardc.passes.reshard.reshards.unlowerable import unshard_unlowerable

# Ops whose plan reads more of the op than its name, shapes and layouts (attributes, a body):
# planned afresh each time.
_READS_THE_OP = frozenset({"sort", "scatter", "convolution", "reduce_window"})
# (axes per factor, operand targets, result layouts)
_Plan = tuple[tuple[tuple[AxisRef, ...], ...], tuple[NamedMapping, ...], tuple[NamedMapping, ...]]
_plans = RuleMemo()


class FunctionRewriter:
    """Walks one function in order, rewriting each op so it computes locally."""

    def __init__(self, module: Module, func: Function, ctx: PassContext):
        self.module = module
        self.func = func
        self.ctx = ctx
        self.builder = Builder(module)
        # What propagation decided for a value whose producer now produces something else.
        self.decided: dict[Value, NamedMapping | None] = {}
        # One reshard per (value, target), shared by every consumer that needs it.
        self.reshards: dict[tuple[Value, NamedMapping], Value] = {}
        self.inserted = 0

    def run(self) -> None:
        for op in list(self.func.body):
            if op.parent is None:
                continue
            try:
                self.visit(op)
            except ShardcError as e:
                raise e.with_location(op.loc) from None

    # ----- per op ------------------------------------------------------------------------

    def visit(self, op: Operation) -> None:
        name = op.name
        if name == "sharding_group":
            op.erase()
        elif name == "propagation_barrier":
            op.result.replace_all_uses_with(op.operand(0))
            op.erase()
        elif name == "sharding_constraint":
            self.constraint_to_reshard(op)
        elif name == "reshard":
            self.visit_reshard(op)
        elif name == "return":
            # A result declared without a sharding is replicated (as in Shardy, and as every
            # caller reads it): a value this walk made sharded or unreduced is resharded.
            for i, t in enumerate(self.func.result_types):
                self.reshard_to_declared(op, i, getattr(t, "mapping", None),
                                         ReshardReason.RESULT)
        elif name == "call":
            self.visit_call(op)
        elif name in ("while", "case"):
            self.visit_region_op(op)
        elif name == "optimization_barrier":
            self.visit_barrier(op)
        elif name == "manual_computation":
            # Operands are resharded to in_shardings; results are out_shardings already.
            for i, target in enumerate(attr(op, "in_shardings")):
                self.reshard_operand(op, i, target, ReshardReason.MANUAL)
        elif name == "top_k":
            v = op.operand(0)
            mesh = self.mesh_of([v])
            if mesh is not None:
                layout = self.as_mesh(self.decided.get(v, v.mapping), v, mesh, op)
                shard_top_k(self, op, layout, mesh)
        elif is_global_collective(name):
            # A collective was written against its operand's decided sharding.
            v = op.operand(0)
            self.reshard_to_declared(op, 0, self.decided.get(v, v.mapping),
                                     ReshardReason.COLLECTIVE)
        else:
            rule = lowering_rule(op)
            if rule is None or needs_whole_operands(op):
                self.visit_without_rule(op)
            else:
                self.visit_with_rule(op, rule)

    def constraint_to_reshard(self, op: Operation) -> None:
        """`sharding_constraint` -> `reshard` (nothing when the operand is already laid out so)."""
        with self.builder.insertion_point(before=op):
            new = self.builder.reshard(op.operand(0), op.result.mapping)
        source = op.operand(0).mapping or replicated(op.result.mapping.mesh, op.result.type.rank)
        new.defining_op.cause = ReshardCause(  # type: ignore[union-attr]
            ReshardReason.CONSTRAINT, ((op, 0),), op.operand(0), source, op.result.mapping
        )
        new.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(new)
        op.erase()
        self.visit_reshard(new.defining_op)  # type: ignore[arg-type]

    def visit_reshard(self, op: Operation) -> None:
        source, target = self.actual(op.operand(0), op.result.mapping), op.result.mapping
        if (op.cause is None or isinstance(op.cause, GatheredWeight)) and (
                source is not None and target is not None):
            reason = ReshardReason.WRITTEN if op.cause is None else ReshardReason.GATHERED_WEIGHT
            op.cause = ReshardCause(reason, ((op, 0),), op.operand(0), source, target)
        if source is not None and target is not None and same_layout(source, target):
            op.result.replace_all_uses_with(op.operand(0))
            op.erase()

    def visit_call(self, op: Operation) -> None:
        callee = self.module.lookup_function(op.attr("callee").name)
        assert callee is not None, "the verifier checks callees exist"
        for i, arg in enumerate(callee.args):
            self.reshard_to_declared(op, i, arg.mapping, ReshardReason.CALL)
        for r, t in zip(op.results, callee.result_types, strict=True):
            produced = getattr(t, "mapping", None)
            if produced is None and r.mapping is not None:
                produced = replicated(r.mapping.mesh, r.type.rank)
            self.produce(r, produced)

    def visit_region_op(self, op: Operation) -> None:
        """`while`/`case`: operands laid out as the region functions' arguments (a case index
        replicated), results as the body's / branches' results (set by `close_regions`)."""
        sigs = region_signatures(self.module, op)
        assert sigs, "the verifier checks region functions exist"
        func, offset = sigs[-1]
        if op.name == "case" and op.operand(0).mapping is not None:
            self.reshard_operand(
                op, 0, replicated(op.operand(0).mapping.mesh, 0), ReshardReason.REGION
            )
        for i in range(offset, op.num_operands):
            self.reshard_to_declared(op, i, func.args[i - offset].mapping, ReshardReason.REGION)
        for r, t in zip(op.results, func.result_types, strict=True):
            self.produce(r, getattr(t, "mapping", None))

    def visit_barrier(self, op: Operation) -> None:
        """`optimization_barrier` is the identity on each value (a data-flow op): operand k is
        laid out as result k, and no value is gathered to pass through it."""
        for i, r in enumerate(op.results):
            self.produce(r, self.reshard_to_declared(op, i, r.mapping, ReshardReason.BARRIER))

    def visit_without_rule(self, op: Operation) -> None:
        """No rule: compute on replicated operands and produce replicated results. Ops with
        no operands (constant, iota) make any closed, reduced sharding locally: each device
        builds only its block (the spmd pass offsets an iota and cuts a constant)."""
        if op.name in LOCALLY_SHARDABLE_SOURCES:
            for r in op.results:
                m = r.mapping
                if m is not None:
                    self.produce(r, m.replace(unreduced=()) if m.unreduced else m)
            return
        for i, v in enumerate(op.operands):
            mapping = v.mapping
            if mapping is not None:
                self.reshard_operand(
                    op, i, replicated(mapping.mesh, v.type.rank), ReshardReason.NO_RULE
                )
        for r in op.results:
            if r.mapping is not None:
                self.produce(r, replicated(r.mapping.mesh, r.type.rank))

    def visit_with_rule(self, op: Operation, rule: OpShardingRule) -> None:
        values = [*op.operands, *op.results]
        mesh = self.mesh_of(values, op)
        if mesh is None:
            return  # nothing is sharded: every tensor is replicated (no mapping)
        decided = tuple([self.as_mesh(self.decided.get(v, v.mapping), v, mesh, op)
                         for v in values])
        if op.name in _READS_THE_OP or is_body_reduce(op):
            plan = self.plan(op, rule, decided, mesh)
            if plan is None:
                return
        else:
            # The plan is a function of what the key holds: memoized (a model's layers
            # repeat the same ops on the same layouts).
            unreduced_op = reduce_op_of(op)
            key = (op.name, decided, tuple([v.type.shape for v in values]), mesh, unreduced_op)
            plan = _plans.get(rule, key)
            if plan is MISSING:
                plan = self.plan(op, rule, decided, mesh, unreduced_op)
                _plans.put(rule, key, plan)
        axes, targets, produced = plan
        choice = None
        for i, target in enumerate(targets):
            if values[i].mapping is target:
                continue  # (laid out so already: most operands, as propagation decided them)
            if choice is None:
                choice = FactorChoice(rule, decided, axes)
            self.reshard_operand(op, i, target, ReshardReason.RULE, choice)
        for r, m in zip(op.results, produced, strict=True):
            self.produce(r, m)

    def plan(
        self,
        op: Operation,
        rule: OpShardingRule,
        decided: tuple[NamedMapping, ...],
        mesh: DeviceMesh,
        unreduced_op: ReduceOp | None = None,
    ) -> _Plan | None:
        """The axes per factor under which `op` computes locally, its operands' target
        layouts and its results' layouts; None when the op was rewritten here instead (a
        cumulative reduce_window, a body reduce over a sharded dim)."""
        n = op.num_operands
        sizes = [v.type.num_elements for v in (*op.operands, *op.results)]
        axes = choose_factor_axes(rule, decided[:n], decided[n:], sizes, mesh)
        if op.name == "sort":
            scalar_bodies.unshard_sort_dim(op, rule, axes)
        if op.name == "reshape":
            unshard_one_sided(rule, axes)
        unshard_unspellable(rule, axes, mesh)
        unshard_unlowerable(op, rule, axes)
        scan = cumulative_dim(op)
        if scan is not None and split_cumulative(self, op, decided[0], mesh, *scan):
            return None
        if is_body_reduce(op):
            sharded = scalar_bodies.sharded_reduced_dims(op, rule, axes, mesh)
            if sharded:
                scalar_bodies.split_body_reduce(self, op, rule, axes, mesh, sharded)
                return None
        reduction = [a for f in rule.factors_of_kind(FactorKind.REDUCTION) for a in axes[f]]
        if unreduced_op is None:
            unreduced_op = reduce_op_of(op)
        # (interned: the objects the values' types keep; ir/mapping.py)
        targets = tuple(interned(mapping_from_factors(tm, axes, rule, mesh))
                        for tm in rule.operands)
        produced = tuple(interned(mapping_from_factors(tm, axes, rule, mesh, reduction,
                                                       unreduced_op))
                         for tm in rule.results)
        return tuple(tuple(a) for a in axes), targets, produced

    # ----- helpers ---------------------------------------------------------------------------

    def mesh_of(self, values: Sequence[Value], op: Operation | None = None) -> DeviceMesh | None:
        """The op's mesh: the most common among its non-replicated shardings (Shardy's
        `getMostCommonMesh`), else any mesh one of its values names."""
        # (the common case first: every value on one mesh, which is then the answer)
        decided = self.decided
        first: DeviceMesh | None = None
        for v in values:
            m = decided.get(v, v.mapping) or v.mapping
            if m is None:
                continue
            if first is None:
                first = m.mesh
            elif m.mesh is not first and m.mesh.name != first.name:
                return self._most_common_mesh(values)
        return first

    def _most_common_mesh(self, values: Sequence[Value]) -> DeviceMesh | None:
        counts: dict[str, int] = {}
        meshes: dict[str, DeviceMesh] = {}
        for v in values:
            m = self.decided.get(v, v.mapping) or v.mapping
            if m is None:
                continue
            meshes.setdefault(m.mesh.name, m.mesh)
            if not m.is_fully_replicated:
                counts[m.mesh.name] = counts.get(m.mesh.name, 0) + 1
        if counts:
            return meshes[max(counts, key=lambda k: counts[k])]
        return next(iter(meshes.values()), None)

    def as_mesh(
        self, mapping: NamedMapping | None, v: Value, mesh: DeviceMesh, op: Operation
    ) -> NamedMapping:
        """`mapping` on `mesh` (no mapping, or replicated elsewhere: replicated here)."""
        if mapping is not None and mapping.mesh is mesh:
            return mapping
        if mapping is None or (mapping.mesh != mesh and mapping.is_fully_replicated):
            return replicated(mesh, v.type.rank)
        if mapping.mesh != mesh:
            raise PassError(
                f"'{op.name}' op mixes meshes @{mapping.mesh.name} ({v.label}) and "
                f"@{mesh.name}; shardc cannot move data between meshes, so put the op's sharded "
                "values on one mesh",
                op.loc,
            )
        return mapping

    def actual(self, v: Value, like: NamedMapping | None) -> NamedMapping | None:
        """The layout `v` has; a value without a mapping is replicated (made explicit here)."""
        if v.mapping is None and like is not None:
            v.set_mapping(replicated(like.mesh, v.type.rank))
        return v.mapping

    def produce(self, r: Value, produced: NamedMapping | None) -> None:
        """The op now produces `produced` for `r`; remember what propagation decided."""
        if r not in self.decided:
            self.decided[r] = r.mapping
        if produced is not None and (r.mapping is None or r.mapping != produced):
            r.set_mapping(produced)

    def reshard_to_declared(
        self, op: Operation, index: int, declared: NamedMapping | None, reason: ReshardReason
    ) -> NamedMapping | None:
        """Lay operand `index` of `op` out as a declared sharding (a function's argument or
        result, a region's, a collective's written operand); no declaration means replicated,
        on the operand's mesh. The operand's sharding is not what propagation decided when
        this walk changed its producer: an op whose result propagation left without a
        sharding may now produce it sharded or unreduced (a `scatter`-add whose updates are
        batch-sharded), and it must be made replicated here. Returns the target (None: the
        operand has no sharding, so it is replicated already)."""
        target = declared
        if target is None:
            mesh = self.mesh_of([op.operand(index)])
            target = None if mesh is None else replicated(mesh, op.operand(index).type.rank)
        if target is not None:
            self.reshard_operand(op, index, target, reason)
        return target

    def reshard_operand(
        self,
        op: Operation,
        index: int,
        target: NamedMapping,
        reason: ReshardReason = ReshardReason.SPLIT,
        choice: FactorChoice | None = None,
    ) -> None:
        """Make operand `index` of `op` laid out as `target`, sharing reshards between users;
        the reshard records why (`reason`, and for a ruled op its factors' `choice`)."""
        v = op.operand(index)
        source = self.actual(v, target)
        assert source is not None
        if same_layout(source, target) or (
            source.is_fully_replicated and target.is_fully_replicated
        ):
            return
        missing = [a for a in target.unreduced if a not in source.unreduced]
        if missing:
            raise PassError(
                f"'{op.name}' op needs {v.label} unreduced on {{{axes_text(missing)}}}, but it "
                f"is {source}; a reshard cannot create partial values (drop the unreduced axes "
                "from the declared sharding)",
                op.loc,
            )
        key = (v, target)
        existing = self.reshards.get(key)
        if existing is None or existing.defining_op is None or existing.defining_op.parent is None:
            with self.builder.insertion_point(before=op):
                existing = self.builder.reshard(v, target)
            self.reshards[key] = existing
            self.inserted += 1
            reshard = existing.defining_op
            assert reshard is not None
            reshard.cause = ReshardCause(reason, ((op, index),), v, source, target, choice)
        else:
            reshard = existing.defining_op
            if isinstance(reshard.cause, ReshardCause):
                reshard.cause = reshard.cause.shared_with(op, index)
        op.set_operand(index, existing)
