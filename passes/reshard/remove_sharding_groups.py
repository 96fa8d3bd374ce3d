"""`remove-sharding-groups`: erase every `sharding_group` op (Shardy's
`sdy-remove-sharding-groups`; after propagation the groups have done their work).

    sdy.sharding_group %0 group_id=3 : tensor<8xf32>      # gone
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


@register_pass("remove-sharding-groups")
@dataclass(frozen=True)
class RemoveShardingGroups(Pass):
    """Erase every sharding_group op (sdy-remove-sharding-groups)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for op in list(func.body):
                if op.name == "sharding_group":
                    op.erase()


register_alias("sdy-remove-sharding-groups", "remove-sharding-groups")
