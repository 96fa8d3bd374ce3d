"""Ops that create data, per device: an iota along a sharded dim counts from the shard's offset;
a sharded constant that is not a splat is cut from the padded global value (spmd.all_slice)."""

from __future__ import annotations

import numpy as np

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.registry import attr
from shardc.ir.types import is_complex, is_float, shard_shape
from shardc.passes.analysis.collectives.shards import chunk
from shardc.passes.spmd.lowering.collectives import all_slice
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering


def lower_constant(low: FunctionLowering, op: Operation) -> None:
    """A splat is the same everywhere; any other sharded constant is cut from the padded global
    value with spmd.all_slice (local, no communication)."""
    m = op.result.mapping
    value = attr(op, "value")
    if m is None or all(k == 1 for k in m.shard_counts()) or value.is_splat:
        if m is not None and m.unreduced:
            raise PassError("a constant cannot be unreduced", op.loc)
        return
    t = op.result.type
    array = value.to_numpy(t.shape, t.dtype)
    padded = tuple(k * chunk(n, k) for n, k in zip(t.shape, m.shard_counts()))
    array = np.pad(array, [(0, p - n) for n, p in zip(t.shape, padded)])
    kind = (bool if t.dtype == "i1" else float if is_float(t.dtype)
            else complex if is_complex(t.dtype) else int)
    dense = DenseElements(tuple(kind(v) for v in array.reshape(-1)), padded)
    cur = low.emit("constant", [], {"value": dense}, padded, t.dtype)
    for d, dim in enumerate(m.dims):
        if dim.axes:
            cur = all_slice(low, cur, d, dim.axes, chunk(t.shape[d], m.num_shards(d)))
    low.replace(op, cur)


def lower_iota(low: FunctionLowering, op: Operation) -> None:
    """An iota along a sharded dim counts from the shard's global offset."""
    m = op.result.mapping
    d = attr(op, "iota_dimension")
    if m is None or m.num_shards(d) == 1:
        return
    t = op.result.type
    shape = shard_shape(t.shape, m)
    iota = low.emit("iota", [], {"iota_dimension": d}, shape, t.dtype)
    offset = low.offset(m.dims[d].axes, shape[d])
    if t.dtype != "i32":
        offset = low.emit("convert", [offset], {}, (), t.dtype)
    low.replace(op, low.emit("add", [iota, low.splat(offset, shape)], {}, shape, t.dtype))
