"""JAX translations of the windowed ops: convolution (`lax.conv_general_dilated`, window
reversal as a `rev` of the kernel) and reduce_window (`lax.reduce_window`)."""

from __future__ import annotations

from typing import Any

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_runtime import jax_lax, lax_reducer
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr
from shardc.ir.ops.window import CONV_DIMS, conv_padding
from shardc.ir.types import numpy_dtype


def _convolution(op: Operation, lhs: Any, rhs: Any) -> Any:
    lax = jax_lax()
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
    lax = jax_lax()
    rank = len(op.operands[0].type.shape)
    ones = (1,) * rank
    fn = lax_reducer(attr(op, "kind").word)
    return lax.reduce_window(
        x, init, fn,
        tuple(attr(op, "window_dimensions")),
        tuple(attr(op, "window_strides") or ones),
        tuple(conv_padding(op, rank)),
        base_dilation=tuple(attr(op, "base_dilations") or ones),
        window_dilation=tuple(attr(op, "window_dilations") or ones),
    )


WINDOW_OPS: dict[str, JaxOp] = {
    "convolution": _convolution,
    "reduce_window": _reduce_window,
}
