"""numpy kernels of the element-wise ops: unary and binary arithmetic, compare, select, clamp,
is_finite, convert and the shifts.

- bf16/f16 arithmetic is computed in float32 and rounded once to the result type; `erf`,
  `erf_inv` and float -> int `convert` go through float64.
- Integer arithmetic wraps around. `divide` truncates toward zero, `remainder` takes the sign of
  the dividend; `x / 0 == -1` (all bits set), `x % 0 == x`, `INT_MIN / -1 == INT_MIN`,
  `INT_MIN % -1 == 0`. Integer `power` with a negative exponent is `1 / x**|y|` truncated
  (1 for x == 1, +-1 for x == -1, else 0).
- float -> int `convert` truncates toward zero, saturates out-of-range values and maps NaN to 0;
  `convert` to i1 is `x != 0`.
- Shift amounts are read as unsigned: an amount >= the bit width gives 0 (`shift_left`,
  `shift_right_logical`) or the sign fill (`shift_right_arithmetic`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.executors.dtypes import F32, F64, LOW_FLOATS, WIDE_FLOATS, is_float_dtype
from shardc.executors.kernels import Kernel, result_type
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


def by_kind(float_fn: Callable[..., Any], int_fn: Callable[..., Any] | None = None) -> Kernel:
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


def _erf_inv(x: np.ndarray) -> np.ndarray:
    """The inverse of erf in float64 (scipy's, to ~1e-15), rounded once to the result type:
    +-inf at +-1, NaN outside [-1, 1]."""
    from scipy.special import erfinv  # noqa: PLC0415 - scipy (slow to import) when first used

    return np.asarray(erfinv(x.astype(F64))).astype(x.dtype)


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
    return convert_array(x, result_type(op)[1])


def _bitwise(fn: Callable[..., Any]) -> Kernel:
    return lambda op, *xs: np.asarray(fn(*xs))


def _square(x: np.ndarray) -> np.ndarray:
    return x * x


_UNARY: dict[str, Kernel] = {
    "abs": by_kind(np.abs),
    "negate": by_kind(np.negative),
    "exponential": by_kind(np.exp),
    "exponential_minus_one": by_kind(np.expm1),
    "log": by_kind(np.log),
    "log_plus_one": by_kind(np.log1p),
    "sqrt": by_kind(np.sqrt),
    "rsqrt": by_kind(_rsqrt),
    "cbrt": by_kind(np.cbrt),
    "tanh": by_kind(np.tanh),
    "logistic": by_kind(_logistic),
    "sine": by_kind(np.sin),
    "cosine": by_kind(np.cos),
    "tan": by_kind(np.tan),
    "floor": by_kind(np.floor, np.asarray),
    "ceil": by_kind(np.ceil, np.asarray),
    "round_nearest_even": by_kind(np.rint, np.asarray),
    "round_nearest_afz": by_kind(_round_afz, np.asarray),
    "sign": by_kind(_sign, np.sign),
    "not": _bitwise(np.invert),
    "erf": lambda op, x: _erf(x),
    "erf_inv": lambda op, x: _erf_inv(x),
    "square": by_kind(_square),
    "reciprocal": by_kind(np.reciprocal, _int_reciprocal),
    "is_finite": _is_finite,
    "convert": _convert,
}

_BINARY: dict[str, Kernel] = {
    "add": by_kind(np.add),
    "subtract": by_kind(np.subtract),
    "multiply": by_kind(np.multiply),
    "divide": by_kind(np.divide, _int_divide),
    "remainder": by_kind(np.fmod, _int_remainder),
    "maximum": by_kind(np.maximum),
    "minimum": by_kind(np.minimum),
    "power": by_kind(np.power, _int_power),
    "atan2": by_kind(np.arctan2),
    "and": _bitwise(np.bitwise_and),
    "or": _bitwise(np.bitwise_or),
    "xor": _bitwise(np.bitwise_xor),
    "compare": _compare,
}


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


ELEMENTWISE_KERNELS: dict[str, Kernel] = {
    **_UNARY,
    **_BINARY,
    "select": _select,
    "clamp": _clamp,
    "shift_left": _shift("left"),
    "shift_right_arithmetic": _shift("arithmetic"),
    "shift_right_logical": _shift("logical"),
}
