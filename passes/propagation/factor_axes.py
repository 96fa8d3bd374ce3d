"""Choosing factor shardings for insert-reshards (pure: a rule and shardings in, axes per factor
out), and the layout a tensor gets from them.

    choose_factor_axes(dot rule, [<[{"x"}, {}]>, <[{"y"}, {}]>], [<[{"x"}, {}]>], sizes, mesh)
      -> [("x",), (), ("y",)]    # i on "x", j unsharded, k on "y" (the larger source wins)

Follows Shardy's `findCommonAxes` (see `choose_factor_axes`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardc.ir.axis_refs import is_strict_prefix, overlaps, prefix_without_overlap_all
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.placements import ReduceOp
from shardc.passes.analysis.collectives.axes import merge_set
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
    dims_from_factors,
    project_tensor,
)
from shardc.passes.propagation.rules.memo import MISSING, RuleMemo
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

AxesPerFactor = list[tuple[AxisRef, ...]]

# Shardy's precedence of factor kinds when two candidates have equally large sources.
PRECEDENCE = {
    FactorKind.PASS_THROUGH: 3,
    FactorKind.REDUCTION: 2,
    FactorKind.PERMUTATION: 1,
    FactorKind.NEED_REPLICATION: 0,
}
# Factors that must stay unsharded for an op to compute without moving data.
UNSHARDABLE = (FactorKind.NEED_REPLICATION, FactorKind.PERMUTATION)


def axes_size(axes: Sequence[AxisRef], mesh: DeviceMesh) -> int:
    return math.prod(a.axis_size(mesh) for a in axes)


# A memo of `mapping_from_factors`, which insert-reshards and auto-shard's candidates call per
# operand and result. (`choose_factor_axes` has one caller, insert-reshards' `plan`, memoized
# whole on a key holding this one's.)
_mapping_memo = RuleMemo()


def mapping_from_factors(
    tensor_mapping: tuple[tuple[int, ...], ...],
    axes: AxesPerFactor,
    rule: OpShardingRule,
    mesh: DeviceMesh,
    unreduced: Sequence[AxisRef] = (),
    unreduced_op: ReduceOp = ReduceOp.SUM,
) -> NamedMapping:
    """The closed sharding a tensor gets when each of its factors f is sharded by `axes[f]`."""
    key = (tensor_mapping, tuple(axes), mesh, tuple(unreduced), unreduced_op)
    out = _mapping_memo.get(rule, key)
    if out is MISSING:
        out = _mapping_from_factors(tensor_mapping, axes, rule, mesh, unreduced, unreduced_op)
        _mapping_memo.put(rule, key, out)
    return out


def _mapping_from_factors(
    tensor_mapping: tuple[tuple[int, ...], ...],
    axes: AxesPerFactor,
    rule: OpShardingRule,
    mesh: DeviceMesh,
    unreduced: Sequence[AxisRef],
    unreduced_op: ReduceOp,
) -> NamedMapping:
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


def _compatible(rule: OpShardingRule, tensors: list[TensorFactorShardings]) -> AxesPerFactor | None:
    """The common factor shardings if every tensor already agrees (Shardy's
    `getCompatibleFactorShardings`, plus: permutation factors unsharded, no overflow, and no
    axis shared by two factors)."""
    common: dict[int, tuple[AxisRef, ...]] = {}
    for t in tensors:
        for f, fs in t.factors.items():
            if fs.overflow:
                return None
            if rule.kind(f) in UNSHARDABLE and fs.axes:
                return None
            if common.setdefault(f, fs.axes) != fs.axes:
                return None
    axes = [common.get(f, ()) for f in range(rule.num_factors)]
    if shared_axes(axes):
        return None
    return axes


def shared_axes(axes: AxesPerFactor) -> bool:
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
            if rule.kind(f) in UNSHARDABLE:
                continue
            for k in range(len(fs.axes), 0, -1):
                key = (f, fs.axes[:k])
                c = candidates.get(key)
                if c is None:
                    candidates[key] = _Candidate(
                        size, PRECEDENCE[rule.kind(f)], axes_size(fs.axes[:k], mesh)
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
                shards = math.prod(axes_size(assigned[g], mesh) for g in t.factors)
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
        if axes_size(picked, mesh) == rule.factor_sizes[f]:
            full.add(f)
        updated: dict[tuple[int, tuple[AxisRef, ...]], _Candidate] = {}
        for (g, ax), c in candidates.items():
            if g == f:
                if not is_strict_prefix(picked, ax):
                    continue
                c.sharding_size = axes_size(ax, mesh) // axes_size(picked, mesh)
            else:
                ax = _truncate(ax, picked)
                if not ax or ax == assigned[g] or not is_strict_prefix(assigned[g], ax):
                    continue
                c.sharding_size = axes_size(ax, mesh) // axes_size(assigned[g], mesh)
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
        sharding = math.prod(axes_size(fs.axes, mesh) for fs in t.factors.values())
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
    dropped = dropped_unit_factors(rule)
    axes = [
        () if rule.kind(f) in UNSHARDABLE or f in dropped else a for f, a in enumerate(axes)
    ]
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
            for f in uneven_in_merged_dims(tm, axes, rule, mesh):
                axes[f] = ()
                changed = True
    return axes


def dropped_unit_factors(rule: OpShardingRule) -> set[int]:
    """Size-1 factors that no result has (a reshape's `2x1 -> 2`). Sharding one pads it: only
    the first device along its axes holds the data, so it cannot be dropped locally."""
    in_results = {f for m in rule.results for dim in m for f in dim}
    return {
        f for f in range(rule.num_factors) if rule.factor_sizes[f] == 1 and f not in in_results
    }


def unshard_one_sided(rule: OpShardingRule, axes: AxesPerFactor) -> None:
    """A reshape between shapes that do not factor alike (`5x4 -> 2x10`) has factors only one
    side holds; a device cannot reshape its block into a block of such a factor, so they stay
    unsharded (size-1 factors excepted: a padded unit dim holds no data to move)."""
    operand = {f for m in rule.operands for dim in m for f in dim}
    result = {f for m in rule.results for dim in m for f in dim}
    for f in operand ^ result:
        if rule.factor_sizes[f] > 1:
            axes[f] = ()


def unshard_unspellable(rule: OpShardingRule, axes: AxesPerFactor, mesh: DeviceMesh) -> None:
    """In a dim of several factors, a factor after one that is not fully sharded cannot be
    spelled in that tensor's sharding (`dims_from_factors` drops it); unsharded everywhere, so
    no other tensor holds it sharded alone (`3x4x4 -> 4x12`: the minor 4 of the 12 is the whole
    last dim of the operand)."""
    changed = True
    while changed:
        changed = False
        for m in rule.mappings:
            for dim in m:
                full = True
                for f in dim:
                    if not full and axes[f]:
                        axes[f] = ()
                        changed = True
                    if (axes_size(axes[f], mesh) if axes[f] else 1) < rule.factor_sizes[f]:
                        full = False


def uneven_in_merged_dims(
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
            count = axes_size(axes[f], mesh) if axes[f] else 1
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
    if (
        axes is not None
        and not any(uneven_in_merged_dims(tm, axes, rule, mesh) for tm in rule.mappings)
        and not any(axes[f] for f in dropped_unit_factors(rule))
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
