"""Propagation directions: which tensors of an op may drive propagation through it.

`direction` arguments take one `PropagationDirection` for every factor, a per-factor sequence or a
`factor -> direction` function; `resolve_directions` turns any of them into one per factor, with
the rule's blocked factors (and, if asked, its non-pass-through factors) set to NONE.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from shardc.ir.core import Operation
from shardc.passes.propagation.rules.rule import OpShardingRule


class PropagationDirection(enum.Enum):
    """Which tensors of an op may drive propagation through it."""

    NONE = 0
    FORWARD = 1  # operands -> results
    BACKWARD = 2  # results -> operands
    BOTH = 3

    # Members are singletons compared by identity; Enum's own hash (of the name, in Python)
    # would run for every factor of every memo key the driver looks up.
    __hash__ = object.__hash__

    def union(self, other: PropagationDirection) -> PropagationDirection:
        return PropagationDirection(self.value | other.value)

    def intersection(self, other: PropagationDirection) -> PropagationDirection:
        return PropagationDirection(self.value & other.value)


DirectionSpec = (
    PropagationDirection | Sequence[PropagationDirection] | Callable[[int], PropagationDirection]
)


def resolve_directions(
    rule: OpShardingRule, direction: DirectionSpec, only_pass_through: bool = False
) -> tuple[PropagationDirection, ...]:
    """The direction of every factor: blocked (and, if asked, non-pass-through) factors get NONE."""
    n = rule.num_factors
    if isinstance(direction, PropagationDirection):
        dirs = [direction] * n
    elif callable(direction):
        dirs = [direction(f) for f in range(n)]
    else:
        dirs = list(direction)
        if len(dirs) != n:
            raise ValueError(f"{len(dirs)} directions given for a rule with {n} factors")
    for f in rule.blocked:
        dirs[f] = PropagationDirection.NONE
    if only_pass_through:
        for f in range(n):
            if not rule.is_pass_through(f):
                dirs[f] = PropagationDirection.NONE
    return tuple(dirs)


# The direction of every factor of `rule` at an op (None: a data-flow edge), as the driver asks
# it; the op-priority stages and user priorities (priorities.py) are such functions.
DirectionFn = Callable[[Operation | None, OpShardingRule], Sequence[PropagationDirection]]
