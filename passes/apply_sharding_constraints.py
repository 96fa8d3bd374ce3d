"""`apply-sharding-constraints`: let a constraint decide its input's sharding (Shardy's rules).

A `sharding_constraint` whose input has no sharding yet, whose own sharding is fully closed, and
whose input is not constrained differently elsewhere, gives the input its sharding:

    %1 = tanh %0 : tensor<8xf32>
    %2 = sharding_constraint %1 : tensor<8xf32, <@m, [{"x"}]>>
  becomes
    %1 = tanh %0 : tensor<8xf32, <@m, [{"x"}]>>
    %2 = sharding_constraint %1 : tensor<8xf32, <@m, [{"x"}]>>

A chain of single-use constraints `x -> c1 -> c2 -> ... -> tail` hands its tail to the later
users of `x`, as Shardy's `sdy-apply-sharding-constraints` does. A `manual_computation` acts as a
constraint on each operand: an unsharded operand takes its (fully closed) in_sharding.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.ir.core import Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import attr
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass

_CONSTRAINING = ("sharding_constraint", "manual_computation")


def _used_by_other_constraint(v: Value, excluded: Operation | None = None) -> bool:
    return any(u.op is not excluded and u.op.name in _CONSTRAINING for u in v.uses)


def _constrained_otherwise(x: Value, mapping: NamedMapping) -> bool:
    """Does a constraint or a manual_computation use `x` with another sharding?"""
    for u in x.uses:
        if u.op.name == "sharding_constraint" and u.op.result.mapping != mapping:
            return True
        if u.op.name == "manual_computation" and attr(u.op, "in_shardings")[u.index] != mapping:
            return True
    return False


def _apply(x: Value, mapping: NamedMapping | None) -> bool:
    """Shardy's `shouldApply`: `x` is unsharded, `mapping` fully closed, no other constraint."""
    if x.mapping is not None or mapping is None or not mapping.is_fully_resolved:
        return False
    if _constrained_otherwise(x, mapping):
        return False
    x.set_mapping(mapping)
    return True


def _tail_of_chain(head: Operation) -> Operation | None:
    x = head.operand(0)
    d = x.defining_op
    if d is not None and d.name == "sharding_constraint":
        return None
    if x.mapping is not None or _used_by_other_constraint(x, head):
        return None
    tail = head
    while len(tail.result.uses) == 1 and tail.result.uses[0].op.name == "sharding_constraint":
        tail = tail.result.uses[0].op
    if tail is head or _used_by_other_constraint(tail.result):
        return None
    return tail


def _later_than(order: dict[int, int], head: Operation, after: int):
    """Uses (other than `head` and returns) placed after position `after`."""

    def test(use) -> bool:
        return use.op is not head and use.op.name != "return" and order.get(id(use.op), -1) > after

    return test


def apply_constraints(module: Module) -> int:
    applied = 0
    for func in module.functions.values():
        order = {id(o): i for i, o in enumerate(func.body)}
        for op in list(func.body):
            if op.name == "manual_computation":
                for x, m in zip(op.operands, attr(op, "in_shardings")):
                    applied += _apply(x, m)
                continue
            if op.name != "sharding_constraint":
                continue
            tail = _tail_of_chain(op)
            x = op.operand(0)
            if tail is not None:
                later = _later_than(order, op, order[id(tail)])
                x.replace_uses_if(tail.result, later)
            applied += _apply(x, op.result.mapping)
    return applied


@register_pass("apply-sharding-constraints")
@dataclass(frozen=True)
class ApplyShardingConstraints(Pass):
    """Give a constraint's unsharded input the constraint's (fully closed) sharding."""

    def run(self, module: Module, ctx: PassContext) -> None:
        apply_constraints(module)


register_alias("sdy-apply-sharding-constraints", "apply-sharding-constraints")
