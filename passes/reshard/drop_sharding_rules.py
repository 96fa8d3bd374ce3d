"""`drop-sharding-rules`: remove every op's `sdy.sharding_rule` (Shardy's
`sdy-drop-sharding-rules`, the last step of its export pipeline).

    %0 = stablehlo.add %a, %b {sdy.sharding_rule = #sdy.op_sharding_rule<...>} : tensor<8xf32>
  becomes
    %0 = stablehlo.add %a, %b : tensor<8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.rules.registry import SHARDING_RULE_ATTR


@register_pass("drop-sharding-rules")
@dataclass(frozen=True)
class DropShardingRules(Pass):
    """Remove every op's `sdy.sharding_rule` attribute (sdy-drop-sharding-rules)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for op in func.body:
                op.attributes.pop(SHARDING_RULE_ATTR, None)


register_alias("sdy-drop-sharding-rules", "drop-sharding-rules")
