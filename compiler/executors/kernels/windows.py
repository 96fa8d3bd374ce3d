"""numpy kernels of the windowed ops: convolution and reduce_window.

Both build the dilated, padded input once and take strided windows of it
(`sliding_window_view`), so no Python loop runs per element.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from shardc.executors.dtypes import F32, LOW_FLOATS
from shardc.executors.kernels import Kernel
from shardc.executors.reduce_kinds import REDUCE_UFUNCS
from shardc.executors.scalar_bodies import body_of, evaluate_body, fold_last_axis
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


def _window_view(op: Operation, x: np.ndarray, fill: Any) -> np.ndarray:
    """(*out_dims, *window_dims) windows of `x` dilated and padded with `fill`."""
    rank = x.ndim
    ones = (1,) * rank
    window = attr(op, "window_dimensions")
    strides = attr(op, "window_strides") or ones
    base = attr(op, "base_dilations") or ones
    dil = attr(op, "window_dilations") or ones
    padded = _dilate_pad(x, base, conv_padding(op, rank), fill)
    return _windows(padded, window, strides, dil)


def _reduce_window(op: Operation, *arrays: np.ndarray, kernels: Mapping[str, Kernel]) -> Any:
    if "body" in op.attributes:
        return _reduce_window_body(op, arrays, kernels)
    x, init = arrays
    rank = x.ndim
    ufunc = REDUCE_UFUNCS[attr(op, "kind").word]
    dtype = x.dtype
    work = x.astype(F32) if dtype in LOW_FLOATS else x
    fill = work.dtype.type(init[()])
    view = _window_view(op, work, fill)
    axes = tuple(range(rank, 2 * rank))
    out = ufunc.reduce(view, axis=axes, initial=fill) if rank else ufunc(fill, view)
    return np.asarray(out).astype(dtype)


def _reduce_window_body(op: Operation, arrays: tuple[np.ndarray, ...],
                        kernels: Mapping[str, Kernel]) -> Any:
    """Each window's elements folded with the body function (padding is the init values)."""
    n = len(arrays) // 2
    xs, inits = arrays[:n], arrays[n:]
    rank = xs[0].ndim
    views = [_window_view(op, x, x.dtype.type(i[()])) for x, i in zip(xs, inits)]
    out_shape = views[0].shape[:rank]
    flat = [v.reshape((*out_shape, -1)) for v in views]
    body = evaluate_body(body_of(op, "body"), kernels)
    outs = fold_last_axis(body, flat, inits, out_shape, np)
    results = tuple(np.asarray(o).astype(x.dtype) for o, x in zip(outs, xs))
    return results if n > 1 else results[0]


def _select_and_scatter(op: Operation, x: np.ndarray, source: np.ndarray,
                        init: np.ndarray, kernels: Mapping[str, Kernel]) -> np.ndarray:
    """In each window `select` picks one element (scanning the window in order and keeping the
    current pick while `select(pick, next)` holds; padding is never picked), and the window's
    source element is combined into the result (init everywhere) at that place."""
    rank = x.ndim
    ones = (1,) * rank
    window = attr(op, "window_dimensions") or ones
    strides = attr(op, "window_strides") or ones
    padding = conv_padding(op, rank)

    def view(a: np.ndarray, fill: Any) -> np.ndarray:
        v = _windows(_dilate_pad(a, ones, padding, fill), window, strides, ones)
        return v.reshape(*source.shape, -1)

    values = view(x, x.dtype.type(0))
    valid = view(np.ones(x.shape, dtype=np.bool_), False)
    places = view(np.arange(x.size, dtype=np.int64).reshape(x.shape), -1)
    select = evaluate_body(body_of(op, "select"), kernels)
    best, place, found = values[..., 0], places[..., 0], valid[..., 0]
    for k in range(1, values.shape[-1]):
        (keep,) = select(best, values[..., k])
        take = valid[..., k] & ~(found & np.asarray(keep, dtype=np.bool_))
        best = np.where(take, values[..., k], best)
        place = np.where(take, places[..., k], place)
        found = found | valid[..., k]
    out = np.full(x.size, init[()], dtype=x.dtype)
    targets, updates = place[found], source[found]
    if "kind" in op.attributes:
        ufunc = REDUCE_UFUNCS[attr(op, "kind").word]
        ufunc.at(out, targets, updates)
    else:
        body = evaluate_body(body_of(op, "body"), kernels)
        for t, u in zip(targets, updates):
            (out[t],) = body(out[t], u)
    return out.reshape(x.shape)


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


def window_kernels(kernels: Mapping[str, Kernel]) -> dict[str, Kernel]:
    """The family's kernels; window bodies run with the whole table `kernels`."""
    return {
        "convolution": _convolution,
        "reduce_window": partial(_reduce_window, kernels=kernels),
        "select_and_scatter": partial(_select_and_scatter, kernels=kernels),
    }
