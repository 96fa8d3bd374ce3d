"""`flatten-call-graph` (Shardy's `sdy-flatten-call-graph`): every call site calls a function
of its own.

    %0 = call %x {callee = @f}            %0 = call %x {callee = @f}
    %1 = call %0 {callee = @f}     ->     %1 = call %0 {callee = @f_0}

Functions are visited callees first; the first call of a function keeps it, every later call
gets a copy of it (marked `sdy.original_func_name = "f"`) whose own calls call copies too,
named as MLIR's symbol table names them (`f_0`, `g_1`, ...: one counter for the pass). Loop
bodies and other region functions of a copy are copied with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.attributes import Symbol
from shardc.ir.core import Module
from shardc.ir.symbols import SymbolTable, callee_name
from shardc.passes.ingest.call_graph import checked_call_graph, clone_recursively
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass


def flatten_call_graph(module: Module) -> None:
    # The post order and each function's calls: the loop only adds copies of functions and
    # retargets calls, so a function's calls are those found before it.
    order, calls_of = checked_call_graph(module)
    table, regions = SymbolTable(module), SymbolTable(module)
    called: set[str] = set()
    for func in order:
        for call in calls_of[func.name]:
            name = callee_name(call)
            callee = module.functions.get(name or "")
            if callee is None:
                continue
            if callee.name not in called:
                called.add(callee.name)
                continue
            call.attributes["callee"] = Symbol(clone_recursively(module, callee, table, regions))


@register_pass("flatten-call-graph")
@dataclass(frozen=True)
class FlattenCallGraph(Pass):
    """Give every call site its own copy of the function it calls."""

    def run(self, module: Module, ctx: PassContext) -> None:
        flatten_call_graph(module)


register_alias("sdy-flatten-call-graph", "flatten-call-graph")
