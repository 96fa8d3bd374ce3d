"""Axis-ref algebra: Shardy's `AxisRefAttr` methods (`overlaps`, `contains`, `prefixOf`,
`canCoexist`, `merge`, ...), mesh-free where Shardy's are, and prefixes of axis lists.

An axis ref is a whole axis `"x"` or a sub-axis `"x":(pre)size` covering `[pre, pre*size)` of
its axis; propagation, explicit reshards and the collective planner all reason with these.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from shardc.ir.mesh import AxisRef, DeviceMesh


def axis_size(ref: AxisRef, mesh: DeviceMesh | None) -> int:
    """Size of a (sub-)axis; 1 for a whole axis when no mesh is given (tests without a mesh)."""
    if ref.size is not None:
        return ref.size
    return mesh.axis_size(ref.name) if mesh is not None else 1


def overlaps(a: AxisRef, b: AxisRef) -> bool:
    if a.name != b.name:
        return False
    if a.size is None or b.size is None:
        return True
    return a.pre < b.pre * b.size and b.pre < a.pre * a.size


def contains(a: AxisRef, b: AxisRef) -> bool:
    """`a` covers all of `b` (a whole axis contains all its sub-axes)."""
    if a.name != b.name:
        return False
    if a.size is None:
        return True
    if b.size is None:
        return False
    return a.pre <= b.pre and b.pre * b.size <= a.pre * a.size


def prefix_of(a: AxisRef, b: AxisRef) -> bool:
    """`a` is a (possibly equal) major part of `b`: `"x":(1)2` is a prefix of `"x"`."""
    return contains(b, a) and a.pre == b.pre


def can_coexist(a: AxisRef, b: AxisRef) -> bool:
    """Can `a` and `b` shard one tensor together (Shardy's `AxisRefAttr::canCoexist`)? Two
    sub-axes of one axis can only if each cut point of one divides or is divided by the other's:
    `"a":(1)2` and `"a":(3)2` of an axis of size 6 cannot."""
    if a.name != b.name or a.size is None or b.size is None:
        return True
    lo_pre, hi_pre = sorted((a.pre, b.pre))
    lo_next, hi_next = sorted((a.pre * a.size, b.pre * b.size))
    if lo_next > hi_pre:  # they overlap
        return lo_next % hi_pre == 0 and hi_pre % lo_pre == 0 and hi_next % lo_next == 0
    return hi_pre % lo_next == 0


def prefix_without_overlap(a: AxisRef, b: AxisRef) -> AxisRef | None:
    """The largest major part of `a` that does not overlap `b` (None if there is none, or if
    the two cannot coexist)."""
    if not can_coexist(a, b):
        return None
    if not overlaps(a, b):
        return a
    if a.pre >= b.pre:
        return None
    return AxisRef(a.name, a.pre, b.pre // a.pre)


def prefix_without_overlap_all(a: AxisRef | None, others: Sequence[AxisRef]) -> AxisRef | None:
    for b in others:
        if a is None:
            return None
        a = prefix_without_overlap(a, b)
    return a


def can_merge(a: AxisRef, b: AxisRef) -> bool:
    return (
        a.name == b.name and a.size is not None and b.size is not None and a.pre * a.size == b.pre
    )


def merge(a: AxisRef, b: AxisRef, mesh: DeviceMesh | None) -> AxisRef:
    size = a.size * b.size  # type: ignore[operator]
    if a.pre == 1 and mesh is not None and size == mesh.axis_size(a.name):
        return AxisRef(a.name)
    return AxisRef(a.name, a.pre, size)


def add_or_merge(axes: list[AxisRef], ref: AxisRef, mesh: DeviceMesh | None) -> None:
    """Append `ref`, merging it into the last axis when they are consecutive sub-axes."""
    if axes and can_merge(axes[-1], ref):
        axes[-1] = merge(axes[-1], ref, mesh)
    else:
        axes.append(ref)


class PrefixStatus(Enum):
    EQUAL = 0
    STRICT_PREFIX = 1
    NOT_A_PREFIX = 2


def prefix_status(first: Sequence[AxisRef], second: Sequence[AxisRef]) -> PrefixStatus:
    """Whether `first` is a prefix of `second` (its last axis may be a sub-axis prefix)."""
    n = len(first)
    if n == 0:
        return PrefixStatus.EQUAL if not second else PrefixStatus.STRICT_PREFIX
    if n > len(second):
        return PrefixStatus.NOT_A_PREFIX
    for i in range(n - 1):
        if first[i] != second[i]:
            return PrefixStatus.NOT_A_PREFIX
    if n == len(second) and first[-1] == second[-1]:
        return PrefixStatus.EQUAL
    if prefix_of(first[-1], second[n - 1]):
        return PrefixStatus.STRICT_PREFIX
    return PrefixStatus.NOT_A_PREFIX


def is_strict_prefix(first: Sequence[AxisRef], second: Sequence[AxisRef]) -> bool:
    if len(first) > len(second):
        return False
    if not first:
        return len(second) > 0
    return prefix_status(first, second) is PrefixStatus.STRICT_PREFIX
