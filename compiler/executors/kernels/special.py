"""numpy kernels of the special functions JAX writes as `chlo.*` ops (`SPECIAL_UNARY`,
`SPECIAL_BINARY` in ir/ops/elementwise.py).

- The hyperbolic and inverse trigonometric functions are numpy's, bf16/f16 computed in float32
  and rounded once, as every element-wise kernel.
- `lgamma`, `digamma`, `erfc`, `bessel_i1e`, `zeta` (Hurwitz's, of x and q) and `polygamma` are
  scipy.special's (`gammaln`, `psi`, `erfc`, `i1e`, `zeta`, `polygamma`) in float64, rounded
  once to the operand type; scipy comes with JAX, and without it these kernels are a located
  error naming it. XLA's values at the poles: `digamma` of 0 and the negative integers is NaN,
  `polygamma` of an order that is not a non-negative integer is NaN.
- `next_after(x, y)` is the float after `x` towards `y`, stepped on the bits, so it holds for
  bf16 too: NaN if either is, `y` if equal, the smallest subnormal of `y`'s sign from zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shardc.executors.dtypes import F64
from shardc.executors.kernels import Kernel
from shardc.executors.kernels.elementwise import by_kind
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError


def _scipy(name: str, fn: Callable[..., Any]) -> Kernel:
    """`fn(special, *operands in float64)`, rounded once to the operand type."""

    def kernel(op: Operation, *xs: np.ndarray) -> np.ndarray:
        try:
            from scipy import special  # noqa: PLC0415 - optional: only these kernels need it
        except ImportError:
            raise ExecutionError(f"'{op.name}' op: the reference kernel of {name} needs scipy "
                                 "(pip install scipy)", op.loc) from None
        with np.errstate(all="ignore"):
            out = fn(special, *[x.astype(F64) for x in xs])
        return np.asarray(out).astype(xs[0].dtype)

    return kernel


def _digamma(special: Any, x: np.ndarray) -> np.ndarray:
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, special.psi(x))


def _polygamma(special: Any, n: np.ndarray, x: np.ndarray) -> np.ndarray:
    whole = (n >= 0) & (n == np.floor(n))
    return np.where(whole, special.polygamma(np.where(whole, n, 0).astype(np.int64), x), np.nan)


def _next_after(op: Operation, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    uint = np.dtype(f"u{x.dtype.itemsize}")
    bits = x.view(uint).copy()
    sign = uint.type(1 << (8 * x.dtype.itemsize - 1))
    with np.errstate(invalid="ignore"):
        wide_x, wide_y = x.astype(F64), y.astype(F64)
        up = (wide_x < wide_y) == (wide_x > 0)  # away from zero: the bits grow
        stepped = np.where(up, bits + uint.type(1), bits - uint.type(1))
        tiny = np.where(wide_y < 0, sign | uint.type(1), uint.type(1))  # from +-0
        out = np.where(wide_x == 0, tiny, stepped).astype(uint).view(x.dtype)
        out = np.where(wide_x == wide_y, y, out)
        return np.where(np.isnan(wide_x) | np.isnan(wide_y), np.asarray(np.nan, x.dtype), out)


SPECIAL_KERNELS: dict[str, Kernel] = {
    "sinh": by_kind(np.sinh),
    "cosh": by_kind(np.cosh),
    "asin": by_kind(np.arcsin),
    "acos": by_kind(np.arccos),
    "atan": by_kind(np.arctan),
    "asinh": by_kind(np.arcsinh),
    "acosh": by_kind(np.arccosh),
    "atanh": by_kind(np.arctanh),
    "lgamma": _scipy("lgamma", lambda s, x: s.gammaln(x)),
    "digamma": _scipy("digamma", _digamma),
    "erfc": _scipy("erfc", lambda s, x: s.erfc(x)),
    "bessel_i1e": _scipy("bessel_i1e", lambda s, x: s.i1e(x)),
    "zeta": _scipy("zeta", lambda s, x, q: s.zeta(x, q)),
    "polygamma": _scipy("polygamma", _polygamma),
    "next_after": _next_after,
}
