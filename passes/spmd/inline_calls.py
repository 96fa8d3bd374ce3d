"""`inline-calls`: every `call` in a per-device (SPMD) program is replaced by its callee's body,
as XLA's call inliner does before its collective combiners, so collectives that JAX's helper
functions (`_take`, `log_softmax`, ...) hold can combine with the caller's:

    shardc opt model.mlir -p 'spmd,inline-calls,combine-collectives'

    %1 = call %0 {callee = @f} : tensor<4xf32>          %s = spmd.all_reduce %0 {...}
    func private @f(%x: ...) ... {                 ->    %1 = tanh %s : tensor<4xf32>
      %s = spmd.all_reduce %x {...}
      %t = tanh %s
      return %t
    }

Callees are inlined before their callers' turn (nested calls end up inlined too); a function
no op names afterwards is dropped unless it is public. `while`/`case` regions and the bodies of
`reduce` and friends are not calls and stay functions. Only calls between SPMD functions on
the same mesh are inlined (the types on both sides are per-device blocks); `composite` stays
(its name is for export).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Function, Module, Operation
from shardc.ir.inlining import inline_call
from shardc.ir.symbols import referenced_functions, unshare_regions
from shardc.passes.manager import Pass, PassContext, register_pass


def _inlinable(module: Module, caller: Function, op: Operation) -> Function | None:
    if op.name != "call":
        return None
    callee = module.lookup_function(op.attr("callee").name)
    if callee is None or callee is caller or "in_shapes" not in callee.attributes:
        return None
    if callee.attributes.get("mesh") != caller.attributes.get("mesh"):
        return None
    return callee


@register_pass("inline-calls")
@dataclass(frozen=True)
class InlineCalls(Pass):
    """Inline every call between SPMD functions (XLA's CallInliner)."""

    def run(self, module: Module, ctx: PassContext) -> None:
        inlined: set[str] = set()
        done: set[str] = set()

        def visit(func: Function, active: tuple[str, ...]) -> None:
            if func.name in done:
                return
            for op in list(func.body):
                callee = _inlinable(module, func, op)
                if callee is None or callee.name in active:  # recursion stays a call
                    continue
                visit(callee, (*active, func.name))
                inline_call(op, callee)
                inlined.add(callee.name)
            done.add(func.name)

        for func in list(module.functions.values()):
            visit(func, ())
        live = referenced_functions(module)
        for name in sorted(inlined - live):
            if module.functions[name].is_private:
                del module.functions[name]
        if inlined:
            unshare_regions(module)  # a function inlined twice: each copy its own regions
        stats = ctx.data.setdefault("inline_calls", {"functions": 0})
        stats["functions"] += len(inlined)
