"""The halo exchange of `sdy-resolve-permutation-factors` (Shardy's `handleReverseOp` for a
reversed dim its shard count does not divide, as jaxlib 0.10.2 ships it: Shardy 4831393c).

    %0 = stablehlo.reverse %arg0, dims = [0] {sdy.sharding = <@m, [{"a"}, {}]>} : tensor<14x8xf32>
 -> %p = stablehlo.pad %arg0, %cst, high = [2, 0]                     (14 -> 16, on the high side)
    %h = sdy.manual_computation(%p) ... manual_axes={"a"} (%l: tensor<4x8xf32>) {
      %t = stablehlo.slice %l [2:4, 0:8]                          (each shard's tail ...)
      %s = "stablehlo.collective_permute"(%t) <{source_target_pairs = dense<[[0, 1], [1, 2],
             [2, 3]]> : tensor<3x2xi64>}>                         (... goes to the next shard)
      %b = stablehlo.slice %l [0:2, 0:8]
      %c = stablehlo.concatenate %s, %b, dim = 0                  (the padding is now low)
      sdy.return %c
    }
    %r = sdy.reshard %h <@m_reversed, [{"a"}, {}]>
    %0 = stablehlo.reverse %r, dims = [0] {sdy.sharding = <@m, [{"a"}, {}]>} : tensor<16x8xf32>
    %1 = stablehlo.slice %0 [0:14, 0:8]                           (the users read %1)

The padding (at most one shard: the caller checks) moves from the high end of the dim to its low
end, so that the local reverse on the device-reversed mesh puts it back at the high end, where
the final slice drops it. The axes of every padded dim are manual; the shift runs once per padded
dim, in dim order, over that dim's axes (sub-axes too: their coordinate is shifted, a carry goes
to the next major one). The manual computation's in and out sharding is the operand's; the body's
values take it without the manual axes.

`source_target_pairs` are device ids of the whole mesh, as StableHLO means them and as Shardy
writes them since d83d34d2: each device sends to the device holding the next shard of the dim,
its coordinates on every other axis kept. jaxlib 0.10.2 (Shardy 4831393c) writes positions in
the mesh of the manual axes alone instead, which are the devices' ids only when every axis of
size > 1 is manual and the device ids are the iota; elsewhere its program moves the wrong blocks
and shardc's differs from it (docs/interop.md). Like jaxlib 0.10.2, no channel handle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.ir.attributes import DenseElements, Symbol
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef, DeviceMesh
from shardc.ir.ops.manual import fill_values
from shardc.ir.types import DistributedTensorType, scalar_of


def right_shift_pairs(mesh: DeviceMesh, dim_axes: Sequence[AxisRef]) -> list[tuple[int, int]]:
    """Shardy's `getRightShiftSourceTargetPairs` (d83d34d2, one hop): `(i, j)` for every device
    i of the mesh whose shard of a dim sharded by `dim_axes` has a next one, held by device j
    (the shard index + 1, the minor-most of `dim_axes` first, carrying to the major ones; every
    other coordinate kept). Device ids, in mesh order. The last shard sends nothing."""
    pairs = []
    for i in range(mesh.num_devices):
        coords = mesh.coords(i)
        nxt = dict(coords)
        for a in reversed(dim_axes):
            size = a.axis_size(mesh)
            post = mesh.axis_size(a.name) // (a.pre * size)
            if a.coordinate(mesh, coords[a.name]) + 1 < size:
                nxt[a.name] += post
                pairs.append((mesh.device_id(i), mesh.device_id(mesh.position(nxt))))
                break
            nxt[a.name] -= (size - 1) * post
    return pairs


def local_sharding(m: NamedMapping, manual: Sequence[str]) -> NamedMapping:
    """Shardy's `getLocalSharding`: `m` without the manual axes in its dims (its replicated and
    unreduced axes kept as they are)."""
    return m.replace(dims=tuple(d.with_axes([a for a in d.axes if a.name not in manual])
                                for d in m.dims))


class _Body:
    """Builds the ops of the manual computation's body, typed with the body's sharding."""

    def __init__(self, func: Function, sharding: NamedMapping, anchor: Operation):
        self.func, self.sharding, self.anchor = func, sharding, anchor

    def emit(self, name: str, operands: list[Value], attrs: dict, shape: tuple[int, ...]
             ) -> Value:
        t = DistributedTensorType(shape, operands[0].type.dtype, self.sharding)
        return self.func.body.append(Operation.at(self.anchor, name, operands, [t], attrs)).result

    def slice(self, v: Value, dim: int, lo: int, hi: int) -> Value:
        shape = v.type.shape
        limits = tuple(hi if d == dim else n for d, n in enumerate(shape))
        starts = tuple(lo if d == dim else 0 for d in range(len(shape)))
        return self.emit("slice", [v], {"start_indices": starts, "limit_indices": limits,
                                        "strides": (1,) * len(shape)},
                         tuple(b - a for a, b in zip(starts, limits)))

    def shift_right(self, v: Value, dim: int, n: int, pairs: list[tuple[int, int]]) -> Value:
        """Shardy's `shiftDataRight`: the last `n` elements of `dim` of every shard go to the
        front of the next shard (`pairs`); the first shard receives zeros."""
        size = v.type.shape[dim]
        halo = self.slice(v, dim, size - n, size) if n < size else v
        moved = self.emit("xla.collective_permute", [halo],
                          {"source_target_pairs": tuple(pairs)}, halo.type.shape)
        if n == size:
            return moved
        return self.emit("concatenate", [moved, self.slice(v, dim, 0, size - n)],
                         {"dimension": dim}, v.type.shape)


def _body_name(module: Module, func: Function) -> str:
    base = f"{func.name}_manual"
    name, n = base, 0
    while name in module.functions:
        n += 1
        name = f"{base}_{n}"
    return name


def shift_padding_low(anchor: Operation, padded: Value, sharding: NamedMapping,
                      manual: set[str], shifts: list[tuple[int, int]]) -> Value:
    """Shardy's `shiftPaddingToLow`: a manual computation over the `manual` axes, inserted
    before `anchor`, that moves the padding of each `(dim, amount)` of `shifts` (its high end)
    to the low end of the dim; returns its result."""
    func = anchor.function
    assert func is not None and func.module is not None and anchor.parent is not None
    mesh = sharding.mesh
    axes = [n for n in mesh.axis_names if n in manual]
    cut = [math.prod(a.axis_size(mesh) for a in d.axes if a.name in manual)
           for d in sharding.dims]
    shape = tuple(n // k for n, k in zip(padded.type.shape, cut, strict=True))
    inner = local_sharding(sharding, axes)
    local = DistributedTensorType(shape, padded.type.dtype, inner)
    body = Function(_body_name(func.module, func), [local], [local], visibility="private",
                    loc=anchor.loc)
    func.module.add_function(body)
    build = _Body(body, inner, anchor)
    v = body.args[0]
    for dim, n in shifts:
        dim_axes = [a for a in sharding.dims[dim].axes if a.name in manual]
        v = build.shift_right(v, dim, n, right_shift_pairs(mesh, dim_axes))
    body.body.append(Operation.at(anchor, "return", [v], [], {}))
    op = Operation.at(anchor, "manual_computation", [padded], [padded.type], {
        "body": Symbol(body.name), "in_shardings": (sharding,),
        "manual_axes": tuple(AxisRef(n) for n in axes), "out_shardings": (sharding,),
    })
    anchor.parent.insert_before(anchor, op)
    fill_values(op)
    return op.result


def pad_high(anchor: Operation, v: Value, shape: tuple[int, ...], sharding: NamedMapping
             ) -> Value:
    """`stablehlo.pad` of `v` with zeros at the high end of each dim up to `shape` (a zero
    constant first), inserted before `anchor`, its result sharded as `sharding`."""
    assert anchor.parent is not None
    dtype = v.type.dtype
    zero = Operation.at(anchor, "constant", [], [DistributedTensorType((), dtype)],
                        {"value": DenseElements((scalar_of(0, dtype),))})
    anchor.parent.insert_before(anchor, zero)
    rank = len(shape)
    pad = Operation.at(anchor, "pad", [v, zero.result],
                       [DistributedTensorType(shape, dtype, sharding)], {
        "edge_padding_low": (0,) * rank,
        "edge_padding_high": tuple(a - b for a, b in zip(shape, v.type.shape, strict=True)),
        "interior_padding": (0,) * rank,
    })
    anchor.parent.insert_before(anchor, pad)
    return pad.result


def slice_to(after: Operation, v: Value, shape: tuple[int, ...], sharding: NamedMapping
             ) -> Value:
    """`stablehlo.slice` of `v` from 0 to `shape`, inserted after `after`."""
    assert after.parent is not None
    rank = len(shape)
    op = Operation.at(after, "slice", [v], [DistributedTensorType(shape, v.type.dtype, sharding)],
                      {"start_indices": (0,) * rank, "limit_indices": tuple(shape),
                       "strides": (1,) * rank})
    after.parent.insert_after(after, op)
    return op.result
