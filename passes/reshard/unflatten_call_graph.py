"""`unflatten-call-graph`: calls of copies of one function go back to one copy per distinct
signature (Shardy's `sdy-unflatten-call-graph`).

Shardy's import gives each call site its own copy of the callee (`@f`, `@f_0`, ... with
`sdy.original_func_name = "f"`); after propagation, calls whose copies share the original name,
the `sdy.func_manual_axes` and the argument and result shardings (each list fully open where an
entry has none, none when no entry has one) call the first such copy (in the order of the
module's calls). With `dedup-functions-fully=true` the shardings are ignored and the copy called
most often (the first on a tie) serves every call of its original. The two attributes are then
removed from every function; copies no longer called stay (Shardy's pipeline drops them with
`symbol-dce`).

    %0 = call @f(%x)     %1 = call @f_0(%x)     # same shardings
  becomes
    %0 = call @f(%x)     %1 = call @f(%x)
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module
from shardc.passes.ingest.call_graph import (
    FUNC_MANUAL_AXES,
    ORIGINAL_NAME,
    arg_shardings,
    callee,
    calls,
    manual_axes_text,
    original_name,
    result_shardings,
)
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def key(func: Function, with_shardings: bool = True) -> tuple:
    if not with_shardings:
        return (original_name(func), manual_axes_text(func), None, None)
    return (original_name(func), manual_axes_text(func), arg_shardings(func),
            result_shardings(func))


def unflatten_call_graph(module: Module, dedup_functions_fully: bool = False) -> None:
    full = dedup_functions_fully
    chosen: dict[tuple, Function] = {}
    found = list(calls(module))  # (one walk: only the last loop changes anything, callees)
    for op in found:
        f = callee(module, op)
        chosen.setdefault(key(f, not full), f)
    if full:
        counts: dict[tuple, int] = {}
        for op in found:
            f = callee(module, op)
            counts[key(f)] = counts.get(key(f), 0) + 1
            cache = key(f, False)
            if counts[key(f)] > counts.get(key(chosen[cache]), 0):
                chosen[cache] = f
    for op in found:
        op.attributes["callee"] = Symbol(chosen[key(callee(module, op), not full)].name)
    for func in module.functions.values():
        func.attributes.pop(ORIGINAL_NAME, None)
        func.attributes.pop(FUNC_MANUAL_AXES, None)


@register_pass("unflatten-call-graph")
@dataclass(frozen=True)
class UnflattenCallGraph(Pass):
    """Make calls of equivalent function copies call one copy (sdy-unflatten-call-graph)."""

    dedup_functions_fully: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        unflatten_call_graph(module, self.dedup_functions_fully)


register_alias("sdy-unflatten-call-graph", "unflatten-call-graph")
