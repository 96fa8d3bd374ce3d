"""`pre-order-funcs` (Shardy's `sdy-pre-order-funcs`): functions in pre order of the call graph,
callers before their callees (MLIR's `CallGraph` in reverse post order).

    func @main { call @f; call @g }            func @unused
    func private @unused              ->       func @main
    func private @g                            func private @g
    func private @f                            func private @f

The functions no call reaches from another (public ones, and private ones nothing calls) are
the roots; in reverse post order the last root comes first. Region and body functions follow
the others, in their order. Propagation walks functions in module order, so this fixes which
function it starts with, as in Shardy.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.passes.ingest.call_graph import post_order
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def pre_order_funcs(module: Module) -> None:
    if len(module.functions) < 2:
        return  # one order only (and no call graph to walk through every op)
    ordered = list(reversed(post_order(module)))
    names = {f.name for f in ordered}
    rest = [f for f in module.functions.values() if f.name not in names]
    module.functions = {f.name: f for f in ordered + rest}


@register_pass("pre-order-funcs")
@dataclass(frozen=True)
class PreOrderFuncs(Pass):
    """Order the functions callers first (reverse post order of the call graph)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        pre_order_funcs(module)


register_alias("sdy-pre-order-funcs", "pre-order-funcs")
