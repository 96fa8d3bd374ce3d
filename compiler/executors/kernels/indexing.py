"""numpy kernels of `gather` and `scatter` (StableHLO semantics).

    y = gather(op, operand, indices)              # y = scatter(op, operand, indices, updates)

Both turn the start indices into numpy fancy indices on the indexed operand dims (moved to the
front) and plain slices on the others, so an embedding lookup is one `table[ids]`.
- `gather` clamps start indices so the slice fits (StableHLO); `scatter` skips a whole update
  window that does not fit the operand (XLA).
- Unsigned indices past int64's range saturate to its maximum (and then clamp or skip as above).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shardc.executors.dtypes import F32, I64, LOW_FLOATS
from shardc.executors.kernels import Kernel
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices as int64 of shape batch_shape + (index vector length,)."""
    if indices.dtype == np.uint64:
        indices = np.minimum(indices, np.uint64(np.iinfo(np.int64).max))
    x = indices.astype(I64, copy=False)
    if index_vector_dim == x.ndim:
        return x[..., None]
    return np.moveaxis(x, index_vector_dim, -1)


def _axis_range(size: int, axis: int, rank: int) -> np.ndarray:
    """arange(size) laid along `axis` of a rank-`rank` array of ones: broadcasts as an index."""
    return np.arange(size, dtype=I64).reshape((1,) * axis + (size,) + (1,) * (rank - axis - 1))


def _batch_iota(batch_shape: tuple[int, ...], indices_dim: int, index_vector_dim: int):
    """The batch position along `indices_dim` (a dim of the indices array), batch-shaped."""
    pos = indices_dim if indices_dim < index_vector_dim else indices_dim - 1
    return _axis_range(batch_shape[pos], pos, len(batch_shape))


def _starts(
    operand_shape: tuple[int, ...],
    idx: np.ndarray,
    index_map: tuple[int, ...],
    operand_batching: tuple[int, ...],
    indices_batching: tuple[int, ...],
    index_vector_dim: int,
) -> list[np.ndarray | None]:
    """Per operand dim, the batch-shaped start index (None when it is always 0)."""
    batch_shape = idx.shape[:-1]
    starts: list[np.ndarray | None] = []
    for d in range(len(operand_shape)):
        if d in index_map:
            starts.append(idx[..., index_map.index(d)])
        elif d in operand_batching:
            src = indices_batching[operand_batching.index(d)]
            starts.append(_batch_iota(batch_shape, src, index_vector_dim))
        else:
            starts.append(None)
    return starts


def gather(op: Operation, operand: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Fancy indexing on the indexed dims (moved to the front), plain slices on the others:
    an embedding lookup is one `table[ids]`."""
    offset_dims = attr(op, "offset_dims")
    dropped = set(attr(op, "collapsed_slice_dims")) | set(attr(op, "operand_batching_dims"))
    slice_sizes = attr(op, "slice_sizes")
    ivd = attr(op, "index_vector_dim")
    index_map = attr(op, "start_index_map")
    idx = _index_vectors(indices, ivd)
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    starts = _starts(operand.shape, idx, index_map, attr(op, "operand_batching_dims"),
                     attr(op, "start_indices_batching_dims"), ivd)
    indexed = [d for d, s in enumerate(starts) if s is not None]
    plain = [d for d, s in enumerate(starts) if s is None]
    index: list[Any] = []
    for j, d in enumerate(indexed):
        start = starts[d]
        assert start is not None
        if d in index_map:  # StableHLO clamps the slice into the operand
            start = np.clip(start, 0, operand.shape[d] - slice_sizes[d])
        start = np.broadcast_to(start, batch_shape).reshape(batch_shape + (1,) * len(indexed))
        if slice_sizes[d] != 1:
            start = start + _axis_range(slice_sizes[d], nb + j, nb + len(indexed))
        index.append(start)
    index += [slice(0, slice_sizes[d]) for d in plain]
    if indexed:  # batch_shape + windows of the indexed dims + windows of the plain dims
        gathered = operand.transpose(indexed + plain)[tuple(index)]
    else:
        gathered = np.broadcast_to(operand[tuple(index)], batch_shape + tuple(slice_sizes))
    layout = [d for d in indexed + plain if d not in dropped]
    gathered = gathered.reshape(batch_shape + tuple(slice_sizes[d] for d in layout))
    kept = sorted(layout)  # offset dims of the result take the kept operand dims in order
    perm, bi, oi = [], 0, 0
    for r in range(nb + len(kept)):
        if r in offset_dims:
            perm.append(nb + layout.index(kept[oi]))
            oi += 1
        else:
            perm.append(bi)
            bi += 1
    return gathered.transpose(perm)


_SCATTER_UFUNCS = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
}


def scatter(op: Operation, operand: np.ndarray, indices: np.ndarray, updates: np.ndarray):
    """`ufunc.at` (or assignment for `replace`) with fancy indices on the scattered dims, moved
    to the front, and plain slices on the others; windows that do not fit are dropped first."""
    window_dims = sorted(attr(op, "update_window_dims"))
    no_window = set(attr(op, "inserted_window_dims")) | set(attr(op, "input_batching_dims"))
    ivd = attr(op, "index_vector_dim")
    idx = _index_vectors(indices, ivd)
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
    upd = updates.transpose(scatter_dims + window_dims)
    window_sizes = iter(upd.shape[nb:])
    wsize = [1 if d in no_window else next(window_sizes) for d in range(operand.ndim)]
    upd = upd.reshape(batch_shape + tuple(wsize))  # batch + a window axis per operand dim
    starts = _starts(operand.shape, idx, attr(op, "scatter_dims_to_operand_dims"),
                     attr(op, "input_batching_dims"), attr(op, "scatter_indices_batching_dims"),
                     ivd)
    scalar = operand.ndim == 0
    if scalar:  # every update lands on the one element: index a length-1 view of it
        operand, wsize, upd = operand.reshape(1), [1], upd.reshape(batch_shape + (1,))
        starts = [None]
    if all(s is None for s in starts):  # one fancy-indexed dim makes the batch explicit
        starts[0] = np.zeros(batch_shape, dtype=I64)
    indexed = [d for d, s in enumerate(starts) if s is not None]
    plain = [d for d, s in enumerate(starts) if s is None]
    valid = np.ones(batch_shape, dtype=np.bool_)
    index: list[Any] = []
    for j, d in enumerate(indexed):
        start = starts[d]
        assert start is not None
        start = np.broadcast_to(start, batch_shape)
        valid &= (start >= 0) & (start <= operand.shape[d] - wsize[d])  # XLA drops the window
        start = start.reshape(batch_shape + (1,) * len(indexed))
        if wsize[d] != 1:
            start = start + _axis_range(wsize[d], nb + j, nb + len(indexed))
        index.append(start)
    if any(wsize[d] > operand.shape[d] for d in plain):
        valid[...] = False
    values = upd.transpose(list(range(nb)) + [nb + d for d in indexed + plain])
    if not valid.all():
        fancy_shape = batch_shape + tuple(wsize[d] for d in indexed)
        index = [np.broadcast_to(i, fancy_shape)[valid] for i in index]
        values = values[valid]
    index += [slice(0, wsize[d]) for d in plain]
    kind = attr(op, "kind").word
    dtype = operand.dtype
    low = dtype in LOW_FLOATS
    out = operand.astype(F32) if low else operand.copy()
    if low:
        values = values.astype(F32)
    target = out.transpose(indexed + plain)  # a view: writes land in `out`
    if kind == "replace":
        target[tuple(index)] = values
    else:
        _SCATTER_UFUNCS[kind].at(target, tuple(index), values)
    if scalar:
        out = out.reshape(())
    return out.astype(dtype) if low else out


INDEXING_KERNELS: dict[str, Kernel] = {
    "gather": gather,
    "scatter": scatter,
}
