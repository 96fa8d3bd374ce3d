"""Calls inlined, so that auto-shard chooses for the ops inside them too.

    inline_calls(module, module.main)    # -> how many calls were inlined

JAX programs call private functions for `jax.nn.relu`, `custom_jvp`s and nested `jit`s; a call
is otherwise one opaque op whose operands and results auto-shard can only replicate. Each
`call` in the entry function is replaced by a copy of its callee's body (callee arguments
become the call's operands, the callee's returned values the call's results), repeatedly, so
nested calls are inlined too; a function calling itself is left as a call. Functions nothing
refers to any more are removed. (XLA inlines calls before SPMD partitioning too.)
"""

from __future__ import annotations

from shardc.ir.core import Function, Module
from shardc.ir.inlining import inline_call
from shardc.ir.symbols import referenced_functions, unshare_regions

_MAX_ROUNDS = 64  # nesting depth of calls inlined


def inline_calls(module: Module, func: Function) -> int:
    """Inline every call in `func` (see the module docstring); the number inlined."""
    count = 0
    for _ in range(_MAX_ROUNDS):
        calls = [op for op in func.body if op.name == "call"]
        done = 0
        for op in calls:
            callee = module.lookup_function(op.attr("callee").name)
            if callee is None or callee is func or _calls(callee, callee.name):
                continue
            inline_call(op, callee)
            done += 1
        count += done
        if not done:
            break
    if count:
        used = referenced_functions(module)
        for name, f in list(module.functions.items()):
            if f is not func and f.is_private and name not in used:
                del module.functions[name]
        unshare_regions(module)  # a function inlined twice: each copy its own regions
    return count


def _calls(func: Function, name: str) -> bool:
    return any(op.name == "call" and op.attr("callee").name == name for op in func.body)
