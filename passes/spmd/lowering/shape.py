"""slice, sort and top_k per device (the ops of rules/shape.py, and top_k, which has no rule): a
slice takes whole local blocks of its sharded dims; a sort's sort dimension and a top_k's last
dim are never sharded, and top_k's other dims are sharded alike on its operand and results
(insert-reshards' reshards/top_k.py)."""

from __future__ import annotations

from shardc.ir.core import Operation
from shardc.ir.diagnostics import PassError
from shardc.ir.ops.registry import attr
from shardc.ir.ops.scalar_bodies import sort_dimension
from shardc.passes.propagation.rules.rule import OpShardingRule
from shardc.passes.spmd.lowering.function_lowering import FunctionLowering


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


def check_top_k(low: FunctionLowering, op: Operation) -> None:
    """top_k computes on local rows: its last dim unsharded, its other dims sharded alike."""
    if low.mesh is None:  # a program without any sharding: everything is whole
        return
    x = op.operand(0)
    last = x.type.rank - 1
    layouts = [low.layout(v) for v in (x, *op.results)]
    if any(m.num_shards(last) > 1 for m in layouts) or any(
        m.dims[:last] != layouts[0].dims[:last] or m.unreduced for m in layouts
    ):
        raise PassError(
            f"'top_k' op does not compute locally: its operand and results are laid out as "
            f"{', '.join(map(str, layouts))}; run insert-reshards before spmd",
            op.loc,
        )
