"""How the numpy SPMD executor batches devices, and global arrays <-> batched values.

    layout = module_layout(module, func)             # or DeviceLayout.build(mesh, axis refs)
    x = to_batched(array, mapping, layout)           # global array -> batched value
    array = from_batched(x, shape, mapping, layout)  # and back (partials combined)
    blocks = scatter(array, mapping)                 # device id -> padded block
    array = gather(blocks, shape, mapping)

Devices are batched, not looped: a value is one array of shape `(*mesh_atoms, *local_shape)`
where the leading dims are the mesh axes (split into the sub-axes the program uses, in mesh
order, so the row-major index over them is the mesh position) and each leading dim is either
full size or 1 -- 1 means every device along that axis holds the same block (a replicated
weight, a constant, the result of an all_reduce).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from shardc.executors.reduce_kinds import REDUCE_OP_KIND, REDUCE_UFUNCS, identity
from shardc.ir.core import Function, Module
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.types import shard_bounds, shard_shape
from shardc.passes.analysis.collectives.axes import cut_points, mesh_atoms, split_refs

Blocks = dict[int, np.ndarray]


@dataclass(frozen=True)
class DeviceLayout:
    """The leading dims of a batched value: `mesh` split into `atoms` (mesh order, major to
    minor); the row-major index over `sizes` is the mesh position."""

    mesh: DeviceMesh
    atoms: tuple[AxisRef, ...]
    sizes: tuple[int, ...]
    cuts: dict[str, tuple[int, ...]]

    @classmethod
    def build(cls, mesh: DeviceMesh, refs: Sequence[AxisRef]) -> DeviceLayout:
        cuts = cut_points(list(refs), mesh)
        atoms = tuple(mesh_atoms(cuts, mesh))
        return cls(mesh, atoms, tuple(a.axis_size(mesh) for a in atoms), cuts)

    @property
    def rank(self) -> int:
        return len(self.atoms)

    @property
    def num_devices(self) -> int:
        return self.mesh.num_devices

    def index(self, refs: Sequence[AxisRef]) -> list[int]:
        """Leading-dim indices of `refs`, in the order given (sub-axes split into atoms; axes
        of size 1 have none)."""
        kept = [r for r in refs if self.mesh.axis_size(r.name) > 1]
        atoms = split_refs(kept, self.cuts, self.mesh)
        return [self.atoms.index(a) for a in atoms]

    def full(self, x: np.ndarray, dims: Sequence[int]) -> np.ndarray:
        """`x` broadcast to full size along leading dims `dims` (a view)."""
        shape = list(x.shape)
        for a in dims:
            shape[a] = self.sizes[a]
        return np.broadcast_to(x, shape)

    def positions(self, x: np.ndarray) -> np.ndarray:
        """`(num_devices, *local)`: every device's block, by mesh position."""
        x = self.full(x, range(self.rank))
        return x.reshape((self.num_devices,) + x.shape[self.rank:])

    def from_positions(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(self.sizes + x.shape[1:])


def refs_of(m: NamedMapping) -> list[AxisRef]:
    """The axes `m` uses: its dims' axes, then its unreduced axes."""
    return [*m.used_axes(), *m.unreduced]


def module_layout(module: Module, function: Function) -> DeviceLayout | None:
    """The device layout of an SPMD function (None when it has no mesh: one device)."""
    sym = function.attributes.get("mesh")
    if sym is None:
        return None
    mesh = module.meshes.get(sym.name)
    if mesh is None:
        raise ExecutionError(f"@{function.name} runs on mesh @{sym.name}, which is not declared")
    refs: list[AxisRef] = []
    for func in module.functions.values():
        for key in ("in_shardings", "out_shardings"):
            for m in func.attributes.get(key, ()):
                refs.extend(refs_of(m))
        for op in func.body:
            axes = op.attributes.get("axes")
            if op.name.startswith("spmd.") and axes:
                refs.extend(axes)
    return DeviceLayout.build(mesh, refs)


def to_batched(array: np.ndarray, mapping: NamedMapping, layout: DeviceLayout) -> np.ndarray:
    """The batched value holding `array` laid out by `mapping` (padding is zero). With
    unreduced axes, the first device of each unreduced group holds the value and the others the
    reduction's identity."""
    shape = array.shape
    counts = mapping.shard_counts()
    chunks = shard_shape(shape, mapping)
    padded = [k * c for k, c in zip(counts, chunks)]
    if list(padded) != list(shape):
        array = np.pad(array, [(0, p - n) for n, p in zip(shape, padded)])
    split: list[int] = []
    labels: list[int] = []  # leading-dim index, or -1 - d for local dim d
    for d, dim in enumerate(mapping.dims):
        atoms = layout.index(dim.axes)
        split += [layout.sizes[a] for a in atoms] + [chunks[d]]
        labels += atoms + [-1 - d]
    x = array.reshape(split)
    present = sorted(a for a in labels if a >= 0)
    order = [labels.index(a) for a in present] + [labels.index(-1 - d) for d in range(len(shape))]
    x = x.transpose(order)
    lead = [layout.sizes[a] if a in present else 1 for a in range(layout.rank)]
    x = x.reshape(lead + list(chunks))
    if mapping.unreduced:
        kind = REDUCE_OP_KIND[mapping.unreduced_op]
        dims = layout.index(mapping.unreduced)
        out = np.full(layout.full(x, dims).shape, identity(kind, x.dtype), dtype=x.dtype)
        first = tuple(slice(0, 1) if a in dims else slice(None) for a in range(layout.rank))
        out[first] = x
        x = out
    return x


def from_batched(
    x: np.ndarray, shape: Sequence[int], mapping: NamedMapping, layout: DeviceLayout
) -> np.ndarray:
    """The global array a batched value laid out by `mapping` holds (partials combined)."""
    r = layout.rank
    if mapping.unreduced:
        dims = layout.index(mapping.unreduced)
        ufunc = REDUCE_UFUNCS[REDUCE_OP_KIND[mapping.unreduced_op]]
        x = ufunc.reduce(layout.full(x, dims), axis=tuple(dims), keepdims=True, dtype=x.dtype)
    dim_atoms = [layout.index(dim.axes) for dim in mapping.dims]
    used = {a for atoms in dim_atoms for a in atoms}
    x = x[tuple(slice(0, 1) if a not in used else slice(None) for a in range(r))]
    x = layout.full(x, sorted(used))
    order = [a for a in range(r) if a not in used]
    for d, atoms in enumerate(dim_atoms):
        order += atoms + [r + d]
    chunks = x.shape[r:]
    counts = [math.prod(layout.sizes[a] for a in atoms) for atoms in dim_atoms]
    x = x.transpose(order).reshape([k * c for k, c in zip(counts, chunks)])
    return np.array(x[tuple(slice(0, n) for n in shape)])


def scatter(array: np.ndarray, mapping: NamedMapping) -> Blocks:
    """`device_put`: device id -> its padded block of `array` under `mapping` (unreduced axes:
    the first device of each group holds the value, the others the reduction's identity)."""
    layout = DeviceLayout.build(mapping.mesh, refs_of(mapping))
    flat = layout.positions(to_batched(np.asarray(array), mapping, layout))
    return {mapping.mesh.device_id(p): np.array(flat[p]) for p in range(layout.num_devices)}


def gather(
    blocks: Mapping[int, np.ndarray], shape: Sequence[int], mapping: NamedMapping
) -> np.ndarray:
    """The global array per-device `blocks` laid out by `mapping` hold (partials combined)."""
    layout = DeviceLayout.build(mapping.mesh, refs_of(mapping))
    mesh = mapping.mesh
    missing = [d for d in mesh.all_device_ids() if d not in blocks]
    if missing:
        raise ExecutionError(f"no block for devices {missing} of mesh @{mesh.name}")
    flat = np.stack([blocks[mesh.device_id(p)] for p in range(layout.num_devices)])
    return from_batched(layout.from_positions(flat), shape, mapping, layout)


def scatter_inputs(
    arrays: Sequence[np.ndarray], shardings: Sequence[NamedMapping]
) -> list[Blocks]:
    """Per input, device id -> padded block (see `scatter`)."""
    return [scatter(a, m) for a, m in zip(arrays, shardings, strict=True)]


def gather_outputs(
    blocks: Sequence[Mapping[int, np.ndarray]],
    shapes: Sequence[Sequence[int]],
    shardings: Sequence[NamedMapping],
) -> list[np.ndarray]:
    """Per output, the global array (see `gather`)."""
    return [gather(b, s, m) for b, s, m in zip(blocks, shapes, shardings, strict=True)]


def reference_blocks(array: np.ndarray, mapping: NamedMapping) -> Blocks:
    """The definition of a layout, device by device (for tests): `global[shard_bounds]` padded."""
    mesh = mapping.mesh
    out: Blocks = {}
    for p in range(mesh.num_devices):
        region = shard_bounds(array.shape, mapping, p)
        block = np.zeros(shard_shape(array.shape, mapping), dtype=array.dtype)
        data = array[tuple(slice(a, b) for a, b in region)]
        block[tuple(slice(0, n) for n in data.shape)] = data
        out[mesh.device_id(p)] = block
    return out
