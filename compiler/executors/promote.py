"""The program in float64: every f16/bf16/f32 value (and complex<f32>) widened, for a reference
more exact than the program itself (`shardc run --check`, compiler/check.py).

    wide = promote_floats(module)      # a new module; raises NotPromotable when it cannot be
    outputs = run_reference(wide, [widen(x) for x in inputs])

Widening is exact for every input and constant (each f32/bf16/f16 is an f64), so the promoted
program computes the same function with about 29 more bits in every rounding: its results are
the program's mathematical values to within f64 rounding, which is what a sharded run's error
is measured against. Constants are decoded with their own element type and re-encoded as f64
bytes: JAX writes f32 -inf as the bit pattern `dense<0xFF800000>`, which read as an f64 pattern
would be another number.

Ops whose meaning depends on the bits of a float cannot be widened: `bitcast_convert` of a float
(the bits reinterpreted) and `rng_bit_generator` drawing floats (random bits as floats). Those
raise `NotPromotable` naming the op, and the check falls back to the program's own precision.
"""

from __future__ import annotations

import numpy as np

from shardc.ir.attributes import DenseElements
from shardc.ir.core import Module, Operation
from shardc.ir.diagnostics import ShardcError
from shardc.ir.types import DistributedTensorType, TensorType, numpy_dtype

__all__ = ["WIDER", "NotPromotable", "promote_floats", "widen"]

# Each narrow element type and the type it is computed in by the promoted program.
WIDER = {"f16": "f64", "bf16": "f64", "f32": "f64", "complex<f32>": "complex<f64>"}


class NotPromotable(ShardcError):
    """The program has an op whose meaning depends on the bits of a narrow float."""


def promote_floats(module: Module) -> Module:
    """A copy of `module` with every narrow float type widened (`WIDER`) in every function's
    arguments, results and ops, and every such constant re-encoded; `module` is unchanged.
    Raises `NotPromotable` (located at the op) for bitcasts and random floats."""
    for op in module.walk():
        _check_promotable(op)
    wide = module.clone()
    for func in wide.functions.values():
        for a in func.args:
            a.type = _widened(a.type)
        func.result_types = [_widened(t) for t in func.result_types]
        for op in func.body:
            if op.name == "constant" and op.results[0].type.dtype in WIDER:
                t = op.results[0].type
                array = op.attributes["value"].to_numpy(t.shape, t.dtype)
                op.attributes["value"] = _dense(array.astype(numpy_dtype(WIDER[t.dtype])))
            for r in op.results:
                r.type = _widened(r.type)
    return wide


def widen(array: np.ndarray) -> np.ndarray:
    """An input of the program as the promoted program takes it (exactly the same numbers)."""
    for narrow, wide in WIDER.items():
        if array.dtype == numpy_dtype(narrow):
            return np.asarray(array).astype(numpy_dtype(wide))
    return array


def _widened(t: TensorType) -> TensorType:
    if t.dtype not in WIDER:
        return t
    if isinstance(t, DistributedTensorType):
        return DistributedTensorType(t.shape, WIDER[t.dtype], t.mapping)
    return TensorType(t.shape, WIDER[t.dtype])


def _dense(array: np.ndarray) -> DenseElements:
    """`array` as raw little-endian bytes (`dense<"0x...">`): exact, and one string however
    large the constant."""
    return DenseElements((), hex="0x" + array.astype(array.dtype.newbyteorder("<")).tobytes().hex())


def _check_promotable(op: Operation) -> None:
    if op.name == "bitcast_convert":
        types = [op.operands[0].type.dtype, op.results[0].type.dtype]
        if any(d in WIDER for d in types):
            raise NotPromotable(
                f"'bitcast_convert' op reinterprets the bits of {' to '.join(types)}, which "
                "widening to f64 would change", op.loc
            )
    if op.name == "rng_bit_generator" and any(r.type.dtype in WIDER for r in op.results):
        raise NotPromotable(
            "'rng_bit_generator' op draws random floats, whose bits widening would change",
            op.loc,
        )
