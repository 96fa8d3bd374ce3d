"""`reshard-to-collectives`: each `reshard` becomes the collectives Shardy's algorithm picks.

    shardc opt model.mlir -p sdy-reshard-to-collectives
    shardc opt model.mlir -p 'sdy-reshard-to-collectives{keep-redundant-reshards=true}'

    %1 = sdy.reshard %0 <@mesh, [{}, {"x"}]> : tensor<16x8xf32>          # %0: [{"x"}, {}]
  becomes
    %1 = sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@mesh, [{}, {"x"}]> : tensor<16x8xf32>

This is Shardy's `sdy-reshard-to-collectives`, decision for decision
(`analysis/collectives/shardy_plan.py`): `lower-collectives` searches for the cheapest plan instead,
and `lower-collectives{planner=shardy}` uses this algorithm inside shardc's own pipeline. As in
Shardy:

- the reshard reads through `propagation_barrier`s to the value they wrap;
- a reshard to a fully replicated sharding (unreduced axes aside) of a replicated value is dropped,
  and of a sharded one gathers everything on the operand's mesh;
- a reshard between meshes whose axes differ, or from/to a single-device (maximal) mesh, stays;
- with `keep-redundant-reshards=true`, a reshard whose operand is already laid out so stays.
Unreduced axes are not touched here (`insert-explicit-reshards` reduces them first).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import DimSharding, NamedMapping
from shardc.ir.ops import verify_operation
from shardc.ir.types import DistributedTensorType
from shardc.passes.analysis.collectives.op_steps import step_op
from shardc.passes.analysis.collectives.planner import Plan
from shardc.passes.analysis.collectives.shardy_plan import shardy_plan
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.reshard.reshards.insertion import dims_replicated, equivalent


def bypass_barriers(v: Value) -> Value:
    """The value under any chain of `propagation_barrier`s."""
    while v.defining_op is not None and v.defining_op.name == "propagation_barrier":
        v = v.defining_op.operand(0)
    return v


def gathered(like: NamedMapping) -> NamedMapping:
    """`like`'s mesh, every dim closed and empty, `like`'s unreduced axes kept.

    NOTE: Shardy drops the unreduced axes here (its `getFullyClosedLike`), so its all_gather
    claims a reduced result; shardc keeps them (docs/interop.md, known differences)."""
    return NamedMapping(
        like.mesh, tuple(DimSharding() for _ in like.dims), (), like.unreduced, like.unreduced_op
    )


def emit_plan(op: Operation, source: Value, plan: Plan) -> Value:
    """Insert the plan's collectives before `op`, reading `source`; returns the last result."""
    shape, dtype = source.type.shape, source.type.dtype
    block = op.parent
    assert block is not None
    value = source
    for step, layout in zip(plan.steps, plan.layouts[1:], strict=True):
        name, attrs = step_op(step)
        result = DistributedTensorType(shape, dtype, layout)
        new = block.insert_before(op, Operation.at(op, name, [value], [result], attrs))
        verify_operation(new)
        value = new.result
    return value


@register_pass("reshard-to-collectives")
@dataclass(frozen=True)
class ReshardToCollectives(Pass):
    """Lower every reshard to the collectives Shardy's algorithm picks
    (sdy-reshard-to-collectives)."""

    keep_redundant_reshards: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        stats = ctx.data.setdefault("reshard_to_collectives", {"reshards": 0, "collectives": 0})
        for func in module.functions.values():
            for op in list(func.body):
                if op.name == "reshard" and op.parent is not None:
                    try:
                        n = self.lower(op)
                    except ShardcError as e:
                        raise e.with_location(op.loc) from None
                    if n is not None:
                        stats["reshards"] += 1
                        stats["collectives"] += n

    def lower(self, op: Operation) -> int | None:
        """Replace `op` by its collectives (their count), or None when it stays."""
        source = bypass_barriers(op.operand(0))
        dst = op.result.mapping
        src = source.mapping
        if self.keep_redundant_reshards and equivalent(src, dst):
            return None
        if src is None:
            src = NamedMapping(dst.mesh, tuple(DimSharding((), False) for _ in dst.dims))
        if getattr(src.mesh, "is_maximal", False) or getattr(dst.mesh, "is_maximal", False):
            return None
        if dims_replicated(dst):
            if dims_replicated(src):
                op.result.replace_all_uses_with(op.operand(0))
                op.erase()
                return 0
            dst = gathered(src)
        elif src.mesh.axes != dst.mesh.axes:
            return None
        plan = shardy_plan(source.type.shape, source.type.dtype, src, dst)
        value = emit_plan(op, source, plan)
        if value is not source:
            value.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(value)
        op.erase()
        return len(plan.steps)


register_alias("sdy-reshard-to-collectives", "reshard-to-collectives")
