"""Sharding ops in the per-device program: a `reshard`, `sharding_constraint` or
`propagation_barrier` that moves no data is its operand; a `sharding_group` goes away."""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.passes.collectives.steps import same_layout
from shardc.passes.spmd_lowering.function_lowering import FunctionLowering, closed_layout


def lower_identity(low: FunctionLowering, op: Operation) -> None:
    """reshard / sharding_constraint that do not move data, propagation_barrier: the operand."""
    if op.name != "propagation_barrier":
        src, dst = low.mapping(op.operand(0)), op.result.mapping
        if (
            src is not None
            and dst is not None
            and not same_layout(closed_layout(src), closed_layout(dst))
        ):
            raise PassError(
                f"'{op.name}' op changes the layout from {src} to {dst}; run insert-reshards and "
                "lower-collectives before spmd",
                op.loc,
            )
    low.replace(op, op.operand(0))


def lower_sharding_group(low: FunctionLowering, op: Operation) -> None:
    op.erase()
