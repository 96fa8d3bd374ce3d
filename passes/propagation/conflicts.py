"""The per-factor steps every strategy is built of (factor_propagation.py's steps 1-3):
compatible major axes, the conflict cuts within a factor and across factors, and expansion.

    compatible_major_axes: ["a"] and ["a", "b"] -> ["a", "b"]; ["a", "b"] and ["a", "c"] -> ["a"]
    truncate_conflicts:    cut the list at the first axis a conflict rejects or shortens
    expand_tensor:         a tensor whose axes are a strict prefix of the result gets it
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.ir.axis_refs import (
    PrefixStatus,
    axis_size,
    contains,
    prefix_of,
    prefix_status,
    prefix_without_overlap_all,
)
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
)

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
