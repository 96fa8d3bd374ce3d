"""numpy kernels for shifts, dynamic slices, convolution, reduce_window, optimization_barrier,
top_k and the custom_call targets shardc knows (StableHLO semantics; see kernels.py).

- Shift amounts are read as unsigned: an amount >= the bit width gives 0 (`shift_left`,
  `shift_right_logical`) or the sign fill (`shift_right_arithmetic`).
- `dynamic_slice` / `dynamic_update_slice` clamp each start index to `[0, n - size]`.
- `convolution` and `reduce_window` build the dilated, padded input once and take strided
  windows of it (`sliding_window_view`), so no Python loop runs per element.
- `top_k` is the k largest entries of the last dim, descending, ties by lower index.
- custom_call targets: `lapack_spotrf_ffi` / `lapack_dpotrf_ffi` (Cholesky, as JAX's
  `jnp.linalg.cholesky` lowers on CPU): the factor and an i32 `info` (0 on success; a matrix
  that is not positive definite gives NaNs and info 1).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from shardc.executors.dtypes import F32, LOW_FLOATS
from shardc.ir.core import Operation
from shardc.ir.ops.custom_call import CUSTOM_CALL_TARGETS
from shardc.ir.ops.registry import attr
from shardc.ir.ops.window import CONV_DIMS, conv_padding
from shardc.ir.types import numpy_dtype

Kernel = Callable[..., Any]

# ----- shifts ---------------------------------------------------------------------------------


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "i" else x


def _shift(kind: str) -> Kernel:
    def kernel(op: Operation, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        bits = x.dtype.itemsize * 8
        amount = _unsigned(np.ascontiguousarray(y)).astype(np.uint64)
        big = amount >= bits
        safe = np.where(big, 0, amount).astype(x.dtype)
        if kind == "left":
            out = np.left_shift(x, safe)
            return np.where(big, np.zeros_like(x), out)
        if kind == "logical":
            ux = _unsigned(np.ascontiguousarray(x))
            out = np.right_shift(ux, safe.astype(ux.dtype)).view(x.dtype)
            return np.where(big, np.zeros_like(x), out)
        out = np.right_shift(x, safe)
        fill = np.where(x < 0, np.array(-1).astype(x.dtype), np.zeros_like(x))
        return np.where(big, fill, out)

    return kernel


# ----- dynamic slices -------------------------------------------------------------------------


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


# ----- windows --------------------------------------------------------------------------------


def _dilate_pad(x: np.ndarray, dilation, padding, fill: Any) -> np.ndarray:
    """`x` with `dilation - 1` fill values between elements and edge padding (negative: cut)."""
    if any(d != 1 for d in dilation):
        shape = tuple((n - 1) * d + 1 if n else 0 for n, d in zip(x.shape, dilation))
        out = np.full(shape, fill, dtype=x.dtype)
        out[tuple(slice(None, None, d) for d in dilation)] = x
        x = out
    cut = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, padding))
    x = x[cut]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, constant_values=fill)
    return x


def _windows(x: np.ndarray, window, strides, dilation) -> np.ndarray:
    """(*out_dims, *window_dims) view of strided, dilated windows of `x`."""
    span = [(w - 1) * d + 1 for w, d in zip(window, dilation)]
    if any(s > n for s, n in zip(span, x.shape)):
        out = [0 if s > n else (n - s) // st + 1 for s, n, st in zip(span, x.shape, strides)]
        return np.zeros((*out, *window), dtype=x.dtype)
    view = sliding_window_view(x, span)
    rank = x.ndim
    index = tuple(slice(None, None, st) for st in strides)
    index += tuple(slice(None, None, d) for d in dilation)
    return view[index][(..., *([slice(None)] * rank))] if rank else view


_UFUNCS = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or,
}


def _reduce_window(op: Operation, x: np.ndarray, init: np.ndarray) -> np.ndarray:
    rank = x.ndim
    ones = (1,) * rank
    window = attr(op, "window_dimensions")
    strides = attr(op, "window_strides") or ones
    base = attr(op, "base_dilations") or ones
    dil = attr(op, "window_dilations") or ones
    ufunc = _UFUNCS[attr(op, "kind").word]
    dtype = x.dtype
    work = x.astype(F32) if dtype in LOW_FLOATS else x
    fill = work.dtype.type(init[()])
    padded = _dilate_pad(work, base, conv_padding(op, rank), fill)
    view = _windows(padded, window, strides, dil)
    axes = tuple(range(rank, 2 * rank))
    out = ufunc.reduce(view, axis=axes, initial=fill) if rank else ufunc(fill, view)
    return np.asarray(out).astype(dtype)


def _conv_dtype(lhs: np.dtype, out: np.dtype) -> np.dtype:
    if lhs in LOW_FLOATS:
        return F32
    if lhs.kind in "iub":
        return np.dtype(np.int64)
    return lhs


def _convolution(op: Operation, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    d = {k: attr(op, k) for k in CONV_DIMS}
    n = len(d["input_spatial_dimensions"])
    out_t = op.results[0].type
    out_dtype = numpy_dtype(out_t.dtype)
    work = _conv_dtype(lhs.dtype, out_dtype)
    # Canonical layouts: lhs [N, C, *S], rhs [O, I, *K], out [N, O, *S'].
    x = np.transpose(lhs, (d["input_batch_dimension"], d["input_feature_dimension"],
                           *d["input_spatial_dimensions"])).astype(work)
    k = np.transpose(rhs, (d["kernel_output_feature_dimension"],
                           d["kernel_input_feature_dimension"],
                           *d["kernel_spatial_dimensions"])).astype(work)
    ones = (1,) * n
    strides = attr(op, "window_strides") or ones
    lhs_dil = attr(op, "lhs_dilation") or ones
    rhs_dil = attr(op, "rhs_dilation") or ones
    reversal = attr(op, "window_reversal") or (False,) * n
    flips = tuple(2 + i for i, r in enumerate(reversal) if r)
    if flips:
        k = np.flip(k, flips)
    padding = ((0, 0), (0, 0), *conv_padding(op, n))
    x = _dilate_pad(x, (1, 1, *lhs_dil), padding, work.type(0))
    fgc, bgc = attr(op, "feature_group_count"), attr(op, "batch_group_count")
    batch, channels = x.shape[:2]
    out_features = k.shape[0]
    # windows: [N, C, *S', *K]
    win = _windows(x, (1, 1, *k.shape[2:]), (1, 1, *strides), (1, 1, *rhs_dil))
    win = win.reshape(win.shape[: 2 + n] + win.shape[2 + n + 2 :])
    spatial_out = win.shape[2 : 2 + n]
    letters = "abcdefgh"[:n]
    kl = "rstuvwxy"[:n]
    if bgc > 1:
        per = batch // bgc
        wg = win.reshape(bgc, per, channels, *spatial_out, *k.shape[2:])
        kg = k.reshape(bgc, out_features // bgc, *k.shape[1:])
        spec = f"gnc{letters}{kl},goc{kl}->gno{letters}"
        out = np.einsum(spec, wg, kg)  # [G, N/G, O/G, *S']
        out = np.moveaxis(out, 0, 1).reshape(per, out_features, *spatial_out)
    else:
        cg = channels // fgc
        wg = win.reshape(batch, fgc, cg, *spatial_out, *k.shape[2:])
        kg = k.reshape(fgc, out_features // fgc, *k.shape[1:])
        spec = f"ngc{letters}{kl},goc{kl}->ngo{letters}"
        out = np.einsum(spec, wg, kg).reshape(batch, out_features, *spatial_out)
    order = [0] * (n + 2)
    order[d["output_batch_dimension"]] = 0
    order[d["output_feature_dimension"]] = 1
    for i, dim in enumerate(d["output_spatial_dimensions"]):
        order[dim] = 2 + i
    return np.ascontiguousarray(np.transpose(out, order)).astype(out_dtype)


# ----- barriers, top_k, custom calls ----------------------------------------------------------


def _optimization_barrier(op: Operation, *xs: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(xs)


def _top_k(op: Operation, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = attr(op, "k")
    key = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype in LOW_FLOATS else x
    # Descending and stable: sort the negated key (NaN sorts first, as the largest).
    neg = -key.astype(np.float64)
    neg = np.where(np.isnan(neg), -np.inf, neg)
    order = np.argsort(neg, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


def _cholesky(op: Operation, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    config = op.attributes.get("mhlo.backend_config")
    text = getattr(config, "text", "") or ""
    m = re.search(r"uplo\s*=\s*(\d+)", text)
    upper = m is not None and int(m.group(1)) == ord("U")
    work = a.astype(np.float64)
    try:
        factor = np.linalg.cholesky(work)
        info = 0
    except np.linalg.LinAlgError:
        factor = np.full_like(work, np.nan)
        info = 1
    if upper:
        factor = np.swapaxes(factor, -1, -2)
    info_t = op.results[1].type
    return factor.astype(a.dtype), np.full(info_t.shape, info, dtype=numpy_dtype(info_t.dtype))


# The kernel of each target the IR knows (`CUSTOM_CALL_TARGETS`), by what the target computes.
CUSTOM_CALLS: dict[str, Kernel] = {
    name: {"cholesky": _cholesky}[target.computes] for name, target in CUSTOM_CALL_TARGETS.items()
}


def custom_call_kernel(op: Operation) -> Kernel | None:
    """The kernel of the op's call target, or None when shardc does not know the target."""
    return CUSTOM_CALLS.get(attr(op, "call_target_name"))


EXTRA_KERNELS: dict[str, Kernel] = {
    "shift_left": _shift("left"),
    "shift_right_arithmetic": _shift("arithmetic"),
    "shift_right_logical": _shift("logical"),
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "convolution": _convolution,
    "reduce_window": _reduce_window,
    "optimization_barrier": _optimization_barrier,
    "top_k": _top_k,
}
