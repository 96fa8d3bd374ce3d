"""JAX translations of the element-wise ops: unary and binary arithmetic, compare, convert,
select, clamp and the shifts.

`compare` orders floats as StableHLO's TOTALORDER (-NaN < -inf < -0 < +0 < NaN) when asked and
honours `compare_type` SIGNED/UNSIGNED; `convert` to i1 is `x != 0`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_runtime import jax_lax, jax_numpy
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def _unary(name: str) -> Callable[..., Any]:
    def fn(op: Operation, x: Any) -> Any:
        lax, jnp = jax_lax(), jax_numpy()
        table: dict[str, Callable[[Any], Any]] = {
            "abs": jnp.abs, "negate": jnp.negative, "exponential": jnp.exp,
            "exponential_minus_one": jnp.expm1, "log": jnp.log, "log_plus_one": jnp.log1p,
            "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt, "cbrt": jnp.cbrt, "tanh": jnp.tanh,
            "logistic": lax.logistic, "sine": jnp.sin, "cosine": jnp.cos, "tan": jnp.tan,
            "floor": jnp.floor, "ceil": jnp.ceil, "round_nearest_even": lax.round_nearest_even
            if hasattr(lax, "round_nearest_even") else jnp.round,
            "round_nearest_afz": lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO),
            "sign": lax.sign, "not": lax.bitwise_not, "erf": lax.erf, "erf_inv": lax.erf_inv,
            "square": jnp.square,
            "reciprocal": lambda v: lax.div(jnp.ones_like(v), v), "is_finite": jnp.isfinite,
        }
        return table[name](x)

    return fn


def _binary(name: str) -> Callable[..., Any]:
    def fn(op: Operation, a: Any, b: Any) -> Any:
        lax = jax_lax()
        table: dict[str, Callable[[Any, Any], Any]] = {
            "add": lax.add, "subtract": lax.sub, "multiply": lax.mul, "divide": lax.div,
            "remainder": lax.rem, "maximum": lax.max, "minimum": lax.min, "power": lax.pow,
            "atan2": lax.atan2, "and": lax.bitwise_and, "or": lax.bitwise_or,
            "xor": lax.bitwise_xor,
        }
        return table[name](a, b)

    return fn


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


def _convert(op: Operation, x: Any) -> Any:
    lax = jax_lax()
    dtype = numpy_dtype(op.results[0].type.dtype)
    if dtype == np.bool_ and np.dtype(x.dtype) != np.bool_:
        return lax.ne(x, lax.full_like(x, 0))  # StableHLO: convert to i1 is x != 0
    return lax.convert_element_type(x, dtype)


ELEMENTWISE_OPS: dict[str, JaxOp] = {
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
    "select": lambda op, p, a, b: jax_numpy().where(p, a, b),
    "clamp": lambda op, lo, x, hi: jax_lax().clamp(lo, x, hi),
    "shift_left": lambda op, a, b: jax_lax().shift_left(a, b),
    "shift_right_arithmetic": lambda op, a, b: jax_lax().shift_right_arithmetic(a, b),
    "shift_right_logical": lambda op, a, b: jax_lax().shift_right_logical(a, b),
}
