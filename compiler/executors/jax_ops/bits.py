"""JAX translations of the ops on bits and parts of values (kernels/bits.py): bitcast_convert,
reduce_precision, popcnt, count_leading_zeros, real, imag, complex, rng_bit_generator (XLA's
generator: the numpy kernel runs this one too) and after_all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shardc.executors.jax_ops import JaxOp, result_dtype
from shardc.executors.jax_runtime import jax_lax
from shardc.ir.core import Operation
from shardc.ir.ops.registry import attr
from shardc.ir.types import numpy_dtype


def _bitcast_convert(op: Operation, x: Any) -> Any:
    return jax_lax().bitcast_convert_type(x, result_dtype(op))


def _reduce_precision(op: Operation, x: Any) -> Any:
    return jax_lax().reduce_precision(x, attr(op, "exponent_bits"), attr(op, "mantissa_bits"))


def rng_bit_generator(op: Operation, state: Any) -> tuple[Any, Any]:
    """XLA's `rng_bit_generator`: (next state, bits of the op's second result type)."""
    lax = jax_lax()
    bits_t = op.results[1].type
    algorithm = getattr(lax.RandomAlgorithm, f"RNG_{attr(op, 'rng_algorithm').word}")
    with _wide_ints():  # a ui64 state needs 64-bit types (JAX's default mode truncates them)
        new_state, bits = lax.rng_bit_generator(
            state, bits_t.shape, dtype=numpy_dtype(bits_t.dtype), algorithm=algorithm
        )
    return new_state, bits


def _wide_ints() -> Any:
    """A context in which JAX keeps 64-bit types (a no-op inside a traced computation)."""
    import jax  # noqa: PLC0415 - optional dependency

    return jax.enable_x64(True)


def _after_all(op: Operation, *tokens: Any) -> Any:
    return np.zeros((), dtype=np.bool_)


BITS_OPS: dict[str, JaxOp] = {
    "bitcast_convert": _bitcast_convert,
    "reduce_precision": _reduce_precision,
    "popcnt": lambda op, x: jax_lax().population_count(x),
    "count_leading_zeros": lambda op, x: jax_lax().clz(x),
    "real": lambda op, x: jax_lax().real(x),
    "imag": lambda op, x: jax_lax().imag(x),
    "complex": lambda op, re, im: jax_lax().complex(re, im),
    "rng_bit_generator": rng_bit_generator,
    "after_all": _after_all,
}
