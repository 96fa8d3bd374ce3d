"""`rng_bit_generator`: random bits from a generator state (StableHLO semantics).

%state1, %bits = rng_bit_generator %state {rng_algorithm = DEFAULT}
                 : tensor<2xui64>, tensor<4x1000xui32>

The result is the next state (the operand's type) and a tensor of random bits. StableHLO leaves
the bits of the DEFAULT algorithm to the implementation; THREE_FRY and PHILOX are fixed
algorithms. shardc's executors run XLA's (through JAX), so the bits are JAX's.
"""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, op_error, register, req
from shardc.ir.types import TensorType

RNG_ALGORITHMS = ("DEFAULT", "THREE_FRY", "PHILOX")


def _infer_rng(op: Operation) -> list[TensorType | None]:
    state = op.operand(0).type
    if state.rank != 1 or not state.dtype.startswith(("ui", "i")):
        raise op_error(op, f"the state must be a vector of integers, got {state.tensor}")
    bits = op.results[1].type if len(op.results) > 1 else None
    if bits is not None and not bits.dtype.startswith(("ui", "i", "f")):
        raise op_error(op, f"random bits must be integers or floats, got {bits.dtype}")
    return [TensorType(state.shape, state.dtype), None]


register(
    OpDef(
        "rng_bit_generator",
        1,
        2,
        {"rng_algorithm": req("keyword", *RNG_ALGORITHMS)},
        _infer_rng,
        summary="the next generator state and a tensor of random bits",
    )
)
