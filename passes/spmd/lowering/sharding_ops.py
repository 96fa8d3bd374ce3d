"""Sharding ops in the per-device program: a `reshard`, `sharding_constraint` or
`propagation_barrier` that moves no data is its operand; a `sharding_group` goes away; an
`optimization_barrier` stays, on each device's blocks."""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.passes.analysis.collectives.steps import same_layout
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering, closed_layout


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


def lower_optimization_barrier(low: FunctionLowering, op: Operation) -> None:
    """The barrier stays (it orders XLA's scheduling) on local blocks: operand k and result k
    are laid out alike (insert-reshards made them so)."""
    for v, r in zip(op.operands, op.results, strict=True):
        src, dst = low.mapping(v), r.mapping
        same = (
            src is dst
            or (src is None and dst.is_fully_replicated)  # type: ignore[union-attr]
            or (dst is None and src.is_fully_replicated)  # type: ignore[union-attr]
            or (src is not None and dst is not None
                and same_layout(closed_layout(src), closed_layout(dst)))
        )
        if not same:
            raise PassError(
                f"'{op.name}' op changes the layout of value {r.index} from {src} to {dst}; run "
                "insert-reshards before spmd",
                op.loc,
            )


def lower_sharding_group(low: FunctionLowering, op: Operation) -> None:
    op.erase()
