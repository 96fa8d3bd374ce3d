"""numpy kernels of the ops that reduce dims: dot_general, reduce and top_k.

- `dot_general` computes floats in float32 (float64 if an operand or the result is f64), i1 as
  int64 (OR of ANDs), other integers in the result type (wrapping as it does). Its
  `algorithm`, if any, does not change that: XLA's CPU backend computes f32 operands in f32
  under every algorithm it accepts (`BF16_BF16_F32` included), and these kernels agree with it.
- `reduce` combines `init` once with the reduction of `dimensions` (so empty dims give `init`);
  with a `body` function it is scalar_bodies.py's vectorised fold over the whole kernel table
  (`reduce_kernel(with_body)`; table.py wires it).
- `top_k` is the k largest entries of the last dim, descending, ties by lower index.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shardc.executors.dtypes import F32, F64, I64, LOW_FLOATS, is_float_dtype
from shardc.executors.kernels import Kernel, result_type
from shardc.executors.reduce_kinds import REDUCE_UFUNCS
from shardc.ir.core import Operation
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import attr


def dot_compute_dtype(lhs: np.dtype, rhs: np.dtype, out: np.dtype) -> np.dtype:
    """The dtype `dot_general` multiplies and accumulates in (see the module doc)."""
    if is_float_dtype(out) or is_float_dtype(lhs) or is_float_dtype(rhs):
        return F64 if F64 in (lhs, rhs, out) else F32
    if out == np.bool_:
        return I64  # i1 dot is OR of ANDs: a nonzero sum of 0/1 products
    return out  # integers accumulate in the result type, wrapping as it does


def dot_general(op: Operation, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    lb, rb, lc, rc = dot_general_dims(op)
    out_shape, out_dtype = result_type(op)
    compute = dot_compute_dtype(lhs.dtype, rhs.dtype, out_dtype)
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    b = math.prod(lhs.shape[d] for d in lb)
    k = math.prod(lhs.shape[d] for d in lc)
    m = math.prod(lhs.shape[d] for d in lf)
    n = math.prod(rhs.shape[d] for d in rf)
    a = lhs.transpose([*lb, *lf, *lc]).astype(compute, copy=False)
    c = rhs.transpose([*rb, *rc, *rf]).astype(compute, copy=False)
    if lb:
        out = np.matmul(a.reshape(b, m, k), c.reshape(b, k, n))
    else:
        out = np.matmul(a.reshape(m, k), c.reshape(k, n))
    return out.reshape(out_shape).astype(out_dtype, copy=False)


def reduce_kernel(with_body: Kernel) -> Kernel:
    """The `reduce` kernel; a reduce with a `body` function runs `with_body`."""

    def reduce(op: Operation, *arrays: np.ndarray) -> Any:
        """`init` combined once with the reduction of `dimensions` (so empty dims give `init`);
        with a `body` function: see scalar_bodies.py."""
        if "body" in op.attributes:
            return with_body(op, *arrays)
        x, init = arrays
        ufunc = REDUCE_UFUNCS[attr(op, "kind").word]
        dims = tuple(attr(op, "dimensions"))
        dtype = x.dtype
        if dtype in LOW_FLOATS:
            out = ufunc.reduce(x.astype(F32), axis=dims, dtype=F32, initial=F32.type(init[()]))
            return np.asarray(out).astype(dtype)
        return np.asarray(ufunc.reduce(x, axis=dims, dtype=dtype, initial=init[()]))

    return reduce


def _top_k(op: Operation, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = attr(op, "k")
    key = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype in LOW_FLOATS else x
    # Descending and stable: sort the negated key (NaN sorts first, as the largest).
    neg = -key.astype(np.float64)
    neg = np.where(np.isnan(neg), -np.inf, neg)
    order = np.argsort(neg, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


# `reduce` is not here: it needs the whole table for its body (see `reduce_kernel`).
REDUCTION_KERNELS: dict[str, Kernel] = {
    "dot_general": dot_general,
    "top_k": _top_k,
}
