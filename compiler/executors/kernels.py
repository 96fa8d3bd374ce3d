"""numpy kernels for every op in the registry, keyed by op name (StableHLO semantics).

    y = KERNELS[op.name](op, *arrays)      # an array, or a tuple for 0 or several results

A kernel is a pure function of the op's attributes, its result types and the operand arrays: it
never writes into an operand and assumes nothing about shapes beyond what the arrays and
`op.results[i].type` say, so the per-device executor reuses these same kernels on local shards.
Results may be read-only views (`broadcast_in_dim`, `iota`, `transpose`, `slice`); callers copy
before writing.

Numerics, chosen to match XLA on CPU where StableHLO leaves a choice:
- bf16/f16 arithmetic is computed in float32 and rounded once to the result type; `erf` and
  float -> int `convert` go through float64.
- Integer arithmetic wraps around. `divide` truncates toward zero, `remainder` takes the sign of
  the dividend; `x / 0 == -1` (all bits set), `x % 0 == x`, `INT_MIN / -1 == INT_MIN`,
  `INT_MIN % -1 == 0`. Integer `power` with a negative exponent is `1 / x**|y|` truncated
  (1 for x == 1, +-1 for x == -1, else 0).
- float -> int `convert` truncates toward zero, saturates out-of-range values and maps NaN to 0;
  `convert` to i1 is `x != 0`.
- `gather` clamps start indices so the slice fits (StableHLO); `scatter` skips a whole update
  window that does not fit the operand (XLA). Both live in `indexing.py`.
- `all_reduce` and `reduce_scatter` are the identity here: a global program's value is the
  logical tensor, so reducing an unreduced value's partial sums leaves its logical value as is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.executors.dtypes import F32, F64, I64, LOW_FLOATS, WIDE_FLOATS, is_float_dtype
from shardc.executors.indexing import gather, scatter
from shardc.executors.kernels_extra import EXTRA_KERNELS
from shardc.executors.scalar_bodies import body_reduce_kernel, sort_kernel
from shardc.ir.core import Operation
from shardc.ir.ops.compute import dot_general_dims
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype

Kernel = Callable[..., Any]


def _result_type(op: Operation, i: int = 0) -> tuple[tuple[int, ...], np.dtype]:
    t = op.results[i].type
    return t.shape, numpy_dtype(t.dtype)


# ----- element-wise ---------------------------------------------------------------------------


def _by_kind(float_fn: Callable[..., Any], int_fn: Callable[..., Any] | None = None) -> Kernel:
    """`float_fn` for float operands (bf16/f16 computed in float32 and rounded back), `int_fn`
    for integers and i1 (`float_fn` again when None)."""
    other = int_fn or float_fn

    def kernel(op: Operation, *xs: np.ndarray) -> np.ndarray:
        dtype = xs[0].dtype
        if dtype in WIDE_FLOATS:
            return np.asarray(float_fn(*xs))
        if dtype in LOW_FLOATS:
            return np.asarray(float_fn(*[x.astype(F32) for x in xs])).astype(dtype)
        return np.asarray(other(*xs))

    return kernel


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(1 + np.exp(-x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


def _round_afz(x: np.ndarray) -> np.ndarray:
    # x - trunc(x) is exact, so halves are detected without the x + 0.5 rounding trap.
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _sign(x: np.ndarray) -> np.ndarray:
    return np.where(x == 0, x, np.sign(x))  # keeps -0.0 (StableHLO), NaN stays NaN


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 to ~1e-15: a positive-term series below 2.5, erfc's continued fraction above.

    erf(a) = 2/sqrt(pi) e^(-a^2) sum_n 2^n a^(2n+1) / (1*3*...*(2n+1))  and
    erfc(a) = e^(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))).
    """
    dtype = x.dtype
    a = np.abs(x.astype(F64))
    small = a < 2.5
    s = np.where(small, a, 0.0)
    two_s2 = 2 * s * s
    term = s.copy()
    total = s.copy()
    for n in range(40):
        term *= two_s2 / (2 * n + 3)
        total += term
    series = (2 / math.sqrt(math.pi)) * np.exp(-s * s) * total
    b = np.where(small, 2.5, np.minimum(a, 30.0))
    frac = np.zeros_like(b)
    for k in range(30, 0, -1):
        frac = (k / 2) / (b + frac)
    erfc = np.exp(-b * b) / math.sqrt(math.pi) / (b + frac)
    return np.copysign(np.where(small, series, 1.0 - erfc), x.astype(F64)).astype(dtype)


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    safe = np.where(zero, np.ones_like(b), b)
    q = np.floor_divide(a, safe)  # INT_MIN // -1 wraps to INT_MIN, as XLA gives
    if a.dtype.kind == "i":
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)  # floor -> toward zero
    return np.where(zero, np.array(-1).astype(a.dtype), q)


def _int_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    return np.where(zero, a, np.fmod(a, np.where(zero, np.ones_like(b), b)))


def _int_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.broadcast_arrays(x, y)
    acc = np.ones_like(x)
    base = x.copy()
    e = np.where(y < 0, 0, y).astype(np.uint64)
    while e.any():  # at most 64 rounds: one per exponent bit
        acc = np.where(e & 1, acc * base, acc)
        base = base * base
        e >>= np.uint64(1)
    if x.dtype.kind == "i":
        one = np.ones_like(x)
        negative = np.where(x == 1, one, np.where(x == -1, np.where(y & 1, -one, one), 0))
        acc = np.where(y < 0, negative, acc)
    return acc


def _int_reciprocal(x: np.ndarray) -> np.ndarray:
    return _int_divide(np.ones_like(x), x)


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers that order floats as StableHLO's TOTALORDER: -NaN < -inf < -0 < +0 < NaN."""
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    mask = np.array(np.iinfo(bits.dtype).max, dtype=bits.dtype)
    return np.where(bits < 0, bits ^ mask, bits)


_COMPARE = {
    "EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
    "GT": np.greater, "LE": np.less_equal, "LT": np.less,
}


def _compare(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    fn = _COMPARE[attr(op, "comparison_direction").word]
    compare_type = attr(op, "compare_type")
    kind = compare_type.word if compare_type is not None else None
    if kind == "TOTALORDER" and is_float_dtype(a.dtype):
        a, b = _total_order_key(a), _total_order_key(b)
    elif kind == "UNSIGNED" and a.dtype.kind == "i":
        a, b = a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}")
    elif kind == "SIGNED" and a.dtype.kind == "u":
        a, b = a.view(f"i{a.dtype.itemsize}"), b.view(f"i{b.dtype.itemsize}")
    return np.asarray(fn(a, b))


def _select(op: Operation, pred: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(pred, a, b)


def _clamp(op: Operation, lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    if x.dtype in LOW_FLOATS:  # exact either way; float32 avoids slow ml_dtypes loops
        return np.minimum(np.maximum(x.astype(F32), lo.astype(F32)), hi.astype(F32)).astype(x.dtype)
    return np.asarray(np.minimum(np.maximum(x, lo), hi))


def _is_finite(op: Operation, x: np.ndarray) -> np.ndarray:
    if not is_float_dtype(x.dtype):
        return np.ones(x.shape, dtype=np.bool_)
    return np.asarray(np.isfinite(x.astype(F32) if x.dtype in LOW_FLOATS else x))


def convert_array(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """StableHLO `convert`: float -> int truncates, saturates and maps NaN to 0; -> i1 is != 0."""
    if x.dtype == dtype:
        return x
    if dtype == np.bool_:
        return np.asarray(x != 0)
    if dtype.kind in "iu" and is_float_dtype(x.dtype):
        t = np.trunc(x.astype(F64))
        info = np.iinfo(dtype)
        hi, lo = t >= float(info.max), t <= float(info.min)
        bad = hi | lo | np.isnan(t)
        out = np.where(bad, 0.0, t).astype(dtype)
        out[hi] = info.max
        out[lo] = info.min
        return out
    if dtype in LOW_FLOATS and x.dtype.kind in "iub":
        return x.astype(F64).astype(dtype)
    return x.astype(dtype)


def _convert(op: Operation, x: np.ndarray) -> np.ndarray:
    return convert_array(x, _result_type(op)[1])


def _bitwise(fn: Callable[..., Any]) -> Kernel:
    return lambda op, *xs: np.asarray(fn(*xs))


def _square(x: np.ndarray) -> np.ndarray:
    return x * x


_UNARY: dict[str, Kernel] = {
    "abs": _by_kind(np.abs),
    "negate": _by_kind(np.negative),
    "exponential": _by_kind(np.exp),
    "exponential_minus_one": _by_kind(np.expm1),
    "log": _by_kind(np.log),
    "log_plus_one": _by_kind(np.log1p),
    "sqrt": _by_kind(np.sqrt),
    "rsqrt": _by_kind(_rsqrt),
    "cbrt": _by_kind(np.cbrt),
    "tanh": _by_kind(np.tanh),
    "logistic": _by_kind(_logistic),
    "sine": _by_kind(np.sin),
    "cosine": _by_kind(np.cos),
    "tan": _by_kind(np.tan),
    "floor": _by_kind(np.floor, np.asarray),
    "ceil": _by_kind(np.ceil, np.asarray),
    "round_nearest_even": _by_kind(np.rint, np.asarray),
    "round_nearest_afz": _by_kind(_round_afz, np.asarray),
    "sign": _by_kind(_sign, np.sign),
    "not": _bitwise(np.invert),
    "erf": lambda op, x: _erf(x),
    "square": _by_kind(_square),
    "reciprocal": _by_kind(np.reciprocal, _int_reciprocal),
    "is_finite": _is_finite,
    "convert": _convert,
}

_BINARY: dict[str, Kernel] = {
    "add": _by_kind(np.add),
    "subtract": _by_kind(np.subtract),
    "multiply": _by_kind(np.multiply),
    "divide": _by_kind(np.divide, _int_divide),
    "remainder": _by_kind(np.fmod, _int_remainder),
    "maximum": _by_kind(np.maximum),
    "minimum": _by_kind(np.minimum),
    "power": _by_kind(np.power, _int_power),
    "atan2": _by_kind(np.arctan2),
    "and": _bitwise(np.bitwise_and),
    "or": _bitwise(np.bitwise_or),
    "xor": _bitwise(np.bitwise_xor),
    "compare": _compare,
}


# ----- creating and rearranging data ----------------------------------------------------------


def _constant(op: Operation) -> np.ndarray:
    t = op.results[0].type
    return attr(op, "value").to_numpy(t.shape, t.dtype)


def _iota(op: Operation) -> np.ndarray:
    shape, dtype = _result_type(op)
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


# ----- contractions and reductions ------------------------------------------------------------


def _dot_compute_dtype(lhs: np.dtype, rhs: np.dtype, out: np.dtype) -> np.dtype:
    if is_float_dtype(out) or is_float_dtype(lhs) or is_float_dtype(rhs):
        return F64 if F64 in (lhs, rhs, out) else F32
    if out == np.bool_:
        return I64  # i1 dot is OR of ANDs: a nonzero sum of 0/1 products
    return out  # integers accumulate in the result type, wrapping as it does


def _dot_general(op: Operation, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    lb, rb, lc, rc = dot_general_dims(op)
    out_shape, out_dtype = _result_type(op)
    compute = _dot_compute_dtype(lhs.dtype, rhs.dtype, out_dtype)
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


_REDUCE_UFUNCS = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or,
}


def _reduce(op: Operation, *arrays: np.ndarray) -> Any:
    """`init` combined once with the reduction of `dimensions` (so empty dims give `init`);
    with a `body` function: see scalar_bodies.py."""
    if "body" in op.attributes:
        return _BODY_REDUCE(op, *arrays)
    x, init = arrays
    ufunc = _REDUCE_UFUNCS[attr(op, "kind").word]
    dims = tuple(attr(op, "dimensions"))
    dtype = x.dtype
    if dtype in LOW_FLOATS:
        out = ufunc.reduce(x.astype(F32), axis=dims, dtype=F32, initial=F32.type(init[()]))
        return np.asarray(out).astype(dtype)
    return np.asarray(ufunc.reduce(x, axis=dims, dtype=dtype, initial=init[()]))



# ----- sharding ops and collectives -----------------------------------------------------------


def _identity(op: Operation, x: np.ndarray) -> np.ndarray:
    return x


def _no_result(op: Operation, *xs: np.ndarray) -> tuple[()]:
    return ()


# ----- the table ------------------------------------------------------------------------------

# Scalar bodies (sort comparators, reduce bodies) run with this same table, filled below.
_TABLE: dict[str, Kernel] = {}
_BODY_REDUCE = body_reduce_kernel(_TABLE, np)

KERNELS: dict[str, Kernel] = {
    **_UNARY,
    **_BINARY,
    "select": _select,
    "clamp": _clamp,
    "constant": _constant,
    "iota": _iota,
    "broadcast_in_dim": _broadcast_in_dim,
    "reshape": _reshape,
    "transpose": _transpose,
    "concatenate": _concatenate,
    "slice": _slice,
    "pad": _pad,
    "reverse": _reverse,
    "sort": sort_kernel(_TABLE, np),
    "dot_general": _dot_general,
    "reduce": _reduce,
    "gather": gather,
    "scatter": scatter,
    "sharding_constraint": _identity,
    "reshard": _identity,
    "propagation_barrier": _identity,
    "sharding_group": _no_result,
    "all_gather": _identity,
    "all_slice": _identity,
    "all_to_all": _identity,
    "collective_permute": _identity,
    "all_reduce": _identity,
    "reduce_scatter": _identity,
    "sharded_to_unreduced": _identity,
    "replicated_to_unreduced": _identity,
    **EXTRA_KERNELS,
}
"""Op name -> kernel. `call`, `composite` and `return` are control flow, handled by the
interpreter; `custom_call` runs the kernel of its target (`kernels_extra.CUSTOM_CALLS`)."""
_TABLE.update(KERNELS)
