"""Padding: uneven shards are padded at the end (ceil(n/k) per device), and the padding holds
unspecified values. So a contraction or a reduction that would read it masks it first (`mask`: a
`select` on an iota-based predicate, `valid`), and collectives pad and slice their blocks so only
padding ever lands in padding (`pad_dim`, `slice_dim`).
"""

from __future__ import annotations

from typing import Any

from shardc.ir.attributes import Keyword
from shardc.ir.core import Value
from shardc.ir.mesh import AxisRef
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering, with_dim


def valid(
    low: FunctionLowering, shape: tuple[int, ...], d: int, n: int, axes: tuple[AxisRef, ...]
) -> Value:
    """i1 of `shape`: true where dim d's global index (shard index * local size + iota) < n.

    %lim = subtract n, axis_index(axes) * shape[d]    ; real elements left in this shard
    %ok = compare iota(d), broadcast(%lim) LT
    """
    key = ("valid", shape, d, n, axes)
    if key not in low.cache:
        limit_key = ("limit", axes, shape[d], n)
        if limit_key not in low.cache:
            offset = low.offset(axes, shape[d])
            low.cache[limit_key] = low.emit(
                "subtract", [low.const(n, "i32"), offset], {}, (), "i32"
            )
        limit = low.cache[limit_key]
        iota = low.emit("iota", [], {"iota_dimension": d}, shape, "i32")
        low.cache[key] = low.emit(
            "compare",
            [iota, low.splat(limit, shape)],
            {"comparison_direction": Keyword("LT")},
            shape,
            "i1",
        )
    return low.cache[key]


def mask(
    low: FunctionLowering, x: Value, dims: list[tuple[int, int, tuple[AxisRef, ...]]], fill: Any
) -> Value:
    """`x` with the padding of each `(dim, global size, axes)` replaced by `fill`."""
    shape, dtype = low.local_shape(x), x.type.dtype
    pred: Value | None = None
    for d, n, axes in dims:
        ok = valid(low, shape, d, n, axes)
        pred = ok if pred is None else low.emit("and", [pred, ok], {}, shape, "i1")
    assert pred is not None
    return low.emit("select", [pred, x, low.const(fill, dtype, shape)], {}, shape, dtype)


def pad_dim(low: FunctionLowering, x: Value, d: int, size: int) -> Value:
    """`x` zero-padded at the end of dim d to `size`."""
    shape = low.local_shape(x)
    if shape[d] >= size:
        return x
    rank = len(shape)
    high = tuple(size - shape[d] if i == d else 0 for i in range(rank))
    attrs = {"edge_padding_low": (0,) * rank, "edge_padding_high": high}
    zero = low.const(0, x.type.dtype)
    return low.emit("pad", [x, zero], attrs, with_dim(shape, d, size), x.type.dtype)


def slice_dim(low: FunctionLowering, x: Value, d: int, size: int) -> Value:
    shape = low.local_shape(x)
    if shape[d] == size:
        return x
    attrs = {"start_indices": (0,) * len(shape), "limit_indices": with_dim(shape, d, size)}
    return low.emit("slice", [x], attrs, with_dim(shape, d, size), x.type.dtype)
