"""What a factor-propagation strategy is: a named function over a projection (a value, not a
subclass), with the context it reads and the updates it reports. The strategies themselves are
in strategies.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardc.ir.mesh import DeviceMesh
from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.projection import ShardingProjection
from shardc.passes.propagation.rules.rule import OpShardingRule


@dataclass(slots=True)
class TensorUpdates:
    """Which operands and results a propagation step changed."""

    operands: list[bool]
    results: list[bool]

    def any(self) -> bool:
        return any(self.operands) or any(self.results)


@dataclass(frozen=True, slots=True)
class PropagationContext:
    """What a strategy needs besides the projection (built once per `propagate_factors` call)."""

    rule: OpShardingRule
    directions: tuple[PropagationDirection, ...]
    mesh: DeviceMesh | None
    conservative: bool
    elementwise: bool
    tensor_sizes: tuple[int, ...]


# A strategy updates the projection in place and returns which tensors changed.
StrategyFn = Callable[[ShardingProjection, PropagationContext], TensorUpdates]


@dataclass(frozen=True, slots=True)
class PropagationStrategy:
    """A named conflict-resolution strategy (a value, not a subclass)."""

    name: str
    run: StrategyFn

    def __str__(self) -> str:
        return self.name
