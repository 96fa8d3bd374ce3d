"""JAX translations of the element-wise ops: unary and binary arithmetic, compare, convert,
select, clamp and the shifts.

`compare` orders floats as StableHLO's TOTALORDER (-NaN < -inf < -0 < +0 < NaN) when asked and
honours `compare_type` SIGNED/UNSIGNED; `convert` to i1 is `x != 0`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_runtime import jax_lax, jax_numpy
from shardc.ir.core import Operation
from shardc.ir.ops.elementwise import SPECIAL_BINARY, SPECIAL_UNARY
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def _unary(name: str) -> Callable[..., Any]:
    def fn(op: Operation, x: Any) -> Any:
        return _unary_table()[name](x)

    return fn


@functools.cache
def _unary_table() -> dict[str, Callable[[Any], Any]]:
    """Each unary op's function, built once. Where StableHLO's operand types are those of the
    `jax.lax` function (floats for exp, log, sqrt, tanh and the trigonometry; any number for
    negate) it is called directly: `jax.numpy`'s wrapper would only add its dtype promotion,
    which has nothing to do there (the same primitive, at half the trace cost)."""
    lax, jnp = jax_lax(), jax_numpy()
    return {
        "abs": jnp.abs, "negate": lax.neg, "exponential": lax.exp,
        "exponential_minus_one": lax.expm1, "log": lax.log, "log_plus_one": lax.log1p,
        "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "cbrt": lax.cbrt, "tanh": lax.tanh,
        "logistic": lax.logistic, "sine": lax.sin, "cosine": lax.cos, "tan": lax.tan,
        "floor": jnp.floor, "ceil": jnp.ceil, "round_nearest_even": lax.round_nearest_even
        if hasattr(lax, "round_nearest_even") else jnp.round,
        "round_nearest_afz": lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO),
        "sign": lax.sign, "not": lax.bitwise_not, "erf": lax.erf, "erf_inv": lax.erf_inv,
        "square": jnp.square,
        "reciprocal": lambda v: lax.div(jnp.ones_like(v), v), "is_finite": jnp.isfinite,
    }


def _binary(name: str) -> Callable[..., Any]:
    def fn(op: Operation, a: Any, b: Any) -> Any:
        return _binary_table()[name](a, b)

    return fn


@functools.cache
def _binary_table() -> dict[str, Callable[[Any, Any], Any]]:
    lax = jax_lax()
    return {
        "add": lax.add, "subtract": lax.sub, "multiply": lax.mul, "divide": lax.div,
        "remainder": lax.rem, "maximum": lax.max, "minimum": lax.min, "power": lax.pow,
        "atan2": lax.atan2, "and": lax.bitwise_and, "or": lax.bitwise_or,
        "xor": lax.bitwise_xor,
    }


def _total_order_key(x: Any) -> Any:
    """Signed integers ordering floats as TOTALORDER (-NaN < -inf < -0 < +0 < NaN)."""
    lax = jax_lax()
    itype = np.dtype(f"i{np.dtype(x.dtype).itemsize}")
    bits = lax.bitcast_convert_type(x, itype)
    mask = np.array(np.iinfo(itype).max, dtype=itype)
    return lax.select(bits < 0, lax.bitwise_xor(bits, lax.full_like(bits, mask)), bits)


def _compare(op: Operation, a: Any, b: Any) -> Any:
    lax = jax_lax()
    compare_type = attr(op, "compare_type")
    kind = compare_type.word if compare_type is not None else None
    dtype = np.dtype(a.dtype)
    if kind == "TOTALORDER" and dtype.kind in "fV":
        a, b = _total_order_key(a), _total_order_key(b)
    elif kind == "UNSIGNED" and dtype.kind == "i":
        utype = np.dtype(f"u{dtype.itemsize}")
        a, b = lax.bitcast_convert_type(a, utype), lax.bitcast_convert_type(b, utype)
    elif kind == "SIGNED" and dtype.kind == "u":
        itype = np.dtype(f"i{dtype.itemsize}")
        a, b = lax.bitcast_convert_type(a, itype), lax.bitcast_convert_type(b, itype)
    fn = {"EQ": lax.eq, "NE": lax.ne, "GE": lax.ge, "GT": lax.gt, "LE": lax.le, "LT": lax.lt}
    return fn[attr(op, "comparison_direction").word](a, b)


def _select(op: Operation, p: Any, a: Any, b: Any) -> Any:
    """`lax.select` when the operands already agree (shapes, dtypes, none weakly typed): what
    `jnp.where` would reduce to, without its broadcasting and promotion."""
    if p.shape == a.shape == b.shape and a.dtype == b.dtype and not (_weak(a) or _weak(b)):
        return jax_lax().select(p, a, b)
    return jax_numpy().where(p, a, b)


def _weak(x: Any) -> bool:
    return bool(getattr(getattr(x, "aval", x), "weak_type", False))


def _convert(op: Operation, x: Any) -> Any:
    lax = jax_lax()
    dtype = numpy_dtype(op.results[0].type.dtype)
    if dtype == np.bool_ and np.dtype(x.dtype) != np.bool_:
        return lax.ne(x, lax.full_like(x, 0))  # StableHLO: convert to i1 is x != 0
    return lax.convert_element_type(x, dtype)


def _special(name: str) -> JaxOp:
    """The `jax.lax` function of a special-function op (ir/ops/elementwise.py's SPECIAL_*)."""
    attr_name = {"next_after": "nextafter"}.get(name, name)

    def fn(op: Operation, *xs: Any) -> Any:
        return getattr(jax_lax(), attr_name)(*xs)

    return fn


ELEMENTWISE_OPS: dict[str, JaxOp] = {
    **{n: _special(n) for n in SPECIAL_UNARY + SPECIAL_BINARY},
    **{n: _unary(n) for n in (
        "abs", "negate", "exponential", "exponential_minus_one", "log", "log_plus_one", "sqrt",
        "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "tan", "floor", "ceil",
        "round_nearest_even", "round_nearest_afz", "sign", "not", "erf", "erf_inv", "square",
        "reciprocal",
        "is_finite",
    )},
    **{n: _binary(n) for n in (
        "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
        "atan2", "and", "or", "xor",
    )},
    "compare": _compare,
    "convert": _convert,
    "select": _select,
    "clamp": lambda op, lo, x, hi: jax_lax().clamp(lo, x, hi),
    "shift_left": lambda op, a, b: jax_lax().shift_left(a, b),
    "shift_right_arithmetic": lambda op, a, b: jax_lax().shift_right_arithmetic(a, b),
    "shift_right_logical": lambda op, a, b: jax_lax().shift_right_logical(a, b),
}
