"""numpy kernels of the windowed ops: convolution and reduce_window.

Both build the dilated, padded input once and take strided windows of it
(`sliding_window_view`), so no Python loop runs per element.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from shardc.executors.dtypes import F32, LOW_FLOATS
from shardc.executors.kernels import Kernel
from shardc.executors.reduce_kinds import REDUCE_UFUNCS
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr
from shardc.ir.ops.window import CONV_DIMS, conv_padding
from shardc.ir.types import numpy_dtype


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


def _reduce_window(op: Operation, x: np.ndarray, init: np.ndarray) -> np.ndarray:
    rank = x.ndim
    ones = (1,) * rank
    window = attr(op, "window_dimensions")
    strides = attr(op, "window_strides") or ones
    base = attr(op, "base_dilations") or ones
    dil = attr(op, "window_dilations") or ones
    ufunc = REDUCE_UFUNCS[attr(op, "kind").word]
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


WINDOW_KERNELS: dict[str, Kernel] = {
    "convolution": _convolution,
    "reduce_window": _reduce_window,
}
