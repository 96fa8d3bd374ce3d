"""`custom_call` and the call targets shardc knows.

%1 = custom_call %x {call_target_name = "my_op", sharding_rule = "ij->ij"} : tensor<8x16xf32>

A target is opaque to the IR; `CUSTOM_CALL_TARGETS` says what shardc knows about the ones it can
run: what each computes (the executors key their kernels by it) and whether it reads its operands
whole, whatever factors a sharding rule names (insert-reshards then replicates its operands and
results).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Operation
from shardc.ir.ops.registry import OpDef, opt, register, req


@dataclass(frozen=True, slots=True)
class CustomCallTarget:
    """A `call_target_name` shardc runs (`lapack_spotrf_ffi`: a Cholesky factorisation)."""

    name: str
    computes: str  # what the executors run for it, e.g. "cholesky"
    whole_operands: bool  # reads whole matrices: operands and results must be replicated


CUSTOM_CALL_TARGETS: dict[str, CustomCallTarget] = {
    t.name: t
    for t in (
        CustomCallTarget("lapack_spotrf_ffi", "cholesky", whole_operands=True),
        CustomCallTarget("lapack_dpotrf_ffi", "cholesky", whole_operands=True),
    )
}


def custom_call_target(op: Operation) -> CustomCallTarget | None:
    """The known target `op` calls (None: not a custom_call, or a target shardc does not know)."""
    if op.name != "custom_call":
        return None
    return CUSTOM_CALL_TARGETS.get(op.attributes.get("call_target_name"))  # type: ignore[arg-type]


register(
    OpDef(
        "custom_call",
        None,
        None,
        {"call_target_name": req("str"), "sharding_rule": opt("str", None)},
    )
)
