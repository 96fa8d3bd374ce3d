"""Inlining one call: a copy of the callee's body where the call stands.

    inline_call(op, callee)     # op: a `call` of callee, in some function's body
    unshare_regions(module)     # once, after the last call inlined

The callee's arguments become the call's operands and its returned values the call's results
(a result's name goes to the value that replaces it when that has none). The copied ops name
the callee's region functions: a function inlined at two call sites leaves two `while` ops
running one body function, which passes that rewrite a body (call import, propagation's
per-region state) would see twice. So after inlining, run `unshare_regions(module)` once.
"""

from __future__ import annotations

from shardc.ir.core import Function, Operation, Value


def inline_call(op: Operation, callee: Function) -> None:
    """Replace the call `op` with a copy of `callee`'s body (see the module docstring)."""
    block = op.parent
    assert block is not None
    values: dict[int, Value] = {id(a): v for a, v in zip(callee.args, op.operands)}
    returned: list[Value] = []
    for inner in callee.body:
        operands = [values.get(id(v), v) for v in inner.operands]
        if inner.name == "return":
            returned = operands
            break
        copy = block.insert_before(op, inner.clone(operands))
        for old, fresh in zip(inner.results, copy.results):
            values[id(old)] = fresh
    for result, value in zip(op.results, returned, strict=True):
        if value.name_hint is None and result.name_hint is not None:
            value.name_hint = result.name_hint
        result.replace_all_uses_with(value)
    op.erase()
