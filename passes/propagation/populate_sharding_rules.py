"""`populate-sharding-rules`: write each op's factor rule on it as `sdy.sharding_rule`.

    %0 = dot_general %a, %b {lhs_contracting_dims = [1], rhs_contracting_dims = [0],
         sdy.sharding_rule = #sdy.op_sharding_rule<([i, k], [k, j])->([i, j])
                                 {i=8, j=16, k=32} reduction={k}>} : tensor<8x16xf32>

A rule written this way is also an input: propagation uses a `sdy.sharding_rule` it finds on
an op instead of the registered one, which is how a custom op gets a rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import OpaqueAttr
from shardc.ir.core import Module
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.rules.registry import rule_for

RULE_ATTR = "sdy.sharding_rule"


@register_pass("populate-sharding-rules")
@dataclass(frozen=True)
class PopulateShardingRules(Pass):
    """Attach every op's sharding rule to it (`sdy.sharding_rule`), for reading and debugging.
    `conservative-propagation` writes the rules conservative propagation uses (Shardy's option:
    no factor for a concatenated dim or a convolution's spatial dims, blocked factors where
    pad, slice, reduce_window and select_and_scatter change a dim's size)."""

    conservative_propagation: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        for op in module.walk():
            rule = rule_for(op, conservative=self.conservative_propagation)
            if rule is not None:
                op.attributes[RULE_ATTR] = OpaqueAttr(rule.text())


register_alias("sdy-populate-op-sharding-rules", "populate-sharding-rules")
