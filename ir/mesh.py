"""Device meshes and references to their axes.

A mesh is an ordered set of named axes over a grid of devices::

    mesh @mesh = <["dp"=2, "tp"=4]>
    mesh @ring = <["x"=4], device_ids=[3, 2, 1, 0]>

An axis ref names a whole axis (`"x"`) or a sub-axis (`"x":(pre)size`): the `size`-sized slice of
axis `x` whose more-major part has size `pre`. Axis `x` of size n splits major to minor into
`[pre, size, n / (pre * size)]`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from shardc.ir.diagnostics import ShardingError


def identity_first_eq(*fields: str) -> Callable[[object, object], bool]:
    """A dataclass's generated `__eq__` over `fields`, with the identity test first: most
    comparisons of meshes, axes and shardings are of one object with itself, and `!=` has no
    such shortcut of its own (one `m.mesh != mesh` per value made ~76k field-by-field
    comparisons in an 8-layer compile)."""
    key = attrgetter(*fields)

    def __eq__(self: object, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    return __eq__


@dataclass(frozen=True, slots=True, order=True)
class AxisRef:
    """`"x"` (whole axis, `size is None`) or `"x":(pre)size` (a sub-axis)."""

    name: str
    pre: int = 1
    size: int | None = None

    __eq__ = identity_first_eq("name", "pre", "size")

    def __post_init__(self) -> None:
        if self.size is not None and (self.size < 1 or self.pre < 1):
            raise ShardingError(f"sub-axis {self} must have positive sizes")
        if self.size is None and self.pre != 1:
            raise ShardingError(f"axis ref {self.name!r} has a pre-size but no size")

    @property
    def is_sub_axis(self) -> bool:
        return self.size is not None

    def axis_size(self, mesh: DeviceMesh) -> int:
        """Number of devices along this (sub-)axis."""
        return mesh.axis_size(self.name) if self.size is None else self.size

    def full_size(self, mesh: DeviceMesh) -> int:
        return mesh.axis_size(self.name)

    def validate(self, mesh: DeviceMesh) -> None:
        if not mesh.has_axis(self.name):
            raise ShardingError(
                f"unknown axis {self.name!r} in mesh @{mesh.name} (axes: {mesh.axis_names_text()})"
            )
        if self.size is None:
            return
        n = mesh.axis_size(self.name)
        if self.size <= 1 or n % (self.pre * self.size) != 0 or self.pre * self.size > n:
            raise ShardingError(
                f"sub-axis {self} does not divide axis {self.name!r} of size {n}: "
                f"pre-size*size ({self.pre}*{self.size}) must divide {n}, with size > 1"
            )
        if self.pre * self.size == n and self.pre == 1:
            raise ShardingError(f"sub-axis {self} is the whole axis; write {self.name!r}")

    def interval(self, mesh: DeviceMesh) -> tuple[int, int]:
        """[pre, pre*size) as products of major sizes: the span this ref covers on its axis."""
        size = self.axis_size(mesh)
        return (self.pre, self.pre * size)

    def overlaps(self, other: AxisRef, mesh: DeviceMesh) -> bool:
        if self.name != other.name:
            return False
        a0, a1 = self.interval(mesh)
        b0, b1 = other.interval(mesh)
        return a0 < b1 and b0 < a1

    def contains(self, other: AxisRef, mesh: DeviceMesh) -> bool:
        if self.name != other.name:
            return False
        a0, a1 = self.interval(mesh)
        b0, b1 = other.interval(mesh)
        return a0 <= b0 and b1 <= a1

    def can_merge(self, other: AxisRef) -> bool:
        """`other` is the sub-axis right after this one on the same axis (`"x":(1)2` then
        `"x":(2)2`): the two are one sub-axis written in two pieces."""
        return (self.name == other.name and self.size is not None and other.size is not None
                and self.pre * self.size == other.pre)

    def coordinate(self, mesh: DeviceMesh, axis_coord: int) -> int:
        """The index along this (sub-)axis of a device at `axis_coord` on the full axis."""
        if self.size is None:
            return axis_coord
        n = mesh.axis_size(self.name)
        return (axis_coord // (n // (self.pre * self.size))) % self.size

    def __str__(self) -> str:
        if self.size is None:
            return f'"{self.name}"'
        return f'"{self.name}":({self.pre}){self.size}'


@dataclass(frozen=True, slots=True)
class DeviceMesh:
    """A named N-dimensional grid of devices.

    `device_ids[p]` is the id of the device at row-major mesh position `p` (None: the identity).
    Shardy's two meshes without axes: the empty mesh `<[]>` (nothing to shard along) and a
    maximal mesh `<[], device_ids=[3]>` (one device, any id: the value lives on device 3).
    `inline` marks a mesh written inside a sharding (`<mesh<["x"=2]>, [{"x"}]>`) instead of
    declared with a name; its `name` is its text.
    """

    name: str
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None
    inline: bool = False
    _index: dict[str, int] = field(default_factory=dict, compare=False, hash=False, repr=False)

    __eq__ = identity_first_eq("name", "axes", "device_ids", "inline")  # (`m.mesh != mesh`)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for axis, size in self.axes:
            if axis in seen:
                raise ShardingError(f"mesh @{self.name} declares axis {axis!r} twice")
            if size < 1:
                raise ShardingError(f"mesh @{self.name} axis {axis!r} has size {size} < 1")
            seen.add(axis)
            self._index[axis] = len(self._index)
        if self.device_ids is not None and not self.axes:
            if len(self.device_ids) != 1 or self.device_ids[0] < 0:
                raise ShardingError(
                    f"mesh @{self.name} has no axes, so it is a maximal mesh: it needs exactly "
                    f"one non-negative device id (got {list(self.device_ids)})"
                )
        elif self.device_ids is not None:
            n = self.num_devices
            if len(self.device_ids) != n or sorted(self.device_ids) != list(range(n)):
                raise ShardingError(
                    f"mesh @{self.name} device_ids must be a permutation of 0..{n - 1} "
                    f"(got {list(self.device_ids)})"
                )
            if list(self.device_ids) == list(range(n)):
                # The identity order is the default; canonicalise so equal meshes compare equal.
                object.__setattr__(self, "device_ids", None)

    @classmethod
    def create(
        cls, name: str, axes: dict[str, int] | list[tuple[str, int]], device_ids=None
    ) -> DeviceMesh:
        items = tuple(axes.items()) if isinstance(axes, dict) else tuple(axes)
        ids = None if device_ids is None else tuple(int(i) for i in device_ids)
        return cls(name, items, ids)

    @classmethod
    def inline_mesh(cls, axes: tuple[tuple[str, int], ...], device_ids=None) -> DeviceMesh:
        """The mesh of `<mesh<["x"=2]>, [...]>`: named by its own (canonical) text."""
        probe = cls("mesh", axes, device_ids)
        return cls("mesh" + probe.text(), axes, probe.device_ids, inline=True)

    @property
    def is_maximal(self) -> bool:
        """A mesh of one device and no axes: `<[], device_ids=[3]>`."""
        return not self.axes and self.device_ids is not None

    def ref_text(self) -> str:
        """How a sharding names this mesh: `@mesh`, or the inline `mesh<[...]>`."""
        return self.name if self.inline else f"@{self.name}"

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.axes)

    @property
    def shape(self) -> dict[str, int]:
        return dict(self.axes)

    @property
    def is_empty(self) -> bool:
        """`<[]>`: no axes and no device: it goes with any other mesh."""
        return not self.axes and self.device_ids is None

    def same_devices(self, other: DeviceMesh) -> bool:
        """Equal up to the name: the same axes and device order (Shardy's `MeshAttr::equals`)."""
        return self.axes == other.axes and self.device_ids == other.device_ids

    @property
    def num_devices(self) -> int:
        return math.prod(s for _, s in self.axes)

    def has_axis(self, name: str) -> bool:
        return name in self._index

    def axis_index(self, name: str) -> int:
        return self._index[name]

    def axis_size(self, name: str) -> int:
        try:
            return self.axes[self._index[name]][1]
        except KeyError:
            raise ShardingError(
                f"unknown axis {name!r} in mesh @{self.name} (axes: {self.axis_names_text()})"
            ) from None

    def axis_names_text(self) -> str:
        return ", ".join(f'"{a}"' for a in self.axis_names) or "none"

    def device_id(self, position: int) -> int:
        if self.is_maximal:
            return self.device_ids[0]  # type: ignore[index]
        return position if self.device_ids is None else self.device_ids[position]

    def all_device_ids(self) -> list[int]:
        return [self.device_id(p) for p in range(self.num_devices)]

    def positions_by_id(self) -> dict[int, int]:
        """Device id -> row-major position in the mesh."""
        return {self.device_id(p): p for p in range(self.num_devices)}

    def coords(self, position: int) -> dict[str, int]:
        """Row-major mesh position -> coordinate along every axis."""
        out: dict[str, int] = {}
        for axis, size in reversed(self.axes):
            out[axis] = position % size
            position //= size
        return dict(reversed(list(out.items())))

    def position(self, coords: dict[str, int]) -> int:
        p = 0
        for axis, size in self.axes:
            p = p * size + coords[axis]
        return p

    def text(self) -> str:
        """`<["dp"=2, "tp"=4]>` (with `, device_ids=[...]` when not the identity)."""
        axes = ", ".join(f'"{a}"={s}' for a, s in self.axes)
        ids = (
            ""
            if self.device_ids is None
            else f", device_ids=[{', '.join(map(str, self.device_ids))}]"
        )
        return f"<[{axes}]{ids}>"

    def __str__(self) -> str:
        return f"@{self.name} = {self.text()}"


def default_mesh(meshes: Mapping[str, DeviceMesh]) -> DeviceMesh | None:
    """The mesh a value without a sharding is replicated on, of a module's `meshes`: its only
    mesh, or its only mesh with axes (JAX's axis-less `@empty_mesh` of 0-d arguments and the
    one-device mesh of a host callback go with any other, and are no mesh to run on when one
    with axes exists); None when that is ambiguous or there is no mesh."""
    if len(meshes) == 1:
        return next(iter(meshes.values()))
    with_axes = [m for m in meshes.values() if not (m.is_empty or m.is_maximal)]
    return with_axes[0] if len(with_axes) == 1 else None
