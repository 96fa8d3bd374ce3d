"""`unflatten-call-graph` (Shardy's `sdy-unflatten-call-graph`): calls of copies of one function
that agree on their shardings call one of them again.

    %0 = call %x {callee = @relu}      (@relu, @relu_0 and @relu_1: copies of @relu; @relu and
    %1 = call %0 {callee = @relu_0}     @relu_1 have the same argument and result shardings)
    %2 = call %1 {callee = @relu_1}   ->   %2 = call %1 {callee = @relu}

Two functions are the same computation when they have the same original name
(`sdy.original_func_name`, else their own), the same manual axes and the same argument and result
shardings (each list fully open where an entry has none, none when no entry has one). Calls are
visited in module order and the first function met stands for its computation; the
`sdy.original_func_name` marks go. (Newer Shardy also has `dedup-functions-fully=true`, which
keeps one function per original name and reshards around calls that disagree with it; jaxlib
0.10.2 does not have it, nor does shardc.)

The copies no call names any more are left for `symbol-dce`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import Symbol
from shardc.ir.core import Function, Module
from shardc.ir.symbols import callee_name
from shardc.passes.call_graph import (
    ORIGINAL_NAME,
    arg_shardings,
    calls_in,
    original_name,
    region_functions,
    result_shardings,
)
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

FUNC_MANUAL_AXES = "sdy.manual_axes"


def computation_key(func: Function) -> tuple:
    args, results = arg_shardings(func), result_shardings(func)
    manual = func.attributes.get(FUNC_MANUAL_AXES)
    return (
        original_name(func),
        str(manual) if manual is not None else None,
        tuple(args) if args is not None else None,
        tuple(results) if results is not None else None,
    )


def unflatten_call_graph(module: Module) -> None:
    regions = region_functions(module)
    calls = [
        call
        for func in list(module.functions.values())
        if func.name not in regions
        for call in calls_in(module, func)
        if callee_name(call) in module.functions
    ]
    chosen: dict[tuple, Function] = {}
    keys = [computation_key(module.functions[callee_name(call) or ""]) for call in calls]
    for call, key in zip(calls, keys):
        chosen.setdefault(key, module.functions[callee_name(call) or ""])
    for call, key in zip(calls, keys):
        call.attributes["callee"] = Symbol(chosen[key].name)
    for func in module.functions.values():
        func.attributes.pop(ORIGINAL_NAME, None)
        func.attributes.pop(FUNC_MANUAL_AXES, None)


@register_pass("unflatten-call-graph")
@dataclass(frozen=True)
class UnflattenCallGraph(Pass):
    """Calls of copies of one function with the same shardings call one of them again."""

    def run(self, module: Module, ctx: PassContext) -> None:
        unflatten_call_graph(module)


register_alias("sdy-unflatten-call-graph", "unflatten-call-graph")
