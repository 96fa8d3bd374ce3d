"""Which devices take part together in a collective.

- `device_groups(mesh, axes)`: the groups of an all_gather/all_slice/all_to_all/all_reduce/
  reduce_scatter over `axes` -- devices that differ only in their coordinates along `axes`.
- `permute_sources(src, dst)`: the (source, target) device pairs of a collective_permute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations, permutations
from typing import Any

from shardc.ir.bounded import BoundedTable
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.passes.analysis.collectives.axes import cut_points, ref_interval, split_refs


def device_groups(mesh: DeviceMesh, axes: Sequence[AxisRef]) -> list[list[int]]:
    """The device ids that take part together in a collective over `axes`.

    A group is every device that differs from the others only in its coordinates along `axes`;
    members are ordered by those coordinates, the first listed axis major (Shardy's replica
    groups). On `["x"=2, "y"=4, "z"=2]`, axes `("y", "x")` give `[[0, 8, 2, 10, 4, 12, 6, 14],
    [1, 9, 3, 11, 5, 13, 7, 15]]`. Groups are sorted by their first member's mesh position.
    """
    key = (mesh, tuple(axes))
    known = _GROUPS.get(key)
    if known is None:
        known = _GROUPS.put(key, tuple(tuple(g) for g in _device_groups(mesh, key[1])))
    return [list(g) for g in known]


# `device_groups` per (mesh, axes): a model's collectives are over a few axis sets, and each
# collective the spmd pass lowers asks (873 asks, ~30 us each, on a 32-layer Llama step).
_GROUPS = BoundedTable(1 << 12)  # (mesh, axes) -> groups as tuples


def _device_groups(mesh: DeviceMesh, axes: Sequence[AxisRef]) -> list[list[int]]:
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for p in range(mesh.num_devices):
        coords = mesh.coords(p)
        rest = dict(coords)
        index = 0
        for ref in axes:
            c = ref.coordinate(mesh, coords[ref.name])
            index = index * ref.axis_size(mesh) + c
            # Zero this ref's part of the axis coordinate: what remains names the group.
            lo, hi = ref_interval(ref, mesh)
            stride = mesh.axis_size(ref.name) // hi
            rest[ref.name] -= c * stride
        key = tuple(rest[name] for name in mesh.axis_names)
        groups.setdefault(key, []).append((index, p))
    ordered = sorted(groups.values(), key=lambda members: min(p for _, p in members))
    return [[mesh.device_id(p) for _, p in sorted(members)] for members in ordered]


def axes_for_groups(mesh: DeviceMesh, candidates: Sequence[AxisRef],
                    groups: Sequence[Sequence[int]], *,
                    ordered: bool) -> tuple[AxisRef, ...] | None:
    """The axes among `candidates` whose collective groups (`device_groups`) are `groups`, or
    None. Unordered: as sets of sets, the axes in `candidates`' order (shard_map's psum names
    them so). Ordered: member for member (an all_gather's concatenation order), the axes tried
    in every order; the groups themselves may come in any order."""
    if ordered:
        want: Any = sorted(tuple(g) for g in groups)
        tries: Any = permutations
    else:
        want, tries = {frozenset(g) for g in groups}, combinations
    size = len(groups[0]) if groups else 0
    for r in range(1, len(candidates) + 1):
        for chosen in tries(candidates, r):
            if math.prod(a.axis_size(mesh) for a in chosen) != size:
                continue
            got = device_groups(mesh, chosen)
            if (sorted(map(tuple, got)) if ordered else {frozenset(g) for g in got}) == want:
                return tuple(chosen)
    return None


def permute_sources(src: NamedMapping, dst: NamedMapping) -> list[tuple[int, int]]:
    """For every device t, the device s whose `src` block is t's `dst` block: `(s, t)` pairs.

    A bijection: s holds the shard t needs (its coordinates on the axes sharding `src` follow
    from t's shard indices under `dst`), the same unreduced coordinates as t (so partial sums
    stay consistent), and its coordinates on the axes only `dst` uses come from t's coordinates on
    the axes only `src` uses, matched by linear index (equal sizes: the shard counts are equal).
    """
    mesh = src.mesh
    cuts = cut_points([*src.used_axes(), *dst.used_axes(), *src.unreduced], mesh)
    s_dims = [split_refs(d.axes, cuts, mesh) for d in src.dims]
    d_dims = [split_refs(d.axes, cuts, mesh) for d in dst.dims]
    s_used = [a for d in s_dims for a in d]
    d_used = [a for d in d_dims for a in d]
    all_atoms = [a for name, size in mesh.axes if size > 1
                 for a in split_refs([AxisRef(name)], cuts, mesh)]
    only_src = [a for a in all_atoms if a in s_used and a not in d_used]
    only_dst = [a for a in all_atoms if a in d_used and a not in s_used]

    def coord(atom: AxisRef, coords: dict[str, int]) -> int:
        return atom.coordinate(mesh, coords[atom.name])

    out: list[tuple[int, int]] = []
    for t in range(mesh.num_devices):
        tc = mesh.coords(t)
        atom_coord: dict[AxisRef, int] = {}
        for a in all_atoms:
            if a not in s_used and a not in d_used:
                atom_coord[a] = coord(a, tc)  # unreduced and untouched axes: keep
        for sd, dd in zip(s_dims, d_dims):
            index = 0
            for a in dd:
                index = index * a.axis_size(mesh) + coord(a, tc)
            for a in reversed(sd):
                index, atom_coord[a] = divmod(index, a.axis_size(mesh))
        free = 0
        for a in only_src:  # t's coordinates on the axes only src uses are its replica index...
            free = free * a.axis_size(mesh) + coord(a, tc)
        for a in reversed(only_dst):  # ...which picks s's coordinates on the axes only dst uses
            free, atom_coord[a] = divmod(free, a.axis_size(mesh))
        sc = {name: 0 for name in mesh.axis_names}
        for a, c in atom_coord.items():
            sc[a.name] += c * (mesh.axis_size(a.name) // ref_interval(a, mesh)[1])
        out.append((mesh.device_id(mesh.position(sc)), mesh.device_id(t)))
    return out
