"""JAX translations of the ops that create and rearrange data: constant, iota,
broadcast_in_dim, reshape, transpose, concatenate, slice, pad, reverse, dynamic_slice,
dynamic_update_slice.
"""

from __future__ import annotations

from typing import Any

from shardc.executors.jax_ops import JaxOp, result_dtype, result_shape
from shardc.executors.jax_runtime import jax_lax, jax_numpy
from shardc.executors.kernels.table import KERNELS
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr


def _constant(op: Operation) -> Any:
    return jax_numpy().asarray(KERNELS["constant"](op))


def _pad(op: Operation, x: Any, value: Any) -> Any:
    lo, hi = attr(op, "edge_padding_low"), attr(op, "edge_padding_high")
    interior = attr(op, "interior_padding") or (0,) * len(lo)
    return jax_lax().pad(x, value, list(zip(lo, hi, interior)))


def _slice(op: Operation, x: Any) -> Any:
    strides = attr(op, "strides")
    return jax_lax().slice(x, attr(op, "start_indices"), attr(op, "limit_indices"), strides)


def _clamped(x: Any, sizes: Any, indices: Any) -> list[Any]:
    """StableHLO clamps start indices into `[0, n - size]`; `jax.lax` would first wrap
    negative ones (Python style), so they are clamped here."""
    lax = jax_lax()
    return [
        lax.clamp(lax.convert_element_type(0, i.dtype), i,
                  lax.convert_element_type(n - s, i.dtype))
        for i, n, s in zip(indices, x.shape, sizes)
    ]


# (The indices are clamped into range first: `jax.lax`'s wrapping of negative ones would only
# add ops that never change them.)
def _dynamic_slice(op: Operation, x: Any, *indices: Any) -> Any:
    sizes = tuple(attr(op, "slice_sizes"))
    return jax_lax().dynamic_slice(x, _clamped(x, sizes, indices), sizes,
                                   allow_negative_indices=False)


def _dynamic_update_slice(op: Operation, x: Any, update: Any, *indices: Any) -> Any:
    return jax_lax().dynamic_update_slice(x, update, _clamped(x, update.shape, indices),
                                          allow_negative_indices=False)


MOVEMENT_OPS: dict[str, JaxOp] = {
    "constant": _constant,
    "iota": lambda op: jax_lax().broadcasted_iota(
        result_dtype(op), result_shape(op), attr(op, "iota_dimension")
    ),
    "broadcast_in_dim": lambda op, x: jax_lax().broadcast_in_dim(
        x, result_shape(op), tuple(attr(op, "broadcast_dimensions"))
    ),
    "reshape": lambda op, x: jax_lax().reshape(x, result_shape(op)),
    "transpose": lambda op, x: jax_lax().transpose(x, tuple(attr(op, "permutation"))),
    "concatenate": lambda op, *xs: jax_lax().concatenate(xs, attr(op, "dimension")),
    "slice": _slice,
    "pad": _pad,
    "reverse": lambda op, x: jax_lax().rev(x, tuple(attr(op, "dimensions"))),
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
}
