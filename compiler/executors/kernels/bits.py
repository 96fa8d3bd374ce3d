"""numpy kernels of the ops on bits and parts of values: bitcast_convert, reduce_precision,
popcnt, count_leading_zeros, real, imag, complex, rng_bit_generator and the token op after_all.

- `bitcast_convert` reinterprets little-endian element bytes (a wider element takes the trailing
  dim of narrower ones, first element least significant), as XLA does on CPU.
- `reduce_precision` rounds the mantissa to nearest even and then clamps the exponent range
  (overflow to infinity, underflow to zero), bit for bit as XLA's emitter; NaN stays NaN.
- `popcnt` and `count_leading_zeros` count in the two's complement bits of the type.
- `rng_bit_generator`: StableHLO leaves the bits to the implementation, so this runs XLA's
  generator through JAX (the `[jax]` extra); without JAX it is a located error.
"""

from __future__ import annotations

import numpy as np

from shardc.executors.kernels import Kernel, result_type
from shardc.ir.core import Operation
from shardc.ir.diagnostics import ExecutionError
from shardc.ir.ops.registry import attr

# float dtype -> (unsigned int of its width, mantissa bits, exponent bits)
_FLOAT_BITS = {
    "float16": (np.uint16, 10, 5), "bfloat16": (np.uint16, 7, 8),
    "float32": (np.uint32, 23, 8), "float64": (np.uint64, 52, 11),
}


def _unsigned(x: np.ndarray) -> np.ndarray:
    """`x`'s two's complement bits as the unsigned type of its width."""
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _bitcast_convert(op: Operation, x: np.ndarray) -> np.ndarray:
    shape, dtype = result_type(op)
    data = np.ascontiguousarray(x)
    if data.dtype == np.bool_ or dtype == np.bool_:
        raise ExecutionError("'bitcast_convert' op: i1 has no bytes of its own to reinterpret",
                             op.loc)
    return data.view(dtype).reshape(shape)


def _reduce_precision(op: Operation, x: np.ndarray) -> np.ndarray:
    uint, src_mantissa, src_exponent = _FLOAT_BITS[x.dtype.name]
    exponent_bits, mantissa_bits = attr(op, "exponent_bits"), attr(op, "mantissa_bits")
    nbits = 8 * x.dtype.itemsize
    one = uint(1)
    bits = x.view(uint).copy()
    if mantissa_bits < src_mantissa:
        last = uint(1 << (src_mantissa - mantissa_bits))
        bias = (last >> one) - one
        last_bit = (bits & last) >> uint(src_mantissa - mantissa_bits)
        bits = (bits + last_bit + bias) & ~(last - one)
    if exponent_bits < src_exponent:
        sign = uint(1 << (nbits - 1))
        exp_mask = uint(((1 << src_exponent) - 1) << src_mantissa)
        exponent_bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = uint((exponent_bias + reduced_bias) << src_mantissa)
        min_exp = uint((exponent_bias - reduced_bias) << src_mantissa)
        exponent = bits & exp_mask
        signed_zero = bits & sign
        bits = np.where(exponent > max_exp, signed_zero | exp_mask,
                        np.where(exponent <= min_exp, signed_zero, bits))
    out = bits.astype(uint).view(x.dtype)
    return np.where(np.isnan(x), x, out)


def _popcnt(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(_unsigned(x)).astype(x.dtype)


def _count_leading_zeros(op: Operation, x: np.ndarray) -> np.ndarray:
    width = 1 if x.dtype == np.bool_ else 8 * x.dtype.itemsize
    u = _unsigned(x).astype(np.uint64)
    length = np.zeros(u.shape, dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        high = u >> np.uint64(shift)
        hit = high != 0
        length += np.where(hit, shift, 0)
        u = np.where(hit, high, u)
    length += (u != 0)
    return (width - length).astype(x.dtype)


def _real(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.real(x).astype(result_type(op)[1])


def _imag(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.imag(x).astype(result_type(op)[1])


def _complex(op: Operation, re: np.ndarray, im: np.ndarray) -> np.ndarray:
    return (re + 1j * im).astype(result_type(op)[1])


def _rng_bit_generator(op: Operation, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        from shardc.executors.jax_ops.bits import rng_bit_generator
    except ImportError:
        raise ExecutionError(
            "'rng_bit_generator' op: its bits are XLA's; install the JAX extra "
            "(pip install 'shardc[jax]') to run it", op.loc) from None
    new_state, bits = rng_bit_generator(op, state)
    return np.asarray(new_state), np.asarray(bits)


def _after_all(op: Operation, *tokens: np.ndarray) -> np.ndarray:
    return np.zeros((), dtype=np.bool_)


BITS_KERNELS: dict[str, Kernel] = {
    "bitcast_convert": _bitcast_convert,
    "reduce_precision": _reduce_precision,
    "popcnt": _popcnt,
    "count_leading_zeros": _count_leading_zeros,
    "real": _real,
    "imag": _imag,
    "complex": _complex,
    "rng_bit_generator": _rng_bit_generator,
    "after_all": _after_all,
}
