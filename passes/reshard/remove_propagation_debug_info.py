"""`remove-propagation-debug-info`: remove what Shardy's propagation debugging options write
(`sdy.sharding_origins`, `sdy.propagation_edges` and their block-argument and result variants)
from ops and from function arguments and results (Shardy's
`sdy-remove-propagation-debug-info`).

    %0 = stablehlo.add %a, %b {sdy.sharding_origins = {...}} : tensor<8xf32>
  becomes
    %0 = stablehlo.add %a, %b : tensor<8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

DEBUG_ATTRS = (
    "sdy.propagation_edges",
    "sdy.block_arg_propagation_edges",
    "sdy.result_propagation_edges",
    "sdy.sharding_origins",
    "sdy.block_arg_sharding_origins",
    "sdy.result_sharding_origins",
)


@register_pass("remove-propagation-debug-info")
@dataclass(frozen=True)
class RemovePropagationDebugInfo(Pass):
    """Remove propagation debugging attributes (sdy-remove-propagation-debug-info)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        for func in module.functions.values():
            for attrs in (*func.arg_attrs, *func.res_attrs):
                for key in DEBUG_ATTRS:
                    attrs.pop(key, None)
            for op in func.body:
                for key in DEBUG_ATTRS:
                    op.attributes.pop(key, None)


register_alias("sdy-remove-propagation-debug-info", "remove-propagation-debug-info")
