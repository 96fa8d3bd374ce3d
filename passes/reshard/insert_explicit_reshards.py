"""`insert-explicit-reshards`: Shardy's `sdy-insert-explicit-reshards`, decision for decision.

    shardc opt model.mlir -p 'sdy-insert-explicit-reshards{enable-full-version=true}'

    %0 = stablehlo.dot_general %a, %b ... {sdy.sharding = <@m, [{"x"}, {}]>}   # a: [{"x"}, {"y"}]
  becomes (full version)                                                     # b: [{"y"}, {}]
    %0 = stablehlo.dot_general %a, %b ... {sdy.sharding = <@m, [{"x"}, {}]>}
    %1 = sdy.all_reduce {"y"} %0 out_sharding=<@m, [{"x"}, {}]>

shardc's own `insert-reshards` chooses the factor shardings that move the fewest bytes and leaves
partial results unreduced until a user needs them; this pass prints what Shardy prints: its
choice of factor shardings (`reshards/common_axes.py`), an `all_reduce` right after an op whose
sharded reduction factors the result does not keep unreduced, the reduction of an unreduced value
delayed to where it is used (the return, a call, the op that needs it), unreduced collectives
where a use needs more unreduced axes (`reshards/unreduced_ops.py`). Without the full version
(Shardy's default) only calls, concatenates whose operands disagree with the result, dots whose
result conflicts in one dim, and unreduced values change. The walk: `reshards/explicit_walk.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.reshard.reshards.explicit_walk import ExplicitReshards, Regions


@register_pass("insert-explicit-reshards")
@dataclass(frozen=True)
class InsertExplicitReshards(Pass):
    """Shardy's explicit reshards and all-reduces (sdy-insert-explicit-reshards)."""

    enable_full_version: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        regions = Regions(module)
        walk = ExplicitReshards(module, regions, self.enable_full_version)
        for func in list(module.functions.values()):
            if func.name not in regions.owner:
                walk.run(func)


register_alias("sdy-insert-explicit-reshards", "insert-explicit-reshards")
