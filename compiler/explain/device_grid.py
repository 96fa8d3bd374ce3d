"""`visualize_sharding`: which devices hold which block of a tensor, as text
(jax.debug.visualize_sharding's style).

    print(visualize_sharding((16, 64), mapping))
    blocks = block_owners((16, 64), mapping)     # shard index, global bounds, device ids
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.explain.graph import shape_text
from shardc.ir.mapping import NamedMapping
from shardc.ir.types import shard_bounds


def _ids_text(ids: list[int]) -> str:
    """`[0, 1, 2, 3, 6]` -> `0-3,6` (runs of three or more are ranges)."""
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(f"{ids[i]}-{ids[j]}" if j - i >= 2 else ",".join(map(str, ids[i : j + 1])))
        i = j + 1
    return ",".join(out)


@dataclass
class Block:
    """One block of a tensor: its shard index per dim, its global [start, stop) per dim, and
    the sorted ids of the devices that hold it."""

    index: tuple[int, ...]
    bounds: tuple[tuple[int, int], ...]
    devices: list[int]


def block_owners(shape: tuple[int, ...], mapping: NamedMapping | None) -> list[Block]:
    """Every block of `shape` under `mapping`, in shard-index order."""
    if mapping is None:
        return [Block(tuple(0 for _ in shape), tuple((0, n) for n in shape), [0])]
    mesh = mapping.mesh
    blocks: dict[tuple[int, ...], Block] = {}
    for p in range(mesh.num_devices):
        index = tuple(
            mapping.shard_index(d, p) if mapping.num_shards(d) > 1 else 0 for d in range(len(shape))
        )
        block = blocks.setdefault(index, Block(index, shard_bounds(shape, mapping, p), []))
        block.devices.append(mesh.device_id(p))
    for b in blocks.values():
        b.devices.sort()
    return [blocks[k] for k in sorted(blocks)]


def visualize_sharding(shape: tuple[int, ...] | list[int], mapping: NamedMapping | None) -> str:
    """A picture of which devices hold which block (jax.debug.visualize_sharding's style).

    1-D tensors are one row of blocks, 2-D a grid (rows: dim 0); each block lists the ids of
    the devices holding it (`0-3` is 0,1,2,3). Higher ranks get a per-dim description.
    """
    shape = tuple(shape)
    head = f"tensor<{shape_text(shape)}> " + (
        "(no sharding: every device holds all of it)"
        if mapping is None
        else f"on @{mapping.mesh.name} {mapping.mesh.text()}: {mapping.text()}"
    )
    lines = [head]
    blocks = block_owners(shape, mapping)
    if len(shape) in (1, 2) and mapping is not None:
        lines += _grid(shape, blocks)
    for d, n in enumerate(shape):
        if mapping is None or mapping.num_shards(d) == 1:
            lines.append(f"dim {d} ({n}): whole on every device")
            continue
        k = mapping.num_shards(d)
        axes = ", ".join(str(a) for a in mapping.dims[d].axes)
        ranges = dict(sorted((b.index[d], b.bounds[d]) for b in blocks))
        lines.append(
            f"dim {d} ({n}): split {k} ways over {axes}: "
            + " ".join(f"[{a}:{b}]" for a, b in ranges.values())
        )
    if len(shape) > 2 and mapping is not None and len(blocks) <= 16:
        for b in blocks:
            where = ", ".join(f"{lo}:{hi}" for lo, hi in b.bounds)
            who = ("devices " if len(b.devices) > 1 else "device ") + _ids_text(b.devices)
            lines.append(f"  {who}: [{where}]")
    if mapping is not None and mapping.unreduced:
        lines.append(
            "unreduced over "
            + ", ".join(str(a) for a in mapping.unreduced)
            + ": devices along it hold partial sums of the same block"
        )
    return "\n".join(lines) + "\n"


def _grid(shape: tuple[int, ...], blocks: list[Block]) -> list[str]:
    """Box-drawing grid: 1-D is one row of blocks; 2-D has dim 0 down and dim 1 across."""
    if len(shape) == 1:
        cell = {(0, b.index[0]): _ids_text(b.devices) for b in blocks}
    else:
        cell = {(b.index[0], b.index[1]): _ids_text(b.devices) for b in blocks}
    rows = sorted({r for r, _ in cell})
    cols = sorted({c for _, c in cell})
    w = max(7, max(len(t) for t in cell.values()) + 4)
    pad = 1 if len(rows) <= 4 else 0  # blank lines above and below a label

    def border(left: str, mid: str, right: str) -> str:
        return left + mid.join("\u2500" * w for _ in cols) + right

    out = [border("\u250c", "\u252c", "\u2510")]
    for i, r in enumerate(rows):
        blank = "\u2502" + "\u2502".join(" " * w for _ in cols) + "\u2502"
        label = "\u2502" + "\u2502".join(cell.get((r, c), "").center(w) for c in cols) + "\u2502"
        out += [blank] * pad + [label] + [blank] * pad
        if i + 1 < len(rows):
            out.append(border("\u251c", "\u253c", "\u2524"))
    out.append(border("\u2514", "\u2534", "\u2518"))
    return out
