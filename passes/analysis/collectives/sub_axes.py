"""Sub-axis algebra as Shardy defines it on `AxisRefAttr`, for the passes that reproduce Shardy.

An axis ref covers `[pre, next_pre)` of its axis (`"x"` of size 8 is `[1, 8)`, `"x":(2)2` is
`[2, 4)`). Two refs of one axis *can coexist* when their union cuts the axis into valid sub-axes
(each boundary divides the next). `align_by_decomposition` cuts refs at the boundaries of other
refs, so that afterwards any two refs either are equal or do not overlap:

    align_by_decomposition([["x"]], [["x":(2)2]])   # x of size 8
      -> [["x":(1)2, "x":(2)2, "x":(4)2]], [["x":(2)2]]

Refs are ordered as Shardy orders them (`sort_key`): by name, then a whole axis sits after its
sub-axes of pre-size 1 and before the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shardc.ir.axis_refs import contains, overlaps
from shardc.ir.mesh import AxisRef, DeviceMesh

_WHOLE = 1 << 62  # sort position of a whole axis among its sub-axes of pre-size 1


def sort_key(ref: AxisRef) -> tuple[str, int, int]:
    """Shardy's `AxisRefAttr::operator<` as a key."""
    if ref.size is None:
        return (ref.name, 1, _WHOLE)
    return (ref.name, ref.pre, ref.size)


def size_of(ref: AxisRef, mesh: DeviceMesh) -> int:
    return ref.axis_size(mesh)


def next_pre(ref: AxisRef, mesh: DeviceMesh) -> int:
    """`pre * size` (the whole axis: its size)."""
    return ref.pre * ref.axis_size(mesh)


def product(refs: Iterable[AxisRef], mesh: DeviceMesh) -> int:
    out = 1
    for r in refs:
        out *= r.axis_size(mesh)
    return out


def sub_axis(name: str, pre: int, size: int, mesh: DeviceMesh) -> AxisRef:
    """`"name":(pre)size`, spelled as the whole axis when it is one."""
    if pre == 1 and size == mesh.axis_size(name):
        return AxisRef(name)
    return AxisRef(name, pre, size)


def _coexist(lo_min: int, lo_max: int, hi_min: int, hi_max: int) -> bool:
    if hi_min > lo_max:  # they overlap: both the overlap and the rest must be valid sub-axes
        return hi_min % lo_max == 0 and lo_max % lo_min == 0 and hi_max % hi_min == 0
    return lo_max % hi_min == 0


def can_coexist(a: AxisRef, b: AxisRef) -> bool:
    if a.name != b.name or a.size is None or b.size is None:
        return True
    return _coexist(
        min(a.pre, b.pre), max(a.pre, b.pre),
        min(a.pre * a.size, b.pre * b.size), max(a.pre * a.size, b.pre * b.size),
    )


def overlap(a: AxisRef, b: AxisRef) -> AxisRef | None:
    """The part `a` and `b` share (None when disjoint or they cannot coexist)."""
    if a.name != b.name:
        return None
    if a.size is None:
        return b
    if b.size is None:
        return a
    lo_min, lo_max = min(a.pre, b.pre), max(a.pre, b.pre)
    hi_min, hi_max = min(a.pre * a.size, b.pre * b.size), max(a.pre * a.size, b.pre * b.size)
    if hi_min <= lo_max or not _coexist(lo_min, lo_max, hi_min, hi_max):
        return None
    return AxisRef(a.name, lo_max, hi_min // lo_max)


def prefix_without_overlap(a: AxisRef, b: AxisRef) -> AxisRef | None:
    """The major part of `a` before `b` (`a` itself when they do not overlap)."""
    if not can_coexist(a, b):
        return None
    if not overlaps(a, b):
        return a
    if a.pre >= b.pre:
        return None
    return AxisRef(a.name, a.pre, b.pre // a.pre)


def suffix_without_overlap(a: AxisRef, b: AxisRef, mesh: DeviceMesh) -> AxisRef | None:
    """The minor part of `a` after `b` (`a` itself when they do not overlap)."""
    if not can_coexist(a, b):
        return None
    if not overlaps(a, b):
        return a
    a_hi, b_hi = next_pre(a, mesh), next_pre(b, mesh)
    if a_hi <= b_hi:
        return None
    return AxisRef(a.name, b_hi, a_hi // b_hi)


def first_overlapping(ref: AxisRef, ordered: Sequence[AxisRef]) -> int:
    """Index of the first ref of `ordered` (sorted by `sort_key`, pairwise disjoint) that
    overlaps `ref`, or `len(ordered)`."""
    key = sort_key(ref)
    lo, hi = 0, len(ordered)
    while lo < hi:  # lower bound
        mid = (lo + hi) // 2
        if sort_key(ordered[mid]) < key:
            lo = mid + 1
        else:
            hi = mid
    if lo > 0 and overlaps(ref, ordered[lo - 1]):
        return lo - 1
    if lo < len(ordered) and overlaps(ref, ordered[lo]):
        return lo
    return len(ordered)


def align_list(axes: list[AxisRef], ordered_others: Sequence[AxisRef], mesh: DeviceMesh) -> None:
    """Cut every ref of `axes` (in place) that overlaps, without containing it, a ref of
    `ordered_others` into its non-overlapping prefix, the overlap and the suffix."""
    i = 0
    while i < len(axes):
        axis = axes[i]
        j = first_overlapping(axis, ordered_others)
        advanced = False
        while (
            j < len(ordered_others)
            and can_coexist(ordered_others[j], axis)
            and not contains(ordered_others[j], axis)
            and overlaps(ordered_others[j], axis)
        ):
            other = ordered_others[j]
            del axes[i]
            prefix = prefix_without_overlap(axis, other)
            if prefix is not None:
                axes.insert(i, prefix)
                i += 1
            shared = overlap(axis, other)
            assert shared is not None
            axes.insert(i, shared)
            i += 1
            suffix = suffix_without_overlap(axis, other, mesh)
            if suffix is None:
                advanced = True
                break
            axes.insert(i, suffix)
            axis = suffix
            j += 1
        if not advanced:
            i += 1


def ordered(axes_per_dim: Iterable[Iterable[AxisRef]]) -> list[AxisRef]:
    return sorted((a for axes in axes_per_dim for a in axes), key=sort_key)


def align_by_decomposition(
    in_axes: list[list[AxisRef]], out_axes: list[list[AxisRef]], mesh: DeviceMesh
) -> None:
    """Align the refs of `in_axes` and `out_axes` with each other (both in place)."""
    ordered_in, ordered_out = ordered(in_axes), ordered(out_axes)
    align_per_dim(in_axes, ordered_out, mesh)
    align_per_dim(out_axes, ordered_in, mesh)


def align_per_dim(
    axes_per_dim: list[list[AxisRef]], ordered_others: Sequence[AxisRef], mesh: DeviceMesh
) -> None:
    if not ordered_others:
        return
    for axes in axes_per_dim:
        align_list(axes, ordered_others, mesh)


def can_merge(a: AxisRef, b: AxisRef) -> bool:
    return a.name == b.name and a.size is not None and b.size is not None and (
        a.pre * a.size == b.pre
    )


def add_or_merge(axes: list[AxisRef], ref: AxisRef, mesh: DeviceMesh) -> None:
    """Append `ref`, merged into the last ref when they are consecutive sub-axes."""
    if axes and can_merge(axes[-1], ref):
        last = axes[-1]
        axes[-1] = sub_axis(last.name, last.pre, last.size * ref.size, mesh)  # type: ignore[operator]
    else:
        axes.append(ref)


def set_difference(a: Sequence[AxisRef], b: Sequence[AxisRef], mesh: DeviceMesh) -> list[AxisRef]:
    """Shardy's `getAxisSetDiff`: the parts of the refs of `a` (in `a`'s order) that no ref of
    `b` covers."""
    if not a or list(a) == list(b):
        return []
    if not b:
        return list(a)
    others = sorted(b, key=sort_key)
    out: list[AxisRef] = []
    for ref in a:
        cur: AxisRef | None = ref
        while cur is not None:
            j = first_overlapping(cur, others)
            if j == len(others):
                out.append(cur)
                break
            prefix = prefix_without_overlap(cur, others[j])
            if prefix is not None:
                out.append(prefix)
            cur = suffix_without_overlap(cur, others[j], mesh)
    return out


def sort_and_merge(refs: Iterable[AxisRef], mesh: DeviceMesh) -> list[AxisRef]:
    """Shardy's `sortAndMergeAxes`: mesh axis order, then major to minor, consecutive sub-axes
    merged."""
    keyed = sorted(refs, key=lambda r: (mesh.axis_index(r.name), sort_key(r)))
    out: list[AxisRef] = []
    for r in keyed:
        add_or_merge(out, r, mesh)
    return out
