"""`symbol-dce` (MLIR's pass of that name): drop private functions nothing refers to.

    func @main(...) { ... call %x {callee = @f} ... }
    func private @f(...) { ... }
    func private @unused(...) { ... }           <- removed

A function is referred to when an op of a kept function names it (call, region, body,
decomposition); public functions are always kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.symbols import remove_function, symbols_of
from shardc.passes.manager import Pass, PassContext, register_pass


def symbol_dce(module: Module) -> list[str]:
    """Remove unreferenced private functions; the names removed."""
    live: set[str] = set()
    stack = [f.name for f in module.functions.values() if not f.is_private]
    while stack:
        name = stack.pop()
        if name in live or name not in module.functions:
            continue
        live.add(name)
        stack.extend(symbols_of(module.functions[name].body))
    dead = [name for name in module.functions if name not in live]
    for name in dead:
        remove_function(module, name)
    return dead


@register_pass("symbol-dce")
@dataclass(frozen=True)
class SymbolDce(Pass):
    """Drop private functions nothing refers to."""

    def run(self, module: Module, ctx: PassContext) -> None:
        symbol_dce(module)
