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

When the input is the target of a data-flow edge (a loop-carried value, a result of a data-flow
op or an explicit `data_flow_edge`, ...), its sharding is left alone (it would bind every target
of the edge): the constraint moves right after the input's definition and every other use of
the input uses the constraint instead (a `manual_computation` gets a new constraint there).
Unreduced axes of the constraint are still written on the input, as they do not propagate.

`debug-sharding-origins` and `debug-propagation-edge-sharding` record each constraint applied as
a propagation step from the constraint to its input (Shardy's debugging options:
shardy_debug.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shardc.ir.builder import Builder
from shardc.ir.core import Module, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.ops import attr
from shardc.passes.manager import Pass, PassContext, register_alias, register_pass
from shardc.passes.propagation.data_flow import Regions, build_regions, edge_targets
from shardc.passes.propagation.state import identity_rule

if TYPE_CHECKING:  # (imported when asked for: Shardy's debugging options, not `shardc.jit`'s)
    from shardc.passes.propagation.shardy_debug import ShardyDebugInfo

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


def _should_apply(x: Value, mapping: NamedMapping | None) -> bool:
    """Shardy's `shouldApply`: `x` is unsharded, `mapping` fully closed, no other constraint."""
    if x.mapping is not None or mapping is None or not mapping.is_fully_resolved:
        return False
    return not _constrained_otherwise(x, mapping)


def _apply(x: Value, mapping: NamedMapping | None) -> bool:
    if not _should_apply(x, mapping):
        return False
    x.set_mapping(mapping)
    return True


def _move_after(op: Operation, x: Value) -> None:
    """Put `op` right after `x`'s definition (first in its function for an argument)."""
    block = op.parent
    assert block is not None
    block._unlink(op)
    block.insert_after_definition(x, op)


def _constrain_edge_target(
    op: Operation, x: Value, mapping: NamedMapping, regions: Regions
) -> None:
    """`x` is an edge target: route its uses through the constraint `op`, moved after `x`.
    Unreduced axes go on the edge's sharding (every target of the edge)."""
    _move_after(op, x)
    x.replace_uses_if(op.result, lambda use: use.op is not op)
    if mapping.unreduced:
        current = x.mapping or NamedMapping.fully_open(mapping.mesh, x.type.rank)
        new = current.replace(unreduced=mapping.unreduced, unreduced_op=mapping.unreduced_op)
        for v in regions.linked(x):
            v.set_mapping(new)


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


def apply_constraints(module: Module, debug: ShardyDebugInfo | None = None) -> int:
    """Apply every constraint that should be; how many were. With `debug` (Shardy's debugging
    options), a constraint applied to a value that is not an edge target is a step."""
    applied = 0
    # The constraining ops of each function, found first (and the rest of the pass skipped when
    # there are none): a walk that reads op names only is the whole cost on most programs.
    work = {name: [op for op in func.body if op.name in _CONSTRAINING]
            for name, func in module.functions.items()}
    if not any(work.values()):
        return 0
    targets = edge_targets(module)
    regions = build_regions(module, unify=False)
    builder = Builder(module)
    for name, func in module.functions.items():
        ops = work[name]
        if any(op.name == "sharding_constraint" for op in ops):
            order = {id(o): i for i, o in enumerate(func.body)}
        for op in ops:
            if op.name == "manual_computation":
                for x, m in zip(op.operands, attr(op, "in_shardings")):
                    if id(x) not in targets:
                        applied += _apply(x, m)
                    elif _should_apply(x, m):
                        with builder.insertion_point(before=op):
                            new = builder.sharding_constraint(x, m).defining_op
                        assert new is not None
                        _constrain_edge_target(new, x, m, regions)
                continue
            tail = _tail_of_chain(op)
            x = op.operand(0)
            if tail is not None:
                later = _later_than(order, op, order[id(tail)])
                x.replace_uses_if(tail.result, later)
            if id(x) not in targets:
                if debug is not None and _should_apply(x, op.result.mapping):
                    debug.record_constraint(op, x, identity_rule(x.type.shape))
                applied += _apply(x, op.result.mapping)
            elif _should_apply(x, op.result.mapping):
                _constrain_edge_target(op, x, op.result.mapping, regions)
    return applied


@register_pass("apply-sharding-constraints")
@dataclass(frozen=True)
class ApplyShardingConstraints(Pass):
    """Give a constraint's unsharded input the constraint's (fully closed) sharding."""

    debug_sharding_origins: bool = False
    debug_propagation_edge_sharding: bool = False

    def run(self, module: Module, ctx: PassContext) -> None:
        if not (self.debug_sharding_origins or self.debug_propagation_edge_sharding):
            apply_constraints(module)
            return
        from shardc.passes.propagation.shardy_debug import ShardyDebugInfo
        from shardc.passes.propagation.shardy_debug_saving import save as save_debug_info

        debug = ShardyDebugInfo(
            module, self.debug_sharding_origins, self.debug_propagation_edge_sharding
        )
        apply_constraints(module, debug)
        save_debug_info(debug)
        ctx.data["shardy_debug"] = debug


register_alias("sdy-apply-sharding-constraints", "apply-sharding-constraints")
