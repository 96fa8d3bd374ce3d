"""A numpy simulation of the collectives on per-device blocks: the reference semantics.

A layout of a global array is a dict `device id -> local block`. The device at row-major mesh
position p holds `global[shard_bounds(shape, mapping, p)]`, zero-padded at the end to
`shard_shape(shape, mapping)` (ceil(n/k) per dim). With `unreduced` axes, the devices of each
unreduced group (those differing only along the unreduced axes) hold partial values that combine
(`unreduced_op`, sum by default) to that block.

Each collective runs group by group. A group is every device that differs from the others only
in its coordinates along the collective's axes (`steps.device_groups`, members in axis order):

- all_gather / all_to_all: every member assembles its new block from the real (unpadded) data of
  the group's blocks, placed at their global offsets -- for all_gather this is concatenating the
  group's blocks in axis order; for all_to_all each member takes, from every member, the piece
  that falls in its new block. A new block must be covered entirely by the group's data.
- all_slice: every device cuts its new block out of its own block (no communication).
- collective_permute: every device receives the whole block of its source (`permute_sources`).
- all_reduce: every member gets the combination of the group's blocks.
- reduce_scatter: every member gets its new block cut out of the combination of the group's blocks.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import NamedMapping
from shardc.ir.placements import ReduceOp
from shardc.ir.types import shard_bounds, shard_shape
from shardc.passes.analysis.collectives.groups import device_groups, permute_sources
from shardc.passes.analysis.collectives.shards import Shape
from shardc.passes.analysis.collectives.steps import (
    AllGather,
    AllReduce,
    AllSlice,
    AllToAll,
    CollectivePermute,
    ReduceScatter,
    Step,
)

Blocks = dict[int, np.ndarray]
Region = tuple[tuple[int, int], ...]


def _positions(mapping: NamedMapping) -> dict[int, int]:
    """Device id -> row-major mesh position."""
    return mapping.mesh.positions_by_id()


def _region(shape: Shape, mapping: NamedMapping, device: int) -> Region:
    return shard_bounds(shape, mapping, _positions(mapping)[device])


def _real(block: np.ndarray, region: Region) -> np.ndarray:
    """The unpadded part of a block."""
    return block[tuple(slice(0, hi - lo) for lo, hi in region)]


def _padded(data: np.ndarray, shape: Shape, mapping: NamedMapping) -> np.ndarray:
    out = np.zeros(shard_shape(shape, mapping), dtype=data.dtype)
    out[tuple(slice(0, n) for n in data.shape)] = data
    return out


def _assemble(
    region: Region, pieces: Iterable[tuple[Region, np.ndarray]], dtype: np.dtype
) -> np.ndarray:
    """The array covering `region`, filled from pieces `(their region, their real data)`.

    Raises `ShardingError` when the pieces leave part of `region` uncovered.
    """
    size = tuple(hi - lo for lo, hi in region)
    out = np.zeros(size, dtype=dtype)
    covered = np.zeros(size, dtype=bool)
    for piece_region, data in pieces:
        lo = [max(a, b) for (a, _), (b, _) in zip(region, piece_region, strict=True)]
        hi = [min(a, b) for (_, a), (_, b) in zip(region, piece_region, strict=True)]
        if any(h <= low for low, h in zip(lo, hi, strict=True)):
            continue
        dst = tuple(slice(low - r, h - r) for low, h, (r, _) in zip(lo, hi, region, strict=True))
        src = tuple(
            slice(low - r, h - r) for low, h, (r, _) in zip(lo, hi, piece_region, strict=True)
        )
        out[dst] = data[src]
        covered[dst] = True
    if not covered.all():
        raise ShardingError(f"region {list(region)} is not covered by the group's blocks")
    return out


def _combine(op: ReduceOp, arrays: list[np.ndarray]) -> np.ndarray:
    total = arrays[0]
    for a in arrays[1:]:
        total = op.combine(total, a)
    return total


# ----- layouts -----------------------------------------------------------------------------------


def distribute(
    array: np.ndarray, mapping: NamedMapping, rng: np.random.Generator | None = None
) -> Blocks:
    """Every device's padded block of `array` under `mapping`.

    With unreduced axes, the first member of each unreduced group gets the value minus random
    partials held by the others (sum); for max/min the others hold values no larger/smaller and
    for prod ones. Pass `rng` for random partials (default: seed 0).
    """
    shape = array.shape
    mesh = mapping.mesh
    blocks: Blocks = {}
    for p in range(mesh.num_devices):
        region = shard_bounds(shape, mapping, p)
        data = array[tuple(slice(lo, hi) for lo, hi in region)]
        blocks[mesh.device_id(p)] = _padded(data, shape, mapping)
    if not mapping.unreduced:
        return blocks
    rng = rng if rng is not None else np.random.default_rng(0)
    op = mapping.unreduced_op
    for group in device_groups(mesh, mapping.unreduced):
        region = _region(shape, mapping, group[0])
        value = _real(blocks[group[0]], region)
        others = []
        for device in group[1:]:
            noise = rng.integers(0, 5, size=value.shape).astype(array.dtype)
            part = {
                ReduceOp.SUM: noise,
                ReduceOp.MAX: value - noise,
                ReduceOp.MIN: value + noise,
                ReduceOp.PROD: np.ones_like(value),
            }[op]
            others.append(part)
            blocks[device] = _padded(part, shape, mapping)
        first = value - sum(others) if op is ReduceOp.SUM else value
        blocks[group[0]] = _padded(np.asarray(first, dtype=array.dtype), shape, mapping)
    return blocks


def collect(blocks: Blocks, shape: Shape, mapping: NamedMapping) -> np.ndarray:
    """The global array the blocks hold (partials combined); raises if replicas disagree."""
    mesh = mapping.mesh
    groups = device_groups(mesh, mapping.unreduced) if mapping.unreduced else [
        [d] for d in mesh.all_device_ids()
    ]
    first = next(iter(blocks.values()))
    out = np.zeros(shape, dtype=first.dtype)
    seen = np.zeros(shape, dtype=bool)
    for group in groups:
        region = _region(shape, mapping, group[0])
        value = _combine(mapping.unreduced_op, [_real(blocks[d], region) for d in group])
        index = tuple(slice(lo, hi) for lo, hi in region)
        known = seen[index]
        if not np.array_equal(out[index][known], value[known]):
            raise ShardingError(f"devices {group} disagree with other replicas of their block")
        out[index] = value
        seen[index] = True
    if not seen.all():
        raise ShardingError("the blocks do not cover the whole array")
    return out


# ----- collectives -------------------------------------------------------------------------------


def execute_step(
    step: Step, blocks: Blocks, shape: Shape, mapping: NamedMapping
) -> tuple[Blocks, NamedMapping]:
    """Run one collective on per-device blocks laid out as `mapping`; returns the new blocks and
    the layout they are in. Raises `ShardingError` if the step is invalid for this layout/shape."""
    shape = tuple(shape)
    out = step.apply(mapping, shape)
    dtype = next(iter(blocks.values())).dtype
    mesh = mapping.mesh
    new: Blocks = {}

    def old_piece(device: int) -> tuple[Region, np.ndarray]:
        region = _region(shape, mapping, device)
        return region, _real(blocks[device], region)

    if isinstance(step, AllGather | AllToAll | AllSlice):
        # all_slice: every device is its own group, it only reads its own block.
        axes = () if isinstance(step, AllSlice) else step.group_axes()
        for group in device_groups(mesh, axes):
            pieces = [old_piece(d) for d in group]  # the group's blocks, in axis order
            for device in group:
                region = _region(shape, out, device)
                new[device] = _padded(_assemble(region, pieces, dtype), shape, out)
    elif isinstance(step, CollectivePermute):
        for source, target in permute_sources(mapping, out):
            region = _region(shape, out, target)
            if region != _region(shape, mapping, source):
                raise ShardingError(f"device {source} does not hold device {target}'s block")
            new[target] = blocks[source].copy()
    elif isinstance(step, AllReduce | ReduceScatter):
        for group in device_groups(mesh, step.group_axes()):
            region = _region(shape, mapping, group[0])
            total = _combine(mapping.unreduced_op, [_real(blocks[d], region) for d in group])
            for device in group:
                out_region = _region(shape, out, device)
                new[device] = _padded(_assemble(out_region, [(region, total)], dtype), shape, out)
    else:
        raise AssertionError(f"no simulation for {step.kind}")
    return new, out


def execute(
    steps: Iterable[Step], blocks: Blocks, shape: Shape, mapping: NamedMapping
) -> tuple[Blocks, NamedMapping]:
    """Run a sequence of collectives (e.g. `Plan.steps` from `Plan.src`)."""
    for step in steps:
        blocks, mapping = execute_step(step, blocks, shape, mapping)
    return blocks, mapping
