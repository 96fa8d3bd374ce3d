"""Factor propagation: the pure core of sharding propagation through one op.

Shardings and a rule in, updated shardings out — no IR. Per factor of the op's rule:

1. *Compatible major axes*: the longest axis list every tensor's list is a prefix of
   (`["a"]` and `["a", "b"]` -> `["a", "b"]`; `["a", "b"]` and `["a", "c"]` -> `["a"]`). The
   direction decides which tensors may lengthen it: forward lets operands expand it and results
   only cut it, backward the reverse, both lets everyone expand it.
2. *Conflict cut*: stop at an axis another factor of a tensor already uses (or overflows into),
   that a tensor lists as replicated or unreduced, that a closed or overflowing factor would have
   to gain, or that would not divide a non-minor factor (it is cut to the dividing sub-axis).
3. *Expand*: every tensor whose axes for the factor are a strict prefix of the result gets it.

NOTE: as in Shardy, the direction only decides which tensors *drive* a factor; every tensor that
has the factor may then receive it, so forward propagation can also shard a sibling operand.

The strategy decides how conflicts between tensors are resolved (see `strategies.py`): `BASIC`
propagates only what every tensor agrees on; `AGGRESSIVE` (the default) resolves conflicts per
tensor, preferring factors whose source tensor is larger, then (element-wise ops) the more sharded
factor, then the lower source index, then the lower factor index; results are updated before
operands, and for element-wise ops an operand gets no more than a result already has.

API:

- `propagate_shardings(operands, results, rule, mesh, *, direction, strategy, ...)` — mappings in
  (None: unsharded value), `(new operand mappings, new result mappings)` out; unchanged entries are
  the very objects passed in.
- `propagate_factors(projection, rule, *, direction, strategy, mesh, ...) -> TensorUpdates` — the
  same on a `ShardingProjection`, which it updates in place (it is per-visit scratch state).
- `PropagationDirection` (FORWARD, BACKWARD, BOTH, NONE) with `union`/`intersection`; `direction`
  may also be a per-factor sequence or a `factor -> direction` function. Blocked factors never
  propagate; `only_pass_through=True` propagates only pass-through factors (op-priority stage 2).

Example (matmul, `([i, k], [k, j])->([i, j]) {i=8, j=16, k=32} reduction={k}`, mesh
`["a"=2, "b"=2]`)::

    lhs <@m, [{"a"}, {?}]>, rhs <@m, [{?}, {"b", ?}]>, result unsharded
      -> result <@m, [{"a", ?}, {"b", ?}]>
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.propagation.projection import (
    FactorSharding,
    PrefixStatus,
    ShardingProjection,
    TensorFactorShardings,
    axis_size,
    common_mesh,
    contains,
    prefix_of,
    prefix_status,
    prefix_without_overlap_all,
)
from shardc.passes.rules.rule import OpShardingRule


class PropagationDirection(enum.Enum):
    """Which tensors of an op may drive propagation through it."""

    NONE = 0
    FORWARD = 1  # operands -> results
    BACKWARD = 2  # results -> operands
    BOTH = 3

    def union(self, other: PropagationDirection) -> PropagationDirection:
        return PropagationDirection(self.value | other.value)

    def intersection(self, other: PropagationDirection) -> PropagationDirection:
        return PropagationDirection(self.value & other.value)


DirectionSpec = (
    PropagationDirection | Sequence[PropagationDirection] | Callable[[int], PropagationDirection]
)


@dataclass(slots=True)
class TensorUpdates:
    """Which operands and results a propagation step changed."""

    operands: list[bool]
    results: list[bool]

    def any(self) -> bool:
        return any(self.operands) or any(self.results)


@dataclass(frozen=True, slots=True)
class PropagationContext:
    """What a strategy needs besides the projection (built once per `propagate_factors` call)."""

    rule: OpShardingRule
    directions: tuple[PropagationDirection, ...]
    mesh: DeviceMesh | None
    conservative: bool
    elementwise: bool
    tensor_sizes: tuple[int, ...]


# A strategy updates the projection in place and returns which tensors changed.
StrategyFn = Callable[[ShardingProjection, PropagationContext], TensorUpdates]


@dataclass(frozen=True, slots=True)
class PropagationStrategy:
    """A named conflict-resolution strategy (a value, not a subclass)."""

    name: str
    run: StrategyFn

    def __str__(self) -> str:
        return self.name


def resolve_directions(
    rule: OpShardingRule, direction: DirectionSpec, only_pass_through: bool = False
) -> tuple[PropagationDirection, ...]:
    """The direction of every factor: blocked (and, if asked, non-pass-through) factors get NONE."""
    n = rule.num_factors
    if isinstance(direction, PropagationDirection):
        dirs = [direction] * n
    elif callable(direction):
        dirs = [direction(f) for f in range(n)]
    else:
        dirs = list(direction)
        if len(dirs) != n:
            raise ValueError(f"{len(dirs)} directions given for a rule with {n} factors")
    for f in rule.blocked:
        dirs[f] = PropagationDirection.NONE
    if only_pass_through:
        for f in range(n):
            if not rule.is_pass_through(f):
                dirs[f] = PropagationDirection.NONE
    return tuple(dirs)


def propagate_factors(
    projection: ShardingProjection,
    rule: OpShardingRule,
    *,
    direction: DirectionSpec = PropagationDirection.BOTH,
    strategy: PropagationStrategy | None = None,
    mesh: DeviceMesh | None = None,
    elementwise: bool = False,
    only_pass_through: bool = False,
    conservative: bool = False,
    tensor_sizes: Sequence[int] | None = None,
) -> TensorUpdates:
    """Propagate factor shardings within `projection` (updated in place); see the module doc.

    `mesh` gives axis sizes (None skips divisibility checks, as Shardy's unit tests do).
    `conservative` refuses to propagate sub-axes. `tensor_sizes` (operands then results) rank the
    source tensors of the aggressive strategy; default: the rule's factor-size products.
    """
    if strategy is None:
        from shardc.passes.propagation.strategies import AGGRESSIVE

        strategy = AGGRESSIVE
    sizes = tuple(tensor_sizes) if tensor_sizes is not None else rule.tensor_sizes()
    if len(sizes) != rule.num_operands + rule.num_results:
        raise ValueError(f"{len(sizes)} tensor sizes for an op with {len(rule.mappings)} tensors")
    context = PropagationContext(
        rule,
        resolve_directions(rule, direction, only_pass_through),
        mesh,
        conservative,
        elementwise,
        sizes,
    )
    return strategy.run(projection, context)


def propagate_shardings(
    operands: Sequence[NamedMapping | None],
    results: Sequence[NamedMapping | None],
    rule: OpShardingRule,
    mesh: DeviceMesh | None = None,
    *,
    direction: DirectionSpec = PropagationDirection.BOTH,
    strategy: PropagationStrategy | None = None,
    elementwise: bool = False,
    only_pass_through: bool = False,
    conservative: bool = False,
    tensor_sizes: Sequence[int] | None = None,
    closed_if_missing: bool = False,
) -> tuple[list[NamedMapping | None], list[NamedMapping | None]]:
    """Propagate through one op: mappings in, updated mappings out (unchanged ones as given).

    `mesh` defaults to the mappings' common mesh; with no mapping at all nothing can change.
    """
    mesh = mesh if mesh is not None else common_mesh((*operands, *results))
    if mesh is None:
        return list(operands), list(results)
    projection = ShardingProjection.build(
        operands, results, rule, mesh, closed_if_missing=closed_if_missing
    )
    updates = propagate_factors(
        projection,
        rule,
        direction=direction,
        strategy=strategy,
        mesh=mesh,
        elementwise=elementwise,
        only_pass_through=only_pass_through,
        conservative=conservative,
        tensor_sizes=tensor_sizes,
    )
    if not updates.any():
        return list(operands), list(results)
    return projection.to_mappings(
        operands,
        results,
        rule,
        mesh,
        changed_operands=updates.operands,
        changed_results=updates.results,
    )


# ----- building blocks shared by the strategies ---------------------------------------------

RemoveConflicts = Callable[[AxisRef, int], "AxisRef | None"]


def compatible_major_axes(
    projection: ShardingProjection, factor: int, direction: PropagationDirection
) -> list[AxisRef]:
    """Step 1: the longest axis list compatible with every tensor's axes for `factor`.

    Tensors on the driving side (operands for FORWARD, results for BACKWARD, all for BOTH) may
    lengthen it; the others can only cut it.
    """
    if direction is PropagationDirection.NONE:
        return []
    if direction is PropagationDirection.BACKWARD:
        first, second = projection.results, projection.operands
    else:
        first, second = projection.operands, projection.results
    result: list[AxisRef] = []
    can_expand = True
    for tensor in first:
        fs = tensor.factors.get(factor)
        if fs is not None:
            result, can_expand = _merge_compatible(result, fs.axes, can_expand)
    if direction is not PropagationDirection.BOTH:
        can_expand = False
    for tensor in second:
        fs = tensor.factors.get(factor)
        if fs is not None:
            result, can_expand = _merge_compatible(result, fs.axes, can_expand)
    return result


def _merge_compatible(
    old: Sequence[AxisRef], new: Sequence[AxisRef], can_expand: bool
) -> tuple[list[AxisRef], bool]:
    """Compatible major axes of `old` and `new`, and whether the result may still be expanded.

    `["a"]`+`["a","b"]` -> `["a","b"]`; `["a","b"]`+`["a","c"]` -> `["a"]` (no more expansion);
    `["a":(1)2]`+`["a":(1)4]` -> `["a":(1)4]`. With `can_expand` False the result is at most `old`.
    """
    if not new:
        return list(old), can_expand
    if not old:
        return (list(new), True) if can_expand else ([], False)
    result: list[AxisRef] = []
    n_old, n_new = len(old), len(new)
    i = 0
    while i < n_old and i < n_new:
        o, w = old[i], new[i]
        i += 1
        if o.name != w.name:
            return result, False
        if o == w:
            result.append(w)
            continue
        if prefix_of(w, o):
            # `w` is a major part of `o`: fine only if `new` ends here (it can grow into `o`).
            if i < n_new:
                result.append(w)
                return result, False
            result.append(o)
        elif prefix_of(o, w):
            # `o` is a major part of `w`: `old` may grow into `w` only if it ends here.
            if not can_expand or i < n_old:
                result.append(o)
                return result, False
            result.append(w)
        else:
            return result, False
    result.extend(old[i:])
    if can_expand:
        result.extend(new[i:])
    return result, can_expand


def truncate_conflicts(
    axes: list[AxisRef],
    remove_conflicts: RemoveConflicts,
    mesh: DeviceMesh | None,
    conservative: bool,
) -> list[AxisRef]:
    """Cut `axes` at the first axis `remove_conflicts` rejects or shortens (keeping the shortened
    prefix). `remove_conflicts(axis, prev_sharded_size)` sees the product of the sizes before it.
    """
    prev = 1
    for i, cur in enumerate(axes):
        new = remove_conflicts(cur, prev)
        if new is None or (conservative and new.size is not None):
            return axes[:i]
        if new != cur:
            return [*axes[:i], new]
        if mesh is not None:
            prev *= axis_size(new, mesh)
    return axes


def no_conflicts_across_factors(
    ref: AxisRef | None, factors: dict[int, FactorSharding], factor: int
) -> AxisRef | None:
    """The major part of `ref` that no other factor of the tensor uses or overflows into."""
    for other, fs in factors.items():
        if other == factor or ref is None:
            continue
        if fs.overflow:
            ref = prefix_without_overlap_all(ref, fs.overflow)
        if fs.axes and ref is not None:
            ref = prefix_without_overlap_all(ref, fs.axes)
    return ref


def no_conflicts_within_factor(
    ref: AxisRef,
    avoid: Sequence[AxisRef],
    fs: FactorSharding,
    prev_sharded_size: int,
    factor_size: int,
    mesh: DeviceMesh | None,
) -> AxisRef | None:
    """The major part of `ref` this tensor's factor `fs` can take (Shardy's within-factor cut).

    Drops replicated/unreduced axes (`avoid`). An axis the factor already has is fine. A new axis
    needs an open factor without overflow that is minor-most or that the axis divides (else the
    dividing sub-axis); otherwise only the factor's own last axis survives, if it is a prefix.
    """
    result = prefix_without_overlap_all(ref, avoid) if avoid else ref
    if result is None:
        return None
    axes = fs.axes
    for a in axes:
        if contains(a, result):
            return result
    if not fs.is_closed and not fs.overflow:
        if fs.is_minor_most or mesh is None:
            return result
        if factor_size % prev_sharded_size == 0:
            size = axis_size(result, mesh)
            g = math.gcd(factor_size // prev_sharded_size, size)
            if g == size:
                return result
            if g != 1:
                return AxisRef(result.name, result.pre, g)
    if axes and prefix_of(axes[-1], result):
        return axes[-1]
    return None


def expand_tensor(tensor: TensorFactorShardings, factor: int, new_axes: Sequence[AxisRef]) -> bool:
    """Set the factor's axes to `new_axes` if its current axes are a strict prefix of them."""
    fs = tensor.factors.get(factor)
    if fs is None or prefix_status(fs.axes, new_axes) is not PrefixStatus.STRICT_PREFIX:
        return False
    fs.axes = tuple(new_axes)
    return True
