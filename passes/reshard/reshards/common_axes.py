"""Shardy's choice of one sharding per factor for `sdy-insert-explicit-reshards` (its
`findCommonAxes`), on a projection built as Shardy builds it.

    common_axes(projection, dot rule, sizes, mesh)   # [("x",), (), ("y",)]: i on x, k on y

In order: the factor shardings every tensor already agrees on (need-replication factors
unsharded, no axis on two factors); for a unary op (two non-scalar tensors, one factor per dim,
no need-replication factor) the preferred tensor's (no sharded permutation factor, then larger,
then more sharded); otherwise a greedy pick of (factor, axes) candidates -- every prefix of every
tensor's factor sharding, ranked by the total size of the tensors that have it, then factor kind
(pass-through, reduction, permutation, need-replication), then how much it shards -- after which
the axes of need-replication factors move to batching factors with room.

Unlike shardc's own `factor_axes.choose_factor_axes` (insert-reshards), permutation factors may
stay sharded here: Shardy leaves them to later passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardc.ir.axis_refs import PrefixStatus, prefix_status
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives.sub_axes import (
    add_or_merge,
    overlaps,
    prefix_without_overlap,
    product,
    sort_key,
)
from shardc.passes.propagation.factor_axes import PRECEDENCE, AxesPerFactor
from shardc.passes.propagation.projection import ShardingProjection, TensorFactorShardings
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule

# ----- the projection as Shardy builds it -------------------------------------------------------


def shardy_projection(
    operands: Sequence[NamedMapping | None],
    results: Sequence[NamedMapping | None],
    rule: OpShardingRule,
    mesh: DeviceMesh,
) -> ShardingProjection:
    """`ShardingProjection.build(..., closed_if_missing=True)`, except that after a factor with
    overflow axes only the next factor of the dim is kept (closed, empty), as Shardy's builder
    stops there; later factors of that dim are absent from the tensor."""
    projection = ShardingProjection.build(operands, results, rule, mesh, closed_if_missing=True)
    for tensor, mapping in zip(projection.tensors, rule.mappings, strict=True):
        for dim in mapping:
            for i, f in enumerate(dim):
                if tensor.factors[f].overflow:
                    for g in dim[i + 2 :]:
                        del tensor.factors[g]
                    break
    return projection


def factor_axes(tensor: TensorFactorShardings, f: int) -> tuple[AxisRef, ...] | None:
    fs = tensor.factors.get(f)
    return None if fs is None else fs.axes


def compatible_factor_axes(projection: ShardingProjection, f: int) -> tuple[AxisRef, ...] | None:
    """The axes every tensor that has factor `f` shards it by (None if two differ)."""
    common: tuple[AxisRef, ...] | None = None
    for t in projection.tensors:
        axes = factor_axes(t, f)
        if axes is None:
            continue
        if common is None:
            common = axes
        elif common != axes:
            return None
    return common if common is not None else ()


def _compatible(projection: ShardingProjection, rule: OpShardingRule) -> AxesPerFactor | None:
    out: AxesPerFactor = [() for _ in range(rule.num_factors)]
    seen: list[AxisRef] = []
    for f in range(rule.num_factors):
        axes = compatible_factor_axes(projection, f)
        if axes is None:
            return None
        if rule.is_need_replication(f):
            if axes:
                return None
            continue
        if any(overlaps(a, b) for a in axes for b in seen):
            return None
        out[f] = axes
        seen.extend(axes)
    return out if rule.num_factors else None


# ----- the greedy heuristic ---------------------------------------------------------------------


def _strict_prefix(a: Sequence[AxisRef], b: Sequence[AxisRef]) -> bool:
    """Shardy's `AxisListRef::strictPrefixOf` (the last axis may be a sub-axis prefix)."""
    if not a:
        return bool(b)
    if len(a) > len(b):
        return False
    return prefix_status(a, b) is PrefixStatus.STRICT_PREFIX


def _truncate(axes: tuple[AxisRef, ...], picked: Sequence[AxisRef]) -> tuple[AxisRef, ...] | None:
    """`axes` cut before its first part that overlaps `picked` (None: no overlap at all)."""
    for i, a in enumerate(axes):
        p: AxisRef | None = a
        for b in picked:
            if p is None:
                break
            p = prefix_without_overlap(p, b)
        if p != a:
            return axes[:i] + ((p,) if p is not None else ())
    return None


@dataclass
class _Candidate:
    factor: int
    axes: tuple[AxisRef, ...]
    precedence: int
    size: int
    total: int = 0

    def key(self) -> tuple:
        return (
            self.total, self.precedence, self.size, self.factor, len(self.axes),
            tuple(sort_key(a) for a in self.axes),
        )


def _heuristic(
    projection: ShardingProjection,
    rule: OpShardingRule,
    sizes: Sequence[int],
    mesh: DeviceMesh,
) -> AxesPerFactor:
    n = rule.num_factors
    tensors = projection.tensors
    seen: set[tuple[int, tuple[AxisRef, ...]]] = set()
    candidates: list[_Candidate] = []
    for t in tensors:
        for f, fs in t.factors.items():
            axes = fs.axes
            while axes:
                if (f, axes) not in seen:
                    seen.add((f, axes))
                    candidates.append(
                        _Candidate(f, axes, PRECEDENCE[rule.kind(f)], product(axes, mesh))
                    )
                axes = axes[:-1]
    for t, size in zip(tensors, sizes, strict=True):
        for f, fs in t.factors.items():
            for c in candidates:
                if c.factor == f and (c.axes == fs.axes or _strict_prefix(c.axes, fs.axes)):
                    c.total += size
    # A factor may be sharded only once every factor right before it in some dim is full.
    depends: dict[int, set[int]] = {}
    for mapping in rule.mappings:
        for dim in mapping:
            for before, after in zip(dim, dim[1:]):
                depends.setdefault(after, set()).add(before)
    assigned: AxesPerFactor = [() for _ in range(n)]
    while candidates:
        valid = [c for c in candidates if not depends.get(c.factor)]
        if not valid:
            break
        best = max(valid, key=_Candidate.key)
        f, picked = best.factor, best.axes
        assigned[f] = picked
        if product(picked, mesh) == rule.factor_sizes[f]:
            for deps in depends.values():
                deps.discard(f)
        kept: list[_Candidate] = []
        for c in candidates:
            if c.factor == f:
                if not _strict_prefix(picked, c.axes):
                    continue
                c.size = product(c.axes, mesh) // product(picked, mesh)
            else:
                truncated = _truncate(c.axes, picked)
                if truncated is not None:
                    c.axes = truncated
                    if c.axes == assigned[c.factor]:
                        continue
                    c.size = product(c.axes, mesh) // product(assigned[c.factor], mesh)
                else:
                    c.size = product(c.axes, mesh)
            kept.append(c)
        candidates = kept
    return assigned


def _unary(
    projection: ShardingProjection,
    rule: OpShardingRule,
    sizes: Sequence[int],
    mesh: DeviceMesh,
) -> AxesPerFactor:
    tensors = projection.tensors
    lhs, rhs = [i for i, m in enumerate(rule.mappings) if m]

    def preference(i: int) -> tuple[bool, int, int]:
        t = tensors[i]
        permuted = any(rule.is_permutation(f) and fs.axes for f, fs in t.factors.items())
        sharding = product((a for fs in t.factors.values() for a in (*fs.axes, *fs.overflow)),
                           mesh)
        return (not permuted, sizes[i], sharding)

    best, other = (lhs, rhs) if preference(lhs) >= preference(rhs) else (rhs, lhs)
    out: AxesPerFactor = [() for _ in range(rule.num_factors)]
    used: list[AxisRef] = []
    for f, fs in tensors[best].factors.items():
        out[f] = fs.axes
        used.extend(fs.axes)
    for f, fs in tensors[other].factors.items():
        if f not in tensors[best].factors:
            out[f] = _truncate_all(fs.axes, used)
    return out


def _truncate_all(axes: Sequence[AxisRef], others: Sequence[AxisRef]) -> tuple[AxisRef, ...]:
    """Shardy's `truncateAxesByRemovingOverlaps`."""
    out: list[AxisRef] = []
    for a in axes:
        p: AxisRef | None = a
        for b in others:
            if p is None:
                break
            p = prefix_without_overlap(p, b)
        if p is None:
            break
        out.append(p)
        if p != a:
            break
    return tuple(out)


# ----- need-replication axes to batching factors ------------------------------------------------


def _in_all_non_scalar(rule: OpShardingRule, f: int) -> bool:
    return all(any(f in dim for dim in m) for m in rule.mappings if m)


def _to_batching_factors(rule: OpShardingRule, mesh: DeviceMesh, axes: AxesPerFactor) -> None:
    batching = [f for f in range(rule.num_factors)
                if rule.is_pass_through(f) and _in_all_non_scalar(rule, f)]
    for f in rule.factors_of_kind(FactorKind.NEED_REPLICATION):
        moving = list(axes[f])
        axes[f] = ()
        if not moving or not _in_all_non_scalar(rule, f):
            continue
        for b in batching:
            size = rule.factor_sizes[b]
            if size == 0:
                continue
            current = list(axes[b])
            sharded = product(current, mesh)
            if size % sharded:
                continue
            capacity = size // sharded
            while moving:
                axis_size = moving[0].axis_size(mesh)
                if capacity % axis_size:
                    break
                add_or_merge(current, moving.pop(0), mesh)
                capacity //= axis_size
            axes[b] = tuple(current)
            if not moving:
                break


def common_axes(
    projection: ShardingProjection,
    rule: OpShardingRule,
    sizes: Sequence[int],
    mesh: DeviceMesh,
) -> AxesPerFactor:
    """Shardy's `findCommonAxes` (see the module docstring). `sizes`: element counts of the
    operands then the results."""
    compatible = _compatible(projection, rule)
    if compatible is not None:
        return compatible
    non_scalar = [m for m in rule.mappings if m]
    if (
        len(non_scalar) == 2
        and not rule.factors_of_kind(FactorKind.NEED_REPLICATION)
        and all(len(dim) <= 1 for m in rule.mappings for dim in m)
    ):
        return _unary(projection, rule, sizes, mesh)
    axes = _heuristic(projection, rule, sizes, mesh)
    if rule.factors_of_kind(FactorKind.NEED_REPLICATION):
        _to_batching_factors(rule, mesh, axes)
    return axes
