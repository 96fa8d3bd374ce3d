"""Dead ops: what Shardy's rewrite driver erases while it propagates.

MLIR's greedy rewrite driver (which runs Shardy's propagation) erases an op whose results nothing
uses when it pops it from the worklist; the ops after it then see its operands with fewer uses.
shardc keeps such an op in the IR but replays the erasure (`PropagationState.erased`), so
single-use tests and the comparison with Shardy see the same program.
"""

from __future__ import annotations

from shardc.ir.core import Function, Operation
from shardc.passes.propagation.data_flow import REGION_OPS

# Ops Shardy never erases as dead: they have effects or pin shardings.
# (a set: the driver asks this of every op it pops first)
_NEVER_DEAD = frozenset({
    "return",
    "sharding_group",
    "sharding_constraint",
    "call",
    "custom_call",
    *REGION_OPS,
    "manual_computation",
})


def can_be_dead(op: Operation) -> bool:
    return op.name not in _NEVER_DEAD and bool(op.results)


def dead_ops(func: Function) -> set[int]:
    """Ops whose results nothing live uses (transitively): the ops propagation erases."""
    dead: set[int] = set()
    for op in reversed(func.body):
        if not can_be_dead(op):
            continue
        if all(id(u.op) in dead for r in op.results for u in r.uses):
            dead.add(id(op))
    return dead


def all_uses_erased(op: Operation, erased: set[int]) -> bool:
    """Nothing but `erased` ops uses any result of `op` (a plain loop: it runs on every visit)."""
    for r in op.results:
        for u in r.uses:
            if id(u.op) not in erased:
                return False
    return True


def live_user(op: Operation, erased: set[int]) -> int | None:
    """The id of a user of `op` not erased (-1, never an op id, for an op never erased)."""
    if not can_be_dead(op):
        return -1
    for r in op.results:
        for u in r.uses:
            if id(u.op) not in erased:
                return id(u.op)
    return None
