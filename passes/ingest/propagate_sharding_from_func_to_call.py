"""`propagate-sharding-from-func-to-call` (Shardy's `sdy-propagate-sharding-from-func-to-call`):
a call with no result sharding takes its callee's result shardings.

    %0 = call %x {callee = @g} : tensor<8xf32>    ->    %0 = call ... : tensor<8xf32, <@m, [{"a"}]>>
    func private @g(...) -> tensor<8xf32, <@m, [{"a"}]>>

Once any result of the callee has a sharding, the call gets all of them (fully open where the
callee has none); a call that has any result sharding keeps its own. `import-func-calls` then
makes the call's result shardings the named computation's `out_shardings`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.symbols import callee_name
from shardc.passes.ingest.call_graph import result_shardings
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def propagate_sharding_from_func_to_call(module: Module) -> None:
    for op in module.walk():
        callee = module.functions.get(callee_name(op) or "")
        if callee is None or any(r.mapping is not None for r in op.results):
            continue
        for r, m in zip(op.results, result_shardings(callee) or ()):
            r.set_mapping(m)


@register_pass("propagate-sharding-from-func-to-call")
@dataclass(frozen=True)
class PropagateShardingFromFuncToCall(Pass):
    """Give a call without result shardings its callee's result shardings."""

    def run(self, module: Module, ctx: PassContext) -> None:
        propagate_sharding_from_func_to_call(module)


register_alias("sdy-propagate-sharding-from-func-to-call", "propagate-sharding-from-func-to-call")
