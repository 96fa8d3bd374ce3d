"""Sharding propagation: projection onto factors, factor propagation and its strategies."""

from shardc.passes.propagation.direction import PropagationDirection
from shardc.passes.propagation.factor_propagation import propagate_factors, propagate_shardings
from shardc.passes.propagation.projection import (
    FactorSharding,
    ShardingProjection,
    TensorFactorShardings,
)
from shardc.passes.propagation.strategies import AGGRESSIVE, BASIC, strategy_named
from shardc.passes.propagation.strategy import PropagationStrategy, TensorUpdates

__all__ = [
    "AGGRESSIVE",
    "BASIC",
    "FactorSharding",
    "PropagationDirection",
    "PropagationStrategy",
    "ShardingProjection",
    "TensorFactorShardings",
    "TensorUpdates",
    "propagate_factors",
    "propagate_shardings",
    "strategy_named",
]
