"""The six collectives as layout transitions (Shardy's `sdy` collective ops, SEMANTICS.md §5).

Each step is a frozen value that maps an input sharding to the sharding it produces::

    sdy.all_gather [{"y"}, {}] %0 out_sharding=<@mesh, [{"x"}, {}]>      drop minor-most axes
    sdy.all_slice [{}, {"y"}] %0 out_sharding=<@mesh, [{"x"}, {"y"}]>     append minor-most axes
    sdy.all_to_all [{"y"}: 0->1] %0 out_sharding=<@mesh, [{"x"}, {"y"}]>  move a minor suffix
    sdy.collective_permute %0 out_sharding=<@mesh, [{"y", "x"}, {}]>      same counts, new devices
    sdy.all_reduce {"z"} %0 out_sharding=<@mesh, [{"x"}, {}]>             reduce unreduced axes
    sdy.reduce_scatter [{}, {"z"}] %0 out_sharding=<@mesh, [{"x"}, {"z"}]> reduce, then scatter

A step's costs (`ring_bytes`, `bytes_per_device`) are ring_cost.py's, on padded local buffers;
`apply(mapping, shape)` also raises when a step would move an uneven dim's data outside its group
(`check_regroup`, shards.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import DimSharding, NamedMapping, axes_text
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.types import element_bytes, shard_shape
from shardc.passes.analysis.collectives.axes import (
    Cuts,
    cut_points,
    merge_refs,
    merge_set,
    product,
    split_refs,
)
from shardc.passes.analysis.collectives.groups import device_groups, permute_sources
from shardc.passes.analysis.collectives.ring_cost import buffer_cost, ring_cost
from shardc.passes.analysis.collectives.shards import Shape, check_regroup

AxesPerDim = tuple[tuple[AxisRef, ...], ...]

# Tie-break order of kinds when two plans cost the same and have as many steps.
KIND_ORDER: tuple[str, ...] = (
    "all_slice",
    "all_to_all",
    "collective_permute",
    "all_gather",
    "reduce_scatter",
    "all_reduce",
)


# ----- layouts as atoms ------------------------------------------------------------------------


def same_layout(a: NamedMapping, b: NamedMapping) -> bool:
    """Same mesh, same axes per dim and same unreduced axes (ignores replicated/priorities).
    An axis-less mesh (JAX's `@empty_mesh` of 0-d values) goes with any other: a value on it
    is replicated on whichever mesh the program runs on."""
    if a is b:  # (types keep interned mappings: the common case)
        return True
    return (
        (a.mesh == b.mesh or a.mesh.is_empty or b.mesh.is_empty)
        and tuple(d.axes for d in a.dims) == tuple(d.axes for d in b.dims)
        and a.unreduced == b.unreduced
        and (not a.unreduced or a.unreduced_op == b.unreduced_op)
    )


@dataclass
class _Atoms:
    """A mapping cut into atoms that also align with the refs a step names."""

    mesh: DeviceMesh
    cuts: Cuts
    dims: list[list[AxisRef]]
    unreduced: list[AxisRef]

    @classmethod
    def of(cls, mapping: NamedMapping, *extra: AxisRef) -> _Atoms:
        mesh = mapping.mesh
        for ref in extra:
            ref.validate(mesh)
        refs = [*mapping.used_axes(), *mapping.unreduced, *extra]
        cuts = cut_points(refs, mesh)
        dims = [split_refs(d.axes, cuts, mesh) for d in mapping.dims]
        return cls(mesh, cuts, dims, split_refs(mapping.unreduced, cuts, mesh))

    def split(self, refs: Sequence[AxisRef]) -> list[AxisRef]:
        return split_refs(refs, self.cuts, self.mesh)

    def used(self) -> list[AxisRef]:
        return [a for d in self.dims for a in d] + self.unreduced

    def build(self, like: NamedMapping) -> NamedMapping:
        mesh = self.mesh
        dims = tuple(DimSharding(merge_refs(d, mesh), True) for d in self.dims)
        used = self.used()
        replicated = tuple(r for r in like.replicated if not any(r.overlaps(u, mesh) for u in used))
        return NamedMapping(
            mesh, dims, replicated, merge_set(self.unreduced, mesh), like.unreduced_op,
            like.memory_kind,
        )


def _pop_suffix(atoms: list[AxisRef], suffix: list[AxisRef], what: str, dim: int) -> None:
    if not suffix:
        return
    if atoms[len(atoms) - len(suffix):] != suffix or len(suffix) > len(atoms):
        raise ShardingError(
            f"{what} axes {axes_text(suffix)} are not the minor-most axes of dim {dim} "
            f"({{{axes_text(atoms)}}})"
        )
    del atoms[len(atoms) - len(suffix):]


def _check_free(state: _Atoms, atoms: list[AxisRef], what: str) -> None:
    used = state.used()
    for i, a in enumerate(atoms):
        if a in used or a in atoms[:i]:
            raise ShardingError(f"{what} axis {a} is already used by the sharding")


def _check_rank(axes: AxesPerDim, mapping: NamedMapping, kind: str) -> None:
    if len(axes) != mapping.rank:
        raise ShardingError(
            f"{kind} names axes for {len(axes)} dims but the sharding has {mapping.rank}"
        )
    if not any(axes):
        raise ShardingError(f"{kind} names no axes")


def _per_dim_text(axes: AxesPerDim) -> str:
    return "[" + ", ".join(f"{{{axes_text(a)}}}" for a in axes) + "]"


def _as_axes_per_dim(axes: Sequence[Sequence[AxisRef]]) -> AxesPerDim:
    return tuple(tuple(a) for a in axes)


# ----- the steps ---------------------------------------------------------------------------


class Step:
    """One collective as a layout transition. Subclasses are frozen dataclasses."""

    __slots__ = ()
    kind: ClassVar[str]

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        raise NotImplementedError

    def apply(self, mapping: NamedMapping, shape: Shape | None = None) -> NamedMapping:
        """The sharding this step produces from `mapping`; raises `ShardingError` if invalid.

        With `shape`, also checks that uneven dims stay within the collective's groups.
        """
        out = self._apply(mapping)
        if shape is not None:
            if len(shape) != mapping.rank:
                raise ShardingError(f"shape {list(shape)} has rank != {mapping.rank}")
            check_regroup(shape, mapping, out)
        return out

    def group_axes(self) -> tuple[AxisRef, ...]:
        """The axes the collective communicates (or slices) over, in group order."""
        raise NotImplementedError

    def group_size(self, mesh: DeviceMesh) -> int:
        return product(self.group_axes(), mesh)

    def groups(self, mesh: DeviceMesh) -> list[list[int]]:
        return device_groups(mesh, self.group_axes())

    def params_text(self) -> str:
        raise NotImplementedError

    def text(self, mapping: NamedMapping, operand: str = "%0") -> str:
        """`sdy.all_gather [{"x"}, {}] %0 out_sharding=<@mesh, [{}, {}]>` (input is `mapping`)."""
        params = self.params_text()
        params = f" {params}" if params else ""
        return f"sdy.{self.kind}{params} {operand} out_sharding={self._apply(mapping).text()}"

    def _tgt_dim(self) -> int:
        return -1

    def ring_bytes(self, shape: Shape, dtype: str, mapping: NamedMapping) -> int:
        out = self._apply(mapping)
        return ring_cost(
            self.kind, tuple(shape), element_bytes(dtype), mapping.shard_counts(),
            out.shard_counts(), self.group_size(mapping.mesh), self._tgt_dim(),
        )

    def bytes_per_device(self, shape: Shape, dtype: str, mapping: NamedMapping) -> int:
        out = self._apply(mapping)
        return buffer_cost(
            self.kind, tuple(shape), element_bytes(dtype), mapping.shard_counts(),
            out.shard_counts(),
        )

    def report_entry(self, shape: Shape, dtype: str, mapping: NamedMapping) -> dict:
        """The fields CLI.md's JSON report lists for one collective (without `value`)."""
        mesh = mapping.mesh
        return {
            "kind": self.kind,
            "axes": [a.name if not a.is_sub_axis else f"{a.name}:({a.pre}){a.size}"
                     for a in self.group_axes()],
            "global_shape": list(shape),
            "local_shape": list(shard_shape(tuple(shape), mapping)),
            "dtype": dtype,
            "bytes_per_device": self.bytes_per_device(shape, dtype, mapping),
            "ring_bytes_per_device": self.ring_bytes(shape, dtype, mapping),
            "group_size": self.group_size(mesh),
            "groups": self.groups(mesh),
        }


@dataclass(frozen=True, slots=True)
class AllGather(Step):
    """Gathers the minor-most `gathering_axes[d]` of every dim d."""

    gathering_axes: AxesPerDim
    kind: ClassVar[str] = "all_gather"

    def __post_init__(self) -> None:
        object.__setattr__(self, "gathering_axes", _as_axes_per_dim(self.gathering_axes))

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        _check_rank(self.gathering_axes, mapping, self.kind)
        state = _Atoms.of(mapping, *self.group_axes())
        for d, axes in enumerate(self.gathering_axes):
            _pop_suffix(state.dims[d], state.split(axes), "gathering", d)
        return state.build(mapping)

    def group_axes(self) -> tuple[AxisRef, ...]:
        return tuple(a for d in self.gathering_axes for a in d)

    def params_text(self) -> str:
        return _per_dim_text(self.gathering_axes)


@dataclass(frozen=True, slots=True)
class AllSlice(Step):
    """Appends `slicing_axes[d]` as the minor-most axes of every dim d (local, no traffic)."""

    slicing_axes: AxesPerDim
    kind: ClassVar[str] = "all_slice"

    def __post_init__(self) -> None:
        object.__setattr__(self, "slicing_axes", _as_axes_per_dim(self.slicing_axes))

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        _check_rank(self.slicing_axes, mapping, self.kind)
        state = _Atoms.of(mapping, *self.group_axes())
        added = state.split(self.group_axes())
        _check_free(state, added, "slicing")
        for d, axes in enumerate(self.slicing_axes):
            state.dims[d].extend(state.split(axes))
        return state.build(mapping)

    def group_axes(self) -> tuple[AxisRef, ...]:
        return tuple(a for d in self.slicing_axes for a in d)

    def params_text(self) -> str:
        return _per_dim_text(self.slicing_axes)


@dataclass(frozen=True, slots=True)
class AllToAll(Step):
    """Moves the minor-most `axes` of `src_dim` to the minor-most end of `tgt_dim`."""

    axes: tuple[AxisRef, ...]
    src_dim: int
    tgt_dim: int
    kind: ClassVar[str] = "all_to_all"

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", tuple(self.axes))
        if not self.axes:
            raise ShardingError("all_to_all names no axes")
        if self.src_dim == self.tgt_dim or min(self.src_dim, self.tgt_dim) < 0:
            raise ShardingError(
                f"all_to_all needs two different dims (got {self.src_dim}->{self.tgt_dim})"
            )

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        if max(self.src_dim, self.tgt_dim) >= mapping.rank:
            raise ShardingError(
                f"all_to_all dims {self.src_dim}->{self.tgt_dim} out of range for rank "
                f"{mapping.rank}"
            )
        state = _Atoms.of(mapping, *self.axes)
        moved = state.split(self.axes)
        _pop_suffix(state.dims[self.src_dim], moved, "all_to_all", self.src_dim)
        state.dims[self.tgt_dim].extend(moved)
        return state.build(mapping)

    def group_axes(self) -> tuple[AxisRef, ...]:
        return self.axes

    def _tgt_dim(self) -> int:
        return self.tgt_dim

    def params_text(self) -> str:
        return f"[{{{axes_text(self.axes)}}}: {self.src_dim}->{self.tgt_dim}]"


@dataclass(frozen=True, slots=True)
class CollectivePermute(Step):
    """Sends each device's whole block to another device: the target `out` has the same shard
    count in every dim (and the same unreduced axes) but assigns shards to devices differently.
    """

    out: NamedMapping
    kind: ClassVar[str] = "collective_permute"

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        out = self.out
        if out.mesh != mapping.mesh:
            raise ShardingError(
                f"collective_permute between meshes @{mapping.mesh.name} and @{out.mesh.name} "
                "is not supported; both shardings must use one mesh"
            )
        if out.rank != mapping.rank or out.shard_counts() != mapping.shard_counts():
            raise ShardingError(
                f"collective_permute must keep the shard count of every dim: "
                f"{mapping.text()} has {list(mapping.shard_counts())}, {out.text()} has "
                f"{list(out.shard_counts())}"
            )
        if out.unreduced != mapping.unreduced:
            raise ShardingError("collective_permute cannot change the unreduced axes")
        if same_layout(mapping, out):
            raise ShardingError(f"collective_permute to the same sharding {out.text()}")
        return NamedMapping(
            out.mesh, tuple(DimSharding(d.axes, True) for d in out.dims), out.replicated,
            mapping.unreduced, mapping.unreduced_op, mapping.memory_kind,
        )

    def group_axes(self) -> tuple[AxisRef, ...]:
        return ()

    def group_size(self, mesh: DeviceMesh) -> int:
        return 2

    def groups(self, mesh: DeviceMesh) -> list[list[int]]:
        raise ShardingError("collective_permute has source-target pairs, not groups; use pairs()")

    def pairs(self, mapping: NamedMapping) -> list[tuple[int, int]]:
        """`(source device, target device)` for every device whose block comes from elsewhere."""
        return [(s, t) for s, t in permute_sources(mapping, self._apply(mapping)) if s != t]

    def params_text(self) -> str:
        return ""

    def report_entry(self, shape: Shape, dtype: str, mapping: NamedMapping) -> dict:
        entry = Step.report_entry(self, shape, dtype, mapping)
        entry["groups"] = [list(p) for p in self.pairs(mapping)]
        return entry


@dataclass(frozen=True, slots=True)
class AllReduce(Step):
    """Reduces the partial values over `reduction_axes` (all of them unreduced)."""

    reduction_axes: tuple[AxisRef, ...]
    kind: ClassVar[str] = "all_reduce"

    def __post_init__(self) -> None:
        object.__setattr__(self, "reduction_axes", tuple(self.reduction_axes))
        if not self.reduction_axes:
            raise ShardingError("all_reduce names no axes")

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        state = _Atoms.of(mapping, *self.reduction_axes)
        for a in state.split(self.reduction_axes):
            if a not in state.unreduced:
                raise ShardingError(
                    f"all_reduce axis {a} is not unreduced in {mapping.text()}"
                )
            state.unreduced.remove(a)
        return state.build(mapping)

    def group_axes(self) -> tuple[AxisRef, ...]:
        return self.reduction_axes

    def params_text(self) -> str:
        return f"{{{axes_text(self.reduction_axes)}}}"


@dataclass(frozen=True, slots=True)
class ReduceScatter(Step):
    """Reduces the partial values over the unreduced `reduce_scatter_axes` and scatters the
    result: `reduce_scatter_axes[d]` become the minor-most axes of dim d."""

    reduce_scatter_axes: AxesPerDim
    kind: ClassVar[str] = "reduce_scatter"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "reduce_scatter_axes", _as_axes_per_dim(self.reduce_scatter_axes)
        )

    def _apply(self, mapping: NamedMapping) -> NamedMapping:
        _check_rank(self.reduce_scatter_axes, mapping, self.kind)
        state = _Atoms.of(mapping, *self.group_axes())
        for a in state.split(self.group_axes()):
            if a not in state.unreduced:
                raise ShardingError(
                    f"reduce_scatter axis {a} is not unreduced in {mapping.text()}"
                )
            state.unreduced.remove(a)
        for d, axes in enumerate(self.reduce_scatter_axes):
            state.dims[d].extend(state.split(axes))
        return state.build(mapping)

    def group_axes(self) -> tuple[AxisRef, ...]:
        return tuple(a for d in self.reduce_scatter_axes for a in d)

    def params_text(self) -> str:
        return _per_dim_text(self.reduce_scatter_axes)
