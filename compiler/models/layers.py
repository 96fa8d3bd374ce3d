"""Building blocks the zoo models share, written with the builder's StableHLO ops.

Every helper appends ops at the builder's insertion point and returns the result value. Scalars
are broadcast explicitly (element-wise ops take equal shapes, as in StableHLO), and reductions
keep a value's other dims in order, so a reduced value is broadcast back with the kept dims.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.ir.builder import Builder
from shardc.ir.core import Value


def named(v: Value, name: str) -> Value:
    """Give `v` a printed name (`%q` instead of `%12`)."""
    v.name_hint = name
    return v


def full(b: Builder, value: float, shape: Sequence[int], dtype: str = "f32") -> Value:
    """A scalar constant broadcast to `shape`."""
    return b.broadcast(b.constant(value, dtype), tuple(shape), ())


def reduce_keep(b: Builder, x: Value, dim: int, kind: str) -> Value:
    """Reduce `x` over `dim`, then broadcast the result back to `x`'s shape."""
    r = b.reduce(x, (dim,), kind)
    kept = tuple(d for d in range(x.type.rank) if d != dim)
    return b.broadcast(r, x.type.shape, kept)


def relu(b: Builder, x: Value) -> Value:
    return b.maximum(x, full(b, 0.0, x.type.shape, x.type.dtype))


def softmax(b: Builder, x: Value, dim: int) -> Value:
    """exp(x - max) / sum(exp(x - max)) along `dim` (reduce max, exp, reduce add, divide)."""
    shifted = b.subtract(x, reduce_keep(b, x, dim, "maximum"))
    e = b.exponential(shifted)
    return b.divide(e, reduce_keep(b, e, dim, "add"))


def layer_norm(b: Builder, x: Value, gamma: Value, beta: Value, eps: float = 1e-5) -> Value:
    """(x - mean) * rsqrt(var + eps) * gamma + beta over the last dim; gamma, beta: [d]."""
    shape, last = x.type.shape, x.type.rank - 1
    inv_n = full(b, 1.0 / shape[last], shape)
    mean = b.multiply(reduce_keep(b, x, last, "add"), inv_n)
    centred = b.subtract(x, mean)
    var = b.multiply(reduce_keep(b, b.multiply(centred, centred), last, "add"), inv_n)
    inv_std = b.rsqrt(b.add(var, full(b, eps, shape)))
    scaled = b.multiply(b.multiply(centred, inv_std), b.broadcast(gamma, shape, (last,)))
    return b.add(scaled, b.broadcast(beta, shape, (last,)))


def dense(b: Builder, x: Value, w: Value) -> Value:
    """`x[..., k] @ w[k, n] -> [..., n]` (contract x's last dim with w's first)."""
    return b.dot_general(x, w, ((x.type.rank - 1,), (0,)))


def scale(b: Builder, x: Value, factor: float) -> Value:
    return b.multiply(x, full(b, factor, x.type.shape, x.type.dtype))


def inv_sqrt(n: int) -> float:
    return 1.0 / math.sqrt(n)
