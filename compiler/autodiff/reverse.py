"""Reverse-mode differentiation of a function body in place: `gradients(b, func, loss, wrt)`
appends, at the builder's insertion point, the ops that compute d loss / d w for each w.

    with b.function("main") as f:
        ... loss = ...
        dw1, dw2 = gradients(b, f.func, loss, [w1, w2])
        f.returns(loss, b.subtract(w1, ...), ...)

The sweep walks the ops that lie on a path from a `wrt` value to `loss`, last first, asking each
its rule (rules.py) for its operands' cotangents and summing the cotangents of a value used
several times. A value with no path to `loss` gets zeros.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.autodiff.rules import NO_GRADIENT, RULES, full
from shardc.ir.builder import Builder
from shardc.ir.core import Function, Operation, Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.types import is_float


def _on_path(ops: list[Operation], loss: Value, wrt: Sequence[Value]) -> list[Operation]:
    """The ops (in program order) that some `wrt` value reaches and that reach `loss`."""
    reached = {id(w) for w in wrt}
    forward: list[Operation] = []
    for op in ops:
        if op.name in NO_GRADIENT:
            continue
        if any(id(v) in reached for v in op.operands):
            forward.append(op)
            reached.update(id(r) for r in op.results if is_float(r.type.dtype))
    needed = {id(loss)}
    path: list[Operation] = []
    for op in reversed(forward):
        if any(id(r) in needed for r in op.results):
            path.append(op)
            needed.update(id(v) for v in op.operands if id(v) in reached)
    path.reverse()
    return path


def gradients(b: Builder, func: Function, loss: Value, wrt: Sequence[Value]) -> list[Value]:
    """d `loss` (a float scalar) / d each of `wrt`, built at `b`'s insertion point."""
    if loss.type.rank != 0 or not is_float(loss.type.dtype):
        raise ShardcError(f"the loss must be a float scalar, got {loss.type}")
    ops = [op for op in func.body if op.name != "return"]
    cotangent: dict[int, Value] = {id(loss): b.constant(1.0, loss.type.dtype)}
    for op in reversed(_on_path(ops, loss, wrt)):
        outs = [cotangent.get(id(r)) for r in op.results]
        if all(g is None for g in outs):
            continue
        rule = RULES.get(op.name)
        if rule is None or len(op.results) != 1:
            raise ShardcError(f"no reverse-mode rule for '{op.name}'", op.loc)
        g = outs[0]
        assert g is not None
        for v, gv in zip(op.operands, rule(b, op, g), strict=True):
            if gv is None or not is_float(v.type.dtype):
                continue
            have = cotangent.get(id(v))
            cotangent[id(v)] = gv if have is None else b.add(have, gv)
    return [cotangent.get(id(w)) or full(b, 0.0, w) for w in wrt]


def erase_dead(func: Function, keep: set[int]) -> None:
    """Erase the ops of `func` whose results are unused, except the ops in `keep` (ids): the
    cotangents a rule made for operands nothing needs (constants, data)."""
    for op in reversed(func.body.ops):
        if id(op) in keep or op.name == "return" or any(r.uses for r in op.results):
            continue
        op.erase()
