"""numpy kernels of the linear algebra and transform ops: dot, cholesky, triangular_solve, fft
and batch norm (StableHLO semantics).

- `dot` is `dot_general` with its implied dims (reductions.py computes it).
- `cholesky` and `triangular_solve` compute in float64 (complex128) and round back;
  `cholesky` gives zeros in the other triangle, and NaNs for a matrix that is not positive
  definite. `triangular_solve` reads only `a`'s triangle (its diagonal as ones when
  `unit_diagonal`).
- `fft` computes in complex128 / float64 and rounds back to the result type.
- Batch norm computes in float32 (float64 for f64) with the biased variance, as StableHLO
  specifies; `batch_norm_grad` follows the spec's formula (XLA's batchnorm expander).
"""

from __future__ import annotations

import numpy as np

from shardc.executors.dtypes import F32, F64
from shardc.executors.kernels import Kernel, result_type
from shardc.executors.kernels.reductions import dot_general
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _cholesky(op: Operation, a: np.ndarray) -> np.ndarray:
    work = _wide(a)
    lower = attr(op, "lower")
    if not lower:  # u^T u with u = l^T: factor the transpose
        work = np.conj(np.swapaxes(work, -1, -2))
    out = np.empty_like(work)
    flat_in = work.reshape(-1, *work.shape[-2:])
    flat_out = out.reshape(-1, *work.shape[-2:])
    for i, m in enumerate(flat_in):
        try:
            flat_out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            flat_out[i] = np.nan
    if not lower:
        out = np.conj(np.swapaxes(out, -1, -2))
    return out.astype(a.dtype)


def _triangular_solve(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    work = _wide(a)
    work = np.tril(work) if attr(op, "lower") else np.triu(work)
    if attr(op, "unit_diagonal"):
        n = work.shape[-1]
        work = work.copy()
        work[..., np.arange(n), np.arange(n)] = 1
    kind = attr(op, "transpose_a").word
    if kind != "NO_TRANSPOSE":
        work = np.swapaxes(work, -1, -2)
        if kind == "ADJOINT":
            work = np.conj(work)
    rhs = _wide(b)
    if attr(op, "left_side"):  # op(a) @ x = b
        x = np.linalg.solve(work, rhs)
    else:  # x @ op(a) = b  <=>  op(a)^T @ x^T = b^T
        x = np.swapaxes(np.linalg.solve(np.swapaxes(work, -1, -2), np.swapaxes(rhs, -1, -2)),
                        -1, -2)
    return x.astype(b.dtype)


def _fft(op: Operation, x: np.ndarray) -> np.ndarray:
    kind = attr(op, "fft_type").word
    length = tuple(attr(op, "fft_length"))
    axes = tuple(range(x.ndim - len(length), x.ndim))
    _, dtype = result_type(op)
    if kind == "FFT":
        out = np.fft.fftn(x, s=length, axes=axes)
    elif kind == "IFFT":
        out = np.fft.ifftn(x, s=length, axes=axes)
    elif kind == "RFFT":
        out = np.fft.rfftn(x, s=length, axes=axes)
    else:
        out = np.fft.irfftn(x, s=length, axes=axes)
    return out.astype(dtype)


def _stats_dtype(x: np.ndarray) -> np.dtype:
    return F64 if x.dtype == F64 else F32


def _along(v: np.ndarray, rank: int, feature: int) -> np.ndarray:
    """A per-feature vector shaped to broadcast along dim `feature` of a rank-`rank` array."""
    return v.reshape(tuple(-1 if d == feature else 1 for d in range(rank)))


def _batch_norm_inference(op: Operation, x, scale, offset, mean, variance) -> np.ndarray:
    f, eps, w = attr(op, "feature_index"), attr(op, "epsilon"), _stats_dtype(x)
    r = x.ndim
    xs, sc, of, mu, var = (v.astype(w) for v in (x, scale, offset, mean, variance))
    y = (xs - _along(mu, r, f)) / np.sqrt(_along(var, r, f) + w.type(eps))
    return (y * _along(sc, r, f) + _along(of, r, f)).astype(x.dtype)


def _batch_norm_training(op: Operation, x, scale, offset):
    f, eps, w = attr(op, "feature_index"), attr(op, "epsilon"), _stats_dtype(x)
    r = x.ndim
    others = tuple(d for d in range(r) if d != f)
    xs = x.astype(w)
    mean = xs.mean(axis=others)
    var = ((xs - _along(mean, r, f)) ** 2).mean(axis=others)
    y = (xs - _along(mean, r, f)) / np.sqrt(_along(var, r, f) + w.type(eps))
    y = y * _along(scale.astype(w), r, f) + _along(offset.astype(w), r, f)
    return y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)


def _batch_norm_grad(op: Operation, x, scale, mean, variance, dy):
    f, eps, w = attr(op, "feature_index"), attr(op, "epsilon"), _stats_dtype(x)
    r = x.ndim
    others = tuple(d for d in range(r) if d != f)
    xs, g = x.astype(w), dy.astype(w)
    centered = xs - _along(mean.astype(w), r, f)
    var_eps = _along(variance.astype(w), r, f) + w.type(eps)
    stddev = np.sqrt(var_eps)
    count = w.type(x.size // x.shape[f])
    i2 = _along(g.sum(axis=others), r, f)
    i3 = _along((g * centered).sum(axis=others), r, f)
    i6 = g * count - i2 - i3 * centered / var_eps
    grad_x = _along(scale.astype(w), r, f) / stddev / count * i6
    grad_scale = (g * centered / stddev).sum(axis=others)
    grad_offset = g.sum(axis=others)
    return grad_x.astype(x.dtype), grad_scale.astype(x.dtype), grad_offset.astype(x.dtype)


LINALG_KERNELS: dict[str, Kernel] = {
    "dot": dot_general,
    "cholesky": _cholesky,
    "triangular_solve": _triangular_solve,
    "fft": _fft,
    "batch_norm_inference": _batch_norm_inference,
    "batch_norm_training": _batch_norm_training,
    "batch_norm_grad": _batch_norm_grad,
}
