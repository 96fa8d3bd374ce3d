"""The `spmd.*` collectives on batched values (device_layout.py).

    run = batched_collective(op, layout, general=False)     # run(*batched operands)

A collective over axes is a reshape, a transpose or a reduction over the leading dims of those
axes: `all_gather` moves them into the gathered dim, `all_slice` keeps each device's own part
(a diagonal), `all_reduce` reduces them (keeping size 1: every device holds the same block),
`all_to_all` and `reduce_scatter` compose these. A collective whose `groups` are not the ones
its `axes` imply runs group by group on per-device blocks, exactly as `groups` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.executors.device_layout import DeviceLayout
from shardc.executors.dtypes import F32, LOW_FLOATS
from shardc.executors.reduce_kinds import REDUCE_UFUNCS
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.passes.analysis.collectives.groups import device_groups


def batched_collective(op: Operation, layout: DeviceLayout, general: bool) -> Callable[..., Any]:
    """The `spmd.*` op as a function of batched values; `general`: run it group by group on
    per-device blocks whatever its groups (see `NumpyExecutor`). A combined collective (several
    operands) returns one result per operand."""
    runs = operand_runners(op, layout, general)
    if len(runs) == 1:
        return runs[0]
    return lambda *xs: tuple(run(x) for run, x in zip(runs, xs))


def operand_runners(op: Operation, layout: DeviceLayout, general: bool) -> list[Callable[..., Any]]:
    """What the `spmd.*` op does to each of its operands (the simulation moves each operand's
    blocks on its own; a combined collective is the same collective on every operand)."""
    name = op.name
    r = layout.rank
    if name == "spmd.axis_index":
        return [_axis_index(op, layout)]
    if name == "spmd.collective_permute":
        return [permute(op, layout)]
    n = op.num_operands
    axes = attr(op, "axes")
    g = layout.index(axes)
    groups = [list(x) for x in attr(op, "groups")]
    if general or groups != device_groups(layout.mesh, axes):
        return [_grouped(op, layout, groups)] * n
    if name == "spmd.all_gather":
        d = attr(op, "dim")
        return [lambda x: _gather(layout, x, g, r + d)] * n
    if name == "spmd.all_slice":
        d = attr(op, "dim")
        return [lambda x: _slice(layout, x, g, r + d)]
    if name == "spmd.all_to_all":
        s, c = attr(op, "split_dim"), attr(op, "concat_dim")
        return [lambda x: _all_to_all(layout, x, g, r + s, r + c)]
    if name == "spmd.all_reduce":
        kind = attr(op, "kind").word
        return [lambda x: _reduce(layout, x, g, kind)] * n
    if name == "spmd.reduce_scatter":
        d = attr(op, "dim")
        return [lambda x: _slice(layout, _reduce(layout, x, g, "add"), g, r + d)] * n
    raise ExecutionError(f"the numpy executor has no implementation of '{name}'", op.loc)


def summing(
    op: Operation, layout: DeviceLayout, general: bool
) -> tuple[list[int], Callable[[np.ndarray], np.ndarray]] | None:
    """For an `all_reduce` (sum) or `reduce_scatter` run batched: the leading dims `g` it sums
    over and what it does with the sum of each operand (nothing, or keep each device's part of
    `dim`), so that the op producing an operand can compute the sum itself (`summed_dot`). None
    for any other op, or one run group by group."""
    if op.name not in ("spmd.all_reduce", "spmd.reduce_scatter") or general:
        return None
    if op.name == "spmd.all_reduce" and attr(op, "kind").word != "add":
        return None
    axes = attr(op, "axes")
    if [list(x) for x in attr(op, "groups")] != device_groups(layout.mesh, axes):
        return None
    g = layout.index(axes)
    if not g:
        return None
    if op.name == "spmd.all_reduce":
        return g, lambda x: x
    d = layout.rank + attr(op, "dim")
    return g, lambda x: _slice(layout, x, g, d)


def summed(layout: DeviceLayout, g: list[int]) -> Callable[[np.ndarray], np.ndarray]:
    """The sum of a batched value over leading dims `g` (size 1 left there)."""
    return lambda x: _reduce(layout, x, g, "add")


def _gather(layout: DeviceLayout, x: np.ndarray, g: list[int], dim: int) -> np.ndarray:
    """Concatenate the group's blocks (member order) along `dim`; uniform along `g` after."""
    r = layout.rank
    x = layout.full(x, g)
    rest = [a for a in range(r) if a not in g]
    perm = rest + list(range(r, dim)) + g + list(range(dim, x.ndim))
    local = list(x.shape[r:])
    local[dim - r] *= math.prod(layout.sizes[a] for a in g)
    lead = [1 if a in g else x.shape[a] for a in range(r)]
    return x.transpose(perm).reshape(lead + local)


def _slice(layout: DeviceLayout, x: np.ndarray, g: list[int], dim: int) -> np.ndarray:
    """Each device keeps part `i` (its index in the group) of `dim`, cut into equal parts."""
    x = layout.full(x, g)
    sizes = [layout.sizes[a] for a in g]
    part = x.shape[dim] // math.prod(sizes)
    x = x.reshape(x.shape[:dim] + tuple(sizes) + (part,) + x.shape[dim + 1:])
    for a in g:  # the device's own part: the diagonal of its leading dim and the split dim
        x = np.moveaxis(np.diagonal(x, axis1=a, axis2=dim), -1, a)
    return x


def _all_to_all(layout: DeviceLayout, x: np.ndarray, g: list[int], s: int, c: int) -> np.ndarray:
    """Device i of the group gets part i of every member's `s`, the parts concatenated along
    `c` in member order: one transpose of `x` with `s` cut into parts (a single copy, and the
    result is contiguous, which the op reading it wants)."""
    if s == c:
        return _slice(layout, _gather(layout, x, g, c), g, s)
    x = layout.full(x, g)
    sizes = [layout.sizes[a] for a in g]
    k = len(sizes)
    count = math.prod(sizes)
    y = x.reshape(x.shape[:s] + tuple(sizes) + (x.shape[s] // count,) + x.shape[s + 1:])

    def at(d: int) -> int:  # where dim d of x is in y
        return d if d < s else d + k

    # Leading dim g[t] now indexes the part (dim s + t of y); the member it came from (the old
    # leading dim) goes in front of `c`, major to minor in group order.
    order = [s + g.index(a) if a in g else a for a in range(layout.rank)]
    for d in range(layout.rank, x.ndim):
        if d == s:
            order.append(s + k)
        elif d == c:
            order.extend([*g, at(c)])
        else:
            order.append(at(d))
    shape = list(x.shape)
    shape[s] //= count
    shape[c] *= count
    return y.transpose(order).reshape(shape)


def _reduce(layout: DeviceLayout, x: np.ndarray, g: list[int], kind: str) -> np.ndarray:
    x = layout.full(x, g)
    dtype = x.dtype
    compute = F32 if dtype in LOW_FLOATS else dtype
    out = REDUCE_UFUNCS[kind].reduce(x, axis=tuple(g), keepdims=True, dtype=compute)
    return out.astype(dtype, copy=False)


def _axis_index(op: Operation, layout: DeviceLayout) -> Callable[[], np.ndarray]:
    index = np.zeros((1,) * layout.rank, dtype=np.int32)
    for a in layout.index(attr(op, "axes")):
        shape = [1] * layout.rank
        shape[a] = layout.sizes[a]
        index = index * layout.sizes[a] + np.arange(layout.sizes[a], dtype=np.int32).reshape(shape)
    index.flags.writeable = False
    return lambda: index


def permute(op: Operation, layout: DeviceLayout, key: str = "pairs"
            ) -> Callable[[np.ndarray], np.ndarray]:
    """A collective_permute on batched values: the block of each pair's source device (an id of
    the layout's mesh) goes to its target; a device no pair targets receives zeros."""
    mesh = layout.mesh
    position = mesh.positions_by_id()
    pairs = attr(op, key)
    unknown = sorted({d for pair in pairs for d in pair} - set(position))
    if unknown:
        raise ExecutionError(f"'{op.name}' op names device {unknown[0]}, which is not a device "
                             f"of mesh @{mesh.name} (devices {sorted(position)})", op.loc)
    src = np.array([position[s] for s, _ in pairs], dtype=np.intp)
    tgt = np.array([position[t] for _, t in pairs], dtype=np.intp)

    def run(x: np.ndarray) -> np.ndarray:
        flat = layout.positions(x)
        out = np.zeros_like(flat)  # lax.ppermute: a device no pair targets receives zeros
        out[tgt] = flat[src]
        return layout.from_positions(out)

    return run


def _grouped(op: Operation, layout: DeviceLayout, groups: list[list[int]]):
    """A collective run group by group on per-device blocks, exactly as `groups` says."""
    name = op.name
    return grouped(op, layout, groups, name.removeprefix("spmd."),
                   kind=attr(op, "kind").word if name == "spmd.all_reduce" else "add",
                   dim=op.attributes.get("dim"), split=op.attributes.get("split_dim"),
                   concat=op.attributes.get("concat_dim"))


def grouped(op: Operation, layout: DeviceLayout, groups: list[list[int]], what: str, *,
            kind: str = "add", dim: int | None = None, split: int | None = None,
            concat: int | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """Collective `what` (all_gather, all_slice, all_to_all, all_reduce, reduce_scatter) along
    `dim` (or `split` -> `concat`) run group by group on per-device blocks; `groups` are device
    ids of the layout's mesh and must cover every device once."""
    mesh = layout.mesh
    position = mesh.positions_by_id()
    covered = sorted(d for grp in groups for d in grp)
    if covered != sorted(position):
        raise ExecutionError(f"'{op.name}' op groups must cover every device of mesh "
                             f"@{mesh.name} once (devices {sorted(position)})", op.loc)

    def parts(block: np.ndarray, dim: int, n: int) -> list[np.ndarray]:
        return np.split(block, n, axis=dim)

    def run(x: np.ndarray) -> np.ndarray:
        flat = layout.positions(x)
        block_dtype = x.dtype
        out: list[Any] = [None] * layout.num_devices
        for grp in groups:
            members = [flat[position[d]] for d in grp]
            n = len(grp)
            if what == "all_gather":
                whole = np.concatenate(members, axis=dim)
                new = [whole] * n
            elif what == "all_slice":
                new = [parts(b, dim, n)[i] for i, b in enumerate(members)]
            elif what == "all_to_all":
                pieces = [parts(b, split, n) for b in members]
                new = [np.concatenate([p[j] for p in pieces], axis=concat) for j in range(n)]
            else:
                total = REDUCE_UFUNCS[kind].reduce(np.stack(members), axis=0, dtype=block_dtype)
                new = [total] * n if what == "all_reduce" else parts(total, dim, n)
            for d, block in zip(grp, new):
                out[position[d]] = block
        return layout.from_positions(np.stack(out))

    return run
