"""JAX translations of shifts, dynamic slices, convolution, reduce_window,
optimization_barrier, top_k and the known custom_call targets (same semantics as the numpy
kernels in kernels_extra.py: StableHLO's, which `jax.lax` follows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.window import CONV_DIMS, conv_padding
from shardc.ir.types import numpy_dtype


def _lax() -> Any:
    from jax import lax  # noqa: PLC0415 - optional dependency

    return lax


def _convolution(op: Operation, lhs: Any, rhs: Any) -> Any:
    lax = _lax()
    d = {k: attr(op, k) for k in CONV_DIMS}
    n = len(d["input_spatial_dimensions"])
    ones = (1,) * n
    reversal = attr(op, "window_reversal") or (False,) * n
    flips = tuple(s for s, r in zip(d["kernel_spatial_dimensions"], reversal) if r)
    if flips:
        rhs = lax.rev(rhs, flips)
    numbers = lax.ConvDimensionNumbers(
        lhs_spec=(d["input_batch_dimension"], d["input_feature_dimension"],
                  *d["input_spatial_dimensions"]),
        rhs_spec=(d["kernel_output_feature_dimension"], d["kernel_input_feature_dimension"],
                  *d["kernel_spatial_dimensions"]),
        out_spec=(d["output_batch_dimension"], d["output_feature_dimension"],
                  *d["output_spatial_dimensions"]),
    )
    dtype = numpy_dtype(op.results[0].type.dtype)
    out = lax.conv_general_dilated(
        lhs, rhs,
        window_strides=tuple(attr(op, "window_strides") or ones),
        padding=tuple(conv_padding(op, n)),
        lhs_dilation=tuple(attr(op, "lhs_dilation") or ones),
        rhs_dilation=tuple(attr(op, "rhs_dilation") or ones),
        dimension_numbers=numbers,
        feature_group_count=attr(op, "feature_group_count"),
        batch_group_count=attr(op, "batch_group_count"),
        preferred_element_type=dtype,
    )
    return out.astype(dtype)


def _reduce_window(op: Operation, x: Any, init: Any) -> Any:
    lax = _lax()
    rank = len(op.operands[0].type.shape)
    ones = (1,) * rank
    fn = {"add": lax.add, "multiply": lax.mul, "maximum": lax.max, "minimum": lax.min,
          "and": lax.bitwise_and, "or": lax.bitwise_or}[attr(op, "kind").word]
    return lax.reduce_window(
        x, init, fn,
        tuple(attr(op, "window_dimensions")),
        tuple(attr(op, "window_strides") or ones),
        tuple(conv_padding(op, rank)),
        base_dilation=tuple(attr(op, "base_dilations") or ones),
        window_dilation=tuple(attr(op, "window_dilations") or ones),
    )


def _cholesky(op: Operation, a: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp  # noqa: PLC0415 - optional dependency

    text = getattr(op.attributes.get("mhlo.backend_config"), "text", "") or ""
    factor = jnp.linalg.cholesky(a)
    if "uplo = 85" in text:
        factor = jnp.swapaxes(factor, -1, -2)
    info_t = op.results[1].type
    info = jnp.where(jnp.all(jnp.isfinite(factor)), 0, 1).astype(numpy_dtype(info_t.dtype))
    return factor, jnp.broadcast_to(info, info_t.shape)


_CUSTOM_CALLS: dict[str, Callable[..., Any]] = {
    "lapack_spotrf_ffi": _cholesky,
    "lapack_dpotrf_ffi": _cholesky,
}


def _custom_call(op: Operation, *xs: Any) -> Any:
    target = attr(op, "call_target_name")
    fn = _CUSTOM_CALLS.get(target)
    if fn is None:
        raise ExecutionError(
            f"cannot run custom_call \"{target}\" on JAX: known targets are "
            f"{', '.join(sorted(_CUSTOM_CALLS))}", op.loc
        )
    return fn(op, *xs)


def _clamped(x: Any, sizes: Any, indices: Any) -> list[Any]:
    """StableHLO clamps start indices into `[0, n - size]`; `jax.lax` would first wrap
    negative ones (Python style), so they are clamped here."""
    lax = _lax()
    return [
        lax.clamp(lax.convert_element_type(0, i.dtype), i,
                  lax.convert_element_type(n - s, i.dtype))
        for i, n, s in zip(indices, x.shape, sizes)
    ]


def _dynamic_slice(op: Operation, x: Any, *indices: Any) -> Any:
    sizes = tuple(attr(op, "slice_sizes"))
    return _lax().dynamic_slice(x, _clamped(x, sizes, indices), sizes)


def _dynamic_update_slice(op: Operation, x: Any, update: Any, *indices: Any) -> Any:
    return _lax().dynamic_update_slice(x, update, _clamped(x, update.shape, indices))


JAX_EXTRA_OPS: dict[str, Callable[..., Any]] = {
    "shift_left": lambda op, a, b: _lax().shift_left(a, b),
    "shift_right_arithmetic": lambda op, a, b: _lax().shift_right_arithmetic(a, b),
    "shift_right_logical": lambda op, a, b: _lax().shift_right_logical(a, b),
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "convolution": _convolution,
    "reduce_window": _reduce_window,
    "optimization_barrier": lambda op, *xs: tuple(_lax().optimization_barrier(tuple(xs))),
    "top_k": lambda op, x: tuple(_lax().top_k(x, attr(op, "k"))),
    "custom_call": _custom_call,
}
