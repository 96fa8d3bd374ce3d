"""Why insert-reshards put a reshard where it did: a `ReshardCause` on every reshard it makes.

    %r = reshard %x : <@m, [{}, {"tp"}]>     # op.cause = ReshardCause(RULE, consumers=((dot, 0),),
    %y = dot_general %r, %w ...              #   value=%x, source=[{"dp"}, {}], target=...)

The cause names the consumer that needs the layout (op and operand index; the `return` op for a
function result), the value resharded, the layout it had (`source`) and the one it gets
(`target`), and, for an op with a sharding rule, what insert-reshards decided per factor and
from which shardings (`FactorChoice`). lower-collectives and canonicalize build collectives
with `Operation.at(reshard, ...)`, so every collective keeps its reshard's cause: that is how
`shardc explain --collectives` (compiler/explain/collectives.py) traces a collective back to the
op that needed it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from shardc.ir.core import Cause, Operation, Value
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import AxisRef
from shardc.passes.propagation.rules.rule import OpShardingRule


class ReshardReason(enum.Enum):
    """What made a consumer need its layout."""

    RULE = "factor rule"  # an op with a sharding rule: its factors' chosen shardings
    NO_RULE = "no sharding rule"  # an op without one computes on replicated operands
    RESULT = "function result"  # a function's declared result sharding (out_sharding)
    CONSTRAINT = "sharding_constraint"  # a constraint the program wrote
    CALL = "call argument"  # the callee's argument sharding
    REGION = "region argument"  # a while/case's region function argument
    BARRIER = "optimization_barrier"  # the barrier's result layout
    MANUAL = "manual_computation in_sharding"
    COLLECTIVE = "collective operand"  # a collective the program wrote for a decided sharding
    SPLIT = "split rewrite"  # a step of an op insert-reshards splits (scan, top_k, sort, ...)
    SHARED_REDUCTION = "shared reduction"  # one reduction for consumers wanting two layouts
    WRITTEN = "reshard written in the program"
    GATHERED_WEIGHT = "weight gathered where it is defined"  # gather-weights (FSDP's plan)
    SINGLE_DEVICE = "single-device op"  # an op placed on one device (a maximal mesh)


@dataclass(frozen=True, slots=True)
class FactorChoice:
    """What insert-reshards decided for a ruled op: its rule, the shardings propagation decided
    for its operands then results, and the axes it chose per factor (`choose_factor_axes`)."""

    rule: OpShardingRule
    decided: tuple[NamedMapping | None, ...]
    axes: tuple[tuple[AxisRef, ...], ...]


@dataclass(frozen=True, slots=True, eq=False)
class ReshardCause(Cause):
    """Why a reshard exists (see the module docstring). `consumers` lists (op, operand index)
    for every consumer that shares the reshard, the first one first."""

    reason: ReshardReason
    consumers: tuple[tuple[Operation, int], ...]
    value: Value
    source: NamedMapping
    target: NamedMapping
    choice: FactorChoice | None = None

    @property
    def consumer(self) -> Operation:
        return self.consumers[0][0]

    @property
    def operand(self) -> int:
        return self.consumers[0][1]

    def shared_with(self, op: Operation, index: int) -> ReshardCause:
        """The same cause with one more consumer."""
        if (op, index) in self.consumers:
            return self
        return replace(self, consumers=(*self.consumers, (op, index)))


def mark_split(
    resharded: Value, op: Operation, reason: ReshardReason = ReshardReason.SPLIT
) -> Value:
    """Record that the reshard defining `resharded` is a step of insert-reshards' rewrite of
    `op` (a scan, top_k or reduce it splits; an op on a single-device mesh); returns
    `resharded`."""
    reshard = resharded.defining_op
    assert reshard is not None and reshard.name == "reshard"
    source, target = reshard.operand(0), resharded.mapping
    assert target is not None
    reshard.cause = ReshardCause(reason, ((op, 0),), source, source.mapping or target, target)
    return resharded
