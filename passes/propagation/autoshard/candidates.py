"""Candidate strategies: the ways one op, or one function argument, can be laid out on the mesh.

An op's strategy gives each mesh axis (a whole axis of size > 1) to at most one factor of the
op's sharding rule, or to none; several axes on one factor are taken in mesh order. The factor
must be divisible by the product of its axes (no padded shards), and may be a pass-through or a
reduction factor: need-replication and permutation factors move data when sharded, and blocked
factors are left alone. Under a strategy every operand must arrive in one layout and every
result comes out in one layout, exactly the layouts `insert-reshards` gives a locally computed
op (`mapping_from_factors`): a sharded reduction factor leaves the result unreduced on its axes.

    dot_general [16, 64] x [64, 256] on ["dp"=2, "tp"=4]; rule ([i, k], [k, j])->([i, j])
      {i: dp, j: tp}  -> operands [{"dp"}, {}], [{}, {"tp"}]; result [{"dp"}, {"tp"}]
      {i: dp, k: tp}  -> operands [{"dp"}, {"tp"}], [{"tp"}, {}]; result [{"dp"}, {}]
                         unreduced={"tp"}

An argument's candidates are its layouts: each axis on one dim (dividing it) or on none.
User shardings constrain both: a closed dim must be exactly as written, an open dim must start
with what is written, and axes the user marked replicated are never used.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.placements import ReduceOp
from shardc.passes.propagation.factor_axes import mapping_from_factors
from shardc.passes.propagation.projection import project_tensor
from shardc.passes.propagation.rules.rule import FactorKind, OpShardingRule, factor_symbol

AxesPerFactor = tuple[tuple[AxisRef, ...], ...]

# Ops whose replicated computation is too expensive to allow (Alpa: no recomputed heavy ops).
HEAVY_OPS = frozenset({"dot_general", "dot", "convolution"})


@dataclass(frozen=True, slots=True)
class Strategy:
    """One way to compute an op locally (or to lay out an argument).

    `operands[i]` is the layout operand i must have, `results[j]` the layout result j comes out
    in (closed; unreduced on the axes of sharded reduction factors). `work` is the number of
    points of the op's iteration space one device computes. `axes[f]` the axes of factor f
    (empty for arguments and ops without a rule)."""

    operands: tuple[NamedMapping, ...]
    results: tuple[NamedMapping, ...]
    work: int = 0
    axes: AxesPerFactor = ()

    def text(self) -> str:
        """`{i={"dp"}, k={"tp"}}` (factor axes), or the layouts of an argument's strategy."""
        if not self.axes:
            return ", ".join(m.text() for m in self.results)
        parts = [
            f"{factor_symbol(f)}={{{', '.join(str(a) for a in ax)}}}"
            for f, ax in enumerate(self.axes)
            if ax
        ]
        return "{" + ", ".join(parts) + "}" if parts else "replicated"


def mesh_axes(mesh: DeviceMesh) -> tuple[AxisRef, ...]:
    """The axes a strategy may use: every whole axis of size > 1, in mesh order."""
    return tuple(AxisRef(n) for n in mesh.axis_names if mesh.axis_size(n) > 1)


def reduced(m: NamedMapping) -> NamedMapping:
    """`m` without unreduced axes: the layout a consumer sees once the partial sums are added."""
    return m.replace(unreduced=()) if m.unreduced else m


def closed_layout(mesh: DeviceMesh, dims: Sequence[Sequence[AxisRef]]) -> NamedMapping:
    return NamedMapping(mesh, tuple(DimSharding(tuple(d), True) for d in dims))


def local_points(sizes: Sequence[int], axes: AxesPerFactor, mesh: DeviceMesh) -> int:
    """Points of an iteration space of `sizes` one device holds when factor f is split by
    `axes[f]` (padded: ceil)."""
    return math.prod(
        -(-n // math.prod(a.axis_size(mesh) for a in ax)) for n, ax in zip(sizes, axes)
    )


# (outer, inner, fused) axis names: the outer axis goes only where the inner one goes, or
# nowhere; fused, always where the inner one goes (the two act as one axis)
Coupling = tuple[tuple[str, str, bool], ...]


def coupled_ok(pick: Sequence[int | None], axes: Sequence[AxisRef], coupled: Coupling) -> bool:
    if not coupled:
        return True
    at = {a.name: i for i, a in enumerate(axes)}
    for outer, inner, fused in coupled:
        if outer not in at:
            continue
        mine = pick[at[outer]]
        theirs = pick[at[inner]] if inner in at else None
        if (mine is not None or fused) and mine != theirs:
            return False
    return True


def _assignments(
    slots: int, choices: Sequence[int], axes: Sequence[AxisRef], coupled: Coupling = ()
) -> Iterator[tuple[tuple[AxisRef, ...], ...]]:
    """Every way to give each axis one of `choices` (slot indices) or nothing; axes sharing a
    slot keep mesh order; a coupled outer axis only where its inner axis goes."""
    for pick in itertools.product((None, *choices), repeat=len(axes)):
        if not coupled_ok(pick, axes, coupled):
            continue
        per: list[list[AxisRef]] = [[] for _ in range(slots)]
        for ax, slot in zip(axes, pick):
            if slot is not None:
                per[slot].append(ax)
        yield tuple(tuple(p) for p in per)


@functools.lru_cache(maxsize=1024)
def op_strategies(
    rule: OpShardingRule,
    mesh: DeviceMesh,
    reduce_op: ReduceOp = ReduceOp.SUM,
    *,
    heavy: bool = False,
    coupled: Coupling = (),
) -> tuple[Strategy, ...]:
    """Every strategy of an op with `rule` (the replicated one first). With `heavy`, only those
    that use every mesh axis, when there are any (Alpa's rule: a matmul is never computed
    redundantly by devices that could split it). `coupled`: axis pairs restricting the space
    (`Coupling`). Memoised: a deep model asks for few distinct rules."""
    axes = mesh_axes(mesh)
    sizes = rule.factor_sizes
    shardable = [
        f
        for f in range(rule.num_factors)
        if sizes[f] > 1
        and rule.kind(f) in (FactorKind.PASS_THROUGH, FactorKind.REDUCTION)
        and not rule.is_blocked(f)
    ]
    out: list[Strategy] = []
    for per in _assignments(rule.num_factors, shardable, axes, coupled):
        if any(sizes[f] % math.prod(a.axis_size(mesh) for a in ax) for f, ax in enumerate(per)):
            continue
        s = strategy_from_axes(rule, per, mesh, reduce_op)
        if s is not None:
            out.append(s)
    if heavy and axes:
        full = [s for s in out if sum(len(ax) for ax in s.axes) == len(axes)]
        if full:
            return tuple(full)
    return tuple(out)


def strategy_from_axes(
    rule: OpShardingRule, axes: AxesPerFactor, mesh: DeviceMesh, reduce_op: ReduceOp
) -> Strategy | None:
    """The strategy giving factor f the axes `axes[f]`, or None when some tensor cannot hold
    that sharding exactly (a factor after a partly sharded one in a merged dim)."""
    operands = tuple(mapping_from_factors(tm, list(axes), rule, mesh) for tm in rule.operands)
    reduction = [a for f in rule.factors_of_kind(FactorKind.REDUCTION) for a in axes[f]]
    results = tuple(
        mapping_from_factors(tm, list(axes), rule, mesh, reduction, reduce_op)
        for tm in rule.results
    )
    for m, tm in zip((*operands, *results), rule.mappings):
        back = project_tensor(m, tm, rule.factor_sizes, mesh)
        for f, fs in back.factors.items():
            if fs.overflow or fs.axes != axes[f]:
                return None
    return Strategy(operands, results, local_points(rule.factor_sizes, axes, mesh), axes)


def layouts(
    shape: Sequence[int], mesh: DeviceMesh, user: NamedMapping | None = None,
    coupled: Coupling = (),
) -> list[NamedMapping]:
    """Every closed layout of a `shape` tensor that `user` allows (replicated first): each axis
    on one dim it divides (with the dim's other axes) or on none."""
    axes = mesh_axes(mesh)
    if user is not None:  # no axis the user placed, marked replicated or unreduced (or part of)
        taken = {a.name for a in (*user.replicated, *user.unreduced, *user.used_axes())}
        axes = tuple(a for a in axes if a.name not in taken)
    out: list[NamedMapping] = []
    for per in _assignments(len(shape), range(len(shape)), axes, coupled):
        dims = per
        if user is not None:
            dims = tuple(
                (*d.axes, *extra) if d.is_open else (d.axes if not extra else None)
                for d, extra in zip(user.dims, per)
            )
            if any(d is None for d in dims):
                continue
        if any(
            extra and n % math.prod(a.axis_size(mesh) for a in d)
            for n, d, extra in zip(shape, dims, per)
        ):
            continue
        out.append(closed_layout(mesh, dims))
    return out


def allows(user: NamedMapping | None, layout: NamedMapping) -> bool:
    """Does `layout` keep the user's sharding: closed dims exactly, open dims as a prefix, no
    axis the user marked replicated?"""
    if user is None:
        return True
    banned = {a.name for a in user.replicated}
    for want, have in zip(user.dims, layout.dims):
        if want.is_closed and have.axes != want.axes:
            return False
        if have.axes[: len(want.axes)] != want.axes:
            return False
        if any(a.name in banned for a in have.axes):
            return False
    return True
