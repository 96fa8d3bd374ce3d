"""`insert-reshards`: make every op compute locally; data movement becomes explicit `reshard`s.

    shardc opt model.mlir -p propagate,insert-reshards
    shardc opt model.mlir -p 'sdy-insert-explicit-reshards{enable-full-version=true}'

After propagation every value has a sharding, but an op's operands and results may disagree under
its factor rule (SEMANTICS.md §3, §5). For each op this pass picks one sharding per factor under
which the op computes locally, and inserts `reshard` ops on the operands that differ::

    %0 = dot_general %x, %w ... : tensor<8x16xf32, <@m, [{"x"}, {}]>>     # %w: [{"y"}, {}]
    # %x: [{"x"}, {}]  ->  k is sharded on "y" for %w only; the larger source wins
    %r = reshard %x : tensor<8x32xf32, <@m, [{"x"}, {"y"}]>>
    %0 = dot_general %r, %w ... : tensor<8x16xf32, <@m, [{"x"}, {}], unreduced={"y"}>>

A sharded reduction factor leaves the result `unreduced` on its axes. The reduction is not
inserted after the op (Shardy inserts an `all_reduce` there) but where a consumer needs a reduced
value: each consumer reshards the unreduced value straight to the layout it wants, so the reshard
planner picks `all_reduce`, `reduce_scatter` or anything cheaper (NOTE: differs from Shardy, which
would emit `all_reduce` then a second reshard). Likewise, when an op's result must differ from the
value's decided sharding, each consumer reshards from what the op produced to what it needs.

The invariant this pass guarantees (checked by `check_locally_computable`, relied on by `spmd`):
see that function's docstring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardc.ir.builder import Builder
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping, axes_text
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops import COLLECTIVE, attr, get_op_def
from shardc.ir.ops.control import region_signatures
from shardc.ir.ops.custom_call import custom_call_target
from shardc.ir.ops.manual import fill_all, sync_all
from shardc.ir.ops.scalar_bodies import sort_dimension
from shardc.ir.placements import ReduceOp
from shardc.ir.types import DistributedTensorType
from shardc.passes import scalar_bodies
from shardc.passes.collectives.axes import merge_set
from shardc.passes.collectives.steps import same_layout
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
    dims_from_factors,
    is_strict_prefix,
    overlaps,
    prefix_without_overlap_all,
    project_tensor,
)
from shardc.passes.rules.registry import rule_for
from shardc.passes.rules.rule import FactorKind, OpShardingRule

AxesPerFactor = list[tuple[AxisRef, ...]]

# Shardy's precedence of factor kinds when two candidates have equally large sources.
_PRECEDENCE = {
    FactorKind.PASS_THROUGH: 3,
    FactorKind.REDUCTION: 2,
    FactorKind.PERMUTATION: 1,
    FactorKind.NEED_REPLICATION: 0,
}
# Factors that must stay unsharded for an op to compute without moving data.
_UNSHARDABLE = (FactorKind.NEED_REPLICATION, FactorKind.PERMUTATION)
# Ops that only move or annotate data; they are not checked against a factor rule.
_DATA_MOVEMENT = ("reshard",)
_ANNOTATIONS = ("sharding_constraint", "sharding_group", "propagation_barrier")


# ----- small mapping helpers ------------------------------------------------------------------


def closed(mapping: NamedMapping | None) -> NamedMapping | None:
    """`mapping` with every dim closed and priorities dropped (open is treated as closed)."""
    if mapping is None or all(d.is_closed and d.priority is None for d in mapping.dims):
        return mapping
    return mapping.with_dims([DimSharding(d.axes, True) for d in mapping.dims])


def replicated(mesh: DeviceMesh, rank: int) -> NamedMapping:
    return NamedMapping.fully_replicated(mesh, rank)


def _axes_size(axes: Sequence[AxisRef], mesh: DeviceMesh) -> int:
    return math.prod(a.axis_size(mesh) for a in axes)


def reduce_op_of(op: Operation) -> ReduceOp:
    """How the partial results of `op`'s sharded reduction factors combine."""
    if op.name == "reduce" and "kind" in op.attributes:
        return ReduceOp.parse(op.attr("kind").word)
    return ReduceOp.SUM


# ----- choosing factor shardings (pure: rule + shardings in, axes per factor out) -------------


def mapping_from_factors(
    tensor_mapping: tuple[tuple[int, ...], ...],
    axes: AxesPerFactor,
    rule: OpShardingRule,
    mesh: DeviceMesh,
    unreduced: Sequence[AxisRef] = (),
    unreduced_op: ReduceOp = ReduceOp.SUM,
) -> NamedMapping:
    """The closed sharding a tensor gets when each of its factors f is sharded by `axes[f]`."""
    tensor = TensorFactorShardings(
        {f: FactorSharding(axes[f], True) for dim in tensor_mapping for f in dim}
    )
    dims = dims_from_factors(tensor, tensor_mapping, rule.factor_sizes, mesh)
    return NamedMapping(
        mesh,
        tuple(DimSharding(tuple(d), True) for d in dims),
        (),
        merge_set(unreduced, mesh) if unreduced else (),
        unreduced_op,
    )


# Ops without operands that compute any (reduced) sharding of their result locally.
_LOCALLY_SHARDABLE_SOURCES = ("constant", "iota")


def _compatible(rule: OpShardingRule, tensors: list[TensorFactorShardings]) -> AxesPerFactor | None:
    """The common factor shardings if every tensor already agrees (Shardy's
    `getCompatibleFactorShardings`, plus: permutation factors unsharded, no overflow, and no
    axis shared by two factors)."""
    common: dict[int, tuple[AxisRef, ...]] = {}
    for t in tensors:
        for f, fs in t.factors.items():
            if fs.overflow:
                return None
            if rule.kind(f) in _UNSHARDABLE and fs.axes:
                return None
            if common.setdefault(f, fs.axes) != fs.axes:
                return None
    axes = [common.get(f, ()) for f in range(rule.num_factors)]
    if _shared_axes(axes):
        return None
    return axes


def _shared_axes(axes: AxesPerFactor) -> bool:
    flat = [a for per_factor in axes for a in per_factor]
    return any(overlaps(a, b) for i, a in enumerate(flat) for b in flat[i + 1 :])


def _truncate(axes: tuple[AxisRef, ...], picked: Sequence[AxisRef]) -> tuple[AxisRef, ...]:
    """The longest prefix of `axes` that overlaps none of `picked` (the last axis may shrink to
    its non-overlapping major part)."""
    out: list[AxisRef] = []
    for a in axes:
        p = prefix_without_overlap_all(a, picked)
        if p is None:
            break
        out.append(p)
        if p != a:
            break
    return tuple(out)


@dataclass
class _Candidate:
    total_source_size: int
    precedence: int
    sharding_size: int


def _heuristic(
    rule: OpShardingRule,
    tensors: list[TensorFactorShardings],
    sizes: Sequence[int],
    mesh: DeviceMesh,
) -> AxesPerFactor:
    """Shardy's `findCommonAxesHeuristic`: repeatedly give the best (factor, axes) candidate its
    axes. Candidates are every prefix of every tensor's factor sharding, ranked by the total size
    of the tensors that already have them, then factor kind (pass-through, reduction), then the
    largest local source, then how much more they shard. Picked axes are removed from every
    other candidate, so no axis serves two factors."""
    n = rule.num_factors
    assigned: AxesPerFactor = [() for _ in range(n)]
    candidates: dict[tuple[int, tuple[AxisRef, ...]], _Candidate] = {}
    for t, size in zip(tensors, sizes, strict=True):
        for f, fs in t.factors.items():
            if rule.kind(f) in _UNSHARDABLE:
                continue
            for k in range(len(fs.axes), 0, -1):
                key = (f, fs.axes[:k])
                c = candidates.get(key)
                if c is None:
                    candidates[key] = _Candidate(
                        size, _PRECEDENCE[rule.kind(f)], _axes_size(fs.axes[:k], mesh)
                    )
                else:
                    c.total_source_size += size
    # A factor may only be sharded once the factors before it in every dim are full (else the
    # layout would be a strided view).
    depends: dict[int, set[int]] = {f: set() for f in range(n)}
    for m in rule.mappings:
        for dim in m:
            for before, after in zip(dim, dim[1:]):
                depends[after].add(before)
    full: set[int] = set()

    def local_size(f: int) -> int:
        best = 0
        for t, size in zip(tensors, sizes, strict=True):
            if f in t.factors:
                shards = math.prod(_axes_size(assigned[g], mesh) for g in t.factors)
                best = max(best, size // max(shards, 1))
        return best

    while True:
        ranked = [
            ((c.total_source_size, c.precedence, local_size(f), c.sharding_size, f, len(ax)), f, ax)
            for (f, ax), c in candidates.items()
            if depends[f] <= full
        ]
        if not ranked:
            return assigned
        _, f, picked = max(ranked, key=lambda r: r[0])
        assigned[f] = picked
        if _axes_size(picked, mesh) == rule.factor_sizes[f]:
            full.add(f)
        updated: dict[tuple[int, tuple[AxisRef, ...]], _Candidate] = {}
        for (g, ax), c in candidates.items():
            if g == f:
                if not is_strict_prefix(picked, ax):
                    continue
                c.sharding_size = _axes_size(ax, mesh) // _axes_size(picked, mesh)
            else:
                ax = _truncate(ax, picked)
                if not ax or ax == assigned[g] or not is_strict_prefix(assigned[g], ax):
                    continue
                c.sharding_size = _axes_size(ax, mesh) // _axes_size(assigned[g], mesh)
            old = updated.get((g, ax))
            if old is None or old.total_source_size < c.total_source_size:
                updated[(g, ax)] = c
        candidates = updated


def _unary(
    rule: OpShardingRule,
    tensors: list[TensorFactorShardings],
    sizes: Sequence[int],
    mesh: DeviceMesh,
) -> AxesPerFactor:
    """Shardy's `findCommonAxesOnUnaryOperation`: keep the preferred tensor's sharding (no
    sharded permutation factor, then larger, then more sharded); the other tensor's factors that
    the preferred one lacks keep what does not collide with it."""
    lhs, rhs = [i for i, m in enumerate(rule.mappings) if m]

    def preference(i: int) -> tuple[bool, int, int]:
        t = tensors[i]
        permuted = any(rule.is_permutation(f) and fs.axes for f, fs in t.factors.items())
        sharding = math.prod(_axes_size(fs.axes, mesh) for fs in t.factors.values())
        return (not permuted, sizes[i], sharding)

    best, other = (lhs, rhs) if preference(lhs) >= preference(rhs) else (rhs, lhs)
    axes: AxesPerFactor = [() for _ in range(rule.num_factors)]
    used: list[AxisRef] = []
    for f, fs in tensors[best].factors.items():
        axes[f] = fs.axes
        used.extend(fs.axes)
    for f, fs in tensors[other].factors.items():
        if f not in tensors[best].factors:
            axes[f] = _truncate(fs.axes, used)
    return axes


def _legalize(rule: OpShardingRule, axes: AxesPerFactor, mesh: DeviceMesh) -> AxesPerFactor:
    """Unshard what cannot be computed locally: permutation and need-replication factors, and any
    factor some tensor cannot hold exactly (overflow or a strided view)."""
    axes = [() if rule.kind(f) in _UNSHARDABLE else a for f, a in enumerate(axes)]
    changed = True
    while changed:
        changed = False
        for tm in rule.mappings:
            m = mapping_from_factors(tm, axes, rule, mesh)
            back = project_tensor(m, tm, rule.factor_sizes, mesh)
            for f, fs in back.factors.items():
                if axes[f] and (fs.axes != axes[f] or fs.overflow):
                    axes[f] = ()
                    changed = True
            for f in _uneven_in_merged_dims(tm, axes, rule, mesh):
                axes[f] = ()
                changed = True
    return axes


def _uneven_in_merged_dims(
    tm, axes: AxesPerFactor, rule: OpShardingRule, mesh: DeviceMesh
) -> list[int]:
    """Factors sharded unevenly inside a dim made of several factors (a reshape's merged dim).

    Padding a factor in the middle of a merged dim would interleave padding with data, so the
    dim's per-device blocks would not be the contiguous padded shards of the whole dim: such a
    factor must divide evenly (or stay unsharded)."""
    out = []
    for dim in tm:
        if sum(1 for f in dim if rule.factor_sizes[f] > 1) < 2:
            continue
        for f in dim:
            count = _axes_size(axes[f], mesh) if axes[f] else 1
            if count > 1 and rule.factor_sizes[f] % count:
                out.append(f)
    return out


def choose_factor_axes(
    rule: OpShardingRule,
    operands: Sequence[NamedMapping],
    results: Sequence[NamedMapping],
    tensor_sizes: Sequence[int],
    mesh: DeviceMesh,
) -> AxesPerFactor:
    """Axes per factor under which the op computes locally, moving as few bytes as possible.

    Shardy's `findCommonAxes`: the shardings as they are when they already agree; for a unary op
    (two non-scalar tensors, one factor per dim, no need-replication factor) the preferred
    tensor's; otherwise the greedy candidate heuristic. The result never shards a permutation or
    need-replication factor, never gives one axis to two factors, and never needs a strided or
    overflowing layout on any tensor.
    """
    projection = ShardingProjection.build(operands, results, rule, mesh)
    tensors = projection.tensors
    axes = _compatible(rule, tensors)
    if axes is not None and not any(
        _uneven_in_merged_dims(tm, axes, rule, mesh) for tm in rule.mappings
    ):
        return axes
    non_scalar = [m for m in rule.mappings if m]
    if (
        len(non_scalar) == 2
        and not rule.factors_of_kind(FactorKind.NEED_REPLICATION)
        and all(len(dim) == 1 for m in rule.mappings for dim in m)
    ):
        axes = _unary(rule, tensors, tensor_sizes, mesh)
    else:
        axes = _heuristic(rule, tensors, tensor_sizes, mesh)
    return _legalize(rule, axes, mesh)


# ----- the pass -------------------------------------------------------------------------------


@register_pass("insert-reshards")
@dataclass(frozen=True)
class InsertReshards(Pass):
    """Insert explicit reshards so that every op computes locally (Shardy's
    sdy-insert-explicit-reshards, full version)."""

    enable_full_version: bool = True

    def run(self, module: Module, ctx: PassContext) -> None:
        if not self.enable_full_version:
            raise PassError(
                "insert-reshards implements only Shardy's full version "
                "(enable-full-version=true); drop the option or set it to true"
            )
        _close_regions(module)
        _close_signatures(module)
        inserted = 0
        for func in list(module.functions.values()):
            rewriter = _FunctionRewriter(module, func, ctx)
            rewriter.run()
            inserted += rewriter.inserted
        stats = ctx.data.setdefault("insert_reshards", {"reshards": 0})
        stats["reshards"] += inserted


register_alias("sdy-insert-explicit-reshards", "insert-reshards")


def _close_regions(module: Module) -> None:
    """Give the region functions of every `while`/`case` the closed shardings of the values
    they stand for: a carried value k (result k, cond and body argument k, body result k) and
    a case result k (every branch's result k) have one sharding, as have a captured operand
    and its arguments; the loop condition is a replicated `tensor<i1>`. Where propagation left
    them unsharded, the operand's (a loop's operand k, a captured operand) or the first
    source's sharding is taken. The returns of the region functions are then
    resharded like any function's (a body result that differs from its carried sharding gets a
    reshard before the body's return, as in Shardy)."""

    def one(values: Sequence[Value], op: Operation | None = None) -> NamedMapping | None:
        """The first sharding of `values`; with `op`, they must not have two different ones."""
        found = [closed(v.mapping) for v in values if v.mapping is not None]
        if op is not None and any(not same_layout(m, found[0]) for m in found[1:]):
            texts = ", ".join(sorted({str(m) for m in found}))
            raise PassError(
                f"'{op.name}' op: the values that stand for one loop-carried or captured value "
                f"have different shardings ({texts}); give them one sharding (propagate does)",
                op.loc,
            )
        return found[0] if found else None

    def set_all(values: Sequence[Value], m: NamedMapping | None) -> None:
        if m is not None:
            for v in values:
                v.set_mapping(m)

    def set_result(func: Function, k: int, m: NamedMapping | None) -> None:
        t = func.result_types[k]
        func.result_types[k] = DistributedTensorType(t.shape, t.dtype, m)

    for op in list(module.walk()):
        if op.name not in ("while", "case"):
            continue
        sigs = region_signatures(module, op)
        # Captured operands and the arguments they feed.
        first_capture = len(op.results) if op.name == "while" else 1
        for j in range(first_capture, op.num_operands):
            args = [f.args[j - o] for f, o in sigs]
            set_all(args, one(args, op) or one([op.operand(j)]))
        # Carried values / case results and the region results that feed them.
        bodies = [f for f in sigs if op.name == "case" or f[0].name == op.attr("body").name]
        for k, r in enumerate(op.results):
            targets = [r]
            if op.name == "while":
                targets += [f.args[k] for f, _ in sigs]
            sources = [f.return_op.operand(k) for f, _ in bodies if f.return_op is not None]
            if op.name == "while":
                sources.insert(0, op.operand(k))
            m = one(targets, op) or one(sources)
            set_all(targets, m)
            for f, _ in bodies:
                set_result(f, k, m)
        if op.name == "while":
            cond = next(f for f, _ in sigs if f.name == op.attr("cond").name)
            mesh = next((v.mapping.mesh for v in (*op.operands, *op.results) if v.mapping), None)
            if mesh is not None:
                set_result(cond, 0, replicated(mesh, 0))


def _close_signatures(module: Module) -> None:
    """Close every sharding (open dims are treated as closed) and give function results without
    a declared sharding the one of the value they return."""
    fill_all(module)
    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(closed(a.mapping))
        for op in func.body:
            for r in op.results:
                if r.mapping is not None:
                    r.set_mapping(closed(r.mapping))
        ret = func.return_op
        for i, t in enumerate(func.result_types):
            mapping = getattr(t, "mapping", None)
            if mapping is None and ret is not None and i < ret.num_operands:
                mapping = ret.operand(i).mapping
            if mapping is not None:
                func.result_types[i] = DistributedTensorType(t.shape, t.dtype, closed(mapping))
    sync_all(module)


class _FunctionRewriter:
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
            for i, t in enumerate(self.func.result_types):
                target = getattr(t, "mapping", None)
                if target is not None:
                    self.reshard_operand(op, i, target)
        elif name == "call":
            self.visit_call(op)
        elif name in ("while", "case"):
            self.visit_region_op(op)
        elif name == "manual_computation":
            # Operands are resharded to in_shardings; results are out_shardings already.
            for i, target in enumerate(attr(op, "in_shardings")):
                self.reshard_operand(op, i, target)
        elif _is_global_collective(name):
            # A collective was written against its operand's decided sharding.
            v = op.operand(0)
            target = self.decided.get(v, v.mapping)
            if target is not None:
                self.reshard_operand(op, 0, target)
        else:
            rule = rule_for(op)
            if rule is None or _needs_whole_operands(op):
                self.visit_without_rule(op)
            else:
                self.visit_with_rule(op, rule)

    def constraint_to_reshard(self, op: Operation) -> None:
        """`sharding_constraint` -> `reshard` (nothing when the operand is already laid out so)."""
        with self.builder.insertion_point(before=op):
            new = self.builder.reshard(op.operand(0), op.result.mapping)
        new.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(new)
        op.erase()
        self.visit_reshard(new.defining_op)  # type: ignore[arg-type]

    def visit_reshard(self, op: Operation) -> None:
        source, target = self.actual(op.operand(0), op.result.mapping), op.result.mapping
        if source is not None and target is not None and same_layout(source, target):
            op.result.replace_all_uses_with(op.operand(0))
            op.erase()

    def visit_call(self, op: Operation) -> None:
        callee = self.module.lookup_function(op.attr("callee").name)
        assert callee is not None, "the verifier checks callees exist"
        for i, arg in enumerate(callee.args):
            target = arg.mapping
            if target is None:
                mesh = self.mesh_of([op.operand(i)])
                target = None if mesh is None else replicated(mesh, arg.type.rank)
            if target is not None:
                self.reshard_operand(op, i, target)
        for r, t in zip(op.results, callee.result_types, strict=True):
            produced = getattr(t, "mapping", None)
            if produced is None and r.mapping is not None:
                produced = replicated(r.mapping.mesh, r.type.rank)
            self.produce(r, produced)

    def visit_region_op(self, op: Operation) -> None:
        """`while`/`case`: operands laid out as the region functions' arguments (a case index
        replicated), results as the body's / branches' results (set by `_close_regions`)."""
        sigs = region_signatures(self.module, op)
        assert sigs, "the verifier checks region functions exist"
        func, offset = sigs[-1]
        if op.name == "case" and op.operand(0).mapping is not None:
            self.reshard_operand(op, 0, replicated(op.operand(0).mapping.mesh, 0))
        for i in range(offset, op.num_operands):
            target = func.args[i - offset].mapping
            if target is None:
                mesh = self.mesh_of([op.operand(i)])
                target = None if mesh is None else replicated(mesh, op.operand(i).type.rank)
            if target is not None:
                self.reshard_operand(op, i, target)
        for r, t in zip(op.results, func.result_types, strict=True):
            self.produce(r, getattr(t, "mapping", None))

    def visit_without_rule(self, op: Operation) -> None:
        """No rule: compute on replicated operands and produce replicated results. Ops with
        no operands (constant, iota) make any closed, reduced sharding locally: each device
        builds only its block (the spmd pass offsets an iota and cuts a constant)."""
        if op.name in _LOCALLY_SHARDABLE_SOURCES:
            for r in op.results:
                m = r.mapping
                if m is not None:
                    self.produce(r, m.replace(unreduced=()) if m.unreduced else m)
            return
        for i, v in enumerate(op.operands):
            mapping = v.mapping
            if mapping is not None:
                self.reshard_operand(op, i, replicated(mapping.mesh, v.type.rank))
        for r in op.results:
            if r.mapping is not None:
                self.produce(r, replicated(r.mapping.mesh, r.type.rank))

    def visit_with_rule(self, op: Operation, rule: OpShardingRule) -> None:
        values = [*op.operands, *op.results]
        mesh = self.mesh_of(values, op)
        if mesh is None:
            return  # nothing is sharded: every tensor is replicated (no mapping)
        decided = [self.as_mesh(self.decided.get(v, v.mapping), v, mesh, op) for v in values]
        n = op.num_operands
        sizes = [v.type.num_elements for v in values]
        axes = choose_factor_axes(rule, decided[:n], decided[n:], sizes, mesh)
        if op.name == "sort":
            scalar_bodies.unshard_sort_dim(op, rule, axes)
        if scalar_bodies.is_body_reduce(op):
            sharded = scalar_bodies.sharded_reduced_dims(op, rule, axes, mesh)
            if sharded:
                scalar_bodies.split_body_reduce(self, op, rule, axes, mesh, sharded)
                return
        reduction = [a for f in rule.factors_of_kind(FactorKind.REDUCTION) for a in axes[f]]
        for i, tm in enumerate(rule.operands):
            self.reshard_operand(op, i, mapping_from_factors(tm, axes, rule, mesh))
        unreduced_op = reduce_op_of(op)
        for r, tm in zip(op.results, rule.results, strict=True):
            self.produce(r, mapping_from_factors(tm, axes, rule, mesh, reduction, unreduced_op))

    # ----- helpers ---------------------------------------------------------------------------

    def mesh_of(self, values: Sequence[Value], op: Operation | None = None) -> DeviceMesh | None:
        """The op's mesh: the most common among its non-replicated shardings (Shardy's
        `getMostCommonMesh`), else any mesh one of its values names."""
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

    def reshard_operand(self, op: Operation, index: int, target: NamedMapping) -> None:
        """Make operand `index` of `op` laid out as `target`, sharing reshards between users."""
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
        op.set_operand(index, existing)


def _is_global_collective(name: str) -> bool:
    """A global collective (the per-device `spmd.*` ops of a manual body have factor rules)."""
    op_def = get_op_def(name)
    return op_def is not None and op_def.has(COLLECTIVE) and not name.startswith("spmd.")


# ----- the invariant ---------------------------------------------------------------------------


def _needs_whole_operands(op: Operation) -> bool:
    """A custom_call shardc runs (e.g. a Cholesky factorisation) reads whole matrices, whatever
    factors its JAX-given rule names: its operands and results are replicated."""
    target = custom_call_target(op)
    return target is not None and target.whole_operands


def check_locally_computable(module: Module) -> list[str]:
    """Every violation of the invariant `insert-reshards` establishes (empty: it holds).

    For every function, every op other than `reshard` and the collectives:

    - no operand is unreduced, and no `sharding_constraint`/`sharding_group`/
      `propagation_barrier` is left;
    - an op with a factor rule: all its sharded tensors are on one mesh (a value without a
      mapping is replicated); projected onto the rule, every factor has the same axes on every
      tensor that has it; permutation and need-replication factors are unsharded (and a
      `sort`'s sort dimension); no axis serves two factors; no tensor has overflow axes; every
      result is unreduced on exactly the axes of the sharded reduction factors (and nothing
      else);
    - an op without a rule: operands and results fully replicated;
    - `call`: operands laid out as the callee's arguments, results as the callee's results;
    - `manual_computation`: operands laid out as its in_shardings;
    - `return`: operands laid out as the function's declared result shardings.

    "Laid out as" compares dims and unreduced axes (`same_layout`), with no mapping meaning
    replicated.
    """
    problems: list[str] = []
    for func in module.functions.values():
        for op in func.body:
            where = f"@{func.name}: '{op.name}' op"
            if op.loc is not None and op.loc.line:
                where = f"{op.loc}: {where}"
            problems.extend(f"{where} {p}" for p in _op_problems(module, func, op))
    return problems


def _layout_matches(v: Value, want: NamedMapping | None) -> bool:
    have = v.mapping
    if have is None or want is None:
        other = have if want is None else want
        return other is None or other.is_fully_replicated
    return same_layout(have, want)


def _op_problems(module: Module, func: Function, op: Operation) -> list[str]:
    name = op.name
    if name in _DATA_MOVEMENT or _is_global_collective(name):
        return []
    if name in _ANNOTATIONS:
        return ["is left in the program"]
    out = [
        f"operand {i} is unreduced on {{{axes_text(v.mapping.unreduced)}}}"
        for i, v in enumerate(op.operands)
        if v.mapping is not None and v.mapping.unreduced
    ]
    if name == "return":
        for i, (v, t) in enumerate(zip(op.operands, func.result_types, strict=False)):
            if not _layout_matches(v, getattr(t, "mapping", None)):
                out.append(f"operand {i} is {v.mapping}, the function returns {t}")
        return out
    if name in ("while", "case"):
        return out + _region_problems(module, op)
    if name == "call":
        callee = module.lookup_function(op.attr("callee").name)
        if callee is None:
            return [*out, "calls an undefined function"]
        for i, (v, a) in enumerate(zip(op.operands, callee.args, strict=False)):
            if not _layout_matches(v, a.mapping):
                out.append(f"operand {i} is {v.mapping}, @{callee.name} takes {a.mapping}")
        for i, (r, t) in enumerate(zip(op.results, callee.result_types, strict=False)):
            if not _layout_matches(r, getattr(t, "mapping", None)):
                out.append(f"result {i} is {r.mapping}, @{callee.name} returns {t}")
        return out
    if name == "manual_computation":
        for i, (v, m) in enumerate(zip(op.operands, attr(op, "in_shardings"), strict=False)):
            if not _layout_matches(v, m):
                out.append(f"operand {i} is {v.mapping}, its in_sharding is {m}")
        return out
    rule = rule_for(op)
    values = [*op.operands, *op.results]
    if rule is None:
        if op.name in _LOCALLY_SHARDABLE_SOURCES:
            return [
                f"result is unreduced ({v.mapping})"
                for v in values
                if v.mapping and v.mapping.unreduced
            ]
        for v in values:
            if v.mapping is not None and not v.mapping.is_fully_replicated:
                out.append(f"has no sharding rule but {v.label} is {v.mapping}")
        return out
    meshes = {v.mapping.mesh for v in values if v.mapping is not None}
    sharded = {v.mapping.mesh for v in values if v.mapping and not v.mapping.is_fully_replicated}
    if len(sharded) > 1:
        return [*out, "has sharded tensors on several meshes"]
    if not meshes:
        return out
    mesh = next(iter(sharded or meshes))
    mappings = [
        v.mapping
        if v.mapping is not None and v.mapping.mesh == mesh
        else replicated(mesh, v.type.rank)
        for v in values
    ]
    n = op.num_operands
    projection = ShardingProjection.build(mappings[:n], mappings[n:], rule, mesh)
    common: dict[int, tuple[AxisRef, ...]] = {}
    for t_index, (t, tm) in enumerate(zip(projection.tensors, rule.mappings)):
        per_factor = [t.factors[f].axes if f in t.factors else () for f in range(rule.num_factors)]
        for f in _uneven_in_merged_dims(tm, per_factor, rule, mesh):
            out.append(f"tensor {t_index} shards factor {f} unevenly inside a merged dim")
        for f, fs in t.factors.items():
            if fs.overflow:
                out.append(f"tensor {t_index} has overflow axes {axes_text(fs.overflow)}")
            if rule.kind(f) in _UNSHARDABLE and fs.axes:
                out.append(f"shards {rule.kind(f).value} factor {f} on {axes_text(fs.axes)}")
            if common.setdefault(f, fs.axes) != fs.axes:
                out.append(
                    f"factor {f} is {{{axes_text(common[f])}}} on one tensor and "
                    f"{{{axes_text(fs.axes)}}} on tensor {t_index}"
                )
    axes = [common.get(f, ()) for f in range(rule.num_factors)]
    if _shared_axes(axes):
        out.append("uses one mesh axis for two factors")
    if name == "sort":
        d = sort_dimension(op)
        out.extend(f"sorts along dim {d}, sharded on {m}" for m in mappings if m.num_shards(d) > 1)
    reduction = merge_set(
        [a for f in rule.factors_of_kind(FactorKind.REDUCTION) for a in axes[f]], mesh
    )
    for r, m in zip(op.results, mappings[n:], strict=True):
        if tuple(m.unreduced) != tuple(reduction):
            out.append(
                f"{r.label} is unreduced on {{{axes_text(m.unreduced)}}}, but its sharded "
                f"reduction factors give {{{axes_text(reduction)}}}"
            )
    return out


def _region_problems(module: Module, op: Operation) -> list[str]:
    """`while`/`case`: operands laid out as every region function's arguments, results as the
    body's / every branch's results, the loop condition and the branch index replicated."""
    out = []
    for func, offset in region_signatures(module, op):
        for i, a in enumerate(func.args):
            v = op.operand(i + offset)
            if not _layout_matches(v, a.mapping):
                out.append(f"operand {i + offset} is {v.mapping}, @{func.name} takes {a.mapping}")
        is_cond = op.name == "while" and func.name == op.attr("cond").name
        if is_cond:
            m = getattr(func.result_types[0], "mapping", None)
            if m is not None and not m.is_fully_replicated:
                out.append(f"@{func.name} returns {m}; the loop condition must be replicated")
            continue
        for i, (r, t) in enumerate(zip(op.results, func.result_types, strict=False)):
            if not _layout_matches(r, getattr(t, "mapping", None)):
                out.append(f"result {i} is {r.mapping}, @{func.name} returns {t}")
    if op.name == "case" and not _layout_matches(op.operand(0), None):
        out.append(f"branch index is {op.operand(0).mapping}; it must be replicated")
    return out
