"""slice and sort per device (the ops of rules/shape.py): a slice takes whole local blocks of
its sharded dims; a sort's sort dimension is never sharded."""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import sort_dimension
from shardc.passes.rules.rule import OpShardingRule
from shardc.passes.spmd_lowering.function_lowering import FunctionLowering


def fix_slice(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """A sharded dim is a whole-dim pass-through: its limit becomes the local size."""
    op.attributes["limit_indices"] = low.whole_blocks(op.operand(0), attr(op, "limit_indices"))


def check_sort(low: FunctionLowering, op: Operation, rule: OpShardingRule) -> None:
    """Each device sorts whole slices: the sort dimension is unsharded everywhere."""
    d = sort_dimension(op)
    for v in (*op.operands, *op.results):
        if low.shards(v, d) > 1:
            raise PassError(
                f"'sort' op does not compute locally: its sort dimension {d} is sharded on "
                f"{v.label}; run insert-reshards before spmd",
                op.loc,
            )
