"""JAX translations of the linear algebra and transform ops: dot (as dot_general), cholesky,
triangular_solve, fft and batch norm, with the reference kernels' semantics (kernels/linalg.py).
"""

from __future__ import annotations

from typing import Any

from shardc.executors.jax_ops import JaxOp, result_dtype
from shardc.executors.jax_ops.reductions import dot_general
from shardc.executors.jax_runtime import jax_lax, jax_numpy
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


def _cholesky(op: Operation, a: Any) -> Any:
    lax, jnp = jax_lax(), jax_numpy()
    lower = attr(op, "lower")
    if not lower:
        a = jnp.conj(jnp.swapaxes(a, -1, -2))
    factor = lax.linalg.cholesky(a, symmetrize_input=False)
    return factor if lower else jnp.conj(jnp.swapaxes(factor, -1, -2))


def _triangular_solve(op: Operation, a: Any, b: Any) -> Any:
    kind = attr(op, "transpose_a").word
    return jax_lax().linalg.triangular_solve(
        a, b, left_side=attr(op, "left_side"), lower=attr(op, "lower"),
        transpose_a=kind != "NO_TRANSPOSE", conjugate_a=kind == "ADJOINT",
        unit_diagonal=attr(op, "unit_diagonal"),
    )


def _fft(op: Operation, x: Any) -> Any:
    lax = jax_lax()
    kind = getattr(lax.FftType, attr(op, "fft_type").word)
    return lax.fft(x, kind, tuple(attr(op, "fft_length"))).astype(result_dtype(op))


def _along(v: Any, rank: int, feature: int) -> Any:
    return v.reshape(tuple(-1 if d == feature else 1 for d in range(rank)))


def _work(x: Any) -> Any:
    jnp = jax_numpy()
    return jnp.float64 if x.dtype == jnp.float64 else jnp.float32


def _batch_norm_inference(op: Operation, x, scale, offset, mean, variance) -> Any:
    f, eps, r, w = attr(op, "feature_index"), attr(op, "epsilon"), x.ndim, _work(x)
    xs, sc, of, mu, var = (v.astype(w) for v in (x, scale, offset, mean, variance))
    y = (xs - _along(mu, r, f)) / jax_numpy().sqrt(_along(var, r, f) + eps)
    return (y * _along(sc, r, f) + _along(of, r, f)).astype(x.dtype)


def _batch_norm_training(op: Operation, x, scale, offset) -> Any:
    jnp = jax_numpy()
    f, eps, r, w = attr(op, "feature_index"), attr(op, "epsilon"), x.ndim, _work(x)
    others = tuple(d for d in range(r) if d != f)
    xs = x.astype(w)
    mean = xs.mean(axis=others)
    var = ((xs - _along(mean, r, f)) ** 2).mean(axis=others)
    y = (xs - _along(mean, r, f)) / jnp.sqrt(_along(var, r, f) + eps)
    y = y * _along(scale.astype(w), r, f) + _along(offset.astype(w), r, f)
    return y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)


def _batch_norm_grad(op: Operation, x, scale, mean, variance, dy) -> Any:
    jnp = jax_numpy()
    f, eps, r, w = attr(op, "feature_index"), attr(op, "epsilon"), x.ndim, _work(x)
    others = tuple(d for d in range(r) if d != f)
    xs, g = x.astype(w), dy.astype(w)
    centered = xs - _along(mean.astype(w), r, f)
    var_eps = _along(variance.astype(w), r, f) + eps
    stddev = jnp.sqrt(var_eps)
    count = x.size // x.shape[f]
    i2 = _along(g.sum(axis=others), r, f)
    i3 = _along((g * centered).sum(axis=others), r, f)
    i6 = g * count - i2 - i3 * centered / var_eps
    grad_x = _along(scale.astype(w), r, f) / stddev / count * i6
    grad_scale = (g * centered / stddev).sum(axis=others)
    grad_offset = g.sum(axis=others)
    return grad_x.astype(x.dtype), grad_scale.astype(x.dtype), grad_offset.astype(x.dtype)


LINALG_OPS: dict[str, JaxOp] = {
    "dot": dot_general,
    "cholesky": _cholesky,
    "triangular_solve": _triangular_solve,
    "fft": _fft,
    "batch_norm_inference": _batch_norm_inference,
    "batch_norm_training": _batch_norm_training,
    "batch_norm_grad": _batch_norm_grad,
}
