"""JAX translations of the windowed ops: convolution (`lax.conv_general_dilated`, window
reversal as a `rev` of the kernel) and reduce_window (`lax.reduce_window`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from shardc.executors.jax_ops import JaxOp
from shardc.executors.jax_runtime import jax_lax, lax_reducer
from shardc.executors.scalar_bodies import body_of, evaluate_body
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


def _reduce_window(op: Operation, *arrays: Any, ops: Mapping[str, JaxOp]) -> Any:
    """`lax.reduce_window` with the kind's reducer, or the body function traced with the JAX
    ops (several inputs: tuples of operands and inits)."""
    lax = jax_lax()
    rank = len(op.operands[0].type.shape)
    ones = (1,) * rank
    n = len(op.results)
    if "body" in op.attributes:
        body = evaluate_body(body_of(op, "body"), ops)

        def fn(acc: Any, x: Any) -> Any:
            acc, x = (acc, x) if n > 1 else ((acc,), (x,))
            out = body(*acc, *x)
            return tuple(out) if n > 1 else out[0]
    else:
        fn = lax_reducer(attr(op, "kind").word)
    x, init = (tuple(arrays[:n]), tuple(arrays[n:])) if n > 1 else arrays
    return lax.reduce_window(
        x, init, fn,
        tuple(attr(op, "window_dimensions")),
        tuple(attr(op, "window_strides") or ones),
        tuple(conv_padding(op, rank)),
        base_dilation=tuple(attr(op, "base_dilations") or ones),
        window_dilation=tuple(attr(op, "window_dilations") or ones),
    )


def _select_and_scatter(op: Operation, x: Any, source: Any, init: Any,
                        ops: Mapping[str, JaxOp]) -> Any:
    """XLA's select_and_scatter, both regions traced from the op's functions (through JAX's
    internal `_select_and_scatter`: jax.lax has no public counterpart of the general op)."""
    from jax._src.lax.windowed_reductions import _select_and_scatter as select_and_scatter

    rank = x.ndim
    ones = (1,) * rank
    select = evaluate_body(body_of(op, "select"), ops)
    if "body" in op.attributes:
        body = evaluate_body(body_of(op, "body"), ops)

        def scatter(a: Any, b: Any) -> Any:
            return body(a, b)[0]
    else:
        scatter = lax_reducer(attr(op, "kind").word)
    return select_and_scatter(
        x, lambda a, b: select(a, b)[0], tuple(attr(op, "window_dimensions") or ones),
        tuple(attr(op, "window_strides") or ones), tuple(conv_padding(op, rank)), source,
        init, scatter,
    )


def window_ops(ops: Mapping[str, JaxOp]) -> dict[str, JaxOp]:
    """The family's translations; window bodies are traced with the whole table `ops`."""
    return {
        "convolution": _convolution,
        "reduce_window": partial(_reduce_window, ops=ops),
        "select_and_scatter": partial(_select_and_scatter, ops=ops),
    }
