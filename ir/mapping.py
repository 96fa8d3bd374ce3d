"""Shardings: `DimSharding`, `NamedMapping` (dim-indexed) and `PlacementMapping` (axis-indexed).

The text is Shardy's::

    <@mesh, [{"dp", ?}p0, {}], replicated={"tp"}, unreduced={"pp"}>

- `{"dp"}` closed dim sharded on "dp"; `{"dp", ?}` open (propagation may append minor axes);
  `{}` closed and replicated; `{?}` open and unsharded; `p0`, `p1`, ... priorities (p0 strongest).
- `replicated` axes are explicitly replicated: propagation may not use them.
- `unreduced` axes hold partial results awaiting a reduction: a sum, or the reduction written
  before the set (`unreduced=max{"x"}`).

`replicated` and `unreduced` are sets kept in Shardy's canonical form (`canonical_axis_set`):
mesh order, adjacent sub-axes of one axis merged (`{"x":(1)2, "x":(2)2}` is `{"x"}`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from shardc.ir.bounded import BoundedTable
from shardc.ir.diagnostics import ConversionError, ShardingError
from shardc.ir.mesh import AxisRef, DeviceMesh, identity_first_eq
from shardc.ir.placements import Partial, Placement, ReduceOp, Replicated, Sharded


class _Unconstrained:
    """Spec entry for an open, unsharded dim (JAX's `P.UNCONSTRAINED`)."""

    _instance: _Unconstrained | None = None

    def __new__(cls) -> _Unconstrained:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCONSTRAINED"


UNCONSTRAINED = _Unconstrained()

# One spec entry per tensor dim: an axis name, a tuple of axis names (major to minor), None
# (replicated, closed) or UNCONSTRAINED (open).
SpecEntry = str | tuple[str, ...] | None | _Unconstrained


def axes_text(axes: Iterable[AxisRef]) -> str:
    return ", ".join(str(a) for a in axes)


@dataclass(frozen=True, slots=True)
class DimSharding:
    """How one tensor dim is split: axes major to minor, open or closed, optional priority."""

    axes: tuple[AxisRef, ...] = ()
    is_closed: bool = True
    priority: int | None = None

    __eq__ = identity_first_eq("axes", "is_closed", "priority")

    def __post_init__(self) -> None:
        if not isinstance(self.axes, tuple):
            object.__setattr__(self, "axes", tuple(self.axes))
        if self.priority is not None:
            if self.priority < 0:
                raise ShardingError(f"priority p{self.priority} must be >= 0")
            if self.is_closed and not self.axes:
                raise ShardingError(
                    f"a closed empty dim sharding cannot have a priority ({{}}p{self.priority}); "
                    "drop the priority or open the dim with '?'"
                )

    @classmethod
    def open(cls, axes: Sequence[AxisRef] = ()) -> DimSharding:
        return cls(tuple(axes), is_closed=False)

    @classmethod
    def closed(cls, axes: Sequence[AxisRef] = ()) -> DimSharding:
        return cls(tuple(axes), is_closed=True)

    @property
    def is_open(self) -> bool:
        return not self.is_closed

    def num_shards(self, mesh: DeviceMesh) -> int:
        return math.prod(a.axis_size(mesh) for a in self.axes)

    def with_axes(self, axes: Sequence[AxisRef]) -> DimSharding:
        return dataclasses.replace(self, axes=tuple(axes))

    def text(self) -> str:
        inner = axes_text(self.axes)
        if self.is_open:
            inner = f"{inner}, ?" if inner else "?"
        prio = "" if self.priority is None else f"p{self.priority}"
        return f"{{{inner}}}{prio}"

    def __str__(self) -> str:
        return self.text()


def _is_sub_axis_of(ref: AxisRef, mesh: DeviceMesh) -> bool:
    """Is `ref` a sub-axis of a mesh axis that it divides (no exception for invalid refs)?"""
    return (
        ref.size is not None
        and mesh.has_axis(ref.name)
        and mesh.axis_size(ref.name) % (ref.pre * ref.size) == 0
    )


def canonical_axis_set(refs: Iterable[AxisRef], mesh: DeviceMesh) -> tuple[AxisRef, ...]:
    """Canonical form of a replicated/unreduced set, as Shardy spells it: mesh axis order, major
    sub-axes first, and adjacent sub-axes of one axis merged (`"x":(1)2, "x":(2)2` -> `"x"`), so
    one set of devices has one spelling. Invalid refs are left alone for validation to report.
    """

    def key(r: AxisRef) -> tuple[int, int]:
        return (mesh.axis_index(r.name) if mesh.has_axis(r.name) else 1 << 30, r.pre)

    out: list[AxisRef] = []
    for ref in sorted(refs, key=key):
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.name == ref.name
            and _is_sub_axis_of(prev, mesh)
            and _is_sub_axis_of(ref, mesh)
            and prev.pre * prev.size == ref.pre
        ):
            pre, size = prev.pre, prev.size * ref.size
            whole = pre == 1 and size == mesh.axis_size(ref.name)
            out[-1] = AxisRef(ref.name) if whole else AxisRef(ref.name, pre, size)
        else:
            out.append(ref)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class NamedMapping:
    """Tensor-dimension-indexed sharding of one value over one mesh (JAX PartitionSpec style)."""

    mesh: DeviceMesh
    dims: tuple[DimSharding, ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()
    unreduced_op: ReduceOp = ReduceOp.SUM
    memory_kind: str | None = None
    # The hash, computed on first use: propagation keys its memo on tuples of mappings, and
    # the generated hash would walk the mesh, every dim and every axis ref each time.
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    # The text, computed on first use: printers write one mapping on many values.
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    # `is_fully_replicated`, computed on first use: insert-reshards asks it of every operand
    # and result of every op (one interned mapping stands for many values).
    _replicated: bool | None = field(default=None, init=False, repr=False, compare=False)
    # `shard_counts()`, computed on first use: the spmd pass and the executors ask every value's.
    _counts: tuple[int, ...] | None = field(default=None, init=False, repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        # (the generated one, with the identity test first and unequal cached hashes telling
        # unequal mappings apart at once)
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        h, g = self._hash, other._hash  # type: ignore[attr-defined]
        if h is not None and g is not None and h != g:
            return False
        return (self.mesh, self.dims, self.replicated, self.unreduced, self.unreduced_op,
                self.memory_kind) == (
            other.mesh, other.dims, other.replicated,  # type: ignore[attr-defined]
            other.unreduced, other.unreduced_op, other.memory_kind)  # type: ignore[attr-defined]

    def __post_init__(self) -> None:
        for name in ("dims", "replicated", "unreduced"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if self.replicated:
            object.__setattr__(self, "replicated", canonical_axis_set(self.replicated, self.mesh))
        if self.unreduced:
            object.__setattr__(self, "unreduced", canonical_axis_set(self.unreduced, self.mesh))
        self._validate()

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self.mesh, self.dims, self.replicated, self.unreduced,
                      self.unreduced_op, self.memory_kind))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self):
        # Without the cached hash: string hashes differ between processes.
        return (NamedMapping, (self.mesh, self.dims, self.replicated, self.unreduced,
                               self.unreduced_op, self.memory_kind))

    def _validate(self) -> None:
        seen: list[tuple[AxisRef, str]] = []

        def add(ref: AxisRef, where: str) -> None:
            ref.validate(self.mesh)
            for other, other_where in seen:
                if ref.overlaps(other, self.mesh):
                    raise ShardingError(
                        f"axis {ref} is used twice in one sharding ({other_where} and {where}); "
                        "each mesh axis may shard a tensor at most once"
                    )
            seen.append((ref, where))

        for d, dim in enumerate(self.dims):
            for i, ref in enumerate(dim.axes):
                add(ref, f"dim {d}")
                if i > 0:
                    prev = dim.axes[i - 1]
                    if prev.can_merge(ref):
                        raise ShardingError(
                            f"dim {d} lists consecutive sub-axes {prev} and {ref} of one axis; "
                            "merge them into one sub-axis"
                        )
        for ref in self.replicated:
            add(ref, "replicated")
        for ref in self.unreduced:
            add(ref, "unreduced")

    # ----- construction -------------------------------------------------------------------

    @classmethod
    def from_spec(
        cls,
        spec: Sequence[SpecEntry],
        mesh: DeviceMesh,
        *,
        unreduced: Iterable[str] = (),
        priorities: Sequence[int | None] = (),
        memory_kind: str | None = None,
        unreduced_op: ReduceOp = ReduceOp.SUM,
    ) -> NamedMapping:
        """`from_spec(("dp", None, ("tp", "pp")), mesh)` -> `[{"dp"}, {}, {"tp", "pp"}]`.

        `UNCONSTRAINED` makes an open dim. `priorities[i]` sets dim i's priority.
        """
        dims = []
        for i, entry in enumerate(spec):
            prio = priorities[i] if i < len(priorities) else None
            if entry is UNCONSTRAINED:
                dims.append(DimSharding((), False, prio))
            elif entry is None:
                dims.append(DimSharding((), True, prio))
            else:
                names = (entry,) if isinstance(entry, str) else tuple(entry)
                dims.append(DimSharding(tuple(AxisRef(n) for n in names), True, prio))
        return cls(
            mesh,
            tuple(dims),
            (),
            tuple(AxisRef(n) for n in unreduced),
            unreduced_op,
            memory_kind,
        )

    @classmethod
    def fully_open(cls, mesh: DeviceMesh, rank: int) -> NamedMapping:
        return cls(mesh, tuple(DimSharding((), False) for _ in range(rank)))

    @classmethod
    def fully_replicated(cls, mesh: DeviceMesh, rank: int) -> NamedMapping:
        return cls(mesh, tuple(DimSharding() for _ in range(rank)))

    def with_dims(self, dims: Sequence[DimSharding]) -> NamedMapping:
        return dataclasses.replace(self, dims=tuple(dims))

    def with_dim(self, index: int, dim: DimSharding) -> NamedMapping:
        dims = list(self.dims)
        dims[index] = dim
        return dataclasses.replace(self, dims=tuple(dims))

    def replace(self, **changes) -> NamedMapping:
        return dataclasses.replace(self, **changes)

    # ----- queries -------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def spec(self) -> tuple[SpecEntry, ...]:
        """JAX-style spec; sub-axes are printed in their Shardy spelling."""
        out: list[SpecEntry] = []
        for dim in self.dims:
            names = tuple(a.name if not a.is_sub_axis else str(a) for a in dim.axes)
            if not names:
                out.append(UNCONSTRAINED if dim.is_open else None)
            else:
                out.append(names[0] if len(names) == 1 else names)
        return tuple(out)

    @property
    def priorities(self) -> tuple[int | None, ...]:
        return tuple(d.priority for d in self.dims)

    @property
    def is_fully_replicated(self) -> bool:
        """No dim is sharded and nothing is pending a reduction."""
        known = self._replicated
        if known is None:
            known = not self.unreduced and all(not d.axes for d in self.dims)
            object.__setattr__(self, "_replicated", known)
        return known

    @property
    def is_fully_resolved(self) -> bool:
        """Every dim has a final decision: no dim is open."""
        return all(d.is_closed for d in self.dims)

    def used_axes(self) -> list[AxisRef]:
        """Every axis ref used by a dim, in dim order."""
        return [a for d in self.dims for a in d.axes]

    def num_shards(self, dim: int) -> int:
        return self.dims[dim].num_shards(self.mesh)

    def shard_counts(self) -> tuple[int, ...]:
        counts = self._counts
        if counts is None:
            counts = tuple(d.num_shards(self.mesh) for d in self.dims)
            object.__setattr__(self, "_counts", counts)
        return counts

    def shard_index(self, dim: int, position: int) -> int:
        """Which shard of `dim` the device at row-major mesh position `position` holds."""
        coords = self.mesh.coords(position)
        index = 0
        for ref in self.dims[dim].axes:
            index = index * ref.axis_size(self.mesh) + ref.coordinate(self.mesh, coords[ref.name])
        return index

    # ----- conversions ----------------------------------------------------------------------

    def to_placements(self) -> tuple[Placement, ...]:
        """One placement per mesh axis. Raises `ConversionError` where information would be lost."""
        return PlacementMapping.from_named(self).placements

    def text(self) -> str:
        out = self._text
        if out is None:
            out = self._compose_text()
            object.__setattr__(self, "_text", out)
        return out

    def _compose_text(self) -> str:
        dims = ", ".join(d.text() for d in self.dims)
        out = f"<{self.mesh.ref_text()}, [{dims}]"
        if self.replicated:
            out += f", replicated={{{axes_text(self.replicated)}}}"
        if self.unreduced:
            # Shardy's spelling: the reduction before the set unless it is the default sum.
            op = "" if self.unreduced_op is ReduceOp.SUM else self.unreduced_op.value
            out += f", unreduced={op}{{{axes_text(self.unreduced)}}}"
        if self.memory_kind is not None:
            out += f', memory_kind="{self.memory_kind}"'
        return out + ">"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True, slots=True)
class PlacementMapping:
    """Mesh-axis-indexed sharding (PyTorch DTensor style): one placement per mesh axis."""

    mesh: DeviceMesh
    placements: tuple[Placement, ...]
    memory_kind: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.placements, tuple):
            object.__setattr__(self, "placements", tuple(self.placements))
        if len(self.placements) != len(self.mesh.axes):
            raise ShardingError(
                f"{len(self.placements)} placements for mesh @{self.mesh.name} with "
                f"{len(self.mesh.axes)} axes; give one placement per mesh axis"
            )

    @classmethod
    def from_named(cls, mapping: NamedMapping) -> PlacementMapping:
        mesh = mapping.mesh
        placements: list[Placement] = [Replicated() for _ in mesh.axes]
        for d, dim in enumerate(mapping.dims):
            if dim.priority is not None:
                raise ConversionError(
                    f"dim {d} has priority p{dim.priority}; placements cannot express priorities"
                )
            if dim.is_open:
                raise ConversionError(
                    f"dim {d} is open; placements describe only resolved (closed) shardings"
                )
            last = -1
            for ref in dim.axes:
                if ref.is_sub_axis:
                    raise ConversionError(
                        f"dim {d} uses sub-axis {ref}; placements need whole axes"
                    )
                index = mesh.axis_index(ref.name)
                if index < last:
                    raise ConversionError(
                        f"dim {d} is sharded on {axes_text(dim.axes)}, not in mesh order; "
                        "placements cannot express the order of axes in one dim"
                    )
                last = index
                placements[index] = Sharded(d)
        for ref in mapping.unreduced:
            if ref.is_sub_axis:
                raise ConversionError(f"unreduced sub-axis {ref}; placements need whole axes")
            placements[mesh.axis_index(ref.name)] = Partial(mapping.unreduced_op)
        for ref in mapping.replicated:
            if ref.is_sub_axis:
                raise ConversionError(f"replicated sub-axis {ref}; placements need whole axes")
        return cls(mesh, tuple(placements), mapping.memory_kind)

    def to_named(self, rank: int) -> NamedMapping:
        """The equivalent `NamedMapping` for a tensor of `rank` (closed dims, mesh-order axes)."""
        axes: list[list[AxisRef]] = [[] for _ in range(rank)]
        unreduced: list[AxisRef] = []
        ops: set[ReduceOp] = set()
        for (name, _), p in zip(self.mesh.axes, self.placements):
            if isinstance(p, Sharded):
                if not 0 <= p.dim < rank:
                    raise ConversionError(
                        f"placement Sharded({p.dim}) on axis {name!r} is out of range "
                        f"for rank {rank}"
                    )
                axes[p.dim].append(AxisRef(name))
            elif isinstance(p, Partial):
                unreduced.append(AxisRef(name))
                ops.add(p.op)
        if len(ops) > 1:
            raise ConversionError(
                "partial placements with different reduce ops cannot form one NamedMapping"
            )
        op = ops.pop() if ops else ReduceOp.SUM
        dims = tuple(DimSharding(tuple(a), True) for a in axes)
        return NamedMapping(self.mesh, dims, (), tuple(unreduced), op, self.memory_kind)

    def __str__(self) -> str:
        return "(" + ", ".join(str(p) for p in self.placements) + ")"


# ----- interning ------------------------------------------------------------------------------

# One object per distinct mapping, for the types values carry (`interned`). A 32-layer Llama
# step's ~21k values have ~30 distinct mappings, but the passes built ~200 objects for them;
# comparing two equal objects walks the mesh, every dim and every axis ref, and the passes'
# memos (keyed on the mappings of an op's values) compared ~110k such pairs per compile. With
# the types' mappings interned those comparisons are identity tests. Bounded: the table is
# emptied when full (interning only saves comparisons; nothing depends on it).
_INTERNED = BoundedTable(1 << 16)


def interned(m: NamedMapping) -> NamedMapping:
    """The one object kept for mappings equal to `m` (`m` itself the first time)."""
    got = _INTERNED.get(m)
    if got is None:
        got = _INTERNED.put(m, m)
    return got
