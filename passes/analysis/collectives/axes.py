"""Axis-ref arithmetic shared by the collective steps, the planner and the simulator.

An axis ref covers the interval `[pre, pre*size)` of its axis on the multiplicative line
(`"x"` of size 4 is `[1, 4)`, `"x":(2)2` is `[2, 4)`). To compare, pop or move sub-axes we cut
every ref at a common set of points (Shardy's `alignSubAxesByDecomposition`) so that any two
pieces are either equal or disjoint, work on those *atoms*, and merge adjacent atoms back into the
canonical spelling (`"x":(1)2, "x":(2)2` -> `"x"`) before building a `NamedMapping`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import canonical_axis_set
from shardc.ir.mesh import AxisRef, DeviceMesh

Cuts = dict[str, tuple[int, ...]]


def ref_interval(ref: AxisRef, mesh: DeviceMesh) -> tuple[int, int]:
    """`[lo, hi)` of `ref` on its axis: `"x":(2)2` -> (2, 4); `"x"` (size 4) -> (1, 4)."""
    lo = ref.pre
    return lo, lo * ref.axis_size(mesh)


def make_ref(name: str, lo: int, hi: int, mesh: DeviceMesh) -> AxisRef:
    """The canonical ref for `[lo, hi)` of axis `name` (the whole axis is spelled `"x"`)."""
    if lo == 1 and hi == mesh.axis_size(name):
        return AxisRef(name)
    return AxisRef(name, lo, hi // lo)


def cut_points(refs: Iterable[AxisRef], mesh: DeviceMesh) -> Cuts:
    """Per axis of `mesh`, the sorted boundaries of every ref in `refs` (always 1 and the size).

    Raises `ShardingError` when two refs of one axis do not nest (`"x":(1)2` and `"x":(1)3` on an
    axis of 6): there is then no common decomposition into sub-axes.
    """
    points: dict[str, set[int]] = {name: {1, size} for name, size in mesh.axes}
    for ref in refs:
        lo, hi = ref_interval(ref, mesh)
        points[ref.name].update((lo, hi))
    cuts: Cuts = {}
    for name, values in points.items():
        ordered = tuple(sorted(values))
        for a, b in zip(ordered, ordered[1:]):
            if b % a != 0:
                raise ShardingError(
                    f"sub-axes of axis {name!r} do not nest (boundaries {a} and {b}); "
                    "they have no common decomposition"
                )
        cuts[name] = ordered
    return cuts


def split_ref(ref: AxisRef, cuts: Cuts, mesh: DeviceMesh) -> list[AxisRef]:
    """`ref` cut at every boundary in `cuts` that falls inside it, major to minor."""
    lo, hi = ref_interval(ref, mesh)
    inner = [c for c in cuts[ref.name] if lo < c < hi]
    bounds = [lo, *inner, hi]
    return [make_ref(ref.name, a, b, mesh) for a, b in zip(bounds, bounds[1:])]


def split_refs(refs: Sequence[AxisRef], cuts: Cuts, mesh: DeviceMesh) -> list[AxisRef]:
    return [atom for ref in refs for atom in split_ref(ref, cuts, mesh)]


def mesh_atoms(cuts: Cuts, mesh: DeviceMesh) -> list[AxisRef]:
    """Every atom of every axis of size > 1, in mesh order then major to minor."""
    out: list[AxisRef] = []
    for name, size in mesh.axes:
        if size > 1:
            out.extend(split_ref(AxisRef(name), cuts, mesh))
    return out


def merge_refs(refs: Sequence[AxisRef], mesh: DeviceMesh) -> tuple[AxisRef, ...]:
    """Merge consecutive refs that continue each other (`"x":(1)2, "x":(2)2` -> `"x"`)."""
    out: list[tuple[str, int, int]] = []
    for ref in refs:
        lo, hi = ref_interval(ref, mesh)
        if out and out[-1][0] == ref.name and out[-1][2] == lo:
            out[-1] = (ref.name, out[-1][1], hi)
        else:
            out.append((ref.name, lo, hi))
    return tuple(make_ref(name, lo, hi, mesh) for name, lo, hi in out)


def merge_set(refs: Iterable[AxisRef], mesh: DeviceMesh) -> tuple[AxisRef, ...]:
    """Canonical form of an unordered set of refs (unreduced/replicated): sort, then merge
    (the form `NamedMapping` keeps its sets in, `shardc.ir.mapping.canonical_axis_set`)."""
    return canonical_axis_set(refs, mesh)


def product(refs: Iterable[AxisRef], mesh: DeviceMesh) -> int:
    n = 1
    for ref in refs:
        n *= ref.axis_size(mesh)
    return n
