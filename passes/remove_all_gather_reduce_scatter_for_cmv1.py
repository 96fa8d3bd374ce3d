"""`remove-all-gather-reduce-scatter-for-cmv1` (Shardy's
`sdy-remove-all-gather-reduce-scatter-for-cmv1`): around each `dot` / `dot_general`, drop the
collectives a CMV1 partitioner redoes itself.

- an operand made by an `sdy.all_gather` used only there reads the gather's operand instead;
- otherwise, a dot whose only user is an `sdy.reduce_scatter` (and whose result is not
  unreduced) takes the reduce_scatter's sharding, and the reduce_scatter goes.

    %0 = sdy.all_gather [{"x"}, {}] %arg1 out_sharding=<@m, [{}, {}]> : tensor<16x32xf32>
    %1 = stablehlo.dot %arg0, %0 ...
  becomes
    %1 = stablehlo.dot %arg0, %arg1 ...
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def _sole_user(op: Operation) -> Operation | None:
    users = op.result.users
    return users[0] if len(users) == 1 and len(op.result.uses) == 1 else None


@register_pass("remove-all-gather-reduce-scatter-for-cmv1")
@dataclass(frozen=True)
class RemoveAllGatherReduceScatterForCMV1(Pass):
    """Drop the all_gathers feeding dots and the reduce_scatters after them (Shardy's CMV1)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            doomed: list[Operation] = []
            for op in func.body:
                if op.name not in ("dot", "dot_general"):
                    continue
                gathers = [v.defining_op for v in op.operands
                           if v.defining_op is not None and v.defining_op.name == "all_gather"
                           and _sole_user(v.defining_op) is op]
                doomed += gathers
                if gathers:
                    continue
                user = _sole_user(op)
                mapping = op.result.mapping
                if user is not None and user.name == "reduce_scatter" and (
                        mapping is None or not mapping.unreduced):
                    op.result.set_mapping(user.result.mapping)
                    doomed.append(user)
            for op in doomed:
                op.result.replace_all_uses_with(op.operand(0))
                op.erase()


register_alias("sdy-remove-all-gather-reduce-scatter-for-cmv1",
               "remove-all-gather-reduce-scatter-for-cmv1")
