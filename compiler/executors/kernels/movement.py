"""numpy kernels of the ops that create and rearrange data: constant, iota, broadcast_in_dim,
reshape, transpose, concatenate, slice, pad, reverse, dynamic_slice, dynamic_update_slice.

- `pad` puts interior padding and positive edges into a buffer, then negative edges crop it.
- `dynamic_slice` / `dynamic_update_slice` clamp each start index to `[0, n - size]`.
"""

from __future__ import annotations

import numpy as np

from shardc.executors.dtypes import F64, I64, is_float_dtype
from shardc.executors.kernels import Kernel, result_type
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


def _constant(op: Operation) -> np.ndarray:
    t = op.results[0].type
    return attr(op, "value").to_numpy(t.shape, t.dtype)


def _iota(op: Operation) -> np.ndarray:
    shape, dtype = result_type(op)
    d = attr(op, "iota_dimension")
    line = np.arange(shape[d], dtype=F64 if is_float_dtype(dtype) else I64).astype(dtype)
    return np.broadcast_to(line.reshape([n if i == d else 1 for i, n in enumerate(shape)]), shape)


def _broadcast_in_dim(op: Operation, x: np.ndarray) -> np.ndarray:
    shape = op.results[0].type.shape
    dims = attr(op, "broadcast_dimensions")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    if order != list(range(len(dims))):
        x = x.transpose(order)
    expanded = [1] * len(shape)
    for i, src in enumerate(order):
        expanded[dims[src]] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


def _reshape(op: Operation, x: np.ndarray) -> np.ndarray:
    return x.reshape(op.results[0].type.shape)


def _transpose(op: Operation, x: np.ndarray) -> np.ndarray:
    return x.transpose(attr(op, "permutation"))


def _concatenate(op: Operation, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=attr(op, "dimension"))


def _slice(op: Operation, x: np.ndarray) -> np.ndarray:
    start, limit = attr(op, "start_indices"), attr(op, "limit_indices")
    strides = attr(op, "strides") or (1,) * x.ndim
    return x[tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))]


def _pad(op: Operation, x: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Interior padding and positive edges into a buffer, then negative edges crop it."""
    lo, hi = attr(op, "edge_padding_low"), attr(op, "edge_padding_high")
    interior = attr(op, "interior_padding") or (0,) * x.ndim
    spread = [n + max(n - 1, 0) * k for n, k in zip(x.shape, interior)]
    buffer_shape = [max(a, 0) + n + max(b, 0) for a, n, b in zip(lo, spread, hi)]
    out = np.full(buffer_shape, value, dtype=x.dtype)
    out[tuple(slice(max(a, 0), max(a, 0) + n, k + 1) for a, n, k in zip(lo, spread, interior))] = x
    return out[tuple(slice(max(-a, 0), size - max(-b, 0)) for a, b, size in
                     zip(lo, hi, buffer_shape))]


def _reverse(op: Operation, x: np.ndarray) -> np.ndarray:
    dims = attr(op, "dimensions")
    return np.flip(x, axis=tuple(dims)) if dims else x


def _starts(x_shape, sizes, indices) -> list[int]:
    return [
        int(np.clip(int(np.asarray(i)), 0, n - s)) for i, n, s in zip(indices, x_shape, sizes)
    ]


def _dynamic_slice(op: Operation, x: np.ndarray, *indices: np.ndarray) -> np.ndarray:
    sizes = attr(op, "slice_sizes")
    starts = _starts(x.shape, sizes, indices)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


def _dynamic_update_slice(
    op: Operation, x: np.ndarray, update: np.ndarray, *indices: np.ndarray
) -> np.ndarray:
    starts = _starts(x.shape, update.shape, indices)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


MOVEMENT_KERNELS: dict[str, Kernel] = {
    "constant": _constant,
    "iota": _iota,
    "broadcast_in_dim": _broadcast_in_dim,
    "reshape": _reshape,
    "transpose": _transpose,
    "concatenate": _concatenate,
    "slice": _slice,
    "pad": _pad,
    "reverse": _reverse,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
}
