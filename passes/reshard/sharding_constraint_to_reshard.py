"""`sharding-constraint-to-reshard`: every `sharding_constraint` becomes a `reshard` to the same
sharding, keeping its other attributes (Shardy's `sdy-sharding-constraint-to-reshard`).

    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  becomes
    %1 = sdy.reshard %0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


@register_pass("sharding-constraint-to-reshard")
@dataclass(frozen=True)
class ShardingConstraintToReshard(Pass):
    """Turn every sharding_constraint into a reshard (sdy-sharding-constraint-to-reshard)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for op in list(func.body):
                if op.name != "sharding_constraint":
                    continue
                new = Operation.at(op, "reshard", [op.operand(0)], [op.result.type],
                                   dict(op.attributes))
                op.parent.insert_before(op, new)  # type: ignore[union-attr]
                new.result.name_hint = op.result.name_hint
                op.result.replace_all_uses_with(new.result)
                op.erase()


register_alias("sdy-sharding-constraint-to-reshard", "sharding-constraint-to-reshard")
