"""Local ops on batched values (device_layout.py): each op runs once on the whole batch of
devices with numpy broadcasting, so simulating N devices costs about what the unsharded program
costs.

    run = BATCHED["dot_general"](op, layout.rank)     # run(*batched operands) -> batched result
    run = per_device(op, KERNELS[op.name], layout)    # any kernel, device by device (slow)

`BATCHED` has the ops whose kernel must know the leading device dims (shapes, dims and
attributes shift by the layout's rank); element-wise ops run their reference kernel on the batch
as is (kernels/elementwise.py), and the rest fall back to `per_device`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shardc.executors.device_layout import DeviceLayout
from shardc.executors.dtypes import F32, LOW_FLOATS
from shardc.executors.kernels.reductions import dot_compute_dtype
from shardc.executors.kernels.table import KERNELS
from shardc.executors.reduce_kinds import REDUCE_UFUNCS
from shardc.executors.scalar_bodies import body_reduce_kernel, sort_kernel
from shardc.ir.core import Operation
from shardc.ir.mesh import DeviceMesh
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def per_device(op: Operation, kernel: Callable[..., Any], layout: DeviceLayout):
    """Fallback: run the (global) kernel device by device on the blocks of a batched value."""
    r = layout.rank

    def run(*xs: np.ndarray) -> Any:
        flat = [layout.positions(x) for x in xs]
        outs = [kernel(op, *[f[p] for f in flat]) for p in range(layout.num_devices)]
        if len(op.results) == 1:
            return layout.from_positions(np.stack(outs))
        return tuple(
            layout.from_positions(np.stack([o[i] for o in outs])) for i in range(len(op.results))
        )

    if not op.operands:
        return lambda: _uniform(np.asarray(kernel(op)), r)
    return run


def _uniform(x: np.ndarray, r: int) -> np.ndarray:
    return x.reshape((1,) * r + x.shape)


def _local_shape(op: Operation) -> tuple[int, ...]:
    return op.results[0].type.shape


def _b_constant(op: Operation, r: int):
    value = _uniform(KERNELS["constant"](op), r)
    value.flags.writeable = False
    return lambda: value


def _b_iota(op: Operation, r: int):
    value = _uniform(np.ascontiguousarray(KERNELS["iota"](op)), r)
    value.flags.writeable = False
    return lambda: value


def _b_broadcast(op: Operation, r: int):
    dims = attr(op, "broadcast_dimensions")
    out = _local_shape(op)
    order = sorted(range(len(dims)), key=lambda i: dims[i])

    def run(x: np.ndarray) -> np.ndarray:
        if order != list(range(len(dims))):
            x = x.transpose(list(range(r)) + [r + i for i in order])
        expanded = list(x.shape[:r]) + [1] * len(out)
        for i, src in enumerate(order):
            expanded[r + dims[src]] = x.shape[r + i]
        return np.broadcast_to(x.reshape(expanded), x.shape[:r] + out)

    return run


def _b_reshape(op: Operation, r: int):
    out = _local_shape(op)
    return lambda x: x.reshape(x.shape[:r] + out)


def _b_transpose(op: Operation, r: int):
    perm = list(range(r)) + [r + p for p in attr(op, "permutation")]
    return lambda x: x.transpose(perm)


def _b_slice(op: Operation, r: int):
    start, limit = attr(op, "start_indices"), attr(op, "limit_indices")
    strides = attr(op, "strides") or (1,) * len(start)
    index = (slice(None),) * r + tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))
    return lambda x: x[index]


def _b_reverse(op: Operation, r: int):
    dims = tuple(r + d for d in attr(op, "dimensions"))
    return lambda x: np.flip(x, axis=dims) if dims else x


def _b_concatenate(op: Operation, r: int):
    dim = r + attr(op, "dimension")

    def run(*xs: np.ndarray) -> np.ndarray:
        lead = np.broadcast_shapes(*[x.shape[:r] for x in xs])
        return np.concatenate([np.broadcast_to(x, lead + x.shape[r:]) for x in xs], axis=dim)

    return run


def _b_pad(op: Operation, r: int):
    lo, hi = attr(op, "edge_padding_low"), attr(op, "edge_padding_high")
    interior = attr(op, "interior_padding") or (0,) * len(lo)
    kernel = KERNELS["pad"]

    def run(x: np.ndarray, value: np.ndarray) -> np.ndarray:
        if value.size != 1:
            return per_device(op, kernel, _layout_like(x, r))(x, value)
        spread = [n + max(n - 1, 0) * k for n, k in zip(x.shape[r:], interior)]
        buffer = [max(a, 0) + n + max(b, 0) for a, n, b in zip(lo, spread, hi)]
        out = np.full(x.shape[:r] + tuple(buffer), value.reshape(()), dtype=x.dtype)
        inner = tuple(slice(max(a, 0), max(a, 0) + n, k + 1) for a, n, k in
                      zip(lo, spread, interior))
        out[(slice(None),) * r + inner] = x
        crop = tuple(slice(max(-a, 0), size - max(-b, 0)) for a, b, size in zip(lo, hi, buffer))
        return out[(slice(None),) * r + crop]

    return run


def _layout_like(x: np.ndarray, r: int) -> DeviceLayout:
    mesh = DeviceMesh.create("batch", {f"a{i}": n for i, n in enumerate(x.shape[:r])})
    return DeviceLayout.build(mesh, [])


def _b_dot_general(op: Operation, r: int):
    lb, rb, lc, rc = dot_general_dims(op)
    out_local = _local_shape(op)
    out_dtype = numpy_dtype(op.results[0].type.dtype)
    return lambda lhs, rhs: _batched_dot(lhs, rhs, r, lb, rb, lc, rc, out_local, out_dtype)


def _batched_dot(
    lhs: np.ndarray,
    rhs: np.ndarray,
    r: int,
    lb: Sequence[int],
    rb: Sequence[int],
    lc: Sequence[int],
    rc: Sequence[int],
    out_local: tuple[int, ...],
    out_dtype: np.dtype,
) -> np.ndarray:
    """`dot_general` of batched values with `r` leading device dims (the result batched)."""
    lead = list(range(r))
    lrank, rrank = lhs.ndim - r, rhs.ndim - r
    lf = [d for d in range(lrank) if d not in lb and d not in lc]
    rf = [d for d in range(rrank) if d not in rb and d not in rc]
    ls, rs = lhs.shape[r:], rhs.shape[r:]
    b = math.prod(ls[d] for d in lb)
    k = math.prod(ls[d] for d in lc)
    m = math.prod(ls[d] for d in lf)
    n = math.prod(rs[d] for d in rf)
    compute = dot_compute_dtype(lhs.dtype, rhs.dtype, out_dtype)
    a = lhs.transpose(lead + [r + d for d in (*lb, *lf, *lc)])
    c = rhs.transpose(lead + [r + d for d in (*rb, *rc, *rf)])
    la, ra = lhs.shape[:r], rhs.shape[:r]
    if not lb and all(p == 1 or q == 1 for p, q in zip(la, ra)):
        # No device dim varies on both sides (data x tensor parallel, replicated
        # activations): one big GEMM over all devices' rows and columns, as fast as the
        # unsharded product, instead of one small GEMM per device.
        a = a.reshape(math.prod(la) * m, k).astype(compute, copy=False)
        c = np.moveaxis(c.reshape(ra + (k, n)), r, 0).reshape(k, math.prod(ra) * n)
        out = np.matmul(a, c.astype(compute, copy=False)).reshape(la + (m,) + ra + (n,))
        pick = [i if la[i] > 1 else r + 1 + i for i in range(r)]
        rest = [i for i in range(2 * r + 2) if i not in pick and i not in (r, 2 * r + 1)]
        out = out.transpose(pick + [r, 2 * r + 1] + rest)
        out_lead = tuple(max(p, q) for p, q in zip(la, ra))
        return out.reshape(out_lead + out_local).astype(out_dtype, copy=False)
    a = a.reshape(la + ((b, m, k) if lb else (m, k))).astype(compute, copy=False)
    c = c.reshape(ra + ((b, k, n) if lb else (k, n))).astype(compute, copy=False)
    out = np.matmul(a, c)
    return out.reshape(out.shape[:r] + out_local).astype(out_dtype, copy=False)


def summed_dot(op: Operation, r: int, g: Sequence[int], sum_over: Callable[..., Any]):
    """`dot_general` then the sum of its result over the leading dims `g` (the all_reduce or
    reduce_scatter of a contraction-sharded product), as one product.

    When both operands vary along every dim of `g`, each device holds a slice of the
    contraction, and the sum of the partial products over `g` is the product over the whole
    contraction: `g` is folded into the contracting dim and one GEMM computes it, as in the
    unsharded program, instead of a GEMM per device plus a sum of partial results each the
    size of the output. Otherwise it is the product, then `sum_over(result)`. The sum keeps
    size-1 dims at `g` (every device of a group holds it), as `all_reduce` does."""
    lb, rb, lc, rc = dot_general_dims(op)
    out_local = _local_shape(op)
    out_dtype = numpy_dtype(op.results[0].type.dtype)
    keep = [a for a in range(r) if a not in g]
    folded = len(keep)

    def run(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        if not all(lhs.shape[a] > 1 and rhs.shape[a] > 1 for a in g):
            return sum_over(_batched_dot(lhs, rhs, r, lb, rb, lc, rc, out_local, out_dtype))
        lrank, rrank = lhs.ndim - r, rhs.ndim - r
        lf = [d for d in range(lrank) if d not in lb and d not in lc]
        rf = [d for d in range(rrank) if d not in rb and d not in rc]
        ls, rs = lhs.shape[r:], rhs.shape[r:]
        kk = math.prod(lhs.shape[a] for a in g) * math.prod(ls[d] for d in lc)
        a = lhs.transpose(keep + [r + d for d in (*lb, *lf)] + list(g) + [r + d for d in lc])
        a = a.reshape([lhs.shape[i] for i in keep] + [ls[d] for d in (*lb, *lf)] + [kk])
        c = rhs.transpose(keep + [r + d for d in rb] + list(g) + [r + d for d in (*rc, *rf)])
        c = c.reshape([rhs.shape[i] for i in keep] + [rs[d] for d in rb] + [kk]
                      + [rs[d] for d in rf])
        nb = len(lb)
        out = _batched_dot(a, c, folded, range(nb), range(nb), [nb + len(lf)], [nb],
                           out_local, out_dtype)
        lead = list(out.shape[:folded])
        for d in sorted(g):
            lead.insert(d, 1)
        return out.reshape(tuple(lead) + out_local)

    return run


def _b_reduce(op: Operation, r: int):
    if "body" in op.attributes:  # the device dims are batch dims of the vectorised body
        return lambda *xs: body_reduce_kernel(KERNELS, np, r)(op, *xs)
    kind = attr(op, "kind").word
    ufunc = REDUCE_UFUNCS[kind]
    dims = tuple(r + d for d in attr(op, "dimensions"))
    out_rank = len(_local_shape(op))
    kernel = KERNELS["reduce"]

    def run(x: np.ndarray, init: np.ndarray) -> np.ndarray:
        if any(x.shape[d] == 0 for d in dims):
            return per_device(op, kernel, _layout_like(x, r))(x, init)
        dtype = x.dtype
        compute = F32 if dtype in LOW_FLOATS else dtype
        out = ufunc.reduce(x.astype(compute, copy=False), axis=dims, dtype=compute)
        init = init.astype(compute, copy=False).reshape(init.shape[:r] + (1,) * out_rank)
        return np.asarray(ufunc(out, init)).astype(dtype, copy=False)

    return run


BATCHED: dict[str, Callable[[Operation, int], Callable[..., Any]]] = {
    "constant": _b_constant,
    "iota": _b_iota,
    "broadcast_in_dim": _b_broadcast,
    "reshape": _b_reshape,
    "transpose": _b_transpose,
    "slice": _b_slice,
    "reverse": _b_reverse,
    "concatenate": _b_concatenate,
    "pad": _b_pad,
    "dot_general": _b_dot_general,
    "dot": _b_dot_general,
    "reduce": _b_reduce,
    "sort": lambda op, r: lambda *xs: sort_kernel(KERNELS, np, r)(op, *xs),
}
